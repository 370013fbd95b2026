//! The one way rollboard talks to Redis: a reconnecting connection, the loaded scripts,
//! and the one retry helper, which every call goes through with its [`Retry`] class.
//!
//! The operation modules (boards, write, read, retire, recompute, ingest) and the jobs
//! that read keys outside any board depend on this module; it depends on none of them.
//!
//! On a single node the connection is a [`ConnectionManager`]: multiplexed, reconnecting
//! by itself, with explicit timeouts. It never replays a command that failed on a broken
//! connection or timed out; whether rollboard sends it again is the call's [`Retry`]
//! class, stated at every call site.
//!
//! On Redis Cluster it is the redis crate's async cluster client, twice over (see
//! [`Link::Cluster`]): one that follows `MOVED`/`ASK` and waits out `TRYAGAIN` and
//! `CLUSTERDOWN` by itself, which also re-sends after a lost reply, so only
//! [`Retry::Idempotent`] and [`Retry::IdempotentWrite`] calls use it; and one that
//! retries nothing, for [`Retry::Never`] calls, whose redirects and
//! `TRYAGAIN`/`CLUSTERDOWN` replies are followed by [`follow_redirects`] (bounded; in
//! `handle.rs`, with the [`Handle`] a call is sent on): those replies say the command
//! did not run, so sending it again cannot count twice, while a lost reply is never
//! re-sent. Scripts run by SHA on the node that owns their keys' slot; a node that
//! answers `NOSCRIPT` gets the script loaded (`redis::Script` does that on either
//! client).
//!
//! Each of these is made twice: the hot reads go on a link of their own, and while they
//! go on, writes yield to them (`reads_first.rs`).
//!
//! With [`ReplicaAcks`] (`min_replica_acks`), the calls a caller acknowledges
//! ([`Retry::acknowledged`]) each carry a `WAIT` (`replica_acks.rs`) and go on links of
//! their own, in turn ([`Waiting`]), so that no read queues behind a wait.

pub(crate) mod client;
pub(crate) mod committer;
pub(crate) mod errors;
pub(crate) mod handle;
pub(crate) mod keys;
pub(crate) mod options;
pub(crate) mod prelude;
pub(crate) mod reads_first;
pub(crate) mod refusal;
pub(crate) mod replica_acks;
pub(crate) mod reply;
pub(crate) mod script_pipeline;
pub(crate) mod scripts;
pub(crate) mod tie_reach;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, FromRedisValue, Pipeline, RedisError, ScriptInvocation};

use crate::domain::{BoardName, Layout};
use crate::error::Result;
use errors::{reply_lost, store_error};
use handle::{CLUSTER_RETRIES, Handle, follow_redirects};
use keys::Keys;
pub(crate) use keys::glob_escape;
use options::{RedisOptions, ReplicaAcks};
use reads_first::ReadsSeen;
use refusal::Refusal;
use replica_acks::Acked;
use scripts::Scripts;
use tie_reach::TieReach;

/// Whether a call may be sent again when its reply was lost (the connection broke, or
/// the reply did not come within the response timeout). Either way Redis may have run
/// it: a lost reply says nothing about whether the command was applied. The class also
/// says whether the call is a write its caller acknowledges, which with
/// [`ReplicaAcks`] waits for replicas ([`Retry::acknowledged`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    /// Running it twice has the same effect as running it once (reads; scripts that
    /// set values computed from state, delete what they handled, or check a token
    /// recorded by the same script). Sent once more after a lost reply (on Redis
    /// Cluster, the cluster client may also re-send it itself, within the response
    /// timeout).
    Idempotent,
    /// As [`Retry::Idempotent`], and a write whose success the caller reports (a max
    /// board's events, member data, a board's creation): acknowledged by replicas
    /// like [`Retry::Never`] calls.
    IdempotentWrite,
    /// Running it twice could count something twice (a write without a token, a step
    /// that moves state to a version the caller chose). Never sent again: a lost reply
    /// is reported as [`Error::StoreUnavailable`](crate::Error::StoreUnavailable), and the caller re-reads state if it
    /// must know the outcome. On Redis Cluster it is sent again only after a reply
    /// that says it did not run (`MOVED`, `ASK`, `TRYAGAIN`, `CLUSTERDOWN`, …).
    Never,
}

