//! [`ShardedStore`]: sharded boards on any [`Store`]. A board created with `"shards": K`
//! (K > 1) spreads its members over K shards, each a board of its own in the store
//! underneath (`names.rs`: where they live, which shard holds a member), so that on a
//! Redis Cluster one board's writes, retirement and reads spread over several masters.
//!
//! This wrapper makes the K boards one: writes are split by member and each shard's part
//! goes to that shard (group-committed there as any board's writes), member reads go to
//! the member's shard, upkeep (retirement, recompute, relayout, describe, drop) runs on
//! every shard, and rankings are merged exactly from the shards' pages and counts
//! (`ranking.rs`). A board of one shard, and everything that is not a board, passes
//! straight through. Every store gets sharded boards the same way: the memory store is
//! their model too.
//!
//! What needs one atomic step over the whole board (a write that answers its ranks) is
//! refused with [`Error::ShardedUnsupported`].

mod gate;
mod names;
mod ranking;
mod reshard;
mod shard_set;
mod snapshots;
mod upkeep;
mod view;
mod writes;

use std::sync::Arc;

use async_trait::async_trait;

use crate::clock::Clock;
use crate::domain::Change;
use crate::domain::ChangeStamp;
use crate::domain::PageQuery;
use crate::domain::any_board::{AnyBoard, NewBoard};
use crate::domain::board::{Board, BoardStatus, Created, SlotWrites, WindowAt};
use crate::domain::memory_check::MemoryReading;
use crate::domain::{AroundOptions, AroundQuery, Entry, RetireReport};
use crate::domain::{
    BoardName, Decision, HeldEvent, HeldMember, Member, MemberData, Pin, Removed, Timestamp,
};
use crate::domain::{Contributor, Retracted, WindowContributions, WindowContributors};
use crate::domain::{History, Ranks, ScoreRange, Standing, TopPage, WrittenStanding};
use crate::domain::{Layout, RecomputeReport, RelayoutOptions, RelayoutReport, ReshardReport};
use crate::domain::{Snapshot, SnapshotPass, SnapshotRange};
use crate::error::Result;
use crate::store::{
    CounterStore, Keyed, RateStore, RetireOptions, ServerStore, StatsStore, Store, TrendingStore,
    WriteKey, WriteStatus,
};
use shard_set::ShardSets;
use view::Sharded;

/// `inner`, with sharded boards made one.
pub(crate) struct ShardedStore {
    inner: Arc<dyn Store>,
    sets: ShardSets,
}

impl ShardedStore {
    pub(crate) fn new(inner: Arc<dyn Store>) -> Self {
        ShardedStore {
            inner,
            sets: ShardSets::default(),
        }
    }

    /// The board's shards, when it has more than one.
    async fn sharded(&self, board: &Board) -> Result<Option<Sharded<'_>>> {
        if board.shard_span() == 1 {
            return Ok(None);
        }
        // Boxed, like every sharded call below: a board of one shard then pays nothing
        // for the sharded paths in the size of its calls' futures.
        let set = Box::pin(self.sets.get(self.inner.as_ref(), board)).await?;
        Ok(Some(Sharded::new(self.inner.as_ref(), &self.sets, set)))
    }
}

#[async_trait]
impl Store for ShardedStore {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    fn counters(&self) -> &dyn CounterStore {
        self.inner.counters()
    }

    fn stats(&self) -> &dyn StatsStore {
        self.inner.stats()
    }

    fn rates(&self) -> &dyn RateStore {
        self.inner.rates()
    }

    fn moderation(&self) -> &dyn crate::store::ModerationStore {
        self.inner.moderation()
    }

    fn trending(&self) -> &dyn TrendingStore {
        self.inner.trending()
    }

    fn server(&self) -> Option<&dyn ServerStore> {
        self.inner.server().map(|_| self as &dyn ServerStore)
    }

    async fn ping(&self) -> Result<()> {
        self.inner.ping().await
    }

    async fn create_board(
        &self,
        name: &BoardName,
        config: &NewBoard,
        now: Timestamp,
    ) -> Result<Created<AnyBoard>> {
        let created = self.inner.create_board(name, config, now).await?;
        if let Some(board) = created.board().windowed()
            && board.shard_span() > 1
        {
            upkeep::create_shards(self.inner.as_ref(), board, now).await?;
            self.sets.forget(name);
            // A gate set or changed: the bars across the shards.
            if let Some(s) = self.sharded(board).await? {
                Box::pin(s.regate()).await?;
            }
        }
        Ok(created)
    }

    async fn load_board(&self, name: &BoardName) -> Result<Option<AnyBoard>> {
        self.inner.load_board(name).await
    }

