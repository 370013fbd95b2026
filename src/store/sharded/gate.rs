//! The review gate of a sharded board (docs/design.md, "A review gate on a sharded
//! board"). Each shard gates its own members in the same atomic step as each change, at
//! the higher of its own bar (its K-th allowed public member) and the bar across the
//! shards published to it: the K-th allowed public member of the whole board, which
//! [`regate`](Sharded::regate) finds from every shard's top allowed members after each
//! change and publishes to every shard. The moderator's side (the
//! decisions, the queue, the held events) is the shards' merged.

use super::view::Sharded;
use crate::domain::parse_log_id;
use crate::domain::{Decision, GateBar, HeldEvent, HeldMember, Member, Ties, Timestamp};
use crate::error::{Error, Result};

impl Sharded<'_> {
    /// Brings each shard's bars across the shards up to date (nothing on a board without
    /// a gate): takes the next number of the board's gate, reads every shard's top
    /// allowed members, and publishes the K-th of them all, per window, under that
    /// number to every shard (one round trip each). A shard keeps the bars of the highest
    /// number, which were read after every change that ended before any lower number was
    /// taken: so once the last change's call answers, every shard has bars read after it.
    pub(super) async fn regate(&self) -> Result<()> {
        let Some(policy) = self.board().config.review() else {
            return Ok(());
        };
        let (moves, k) = (self.moves()?, policy.above_rank());
        let epoch = self.lift(moves.gate_epoch(self.board()).await)?;
        let tops = self.each(|_, b| moves.gate_top(b, k)).await?;
        let position = self.board().config.ties() == Ties::Position;
        let windows = self.board().config.windows().len();
        let bars: Vec<Option<GateBar>> = (0..windows)
            .map(|j| {
                let mut all: Vec<&(i64, String)> =
                    tops.iter().filter_map(|t| t.get(j)).flatten().collect();
                all.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
                let kth = all.get(k as usize - 1);
                kth.map(|(total, member)| GateBar {
                    total: *total,
                    member: position.then(|| member.clone()),
                })
            })
            .collect();
        let bars = &bars;
        self.each(|_, b| moves.publish_bars(b, epoch, bars)).await?;
        Ok(())
    }

    /// `change`, then [`regate`](Self::regate).
    pub(super) async fn gated<T>(&self, change: impl Future<Output = Result<T>>) -> Result<T> {
        let done = change.await?;
        self.regate().await?;
        Ok(done)
    }

    /// A moderator's decision on `member`, on its shard, then [`regate`](Self::regate).
    /// Refused while a reshard runs, which moves the allowed marks with their members.
    pub(super) async fn review(
        &self,
        member: &Member,
        decision: Decision,
        now: Timestamp,
    ) -> Result<bool> {
        self.not_resharding()?;
        let shard = &self.shards()[self.set.of(member)];
        let changed = self.store.review(shard, member, decision, now).await;
        let changed = self.lift(changed)?;
        self.regate().await?;
        Ok(changed)
    }

    /// Every shard's held members, each with the rank it would have on the whole board:
    /// one more than the public members ahead of it on every shard.
    pub(super) async fn held_members(
        &self,
        window: usize,
        now: Timestamp,
    ) -> Result<Vec<HeldMember>> {
        let held = self
            .each(|_, b| self.store.held_members(b.at(window, now)))
            .await?;
        let mut held: Vec<HeldMember> = held.into_iter().flatten().collect();
        if held.iter().all(|e| e.rank.is_none()) {
            return Ok(crate::store::ranked_held(held));
        }
        let reads = self.in_window(window, now);
        let ranked: Vec<usize> = (0..held.len())
            .filter(|x| held[*x].rank.is_some())
            .collect();
        let probes = ranked.iter().map(|x| {
            let e = &held[*x];
            let member = Member::parse(&e.member)?;
            Ok(reads.rank_probe(e.score.unwrap_or_default(), &member))
        });
        let probes = probes.collect::<Result<Vec<_>>>()?;
        let ahead = reads.ahead(&probes).await?;
        for (x, before) in ranked.into_iter().zip(ahead.counts) {
            held[x].rank = Some(before + 1);
        }
        Ok(crate::store::ranked_held(held))
    }

    /// Up to `limit` held events of every shard after the cursor `after` (as
    /// [`held_cursor`](Self::held_cursor) answers it: each shard's, comma-separated),
    /// oldest first; each id is `<shard>/<the shard's id>`.
    pub(super) async fn held_events(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<HeldEvent>> {
        let afters: Vec<&str> = after.map_or(Vec::new(), |a| a.split(',').collect());
        let each = self
            .each(|i, b| {
                let after = afters.get(i).copied().filter(|a| !a.is_empty());
                self.store.held_events(b, after, limit)
            })
            .await?;
        let mut events = Vec::new();
        for (shard, list) in each.into_iter().enumerate() {
            for event in list {
                let order = parse_log_id(&event.id).map_err(|e| Error::store(e.to_string()))?;
                events.push((order, shard, event));
            }
        }
        events.sort_by_key(|e| (e.0, e.1));
        events.truncate(limit);
        let board = self.board().name.to_string();
        let events = events.into_iter().map(|(_, shard, event)| HeldEvent {
            board: board.clone(),
            id: format!("{shard}/{}", event.id),
            ..event
        });
        Ok(events.collect())
    }

    /// Each shard's review webhook cursor, comma-separated (`None` before the first
    /// delivery), first moving the cursor of the shard of `delivered` (an id
    /// [`held_events`](Self::held_events) answered) up to it.
    pub(super) async fn held_cursor(&self, delivered: Option<&str>) -> Result<Option<String>> {
        if let Some(id) = delivered {
            let parsed = id
                .split_once('/')
                .and_then(|(s, id)| Some((s.parse::<usize>().ok()?, id)));
            let shard = parsed.and_then(|(s, id)| Some((self.shards().get(s)?, id)));
            let Some((shard, id)) = shard else {
                return Err(Error::store(format!(
                    "a held event's id {id:?} is not <shard>/<id>"
                )));
            };
            self.lift(self.store.held_cursor(shard, Some(id)).await)?;
        }
        let cursors = self.each(|_, b| self.store.held_cursor(b, None)).await?;
        if cursors.iter().all(Option::is_none) {
            return Ok(None);
        }
        let parts: Vec<String> = cursors.into_iter().map(Option::unwrap_or_default).collect();
        Ok(Some(parts.join(",")))
    }
}
