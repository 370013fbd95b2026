//! The access log (opt-in, `access_log`): one INFO line per request on target
//! `rollboard::access`.

use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;

/// Logs the request's method, route template (its path when no route matched), status
/// and duration once it is answered.
pub async fn log(request: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = request.method().clone();
    let route = match request.extensions().get::<MatchedPath>() {
        Some(matched) => matched.as_str().to_owned(),
        None => request.uri().path().to_owned(),
    };
    let response = next.run(request).await;
    tracing::info!(
        target: "rollboard::access",
        method = %method,
        route = %route,
        status = response.status().as_u16(),
        duration_ms = start.elapsed().as_secs_f64() * 1000.0,
        "request"
    );
    response
}
