//! What the router is built from ([`HttpOptions`]) and what every handler can reach
//! ([`AppState`]).

use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use metrics_exporter_prometheus::PrometheusHandle;

use super::Tokens;
use super::live::Reload;
use crate::Rollboard;

/// How the router behaves.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// Bearer tokens for read, write and admin routes (none: open).
    pub tokens: Tokens,
    /// Largest request body accepted (default 4 MiB).
    pub max_body_bytes: usize,
    /// Longest a request may take before it is answered 503 `timeout` (default 30 s).
    pub request_timeout: Duration,
    /// The Prometheus handle rendered at `/metrics` (none: `/metrics` is 404).
    pub metrics: Option<PrometheusHandle>,
    /// `/readyz` fails when this process's clock is further than this from the store's
    /// (default 5 s); `None`: readiness does not look at the clock.
    pub max_clock_skew: Option<Duration>,
    /// Log one INFO line per request on target `rollboard::access` (default off).
    pub access_log: bool,
    /// Origins answered with CORS headers, `*` for any (default none: CORS off, no
    /// CORS headers; an origin that is not a valid header value is left out).
    pub cors_origins: Vec<String>,
    /// Record every request's duration as a stats value of kind `AccessTime` (the
    /// dashboard's own: `DashboardTime`) in the context of its route template, as
    /// [`AccessTimeLayer`](super::AccessTimeLayer) does (default off; `rollboard serve` turns it on).
    pub access_times: bool,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            tokens: Tokens::default(),
            max_body_bytes: 4 * 1024 * 1024,
            request_timeout: Duration::from_secs(30),
            metrics: None,
            max_clock_skew: Some(Duration::from_secs(5)),
            access_log: false,
            cors_origins: Vec::new(),
            access_times: false,
        }
    }
}

/// What every handler can reach: one `Arc`, as axum clones it twice a request (the
/// route's service and the `State` extractor).
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

/// What [`AppState`] holds.
pub struct Shared {
    pub(super) boards: Rollboard,
    pub(super) live: Reload,
    pub(super) metrics: Option<PrometheusHandle>,
    pub(super) max_clock_skew: Option<Duration>,
}

impl AppState {
    pub(super) fn new(shared: Shared) -> AppState {
        AppState(Arc::new(shared))
    }
}

impl Deref for AppState {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.0
    }
}
