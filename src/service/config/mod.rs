//! Service configuration: defaults, then a TOML file, then environment variables and
//! command-line flags (each overriding what came before). The file and the overrides
//! share one shape (`layer.rs`); [`ServiceConfig::resolve`] lays them over the defaults,
//! checking the Redis target (`redis_target.rs`) and explaining a bad file (`error.rs`).
//!
//! ```toml
//! bind = "127.0.0.1:8080"
//! store = "redis"                           # or ROLLBOARD_STORE / --store: "memory" or
//!                                           # "redis" [default: redis when a URL is set]
//! redis_url = "redis://127.0.0.1:6379/"   # or REDIS_URL; rediss://user:pw@host:port/ for TLS
//! # redis_cluster = ["redis://10.0.0.1:7000", "redis://10.0.0.2:7000"]
//! #                                         # or REDIS_CLUSTER_URLS: a Redis Cluster's seed
//! #                                         # nodes, instead of redis_url
//! redis_tls_ca = "/etc/rollboard/redis-ca.pem"  # or REDIS_TLS_CA: a private CA (PEM)
//! redis_connection_timeout = "2s"           # or ROLLBOARD_REDIS_CONNECTION_TIMEOUT
//! redis_response_timeout = "2s"             # or ROLLBOARD_REDIS_RESPONSE_TIMEOUT
//! min_replica_acks = 0                      # or ROLLBOARD_MIN_REPLICA_ACKS: replicas that
//!                                           # must have a write before it is acknowledged
//! replica_ack_timeout = "1s"                # or ROLLBOARD_REPLICA_ACK_TIMEOUT
//! default_layout = "compact"                # or ROLLBOARD_DEFAULT_LAYOUT: the slot layout
//!                                           # of boards created without one
//! key_prefix = "app1:"                      # or ROLLBOARD_KEY_PREFIX: starts every key
//!                                           # rollboard writes (no braces) [default: none]
//! accept_eviction = false                   # or ROLLBOARD_ACCEPT_EVICTION
//! read_token = "…"                          # or ROLLBOARD_READ_TOKEN: reads need a token
//! write_token = "…"                         # or ROLLBOARD_WRITE_TOKEN
//! admin_token = "…"                         # or ROLLBOARD_ADMIN_TOKEN
//! max_body_bytes = 4194304
//! max_batch = 10000
//! max_future_skew = "60s"
//! request_timeout = "30s"
//! retire_chunk_size = 1000
//! sweep_every = "60s"
//! shutdown_grace = "10s"
//! max_clock_skew = "5s"                     # or ROLLBOARD_MAX_CLOCK_SKEW
//! idempotency_ttl = "24h"                   # or ROLLBOARD_IDEMPOTENCY_TTL
//! metrics_board_series = 1000               # or ROLLBOARD_METRICS_BOARD_SERIES: most
//!                                           # boards with series of their own
//! max_staleness_ms = 0                      # or ROLLBOARD_MAX_STALENESS_MS: how old a
//!                                           # cached read may be (0: never cached)
//! header_read_timeout = "10s"               # or ROLLBOARD_HEADER_READ_TIMEOUT
//! keep_alive_timeout = "5s"                 # or ROLLBOARD_KEEP_ALIVE_TIMEOUT
//! max_connections = 1024                    # or ROLLBOARD_MAX_CONNECTIONS
//! snapshot_webhook = "http://10.0.0.5/hook" # or ROLLBOARD_SNAPSHOT_WEBHOOK: receives
//!                                           # every period snapshot (POST, JSON)
//! review_webhook = "http://10.0.0.5/held"   # or ROLLBOARD_REVIEW_WEBHOOK: receives every
//!                                           # member a review gate holds (POST, JSON)
//! changes_webhook = "http://10.0.0.5/moves" # or ROLLBOARD_CHANGES_WEBHOOK_URL: receives
//!                                           # every change of a watched top (POST, JSON)
//! webhook_secret = "…"                      # or ROLLBOARD_WEBHOOK_SECRET: signs every
//!                                           # webhook POST (Rollboard-Signature)
//! webhook_ca = "/etc/rollboard/hooks-ca.pem" # or ROLLBOARD_WEBHOOK_CA: a private CA (PEM)
//!                                           # for https:// webhooks [default: system roots]
//! log_format = "text"                       # or ROLLBOARD_LOG_FORMAT: text or json
//! log_level = "info"                        # what is logged (RUST_LOG wins when set)
//! access_log = false                        # or ROLLBOARD_ACCESS_LOG: a line a request
//! cors_origins = ["https://forum.example"]  # or ROLLBOARD_CORS_ORIGINS (comma-separated;
//!                                           # "*": any): CORS, off when empty
//!
//! [default_board]                           # or ROLLBOARD_DEFAULT_BOARD (its JSON): the
//! slot = "1h"                               # config a write's unknown board is created
//! windows = ["1h", "24h"]                   # with (a PUT body); none: refused
//!
//! [[boards]]                                # created, or checked, at start-up
//! name = "hot-posts"
//! slot = "1h"
//! windows = ["1h", "24h"]
//! legacy = "likes"                          # optional: `rollboard migrate` imports the
//!                                           # article's slot_likes_<ts> keys into it
//! ```

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use super::ConnectionLimits;
use super::logging::LogFormat;
use super::timeout::Timeout;
use super::webhook::WebhookOptions;
use crate::http::{ConfigBody, Tokens};
use crate::{BoardConfig, NewBoard, RedisOptions, Settings, Span};

