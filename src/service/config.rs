//! Service configuration: defaults, then a TOML file, then environment variables and
//! command-line flags (each overriding what came before).
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
//! default_layout = "compact"                # or ROLLBOARD_DEFAULT_LAYOUT: the slot layout
//!                                           # of boards created without one
//! accept_eviction = false                   # or ROLLBOARD_ACCEPT_EVICTION
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
//! header_read_timeout = "10s"               # or ROLLBOARD_HEADER_READ_TIMEOUT
//! keep_alive_timeout = "5s"                 # or ROLLBOARD_KEEP_ALIVE_TIMEOUT
//! max_connections = 1024                    # or ROLLBOARD_MAX_CONNECTIONS
//! snapshot_webhook = "http://10.0.0.5/hook" # or ROLLBOARD_SNAPSHOT_WEBHOOK: receives
//!                                           # every period snapshot (POST, JSON)
//! log_format = "text"                       # or ROLLBOARD_LOG_FORMAT: text or json
//! access_log = false                        # or ROLLBOARD_ACCESS_LOG: a line a request
//! cors_origins = ["https://forum.example"]  # or ROLLBOARD_CORS_ORIGINS (comma-separated;
//!                                           # "*": any): CORS, off when empty
//!
//! [[boards]]                                # created, or checked, at start-up
//! name = "hot-posts"
//! slot = "1h"
//! windows = ["1h", "24h"]
//! legacy = "likes"                          # optional: `rollboard migrate` imports the
//!                                           # article's slot_likes_<ts> keys into it
//! ```

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::ConnectionLimits;
use super::logging::LogFormat;
use super::timeout::Timeout;
use super::webhook::WebhookOptions;
use crate::http::Tokens;
use crate::{BoardConfig, Layout, RedisOptions, Settings, Span};

/// The file's shape. Every field is optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// Address to listen on.
    #[serde(default, deserialize_with = "deserialize_bind")]
    pub bind: Option<SocketAddr>,
    /// The store, chosen explicitly: `memory` or `redis`.
    pub store: Option<StoreKind>,
    /// Redis to use; the embedded memory store when absent.
    pub redis_url: Option<String>,
    /// Seed nodes of a Redis Cluster to use instead of `redis_url`.
    pub redis_cluster: Option<Vec<String>>,
    /// A PEM file of the CA that signed Redis's certificate (`rediss://` only).
    pub redis_tls_ca: Option<PathBuf>,
    /// How long one connection attempt to Redis may take.
    pub redis_connection_timeout: Option<Timeout>,
    /// How long to wait for any one reply of Redis.
    pub redis_response_timeout: Option<Timeout>,
    /// Accept a Redis whose maxmemory-policy may evict keys.
    pub accept_eviction: Option<bool>,
    /// The slot layout of boards created without one.
    pub default_layout: Option<Layout>,
    /// Token for writes.
    pub write_token: Option<String>,
    /// Token for administration.
    pub admin_token: Option<String>,
    /// Largest request body.
    pub max_body_bytes: Option<usize>,
    /// Most events per batch.
    pub max_batch: Option<usize>,
    /// How far in the future an event may be.
    pub max_future_skew: Option<Span>,
    /// Longest a request may take.
    pub request_timeout: Option<Span>,
    /// Fields per retirement chunk.
    pub retire_chunk_size: Option<usize>,
    /// How often every board is swept.
    pub sweep_every: Option<Span>,
    /// How long shutdown waits for requests and retirement in progress.
    pub shutdown_grace: Option<Span>,
    /// How far this process's clock may be from the store's before `/readyz` fails.
    pub max_clock_skew: Option<Span>,
    /// How long a write under an idempotency key is remembered.
    pub idempotency_ttl: Option<Span>,
    /// Most boards with Prometheus series of their own (the rest: `board="(other)"`).
    pub metrics_board_series: Option<usize>,
    /// How long a client may take to send a request head.
    pub header_read_timeout: Option<Span>,
    /// How long a connection may wait, idle, for its next request.
    pub keep_alive_timeout: Option<Span>,
    /// Most connections served at once.
    pub max_connections: Option<usize>,
    /// An `http://` URL that receives every period snapshot.
    pub snapshot_webhook: Option<String>,
    /// Log lines as text or JSON.
    pub log_format: Option<LogFormat>,
    /// One log line per request.
    pub access_log: Option<bool>,
    /// Origins allowed by CORS (`*`: any); none: no CORS headers.
    pub cors_origins: Option<Vec<String>>,
    /// Boards to create (or check) at start-up.
    #[serde(default)]
    pub boards: Vec<BoardEntry>,
}

