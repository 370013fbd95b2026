//! Running the service: open the store, declare the configured boards, start metrics,
//! the scheduler, the clock check and the memory watch, serve HTTP until the shutdown signal, then stop
//! within bounds.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;

use super::ServiceError;
use super::reload::Reloader;
use super::webhook::{Webhook, WebhookOptions};
use super::{Scheduler, ServiceConfig, systemd};
use crate::http::{HttpOptions, reloadable_router};
use crate::metrics::install_prometheus;
use crate::{MemoryStore, RedisStore, Rollboard, Store};

/// The store the configuration asks for: the Redis Cluster of `redis_cluster`, or Redis
/// at `redis_url` (with the connection
/// settings of `config.redis`), else the embedded memory store (logged loudly: its data
/// lives only as long as the process).
pub async fn open_store(config: &ServiceConfig) -> Result<Arc<dyn Store>, ServiceError> {
    if !config.redis_cluster.is_empty() {
        let store =
            RedisStore::connect_cluster_with(&config.redis_cluster, config.redis.clone()).await?;
        let seeds: Vec<String> = config
            .redis_cluster
            .iter()
            .map(|u| crate::store::redact(u))
            .collect();
        let key_prefix = config.redis.key_prefix.as_str();
        tracing::info!(store = "redis-cluster", seeds = %seeds.join(","), key_prefix, "store: Redis Cluster");
        return Ok(Arc::new(store));
    }
    match config.redis_url.as_deref() {
        Some(url) => {
            let store = RedisStore::connect_with(url, config.redis.clone()).await?;
            let key_prefix = config.redis.key_prefix.as_str();
            tracing::info!(store = "redis", redis = %crate::store::redact(url), key_prefix, "store: Redis");
            Ok(Arc::new(store))
        }
        None if config.store == Some(super::StoreKind::Memory) => {
            tracing::info!(
                store = "memory",
                "store: embedded memory (chosen): boards live only as long as this process"
            );
            Ok(Arc::new(MemoryStore::new()))
        }
        None => {
            tracing::warn!(
                store = "memory",
                "store: embedded memory (neither REDIS_URL nor REDIS_CLUSTER_URLS is set): boards live only as long as this process"
            );
            Ok(Arc::new(MemoryStore::new()))
        }
    }
}

/// Serves `boards` on `listener` until `shutdown` completes, then finishes in-flight
/// requests and retirement passes within `config.shutdown_grace`.
pub async fn run(
    boards: Rollboard,
    config: &ServiceConfig,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServiceError> {
    run_reloading(boards, config, listener, shutdown, None).await
}

/// [`run`], reloading what can change on `SIGHUP` when given a [`Reloader`]; tells
/// systemd when it is ready, reloading and stopping.
pub async fn run_reloading(
    boards: Rollboard,
    config: &ServiceConfig,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
    reloader: Option<Reloader>,
) -> Result<(), ServiceError> {
    // The webhooks' clients first: a CA file that will not do stops the start before
    // anything runs.
    let webhook = |options: &Option<WebhookOptions>| {
        options
            .clone()
            .map(Webhook::new)
            .transpose()
            .map_err(ServiceError::Config)
    };
    let snapshot_webhook = webhook(&config.snapshot_webhook)?;
    let review_webhook = webhook(&config.review_webhook)?;
    let changes_webhook = webhook(&config.changes_webhook)?;
    // Any difference but more windows stops the start.
    super::declared::declare(&boards, config).await?;

    let metrics = install_prometheus();
    let upkeep = {
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_secs(5));
            loop {
                every.tick().await;
                metrics.run_upkeep();
            }
        })
    };

    let scheduler = Scheduler::new(boards.clone());
    scheduler.start(config.sweep_every).await?;
    let clock_check = config
        .max_clock_skew
        .map(|_| super::clock_check::spawn(boards.clone()));
    let memory_watch = super::memory_watch::spawn(boards.clone());
    let heap_trim = super::heap_trim::spawn();
    let snapshot_webhook = snapshot_webhook
        .map(|webhook| super::webhook::spawn::<super::feeds::Snapshots>(boards.clone(), webhook));
    let review_webhook = review_webhook
        .map(|webhook| super::webhook::spawn::<super::feeds::Held>(boards.clone(), webhook));
    let changes_webhook = changes_webhook
        .map(|webhook| super::webhook::spawn::<super::feeds::Changes>(boards.clone(), webhook));

    let stats = boards.clone();
    let reload_boards = boards.clone();
    let (app, live) = reloadable_router(
        boards,
        HttpOptions {
            tokens: config.tokens.clone(),
            max_body_bytes: config.max_body_bytes,
            request_timeout: config.request_timeout,
            metrics: Some(metrics),
            max_clock_skew: config.max_clock_skew,
            access_log: config.access_log,
            cors_origins: config.cors_origins.clone(),
            // The service's own routes are recorded: their slowest are at /v1/stats/slowest.
            access_times: true,
        },
    );
    let reloads =
        reloader.and_then(|r| super::reload::spawn(r, reload_boards, live, config.clone()));
    let ready = systemd::ready_when_ready(app.clone());
    let watchdog = systemd::watchdog();
    let address = listener.local_addr()?;
    tracing::info!(
        "listening on http://{address} (dashboard at /, API under /v1, spec at /openapi.json)"
    );

    // Graceful shutdown: stop accepting, let requests in flight finish, but never wait
    // longer than the grace period once the signal came.
    let (signalled_tx, signalled_rx) = tokio::sync::oneshot::channel::<()>();
    let server = super::serve_connections(listener, app, config.connections, async move {
        shutdown.await;
        systemd::notify(&[sd_notify::NotifyState::Stopping]);
        tracing::info!("shutting down");
        let _ = signalled_tx.send(());
    });
    let grace = config.shutdown_grace;
    let served = tokio::select! {
        result = server => result.map_err(ServiceError::Io),
        _ = async {
            let _ = signalled_rx.await;
            tokio::time::sleep(grace).await;
        } => {
            tracing::warn!("requests still running after {grace:?}; closing them");
            Ok(())
        }
    };
    scheduler.shutdown(grace).await;
    // The access times of the last second are still held here.
    stats.flush_pending_stats().await;
    upkeep.abort();
    if let Some(clock_check) = clock_check {
        clock_check.abort();
    }
    memory_watch.abort();
    heap_trim.abort();
    for task in [reloads, ready, watchdog].into_iter().flatten() {
        task.abort();
    }
    // A POST cut short leaves its event's cursor: another attempt delivers it.
    for webhook in [snapshot_webhook, review_webhook, changes_webhook]
        .into_iter()
        .flatten()
    {
        webhook.abort();
    }
    tracing::info!("stopped");
    served
}

/// A future that completes on SIGINT (Ctrl-C) or SIGTERM. The handlers are installed
/// when this is called, not when the future is first polled: a signal that comes while
/// the service is still starting ends it cleanly once it serves, instead of killing it.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let interrupt = signal(SignalKind::interrupt()).ok();
        let terminate = signal(SignalKind::terminate()).ok();
        async move {
            let wait = |s: Option<tokio::signal::unix::Signal>| async move {
                match s {
                    Some(mut s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = wait(interrupt) => {},
                _ = wait(terminate) => {},
            }
        }
    }
    #[cfg(not(unix))]
    async {
        let _ = tokio::signal::ctrl_c().await;
    }
}