mod bind;
mod error;
mod layer;
mod redis_target;
#[cfg(test)]
mod tests;

pub use bind::{StoreKind, parse_bind};
pub use error::ConfigError;
use error::toml_error;
pub use layer::{BoardEntry, ConfigFile, ConfigLayer, Overrides};
use redis_target::redis_target;

/// Everything `serve` needs, resolved.
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// Address to listen on (default 127.0.0.1:8080).
    pub bind: SocketAddr,
    /// The store as chosen explicitly (`--store`, `ROLLBOARD_STORE`, `store`); `None`:
    /// Redis when a URL is set, else the memory store.
    pub store: Option<StoreKind>,
    /// Redis to use; the embedded memory store when `None` (and no `redis_cluster`).
    pub redis_url: Option<String>,
    /// Seed nodes of a Redis Cluster to use (instead of `redis_url`); empty: none.
    pub redis_cluster: Vec<String>,
    /// How to connect to it: timeouts (default 2 s each) and a private TLS CA.
    pub redis: RedisOptions,
    /// Bearer tokens.
    pub tokens: Tokens,
    /// Allow a non-loopback bind without tokens.
    pub insecure: bool,
    /// Library limits.
    pub settings: Settings,
    /// Largest request body (default 4 MiB).
    pub max_body_bytes: usize,
    /// Longest a request may take (default 30 s).
    pub request_timeout: Duration,
    /// How often every board is swept (default 60 s).
    pub sweep_every: Duration,
    /// How long shutdown waits (default 10 s).
    pub shutdown_grace: Duration,
    /// `/readyz` fails when this process's clock is further than this from the store's
    /// (default 5 s). `None` turns the clock check off entirely (no metric, no warning):
    /// only for tests whose clock stands elsewhere on purpose.
    pub max_clock_skew: Option<Duration>,
    /// Slow and idle clients, and the connection cap.
    pub connections: ConnectionLimits,
    /// Boards to create or check at start-up.
    pub boards: Vec<(String, BoardConfig)>,
    /// Boards to import from the source article's layout by `rollboard migrate`, as
    /// `(board, legacy NAME)`; each board is among `boards`.
    pub legacy: Vec<(String, String)>,
    /// Where period snapshots are POSTed, if anywhere.
    pub snapshot_webhook: Option<WebhookOptions>,
    /// Where the members a review gate holds are POSTed, if anywhere.
    pub review_webhook: Option<WebhookOptions>,
    /// Where the changes of watched tops are POSTed, if anywhere.
    pub changes_webhook: Option<WebhookOptions>,
    /// How log lines are written (default text).
    pub log_format: LogFormat,
    /// What is logged, as `RUST_LOG` directives (`RUST_LOG` wins when set); `None`: the
    /// command's default (`info`).
    pub log_level: Option<String>,
    /// Log one line per request on target `rollboard::access` (default off).
    pub access_log: bool,
    /// Origins answered with CORS headers (`*`: any); empty (default): CORS off.
    pub cors_origins: Vec<String>,
    /// The config a write's unknown board is created with; none: such a write is
    /// refused (`board_not_found`). Reloadable.
    pub default_board: Option<NewBoard>,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig {
            bind: SocketAddr::from(([127, 0, 0, 1], 8080)),
            store: None,
            redis_url: None,
            redis_cluster: Vec::new(),
            redis: RedisOptions::default(),
            tokens: Tokens::default(),
            insecure: false,
            settings: Settings::default(),
            max_body_bytes: 4 * 1024 * 1024,
            request_timeout: Duration::from_secs(30),
            sweep_every: Duration::from_secs(60),
            shutdown_grace: Duration::from_secs(10),
            max_clock_skew: Some(Duration::from_secs(5)),
            connections: ConnectionLimits::default(),
            boards: Vec::new(),
            legacy: Vec::new(),
            snapshot_webhook: None,
            review_webhook: None,
            changes_webhook: None,
            log_format: LogFormat::Text,
            log_level: None,
            access_log: false,
            cors_origins: Vec::new(),
            default_board: None,
        }
    }
}

