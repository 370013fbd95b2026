//! `/v1/stats`: record a value, read a (context, kind)'s current and previous hour, and
//! a kind's slowest contexts. A context holding `/` is percent-encoded within its one
//! path segment: `/v1/stats/%2Fv1%2Fcounters%2F%7Bname%7D/AccessTime`.

use axum::extract::State;
use serde::{Deserialize, Serialize};

use super::AppState;
use super::auth::WriteAccess;
use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiJson, ApiPath, ApiQuery};
use super::json::Json;
use crate::{ContextStats, SlowEntry};

/// The body of `POST /v1/stats/{context}/{kind}`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ValueBody {
    /// The value (a finite number), e.g. a duration in seconds.
    pub value: f64,
}

/// What was recorded.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Recorded {
    /// The context.
    pub context: String,
    /// The kind.
    pub kind: String,
    /// The value.
    pub value: f64,
}

/// `?kind=&limit=`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SlowestQuery {
    /// The kind (default `AccessTime`).
    #[param(
        min_length = 1,
        max_length = 64,
        pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"
    )]
    pub kind: Option<String>,
    /// Entries, 1–100 (default 10).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<usize>,
}

/// `GET /v1/stats/slowest`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Slowest {
    /// The kind.
    pub kind: String,
    /// Contexts by the mean of their newest hour, highest first.
    pub entries: Vec<SlowEntry>,
}

/// Records one value of `kind` in `context` for the current hour.
#[utoipa::path(
    post, path = "/v1/stats/{context}/{kind}", tag = "stats", operation_id = "statsRecord",
    params(("context" = String, Path, description = "Any text of 1–256 bytes without control characters; percent-encode `/` (`%2F`)", min_length = 1, max_length = 256, pattern = r"^[^\u0000-\u001f\u007f-\u009f]+$", example = json!("/v1/checkout")), ("kind" = String, Path, description = "1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$", example = json!("Latency"))),
    request_body(content = ValueBody, example = json!({"value": 0.25})),
    responses(
        (status = 200, description = "Recorded", body = Recorded, example = json!({"context": "/v1/checkout", "kind": "Latency", "value": 0.25})),
        (status = 400, description = "`bad_request`: not JSON or not the documented shape", body = ErrorBody),
        (status = 422, description = "`invalid_query`: a bad context or kind", body = ErrorBody),
    ),
    security(("writeToken" = []), ("adminToken" = []))
)]
pub async fn post_value(
    _: WriteAccess,
    State(state): State<AppState>,
    ApiPath((context, kind)): ApiPath<(String, String)>,
    ApiJson(body): ApiJson<ValueBody>,
) -> ApiResult<Json<Recorded>> {
    state
        .boards
        .stats()
        .record(&context, &kind, body.value)
        .await?;
    crate::metrics::stats_record();
    Ok(Json(Recorded {
        context,
        kind,
        value: body.value,
    }))
}

/// Count, sum, min, max, mean, sample stddev and p50/p95/p99 (within 2 %) of the
/// current and the previous hour.
#[utoipa::path(
    get, path = "/v1/stats/{context}/{kind}", tag = "stats", operation_id = "statsGet",
    params(("context" = String, Path, description = "Any text of 1–256 bytes without control characters; percent-encode `/` (`%2F`)", min_length = 1, max_length = 256, pattern = r"^[^\u0000-\u001f\u007f-\u009f]+$", example = json!("/v1/checkout")), ("kind" = String, Path, description = "1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$", example = json!("Latency"))),
    responses(
        (status = 200, description = "The statistics", body = ContextStats, example = json!({
            "context": "/v1/checkout",
            "kind": "Latency",
            "current": {"hour": 1_700_002_800, "count": 2, "sum": 1.0, "min": 0.25, "max": 0.75, "mean": 0.5, "stddev": 0.3535533905932738, "p50": 0.7406404088969122, "p95": 0.7406404088969122, "p99": 0.7406404088969122},
            "previous": null
        })),
        (status = 404, description = "`stats_not_found`: nothing recorded this hour or the previous one", body = ErrorBody),
        (status = 422, description = "`invalid_query`: a bad context or kind", body = ErrorBody),
    )
)]
pub async fn get_stats(
    State(state): State<AppState>,
    ApiPath((context, kind)): ApiPath<(String, String)>,
) -> ApiResult<Json<ContextStats>> {
    Ok(Json(state.boards.stats().read(&context, &kind).await?))
}

/// The contexts of a kind with the highest mean (the service records its own routes'
/// `AccessTime`).
#[utoipa::path(
    get, path = "/v1/stats/slowest", tag = "stats", operation_id = "statsSlowest",
    params(SlowestQuery),
    responses(
        (status = 200, description = "The slowest contexts", body = Slowest, example = json!({"kind": "AccessTime", "entries": [
            {"context": "/v1/boards/{board}/top", "mean": 0.0042, "count": 120},
            {"context": "/v1/counters/{name}", "mean": 0.0011, "count": 37}
        ]})),
        (status = 422, description = "`invalid_query`: a bad kind or limit", body = ErrorBody),
    )
)]
pub async fn slowest(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<SlowestQuery>,
) -> ApiResult<Json<Slowest>> {
    let kind = q
        .kind
        .unwrap_or_else(|| super::access_time::ACCESS_TIME.to_owned());
    let entries = state
        .boards
        .stats()
        .slowest(&kind, q.limit.unwrap_or(10))
        .await?;
    Ok(Json(Slowest { kind, entries }))
}
