//! Rate windows over HTTP: `POST /v1/rates/{key}/hits`, `POST /v1/rates` (a batch of
//! hits of any keys), `GET /v1/rates/{key}?last=…`, `POST /v1/rates/{key}/check`,
//! `DELETE /v1/rates/{key}`. Thin: parse, call
//! [`Rollboard`](crate::Rollboard), render. Writes (hits, checks, deletes) need the
//! write token (or the admin token).

use std::collections::BTreeMap;

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use super::AppState;
use super::auth::WriteAccess;
use super::error::{ApiResult, ErrorBody, ErrorDetail};
use super::extract::{ApiJson, ApiPath, ApiQuery, OptionalJson};
use super::json::Json;
use super::json_int;
use crate::Timestamp;
use crate::rates::Coverage;
use crate::rollboard::rates::split_windows;

/// A hit: `{"count": 1, "at": 1700000000.5}`, both optional.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HitBody {
    /// How many hits, 1 to 2^32 − 1 (default 1).
    #[serde(default, deserialize_with = "json_int::opt_u64")]
    #[schema(minimum = 1, maximum = 4_294_967_295_i64)]
    pub count: Option<u64>,
    /// When, unix seconds (default now).
    #[schema(minimum = 0, maximum = 253_402_300_799_i64)]
    pub at: Option<f64>,
}

/// What a hit did.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct HitResponse {
    /// Hits counted.
    pub accepted: u64,
    /// Tiers that still held the hit's slot and counted it.
    pub tiers: usize,
}

/// A batch of hits: `{"hits": [{"key": "user:1", "count": 1, "at": 1700000000.5}, …]}`,
/// up to the batch limit (10,000 by default).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HitsBody {
    /// The hits, counted in order.
    pub hits: Vec<BatchHit>,
}

/// One hit of a batch.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchHit {
    // No bounds in the schema: a hit out of bounds is reported in `rejected` by its
    // index and the others are counted, as for the events of a batch.
    /// The rate key: 1–256 bytes of UTF-8 (else rejected: `invalid_rate_key`).
    pub key: String,
    /// How many hits, 1 to 2^32 − 1 (default 1; else rejected: `invalid_delta`).
    #[serde(default, deserialize_with = "json_int::opt_i64")]
    pub count: Option<i64>,
    /// When, unix seconds (default now; else rejected: `invalid_time`, `too_late`,
    /// `in_future`).
    pub at: Option<f64>,
}

/// What a batch of hits did.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct HitsResponse {
    /// Hits of the batch counted (each in at least one tier).
    pub accepted: usize,
    /// The hits not counted, by index, with the reason (too late, in the future, bad key
    /// or count, a counter's limit); each changed nothing.
    pub rejected: Vec<RejectedHit>,
}

/// One hit of a batch that was not counted.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RejectedHit {
    /// Its index in `hits`, from 0.
    pub index: usize,
    /// Why.
    pub error: ErrorDetail,
}

/// `?last=5s,5m&coverage=full`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LastQuery {
    /// Windows, comma-separated (default `5s,5m,5h,5d,180d`), each one a rate tier answers.
    #[param(pattern = r"^[0-9]*[1-9][0-9]*[smhd]?(,[0-9]*[1-9][0-9]*[smhd]?)*$")]
    pub last: Option<String>,
    /// Which slots each window counts: `partial` (the default: the current slot and the
    /// W/L − 1 before it, at least W − L of the past) or `full` (the current slot and the
    /// W/L before it: at least W, at most W + L); anything else is 422 `invalid_query`.
    #[param(example = "full")]
    pub coverage: Option<String>,
}

/// The coverage named by a request (`partial` when absent).
fn coverage(text: Option<&str>) -> Result<Coverage, crate::Error> {
    text.map_or(Ok(Coverage::Partial), Coverage::parse)
}

/// A key's counts.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CountsResponse {
    /// The key.
    pub key: String,
    /// When they were counted, unix seconds.
    pub at: f64,
    /// Per window asked for, its count.
    pub counts: BTreeMap<String, u64>,
}