    async fn list_boards(&self) -> Result<Vec<AnyBoard>> {
        upkeep::list_boards(self.inner.as_ref()).await
    }

    async fn describe_board(&self, board: &Board, now: Timestamp) -> Result<BoardStatus> {
        match self.sharded(board).await? {
            None => self.inner.describe_board(board, now).await,
            Some(s) => Box::pin(s.describe(now)).await,
        }
    }

    async fn drop_board(&self, name: &BoardName) -> Result<bool> {
        let result = upkeep::drop_board(self.inner.as_ref(), name).await;
        self.sets.forget(name);
        result
    }

    async fn write(&self, w: SlotWrites<'_>) -> Result<Vec<WriteStatus>> {
        match self.sharded(w.board).await? {
            None => self.inner.write(w).await,
            Some(s) => Box::pin(s.gated(s.write(w.now, w.writes))).await,
        }
    }

    async fn write_once(&self, w: SlotWrites<'_>, token: &str) -> Result<Option<Vec<WriteStatus>>> {
        match self.sharded(w.board).await? {
            None => self.inner.write_once(w, token).await,
            Some(s) => Box::pin(s.gated(s.write_once(w.now, w.writes, token))).await,
        }
    }

    async fn write_keyed(&self, w: SlotWrites<'_>, key: &WriteKey) -> Result<Keyed> {
        match self.sharded(w.board).await? {
            // A board of one shard that changed (a reshard renews the version) may have
            // had more when the key was recorded.
            None if w.board.version != w.board.incarnation => {
                let again = w.board.writing(w.now, w.writes.clone());
                match self.inner.write_keyed(w, key).await? {
                    Keyed::Reused => {
                        Box::pin(writes::keyed_after_shrink(self.inner.as_ref(), again, key)).await
                    }
                    keyed => Ok(keyed),
                }
            }
            None => self.inner.write_keyed(w, key).await,
            Some(s) => Box::pin(s.gated(s.write_keyed(w.now, w.writes, key))).await,
        }
    }

    async fn write_standing(
        &self,
        w: SlotWrites<'_>,
        windows: &[usize],
        key: Option<&WriteKey>,
    ) -> Result<(Keyed, Vec<WrittenStanding>)> {
        match self.sharded(w.board).await? {
            None => self.inner.write_standing(w, windows, key).await,
            Some(s) => s.unsupported(
                "a write that answers its standing is for boards of one shard (its ranks \
                 are read in the write's atomic step, which covers one shard): write \
                 without `return=standing`, then read the members' ranks",
            ),
        }
    }

    async fn top(&self, at: WindowAt<'_>, page: PageQuery<ScoreRange>) -> Result<TopPage> {
        match self.sharded(at.board).await? {
            None => self.inner.top(at, page).await,
            Some(s) => Box::pin(s.in_window(at.window, at.now).top(page)).await,
        }
    }

    async fn standings(
        &self,
        at: WindowAt<'_>,
        members: &[Member],
    ) -> Result<Vec<Option<Standing>>> {
        let Some(s) = self.sharded(at.board).await? else {
            return self.inner.standings(at, members).await;
        };
        let window = s.in_window(at.window, at.now);
        let mut standings = Vec::with_capacity(members.len());
        for member in members {
            standings.push(Box::pin(window.standing(member)).await?);
        }
        Ok(standings)
    }

    async fn ranks(&self, at: WindowAt<'_>, members: &[Member]) -> Result<Ranks> {
        match self.sharded(at.board).await? {
            None => self.inner.ranks(at, members).await,
            Some(s) => Box::pin(s.in_window(at.window, at.now).ranks(members)).await,
        }
    }

    async fn arounds(
        &self,
        at: WindowAt<'_>,
        members: &[Member],
        n: u64,
        options: AroundOptions,
    ) -> Result<Vec<Option<TopPage>>> {
        let Some(s) = self.sharded(at.board).await? else {
            return self.inner.arounds(at, members, n, options).await;
        };
        let window = s.in_window(at.window, at.now);
        let mut pages = Vec::with_capacity(members.len());
        for member in members {
            let query = AroundQuery { member, n, options };
            pages.push(Box::pin(window.around(query)).await?);
        }
        Ok(pages)
    }

    async fn history(&self, board: &Board, now: Timestamp, member: &Member) -> Result<History> {
        match self.sharded(board).await? {
            None => self.inner.history(board, now, member).await,
            Some(s) => Box::pin(s.history(now, member)).await,
        }
    }

    /// A sharded board keeps no contributors (its config refuses a cap).
    async fn contributions(
        &self,
        board: &Board,
        by: &Contributor,
    ) -> Result<Vec<WindowContributions>> {
        match self.sharded(board).await? {
            None => self.inner.contributions(board, by).await,
            Some(_) => Ok(Vec::new()),
        }
    }

