//! One event (or one batch) written to several boards in one call: the forum's like that
//! counts on `hot-posts`, `hot-posts:rust` and `top-authors`. Each board gets the events
//! through its own write path (group commit, idempotency keys, either kind), all boards
//! at once; each board's outcome is reported on its own, so one board that fails (not
//! created yet, say) leaves the others written.
//!
//! Under an idempotency key, the key is scoped per board: each board records it as a
//! keyed write of its own with the events' fingerprint, so a retry after a partial
//! failure applies the events to the boards that did not take them and replays the
//! others.

use std::collections::HashSet;

use futures_util::future::join_all;

use super::Rollboard;
use super::idempotent::KeyedOutcome;
use crate::domain::{BoardName, Event, Fingerprint, IdempotencyKey, Member, check_delta};
use crate::error::{Error, Result};

/// The most boards one multi-board write or read may name.
pub const MAX_BOARDS: usize = 20;

/// What one board of a multi-board write did.
#[derive(Debug, Clone, PartialEq)]
pub struct BoardWrite {
    /// The board, as named.
    pub board: String,
    /// Its outcome: the events accepted and rejected (and whether it was a replay), or
    /// why the board took none of them (`board_not_found`, `store_unavailable`, …).
    pub result: Result<KeyedOutcome>,
}

impl Rollboard {
    /// Applies one event to each of `boards` (1 to [`MAX_BOARDS`], distinct, of either
    /// kind), optionally once per board under `key`. The event's member and delta are
    /// checked first ([`Error::InvalidMember`], [`Error::InvalidDelta`]: nothing is
    /// applied); what depends on a board (its windows: `too_late`) is that board's
    /// outcome, as a batch of one.
    pub async fn write_event_to_boards<S: AsRef<str>>(
        &self,
        boards: &[S],
        event: &Event,
        key: Option<&IdempotencyKey>,
    ) -> Result<Vec<BoardWrite>> {
        Member::parse(&event.member)?;
        check_delta(event.delta)?;
        self.write_events_to_boards(boards, std::slice::from_ref(event), key)
            .await
    }

    /// Applies a batch of events to each of `boards` (1 to [`MAX_BOARDS`], distinct, of
    /// either kind), all boards at once, each through its own write path: on each board
    /// every bad event is rejected on its own (with its index) and the rest applied.
    /// With `key`, each board applies the batch once for that key (its fingerprint is
    /// the events'); a retry answers the boards that took it as before and applies it to
    /// the others. Errors only when the list of boards is invalid
    /// ([`Error::InvalidQuery`], [`Error::InvalidBoardName`]) or the batch too large;
    /// each board's own failure is in its [`BoardWrite`].
    pub async fn write_events_to_boards<S: AsRef<str>>(
        &self,
        boards: &[S],
        events: &[Event],
        key: Option<&IdempotencyKey>,
    ) -> Result<Vec<BoardWrite>> {
        check_boards(boards)?;
        self.settings().admission().check_batch(events.len())?;
        let fingerprint = key.map(|_| Fingerprint::of_events(events));
        let fingerprint = fingerprint.as_ref();
        let writes = boards.iter().map(|board| async move {
            let board = board.as_ref();
            let result = match key.zip(fingerprint) {
                Some((key, fingerprint)) => {
                    self.write_events_keyed(board, events, key, fingerprint)
                        .await
                }
                None => self
                    .write_events(board, events)
                    .await
                    .map(|outcome| KeyedOutcome {
                        outcome,
                        replayed: false,
                    }),
            };
            BoardWrite {
                board: board.to_owned(),
                result,
            }
        });
        Ok(join_all(writes).await)
    }
}

/// Checks a list of boards: 1 to [`MAX_BOARDS`] valid names, each named once.
pub(crate) fn check_boards<S: AsRef<str>>(boards: &[S]) -> Result<Vec<BoardName>> {
    if boards.is_empty() {
        return Err(Error::InvalidQuery {
            reason: "boards is empty: name 1 to 20 boards".into(),
        });
    }
    if boards.len() > MAX_BOARDS {
        return Err(Error::InvalidQuery {
            reason: format!(
                "boards names {} boards: name at most {MAX_BOARDS}",
                boards.len()
            ),
        });
    }
    let mut seen = HashSet::with_capacity(boards.len());
    boards
        .iter()
        .map(|board| {
            let name = BoardName::parse(board.as_ref())?;
            if !seen.insert(board.as_ref()) {
                return Err(Error::InvalidQuery {
                    reason: format!(
                        "board {:?} is named twice in boards: name each board once",
                        board.as_ref()
                    ),
                });
            }
            Ok(name)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(boards: &[&str]) -> String {
        match check_boards(boards) {
            Err(Error::InvalidQuery { reason }) => reason,
            other => panic!("{boards:?}: {other:?}"),
        }
    }

    #[test]
    fn a_list_of_boards_is_one_to_twenty_distinct_names() {
        assert_eq!(check_boards(&["a", "b:c"]).unwrap().len(), 2);
        let twenty: Vec<String> = (0..20).map(|i| format!("b{i}")).collect();
        assert_eq!(check_boards(&twenty).unwrap().len(), 20);
        let too_many: Vec<String> = (0..21).map(|i| format!("b{i}")).collect();
        assert_eq!(
            match check_boards(&too_many) {
                Err(Error::InvalidQuery { reason }) => reason,
                other => panic!("{other:?}"),
            },
            "boards names 21 boards: name at most 20"
        );
        assert_eq!(reason(&[]), "boards is empty: name 1 to 20 boards");
        assert_eq!(
            reason(&["a", "b", "a"]),
            "board \"a\" is named twice in boards: name each board once"
        );
        assert_eq!(
            check_boards(&["a", "no space"]).unwrap_err().code(),
            "invalid_board_name"
        );
    }
}