impl Retry {
    /// Whether a lost reply is sent again.
    fn resends(self) -> bool {
        self != Retry::Never
    }

    /// Whether the call writes what its caller acknowledges, so that with
    /// [`ReplicaAcks`] it waits for replicas: every call that is not a plain
    /// [`Retry::Idempotent`] one (those read, or redo work nobody was told of, such as
    /// retirement; after a failover it is done again).
    fn acknowledged(self) -> bool {
        self != Retry::Idempotent
    }
}

/// A handle on Redis: cheap to clone, shared by every operation of a store.
#[derive(Clone)]
pub(crate) struct RedisConn {
    link: Link,
    /// The link the hot reads go on ([`RedisConn::read_script`],
    /// [`RedisConn::read_transaction`]; see `reads_first.rs`).
    reads: Link,
    /// When a hot read last went out.
    reads_seen: ReadsSeen,
    /// How far past a top page its transaction reads (`tie_reach.rs`).
    tie_reach: TieReach,
    scripts: Arc<Scripts>,
    /// The names of keys, under the deployment's prefix ([`RedisOptions::key_prefix`]).
    keys: Keys,
    /// The server's `hash-max-listpack-entries` (read once, at connect), which sizes
    /// compact slots' buckets (see `board/layout.rs`).
    listpack_entries: u64,
    /// The layout of boards created without one ([`RedisOptions::default_layout`]).
    default_layout: Layout,
    /// How many replicas a write waits for ([`RedisOptions::replica_acks`]).
    replica_acks: ReplicaAcks,
    /// The links writes that wait for replicas take turns on (`None`: they wait for
    /// none).
    waiting: Option<Arc<Waiting>>,
}

/// How many links of their own the writes that wait for replicas take turns on.
const WAITING_LINKS: usize = 4;

/// The links of the writes that wait for replicas. `WAIT` holds its connection until the
/// replicas answer (a write and its `WAIT` go on one connection, see `replica_acks.rs`),
/// so on the store's one connection every call would queue behind each wait; these
/// writes take turns over links of their own instead, and reads never wait.
struct Waiting {
    links: Vec<Link>,
    next: AtomicUsize,
}

impl Waiting {
    /// [`WAITING_LINKS`] links made by `link` when `options` asks for replicas, else none.
    async fn links<F, Fut>(options: &RedisOptions, link: F) -> Result<Option<Arc<Waiting>>>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<Link>>,
    {
        if options.replica_acks.min == 0 {
            return Ok(None);
        }
        let mut links = Vec::with_capacity(WAITING_LINKS);
        for _ in 0..WAITING_LINKS {
            links.push(link().await?);
        }
        Ok(Some(Arc::new(Waiting {
            links,
            next: AtomicUsize::new(0),
        })))
    }

    /// The next link in turn.
    fn next(&self) -> &Link {
        &self.links[self.next.fetch_add(1, Ordering::Relaxed) % self.links.len()]
    }
}

/// Which of the store's links a call goes on (writes that wait for replicas take theirs,
/// [`Waiting`], whatever their lane).
#[derive(Debug, Clone, Copy)]
enum Lane {
    /// The store's link: writes, and every call not on the reads link.
    Main,
    /// The hot reads' link, [`RedisConn::reads`] (see `reads_first.rs`).
    Reads,
}

/// The listpack limit Redis ships with, used when `CONFIG GET` is not allowed.
const DEFAULT_LISTPACK_ENTRIES: u64 = 128;

