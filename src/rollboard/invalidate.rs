//! The store a [`Rollboard`](super::Rollboard) calls: the store it was given, wrapped so
//! that every call that changes a board (a write, a removal, member data, a retirement,
//! a recompute or relayout, a drop or re-creation, a trending write or maintenance)
//! forgets the board's cached reads ([`ReadCache::invalidate`]) before it returns, even
//! when it failed (a failed call may have changed part of the board). Every change made
//! through this process, by whatever path (the HTTP routes, the retirer, the jobs),
//! passes here, so a read after it never sees the state before it. Reads and the calls
//! that change nothing a read answers pass straight through, but for a min board's
//! values, which the stores keep negated ([`aggregates`]).

use std::sync::Arc;

use async_trait::async_trait;

use super::aggregates;
use super::read_cache::ReadCache;
use crate::clock::Clock;
use crate::domain::SlotWrite;
use crate::domain::any_board::AnyBoard;
use crate::domain::board::{Board, BoardStatus, Created};
use crate::domain::memory_check::MemoryReading;
use crate::domain::{Ahead, AheadProbe};
use crate::domain::{AroundOptions, Entry, Order, RetireReport};
use crate::domain::{BoardConfig, BoardName, Member, MemberData, Removed, Timestamp};
use crate::domain::{History, Ranks, ScoreRange, Standing, TopPage, WrittenStanding};
use crate::domain::{Layout, RecomputeReport, RelayoutOptions, RelayoutReport, ReshardReport};
use crate::domain::{Snapshot, SnapshotPass, SnapshotRange};
use crate::domain::{
    TrendCounts, TrendCreated, TrendMaintenance, TrendOptions, TrendPage, TrendRange, TrendRanks,
    TrendStanding, TrendWrite, TrendingBoard, TrendingConfig,
};
use crate::error::Result;
use crate::store::{
    CounterStore, Keyed, RateStore, RetireOptions, ServerStore, StatsStore, Store, TrendKeyed,
    TrendingStore, WriteKey, WriteStatus,
};

/// `inner`, forgetting the cached reads of each board a call changes.
pub(super) struct InvalidatingStore {
    inner: Arc<dyn Store>,
    cache: Arc<ReadCache>,
}

impl InvalidatingStore {
    pub(super) fn new(inner: Arc<dyn Store>, cache: Arc<ReadCache>) -> Self {
        InvalidatingStore { inner, cache }
    }

    /// `result`, once `board`'s cached reads are forgotten.
    fn changed<T>(&self, board: &BoardName, result: Result<T>) -> Result<T> {
        self.cache.invalidate(board);
        result
    }
}

#[async_trait]
impl Store for InvalidatingStore {
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

    fn trending(&self) -> &dyn TrendingStore {
        self
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
        config: &BoardConfig,
        now: Timestamp,
    ) -> Result<Created> {
        let result = self.inner.create_board(name, config, now).await;
        self.changed(name, result)
    }

    async fn load_board(&self, name: &BoardName) -> Result<Option<AnyBoard>> {
        self.inner.load_board(name).await
    }

    async fn list_boards(&self) -> Result<Vec<Board>> {
        self.inner.list_boards().await
    }

    async fn describe_board(&self, board: &Board, now: Timestamp) -> Result<BoardStatus> {
        self.inner.describe_board(board, now).await
    }

    async fn drop_board(&self, name: &BoardName) -> Result<bool> {
        let result = self.inner.drop_board(name).await;
        self.changed(name, result)
    }

    async fn write(
        &self,
        board: &Board,
        now: Timestamp,
        writes: Vec<SlotWrite>,
    ) -> Result<Vec<WriteStatus>> {
        let result = self.inner.write(board, now, writes).await;
        self.changed(&board.name, result)
    }

    async fn write_once(
        &self,
        board: &Board,
        now: Timestamp,
        writes: Vec<SlotWrite>,
        token: &str,
    ) -> Result<Option<Vec<WriteStatus>>> {
        let result = self.inner.write_once(board, now, writes, token).await;
        self.changed(&board.name, result)
    }

    async fn write_keyed(
        &self,
        board: &Board,
        now: Timestamp,
        writes: Vec<SlotWrite>,
        key: &WriteKey,
    ) -> Result<Keyed> {
        let result = self.inner.write_keyed(board, now, writes, key).await;
        self.changed(&board.name, result)
    }