/// A board declared in the file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoardEntry {
    /// Its name.
    pub name: String,
    /// Slot length.
    pub slot: Span,
    /// Windows.
    pub windows: Vec<Span>,
    /// Alignment offset in seconds.
    #[serde(default)]
    pub offset: i64,
    /// The source article's board (`slot_<NAME>_<ts>` keys) that migration 0001 imports
    /// into this one.
    pub legacy: Option<String>,
}

/// Values from the environment and the command line, which win over the file.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    /// `--bind` / `ROLLBOARD_BIND`.
    pub bind: Option<SocketAddr>,
    /// `--store` / `ROLLBOARD_STORE`.
    pub store: Option<StoreKind>,
    /// `REDIS_URL`.
    pub redis_url: Option<String>,
    /// `REDIS_CLUSTER_URLS` / `--redis-cluster` (comma-separated seed nodes).
    pub redis_cluster: Option<Vec<String>>,
    /// `REDIS_TLS_CA`.
    pub redis_tls_ca: Option<PathBuf>,
    /// `ROLLBOARD_REDIS_CONNECTION_TIMEOUT`.
    pub redis_connection_timeout: Option<Timeout>,
    /// `ROLLBOARD_REDIS_RESPONSE_TIMEOUT`.
    pub redis_response_timeout: Option<Timeout>,
    /// `ROLLBOARD_ACCEPT_EVICTION`.
    pub accept_eviction: Option<bool>,
    /// `ROLLBOARD_DEFAULT_LAYOUT` / `--default-layout`.
    pub default_layout: Option<Layout>,
    /// `ROLLBOARD_WRITE_TOKEN`.
    pub write_token: Option<String>,
    /// `ROLLBOARD_ADMIN_TOKEN`.
    pub admin_token: Option<String>,
    /// `--insecure`: allow a non-loopback bind without tokens.
    pub insecure: bool,
    /// `--max-clock-skew` / `ROLLBOARD_MAX_CLOCK_SKEW`.
    pub max_clock_skew: Option<Span>,
    /// `--idempotency-ttl` / `ROLLBOARD_IDEMPOTENCY_TTL`.
    pub idempotency_ttl: Option<Span>,
    /// `--metrics-board-series` / `ROLLBOARD_METRICS_BOARD_SERIES`.
    pub metrics_board_series: Option<usize>,
    /// `--header-read-timeout` / `ROLLBOARD_HEADER_READ_TIMEOUT`.
    pub header_read_timeout: Option<Span>,
    /// `--keep-alive-timeout` / `ROLLBOARD_KEEP_ALIVE_TIMEOUT`.
    pub keep_alive_timeout: Option<Span>,
    /// `--max-connections` / `ROLLBOARD_MAX_CONNECTIONS`.
    pub max_connections: Option<usize>,
    /// `--snapshot-webhook` / `ROLLBOARD_SNAPSHOT_WEBHOOK`.
    pub snapshot_webhook: Option<String>,
    /// `--log-format` / `ROLLBOARD_LOG_FORMAT`.
    pub log_format: Option<LogFormat>,
    /// `--access-log` / `ROLLBOARD_ACCESS_LOG`.
    pub access_log: Option<bool>,
    /// `--cors-origins` / `ROLLBOARD_CORS_ORIGINS` (comma-separated).
    pub cors_origins: Option<Vec<String>>,
}

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
    /// How log lines are written (default text).
    pub log_format: LogFormat,
    /// Log one line per request on target `rollboard::access` (default off).
    pub access_log: bool,
    /// Origins answered with CORS headers (`*`: any); empty (default): CORS off.
    pub cors_origins: Vec<String>,
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
            log_format: LogFormat::Text,
            access_log: false,
            cors_origins: Vec::new(),
        }
    }
}

