//! `max_staleness_ms=`: how old the answer of a top, member, ranks or around read may be
//! (see [`Rollboard::reading_within`]); the service's `max_staleness_ms` when a request
//! does not say.

use super::AppState;
use crate::{Rollboard, Staleness};

/// The boards to read from: `state`'s, allowing `max_staleness_ms` when the request
/// gives it (0 to 60,000; [`Error::InvalidQuery`](crate::Error::InvalidQuery) beyond),
/// the service's setting (as last reloaded) otherwise.
pub(super) fn reader(state: &AppState, max_staleness_ms: Option<u64>) -> crate::Result<Rollboard> {
    Ok(match max_staleness_ms {
        None => state.boards.reading_within(state.live.load().max_staleness),
        Some(ms) => state.boards.reading_within(Staleness::from_millis(ms)?),
    })
}