    async fn write_standing(
        &self,
        board: &Board,
        now: Timestamp,
        writes: Vec<SlotWrite>,
        windows: &[usize],
        key: Option<&WriteKey>,
    ) -> Result<(Keyed, Vec<WrittenStanding>)> {
        let result = self
            .inner
            .write_standing(board, now, writes, windows, key)
            .await
            .map(|(keyed, standings)| (keyed, aggregates::written(board, standings)));
        self.changed(&board.name, result)
    }

    async fn top(
        &self,
        board: &Board,
        window: usize,
        now: Timestamp,
        range: ScoreRange,
        order: Order,
        offset: u64,
        limit: u64,
    ) -> Result<TopPage> {
        let range = aggregates::range(board, range);
        let page = self
            .inner
            .top(board, window, now, range, order, offset, limit)
            .await?;
        Ok(aggregates::page(board, page))
    }

    async fn standing(
        &self,
        board: &Board,
        window: usize,
        now: Timestamp,
        member: &Member,
    ) -> Result<Option<Standing>> {
        let standing = self.inner.standing(board, window, now, member).await?;
        Ok(aggregates::standing(board, standing))
    }

    async fn ranks(
        &self,
        board: &Board,
        window: usize,
        now: Timestamp,
        members: &[Member],
    ) -> Result<Ranks> {
        let ranks = self.inner.ranks(board, window, now, members).await?;
        Ok(aggregates::ranks(board, ranks))
    }

    async fn count_ahead(
        &self,
        board: &Board,
        window: usize,
        now: Timestamp,
        probes: &[AheadProbe],
    ) -> Result<Ahead> {
        let probes = aggregates::probes(board, probes);
        self.inner.count_ahead(board, window, now, &probes).await
    }

    async fn around(
        &self,
        board: &Board,
        window: usize,
        now: Timestamp,
        member: &Member,
        n: u64,
        options: AroundOptions,
    ) -> Result<Option<TopPage>> {
        let page = self
            .inner
            .around(board, window, now, member, n, options)
            .await?;
        Ok(page.map(|p| aggregates::page(board, p)))
    }

    async fn history(&self, board: &Board, now: Timestamp, member: &Member) -> Result<History> {
        let history = self.inner.history(board, now, member).await?;
        Ok(aggregates::history(board, history))
    }

    async fn remove_member(&self, board: &Board, member: &Member) -> Result<Removed> {
        let result = self.inner.remove_member(board, member).await;
        self.changed(&board.name, result)
    }

    async fn set_member_data(
        &self,
        board: &Board,
        entries: &[(Member, MemberData)],
    ) -> Result<Vec<bool>> {
        let result = self.inner.set_member_data(board, entries).await;
        self.changed(&board.name, result)
    }

    async fn member_data(
        &self,
        board: &Board,
        members: &[Member],
    ) -> Result<Vec<Option<MemberData>>> {
        self.inner.member_data(board, members).await
    }

    async fn delete_member_data(&self, board: &Board, member: &Member) -> Result<bool> {
        let result = self.inner.delete_member_data(board, member).await;
        self.changed(&board.name, result)
    }

    async fn pending_windows(&self, board: &Board) -> Result<Vec<usize>> {
        self.inner.pending_windows(board).await
    }

    async fn recompute(&self, board: &Board, window: usize) -> Result<RecomputeReport> {
        let result = self.inner.recompute(board, window).await;
        self.changed(&board.name, result)
    }

    async fn relayout(
        &self,
        board: &Board,
        layout: Layout,
        options: RelayoutOptions,
    ) -> Result<RelayoutReport> {
        aggregates::sums_only(board, "relayout")?;
        let result = self.inner.relayout(board, layout, options).await;
        self.changed(&board.name, result)
    }

    async fn reshard(
        &self,
        board: &Board,
        shards: u32,
        clock: &dyn Clock,
    ) -> Result<ReshardReport> {
        aggregates::sums_only(board, "reshard")?;
        let result = self.inner.reshard(board, shards, clock).await;
        self.changed(&board.name, result)
    }

    async fn retire(&self, board: &Board, now: Timestamp) -> Result<RetireReport> {
        let result = self.inner.retire(board, now).await;
        self.changed(&board.name, result)
    }

    async fn take_snapshots(&self, board: &Board, now: Timestamp) -> Result<SnapshotPass> {
        self.inner.take_snapshots(board, now).await
    }

    async fn append_snapshots(
        &self,
        board: &Board,
        now: Timestamp,
        tops: &[Option<Vec<Entry>>],
    ) -> Result<SnapshotPass> {
        self.inner.append_snapshots(board, now, tops).await
    }