/// What a [`RedisConn`] talks to.
#[derive(Clone)]
enum Link {
    /// One Redis (with or without replicas behind it).
    Single(ConnectionManager),
    /// A Redis Cluster: `retrying` follows redirects and `TRYAGAIN` itself, and re-sends
    /// after a lost reply (for [`Retry::Idempotent`] calls); `once` retries nothing (for
    /// [`Retry::Never`] calls, see [`follow_redirects`]).
    Cluster {
        retrying: ClusterConnection,
        once: ClusterConnection,
        response_timeout: Duration,
    },
}

impl RedisConn {
    /// A reconnecting connection to `url` with the timeouts and TLS trust of `options`.
    /// The first connection is made here, so a certificate that does not verify or a
    /// refused password is an error of this call.
    pub(crate) async fn connect(url: &str, options: &RedisOptions) -> Result<RedisConn> {
        let link = || async {
            let client = client::client(url, options)?;
            client::tls_first_attempt(&client, url, options).await?;
            let config = ConnectionManagerConfig::new()
                .set_response_timeout(Some(options.response_timeout))
                .set_connection_timeout(Some(options.connection_timeout))
                .set_number_of_retries(3)
                .set_max_delay(Duration::from_secs(1));
            let conn = ConnectionManager::new_with_config(client, config)
                .await
                .map_err(|e| client::connect_error(e, url, options))?;
            Ok(Link::Single(conn))
        };
        let (main, reads) = (link().await?, link().await?);
        let waiting = Waiting::links(options, link).await?;
        RedisConn::checked([main, reads], waiting, url, options).await
    }

    /// A connection to the Redis Cluster reached through the seed nodes `urls`, with the
    /// timeouts and TLS trust of `options`. The slot map is read here, so a seed that
    /// is not a cluster node, or a cluster that is down, is an error of this call.
    pub(crate) async fn connect_cluster(
        urls: &[String],
        options: &RedisOptions,
    ) -> Result<RedisConn> {
        let seeds = urls.join(",");
        let seeds = seeds.as_str();
        let connect = |retries| async move {
            client::cluster_client(urls, options, retries)?
                .get_async_connection()
                .await
                .map_err(|e| client::connect_error(e, seeds, options))
        };
        let link = || async {
            Ok(Link::Cluster {
                retrying: connect(CLUSTER_RETRIES).await?,
                once: connect(0).await?,
                response_timeout: options.response_timeout,
            })
        };
        let (main, reads) = (link().await?, link().await?);
        let waiting = Waiting::links(options, link).await?;
        RedisConn::checked([main, reads], waiting, seeds, options).await
    }

    /// The connection after one PING (a read: Idempotent; on a cluster it goes to every
    /// master), so a Redis that wants credentials the URL lacks is an error of
    /// start-up, not of the first request.
    async fn checked(
        [link, reads]: [Link; 2],
        waiting: Option<Arc<Waiting>>,
        url: &str,
        options: &RedisOptions,
    ) -> Result<RedisConn> {
        let mut conn = RedisConn {
            link,
            reads,
            reads_seen: ReadsSeen::default(),
            tie_reach: TieReach::default(),
            waiting,
            scripts: Arc::new(Scripts::new()),
            keys: Keys::new(options.key_prefix.as_str()),
            listpack_entries: DEFAULT_LISTPACK_ENTRIES,
            default_layout: options.default_layout,
            replica_acks: options.replica_acks,
        };
        conn.call(
            Lane::Main,
            Retry::Idempotent,
            true,
            |mut handle| async move { redis::cmd("PING").query_async::<String>(&mut handle).await },
        )
        .await
        .map_err(|e| client::connect_error(e, url, options))?;
        conn.listpack_entries = conn.read_listpack_entries().await;
        Ok(conn)
    }

