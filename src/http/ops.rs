//! Operational endpoints: liveness, readiness, metrics; and the answers for routes and
//! methods that do not exist.

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::AppState;
use super::error::{ApiError, ErrorBody};
use super::json::Json;
use crate::SkewTooLarge;

/// `{"status": …}` of the health endpoints.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Health {
    /// `ok` or `ready`.
    pub status: &'static str,
    /// `redis` or `memory`.
    pub store: &'static str,
}

/// The start of what `/metrics` answers (the real text has every series).
const METRICS_EXAMPLE: &str =
    "# TYPE rollboard_clock_skew_seconds gauge\nrollboard_clock_skew_seconds 0\n";

/// The process is up.
#[utoipa::path(
    get, path = "/healthz", tag = "ops", operation_id = "opsHealthz",
    responses((status = 200, description = "The process is up", body = Health, example = json!({"status": "ok", "store": "memory"})))
)]
pub async fn healthz(State(state): State<AppState>) -> Json<Health> {
    Json(Health {
        status: "ok",
        store: state.boards.store().kind(),
    })
}

/// The store answers, this process's clock is within the limit of the store's, and
/// Redis keeps every key: not full, and its eviction policy is `noeviction` (or
/// `accept_eviction` is set).
#[utoipa::path(
    get, path = "/readyz", tag = "ops", operation_id = "opsReadyz",
    responses(
        (status = 200, description = "Ready", body = Health, example = json!({"status": "ready", "store": "redis"})),
        (status = 503, description = "`store_unavailable`; `clock_skew`: this process's clock is too far from the store's; `store_full`: Redis is at its memory limit and refuses writes; `eviction_policy`: Redis may evict keys", body = ErrorBody),
    )
)]
pub async fn readyz(State(state): State<AppState>) -> Result<Json<Health>, ApiError> {
    match state.max_clock_skew {
        None => state.boards.store().ping().await?,
        Some(max) => {
            // Reading the store's clock also shows that it answers.
            let skew = state.boards.clock_skew().await?;
            crate::metrics::clock_skew(skew);
            if let Some(problem) = SkewTooLarge::judge(skew, max) {
                return Err(ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    problem.code(),
                    problem.to_string(),
                ));
            }
        }
    }
    if let Some(problem) = state.boards.memory_check().await?.problem {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            problem.code(),
            problem.to_string(),
        ));
    }
    Ok(Json(Health {
        status: "ready",
        store: state.boards.store().kind(),
    }))
}

/// Prometheus metrics, text format.
#[utoipa::path(
    get, path = "/metrics", tag = "ops", operation_id = "opsMetrics",
    responses(
        (status = 200, description = "The metrics, Prometheus text format", content_type = "text/plain", body = String, example = json!(METRICS_EXAMPLE)),
        (status = 404, description = "`not_found`: metrics are not enabled in this process", body = ErrorBody),
    )
)]
pub async fn metrics(State(state): State<AppState>) -> Result<Response, ApiError> {
    let handle = state.metrics.as_ref().ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            "metrics are not enabled in this process",
        )
    })?;
    Ok((
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        crate::metrics::render(handle),
    )
        .into_response())
}

/// 404 for routes that do not exist.
pub async fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        "no such route; see /openapi.json",
    )
}

/// 405 for a route that exists with another method.
pub async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this route does not accept that method; see /openapi.json",
    )
}
