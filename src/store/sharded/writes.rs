//! A sharded board's writes: each batch split by member, each shard's part written to
//! that shard at once (there group-committed as any board's writes), and the statuses put
//! back in the batch's order.
//!
//! The parts land on their shards independently: a shard that fails leaves the others'
//! parts applied. Its events are then answered [`WriteStatus::Unconfirmed`] (the error
//! itself when every part failed). Keyed writes and writes with a token record the key
//! on each shard, so a retry applies each part once whatever happened to the others.
//!
//! While a reshard moves members (`reshard.rs`), a write goes to the shard that holds
//! its member now (its old one until it is marked moved, then its new one), so reads
//! find it whole. A keyed write or one with a token goes to the member's shard under
//! the board's count however the member moved: a retry then splits the write as the
//! first call did and finds each part's record. What it adds to a member that moved
//! is swept over to the member's new shard when the reshard ends. A part a shard
//! refuses because it changed (a reshard renewed its version: nothing was applied) is
//! sent again, split anew, through the board as stored now.

use futures_util::future::join_all;

use super::view::Sharded;
use crate::domain::any_board::AnyBoard;
use crate::domain::board::Board;
use crate::domain::{SlotWrite, Timestamp};
use crate::error::{Error, Result};
use crate::store::{Keyed, Recorded, WriteKey, WriteStatus};

/// How many times a part refused by a shard that changed is sent again.
const RESENDS: usize = 3;

/// One shard's part of a batch: the shard, and the batch's indexes of its writes.
struct Part {
    shard: usize,
    indexes: Vec<usize>,
    writes: Vec<SlotWrite>,
}

/// A part sent, and what its shard answered.
struct Answered<T> {
    indexes: Vec<usize>,
    writes: Vec<SlotWrite>,
    result: Result<T>,
}

/// Puts the statuses a shard `answered` for a part in their places (the part's
/// `indexes`) in the batch's `statuses`.
fn place(indexes: &[usize], answered: Vec<WriteStatus>, statuses: &mut [WriteStatus]) {
    for (index, status) in indexes.iter().zip(answered) {
        statuses[*index] = status;
    }
}

impl<'a> Sharded<'a> {
    /// Splits `writes` (each with its index in the batch) by shard, shards without
    /// writes left out: each to the shard that holds its member ([`Sharded::homes`]),
    /// or with `by_count` to its shard under the board's count, whatever a reshard has
    /// moved (see the module header).
    async fn split(&self, writes: Vec<(usize, SlotWrite)>, by_count: bool) -> Result<Vec<Part>> {
        let homes = match by_count {
            true => writes.iter().map(|(_, w)| self.set.of(&w.member)).collect(),
            false => self.homes(writes.iter().map(|(_, w)| &w.member)).await?,
        };
        let mut parts: Vec<Part> = (0..self.shards().len())
            .map(|shard| Part {
                shard,
                indexes: Vec::new(),
                writes: Vec::new(),
            })
            .collect();
        for ((index, write), home) in writes.into_iter().zip(homes) {
            let part = &mut parts[home];
            part.indexes.push(index);
            part.writes.push(write);
        }
        parts.retain(|p| !p.writes.is_empty());
        Ok(parts)
    }

