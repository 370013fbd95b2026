//! `rollboard serve`: the service, from its config file, environment and flags.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use rollboard::service::{self, Overrides, Reloader, ServiceConfig};
use rollboard::{Rollboard, SystemClock};

use crate::args::ServeArgs;

pub(super) async fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    // First: a SIGTERM during start-up then ends the service cleanly once it serves.
    let shutdown = service::shutdown_signal();
    let overrides = Overrides {
        bind: args.bind,
        store: args.store,
        redis_url: args.redis_url,
        redis_cluster: args.redis_cluster,
        redis_tls_ca: args.connection.redis_tls_ca,
        redis_connection_timeout: args.connection.redis_connection_timeout,
        redis_response_timeout: args.connection.redis_response_timeout,
        min_replica_acks: args.writes.min_replica_acks,
        replica_ack_timeout: args.writes.replica_ack_timeout,
        default_layout: args.writes.default_layout,
        key_prefix: args.connection.key_prefix.clone(),
        accept_eviction: args.accept_eviction,
        read_token: std::env::var("ROLLBOARD_READ_TOKEN").ok(),
        write_token: std::env::var("ROLLBOARD_WRITE_TOKEN").ok(),
        admin_token: std::env::var("ROLLBOARD_ADMIN_TOKEN").ok(),
        webhook_secret: std::env::var("ROLLBOARD_WEBHOOK_SECRET").ok(),
        insecure: args.insecure,
        max_clock_skew: args.max_clock_skew,
        idempotency_ttl: args.idempotency_ttl,
        metrics_board_series: args.metrics_board_series,
        max_staleness_ms: args.max_staleness_ms,
        header_read_timeout: args.header_read_timeout,
        keep_alive_timeout: args.keep_alive_timeout,
        max_connections: args.max_connections,
        snapshot_webhook: args.snapshot_webhook,
        review_webhook: args.review_webhook,
        changes_webhook: args.changes_webhook,
        webhook_ca: args.webhook_ca,
        log_format: args.log_format,
        access_log: args.access_log,
        cors_origins: args.cors_origins,
        default_board: args.default_board.map(|body| *body),
        ..Overrides::default()
    };
    let file = args.config.clone();
    let config = ServiceConfig::load(file.as_deref(), overrides.clone())?;
    let logs = service::init_logging(
        config.log_format,
        config.log_level.as_deref(),
        crate::SERVE_LOG_FILTER,
    );
    // A reload reads the file again; the environment and flags are those of the start.
    let reloader = Reloader {
        load: Box::new(move || ServiceConfig::load(file.as_deref(), overrides.clone())),
        logs,
    };
    log_start(&args.config, &config);
    let store = service::open_store(&config).await?;
    let boards = Rollboard::with(store, Arc::new(SystemClock), config.settings.clone());
    let listener = tokio::net::TcpListener::bind(config.bind)
        .await
        .with_context(|| format!("cannot listen on {}", config.bind))?;
    service::run_reloading(boards, &config, listener, shutdown, Some(reloader)).await?;
    Ok(ExitCode::SUCCESS)
}

/// The start-up line: version, config file, tokens on or off (never the tokens), boards
/// declared, and the optional features.
fn log_start(file: &Option<std::path::PathBuf>, config: &ServiceConfig) {
    let on_off = |on: bool| if on { "on" } else { "off" };
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        config = %file.as_deref().map_or("none".into(), |p| p.display().to_string()),
        read_token = on_off(config.tokens.read.is_some()),
        write_token = on_off(config.tokens.write.is_some()),
        admin_token = on_off(config.tokens.admin.is_some()),
        boards_declared = config.boards.len(),
        default_board = on_off(config.default_board.is_some()),
        access_log = on_off(config.access_log),
        cors = on_off(!config.cors_origins.is_empty()),
        "rollboard starting"
    );
}