/// The store `serve` runs on, when chosen explicitly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreKind {
    /// The embedded memory store: boards live only as long as the process.
    Memory,
    /// Redis, or a Redis Cluster (`REDIS_URL` or `REDIS_CLUSTER_URLS` must be set).
    Redis,
}

impl std::str::FromStr for StoreKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "memory" => Ok(StoreKind::Memory),
            "redis" => Ok(StoreKind::Redis),
            _ => Err(format!("unknown store {s:?}: use memory or redis")),
        }
    }
}

/// A listen address from the command line or the environment: an IP address and a
/// port. Host names are not resolved (one name can stand for several addresses), so
/// `localhost:8080` is refused with the address to give instead.
pub fn parse_bind(text: &str) -> Result<SocketAddr, String> {
    text.trim().parse().map_err(|_| bind_error(text))
}

fn bind_error(text: &str) -> String {
    let port = text.rsplit_once(':').map_or("8080", |(_, p)| p);
    format!(
        "invalid listen address {text:?}: give an IP address and a port, e.g. \
         127.0.0.1:{port} (host names such as localhost are not resolved)"
    )
}

fn deserialize_bind<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<SocketAddr>, D::Error> {
    let text = String::deserialize(d)?;
    parse_bind(&text)
        .map(Some)
        .map_err(serde::de::Error::custom)
}

/// The Redis URL and cluster seeds to use, after the checks that catch an empty value
/// (which would otherwise fall back to the memory store without a word) and a store
/// chosen against the URLs set.
fn redis_target(
    store: Option<StoreKind>,
    env_url: Option<String>,
    file_url: Option<String>,
    env_cluster: Option<Vec<String>>,
    file_cluster: Option<Vec<String>>,
) -> Result<(Option<String>, Vec<String>), ConfigError> {
    let memory = store == Some(StoreKind::Memory);
    let blank = |u: &String| u.trim().is_empty();
    let empty = |what: &str, example: &str| {
        ConfigError(format!(
            "{what} is set but empty: set it to {example} or unset it to use the in-process \
             memory store"
        ))
    };
    if env_url.as_ref().is_some_and(blank) && !memory {
        return Err(empty("REDIS_URL", "redis://host:port/"));
    }
    if file_url.as_ref().is_some_and(blank) && !memory {
        return Err(empty(
            "redis_url in the config file",
            "\"redis://host:port/\"",
        ));
    }
    if env_cluster.as_ref().is_some_and(|c| c.iter().all(blank)) && !memory {
        return Err(empty(
            "REDIS_CLUSTER_URLS",
            "redis://host:port,redis://host:port",
        ));
    }
    if file_cluster.as_ref().is_some_and(|c| c.iter().all(blank)) && !memory {
        return Err(empty(
            "redis_cluster in the config file",
            "[\"redis://host:port\", …]",
        ));
    }
    let url = |u: Option<String>| u.map(|u| u.trim().to_owned()).filter(|u| !u.is_empty());
    let redis_url = url(env_url).or(url(file_url));
    let redis_cluster: Vec<String> = env_cluster
        .filter(|c| !c.iter().all(blank))
        .or(file_cluster)
        .unwrap_or_default()
        .into_iter()
        .map(|u| u.trim().to_owned())
        .filter(|u| !u.is_empty())
        .collect();
    if redis_url.is_some() && !redis_cluster.is_empty() {
        return Err(ConfigError(
            "both a Redis URL (REDIS_URL, redis_url) and Redis Cluster seed nodes \
             (REDIS_CLUSTER_URLS, redis_cluster) are set: set only one"
                .into(),
        ));
    }
    for url in redis_url.iter().chain(&redis_cluster) {
        crate::store::check_url(url).map_err(ConfigError)?;
    }
    let any = redis_url.is_some() || !redis_cluster.is_empty();
    match store {
        Some(StoreKind::Memory) if any => Err(ConfigError(
            "the memory store is chosen (--store, ROLLBOARD_STORE, store) but a Redis URL is \
             set too (REDIS_URL, REDIS_CLUSTER_URLS, redis_url, redis_cluster): unset one"
                .into(),
        )),
        Some(StoreKind::Redis) if !any => Err(ConfigError(
            "the Redis store is chosen (--store, ROLLBOARD_STORE, store) but no Redis URL is \
             set: set REDIS_URL (redis_url) or REDIS_CLUSTER_URLS (redis_cluster)"
                .into(),
        )),
        _ => Ok((redis_url, redis_cluster)),
    }
}

