//! Writes recorded under an idempotency key: the store applies them and remembers, for
//! the key's time to live, what it answered, in the same atomic step, so a retried write
//! is applied once and answered as the first time.

use super::write_status::WriteStatus;
use crate::domain::SlotWrite;
use crate::domain::{Span, Timestamp};
use crate::error::{Error, Result};

/// The key a write is recorded under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteKey {
    /// The record's name within the board: the client's idempotency key. The whole
    /// write comes under it; a store that applies it in several calls names their
    /// records itself.
    pub name: String,
    /// What the write carried (see [`Fingerprint`](crate::Fingerprint)).
    pub fingerprint: String,
    /// How long the record is kept: by the caller's clock (a record older than this is
    /// as good as absent) and by the store's own expiry (the memory it takes).
    pub ttl: Span,
}

/// What a store did with a keyed write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Keyed {
    /// Applied now, and recorded.
    Applied(Vec<WriteStatus>),
    /// Applied before, at `now`: nothing applied this time.
    Replayed {
        /// The `now` of the call that applied it.
        now: Timestamp,
        /// What that call did.
        recorded: Recorded,
    },
    /// The key names another write (another fingerprint): nothing applied.
    Reused,
}

/// What a recorded write did, enough to give each of its writes its status again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    /// Every write was applied except those in these slots (too late).
    TooLateSlots(Vec<i64>),
    /// Each write's status, in order.
    Statuses(Vec<WriteStatus>),
}

impl Recorded {
    /// The status of each of `writes` (the same writes as recorded).
    pub fn statuses(&self, writes: &[SlotWrite]) -> Result<Vec<WriteStatus>> {
        match self {
            Recorded::TooLateSlots(slots) => Ok(writes
                .iter()
                .map(|w| {
                    if slots.contains(&w.slot) {
                        WriteStatus::TooLate
                    } else {
                        WriteStatus::Applied
                    }
                })
                .collect()),
            Recorded::Statuses(statuses) if statuses.len() == writes.len() => Ok(statuses.clone()),
            Recorded::Statuses(statuses) => Err(Error::store(format!(
                "a keyed write recorded {} statuses for {} writes",
                statuses.len(),
                writes.len()
            ))),
        }
    }
}
