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
//! is swept over to the member's new shard when the reshard ends.

use futures_util::future::join_all;

use super::view::Sharded;
use crate::domain::{SlotWrite, Timestamp};
use crate::error::Result;
use crate::store::{Keyed, Recorded, WriteKey, WriteStatus};

/// One shard's part of a batch: the shard, and the batch's indexes of its writes.
struct Part {
    shard: usize,
    indexes: Vec<usize>,
    writes: Vec<SlotWrite>,
}

impl Part {
    /// Puts the statuses its shard `answered` in their places in the batch's `statuses`.
    fn place(&self, answered: Vec<WriteStatus>, statuses: &mut [WriteStatus]) {
        for (index, status) in self.indexes.iter().zip(answered) {
            statuses[*index] = status;
        }
    }
}

impl Sharded<'_> {
    /// Splits `writes` by shard (shards without writes left out): each to the shard
    /// that holds its member ([`Sharded::homes`]), or with `by_count` to its shard under
    /// the board's count, whatever a reshard has moved (see the module header).
    async fn split(&self, writes: Vec<SlotWrite>, by_count: bool) -> Result<Vec<Part>> {
        let homes = match by_count {
            true => writes.iter().map(|w| self.set.of(&w.member)).collect(),
            false => self.homes(writes.iter().map(|w| &w.member)).await?,
        };
        let mut parts: Vec<Part> = (0..self.shards().len())
            .map(|shard| Part {
                shard,
                indexes: Vec::new(),
                writes: Vec::new(),
            })
            .collect();
        for (index, (write, home)) in writes.into_iter().zip(homes).enumerate() {
            let part = &mut parts[home];
            part.indexes.push(index);
            part.writes.push(write);
        }
        parts.retain(|p| !p.writes.is_empty());
        Ok(parts)
    }

    /// `call` on each part's shard at once: each part with its result (a shard that
    /// changed answered as the board, see `lift`).
    async fn on_parts<'p, T, F, Fut>(
        &self,
        parts: &'p [Part],
        call: F,
    ) -> Vec<(&'p Part, Result<T>)>
    where
        F: Fn(&'p Part) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let results = join_all(parts.iter().map(&call)).await;
        parts
            .iter()
            .zip(results)
            .map(|(part, result)| (part, self.lift(result)))
            .collect()
    }

    pub(super) async fn write(
        &self,
        now: Timestamp,
        writes: Vec<SlotWrite>,
    ) -> Result<Vec<WriteStatus>> {
        let count = writes.len();
        let parts = self.split(writes, false).await?;
        let results = self
            .on_parts(&parts, |p| {
                self.store
                    .write(&self.shards()[p.shard], now, p.writes.clone())
            })
            .await;
        let mut statuses = vec![WriteStatus::Unconfirmed; count];
        let mut failed = None;
        let mut landed = false;
        for (part, result) in results {
            match result {
                Ok(answered) => {
                    landed = true;
                    part.place(answered, &mut statuses);
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
        let parts = self.split(writes, true).await?;
        let results = self
            .on_parts(&parts, |p| {
                self.store
                    .write_once(&self.shards()[p.shard], now, p.writes.clone(), token)
            })
            .await;
        // A part applied before (by a call cut short) counts as applied now.
        let mut statuses = vec![WriteStatus::Applied; count];
        let mut fresh = false;
        for (part, result) in results {
            if let Some(answered) = result? {
                fresh = true;
                part.place(answered, &mut statuses);
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
        let parts = self.split(writes, true).await?;
        let results = self
            .on_parts(&parts, |p| {
                self.store
                    .write_keyed(&self.shards()[p.shard], now, p.writes.clone(), key)
            })
            .await;
        let mut statuses = vec![WriteStatus::Applied; count];
        let mut replayed = None;
        for (part, result) in results {
            let answered = match result? {
                Keyed::Reused => return Ok(Keyed::Reused),
                Keyed::Applied(answered) => answered,
                Keyed::Replayed { now, recorded } => {
                    replayed = Some(now);
                    recorded.statuses(&part.writes)?
                }
            };
            part.place(answered, &mut statuses);
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