/// A TOML error as one line: `FILE:LINE:COLUMN: KEY: what is wrong`.
fn toml_error(path: &Path, text: &str, err: &toml::de::Error) -> ConfigError {
    let message = plain_message(err.message());
    let Some(span) = err.span() else {
        return ConfigError(format!("{}: {message}", path.display()));
    };
    let start = span.start.min(text.len());
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line = text[..start].matches('\n').count() + 1;
    let column = text[line_start..start].chars().count() + 1;
    let line_text = text[line_start..].lines().next().unwrap_or("");
    // The key of a `key = value` line whose value the error points at.
    let key = line_text
        .split_once('=')
        .filter(|(k, _)| line_start + k.len() < start)
        .map(|(k, _)| k.trim())
        .filter(|k| !k.is_empty() && !k.starts_with('#'));
    match key {
        Some(key) => ConfigError(format!(
            "{}:{line}:{column}: {key}: {message}",
            path.display()
        )),
        None => ConfigError(format!("{}:{line}:{column}: {message}", path.display())),
    }
}

/// serde's `invalid type: string "lots", expected usize` as `expected an integer, found
/// string "lots"`; other messages on one line as they are.
fn plain_message(message: &str) -> String {
    let message = message.trim().replace('\n', " ");
    let Some((found, expected)) = message
        .strip_prefix("invalid type: ")
        .and_then(|m| m.rsplit_once(", expected "))
    else {
        return message;
    };
    let expected = match expected {
        "usize" | "u64" | "u32" | "u16" | "u8" | "i64" | "i32" => "an integer",
        "a boolean" => "true or false",
        other => other,
    };
    format!("expected {expected}, found {found}")
}