/// A check: `{"limit": 100, "last": "1m", "count": 1}`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckBody {
    /// The most hits the window may hold, up to 2^53 − 1.
    #[serde(deserialize_with = "json_int::u64")]
    #[schema(minimum = 0, maximum = 9_007_199_254_740_991_i64)]
    pub limit: u64,
    /// The window (`"1m"`), one that a rate tier answers.
    #[schema(pattern = r"^[0-9]*[1-9][0-9]*[smhd]?$")]
    pub last: String,
    /// Hits to count if allowed, 1 to 2^32 − 1 (default 1).
    #[serde(default, deserialize_with = "json_int::opt_u64")]
    #[schema(minimum = 1, maximum = 4_294_967_295_i64)]
    pub count: Option<u64>,
    /// Which slots the window counts: `"partial"` (the default: the current slot and the
    /// W/L − 1 before it) or `"full"` (the current slot and the W/L before it, so no span
    /// of W ever admits more than `limit`; a hit may be refused up to one slot L early);
    /// anything else is 422 `invalid_query`.
    #[schema(example = "full")]
    pub coverage: Option<String>,
}

/// A check's verdict (always 200: a 429 is the caller's choice).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CheckResponse {
    /// Whether the hits were counted.
    pub allowed: bool,
    /// The window's count after the call.
    pub count: u64,
    /// The limit checked.
    pub limit: u64,
    /// Seconds until a retry could be allowed (0 when allowed, null when never).
    pub retry_after: Option<f64>,
}

/// Counts a hit of `key`.
#[utoipa::path(
    post, path = "/v1/rates/{key}/hits", tag = "rates", operation_id = "ratesHit",
    params(("key" = String, Path, description = "The key: 1–256 bytes of UTF-8", min_length = 1, max_length = 256, example = json!("login:203.0.113.7"))),
    request_body(content = Option<HitBody>, description = "Optional: an empty body is one hit now", example = json!({"count": 3})),
    responses(
        (status = 200, description = "Counted", body = HitResponse, example = json!({"accepted": 3, "tiers": 4})),
        (status = 400, description = "`bad_request`: not JSON or not the documented shape", body = ErrorBody),
        (status = 422, description = "`too_late`, `in_future`, `invalid_time`, `invalid_rate_key`, `invalid_delta` (count), `rate_overflow`", body = ErrorBody),
    ),
    security(("writeToken" = []), ("adminToken" = []))
)]
pub async fn post_hit(
    _: WriteAccess,
    State(state): State<AppState>,
    ApiPath(key): ApiPath<String>,
    OptionalJson(body): OptionalJson<HitBody>,
) -> ApiResult<Json<HitResponse>> {
    // An empty body is one hit now.
    let body = body.unwrap_or_default();
    let at = body.at.map(Timestamp::from_unix_seconds_f64).transpose()?;
    let count = body.count.unwrap_or(1);
    let tiers = state.boards.rates().hit(&key, count, at).await?;
    Ok(Json(HitResponse {
        accepted: count,
        tiers,
    }))
}

/// Counts a batch of hits of any keys (in one round trip to the store).
#[utoipa::path(
    post, path = "/v1/rates", tag = "rates", operation_id = "ratesHits",
    request_body(content = HitsBody, example = json!({"hits": [
        {"key": "login:203.0.113.7"},
        {"key": "api:user:42", "count": 5},
        {"key": "", "count": 1}
    ]})),
    responses(
        (status = 200, description = "Counted: the accepted hits, and the rejected ones by index with the reason", body = HitsResponse, example = json!({
            "accepted": 2,
            "rejected": [{"index": 2, "error": {"code": "invalid_rate_key", "message": "invalid rate key: must not be empty"}}]
        })),
        (status = 400, description = "`bad_request`: not JSON or not the documented shape", body = ErrorBody),
        (status = 413, description = "`body_too_large`, or `batch_too_large`: more hits than `max_batch`", body = ErrorBody),
    ),
    security(("writeToken" = []), ("adminToken" = []))
)]
pub async fn post_hits(
    _: WriteAccess,
    State(state): State<AppState>,
    ApiJson(body): ApiJson<HitsBody>,
) -> ApiResult<Json<HitsResponse>> {
    state
        .boards
        .settings()
        .admission()
        .check_batch(body.hits.len())?;
    let mut rejected = Vec::new();
    let mut valid = Vec::with_capacity(body.hits.len());
    let mut index_of = Vec::with_capacity(body.hits.len());
    for (index, hit) in body.hits.into_iter().enumerate() {
        match hit.at.map(Timestamp::from_unix_seconds_f64).transpose() {
            Ok(at) => {
                // Below 1 is refused by the library like 0 (`invalid_delta`).
                let count = hit.count.map_or(1, |c| u64::try_from(c).unwrap_or(0));
                valid.push((hit.key, count, at));
                index_of.push(index);
            }
            Err(e) => rejected.push(RejectedHit {
                index,
                error: (&e).into(),
            }),
        }
    }
    let statuses = state.boards.rates().hits(&valid).await?;
    let mut accepted = 0;
    for (status, index) in statuses.into_iter().zip(index_of) {
        match status {
            Ok(_) => accepted += 1,
            Err(e) => rejected.push(RejectedHit {
                index,
                error: (&e).into(),
            }),
        }
    }
    rejected.sort_by_key(|r| r.index);
    Ok(Json(HitsResponse { accepted, rejected }))
}

