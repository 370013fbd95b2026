//! The handle one call is sent on, and how a Redis Cluster's redirects are followed for
//! the calls that must never be sent twice.
//!
//! A [`Handle`] is the single node's connection, the cluster client (routing by the
//! command's keys), or one node of the cluster named by a redirect. The connection
//! (`mod.rs`) picks the handle by the call's retry class; a `Retry::Never` call on a
//! cluster goes through [`follow_redirects`], which sends it again only after a reply
//! that says it did not run.

use std::future::Future;
use std::time::Duration;

use redis::aio::ConnectionManager;
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisError};

use super::errors::not_run;

/// How often the cluster client itself follows a redirect or waits out `TRYAGAIN` /
/// `CLUSTERDOWN` for a `Retry::Idempotent` call; the same bound holds for the
/// `Retry::Never` calls [`follow_redirects`] re-sends.
pub(crate) const CLUSTER_RETRIES: u32 = 10;

/// Runs a `Retry::Never` call on the cluster client that retries nothing, and sends
/// it again only on a reply that says it did not run: `MOVED` (to the node named),
/// `ASK` (to the node named, after `ASKING`), `TRYAGAIN`, `CLUSTERDOWN`, `MASTERDOWN`,
/// `LOADING` or `READONLY` (after a short wait, to whichever node then owns the slot).
/// At most [`CLUSTER_RETRIES`] times, and not past the response timeout; a lost reply
/// is returned as it is.
pub(crate) async fn follow_redirects<T, F, Fut>(
    once: &ClusterConnection,
    response_timeout: Duration,
    call: F,
) -> std::result::Result<T, RedisError>
where
    F: Fn(Handle) -> Fut,
    Fut: Future<Output = std::result::Result<T, RedisError>>,
{
    let deadline = tokio::time::Instant::now() + response_timeout;
    let mut handle = Handle::Cluster(once.clone());
    let mut wait = Duration::from_millis(5);
    for _ in 0..CLUSTER_RETRIES {
        let err = match call(handle).await {
            Err(err) => err,
            ok => return ok,
        };
        handle = match (err.code(), err.redirect_node().and_then(node_address)) {
            (Some("MOVED"), Some((host, port))) => Handle::Node {
                conn: once.clone(),
                host,
                port,
                asking: false,
            },
            (Some("ASK"), Some((host, port))) => Handle::Node {
                conn: once.clone(),
                host,
                port,
                asking: true,
            },
            (Some(code), _) if not_run(code) && tokio::time::Instant::now() + wait < deadline => {
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_millis(200));
                Handle::Cluster(once.clone())
            }
            _ => return Err(err),
        };
    }
    call(handle).await
}

/// `host:port` of a redirect, split.
fn node_address((node, _slot): (&str, u16)) -> Option<(String, u16)> {
    let (host, port) = node.rsplit_once(':')?;
    Some((host.to_owned(), port.parse().ok()?))
}

/// The connection one call is sent on.
#[derive(Clone)]
pub(crate) enum Handle {
    /// The single node's connection.
    Single(ConnectionManager),
    /// The cluster client, routing by the keys of the command.
    Cluster(ClusterConnection),
    /// One node of the cluster, named by a redirect; `asking` sends `ASKING` first (an
    /// `ASK` redirect: the slot is being migrated to that node).
    Node {
        conn: ClusterConnection,
        host: String,
        port: u16,
        asking: bool,
    },
}

impl Handle {
    fn route(host: &str, port: u16) -> redis::cluster_routing::SingleNodeRoutingInfo {
        redis::cluster_routing::SingleNodeRoutingInfo::ByAddress {
            host: host.to_owned(),
            port,
        }
    }
}

impl redis::aio::ConnectionLike for Handle {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> redis::RedisFuture<'a, redis::Value> {
        match self {
            Handle::Single(conn) => conn.req_packed_command(cmd),
            Handle::Cluster(conn) => conn.req_packed_command(cmd),
            Handle::Node {
                conn,
                host,
                port,
                asking,
            } => {
                let mut pipe = redis::pipe();
                if *asking {
                    pipe.cmd("ASKING");
                }
                pipe.add_command(cmd.clone());
                let skip = usize::from(*asking);
                let route = Handle::route(host, *port);
                Box::pin(async move {
                    let mut replies = conn.route_pipeline(pipe, skip, 1, route).await?;
                    replies.pop().ok_or_else(|| {
                        RedisError::from((redis::ErrorKind::Client, "no reply from the node"))
                    })
                })
            }
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> redis::RedisFuture<'a, Vec<redis::Value>> {
        match self {
            Handle::Single(conn) => conn.req_packed_commands(pipeline, offset, count),
            Handle::Cluster(conn) => conn.req_packed_commands(pipeline, offset, count),
            Handle::Node {
                conn,
                host,
                port,
                asking,
            } => {
                let route = Handle::route(host, *port);
                if !*asking {
                    return Box::pin(conn.route_pipeline(pipeline.clone(), offset, count, route));
                }
                // A pipeline after an `ASK` (a write and its `WAIT`): `ASKING` first.
                let mut asked = redis::pipe();
                asked.cmd("ASKING");
                for cmd in pipeline.cmd_iter() {
                    asked.add_command(cmd.clone());
                }
                Box::pin(conn.route_pipeline(asked, offset + 1, count, route))
            }
        }
    }

    fn get_db(&self) -> i64 {
        0
    }
}