    /// Reads the server's `hash-max-listpack-entries` (a read: Idempotent); a server
    /// that refuses `CONFIG` (managed Redis, an ACL user) is taken to have 128.
    async fn read_listpack_entries(&self) -> u64 {
        let mut get = redis::cmd("CONFIG");
        get.arg("GET").arg("hash-max-listpack-entries");
        self.query::<Vec<String>>(&get, None, Retry::Idempotent)
            .await
            .ok()
            .and_then(|pair| pair.get(1).and_then(|v| v.parse().ok()))
            .unwrap_or(DEFAULT_LISTPACK_ENTRIES)
    }

    /// A connection to the single Redis at `url` for `job`, a job that scans its keys:
    /// refused with a clear error when `url` is a node of a Redis Cluster (`INFO
    /// cluster`, a read: Idempotent), where a scan would see one node's keys only.
    #[cfg(feature = "server")]
    pub(crate) async fn connect_to_scan(
        url: &str,
        options: &RedisOptions,
        job: &str,
    ) -> Result<RedisConn> {
        let conn = RedisConn::connect(url, options).await?;
        let mut info = redis::cmd("INFO");
        info.arg("cluster");
        let text: String = conn.query(&info, None, Retry::Idempotent).await?;
        if text.lines().any(|l| l.trim() == "cluster_enabled:1") {
            return Err(crate::error::Error::store(format!(
                "{job} scans Redis's keys and runs on a single Redis only: {} is a node of a \
                 Redis Cluster (see docs/operations.md, \"Running on Redis Cluster\")",
                client::redact(url)
            )));
        }
        Ok(conn)
    }

    /// Whether this is a Redis Cluster (the jobs that scan keys refuse to run on one).
    pub(crate) fn is_cluster(&self) -> bool {
        matches!(self.link, Link::Cluster { .. })
    }

    /// The names of keys.
    pub(crate) fn keys(&self) -> &Keys {
        &self.keys
    }

    /// The server's `hash-max-listpack-entries`, as read at connect.
    pub(crate) fn listpack_entries(&self) -> u64 {
        self.listpack_entries
    }

    /// The layout of boards created without one.
    pub(crate) fn default_layout(&self) -> Layout {
        self.default_layout
    }

    /// When a hot read last went out (write calls yield to reads, see `reads_first.rs`).
    pub(crate) fn reads_seen(&self) -> &ReadsSeen {
        &self.reads_seen
    }

    /// How far past a top page its transaction reads.
    pub(crate) fn tie_reach(&self) -> &TieReach {
        &self.tie_reach
    }

    /// The scripts, to build invocations from.
    pub(crate) fn scripts(&self) -> &Scripts {
        &self.scripts
    }

    /// Runs a script of `board`; a guard's refusal is the board's error (see [`Refusal`]).
    pub(crate) async fn script<T: FromRedisValue>(
        &self,
        invocation: &ScriptInvocation<'_>,
        board: &BoardName,
        retry: Retry,
    ) -> Result<T> {
        self.script_on(Lane::Main, invocation, board, retry)
            .await?
            .map_err(|refusal| refusal.into_error(Some(board)))
    }

    /// Reads `board`'s keys with a script (Idempotent) on the reads link.
    pub(crate) async fn read_script<T: FromRedisValue>(
        &self,
        invocation: &ScriptInvocation<'_>,
        board: &BoardName,
    ) -> Result<T> {
        self.script_on(Lane::Reads, invocation, board, Retry::Idempotent)
            .await?
            .map_err(|refusal| refusal.into_error(Some(board)))
    }

    /// Runs a script of `board`, answering a guard's refusal as a value, for callers
    /// that act on one (retire first, run again).
    pub(crate) async fn script_or_refusal<T: FromRedisValue>(
        &self,
        invocation: &ScriptInvocation<'_>,
        board: &BoardName,
        retry: Retry,
    ) -> Result<std::result::Result<T, Refusal>> {
        self.script_on(Lane::Main, invocation, board, retry).await
    }