    /// A sharded board keeps no contributors (its config refuses a cap).
    async fn member_contributions(
        &self,
        board: &Board,
        member: &Member,
        limit: usize,
    ) -> Result<Vec<WindowContributors>> {
        match self.sharded(board).await? {
            None => self.inner.member_contributions(board, member, limit).await,
            Some(_) => Ok(Vec::new()),
        }
    }

    /// A sharded board keeps no contributors: nothing to take back.
    async fn retract(
        &self,
        board: &Board,
        by: &Contributor,
        from: Option<i64>,
        stamp: ChangeStamp,
    ) -> Result<Retracted> {
        match self.sharded(board).await? {
            None => self.inner.retract(board, by, from, stamp).await,
            Some(_) => Ok(Retracted::default()),
        }
    }

    /// A sharded board keeps no contributors: nothing to quarantine.
    async fn quarantine(
        &self,
        board: &Board,
        by: &Contributor,
        quarantined: bool,
        stamp: ChangeStamp,
    ) -> Result<u64> {
        match self.sharded(board).await? {
            None => self.inner.quarantine(board, by, quarantined, stamp).await,
            Some(_) => Ok(0),
        }
    }

    async fn remove_member(
        &self,
        board: &Board,
        member: &Member,
        stamp: ChangeStamp,
    ) -> Result<Removed> {
        match self.sharded(board).await? {
            None => self.inner.remove_member(board, member, stamp).await,
            Some(s) => Box::pin(s.gated(s.remove_member(member, stamp))).await,
        }
    }

    async fn set_hidden(
        &self,
        board: &Board,
        members: &[Member],
        hidden: bool,
        now: Timestamp,
    ) -> Result<u64> {
        match self.sharded(board).await? {
            None => self.inner.set_hidden(board, members, hidden, now).await,
            Some(s) => Box::pin(s.gated(s.set_hidden(members, hidden, now))).await,
        }
    }

    async fn set_pins(&self, board: &Board, pins: &[Pin]) -> Result<Board> {
        // Pins are the board's (shard 0's record); the shards are found again.
        let set = self.inner.set_pins(board, pins).await;
        self.sets.forget(&board.name);
        set
    }

    async fn hidden_members(&self, at: WindowAt<'_>) -> Result<Vec<(String, Option<i64>)>> {
        match self.sharded(at.board).await? {
            None => self.inner.hidden_members(at).await,
            Some(s) => Box::pin(s.hidden_members(at.window, at.now)).await,
        }
    }

    async fn review(
        &self,
        board: &Board,
        member: &Member,
        decision: Decision,
        now: Timestamp,
    ) -> Result<bool> {
        match self.sharded(board).await? {
            None => self.inner.review(board, member, decision, now).await,
            Some(s) => Box::pin(s.review(member, decision, now)).await,
        }
    }

    async fn held_members(&self, at: WindowAt<'_>) -> Result<Vec<HeldMember>> {
        match self.sharded(at.board).await? {
            None => self.inner.held_members(at).await,
            Some(s) => Box::pin(s.held_members(at.window, at.now)).await,
        }
    }

