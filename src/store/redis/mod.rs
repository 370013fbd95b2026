//! The Redis store: the production backend.
//!
//! Every multi-key operation of a board is one Lua script (files under `lua/`, each with
//! its KEYS and ARGV documented), and every key a script touches is passed in KEYS, so it
//! runs unchanged on Redis Cluster and behind proxies. No `KEYS` or `SCAN` command runs
//! anywhere: slots are found through the board's slot index.
//!
//! The connection is a [`ConnectionManager`]: multiplexed, reconnecting by itself, with
//! explicit timeouts. A command that fails on a broken connection is not replayed by the
//! manager; rollboard retries reads and retirement chunks (idempotent) once, and reports
//! a failed write as [`Error::StoreUnavailable`] rather than risk counting it twice.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{FromRedisValue, ScriptInvocation};

mod boards;
mod ingest;
mod keys;
mod read;
mod recompute;
mod reply;
mod retire;
mod scripts;
mod write;

use ingest::Ingest;
pub use ingest::IngestOptions;
use reply::map_error;
use scripts::Scripts;

use crate::board::{Board, BoardStatus, Created};
use crate::domain::{BoardConfig, BoardName, Member, Timestamp};
use crate::error::{Error, Result};
use crate::read::{History, Standing, TopPage};
use crate::recompute::RecomputeReport;
use crate::retire::{RetireOptions, RetireReport};
use crate::store::{SlotWrite, Store, WriteStatus};
use crate::write::Removed;

/// Connection settings for [`RedisStore`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RedisOptions {
    /// How long to wait for any one reply before reporting the store unavailable.
    pub response_timeout: Duration,
    /// How long one connection attempt may take.
    pub connection_timeout: Duration,
    /// How concurrent writes are batched (group commit).
    pub ingest: IngestOptions,
}

impl Default for RedisOptions {
    fn default() -> Self {
        RedisOptions {
            // Scripts are bounded to a few milliseconds; two seconds only trips when Redis
            // is really stuck or gone, and then a fast error beats a hung request.
            response_timeout: Duration::from_secs(2),
            connection_timeout: Duration::from_secs(2),
            ingest: IngestOptions::default(),
        }
    }
}

/// Boards kept in Redis (single node; Cluster-ready key layout).
#[derive(Clone)]
pub struct RedisStore {
    conn: ConnectionManager,
    scripts: Arc<Scripts>,
    ingest: Arc<Ingest>,
    ingest_options: IngestOptions,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore").finish_non_exhaustive()
    }
}

/// A reconnecting connection to `url` with the timeouts of `options`; also for jobs
/// that read keys outside any board (the legacy layout, the migrations record).
pub(crate) async fn connection_manager(
    url: &str,
    options: &RedisOptions,
) -> Result<ConnectionManager> {
    let client = redis::Client::open(url)
        .map_err(|e| Error::StoreUnavailable(format!("invalid Redis URL: {e}")))?;
    let config = ConnectionManagerConfig::new()
        .set_response_timeout(Some(options.response_timeout))
        .set_connection_timeout(Some(options.connection_timeout))
        .set_number_of_retries(3)
        .set_max_delay(Duration::from_secs(1));
    ConnectionManager::new_with_config(client, config)
        .await
        .map_err(|e| map_error(e, None))
}

/// A Redis error as a rollboard error, for commands outside any board.
#[cfg(feature = "server")]
pub(crate) fn store_error(err: redis::RedisError) -> Error {
    map_error(err, None)
}

impl RedisStore {
    /// Connects to `url` (`redis://host:port/db`) with default options.
    pub async fn connect(url: &str) -> Result<Self> {
        Self::connect_with(url, RedisOptions::default()).await
    }

    /// Connects to `url` with `options`.
    pub async fn connect_with(url: &str, options: RedisOptions) -> Result<Self> {
        let conn = connection_manager(url, &options).await?;
        Ok(RedisStore {
            conn,
            scripts: Arc::new(Scripts::new()),
            ingest: Arc::default(),
            ingest_options: options.ingest,
        })
    }

    /// A handle on the connection, for commands of this store's modules.
    fn conn(&self) -> ConnectionManager {
        self.conn.clone()
    }

    /// Runs a script. `idempotent` calls are retried once when the connection broke.
    async fn invoke<T: FromRedisValue>(
        &self,
        invocation: &ScriptInvocation<'_>,
        board: &BoardName,
        idempotent: bool,
    ) -> Result<T> {
        let mut conn = self.conn();
        match invocation.invoke_async(&mut conn).await {
            Err(e) if idempotent && (e.is_io_error() || e.is_connection_dropped()) => invocation
                .invoke_async(&mut conn)
                .await
                .map_err(|e| map_error(e, Some(board))),
            other => other.map_err(|e| map_error(e, Some(board))),
        }
    }