/// A configuration that cannot be used, and why.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

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
        if let Some(ttl) = overrides.idempotency_ttl.or(file.idempotency_ttl) {
            if ttl.seconds() == 0 {
                return Err(ConfigError("idempotency_ttl must be at least 1s".into()));
            }
            settings.idempotency_ttl = ttl;
        }
        if let Some(n) = overrides.metrics_board_series.or(file.metrics_board_series) {
            settings.metrics_board_series = n;
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
        let snapshot_webhook = non_empty(overrides.snapshot_webhook)
            .or(non_empty(file.snapshot_webhook))
            .map(|url| WebhookOptions::new(url.trim()))
            .transpose()
            .map_err(ConfigError)?;
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
        let config = ServiceConfig {
            bind: overrides.bind.or(file.bind).unwrap_or(defaults.bind),
            store,
            redis_url,
            redis_cluster,
            redis,
            tokens: Tokens {
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
            log_format: overrides.log_format.or(file.log_format).unwrap_or_default(),
            access_log: overrides.access_log.or(file.access_log).unwrap_or(false),
            cors_origins,
        };
        config.check_exposure()?;
        Ok(config)
    }

    /// Refuses to listen beyond loopback without any token, unless `insecure`.
    pub fn check_exposure(&self) -> Result<(), ConfigError> {
        if !self.bind.ip().is_loopback() && !self.tokens.any() && !self.insecure {
            return Err(ConfigError(format!(
                "refusing to listen on {} without ROLLBOARD_WRITE_TOKEN or ROLLBOARD_ADMIN_TOKEN; \
                 set a token, bind to 127.0.0.1, or pass --insecure",
                self.bind
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> ConfigFile {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn file_values_apply_and_overrides_win() {
        let file = parse(
            r#"
            bind = "127.0.0.1:9000"
            redis_url = "redis://file/"
            max_batch = 50
            max_future_skew = "2m"
            sweep_every = 30
            max_clock_skew = "2s"
            [[boards]]
            name = "hot"
            slot = "1h"
            windows = ["1h", "24h"]
            [[boards]]
            name = "liked"
            slot = "1h"
            windows = ["26h"]
            legacy = "likes"
            "#,
        );
        let overrides = Overrides {
            redis_url: Some("redis://env/".into()),
            ..Overrides::default()
        };
        let skew_from_env = Overrides {
            max_clock_skew: Some(Span::parse("9s").unwrap()),
            ..Overrides::default()
        };
        let c = ServiceConfig::resolve(parse("max_clock_skew = \"2s\""), skew_from_env).unwrap();
        assert_eq!(c.max_clock_skew, Some(Duration::from_secs(9)));
        let c = ServiceConfig::resolve(ConfigFile::default(), Overrides::default()).unwrap();
        assert_eq!(c.max_clock_skew, Some(Duration::from_secs(5)));
        let c = ServiceConfig::resolve(file, overrides).unwrap();
        assert_eq!(c.bind.port(), 9000);
        assert_eq!(c.redis_url.as_deref(), Some("redis://env/"));
        assert_eq!(c.settings.max_batch, 50);
        assert_eq!(c.settings.max_future_skew.seconds(), 120);
        assert_eq!(c.sweep_every, Duration::from_secs(30));
        assert_eq!(c.max_clock_skew, Some(Duration::from_secs(2)));
        assert_eq!(c.boards[0].0, "hot");
        assert_eq!(c.boards[0].1.windows().len(), 2);
        assert_eq!(c.legacy, [("liked".to_owned(), "likes".to_owned())]);
    }

    #[test]
    fn a_cluster_comes_from_the_file_or_the_environment_but_not_with_a_url() {
        let file = parse(r#"redis_cluster = ["redis://a:7000", "redis://b:7000"]"#);
        let c = ServiceConfig::resolve(file, Overrides::default()).unwrap();
        assert_eq!(c.redis_cluster, ["redis://a:7000", "redis://b:7000"]);
        assert_eq!(c.redis_url, None);
        let env = Overrides {
            redis_cluster: Some(vec!["redis://c:7000".into(), " ".into()]),
            ..Overrides::default()
        };
        let file = parse(r#"redis_cluster = ["redis://a:7000"]"#);
        let c = ServiceConfig::resolve(file, env).unwrap();
        assert_eq!(c.redis_cluster, ["redis://c:7000"]);
        let both = Overrides {
            redis_url: Some("redis://single/".into()),
            ..Overrides::default()
        };
        let file = parse(r#"redis_cluster = ["redis://a:7000"]"#);
        let err = ServiceConfig::resolve(file, both).unwrap_err();
        assert!(err.0.contains("set only one"), "{err}");
    }

    #[test]
    fn redis_connection_settings_come_from_the_file_and_the_environment() {
        let file = || {
            parse(
                r#"
                redis_tls_ca = "/etc/ca.pem"
                redis_connection_timeout = "500ms"
                redis_response_timeout = 3
                accept_eviction = true
                default_layout = "plain"
                "#,
            )
        };
        let c = ServiceConfig::resolve(file(), Overrides::default()).unwrap();
        assert_eq!(c.redis.tls_ca, Some(PathBuf::from("/etc/ca.pem")));
        assert_eq!(c.redis.connection_timeout, Duration::from_millis(500));
        assert_eq!(c.redis.response_timeout, Duration::from_secs(3));
        assert!(c.settings.accept_eviction);
        assert_eq!(c.redis.default_layout, Layout::Plain);
        assert_eq!(
            ServiceConfig::resolve(ConfigFile::default(), Overrides::default())
                .unwrap()
                .redis
                .default_layout,
            Layout::Compact
        );
        let env = Overrides {
            default_layout: Some(Layout::Compact),
            redis_tls_ca: Some("/run/ca.pem".into()),
            redis_response_timeout: Some("150ms".parse().unwrap()),
            accept_eviction: Some(false),
            ..Overrides::default()
        };
        let c = ServiceConfig::resolve(file(), env).unwrap();
        assert_eq!(c.redis.tls_ca, Some(PathBuf::from("/run/ca.pem")));
        assert_eq!(c.redis.connection_timeout, Duration::from_millis(500));
        assert_eq!(c.redis.response_timeout, Duration::from_millis(150));
        assert_eq!(c.redis.default_layout, Layout::Compact);
        assert!(!c.settings.accept_eviction);
        let c = ServiceConfig::resolve(ConfigFile::default(), Overrides::default()).unwrap();
        assert_eq!(c.redis, RedisOptions::default());
        assert!(!c.settings.accept_eviction);
        let err = toml::from_str::<ConfigFile>("redis_response_timeout = \"0ms\"").unwrap_err();
        assert_eq!(
            err.message(),
            "invalid timeout \"0ms\": it must be between 1ms and 1h"
        );
    }

    #[test]
    fn bad_files_are_explained() {
        assert!(toml::from_str::<ConfigFile>("bnd = \"x\"").is_err());
        let err = ServiceConfig::resolve(
            parse("[[boards]]\nname = \"x\"\nslot = \"1h\"\nwindows = [\"90m\"]"),
            Overrides::default(),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "board \"x\": invalid board config: window 90m is not a multiple of the slot length 1h"
        );
    }

    #[test]
    fn an_empty_redis_setting_is_an_error_not_the_memory_store() {
        let env = |url: Option<&str>, cluster: Option<Vec<&str>>, store| Overrides {
            redis_url: url.map(str::to_owned),
            redis_cluster: cluster.map(|c| c.into_iter().map(str::to_owned).collect()),
            store,
            ..Overrides::default()
        };
        let err = |file: &str, overrides| {
            ServiceConfig::resolve(parse(file), overrides)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err("", env(Some(""), None, None)),
            "REDIS_URL is set but empty: set it to redis://host:port/ or unset it to use the \
             in-process memory store"
        );
        assert_eq!(
            err("redis_url = \"redis://file/\"", env(Some(" "), None, None)),
            "REDIS_URL is set but empty: set it to redis://host:port/ or unset it to use the \
             in-process memory store"
        );
        assert_eq!(
            err("redis_url = \"\"", Overrides::default()),
            "redis_url in the config file is set but empty: set it to \"redis://host:port/\" or \
             unset it to use the in-process memory store"
        );
        assert_eq!(
            err("", env(None, Some(vec![""]), None)),
            "REDIS_CLUSTER_URLS is set but empty: set it to redis://host:port,redis://host:port \
             or unset it to use the in-process memory store"
        );
        assert!(
            err("redis_cluster = []", Overrides::default())
                .starts_with("redis_cluster in the config file is set but empty")
        );
        // The memory store chosen explicitly: an empty variable agrees with it, a URL not.
        let memory =
            ServiceConfig::resolve(parse("store = \"memory\""), env(Some(""), None, None)).unwrap();
        assert_eq!(memory.store, Some(StoreKind::Memory));
        assert_eq!(memory.redis_url, None);
        assert_eq!(
            err(
                "redis_url = \"redis://file/\"",
                env(None, None, Some(StoreKind::Memory))
            ),
            "the memory store is chosen (--store, ROLLBOARD_STORE, store) but a Redis URL is \
             set too (REDIS_URL, REDIS_CLUSTER_URLS, redis_url, redis_cluster): unset one"
        );
        assert_eq!(
            err("store = \"redis\"", Overrides::default()),
            "the Redis store is chosen (--store, ROLLBOARD_STORE, store) but no Redis URL is \
             set: set REDIS_URL (redis_url) or REDIS_CLUSTER_URLS (redis_cluster)"
        );
        // Nothing set at all: the memory store, as before.
        let default = ServiceConfig::resolve(ConfigFile::default(), Overrides::default()).unwrap();
        assert_eq!((default.store, default.redis_url), (None, None));
        assert_eq!(
            err("", env(Some("http://127.0.0.1:6379/"), None, None)),
            "invalid Redis URL \"http://127.0.0.1:6379/\": expected \
             redis://[user:password@]host[:port][/db] or rediss://… (TLS)"
        );
    }

    #[test]
    fn file_errors_name_the_line_the_column_and_the_key() {
        let dir = std::env::temp_dir().join(format!("rollboard-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("rollboard.toml");
        let load = |text: &str| {
            std::fs::write(&path, text).unwrap();
            let err = ServiceConfig::load(Some(&path), Overrides::default()).unwrap_err();
            let shown = err.to_string();
            shown
                .strip_prefix(&format!("{}:", path.display()))
                .unwrap_or(&shown)
                .to_owned()
        };
        assert_eq!(
            load("bind = \"127.0.0.1:8080\"\n\nmax_batch = \"lots\"\n"),
            "3:13: max_batch: expected an integer, found string \"lots\""
        );
        assert_eq!(
            load("accept_eviction = \"yes\"\n"),
            "1:19: accept_eviction: expected true or false, found string \"yes\""
        );
        assert_eq!(
            load("max_batch = [1,\n"),
            "1:16: max_batch: unclosed array, expected `]`"
        );
        assert_eq!(
            load("bind = \"localhost:8080\"\n"),
            "1:8: bind: invalid listen address \"localhost:8080\": give an IP address and a \
             port, e.g. 127.0.0.1:8080 (host names such as localhost are not resolved)"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_listen_address_is_an_ip_address_and_a_port() {
        assert_eq!(parse_bind("127.0.0.1:9000").unwrap().port(), 9000);
        assert_eq!(
            parse_bind("localhost:8080").unwrap_err(),
            "invalid listen address \"localhost:8080\": give an IP address and a port, e.g. \
             127.0.0.1:8080 (host names such as localhost are not resolved)"
        );
    }

    #[test]
    fn an_empty_token_variable_never_removes_the_files_token() {
        let file = || parse("write_token = \"w-file\"\nadmin_token = \"a-file\"");
        let empty = Overrides {
            write_token: Some(String::new()),
            admin_token: Some(String::new()),
            ..Overrides::default()
        };
        let c = ServiceConfig::resolve(file(), empty.clone()).unwrap();
        assert_eq!(c.tokens.write.as_deref(), Some("w-file"));
        assert_eq!(c.tokens.admin.as_deref(), Some("a-file"));
        // Without a file token an empty variable is no token, as when it is unset: a
        // public bind is then refused.
        let public = Overrides {
            bind: Some("0.0.0.0:8080".parse().unwrap()),
            ..empty
        };
        let err = ServiceConfig::resolve(ConfigFile::default(), public).unwrap_err();
        assert!(err.to_string().starts_with("refusing to listen"), "{err}");
        // A non-empty variable wins over the file.
        let set = Overrides {
            write_token: Some("w-env".into()),
            ..Overrides::default()
        };
        let c = ServiceConfig::resolve(file(), set).unwrap();
        assert_eq!(c.tokens.write.as_deref(), Some("w-env"));
        assert_eq!(c.tokens.admin.as_deref(), Some("a-file"));
    }

    #[test]
    fn connection_limits_and_idempotency_ttl_come_from_file_and_environment() {
        let c = ServiceConfig::resolve(ConfigFile::default(), Overrides::default()).unwrap();
        assert_eq!(c.connections, ConnectionLimits::default());
        assert_eq!(c.connections.header_read_timeout, Duration::from_secs(10));
        assert_eq!(c.settings.idempotency_ttl.seconds(), 86_400);
        let file = parse(
            "idempotency_ttl = \"1h\"\nheader_read_timeout = \"3s\"\n\
             keep_alive_timeout = \"2s\"\nmax_connections = 7",
        );
        let env = Overrides {
            keep_alive_timeout: Some(Span::parse("4s").unwrap()),
            ..Overrides::default()
        };
        let c = ServiceConfig::resolve(file, env).unwrap();
        assert_eq!(c.settings.idempotency_ttl.seconds(), 3600);
        assert_eq!(c.settings.metrics_board_series, 1_000);
        assert_eq!(
            c.connections,
            ConnectionLimits {
                header_read_timeout: Duration::from_secs(3),
                keep_alive_timeout: Duration::from_secs(4),
                max_connections: 7,
            }
        );
        let err =
            ServiceConfig::resolve(parse("max_connections = 0"), Overrides::default()).unwrap_err();
        assert!(err.to_string().contains("max_connections"), "{err}");
    }

    #[test]
    fn metrics_board_series_comes_from_the_file_or_the_environment() {
        let c = ServiceConfig::resolve(parse("metrics_board_series = 0"), Overrides::default());
        assert_eq!(c.unwrap().settings.metrics_board_series, 0);
        let env = Overrides {
            metrics_board_series: Some(50),
            ..Overrides::default()
        };
        let c = ServiceConfig::resolve(parse("metrics_board_series = 7"), env).unwrap();
        assert_eq!(c.settings.metrics_board_series, 50);
    }

    #[test]
    fn a_public_bind_needs_a_token_or_insecure() {
        let public = Overrides {
            bind: Some("0.0.0.0:8080".parse().unwrap()),
            ..Overrides::default()
        };
        let err = ServiceConfig::resolve(ConfigFile::default(), public.clone()).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("refusing to listen on 0.0.0.0:8080")
        );
        let with_token = Overrides {
            write_token: Some("t".into()),
            ..public.clone()
        };
        assert!(ServiceConfig::resolve(ConfigFile::default(), with_token).is_ok());
        let insecure = Overrides {
            insecure: true,
            ..public
        };
        assert!(ServiceConfig::resolve(ConfigFile::default(), insecure).is_ok());
    }

    #[test]
    fn logs_and_cors_come_from_the_file_or_the_environment() {
        let c = ServiceConfig::resolve(ConfigFile::default(), Overrides::default()).unwrap();
        assert_eq!(
            (c.log_format, c.access_log, c.cors_origins.len()),
            (LogFormat::Text, false, 0)
        );
        let file = || {
            parse(
                "log_format = \"json\"\naccess_log = true\n\
                 cors_origins = [\"https://a.example\", \" \"]",
            )
        };
        let c = ServiceConfig::resolve(file(), Overrides::default()).unwrap();
        assert_eq!((c.log_format, c.access_log), (LogFormat::Json, true));
        assert_eq!(c.cors_origins, ["https://a.example"]);
        let env = Overrides {
            log_format: Some("text".parse().unwrap()),
            access_log: Some(false),
            cors_origins: Some(vec!["*".into()]),
            ..Overrides::default()
        };
        let c = ServiceConfig::resolve(file(), env).unwrap();
        assert_eq!((c.log_format, c.access_log), (LogFormat::Text, false));
        assert_eq!(c.cors_origins, ["*"]);
        assert!("xml".parse::<LogFormat>().is_err());
        let bad = Overrides {
            cors_origins: Some(vec!["https://a\nb".into()]),
            ..Overrides::default()
        };
        let err = ServiceConfig::resolve(ConfigFile::default(), bad).unwrap_err();
        assert!(err.0.contains("cors_origins"), "{err}");
    }

    #[test]
    fn the_snapshot_webhook_comes_from_the_file_or_the_environment() {
        let file = || parse(r#"snapshot_webhook = "http://10.0.0.5:9000/hook""#);
        let c = ServiceConfig::resolve(file(), Overrides::default()).unwrap();
        let url = c.snapshot_webhook.map(|w| w.url.to_string());
        assert_eq!(url.as_deref(), Some("http://10.0.0.5:9000/hook"));
        let env = Overrides {
            snapshot_webhook: Some("http://receiver/snap".into()),
            ..Overrides::default()
        };
        let c = ServiceConfig::resolve(file(), env).unwrap();
        let url = c.snapshot_webhook.map(|w| w.url.to_string());
        assert_eq!(url.as_deref(), Some("http://receiver/snap"));
        let c = ServiceConfig::resolve(ConfigFile::default(), Overrides::default()).unwrap();
        assert_eq!(c.snapshot_webhook, None);
        let tls = Overrides {
            snapshot_webhook: Some("https://receiver/snap".into()),
            ..Overrides::default()
        };
        let err = ServiceConfig::resolve(ConfigFile::default(), tls).unwrap_err();
        assert!(err.0.contains("must be an http:// URL"), "{err}");
    }
}