    /// `call` on each part's shard at once (split as [`split`](Self::split) says), a part
    /// refused by a shard that changed, and the writes of a part's answer that `refused`
    /// lists (by position in the part), sent again through the board as stored now: each
    /// part with its result (a shard that changed answered as the board, see `lift`), in
    /// the order sent.
    async fn send<T, F, Fut>(
        &self,
        writes: Vec<SlotWrite>,
        by_count: bool,
        call: F,
        refused: fn(&T) -> Vec<usize>,
    ) -> Result<Vec<Answered<T>>>
    where
        F: Fn(Board, Vec<SlotWrite>) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let mut pending: Vec<(usize, SlotWrite)> = writes.into_iter().enumerate().collect();
        let mut answered = Vec::new();
        let mut reloaded: Option<Sharded<'a>> = None;
        for round in 0..=RESENDS {
            let view = reloaded.as_ref().unwrap_or(self);
            let parts = view.split(pending, by_count).await?;
            let calls = parts
                .iter()
                .map(|p| call(view.shards()[p.shard].clone(), p.writes.clone()));
            let results = join_all(calls).await;
            pending = Vec::new();
            for (part, result) in parts.into_iter().zip(results) {
                // The writes sent again (by position in the part): the whole part when
                // its shard changed, else those its answer says were refused (their
                // answers, placed later, replace these).
                let again: Vec<usize> = match &result {
                    Err(Error::BoardChanged(_) | Error::BoardNotFound(_)) => {
                        (0..part.writes.len()).collect()
                    }
                    Ok(answer) => refused(answer),
                    Err(_) => Vec::new(),
                };
                if round < RESENDS && !again.is_empty() {
                    let writes = again
                        .iter()
                        .map(|k| (part.indexes[*k], part.writes[*k].clone()));
                    pending.extend(writes);
                    if result.is_err() {
                        continue;
                    }
                }
                answered.push(Answered {
                    indexes: part.indexes,
                    writes: part.writes,
                    result: view.lift(result),
                });
            }
            if pending.is_empty() {
                break;
            }
            match self.reloaded().await? {
                Some(view) => reloaded = Some(view),
                None => {
                    let (indexes, writes) = pending.drain(..).unzip();
                    let result = Err(Error::BoardChanged(self.board().name.to_string()));
                    answered.push(Answered {
                        indexes,
                        writes,
                        result,
                    });
                    break;
                }
            }
        }
        Ok(answered)
    }

    /// The board as stored now, with its shards, when it is still this incarnation.
    async fn reloaded(&self) -> Result<Option<Sharded<'a>>> {
        let name = &self.board().name;
        self.sets.forget(name);
        let board = match self.store.load_board(name).await? {
            Some(AnyBoard::Windowed(board)) if board.incarnation == self.board().incarnation => {
                board
            }
            _ => return Ok(None),
        };
        let set = self.sets.get(self.store, &board).await?;
        Ok(Some(Sharded::new(self.store, self.sets, set)))
    }

    pub(super) async fn write(
        &self,
        now: Timestamp,
        writes: Vec<SlotWrite>,
    ) -> Result<Vec<WriteStatus>> {
        let count = writes.len();
        let store = self.store;
        let results = self
            .send(
                writes,
                false,
                |shard, writes| async move { store.write(shard.writing(now, writes)).await },
                |statuses| changed(statuses),
            )
            .await?;
        let mut statuses = vec![WriteStatus::Unconfirmed; count];
        let mut failed = None;
        let mut landed = false;
        for part in results {
            match part.result {
                Ok(answered) => {
                    landed = true;
                    place(&part.indexes, answered, &mut statuses);
                }
                Err(error) => failed = failed.or(Some(error)),
            }
        }
        match failed {
            Some(error) if !landed => Err(error),
            _ => Ok(statuses),
        }
    }

    pub(super) async fn write_once(
        &self,
        now: Timestamp,
        writes: Vec<SlotWrite>,
        token: &str,
    ) -> Result<Option<Vec<WriteStatus>>> {
        let count = writes.len();
        let store = self.store;
        let results = self
            .send(
                writes,
                true,
                |shard, writes| async move { store.write_once(shard.writing(now, writes), token).await },
                |_| Vec::new(),
            )
            .await?;
        // A part applied before (by a call cut short) counts as applied now.
        let mut statuses = vec![WriteStatus::Applied; count];
        let mut fresh = false;
        for part in results {
            if let Some(answered) = part.result? {
                fresh = true;
                place(&part.indexes, answered, &mut statuses);
            }
        }
        Ok(fresh.then_some(statuses))
    }

    pub(super) async fn write_keyed(
        &self,
        now: Timestamp,
        writes: Vec<SlotWrite>,
        key: &WriteKey,
    ) -> Result<Keyed> {
        let count = writes.len();
        let store = self.store;
        let results = self
            .send(
                writes,
                true,
                |shard, writes| async move { store.write_keyed(shard.writing(now, writes), key).await },
                |_| Vec::new(),
            )
            .await?;
        let mut statuses = vec![WriteStatus::Applied; count];
        let mut replayed = None;
        for part in results {
            let answered = match part.result? {
                Keyed::Reused => return Ok(Keyed::Reused),
                Keyed::Applied(answered) => answered,
                Keyed::Replayed { now, recorded } => {
                    replayed = Some(now);
                    recorded.statuses(&part.writes)?
                }
            };
            place(&part.indexes, answered, &mut statuses);
        }
        Ok(match replayed {
            None => Keyed::Applied(statuses),
            // Some part was applied before, under this key: the write is a replay (of a
            // first call that may have been cut short before every part landed).
            Some(now) => Keyed::Replayed {
                now,
                recorded: Recorded::Statuses(statuses),
            },
        })
    }
}

/// The positions of the writes a shard refused because it changed (nothing of them
/// applied: safe to send again).
fn changed(statuses: &[WriteStatus]) -> Vec<usize> {
    let changed = statuses.iter().enumerate();
    changed
        .filter(|(_, s)| **s == WriteStatus::Changed)
        .map(|(k, _)| k)
        .collect()
}
