//! The Redis store: the production backend. This module only assembles the [`Store`]
//! implementation; the work is done by one module per operation family (`boards`,
//! `write`, `ingest`, `read`, `retire`, `recompute`), all of which talk to Redis through
//! [`conn`] (the connection, the loaded scripts and the one retry helper).
//!
//! Every multi-key operation of a board is one Lua script (files under `lua/`, each with
//! its KEYS and ARGV documented, joined at build time to a shared prelude), and every key
//! a script touches is passed in KEYS, or is a compact slot's bucket named from a stage
//! key passed in KEYS (same hash tag, so the same Cluster slot), so it runs unchanged on
//! Redis Cluster. No `KEYS` or `SCAN` command runs anywhere: slots are found through the
//! board's slot index. Which calls are sent again after a lost reply is stated at each
//! call by its [`Retry`](conn::Retry) class (see `docs/design.md`, "Retry classes").

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

mod boards;
mod budget;
mod client;
mod compact;
mod conn;
mod counters;
mod errors;
mod ingest;
mod keys;
mod layout;
mod memory_info;
mod once;
mod rates;
mod read;
mod recompute;
mod refusal;
mod relayout;
mod reply;
mod retire;
mod retire_small;
mod retire_swap;
mod script_pipeline;
mod scripts;
mod snapshots;
mod stats;
mod stats_calls;
mod stats_commit;
mod trending;
mod write;
mod write_call;

#[cfg(feature = "server")]
pub(crate) use client::{check_url, redact};
pub(crate) use conn::{RedisConn, Retry};
use ingest::Ingest;
pub use ingest::IngestOptions;

use crate::any_board::AnyBoard;
use crate::board::{Board, BoardStatus, Created};
use crate::domain::Removed;
use crate::domain::{BoardConfig, BoardName, Layout, Member, Timestamp};
use crate::domain::{History, Standing, TopPage};
use crate::domain::{RecomputeReport, RelayoutOptions, RelayoutReport};
use crate::domain::{RetireOptions, RetireReport};
use crate::error::Result;
use crate::store::{Keyed, SlotWrite, Store, WriteKey, WriteStatus};

/// Connection settings for [`RedisStore`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisOptions {
    /// How long to wait for any one reply before reporting the store unavailable (a
    /// read is sent once more after a lost reply, so it can wait twice this).
    pub response_timeout: Duration,
    /// How long one connection attempt may take (TCP, TLS handshake, AUTH).
    pub connection_timeout: Duration,
    /// A PEM file of the CA that signed the server's certificate, for `rediss://` URLs
    /// to a Redis with a private CA; `None` trusts the system's roots. The certificate
    /// is verified either way.
    pub tls_ca: Option<PathBuf>,
    /// How concurrent writes are batched (group commit).
    pub ingest: IngestOptions,
    /// The layout of boards created without one (`BoardConfig::with_layout`); it
    /// decides the layout of each of their slots when the slot is created. Compact by
    /// default: a third of the memory, for a little write throughput (see
    /// `docs/design.md`, "Compact slots", "Which layout by default").
    pub default_layout: Layout,
}

impl Default for RedisOptions {
    fn default() -> Self {
        RedisOptions {
            // Scripts are bounded to a few milliseconds; two seconds only trips when Redis
            // is really stuck or gone, and then a fast error beats a hung request.
            response_timeout: Duration::from_secs(2),
            connection_timeout: Duration::from_secs(2),
            tls_ca: None,
            ingest: IngestOptions::default(),
            default_layout: Layout::Compact,
        }
    }
}

/// Boards kept in Redis: a single node, or a Redis Cluster (every key of a board carries
/// the board's hash tag, so a board lives on one node).
#[derive(Clone)]
pub struct RedisStore {
    conn: RedisConn,
    ingest: Arc<Ingest>,
    /// Group commit of stats records.
    stats: Arc<stats_commit::StatsCommit>,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore").finish_non_exhaustive()
    }
}

impl RedisStore {
    /// Connects to `url` (`redis://host:port/db`, or `rediss://user:password@host:port/`
    /// for TLS and an ACL user) with default options.
    pub async fn connect(url: &str) -> Result<Self> {
        Self::connect_with(url, RedisOptions::default()).await
    }

