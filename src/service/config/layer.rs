//! One layer of the service's configuration: the TOML file, or the environment and the
//! command line over it. Both have one shape, [`ConfigLayer`], every field optional;
//! [`ServiceConfig::resolve`](super::ServiceConfig::resolve) lays the second over the
//! first.

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::Deserialize;

use super::StoreKind;
use super::bind::deserialize_bind;
use crate::http::ConfigBody;
use crate::service::logging::LogFormat;
use crate::service::timeout::Timeout;
use crate::{KeyPrefix, Layout, Span};

/// The config file's shape.
pub type ConfigFile = ConfigLayer;

/// Values from the environment and the command line, which win over the file's.
pub type Overrides = ConfigLayer;

/// One layer of settings: the file's (`ConfigFile`), or those of the environment and
/// the command line (`Overrides`). Every field is optional; each says its file key and,
/// when it has them, its variable and flag. The file cannot give `insecure`; the
/// environment and the command line give none of the file-only settings.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigLayer {
    /// Address to listen on: `bind`, `--bind` / `ROLLBOARD_BIND`.
    #[serde(default, deserialize_with = "deserialize_bind")]
    pub bind: Option<SocketAddr>,
    /// The store, chosen explicitly, `memory` or `redis`: `store`, `--store` /
    /// `ROLLBOARD_STORE`.
    pub store: Option<StoreKind>,
    /// Redis to use; the embedded memory store when absent: `redis_url`, `REDIS_URL`.
    pub redis_url: Option<String>,
    /// Seed nodes of a Redis Cluster to use instead of `redis_url`: `redis_cluster`,
    /// `REDIS_CLUSTER_URLS` / `--redis-cluster` (comma-separated).
    pub redis_cluster: Option<Vec<String>>,
    /// A PEM file of the CA that signed Redis's certificate (`rediss://` only):
    /// `redis_tls_ca`, `REDIS_TLS_CA`.
    pub redis_tls_ca: Option<PathBuf>,
    /// How long one connection attempt to Redis may take: `redis_connection_timeout`,
    /// `ROLLBOARD_REDIS_CONNECTION_TIMEOUT`.
    pub redis_connection_timeout: Option<Timeout>,
    /// How long to wait for any one reply of Redis: `redis_response_timeout`,
    /// `ROLLBOARD_REDIS_RESPONSE_TIMEOUT`.
    pub redis_response_timeout: Option<Timeout>,
    /// Replicas that must have a write before it is acknowledged: `min_replica_acks`,
    /// `ROLLBOARD_MIN_REPLICA_ACKS` / `--min-replica-acks`.
    pub min_replica_acks: Option<u32>,
    /// How long a write waits for them: `replica_ack_timeout`,
    /// `ROLLBOARD_REPLICA_ACK_TIMEOUT` / `--replica-ack-timeout`.
    pub replica_ack_timeout: Option<Timeout>,
    /// Accept a Redis whose maxmemory-policy may evict keys: `accept_eviction`,
    /// `ROLLBOARD_ACCEPT_EVICTION`.
    pub accept_eviction: Option<bool>,
    /// The slot layout of boards created without one: `default_layout`,
    /// `ROLLBOARD_DEFAULT_LAYOUT` / `--default-layout`.
    pub default_layout: Option<Layout>,
    /// What every key rollboard writes starts with: `key_prefix`,
    /// `ROLLBOARD_KEY_PREFIX` / `--key-prefix`.
    pub key_prefix: Option<KeyPrefix>,
    /// Token for reads: `read_token`, `ROLLBOARD_READ_TOKEN`.
    pub read_token: Option<String>,
    /// Token for writes: `write_token`, `ROLLBOARD_WRITE_TOKEN`.
    pub write_token: Option<String>,
    /// Token for administration: `admin_token`, `ROLLBOARD_ADMIN_TOKEN`.
    pub admin_token: Option<String>,
    /// Allow a non-loopback bind without tokens: `--insecure` only (not in the file).
    #[serde(skip)]
    pub insecure: bool,
    /// Largest request body: `max_body_bytes` (file only).
    pub max_body_bytes: Option<usize>,
    /// Most events per batch: `max_batch` (file only).
    pub max_batch: Option<usize>,
    /// How far in the future an event may be: `max_future_skew` (file only).
    pub max_future_skew: Option<Span>,
    /// Longest a request may take: `request_timeout` (file only).
    pub request_timeout: Option<Span>,
    /// Fields per retirement chunk: `retire_chunk_size` (file only).
    pub retire_chunk_size: Option<usize>,
    /// How often every board is swept: `sweep_every` (file only).
    pub sweep_every: Option<Span>,
    /// How long shutdown waits for requests and retirement in progress:
    /// `shutdown_grace` (file only).
    pub shutdown_grace: Option<Span>,
    /// How far this process's clock may be from the store's before `/readyz` fails:
    /// `max_clock_skew`, `--max-clock-skew` / `ROLLBOARD_MAX_CLOCK_SKEW`.
    pub max_clock_skew: Option<Span>,
    /// How long a write under an idempotency key is remembered: `idempotency_ttl`,
    /// `--idempotency-ttl` / `ROLLBOARD_IDEMPOTENCY_TTL`.
    pub idempotency_ttl: Option<Span>,
    /// Most boards with Prometheus series of their own (the rest: `board="(other)"`):
    /// `metrics_board_series`, `--metrics-board-series` /
    /// `ROLLBOARD_METRICS_BOARD_SERIES`.
    pub metrics_board_series: Option<usize>,
    /// How old, in milliseconds, a read's answer may be when the request does not say
    /// (0: reads are never cached): `max_staleness_ms`, `--max-staleness-ms` /
    /// `ROLLBOARD_MAX_STALENESS_MS`.
    pub max_staleness_ms: Option<u64>,
    /// How long a client may take to send a request head: `header_read_timeout`,
    /// `--header-read-timeout` / `ROLLBOARD_HEADER_READ_TIMEOUT`.
    pub header_read_timeout: Option<Span>,
    /// How long a connection may wait, idle, for its next request:
    /// `keep_alive_timeout`, `--keep-alive-timeout` / `ROLLBOARD_KEEP_ALIVE_TIMEOUT`.
    pub keep_alive_timeout: Option<Span>,
    /// Most connections served at once: `max_connections`, `--max-connections` /
    /// `ROLLBOARD_MAX_CONNECTIONS`.
    pub max_connections: Option<usize>,
    /// An `http://` or `https://` URL that receives every period snapshot: `snapshot_webhook`,
    /// `--snapshot-webhook` / `ROLLBOARD_SNAPSHOT_WEBHOOK`.
    pub snapshot_webhook: Option<String>,
    /// An `http://` or `https://` URL that receives every member a review gate holds:
    /// `review_webhook`, `--review-webhook` / `ROLLBOARD_REVIEW_WEBHOOK`.
    pub review_webhook: Option<String>,
    /// An `http://` or `https://` URL that receives every change of a watched top: `changes_webhook`,
    /// `--changes-webhook` / `ROLLBOARD_CHANGES_WEBHOOK_URL`.
    pub changes_webhook: Option<String>,
    /// The secret every webhook POST is signed with: `webhook_secret`,
    /// `ROLLBOARD_WEBHOOK_SECRET`.
    pub webhook_secret: Option<String>,
    /// A PEM file of a private CA that may sign `https://` receivers' certificates,
    /// besides the system's roots: `webhook_ca`, `--webhook-ca` / `ROLLBOARD_WEBHOOK_CA`.
    pub webhook_ca: Option<PathBuf>,
    /// Log lines as text or JSON: `log_format`, `--log-format` / `ROLLBOARD_LOG_FORMAT`.
    pub log_format: Option<LogFormat>,
    /// What is logged, as `RUST_LOG` directives (`"info"`, `"warn,rollboard=debug"`):
    /// `log_level` (file only, so a reload can change it; `RUST_LOG` wins when set).
    pub log_level: Option<String>,
    /// One log line per request: `access_log`, `--access-log` / `ROLLBOARD_ACCESS_LOG`.
    pub access_log: Option<bool>,
    /// Origins allowed by CORS (`*`: any); none: no CORS headers: `cors_origins`,
    /// `--cors-origins` / `ROLLBOARD_CORS_ORIGINS` (comma-separated).
    pub cors_origins: Option<Vec<String>>,
    /// The config a write's unknown board is created with (a `PUT /v1/boards/{board}`
    /// body; none: an unknown board is refused): `[default_board]`,
    /// `--default-board` / `ROLLBOARD_DEFAULT_BOARD` (its JSON).
    pub default_board: Option<ConfigBody>,
    /// Boards to create (or check) at start-up: `[[boards]]` (file only).
    #[serde(default)]
    pub boards: Vec<BoardEntry>,
}

/// A board declared in the file.
#[derive(Debug, Clone, Deserialize)]
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
