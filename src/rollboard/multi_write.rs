//! Events written to several boards in one call: the forum's like that counts on
//! `hot-posts` and `hot-posts:rust` for the post and on `top-authors` for its author. Each
//! event names its boards; each board gets the events that name it through its own write
//! path (group commit, idempotency keys, either kind), all boards
//! at once; each board's outcome is reported on its own, so one board that fails (not
//! created yet, say) leaves the others written.
//!
//! Under an idempotency key, the key is scoped per board: each board records it as a
//! keyed write of its own with its events' fingerprint, so a retry after a partial
//! failure applies the events to the boards that did not take them and replays the
//! others.

use std::collections::HashSet;

use futures_util::future::join_all;

use super::Rollboard;
use super::idempotent::KeyedOutcome;
use crate::domain::{
    BoardName, Contributor, Event, Fingerprint, IdempotencyKey, Member, check_delta, check_value,
};
use crate::error::{Error, Result};

/// The most boards one multi-board write or read may name.
pub const MAX_BOARDS: usize = 20;

/// An event and the boards it counts on (1 to [`MAX_BOARDS`], distinct).
#[derive(Debug, Clone, PartialEq)]
pub struct BoardsEvent {
    /// The boards, each named once.
    pub boards: Vec<String>,
    /// The event.
    pub event: Event,
}

/// What one board of a multi-board write did.
#[derive(Debug, Clone, PartialEq)]
pub struct BoardWrite {
    /// The board, as named.
    pub board: String,
    /// Its outcome: the events it accepted and those it rejected (by their index in the
    /// whole batch), and whether it was a replay; or why the board took none of them
    /// (`board_not_found`, `store_unavailable`, `idempotency_key_reused`, …).
    pub result: Result<KeyedOutcome>,
}

impl Rollboard {
    /// Applies one event to each of `boards` (1 to [`MAX_BOARDS`], distinct, of either
    /// kind), optionally once per board under `key`. The event's member, delta (or
    /// value) and contributor are checked first ([`Error::InvalidMember`],
    /// [`Error::InvalidDelta`], [`Error::InvalidValue`], [`Error::InvalidContributor`]:
    /// nothing is applied); what depends on a board (its
    /// windows: `too_late`; a value on a sum board or a delta on a max board:
    /// `invalid_value`) is that board's outcome, as a batch of one.
    pub async fn write_event_to_boards<S: AsRef<str>>(
        &self,
        boards: &[S],
        event: &Event,
        key: Option<&IdempotencyKey>,
    ) -> Result<Vec<BoardWrite>> {
        Member::parse(&event.member)?;
        event.by.as_deref().map(Contributor::parse).transpose()?;
        match event.value {
            Some(value) => check_value(value)?,
            None => check_delta(event.delta)?,
        };
        check_boards(boards)?;
        let event = BoardsEvent {
            boards: boards.iter().map(|b| b.as_ref().to_owned()).collect(),
            event: event.clone(),
        };
        self.write_to_boards(std::slice::from_ref(&event), key)
            .await
    }

    /// Applies the same batch of events to each of `boards` (see
    /// [`write_to_boards`](Self::write_to_boards)).
    pub async fn write_events_to_boards<S: AsRef<str>>(
        &self,
        boards: &[S],
        events: &[Event],
        key: Option<&IdempotencyKey>,
    ) -> Result<Vec<BoardWrite>> {
        check_boards(boards)?;
        let boards: Vec<String> = boards.iter().map(|b| b.as_ref().to_owned()).collect();
        let events: Vec<BoardsEvent> = events
            .iter()
            .map(|event| BoardsEvent {
                boards: boards.clone(),
                event: event.clone(),
            })
            .collect();
        self.write_to_boards(&events, key).await
    }

    /// Applies a batch of events, each to the boards it names, all boards at once, each
    /// board through its own write path with the events that name it (in batch order):
    /// on each board every bad event is rejected on its own (by its index in `events`)
    /// and the rest applied. The boards are answered in the order they are first named.
    /// With `key`, each board applies its events once for that key (their fingerprint
    /// is that board's events'); a retry answers the boards that took them as before
    /// and applies them to the others. Errors only when the request is invalid: an
    /// event's list of boards ([`Error::InvalidQuery`], [`Error::InvalidBoardName`]),
    /// more than [`MAX_BOARDS`] boards in all, or too many events
    /// ([`Error::BatchTooLarge`]); each board's own failure is in its [`BoardWrite`].
    pub async fn write_to_boards(
        &self,
        events: &[BoardsEvent],
        key: Option<&IdempotencyKey>,
    ) -> Result<Vec<BoardWrite>> {
        self.settings().admission().check_batch(events.len())?;
        // Each board with the indices of its events, in the order first named.
        let mut boards: Vec<(&str, Vec<usize>)> = Vec::new();
        for (index, e) in events.iter().enumerate() {
            check_boards(&e.boards).map_err(|error| in_batch(index, events.len(), error))?;
            for board in &e.boards {
                match boards.iter_mut().find(|(b, _)| b == board) {
                    Some((_, indices)) => indices.push(index),
                    None => boards.push((board, vec![index])),
                }
            }
        }
        if boards.len() > MAX_BOARDS {
            return Err(Error::InvalidQuery {
                reason: format!(
                    "the events name {} boards in all: name at most {MAX_BOARDS}",
                    boards.len()
                ),
            });
        }
        let writes = boards.into_iter().map(|(board, indices)| async move {
            let mine: Vec<Event> = indices.iter().map(|&i| events[i].event.clone()).collect();
            let result = self.write_board(board, &mine, key).await.map(|mut keyed| {
                for r in &mut keyed.outcome.rejected {
                    r.index = indices[r.index];
                }
                for c in &mut keyed.outcome.counted {
                    c.index = indices[c.index];
                }
                keyed
            });
            BoardWrite {
                board: board.to_owned(),
                result,
            }
        });
        Ok(join_all(writes).await)
    }

    /// Applies `events` to one board, once under `key` when given.
    async fn write_board(
        &self,
        board: &str,
        events: &[Event],
        key: Option<&IdempotencyKey>,
    ) -> Result<KeyedOutcome> {
        match key {
            Some(key) => {
                let fingerprint = Fingerprint::of_events(events);
                self.write_events_keyed(board, events, key, &fingerprint)
                    .await
            }
            None => Ok(KeyedOutcome {
                outcome: self.write_events(board, events).await?,
                replayed: false,
            }),
        }
    }
}

/// An event's error, naming the event when it is one of several.
fn in_batch(index: usize, len: usize, error: Error) -> Error {
    match error {
        Error::InvalidQuery { reason } if len > 1 => Error::InvalidQuery {
            reason: format!("events[{index}]: {reason}"),
        },
        other => other,
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