impl ServiceConfig {
    /// Reads `file` (if any) and applies `overrides`.
    pub fn load(file: Option<&Path>, overrides: Overrides) -> Result<Self, ConfigError> {
        let parsed = match file {
            None => ConfigFile::default(),
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| ConfigError(format!("cannot read {}: {e}", path.display())))?;
                toml::from_str(&text).map_err(|e| toml_error(path, &text, &e))?
            }
        };
        Self::resolve(parsed, overrides)
    }

    /// Combines a parsed file with overrides.
    pub fn resolve(file: ConfigFile, overrides: Overrides) -> Result<Self, ConfigError> {
        let defaults = ServiceConfig::default();
        let secs = |s: Span| Duration::from_secs(s.seconds());
        let mut settings = Settings::default();
        if let Some(n) = file.max_batch {
            settings.max_batch = n;
        }
        if let Some(s) = file.max_future_skew {
            settings.max_future_skew = s;
        }
        if let Some(accept) = overrides.accept_eviction.or(file.accept_eviction) {
            settings.accept_eviction = accept;
        }
        let mut redis = RedisOptions {
            tls_ca: overrides.redis_tls_ca.or(file.redis_tls_ca),
            ..RedisOptions::default()
        };
        if let Some(layout) = overrides.default_layout.or(file.default_layout) {
            redis.default_layout = layout;
        }
        if let Some(prefix) = overrides.key_prefix.or(file.key_prefix) {
            redis.key_prefix = prefix;
        }
        if let Some(Timeout(t)) = overrides
            .redis_connection_timeout
            .or(file.redis_connection_timeout)
        {
            redis.connection_timeout = t;
        }
        if let Some(Timeout(t)) = overrides
            .redis_response_timeout
            .or(file.redis_response_timeout)
        {
            redis.response_timeout = t;
        }
        if let Some(min) = overrides.min_replica_acks.or(file.min_replica_acks) {
            redis.replica_acks.min = min;
        }
        if let Some(Timeout(t)) = overrides.replica_ack_timeout.or(file.replica_ack_timeout) {
            redis.replica_acks.timeout = t;
        }
        if redis.replica_acks.min > 0 && redis.replica_acks.timeout >= redis.response_timeout {
            return Err(ConfigError(format!(
                "replica_ack_timeout ({} ms) must be shorter than redis_response_timeout ({} \
                 ms), which bounds a write and its wait for replicas together",
                redis.replica_acks.timeout.as_millis(),
                redis.response_timeout.as_millis()
            )));
        }
        if let Some(ttl) = overrides.idempotency_ttl.or(file.idempotency_ttl) {
            if ttl.seconds() == 0 {
                return Err(ConfigError("idempotency_ttl must be at least 1s".into()));
            }
            settings.idempotency_ttl = ttl;
        }
        if let Some(n) = overrides.metrics_board_series.or(file.metrics_board_series) {
            settings.metrics_board_series = n;
        }
        if let Some(ms) = overrides.max_staleness_ms.or(file.max_staleness_ms) {
            if ms > crate::MAX_STALENESS_MS {
                return Err(ConfigError(format!(
                    "max_staleness_ms must be 0 to {} (a minute), got {ms}",
                    crate::MAX_STALENESS_MS
                )));
            }
            settings.max_staleness_ms = ms;
        }
        let mut connections = defaults.connections;
        if let Some(s) = overrides.header_read_timeout.or(file.header_read_timeout) {
            connections.header_read_timeout = secs(s);
        }
        if let Some(s) = overrides.keep_alive_timeout.or(file.keep_alive_timeout) {
            connections.keep_alive_timeout = secs(s);
        }
        if let Some(n) = overrides.max_connections.or(file.max_connections) {
            connections.max_connections = n;
        }
        if connections.header_read_timeout.is_zero()
            || connections.keep_alive_timeout.is_zero()
            || connections.max_connections == 0
        {
            return Err(ConfigError(
                "header_read_timeout, keep_alive_timeout and max_connections must be at least 1"
                    .into(),
            ));
        }
        if let Some(n) = file.retire_chunk_size {
            if n == 0 {
                return Err(ConfigError("retire_chunk_size must be at least 1".into()));
            }
            redis.retire.chunk_size = n;
        }
        let legacy = file
            .boards
            .iter()
            .filter_map(|b| Some((b.name.clone(), b.legacy.clone()?)))
            .collect();
        let boards = file
            .boards
            .into_iter()
            .map(|b| {
                BoardConfig::new(b.slot, b.windows)
                    .and_then(|c| c.with_offset(b.offset))
                    .map(|c| (b.name.clone(), c))
                    .map_err(|e| ConfigError(format!("board {:?}: {e}", b.name)))
            })
            .collect::<Result<Vec<_>, _>>()?;
        // An empty variable counts as unset: it never removes the file's token.
        let non_empty = |t: Option<String>| t.filter(|t| !t.is_empty());
        let token = |env: Option<String>, file: Option<String>| non_empty(env).or(non_empty(file));
        let store = overrides.store.or(file.store);
        let (redis_url, redis_cluster) = redis_target(
            store,
            overrides.redis_url,
            file.redis_url,
            overrides.redis_cluster,
            file.redis_cluster,
        )?;
        if redis.replica_acks.min > 0 && redis_url.is_none() && redis_cluster.is_empty() {
            return Err(ConfigError(
                "min_replica_acks needs Redis (REDIS_URL or REDIS_CLUSTER_URLS): the memory \
                 store has no replicas to wait for"
                    .into(),
            ));
        }
        let secret = non_empty(overrides.webhook_secret).or(non_empty(file.webhook_secret));
        let ca = overrides.webhook_ca.or(file.webhook_ca);
        let webhook = |setting: &str, over: Option<String>, file: Option<String>| {
            non_empty(over)
                .or(non_empty(file))
                .map(|url| WebhookOptions::new(url.trim()))
                .transpose()
                .map(|o| {
                    o.map(|o| WebhookOptions {
                        secret: secret.clone(),
                        ca: ca.clone(),
                        ..o
                    })
                })
                .map_err(|e| ConfigError(format!("{setting} {e}")))
        };
        let snapshot_webhook = webhook(
            "snapshot_webhook",
            overrides.snapshot_webhook,
            file.snapshot_webhook,
        )?;
        let review_webhook = webhook(
            "review_webhook",
            overrides.review_webhook,
            file.review_webhook,
        )?;
        let changes_webhook = webhook(
            "changes_webhook",
            overrides.changes_webhook,
            file.changes_webhook,
        )?;
        let cors_origins: Vec<String> = overrides
            .cors_origins
            .or(file.cors_origins)
            .unwrap_or_default()
            .into_iter()
            .map(|o| o.trim().to_owned())
            .filter(|o| !o.is_empty())
            .collect();
        if let Some(bad) = cors_origins
            .iter()
            .find(|o| *o != "*" && axum::http::HeaderValue::from_str(o).is_err())
        {
            return Err(ConfigError(format!("cors_origins: invalid origin {bad:?}")));
        }
        let default_board = overrides
            .default_board
            .or(file.default_board)
            .map(ConfigBody::into_config)
            .transpose()
            .map_err(|e| ConfigError(format!("default_board: {e}")))?;
        let log_level = overrides.log_level.or(file.log_level);
        if let Some(level) = &log_level {
            tracing_subscriber::EnvFilter::try_new(level)
                .map_err(|e| ConfigError(format!("log_level {level:?}: {e}")))?;
        }
        let config = ServiceConfig {
            bind: overrides.bind.or(file.bind).unwrap_or(defaults.bind),
            store,
            redis_url,
            redis_cluster,
            redis,
            tokens: Tokens {
                read: token(overrides.read_token, file.read_token),
                write: token(overrides.write_token, file.write_token),
                admin: token(overrides.admin_token, file.admin_token),
            },
            insecure: overrides.insecure,
            settings,
            max_body_bytes: file.max_body_bytes.unwrap_or(defaults.max_body_bytes),
            request_timeout: file
                .request_timeout
                .map(secs)
                .unwrap_or(defaults.request_timeout),
            sweep_every: file.sweep_every.map(secs).unwrap_or(defaults.sweep_every),
            shutdown_grace: file
                .shutdown_grace
                .map(secs)
                .unwrap_or(defaults.shutdown_grace),
            max_clock_skew: overrides
                .max_clock_skew
                .or(file.max_clock_skew)
                .map(secs)
                .or(defaults.max_clock_skew),
            connections,
            boards,
            legacy,
            snapshot_webhook,
            review_webhook,
            changes_webhook,
            log_format: overrides.log_format.or(file.log_format).unwrap_or_default(),
            log_level,
            access_log: overrides.access_log.or(file.access_log).unwrap_or(false),
            cors_origins,
            default_board,
        };
        config.check_exposure()?;
        Ok(config)
    }

    /// Refuses to listen beyond loopback without any token, unless `insecure`.
    pub fn check_exposure(&self) -> Result<(), ConfigError> {
        if !self.bind.ip().is_loopback() && !self.tokens.any() && !self.insecure {
            return Err(ConfigError(format!(
                "refusing to listen on {} without a token (ROLLBOARD_READ_TOKEN, \
                 ROLLBOARD_WRITE_TOKEN or ROLLBOARD_ADMIN_TOKEN); \
                 set a token, bind to 127.0.0.1, or pass --insecure",
                self.bind
            )));
        }
        Ok(())
    }
}