    /// [`RedisConn::script_or_refusal`] on `lane`.
    async fn script_on<T: FromRedisValue>(
        &self,
        lane: Lane,
        invocation: &ScriptInvocation<'_>,
        board: &BoardName,
        retry: Retry,
    ) -> Result<std::result::Result<T, Refusal>> {
        let acks = self.acks(retry);
        let outcome = self
            .call(lane, retry, true, |mut handle| async move {
                replica_acks::script(&mut handle, invocation, acks).await
            })
            .await;
        match outcome {
            Ok(acked) => acked.confirmed(acks).map(Ok),
            Err(err) => match Refusal::parse(&err) {
                Some(refusal) => Ok(Err(refusal)),
                None => Err(store_error(err, Some(board))),
            },
        }
    }

    /// Runs a script outside any board (counters, stats, rate windows, the jobs' own
    /// scripts).
    pub(crate) async fn invoke<T: FromRedisValue>(
        &self,
        invocation: &ScriptInvocation<'_>,
        retry: Retry,
    ) -> Result<T> {
        let acks = self.acks(retry);
        self.run(None, retry, true, |mut handle| async move {
            replica_acks::script(&mut handle, invocation, acks).await
        })
        .await
    }

    /// Runs one command (of `board`, if it is a board's).
    pub(crate) async fn query<T: FromRedisValue>(
        &self,
        cmd: &Cmd,
        board: Option<&BoardName>,
        retry: Retry,
    ) -> Result<T> {
        let acks = self.acks(retry);
        self.run(board, retry, true, |mut handle| async move {
            replica_acks::command(&mut handle, cmd, acks).await
        })
        .await
    }

    /// Runs a pipeline (of `board`, if it is a board's; never a transaction). On a
    /// cluster every command of it must name keys of one hash slot (one board, or one
    /// counter's tag). A [`Retry::Never`] pipeline is not sent again after a redirect:
    /// mid-migration part of it may have run on the old node.
    pub(crate) async fn query_pipe<T: FromRedisValue>(
        &self,
        pipe: &Pipeline,
        board: Option<&BoardName>,
        retry: Retry,
    ) -> Result<T> {
        let acks = self.acks(retry);
        self.run(board, retry, false, |mut handle| async move {
            replica_acks::pipeline(&mut handle, pipe, acks).await
        })
        .await
    }

    /// The members of the set `key`: `board`'s, or a global one (`None`).
    pub(crate) async fn set_members(
        &self,
        key: &str,
        board: Option<&BoardName>,
    ) -> Result<Vec<String>> {
        let mut cmd = redis::cmd("SMEMBERS");
        cmd.arg(key);
        self.query(&cmd, board, Retry::Idempotent).await
    }

    /// Adds `items` to the set `key` (`add`) or removes them (`board`'s set, or a global
    /// one: `None`): how many that changed. Idempotent: twice leaves what once did.
    pub(crate) async fn set_change(
        &self,
        key: &str,
        board: Option<&BoardName>,
        items: &[&str],
        add: bool,
    ) -> Result<u64> {
        if items.is_empty() {
            return Ok(0);
        }
        let mut cmd = redis::cmd(if add { "SADD" } else { "SREM" });
        cmd.arg(key).arg(items);
        self.query(&cmd, board, Retry::IdempotentWrite).await
    }

    /// Calls `each` with every field of `board`'s hash `key` matching the `MATCH`
    /// `pattern` and its value, `HSCAN` by `HSCAN` (a field may come twice, as the
    /// command says).
    pub(crate) async fn scan_fields(
        &self,
        board: &BoardName,
        key: &str,
        pattern: &str,
        mut each: impl FnMut(String, String),
    ) -> Result<()> {
        let mut cursor = 0u64;
        loop {
            let mut cmd = redis::cmd("HSCAN");
            cmd.arg(key).arg(cursor).arg("MATCH").arg(pattern);
            let (next, flat): (u64, Vec<String>) = self
                .query(cmd.arg("COUNT").arg(1000), Some(board), Retry::Idempotent)
                .await?;
            let mut flat = flat.into_iter();
            while let (Some(field), Some(value)) = (flat.next(), flat.next()) {
                each(field, value);
            }
            if next == 0 {
                return Ok(());
            }
            cursor = next;
        }
    }

