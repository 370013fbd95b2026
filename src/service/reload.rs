//! Reload on `SIGHUP` (`systemctl reload`): the configuration is read again, file and
//! environment as at start, and what can change while the service runs changes at once:
//! the tokens, the access log, the CORS origins and `max_staleness_ms` (the router's
//! [`Live`] options, from the next request on), the log level and format, and the
//! `[[boards]]` of the file (a new one is created, as at start), and the default board
//! a write's unknown board is created with. Anything else that differs is named in a
//! warning: it needs a restart. A configuration that does not load changes nothing.

use tokio::task::JoinHandle;

use super::{ConfigError, LogHandle, ServiceConfig, systemd};
use crate::Rollboard;
use crate::http::{Live, Reload};

/// Reads the configuration again.
pub type LoadConfig = Box<dyn Fn() -> Result<ServiceConfig, ConfigError> + Send + Sync>;

/// What a reload needs: how to read the configuration, and the logs to change.
pub struct Reloader {
    /// Reads the configuration as at start.
    pub load: LoadConfig,
    /// The installed logs (`None`: a reload leaves them).
    pub logs: Option<LogHandle>,
}

/// The options of `config` the router reads on every request.
pub(super) fn live(config: &ServiceConfig) -> Live {
    Live {
        tokens: config.tokens.clone(),
        access_log: config.access_log,
        cors_origins: config.cors_origins.clone(),
        max_staleness: crate::Staleness::from_millis(config.settings.max_staleness_ms)
            .unwrap_or_default(),
    }
}

/// Reloads on every `SIGHUP` until aborted. The handler is installed before this
/// returns, so a `SIGHUP` from now on never ends the process.
pub(super) fn spawn(
    reloader: Reloader,
    boards: Rollboard,
    router: Reload,
    config: ServiceConfig,
) -> Option<JoinHandle<()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut hangups = signal(SignalKind::hangup()).ok()?;
        Some(tokio::spawn(async move {
            let mut running = config;
            while hangups.recv().await.is_some() {
                systemd::reloading();
                running = reload(&reloader, &boards, &router, running).await;
                systemd::notify(&[sd_notify::NotifyState::Ready]);
            }
        }))
    }
    #[cfg(not(unix))]
    None
}

/// Applies what can change of the configuration read again; returns the configuration
/// now in force.
async fn reload(
    reloader: &Reloader,
    boards: &Rollboard,
    router: &Reload,
    running: ServiceConfig,
) -> ServiceConfig {
    let read = match (reloader.load)() {
        Ok(read) => read,
        Err(e) => {
            tracing::warn!("reload refused, nothing changed: {e}");
            return running;
        }
    };
    if let Some(logs) = &reloader.logs
        && let Err(e) = logs.set(read.log_format, read.log_level.as_deref())
    {
        tracing::warn!("reload: the logs stay as they were: {e}");
    }
    router.apply(live(&read));
    if let Err(e) = super::declared::declare(boards, &read).await {
        tracing::warn!("reload: {e}");
    }
    let restart = needs_restart(&running, &read);
    if !restart.is_empty() {
        tracing::warn!(
            "reload: changed, but only a restart applies it: {}",
            restart.join(", ")
        );
    }
    tracing::info!(
        read_token = read.tokens.read.is_some(),
        write_token = read.tokens.write.is_some(),
        admin_token = read.tokens.admin.is_some(),
        access_log = read.access_log,
        cors_origins = read.cors_origins.len(),
        max_staleness_ms = read.settings.max_staleness_ms,
        default_board = read.default_board.is_some(),
        "reloaded: tokens, log level and format, access log, CORS origins, max_staleness_ms, \
         boards, default board"
    );
    ServiceConfig {
        tokens: read.tokens,
        log_format: read.log_format,
        log_level: read.log_level,
        access_log: read.access_log,
        cors_origins: read.cors_origins,
        boards: read.boards,
        default_board: read.default_board,
        settings: crate::Settings {
            max_staleness_ms: read.settings.max_staleness_ms,
            ..running.settings.clone()
        },
        ..running
    }
}

/// The names of the settings that differ between `running` and `read` and that only a
/// restart applies.
fn needs_restart(running: &ServiceConfig, read: &ServiceConfig) -> Vec<&'static str> {
    let same_settings = crate::Settings {
        max_staleness_ms: running.settings.max_staleness_ms,
        ..read.settings.clone()
    } == running.settings;
    [
        ("bind", running.bind == read.bind),
        ("store", running.store == read.store),
        ("redis_url", running.redis_url == read.redis_url),
        ("redis_cluster", running.redis_cluster == read.redis_cluster),
        (
            "key_prefix",
            running.redis.key_prefix == read.redis.key_prefix,
        ),
        (
            "redis connection settings",
            crate::RedisOptions {
                key_prefix: running.redis.key_prefix.clone(),
                ..read.redis.clone()
            } == running.redis,
        ),
        (
            "limits and tuning (max_batch, idempotency_ttl, …)",
            same_settings,
        ),
        (
            "max_body_bytes",
            running.max_body_bytes == read.max_body_bytes,
        ),
        (
            "request_timeout",
            running.request_timeout == read.request_timeout,
        ),
        ("sweep_every", running.sweep_every == read.sweep_every),
        (
            "shutdown_grace",
            running.shutdown_grace == read.shutdown_grace,
        ),
        (
            "max_clock_skew",
            running.max_clock_skew == read.max_clock_skew,
        ),
        ("connection limits", running.connections == read.connections),
        (
            "snapshot_webhook",
            running.snapshot_webhook == read.snapshot_webhook,
        ),
        (
            "review_webhook",
            running.review_webhook == read.review_webhook,
        ),
        (
            "changes_webhook",
            running.changes_webhook == read.changes_webhook,
        ),
    ]
    .into_iter()
    .filter_map(|(name, same)| (!same).then_some(name))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_key_prefix_is_named_on_its_own() {
        let running = ServiceConfig::default();
        let mut read = ServiceConfig::default();
        read.redis.key_prefix = crate::KeyPrefix::parse("app1:").unwrap();
        assert_eq!(needs_restart(&running, &read), ["key_prefix"]);
        read.redis.response_timeout *= 2;
        assert_eq!(
            needs_restart(&running, &read),
            ["key_prefix", "redis connection settings"]
        );
    }
}
