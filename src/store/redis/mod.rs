//! The Redis store: the production backend. This module only assembles the [`Store`]
//! implementation (and retires a board before an extension that asks for it); the work
//! is done in folders, each importing only those above it in this list:
//!
//! - `conn/`: the connection, the loaded scripts and the one retry helper;
//! - `lua/`: the Lua every script may use, one file per concern;
//! - `board/`: a board whatever its family (keys, record, registry, slot index, layout,
//!   lifecycle, rankings, history, describe, member data, snapshots, relayout);
//! - `retire/`: retirement (small, swap, chunks, compact, and the max boards'), the pass
//!   asking the board's family (`board/family.rs`) how to retire and compact a slot;
//! - `sums/`: sum boards and the write path (call, budget, ingest, once, standing) that
//!   `maxima/` (max, min and latest boards) rides; each
//!   implements the family seam, and [`RedisStore::family`] picks a board's;
//! - one folder per other system with its store trait: `trending/`, `rates/`,
//!   `counters/`, `stats/`, and `resharding/` (members moved between shards); and
//!   `moderation.rs`, moderation that spans boards.
//!
//! Every multi-key operation of a board is one Lua script (a file beside the code that
//! calls it, with its KEYS and ARGV documented, sent after what it uses of a shared
//! prelude), and every key a script touches is passed in KEYS, or is a compact slot's
//! bucket named from a stage key passed in KEYS (same hash tag, so the same Cluster
//! slot), so it runs unchanged on Redis Cluster. No `KEYS` or `SCAN` command runs
//! anywhere: slots are found through the board's slot index. Which calls are sent again
//! after a lost reply is stated at each call by its [`Retry`](conn::Retry) class (see
//! `docs/design.md`, "Retry classes").

use std::sync::Arc;

use async_trait::async_trait;

mod board;
mod conn;
mod contributors;
mod counters;
mod maxima;
mod moderation;
mod rates;
mod resharding;
mod retire;
mod stats;
mod sums;
mod trending;

use board::family::Family;
#[cfg(feature = "server")]
pub(crate) use conn::client::{check_url, redact};
#[cfg(feature = "server")]
pub(crate) use conn::glob_escape;
#[cfg(feature = "server")]
pub(crate) use conn::keys::is_rollboard_name;
pub use conn::options::{
    IngestOptions, InvalidKeyPrefix, KeyPrefix, RedisOptions, ReplicaAcks, RetireOptions,
};
pub(crate) use conn::{RedisConn, Retry};
use maxima::MaxFamily;
use sums::SumFamily;
use sums::ingest::Ingest;

use crate::domain::ChangeStamp;
use crate::domain::GateBar;
use crate::domain::PageQuery;
use crate::domain::Removed;
use crate::domain::RetireReport;
use crate::domain::any_board::{AnyBoard, NewBoard};
use crate::domain::board::{Board, BoardStatus, Created, Resharding, SlotWrites, WindowAt};
use crate::domain::memory_check::MemoryReading;
use crate::domain::{
    Ahead, AheadProbe, AroundOptions, History, Ranks, ScoreRange, Standing, TopPage,
};
use crate::domain::{
    BoardConfig, BoardName, Change, Decision, HeldEvent, HeldMember, Layout, Member, MemberData,
    Pin, Timestamp,
};
use crate::domain::{Contributor, Retracted, WindowContributions, WindowContributors};
use crate::domain::{RecomputeReport, RelayoutOptions, RelayoutReport};
use crate::error::Result;
use crate::store::{CounterStore, ServerStore, ShardMoves, StatsStore};
use crate::store::{Keyed, Store, WriteKey, WriteStatus};

/// Attempts to extend a board before giving up (each after a retirement).
const EXTEND_ATTEMPTS: usize = 5;

/// Boards kept in Redis: a single node, or a Redis Cluster (every key of a board carries
/// the board's hash tag, so a board lives on one node).
#[derive(Clone)]
pub struct RedisStore {
    conn: RedisConn,
    /// Sum boards' family (its group commit of writes); max, min and latest boards' is
    /// [`MaxFamily`], which holds nothing.
    sums: SumFamily,
    /// Group commit of stats records.
    stats: Arc<stats::commit::StatsCommit>,
    /// Group commit of rate hits.
    rates: Arc<rates::commit::RatesCommit>,
    /// How retirement passes run unless told otherwise ([`RedisOptions::retire`]).
    retire: RetireOptions,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore").finish_non_exhaustive()
    }
}

