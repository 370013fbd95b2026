//! Prometheus metrics of the service: request latency per route, events accepted and
//! rejected by reason, store errors; retirement metrics live with the scheduler.
//!
//! Series are labelled by board only once the board is known to exist, so arbitrary
//! names in requests cannot grow the number of series.

use std::collections::HashMap;
use std::sync::{OnceLock, RwLock};
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use metrics::Histogram;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

use crate::Error;

/// Installs the process-wide Prometheus recorder (once) and returns its handle.
/// Call `run_upkeep()` on it periodically (`rollboard serve` does, every 5 s).
pub fn install_prometheus() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            PrometheusBuilder::new()
                .set_buckets(&[
                    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
                ])
                .expect("static buckets are valid")
                .install_recorder()
                .expect("no other metrics recorder is installed in this process")
        })
        .clone()
}

/// Records each request's latency by method, route template and status.
pub async fn track(request: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = request.method().clone();
    let route = request.extensions().get::<MatchedPath>().cloned();
    let response = next.run(request).await;
    latency(method, route, response.status()).record(start.elapsed().as_secs_f64());
    response
}

/// The latency histogram of one (method, route, status), created once: a request then
/// costs two map lookups instead of building and hashing label strings.
fn latency(method: Method, route: Option<MatchedPath>, status: StatusCode) -> Histogram {
    type ByRoute = HashMap<String, HashMap<(Method, StatusCode), Histogram>>;
    static HISTOGRAMS: OnceLock<RwLock<ByRoute>> = OnceLock::new();
    let histograms = HISTOGRAMS.get_or_init(Default::default);
    let route = route.as_ref().map_or("unmatched", |p| p.as_str());
    let cached = histograms
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(route)
        .and_then(|by_status| by_status.get(&(method.clone(), status)).cloned());
    if let Some(histogram) = cached {
        return histogram;
    }
    let histogram = metrics::histogram!(
        "rollboard_http_request_duration_seconds",
        "method" => method.to_string(),
        "route" => route.to_owned(),
        "status" => status.as_u16().to_string(),
    );
    histograms
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .entry(route.to_owned())
        .or_default()
        .insert((method, status), histogram.clone());
    histogram
}

/// Counts events applied to `board`.
pub fn events_accepted(board: &str, n: usize) {
    if n > 0 {
        metrics::counter!("rollboard_events_accepted_total", "board" => board.to_owned())
            .increment(n as u64);
    }
}

/// Counts an event rejected on `board`, by reason.
pub fn event_rejected(board: &str, error: &Error) {
    if matches!(
        error,
        Error::BoardNotFound(_) | Error::InvalidBoardName { .. }
    ) {
        return;
    }
    metrics::counter!(
        "rollboard_events_rejected_total",
        "board" => board.to_owned(),
        "reason" => error.code(),
    )
    .increment(1);
}

/// Counts a store failure seen by any part of the service.
pub fn store_error(code: &'static str) {
    metrics::counter!("rollboard_store_errors_total", "kind" => code).increment(1);
}
