//! The access log (opt-in, `access_log`): one INFO line per request on target
//! `rollboard::access`, written by the [edge](super::edge) once the request is answered.

use axum::extract::MatchedPath;
use axum::http::{Method, StatusCode, Uri};

/// The route a line names: its template, or the path when no route matched.
pub(super) fn route(matched: Option<&MatchedPath>, uri: &Uri) -> String {
    matched
        .map_or_else(|| uri.path(), MatchedPath::as_str)
        .to_owned()
}

/// Logs the request's method, route, status and duration.
pub(super) fn line(method: &Method, route: &str, status: StatusCode, seconds: f64) {
    tracing::info!(
        target: "rollboard::access",
        method = %method,
        route = %route,
        status = status.as_u16(),
        duration_ms = seconds * 1000.0,
        "request"
    );
}