    async fn snapshots(
        &self,
        board: &Board,
        window: usize,
        range: SnapshotRange,
    ) -> Result<Vec<Snapshot>> {
        let snapshots = self.inner.snapshots(board, window, range).await?;
        Ok(aggregates::snapshots(board, snapshots))
    }

    async fn snapshot_cursor(&self, board: &Board, window: usize) -> Result<Option<i64>> {
        self.inner.snapshot_cursor(board, window).await
    }

    async fn advance_snapshot_cursor(
        &self,
        board: &Board,
        window: usize,
        boundary: i64,
    ) -> Result<()> {
        self.inner
            .advance_snapshot_cursor(board, window, boundary)
            .await
    }
}

#[async_trait]
impl TrendingStore for InvalidatingStore {
    async fn create_trending(
        &self,
        name: &BoardName,
        config: &TrendingConfig,
        now: Timestamp,
    ) -> Result<TrendCreated> {
        let result = self
            .inner
            .trending()
            .create_trending(name, config, now)
            .await;
        self.changed(name, result)
    }

    async fn list_trending(&self) -> Result<Vec<TrendingBoard>> {
        self.inner.trending().list_trending().await
    }

    async fn trend_counts(&self, board: &TrendingBoard) -> Result<TrendCounts> {
        self.inner.trending().trend_counts(board).await
    }

    async fn trend_write(
        &self,
        board: &TrendingBoard,
        now: Timestamp,
        writes: &[TrendWrite],
    ) -> Result<()> {
        let result = self.inner.trending().trend_write(board, now, writes).await;
        self.changed(&board.name, result)
    }

    async fn trend_write_keyed(
        &self,
        board: &TrendingBoard,
        now: Timestamp,
        writes: &[TrendWrite],
        key: &WriteKey,
    ) -> Result<TrendKeyed> {
        let trending = self.inner.trending();
        let result = trending.trend_write_keyed(board, now, writes, key).await;
        self.changed(&board.name, result)
    }

    async fn trend_top(
        &self,
        board: &TrendingBoard,
        now: Timestamp,
        range: TrendRange,
        order: Order,
        offset: u64,
        limit: u64,
    ) -> Result<TrendPage> {
        let trending = self.inner.trending();
        trending
            .trend_top(board, now, range, order, offset, limit)
            .await
    }

    async fn trend_standing(
        &self,
        board: &TrendingBoard,
        now: Timestamp,
        member: &Member,
    ) -> Result<Option<TrendStanding>> {
        self.inner
            .trending()
            .trend_standing(board, now, member)
            .await
    }

    async fn trend_ranks(
        &self,
        board: &TrendingBoard,
        now: Timestamp,
        members: &[Member],
    ) -> Result<TrendRanks> {
        self.inner.trending().trend_ranks(board, now, members).await
    }

    async fn trend_around(
        &self,
        board: &TrendingBoard,
        now: Timestamp,
        member: &Member,
        n: u64,
        options: AroundOptions,
    ) -> Result<Option<TrendPage>> {
        let trending = self.inner.trending();
        trending.trend_around(board, now, member, n, options).await
    }

    async fn trend_maintain(
        &self,
        board: &TrendingBoard,
        now: Timestamp,
        options: TrendOptions,
    ) -> Result<TrendMaintenance> {
        let result = self
            .inner
            .trending()
            .trend_maintain(board, now, options)
            .await;
        self.changed(&board.name, result)
    }
}

#[async_trait]
impl ServerStore for InvalidatingStore {
    async fn memory(&self) -> Result<MemoryReading> {
        self.server_inner().memory().await
    }

    async fn server_time(&self) -> Result<Timestamp> {
        self.server_inner().server_time().await
    }

    async fn retire_small(
        &self,
        boards: &[Arc<Board>],
        now: Timestamp,
    ) -> Result<Vec<Option<RetireReport>>> {
        let result = self.server_inner().retire_small(boards, now).await;
        for board in boards {
            self.cache.invalidate(&board.name);
        }
        result
    }

    async fn retire_with(
        &self,
        board: &Board,
        now: Timestamp,
        options: RetireOptions,
    ) -> Result<RetireReport> {
        let result = self.server_inner().retire_with(board, now, options).await;
        self.changed(&board.name, result)
    }
}

impl InvalidatingStore {
    /// The server side of `inner` (this store answers [`Store::server`] only when
    /// `inner` has one).
    fn server_inner(&self) -> &dyn ServerStore {
        self.inner
            .server()
            .expect("reached through Store::server, which is Some only when inner's is")
    }
}
