//! Request latency per route, as a Prometheus histogram (recorded by the edge).

use axum::extract::MatchedPath;
use axum::http::{Method, StatusCode};
use foldhash::HashMap;
use metrics::Histogram;
use std::sync::{OnceLock, RwLock};

/// The latency histogram of one (method, route, status), created once: a request then
/// costs two map lookups instead of building and hashing label strings.
pub(super) fn latency(method: Method, route: Option<MatchedPath>, status: StatusCode) -> Histogram {
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