impl RedisStore {
    /// Creates, finds or extends windowed board `name` (see [`Store::create_board`]).
    async fn create_windowed(
        &self,
        name: &BoardName,
        config: &BoardConfig,
        now: Timestamp,
    ) -> Result<Created> {
        let extension = match board::boards::create(&self.conn, name, config, now).await? {
            board::boards::Creating::Done(created) => return Ok(created),
            board::boards::Creating::Extend(extension) => extension,
        };
        // A board whose largest window still has frozen slots to consume is retired
        // first, then extended again (see `extend_board.lua`), a few times at most.
        for _ in 0..EXTEND_ATTEMPTS {
            match board::boards::extend(&self.conn, &extension).await? {
                Some(created) => return Ok(created),
                None => {
                    let options = RetireOptions::default();
                    self.retire_board(&extension.existing, now, options).await?;
                }
            }
        }
        Err(extension.kept_freezing())
    }

    /// Connects to `url` (`redis://host:port/db`, or `rediss://user:password@host:port/`
    /// for TLS and an ACL user) with default options.
    pub async fn connect(url: &str) -> Result<Self> {
        Self::connect_with(url, RedisOptions::default()).await
    }

    /// Connects to `url` with `options`.
    pub async fn connect_with(url: &str, options: RedisOptions) -> Result<Self> {
        let conn = RedisConn::connect(url, &options).await?;
        Ok(Self::on(conn, options))
    }

    /// Connects to the Redis Cluster reached through the seed nodes `urls`
    /// (`redis://host:port`, any number of the cluster's masters or replicas; the rest
    /// are found from them) with default options.
    pub async fn connect_cluster<S: AsRef<str>>(urls: &[S]) -> Result<Self> {
        Self::connect_cluster_with(urls, RedisOptions::default()).await
    }

    /// Connects to the Redis Cluster reached through `urls` with `options` (the same
    /// timeouts and TLS trust as a single node).
    pub async fn connect_cluster_with<S: AsRef<str>>(
        urls: &[S],
        options: RedisOptions,
    ) -> Result<Self> {
        let urls: Vec<String> = urls.iter().map(|u| u.as_ref().to_owned()).collect();
        let conn = RedisConn::connect_cluster(&urls, &options).await?;
        Ok(Self::on(conn, options))
    }

    fn on(conn: RedisConn, options: RedisOptions) -> Self {
        RedisStore {
            sums: SumFamily {
                ingest: Arc::new(Ingest::new(conn.clone(), options.ingest)),
            },
            conn,
            stats: Arc::default(),
            rates: Arc::default(),
            retire: options.retire,
        }
    }

    /// Retires `board` at `now` as `options` say, the way its family does.
    async fn retire_board(
        &self,
        board: &Board,
        now: Timestamp,
        options: RetireOptions,
    ) -> Result<RetireReport> {
        retire::retire(&self.conn, self.family(board), board, now, options).await
    }

    /// The family of `board`: the one place the store looks at a board's aggregate.
    fn family(&self, board: &Board) -> &dyn Family {
        if board.config.aggregate().sums() {
            &self.sums
        } else {
            &MaxFamily
        }
    }
}

#[async_trait]
impl ServerStore for RedisStore {
    async fn memory(&self) -> Result<MemoryReading> {
        board::memory_info::read(&self.conn).await
    }

    async fn server_time(&self) -> Result<Timestamp> {
        let (seconds, micros): (i64, i64) = self
            .conn
            .query(&redis::cmd("TIME"), None, Retry::Idempotent)
            .await?;
        Timestamp::from_unix_millis(seconds * 1000 + micros / 1000)
    }

    async fn retire_small(
        &self,
        boards: &[Arc<Board>],
        now: Timestamp,
    ) -> Result<Vec<Option<RetireReport>>> {
        let fits = |b: &Board| self.family(b).retires_small(b);
        retire::retire_small(&self.conn, boards, fits, now, self.retire).await
    }
}

