//! What a Redis error means to rollboard: a script's refusal (see [`Refusal`]), a reply
//! that was lost (the command may or may not have run), a cluster reply that says the
//! command did not run, Redis full at its memory limit, or any other store error. Both
//! the connection module and the client that makes connections map errors here.

use redis::RedisError;

use super::refusal::Refusal;
use crate::domain::BoardName;
use crate::error::Error;

/// Cluster replies that say the command did not run and may run later.
pub(crate) fn not_run(code: &str) -> bool {
    matches!(
        code,
        "MOVED" | "ASK" | "TRYAGAIN" | "CLUSTERDOWN" | "MASTERDOWN" | "LOADING" | "READONLY"
    )
}

/// The connection broke or the reply did not come in time: the command may or may not
/// have run.
pub(crate) fn reply_lost(err: &RedisError) -> bool {
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

/// Connection trouble, and a cluster that is moving a slot or electing a master past
/// the bounded retries, is "unavailable"; Redis refusing a write at its memory limit is
/// "full"; anything else is a store error.
pub(crate) fn unavailable_or_store(err: RedisError) -> Error {
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
    } else if reply_lost(&err)
        || err.is_connection_refusal()
        || err.is_unrecoverable_error()
        || err.code().is_some_and(not_run)
    {
        Error::StoreUnavailable(err.to_string())
    } else {
        Error::store(err.to_string())
    }
}