    /// Connects to `url` with `options`.
    pub async fn connect_with(url: &str, options: RedisOptions) -> Result<Self> {
        let conn = RedisConn::connect(url, &options).await?;
        Ok(RedisStore {
            ingest: Arc::new(Ingest::new(conn.clone(), options.ingest)),
            conn,
            stats: Arc::default(),
        })
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
        Ok(RedisStore {
            ingest: Arc::new(Ingest::new(conn.clone(), options.ingest)),
            conn,
            stats: Arc::default(),
        })
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

    fn rates(&self) -> &dyn crate::store::RateStore {
        self
    }

    fn trending(&self) -> &dyn crate::store::TrendingStore {
        self
    }

    async fn ping(&self) -> Result<()> {
        self.conn
            .query::<String>(&redis::cmd("PING"), None, Retry::Idempotent)
            .await
            .map(|_| ())
    }

    async fn memory(&self) -> Result<crate::memory_check::MemoryReading> {
        memory_info::read(&self.conn).await
    }

    async fn server_time(&self) -> Result<Option<Timestamp>> {
        let (seconds, micros): (i64, i64) = self
            .conn
            .query(&redis::cmd("TIME"), None, Retry::Idempotent)
            .await?;
        Timestamp::from_unix_millis(seconds * 1000 + micros / 1000).map(Some)
    }

    async fn create_board(
        &self,
        name: &BoardName,
        config: &BoardConfig,
        now: Timestamp,
    ) -> Result<Created> {
        boards::create(&self.conn, name, config, now).await
    }

    async fn load_board(&self, name: &BoardName) -> Result<Option<AnyBoard>> {
        boards::load(&self.conn, name).await
    }

    async fn list_boards(&self) -> Result<Vec<Board>> {
        boards::list(&self.conn).await
    }

    async fn describe_board(&self, board: &Board, now: Timestamp) -> Result<BoardStatus> {
        read::describe(&self.conn, board, now).await
    }

    async fn drop_board(&self, name: &BoardName) -> Result<bool> {
        let dropped = boards::drop(&self.conn, name).await?;
        self.ingest.forget(name);
        Ok(dropped)
    }

    async fn write(
        &self,
        board: &Board,
        now: Timestamp,
        writes: Vec<SlotWrite>,
    ) -> Result<Vec<WriteStatus>> {
        self.ingest.write(board, now, writes).await
    }

    async fn write_once(
        &self,
        board: &Board,
        now: Timestamp,
        writes: Vec<SlotWrite>,
        token: &str,
    ) -> Result<Option<Vec<WriteStatus>>> {
        once::write_once(&self.conn, board, now, writes, token).await
    }

    async fn write_keyed(
        &self,
        board: &Board,
        now: Timestamp,
        writes: Vec<SlotWrite>,
        key: &WriteKey,
    ) -> Result<Keyed> {
        once::write_keyed(&self.conn, self.ingest.budget(), board, now, writes, key).await
    }

    async fn top(
        &self,
        board: &Board,
        window: usize,
        now: Timestamp,
        range: crate::domain::ScoreRange,
        offset: u64,
        limit: u64,
    ) -> Result<TopPage> {
        read::top(&self.conn, board, window, now, range, offset, limit).await
    }

    async fn standing(
        &self,
        board: &Board,
        window: usize,
        now: Timestamp,
        member: &Member,
    ) -> Result<Option<Standing>> {
        read::standing(&self.conn, board, window, now, member).await
    }

    async fn ranks(
        &self,
        board: &Board,
        window: usize,
        now: Timestamp,
        members: &[Member],
    ) -> Result<crate::domain::Ranks> {
        read::ranks(&self.conn, board, window, now, members).await
    }

    async fn around(
        &self,
        board: &Board,
        window: usize,
        now: Timestamp,
        member: &Member,
        n: u64,
    ) -> Result<Option<TopPage>> {
        read::around(&self.conn, board, window, now, member, n).await
    }

    async fn history(&self, board: &Board, now: Timestamp, member: &Member) -> Result<History> {
        read::history(&self.conn, board, now, member).await
    }

    async fn remove_member(&self, board: &Board, member: &Member) -> Result<Removed> {
        write::remove_member(&self.conn, board, member).await
    }

    async fn pending_windows(&self, board: &Board) -> Result<Vec<usize>> {
        read::pending_windows(&self.conn, board).await
    }

    async fn recompute(&self, board: &Board, window: usize) -> Result<RecomputeReport> {
        recompute::recompute(&self.conn, board, window).await
    }

    async fn relayout(
        &self,
        board: &Board,
        layout: Layout,
        options: RelayoutOptions,
    ) -> Result<RelayoutReport> {
        relayout::relayout(&self.conn, board, layout, options).await
    }

    async fn retire(
        &self,
        board: &Board,
        now: Timestamp,
        options: RetireOptions,
    ) -> Result<RetireReport> {
        retire::retire(&self.conn, board, now, options).await
    }

    async fn retire_small(
        &self,
        boards: &[Arc<Board>],
        now: Timestamp,
        options: RetireOptions,
    ) -> Result<Vec<Option<RetireReport>>> {
        retire_small::retire_small(&self.conn, boards, now, options).await
    }

    async fn take_snapshots(
        &self,
        board: &Board,
        now: Timestamp,
    ) -> Result<crate::domain::SnapshotPass> {
        snapshots::take(&self.conn, board, now).await
    }

    async fn snapshots(
        &self,
        board: &Board,
        window: usize,
        range: crate::domain::SnapshotRange,
    ) -> Result<Vec<crate::domain::Snapshot>> {
        snapshots::list(&self.conn, board, window, range).await
    }

    async fn snapshot_cursor(&self, board: &Board, window: usize) -> Result<Option<i64>> {
        snapshots::cursor(&self.conn, board, window).await
    }

    async fn advance_snapshot_cursor(
        &self,
        board: &Board,
        window: usize,
        boundary: i64,
    ) -> Result<()> {
        snapshots::advance_cursor(&self.conn, board, window, boundary).await
    }
}
