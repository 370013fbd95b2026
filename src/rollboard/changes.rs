//! A board's rank changes: who entered, left or moved in each watched top
//! (docs/design.md, "Rank changes"), read after the last change a reader saw.

use super::Windowed;
use crate::domain::{Changes, parse_log_id};
use crate::error::{Error, Result};

/// The most changes one read answers.
pub const MAX_CHANGES_LIMIT: usize = 1000;

impl Windowed<'_> {
    /// Up to `limit` (1–1,000) changes of the board's watched tops after the change
    /// `after` (an id `<ms>-<n>`; from the oldest kept when `None`), oldest first. A
    /// reader that applies them in order to the tops it saw at `after` holds the tops as
    /// of the last one. [`Error::ChangesTrimmed`] when changes after `after` are no
    /// longer kept (the newest 10,000 of a board are, for 7 days).
    pub async fn changes(self, after: Option<&str>, limit: usize) -> Result<Changes> {
        if !(1..=MAX_CHANGES_LIMIT).contains(&limit) {
            return Err(Error::InvalidQuery {
                reason: format!("limit must be between 1 and {MAX_CHANGES_LIMIT}, got {limit}"),
            });
        }
        if let Some(id) = after {
            parse_log_id(id).map_err(|_| Error::InvalidQuery {
                reason: format!("after {id:?} is not a change id (<ms>-<n>, as changes' ids are)"),
            })?;
        }
        let store = &self.rb.inner.store;
        self.rb
            .on_board(self.board, |b| async move {
                Ok(Changes {
                    board: b.name.to_string(),
                    changes: store.changes(&b, after, limit).await?,
                })
            })
            .await
    }
}