#[async_trait]
impl Store for RedisStore {
    fn kind(&self) -> &'static str {
        if self.conn.is_cluster() {
            "redis-cluster"
        } else {
            "redis"
        }
    }

    fn counters(&self) -> &dyn CounterStore {
        self
    }

    fn stats(&self) -> &dyn StatsStore {
        self
    }

    fn rates(&self) -> &dyn crate::store::RateStore {
        self
    }

    fn trending(&self) -> &dyn crate::store::TrendingStore {
        self
    }

    fn moderation(&self) -> &dyn crate::store::ModerationStore {
        self
    }

    fn server(&self) -> Option<&dyn ServerStore> {
        Some(self)
    }

    #[allow(private_interfaces)] // sealed: see `Store::shard_moves`
    fn shard_moves(&self) -> Option<&dyn ShardMoves> {
        Some(self)
    }

    async fn ping(&self) -> Result<()> {
        self.conn
            .query::<String>(&redis::cmd("PING"), None, Retry::Idempotent)
            .await
            .map(|_| ())
    }

    async fn create_board(
        &self,
        name: &BoardName,
        config: &NewBoard,
        now: Timestamp,
    ) -> Result<Created<AnyBoard>> {
        Ok(match config {
            NewBoard::Windowed(config) => self
                .create_windowed(name, config, now)
                .await?
                .map(Into::into),
            NewBoard::Trending(config) => trending::create(&self.conn, name, config, now)
                .await?
                .map(Into::into),
        })
    }

    async fn load_board(&self, name: &BoardName) -> Result<Option<AnyBoard>> {
        board::boards::load(&self.conn, name).await
    }

    async fn list_boards(&self) -> Result<Vec<AnyBoard>> {
        board::boards::list(&self.conn).await
    }

    async fn describe_board(&self, board: &Board, now: Timestamp) -> Result<BoardStatus> {
        board::describe::describe(&self.conn, board, now).await
    }

    async fn drop_board(&self, name: &BoardName) -> Result<bool> {
        let dropped = board::boards::drop(&self.conn, name).await?;
        self.sums.ingest.forget(name);
        Ok(dropped)
    }

    async fn write(&self, w: SlotWrites<'_>) -> Result<Vec<WriteStatus>> {
        self.family(w.board).write(&self.conn, w).await
    }

    async fn write_once(&self, w: SlotWrites<'_>, token: &str) -> Result<Option<Vec<WriteStatus>>> {
        self.family(w.board).write_once(&self.conn, w, token).await
    }

    async fn write_keyed(&self, w: SlotWrites<'_>, key: &WriteKey) -> Result<Keyed> {
        self.family(w.board).write_keyed(&self.conn, w, key).await
    }

    async fn write_standing(
        &self,
        w: SlotWrites<'_>,
        windows: &[usize],
        key: Option<&WriteKey>,
    ) -> Result<(Keyed, Vec<crate::domain::WrittenStanding>)> {
        self.family(w.board)
            .write_standing(&self.conn, w, windows, key)
            .await
    }

    async fn top(&self, at: WindowAt<'_>, page: PageQuery<ScoreRange>) -> Result<TopPage> {
        board::read::top(&self.conn, at, page).await
    }

    async fn standings(
        &self,
        at: WindowAt<'_>,
        members: &[Member],
    ) -> Result<Vec<Option<Standing>>> {
        board::read::standings(&self.conn, at, members).await
    }

    async fn ranks(&self, at: WindowAt<'_>, members: &[Member]) -> Result<Ranks> {
        board::read::ranks(&self.conn, at, members).await
    }

    async fn arounds(
        &self,
        at: WindowAt<'_>,
        members: &[Member],
        n: u64,
        options: AroundOptions,
    ) -> Result<Vec<Option<TopPage>>> {
        board::read::arounds(&self.conn, at, members, n, options).await
    }

    async fn history(&self, board: &Board, now: Timestamp, member: &Member) -> Result<History> {
        let form = self.family(board).slot_form(board);
        board::history::history(&self.conn, board, &form, now, member).await
    }

    async fn contributions(
        &self,
        board: &Board,
        by: &Contributor,
    ) -> Result<Vec<WindowContributions>> {
        contributors::contributions(&self.conn, board, by).await
    }

    async fn member_contributions(
        &self,
        board: &Board,
        member: &Member,
        limit: usize,
    ) -> Result<Vec<WindowContributors>> {
        contributors::members::member_contributions(&self.conn, board, member, limit).await
    }

    async fn retract(
        &self,
        board: &Board,
        by: &Contributor,
        from: Option<i64>,
        stamp: ChangeStamp,
    ) -> Result<Retracted> {
        contributors::retract::retract(&self.conn, board, by, from, stamp, &self.retire).await
    }

    async fn quarantine(
        &self,
        board: &Board,
        by: &Contributor,
        quarantined: bool,
        stamp: ChangeStamp,
    ) -> Result<u64> {
        let retire = &self.retire;
        contributors::quarantine::quarantine(&self.conn, board, by, quarantined, stamp, retire)
            .await
    }

    async fn remove_member(
        &self,
        board: &Board,
        member: &Member,
        stamp: ChangeStamp,
    ) -> Result<Removed> {
        let family = self.family(board);
        family.remove_member(&self.conn, board, member, stamp).await
    }

    async fn set_hidden(
        &self,
        board: &Board,
        members: &[Member],
        hidden: bool,
        now: Timestamp,
    ) -> Result<u64> {
        sums::hide::set_hidden(&self.conn, board, members, hidden, now).await
    }

    async fn set_pins(&self, board: &Board, pins: &[Pin]) -> Result<Board> {
        sums::hide::set_pins(&self.conn, board, pins).await
    }

    async fn hidden_members(&self, at: WindowAt<'_>) -> Result<Vec<(String, Option<i64>)>> {
        sums::hide::hidden_members(&self.conn, at).await
    }

    async fn review(
        &self,
        board: &Board,
        member: &Member,
        decision: Decision,
        now: Timestamp,
    ) -> Result<bool> {
        sums::review::decide(&self.conn, board, member, decision, now).await
    }

    async fn held_members(&self, at: WindowAt<'_>) -> Result<Vec<HeldMember>> {
        sums::review::held_members(&self.conn, at).await
    }

    async fn held_events(
        &self,
        board: &Board,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<HeldEvent>> {
        sums::review::held_events(&self.conn, board, after, limit).await
    }

    async fn held_cursor(&self, board: &Board, delivered: Option<&str>) -> Result<Option<String>> {
        sums::review::held_cursor(&self.conn, board, delivered).await
    }

    async fn changes(
        &self,
        board: &Board,
        after: Option<&str>,
        limit: usize,
        newest_first: bool,
    ) -> Result<Vec<Change>> {
        sums::changes::changes(&self.conn, board, after, limit, newest_first).await
    }

    async fn changes_cursor(
        &self,
        board: &Board,
        delivered: Option<&str>,
    ) -> Result<Option<String>> {
        sums::changes::changes_cursor(&self.conn, board, delivered).await
    }

    async fn set_member_data(
        &self,
        board: &Board,
        entries: &[(Member, MemberData)],
    ) -> Result<Vec<bool>> {
        board::member_data::set(&self.conn, board, entries).await
    }

    async fn member_data(
        &self,
        board: &Board,
        members: &[Member],
    ) -> Result<Vec<Option<MemberData>>> {
        board::member_data::get(&self.conn, board, members).await
    }

    async fn delete_member_data(&self, board: &Board, member: &Member) -> Result<bool> {
        board::member_data::delete(&self.conn, board, member).await
    }

    async fn pending_windows(&self, board: &Board) -> Result<Vec<usize>> {
        board::describe::pending_windows(&self.conn, board).await
    }

    async fn recompute(&self, board: &Board, window: usize) -> Result<RecomputeReport> {
        let family = self.family(board);
        family.recompute(&self.conn, board, window).await
    }

    async fn relayout(
        &self,
        board: &Board,
        layout: Layout,
        options: RelayoutOptions,
    ) -> Result<RelayoutReport> {
        board::relayout::relayout(&self.conn, board, layout, options).await
    }

    async fn retire(
        &self,
        board: &Board,
        now: Timestamp,
        options: Option<RetireOptions>,
    ) -> Result<RetireReport> {
        self.retire_board(board, now, options.unwrap_or(self.retire))
            .await
    }

    async fn take_snapshots(
        &self,
        board: &Board,
        now: Timestamp,
        tops: Option<&[Option<Vec<crate::domain::Entry>>]>,
    ) -> Result<crate::domain::SnapshotPass> {
        match tops {
            None => board::snapshots::take(&self.conn, board, now).await,
            Some(tops) => board::snapshots::append(&self.conn, board, now, tops).await,
        }
    }

    async fn snapshots(
        &self,
        board: &Board,
        window: usize,
        range: crate::domain::SnapshotRange,
    ) -> Result<Vec<crate::domain::Snapshot>> {
        board::snapshots::list(&self.conn, board, window, range).await
    }

    async fn snapshot_cursor(
        &self,
        board: &Board,
        window: usize,
        delivered: Option<i64>,
    ) -> Result<Option<i64>> {
        match delivered {
            None => board::snapshots::cursor(&self.conn, board, window).await,
            Some(boundary) => board::snapshots::advance_cursor(&self.conn, board, window, boundary)
                .await
                .map(Some),
        }
    }
}