/// The counts of `key` over the windows of `last`.
#[utoipa::path(
    get, path = "/v1/rates/{key}", tag = "rates", operation_id = "ratesCounts",
    params(("key" = String, Path, description = "The key: 1–256 bytes of UTF-8", min_length = 1, max_length = 256, example = json!("login:203.0.113.7")), LastQuery),
    responses(
        (status = 200, description = "The counts", body = CountsResponse, example = json!({
            "key": "login:203.0.113.7",
            "at": 1_700_000_000.25,
            "counts": {"5s": 1, "5m": 4}
        })),
        (status = 422, description = "`invalid_rate_key`, `invalid_rate_window`, `invalid_query` (coverage)", body = ErrorBody),
    )
)]
pub async fn get_counts(
    State(state): State<AppState>,
    ApiPath(key): ApiPath<String>,
    ApiQuery(q): ApiQuery<LastQuery>,
) -> ApiResult<Json<CountsResponse>> {
    let coverage = coverage(q.coverage.as_deref())?;
    let windows = q.last.as_deref().map(split_windows);
    let read = state
        .boards
        .rates()
        .counts(&key, windows.as_deref(), coverage)
        .await?;
    Ok(Json(CountsResponse {
        key: read.key,
        at: read.at.unix_seconds_f64(),
        counts: read
            .counts
            .into_iter()
            .map(|(w, c)| (w.to_string(), c))
            .collect(),
    }))
}

/// Counts hits of `key` only if the window then holds at most `limit`.
#[utoipa::path(
    post, path = "/v1/rates/{key}/check", tag = "rates", operation_id = "ratesCheck",
    params(("key" = String, Path, description = "The key: 1–256 bytes of UTF-8", min_length = 1, max_length = 256, example = json!("login:203.0.113.7"))),
    request_body(content = CheckBody, example = json!({"limit": 100, "last": "1m", "count": 1, "coverage": "full"})),
    responses(
        (status = 200, description = "The verdict", body = CheckResponse, example = json!({"allowed": true, "count": 5, "limit": 100, "retry_after": 0.0})),
        (status = 400, description = "`bad_request`: not JSON or not the documented shape", body = ErrorBody),
        (status = 422, description = "`invalid_rate_key`, `invalid_rate_window`, `invalid_delta` (count), `invalid_query` (limit, coverage), `rate_overflow`", body = ErrorBody),
    ),
    security(("writeToken" = []), ("adminToken" = []))
)]
pub async fn post_check(
    _: WriteAccess,
    State(state): State<AppState>,
    ApiPath(key): ApiPath<String>,
    ApiJson(body): ApiJson<CheckBody>,
) -> ApiResult<Json<CheckResponse>> {
    let coverage = coverage(body.coverage.as_deref())?;
    let verdict = state
        .boards
        .rates()
        .check(
            &key,
            body.limit,
            &body.last,
            body.count.unwrap_or(1),
            coverage,
        )
        .await?;
    crate::metrics::rate_check(verdict.allowed);
    Ok(Json(CheckResponse {
        allowed: verdict.allowed,
        count: verdict.count,
        limit: verdict.limit,
        retry_after: verdict.retry_after.map(|d| d.as_secs_f64()),
    }))
}

/// Forgets `key`.
#[utoipa::path(
    delete, path = "/v1/rates/{key}", tag = "rates", operation_id = "ratesDelete",
    params(("key" = String, Path, description = "The key: 1–256 bytes of UTF-8", min_length = 1, max_length = 256, example = json!("login:203.0.113.7"))),
    responses(
        (status = 204, description = "Forgotten (or held nothing)"),
        (status = 422, description = "`invalid_rate_key`", body = ErrorBody),
    ),
    security(("writeToken" = []), ("adminToken" = []))
)]
pub async fn delete_key(
    _: WriteAccess,
    State(state): State<AppState>,
    ApiPath(key): ApiPath<String>,
) -> ApiResult<StatusCode> {
    state.boards.rates().delete(&key).await?;
    Ok(StatusCode::NO_CONTENT)
}
