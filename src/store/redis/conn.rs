//! The one way rollboard talks to Redis: a reconnecting connection, the loaded scripts,
//! and the one retry helper, which every call goes through with its [`Retry`] class.
//!
//! The operation modules (boards, write, read, retire, recompute, ingest) and the jobs
//! that read keys outside any board depend on this module; it depends on none of them.
//!
//! The connection is a [`ConnectionManager`]: multiplexed, reconnecting by itself, with
//! explicit timeouts. It never replays a command that failed on a broken connection or
//! timed out; whether rollboard sends it again is the call's [`Retry`] class, stated at
//! every call site.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Cmd, FromRedisValue, Pipeline, RedisError, ScriptInvocation};

use super::RedisOptions;
use super::refusal::Refusal;
use super::scripts::Scripts;
use crate::domain::BoardName;
use crate::error::{Error, Result};

/// Whether a call may be sent again when its reply was lost (the connection broke, or
/// the reply did not come within the response timeout). Either way Redis may have run
/// it: a lost reply says nothing about whether the command was applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    /// Running it twice has the same effect as running it once (reads; scripts that
    /// set values computed from state, delete what they handled, or check a token
    /// recorded by the same script). Sent once more after a lost reply.
    Idempotent,
    /// Running it twice could count something twice (a write without a token, a step
    /// that moves state to a version the caller chose). Never sent again: a lost reply
    /// is reported as [`Error::StoreUnavailable`], and the caller re-reads state if it
    /// must know the outcome.
    Never,
}

/// A handle on Redis: cheap to clone, shared by every operation of a store.
#[derive(Clone)]
pub(crate) struct RedisConn {
    conn: ConnectionManager,
    scripts: Arc<Scripts>,
}

impl RedisConn {
    /// A reconnecting connection to `url` with the timeouts and TLS trust of `options`.
    /// The first connection is made here, so a certificate that does not verify or a
    /// refused password is an error of this call.
    pub(crate) async fn connect(url: &str, options: &RedisOptions) -> Result<RedisConn> {
        let client = super::client::client(url, options)?;
        let config = ConnectionManagerConfig::new()
            .set_response_timeout(Some(options.response_timeout))
            .set_connection_timeout(Some(options.connection_timeout))
            .set_number_of_retries(3)
            .set_max_delay(Duration::from_secs(1));
        let conn = ConnectionManager::new_with_config(client, config)
            .await
            .map_err(|e| super::client::connect_error(e, url, options))?;
        // One PING (a read: Idempotent), so a Redis that wants credentials the URL
        // lacks is an error of start-up, not of the first request.
        with_retry(Retry::Idempotent, || {
            let mut conn = conn.clone();
            async move { redis::cmd("PING").query_async::<String>(&mut conn).await }
        })
        .await
        .map_err(|e| super::client::connect_error(e, url, options))?;
        Ok(RedisConn {
            conn,
            scripts: Arc::new(Scripts::new()),
        })
    }

    /// The scripts, to build invocations from.
    pub(super) fn scripts(&self) -> &Scripts {
        &self.scripts
    }

    /// Runs a script of `board`; a guard's refusal is the board's error (see [`Refusal`]).
    pub(super) async fn script<T: FromRedisValue>(
        &self,
        invocation: &ScriptInvocation<'_>,
        board: &BoardName,
        retry: Retry,
    ) -> Result<T> {
        self.script_or_refusal(invocation, board, retry)
            .await?
            .map_err(|refusal| refusal.into_error(Some(board)))
    }

    /// Runs a script of `board`, answering a guard's refusal as a value, for callers
    /// that act on one (retire first, run again).
    pub(super) async fn script_or_refusal<T: FromRedisValue>(
        &self,
        invocation: &ScriptInvocation<'_>,
        board: &BoardName,
        retry: Retry,
    ) -> Result<std::result::Result<T, Refusal>> {
        let outcome = with_retry(retry, || {
            let mut conn = self.conn.clone();
            async move { invocation.invoke_async(&mut conn).await }
        })
        .await;
        match outcome {
            Ok(value) => Ok(Ok(value)),
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
        self.run(None, retry, |mut conn| async move {
            invocation.invoke_async(&mut conn).await
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
        self.run(board, retry, |mut conn| async move {
            cmd.query_async(&mut conn).await
        })
        .await
    }

    /// Runs a pipeline (of `board`, if it is a board's).
    pub(crate) async fn query_pipe<T: FromRedisValue>(
        &self,
        pipe: &Pipeline,
        board: Option<&BoardName>,
        retry: Retry,
    ) -> Result<T> {
        self.run(board, retry, |mut conn| async move {
            pipe.query_async(&mut conn).await
        })
        .await
    }

    /// Runs `call` on a handle of the connection, through the retry helper.
    async fn run<T, F, Fut>(&self, board: Option<&BoardName>, retry: Retry, call: F) -> Result<T>
    where
        F: Fn(ConnectionManager) -> Fut,
        Fut: Future<Output = std::result::Result<T, RedisError>>,
    {
        with_retry(retry, || call(self.conn.clone()))
            .await
            .map_err(|e| store_error(e, board))
    }
}

/// The one retry helper: runs `call`, and once more when the reply was lost and the call
/// is [`Retry::Idempotent`].
async fn with_retry<T, F, Fut>(retry: Retry, mut call: F) -> std::result::Result<T, RedisError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = std::result::Result<T, RedisError>>,
{
    match call().await {
        Err(e) if retry == Retry::Idempotent && reply_lost(&e) => call().await,
        other => other,
    }
}

/// The connection broke or the reply did not come in time: the command may or may not
/// have run.
fn reply_lost(err: &RedisError) -> bool {
    err.is_io_error() || err.is_connection_dropped() || err.is_timeout()
}

/// A Redis error that is not a script's refusal, as a rollboard error: connection
/// trouble is "unavailable", a write refused at the memory limit "full", anything else a
/// store error. A script's refusal met here
/// (outside [`RedisConn::script`]) is mapped the same way as there.
pub(crate) fn store_error(err: RedisError, board: Option<&BoardName>) -> Error {
    match Refusal::parse(&err) {
        Some(refusal) => refusal.into_error(board),
        None => unavailable_or_store(err),
    }
}

/// Connection trouble is "unavailable"; Redis refusing a write at its memory limit is
/// "full"; anything else is a store error.
pub(super) fn unavailable_or_store(err: RedisError) -> Error {
    if err.code() == Some("OOM") {
        Error::StoreFull(format!(
            "Redis is full: it refused the write at its memory limit (maxmemory, with the \
             noeviction policy), so nothing of it was applied; free memory or raise maxmemory \
             (see docs/operations.md, \"Which Redis\") [{}]",
            err.detail()
                .unwrap_or("")
                .split(". script:")
                .next()
                .unwrap_or("")
        ))
    } else if reply_lost(&err) || err.is_connection_refusal() || err.is_unrecoverable_error() {
        Error::StoreUnavailable(err.to_string())
    } else {
        Error::Store(err.to_string())
    }
}
