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
//!
//! A retry of a keyed write may come after a reshard ended, under another count. So a
//! keyed write's part on shard 0 (which every count has) goes first, and its record
//! says the count the write was split under: the key's fingerprint (40 hex digits)
//! followed by the count as two more (plain for a count of 1, as a board of one shard
//! records it; the stores' scripts read fingerprints as hex digits). A retry that finds
//! shard 0's record under another count splits as that count did and finds each
//! part's record; the part of a shard a shrink has since removed is answered
//! [`WriteStatus::Unconfirmed`] (what it applied was moved with its members, and its
//! record is gone with it).

use futures_util::future::join_all;

use super::names::shard_of;
use super::view::Sharded;
use crate::domain::any_board::AnyBoard;
use crate::domain::board::{Board, SlotWrites};
use crate::domain::{BoardConfig, SlotWrite, Timestamp};
use crate::error::{Error, Result};
use crate::store::{Keyed, Recorded, Store, WriteKey, WriteStatus};

/// How many times a part refused by a shard that changed is sent again.
const RESENDS: usize = 3;

/// How a batch is split over the shards.
#[derive(Clone, Copy)]
enum Split {
    /// Each write to the shard that holds its member ([`Sharded::homes`]).
    Homes,
    /// Each write to its member's shard under this count, whatever a reshard moved.
    Count(u32),
}

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
    /// Splits `writes` (each with its index in the batch) by shard as `split` says,
    /// shards without writes left out (see the module header).
    async fn split(&self, writes: Vec<(usize, SlotWrite)>, split: Split) -> Result<Vec<Part>> {
        let homes: Vec<usize> = match split {
            Split::Count(count) => writes
                .iter()
                .map(|(_, w)| shard_of(&w.member, count))
                .collect(),
            Split::Homes => self.homes(writes.iter().map(|(_, w)| &w.member)).await?,
        };
        if homes.iter().any(|home| *home >= self.shards().len()) {
            // A shrink ended since the caller chose the count (a keyed write's retry).
            return Err(Error::BoardChanged(self.board().name.to_string()));
        }
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
        writes: Vec<(usize, SlotWrite)>,
        split: Split,
        call: F,
        refused: fn(&T) -> Vec<usize>,
    ) -> Result<Vec<Answered<T>>>
    where
        F: Fn(Board, Vec<SlotWrite>) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let mut pending = writes;
        let mut answered = Vec::new();
        let mut reloaded: Option<Sharded<'a>> = None;
        for round in 0..=RESENDS {
            let view = reloaded.as_ref().unwrap_or(self);
            let parts = view.split(pending, split).await?;
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
                writes.into_iter().enumerate().collect(),
                Split::Homes,
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
                writes.into_iter().enumerate().collect(),
                Split::Count(self.board().config.shards()),
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
        let (store, board) = (self.store, self.board());
        let first = first_part(store, board, now, &writes, key).await;
        let Some((split, first)) = self.lift(first)? else {
            return Ok(Keyed::Reused);
        };
        let key = &split_key(key, split);
        let (rest, statuses) = rest_of_split(writes, split, self.shards().len());
        let mut results = self
            .send(
                rest,
                Split::Count(split),
                |shard, writes| async move { store.write_keyed(shard.writing(now, writes), key).await },
                |_| Vec::new(),
            )
            .await?;
        results.push(first);
        keyed_outcome(results, statuses)
    }
}

/// A keyed write on a board of one shard that its shard 0 answered [`Keyed::Reused`]:
/// the key may have been recorded while the board had more shards (see the module
/// header). Found as any keyed write's count is (asking once more under one shard
/// first, which writes nothing); the parts of the shards gone since are answered
/// [`WriteStatus::Unconfirmed`].
pub(super) async fn keyed_after_shrink(
    store: &dyn Store,
    w: SlotWrites<'_>,
    key: &WriteKey,
) -> Result<Keyed> {
    let SlotWrites { board, now, writes } = w;
    let Some((split, first)) = first_part(store, board, now, &writes, key).await? else {
        return Ok(Keyed::Reused);
    };
    let (_, statuses) = rest_of_split(writes, split, 1);
    keyed_outcome(vec![first], statuses)
}

/// Shard 0's part of a keyed write of `board` (shard 0), split under the board's count,
/// and when shard 0 recorded the key under another fingerprint, under every other count
/// at once (see the module header; a record that names another fingerprint writes
/// nothing): the first count whose answer is not [`Keyed::Reused`], with that answer;
/// `None` when every count's is.
async fn first_part(
    store: &dyn Store,
    board: &Board,
    now: Timestamp,
    writes: &[SlotWrite],
    key: &WriteKey,
) -> Result<Option<(u32, Answered<Keyed>)>> {
    let part = |count: u32| async move {
        let indexes: Vec<usize> = (0..writes.len())
            .filter(|k| shard_of(&writes[*k].member, count) == 0)
            .collect();
        let part: Vec<SlotWrite> = indexes.iter().map(|k| writes[*k].clone()).collect();
        let written = board.writing(now, part.clone());
        let result = store.write_keyed(written, &split_key(key, count)).await?;
        let result = Ok(result);
        Ok::<_, Error>((
            count,
            Answered {
                indexes,
                writes: part,
                result,
            },
        ))
    };
    let count = board.config.shards();
    let first = part(count).await?;
    if !matches!(first.1.result, Ok(Keyed::Reused)) {
        return Ok(Some(first));
    }
    let others = (1..=BoardConfig::MAX_SHARDS).filter(|c| *c != count);
    for tried in join_all(others.map(part)).await {
        let (count, answered) = tried?;
        if !matches!(answered.result, Ok(Keyed::Reused)) {
            return Ok(Some((count, answered)));
        }
    }
    Ok(None)
}

/// The writes of a keyed write split under `count` that go to shards 1 to `shards - 1`
/// (with their indexes), and the batch's statuses: those of a shard a shrink removed
/// since (at or past `shards`) [`WriteStatus::Unconfirmed`], the rest to be placed.
fn rest_of_split(
    writes: Vec<SlotWrite>,
    count: u32,
    shards: usize,
) -> (Vec<(usize, SlotWrite)>, Vec<WriteStatus>) {
    let mut statuses = vec![WriteStatus::Applied; writes.len()];
    let rest = writes
        .into_iter()
        .enumerate()
        .filter(|(k, w)| match shard_of(&w.member, count) {
            0 => false,
            shard if shard >= shards => {
                statuses[*k] = WriteStatus::Unconfirmed;
                false
            }
            _ => true,
        })
        .collect();
    (rest, statuses)
}

/// A keyed write's answer from its parts' answers, placed in `statuses`: reused when a
/// part says so, a replay when some part was applied before under the key.
fn keyed_outcome(parts: Vec<Answered<Keyed>>, mut statuses: Vec<WriteStatus>) -> Result<Keyed> {
    let mut replayed = None;
    for part in parts {
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

/// `key` as a keyed write split under `count` records it (see the module header).
fn split_key(key: &WriteKey, count: u32) -> WriteKey {
    let mut key = key.clone();
    if count > 1 {
        key.fingerprint = format!("{}{count:02x}", key.fingerprint);
    }
    key
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