#[async_trait]
impl ShardMoves for RedisStore {
    async fn count_ahead(&self, at: WindowAt<'_>, probes: &[AheadProbe]) -> Result<Ahead> {
        board::read::count_ahead(&self.conn, at, probes).await
    }

    async fn set_shards(
        &self,
        board: &Board,
        shards: u32,
        resharding: Option<Resharding>,
    ) -> Result<Board> {
        resharding::set_shards(&self.conn, board, shards, resharding).await
    }

    async fn mark_moved(&self, board: &Board, members: &[Member]) -> Result<()> {
        resharding::mark(&self.conn, board, members).await
    }

    async fn moved(&self, board: &Board, members: &[Member]) -> Result<Vec<bool>> {
        resharding::moved(&self.conn, board, members).await
    }

    async fn clear_moved(&self, board: &Board) -> Result<()> {
        resharding::clear(&self.conn, board).await
    }

    async fn stash(&self, board: &Board, member: &Member, stash: &str) -> Result<String> {
        resharding::stash(&self.conn, board, member, stash).await
    }

    async fn stashed(&self, board: &Board) -> Result<Vec<(Member, String)>> {
        resharding::stashed(&self.conn, board).await
    }

    async fn unstash(&self, board: &Board, member: &Member) -> Result<()> {
        resharding::unstash(&self.conn, board, member).await
    }

