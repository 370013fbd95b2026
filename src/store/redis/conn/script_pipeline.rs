//! Script calls sent as one pipeline. Redis runs a pipeline's scripts by SHA only (the
//! client reloads a script after `NOSCRIPT` for a lone call, not inside a pipeline), and
//! a call it refuses with `NOSCRIPT` ran nothing: so the script is loaded (`SCRIPT LOAD`,
//! one command, which on a Cluster goes to every master; idempotent) and only the refused
//! calls are sent again, up to three rounds.

use redis::{Cmd, ErrorKind, FromRedisValue, RedisResult, ServerErrorKind};

use super::{RedisConn, Retry};
use crate::error::Result;

/// Runs `calls` (`EVALSHA`s of the script whose text is `source`) in one pipeline under
/// `retry`; per call its reply or its error (a call refused three times: `NOSCRIPT`).
pub(crate) async fn run_pipelined<T: FromRedisValue>(
    conn: &RedisConn,
    source: &str,
    calls: &[Cmd],
    retry: Retry,
) -> Result<Vec<RedisResult<T>>> {
    let mut replies: Vec<Option<RedisResult<T>>> = (0..calls.len()).map(|_| None).collect();
    let mut pending: Vec<usize> = (0..calls.len()).collect();
    for round in 0..3 {
        if pending.is_empty() {
            break;
        }
        if round > 0 {
            let mut load = redis::cmd("SCRIPT");
            load.arg("LOAD").arg(source);
            let _: String = conn.query(&load, None, Retry::Idempotent).await?;
        }
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for &i in &pending {
            pipe.add_command(calls[i].clone());
        }
        let results: Vec<RedisResult<T>> = conn.query_pipe(&pipe, None, retry).await?;
        let mut refused = Vec::new();
        for (&i, result) in pending.iter().zip(results) {
            match result {
                Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                    refused.push(i)
                }
                other => replies[i] = Some(other),
            }
        }
        pending = refused;
    }
    Ok(replies
        .into_iter()
        .map(|r| {
            r.unwrap_or_else(|| {
                Err(redis::RedisError::from((
                    ErrorKind::Server(ServerErrorKind::NoScript),
                    "the script was refused three times",
                )))
            })
        })
        .collect())
}