    /// Runs an idempotent command, retrying once when the connection broke.
    async fn query<T: FromRedisValue>(
        &self,
        cmd: &redis::Cmd,
        board: Option<&BoardName>,
    ) -> Result<T> {
        let mut conn = self.conn();
        match cmd.query_async(&mut conn).await {
            Err(e) if e.is_io_error() || e.is_connection_dropped() => cmd
                .query_async(&mut conn)
                .await
                .map_err(|e| map_error(e, board)),
            other => other.map_err(|e| map_error(e, board)),
        }
    }

    /// Runs an idempotent pipeline, retrying once when the connection broke.
    async fn query_pipe<T: FromRedisValue>(
        &self,
        pipe: &redis::Pipeline,
        board: Option<&BoardName>,
    ) -> Result<T> {
        let mut conn = self.conn();
        match pipe.query_async(&mut conn).await {
            Err(e) if e.is_io_error() || e.is_connection_dropped() => pipe
                .query_async(&mut conn)
                .await
                .map_err(|e| map_error(e, board)),
            other => other.map_err(|e| map_error(e, board)),
        }
    }
}

#[async_trait]
impl Store for RedisStore {
    fn kind(&self) -> &'static str {
        "redis"
    }

    async fn ping(&self) -> Result<()> {
        self.query::<String>(&redis::cmd("PING"), None)
            .await
            .map(|_| ())
    }

    async fn server_time(&self) -> Result<Option<Timestamp>> {
        let (seconds, micros): (i64, i64) = self.query(&redis::cmd("TIME"), None).await?;
        Timestamp::from_unix_millis(seconds * 1000 + micros / 1000).map(Some)
    }

    async fn create_board(
        &self,
        name: &BoardName,
        config: &BoardConfig,
        now: Timestamp,
    ) -> Result<Created> {
        boards::create(self, name, config, now).await
    }

    async fn load_board(&self, name: &BoardName) -> Result<Option<Board>> {
        boards::load(self, name).await
    }

    async fn list_boards(&self) -> Result<Vec<Board>> {
        boards::list(self).await
    }

    async fn describe_board(&self, board: &Board, now: Timestamp) -> Result<BoardStatus> {
        read::describe(self, board, now).await
    }

    async fn drop_board(&self, name: &BoardName) -> Result<bool> {
        boards::drop(self, name).await
    }

    async fn write(
        &self,
        board: &Board,
        now: Timestamp,
        writes: Vec<SlotWrite>,
    ) -> Result<Vec<WriteStatus>> {
        self.ingest.write(self, board, now, writes).await
    }

    async fn write_once(
        &self,
        board: &Board,
        now: Timestamp,
        writes: Vec<SlotWrite>,
        token: &str,
    ) -> Result<Option<Vec<WriteStatus>>> {
        ingest::write_once(self, board, now, writes, token).await
    }

    async fn top(
        &self,
        board: &Board,
        window: usize,
        now: Timestamp,
        offset: u64,
        limit: u64,
    ) -> Result<TopPage> {
        read::top(self, board, window, now, offset, limit).await
    }

    async fn standing(
        &self,
        board: &Board,
        window: usize,
        now: Timestamp,
        member: &Member,
    ) -> Result<Option<Standing>> {
        read::standing(self, board, window, now, member).await
    }

    async fn around(
        &self,
        board: &Board,
        window: usize,
        now: Timestamp,
        member: &Member,
        n: u64,
    ) -> Result<Option<TopPage>> {
        read::around(self, board, window, now, member, n).await
    }

    async fn history(&self, board: &Board, now: Timestamp, member: &Member) -> Result<History> {
        read::history(self, board, now, member).await
    }

    async fn remove_member(&self, board: &Board, member: &Member) -> Result<Removed> {
        write::remove_member(self, board, member).await
    }

    async fn pending_windows(&self, board: &Board) -> Result<Vec<usize>> {
        read::pending_windows(self, board).await
    }

    async fn recompute(&self, board: &Board, window: usize) -> Result<RecomputeReport> {
        recompute::recompute(self, board, window).await
    }

    async fn retire(
        &self,
        board: &Board,
        now: Timestamp,
        options: RetireOptions,
    ) -> Result<RetireReport> {
        retire::retire(self, board, now, options).await
    }
}