    async fn forget_tokens(&self, board: &Board, tokens: &[String]) -> Result<()> {
        resharding::forget_tokens(&self.conn, board, tokens).await
    }

    async fn lease(&self, board: &Board, holder: &str, now_ms: i64, until_ms: i64) -> Result<bool> {
        resharding::lease(&self.conn, board, holder, now_ms, until_ms).await
    }

    async fn slot_members(&self, board: &Board) -> Result<Vec<Member>> {
        resharding::slot_members(&self.conn, board).await
    }

    async fn gate_epoch(&self, board: &Board) -> Result<u64> {
        resharding::gate_epoch(&self.conn, board).await
    }

    async fn gate_top(&self, board: &Board, k: u32) -> Result<Vec<Vec<(i64, String)>>> {
        resharding::gate_top(&self.conn, board, k).await
    }

    async fn publish_bars(
        &self,
        board: &Board,
        epoch: u64,
        bars: &[Option<GateBar>],
    ) -> Result<()> {
        resharding::publish_bars(&self.conn, board, epoch, bars).await
    }

    async fn allowed(&self, board: &Board) -> Result<Vec<Member>> {
        resharding::allowed(&self.conn, board).await
    }

    async fn set_allowed(&self, board: &Board, members: &[Member], allowed: bool) -> Result<()> {
        resharding::set_allowed(&self.conn, board, members, allowed).await
    }
}
