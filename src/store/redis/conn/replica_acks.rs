//! Writes acknowledged by replicas (`min_replica_acks`, [`ReplicaAcks`]).
//!
//! Redis replicates asynchronously: a master acknowledges a write before any replica
//! has it, and a master that dies then takes the write with it. With `min` above 0,
//! each write call is sent in one pipeline with `WAIT min timeout` after it. A
//! pipeline goes on one connection, to the node that owns the call's keys, so the
//! `WAIT` counts the replicas that have every write this connection made, this call's
//! included. Fewer than `min` within the timeout: the write is applied on the master
//! but not acknowledged, [`Error::WriteUncertain`]. A script the node has not loaded
//! (`NOSCRIPT`) ran nothing: it is loaded and the pipeline sent again. A call that finds
//! it was applied before (an idempotency key's record, a job's token) may go out on
//! another connection than its first time: it writes that record again, unchanged, so
//! that its `WAIT` covers the first call too (the prelude's `key_record`).

use redis::{
    Cmd, ErrorKind, FromRedisValue, Pipeline, RedisError, RedisResult, ScriptInvocation,
    ServerErrorKind, Value,
};

use super::handle::Handle;
use super::options::ReplicaAcks;
use crate::error::{Error, Result};

/// A call's reply, and how many replicas `WAIT` said have its writes (`None`: not
/// asked).
pub(crate) struct Acked<T> {
    value: T,
    replicas: Option<u64>,
}

impl<T> Acked<T> {
    /// A reply of a call that asked no replica.
    fn unasked(value: T) -> Self {
        Acked {
            value,
            replicas: None,
        }
    }

    /// The reply, once the replicas asked for have the call's writes.
    pub(crate) fn confirmed(self, acks: Option<ReplicaAcks>) -> Result<T> {
        match (acks, self.replicas) {
            (Some(acks), Some(replicas)) if replicas < u64::from(acks.min) => {
                Err(Error::WriteUncertain(format!(
                    "write uncertain: Redis applied it, but only {replicas} of the \
                     {min} replicas asked for (min_replica_acks) confirmed it within {ms} ms, \
                     so a failover could still lose it; send it again with the same \
                     Idempotency-Key to have it counted once (without a key it may count \
                     twice)",
                    min = acks.min,
                    ms = acks.timeout.as_millis()
                )))
            }
            _ => Ok(self.value),
        }
    }
}

/// Runs a script, then `WAIT` when `acks` is given.
pub(crate) async fn script<T: FromRedisValue>(
    handle: &mut Handle,
    invocation: &ScriptInvocation<'_>,
    acks: Option<ReplicaAcks>,
) -> RedisResult<Acked<T>> {
    let Some(acks) = acks else {
        return Ok(Acked::unasked(invocation.invoke_async(handle).await?));
    };
    let call = Cmd::invoke_script(invocation);
    match waited(handle, &call, acks).await? {
        (Err(e), _) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
            invocation.load_async(handle).await?;
            acked(waited(handle, &call, acks).await?)
        }
        waited => acked(waited),
    }
}

/// Runs one command, then `WAIT` when `acks` is given.
pub(crate) async fn command<T: FromRedisValue>(
    handle: &mut Handle,
    cmd: &Cmd,
    acks: Option<ReplicaAcks>,
) -> RedisResult<Acked<T>> {
    match acks {
        None => Ok(Acked::unasked(cmd.query_async(handle).await?)),
        Some(acks) => acked(waited(handle, cmd, acks).await?),
    }
}

/// Sends `call` and `WAIT` after it in one pipeline: the call's reply (its error as a
/// value) and how many replicas `WAIT` counted.
async fn waited<T: FromRedisValue>(
    handle: &mut Handle,
    call: &Cmd,
    acks: ReplicaAcks,
) -> RedisResult<(RedisResult<T>, u64)> {
    let mut pipe = redis::pipe();
    pipe.ignore_errors().add_command(call.clone());
    push_wait(&mut pipe, acks);
    let (reply, replicas): (RedisResult<T>, RedisResult<u64>) = pipe.query_async(handle).await?;
    Ok((reply, replicas?))
}

/// The reply of a call that waited, or its error.
fn acked<T>((reply, replicas): (RedisResult<T>, u64)) -> RedisResult<Acked<T>> {
    Ok(Acked {
        value: reply?,
        replicas: Some(replicas),
    })
}

/// Runs a pipeline (never a transaction), then `WAIT` in it when `acks` is given.
pub(crate) async fn pipeline<T: FromRedisValue>(
    handle: &mut Handle,
    pipe: &Pipeline,
    acks: Option<ReplicaAcks>,
) -> RedisResult<Acked<T>> {
    let Some(acks) = acks else {
        return Ok(Acked::unasked(pipe.query_async(handle).await?));
    };
    debug_assert!(!pipe.is_transaction(), "WAIT cannot follow a transaction");
    let mut waiting = pipe.clone();
    push_wait(&mut waiting, acks);
    let mut replies: Vec<Value> = waiting.query_async(handle).await?;
    let replicas = match replies.pop() {
        Some(Value::Int(n)) => u64::try_from(n).unwrap_or(0),
        Some(Value::ServerError(e)) => return Err(e.into()),
        other => {
            return Err(RedisError::from((
                ErrorKind::UnexpectedReturnType,
                "WAIT answered something else than a count",
                format!("{other:?}"),
            )));
        }
    };
    Ok(Acked {
        value: T::from_redis_value(Value::Array(replies))?,
        replicas: Some(replicas),
    })
}

/// `WAIT min timeout-ms` at the end of `pipe`.
fn push_wait(pipe: &mut Pipeline, acks: ReplicaAcks) {
    let ms = u64::try_from(acks.timeout.as_millis())
        .unwrap_or(u64::MAX)
        .max(1);
    pipe.cmd("WAIT").arg(acks.min).arg(ms);
}
