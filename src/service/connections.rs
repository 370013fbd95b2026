//! Accepting and serving HTTP/1 connections, with limits for slow and idle clients: a
//! request head must arrive within `header_read_timeout`, a connection waiting for a
//! request is closed after `keep_alive_timeout`, and at most `max_connections` are
//! served at once (more wait in the listen backlog until one closes; logged).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use super::idle::{IdleTimeout, Requests};

/// Limits on connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// A request head (request line and headers) must arrive within this, counted from
    /// when the connection starts waiting for it (default 10 s).
    pub header_read_timeout: Duration,
    /// A connection that has sent nothing since it opened or since its last response is
    /// closed after this (default 5 s). Capped by `header_read_timeout`, which runs
    /// meanwhile too.
    pub keep_alive_timeout: Duration,
    /// Most connections served at once (default 1024).
    pub max_connections: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            header_read_timeout: Duration::from_secs(10),
            keep_alive_timeout: Duration::from_secs(5),
            max_connections: 1024,
        }
    }
}

/// Serves `app` on `listener` until `shutdown` completes, then lets the connections
/// finish their requests in flight (each closing once idle) and returns.
pub async fn serve_connections(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        // Kept by `IdleTimeout`, on its one timer a connection.
        .header_read_timeout(None::<Duration>)
        .keep_alive(true);
    tokio::pin!(shutdown);
    loop {
        let permit = match permits.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                tracing::warn!(
                    max_connections = limits.max_connections,
                    "connection cap reached: new connections wait until one closes"
                );
                crate::metrics::connection_cap_reached();
                tokio::select! {
                    permit = permits.clone().acquire_owned() => {
                        permit.expect("the semaphore is never closed")
                    }
                    () = &mut shutdown => break,
                }
            }
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    // Out of file descriptors, or a connection reset before it was
                    // accepted: wait a little rather than spin.
                    tracing::warn!(%error, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let requests = Requests::default();
        let io = IdleTimeout::new(
            stream,
            limits.keep_alive_timeout,
            limits.header_read_timeout,
            requests.clone(),
        );
        let service = requests.track(TowerToHyperService::new(app.clone()));
        let connection = builder.serve_connection(TokioIo::new(io), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "connection ended with an error");
            }
            drop(permit);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}