    async fn held_events(
        &self,
        board: &Board,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<HeldEvent>> {
        match self.sharded(board).await? {
            None => self.inner.held_events(board, after, limit).await,
            Some(s) => Box::pin(s.held_events(after, limit)).await,
        }
    }

    async fn held_cursor(&self, board: &Board, delivered: Option<&str>) -> Result<Option<String>> {
        match self.sharded(board).await? {
            None => self.inner.held_cursor(board, delivered).await,
            Some(s) => Box::pin(s.held_cursor(delivered)).await,
        }
    }

    async fn changes(
        &self,
        board: &Board,
        after: Option<&str>,
        limit: usize,
        newest_first: bool,
    ) -> Result<Vec<Change>> {
        // A sharded board has no watch (its config refuses one): none recorded.
        self.inner.changes(board, after, limit, newest_first).await
    }

    async fn changes_cursor(
        &self,
        board: &Board,
        delivered: Option<&str>,
    ) -> Result<Option<String>> {
        self.inner.changes_cursor(board, delivered).await
    }

    async fn set_member_data(
        &self,
        board: &Board,
        entries: &[(Member, MemberData)],
    ) -> Result<Vec<bool>> {
        match self.sharded(board).await? {
            None => self.inner.set_member_data(board, entries).await,
            Some(s) => Box::pin(s.set_member_data(entries)).await,
        }
    }

    async fn member_data(
        &self,
        board: &Board,
        members: &[Member],
    ) -> Result<Vec<Option<MemberData>>> {
        match self.sharded(board).await? {
            None => self.inner.member_data(board, members).await,
            Some(s) => Box::pin(s.member_data(members)).await,
        }
    }

    async fn delete_member_data(&self, board: &Board, member: &Member) -> Result<bool> {
        match self.sharded(board).await? {
            None => self.inner.delete_member_data(board, member).await,
            Some(s) => Box::pin(s.delete_member_data(member)).await,
        }
    }

    async fn pending_windows(&self, board: &Board) -> Result<Vec<usize>> {
        match self.sharded(board).await? {
            None => self.inner.pending_windows(board).await,
            Some(s) => Box::pin(s.pending_windows()).await,
        }
    }

    async fn recompute(&self, board: &Board, window: usize) -> Result<RecomputeReport> {
        match self.sharded(board).await? {
            None => self.inner.recompute(board, window).await,
            Some(s) => Box::pin(s.gated(s.recompute(window))).await,
        }
    }

    async fn relayout(
        &self,
        board: &Board,
        layout: Layout,
        options: RelayoutOptions,
    ) -> Result<RelayoutReport> {
        match self.sharded(board).await? {
            None => self.inner.relayout(board, layout, options).await,
            Some(s) => Box::pin(s.relayout(layout, options)).await,
        }
    }

    async fn reshard(
        &self,
        board: &Board,
        shards: u32,
        clock: &dyn Clock,
    ) -> Result<ReshardReport> {
        Box::pin(self.reshard_board(board, shards, clock)).await
    }

    async fn retire(
        &self,
        board: &Board,
        now: Timestamp,
        options: Option<RetireOptions>,
    ) -> Result<RetireReport> {
        match self.sharded(board).await? {
            None => self.inner.retire(board, now, options).await,
            Some(s) => Box::pin(s.gated(s.retire(now, options))).await,
        }
    }

    // A sharded board's snapshots and their cursors are kept by shard 0, the board.
    async fn take_snapshots(
        &self,
        board: &Board,
        now: Timestamp,
        tops: Option<&[Option<Vec<Entry>>]>,
    ) -> Result<SnapshotPass> {
        if tops.is_none()
            && let Some(s) = self.sharded(board).await?
        {
            return Box::pin(s.take_snapshots(now)).await;
        }
        self.inner.take_snapshots(board, now, tops).await
    }

    async fn snapshots(
        &self,
        board: &Board,
        window: usize,
        range: SnapshotRange,
    ) -> Result<Vec<Snapshot>> {
        self.inner.snapshots(board, window, range).await
    }

    async fn snapshot_cursor(
        &self,
        board: &Board,
        window: usize,
        delivered: Option<i64>,
    ) -> Result<Option<i64>> {
        self.inner.snapshot_cursor(board, window, delivered).await
    }
}

#[async_trait]
impl ServerStore for ShardedStore {
    async fn memory(&self) -> Result<MemoryReading> {
        self.server_inner().memory().await
    }

    async fn server_time(&self) -> Result<Timestamp> {
        self.server_inner().server_time().await
    }

    /// The boards of one shard as the store underneath retires them; a sharded board
    /// with all its shards in the same calls, retired when every shard is.
    async fn retire_small(
        &self,
        boards: &[Arc<Board>],
        now: Timestamp,
    ) -> Result<Vec<Option<RetireReport>>> {
        let mut flat: Vec<Arc<Board>> = Vec::with_capacity(boards.len());
        let mut spans = Vec::with_capacity(boards.len());
        // The gated sharded boards, whose gate across the shards catches up after.
        let mut gated = Vec::new();
        for board in boards {
            let start = flat.len();
            match self.sharded(board).await {
                Ok(Some(s)) => {
                    flat.extend(s.shards().iter().cloned().map(Arc::new));
                    if board.config.review().is_some() {
                        gated.push(s);
                    }
                }
                // Unsharded, or its shards not found: the board alone (a sharded one's
                // own pass then finds them).
                Ok(None) | Err(_) => flat.push(board.clone()),
            }
            spans.push(start..flat.len());
        }
        let reports = self.server_inner().retire_small(&flat, now).await?;
        for s in gated {
            Box::pin(s.regate()).await?;
        }
        Ok(spans
            .into_iter()
            .map(|span| {
                let shards: Option<Vec<RetireReport>> = reports[span].iter().copied().collect();
                shards.map(upkeep::joined_retire)
            })
            .collect())
    }
}

impl ShardedStore {
    /// The server side of `inner` (this store answers [`Store::server`] only when
    /// `inner` has one).
    fn server_inner(&self) -> &dyn ServerStore {
        self.inner
            .server()
            .expect("asked only when the store underneath has a server side")
    }
}