    /// Reads `board`'s keys with `pipe`, a transaction (`MULTI`/`EXEC`), sent again after
    /// a lost reply. `None` when the server ran none of it: `EXECABORT` (on a cluster, a
    /// slot moving or a master failing over answers a queued command with a redirect or
    /// `TRYAGAIN`, which the cluster client does not follow inside a transaction), or a
    /// redirect of the whole; the caller reads another way (a script, which follows them).
    pub(crate) async fn read_transaction<T: FromRedisValue>(
        &self,
        pipe: &Pipeline,
        board: &BoardName,
    ) -> Result<Option<T>> {
        let read = self
            .call(
                Lane::Reads,
                Retry::Idempotent,
                false,
                |mut handle| async move { replica_acks::pipeline(&mut handle, pipe, None).await },
            )
            .await;
        match read {
            Ok(acked) => acked.confirmed(None).map(Some),
            Err(err)
                if err
                    .code()
                    .is_some_and(|c| c == "EXECABORT" || errors::not_run(c)) =>
            {
                Ok(None)
            }
            Err(err) => Err(store_error(err, Some(board))),
        }
    }

    /// The replicas a call of class `retry` waits for, if any.
    fn acks(&self, retry: Retry) -> Option<ReplicaAcks> {
        (self.replica_acks.min > 0 && retry.acknowledged()).then_some(self.replica_acks)
    }

    /// Runs `call` through the retry helper, a Redis error as a rollboard error, and the
    /// reply once the replicas asked for have its writes.
    async fn run<T, F, Fut>(
        &self,
        board: Option<&BoardName>,
        retry: Retry,
        atomic: bool,
        call: F,
    ) -> Result<T>
    where
        F: Fn(Handle) -> Fut,
        Fut: Future<Output = std::result::Result<Acked<T>, RedisError>>,
    {
        self.call(Lane::Main, retry, atomic, call)
            .await
            .map_err(|e| store_error(e, board))?
            .confirmed(self.acks(retry))
    }

    /// The one retry helper: runs `call` on a handle of the connection that suits
    /// `lane` and `retry`, and once more when the reply was lost and the call may be
    /// ([`Retry::resends`]). On a cluster, a [`Retry::Never`] call that is `atomic`
    /// (one command or script) follows redirects through [`follow_redirects`].
    async fn call<T, F, Fut>(
        &self,
        lane: Lane,
        retry: Retry,
        atomic: bool,
        call: F,
    ) -> std::result::Result<T, RedisError>
    where
        F: Fn(Handle) -> Fut,
        Fut: Future<Output = std::result::Result<T, RedisError>>,
    {
        let link = match (&self.waiting, self.acks(retry), lane) {
            (Some(waiting), Some(_), _) => waiting.next(),
            (_, _, Lane::Reads) => {
                self.reads_seen.mark();
                &self.reads
            }
            _ => &self.link,
        };
        let handle = match (link, retry) {
            (Link::Single(conn), _) => Handle::Single(conn.clone()),
            (Link::Cluster { retrying, .. }, Retry::Idempotent | Retry::IdempotentWrite) => {
                Handle::Cluster(retrying.clone())
            }
            (
                Link::Cluster {
                    once,
                    response_timeout,
                    ..
                },
                Retry::Never,
            ) => {
                return if atomic {
                    follow_redirects(once, *response_timeout, call).await
                } else {
                    call(Handle::Cluster(once.clone())).await
                };
            }
        };
        match call(handle.clone()).await {
            Err(e) if retry.resends() && reply_lost(&e) => call(handle).await,
            other => other,
        }
    }
}
