//! `/v1/counters`: increment a counter, give it precisions of its own, read its samples
//! at one precision, list and drop counters.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use super::AppState;
use super::auth::{AdminAccess, WriteAccess};
use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiJson, ApiPath, ApiQuery, OptionalJson};
use super::json::Json;
use super::json_int;
use crate::{CounterInfo, SampleQuery, Span, Timestamp};

/// The body of `POST /v1/counters/{name}`; an empty body counts 1 now.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CountBody {
    /// What to add (non-zero integer within ±(2^53 − 1)); 1 by default.
    #[serde(default, deserialize_with = "json_int::opt_i64")]
    #[schema(minimum = -9_007_199_254_740_991_i64, maximum = 9_007_199_254_740_991_i64)]
    pub count: Option<i64>,
    /// When, unix seconds (fractions allowed); now by default.
    #[schema(minimum = 0, maximum = 253_402_300_799_i64)]
    pub at: Option<f64>,
}

/// What an increment counted.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Counted {
    /// The counter.
    pub name: String,
    /// What was added at every precision.
    pub count: i64,
}

/// `?precision=&from=&to=&fill=`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SamplesQuery {
    /// A precision of the counter, in seconds (`5`) or as a duration (`5m`); the finest
    /// configured by default.
    #[param(pattern = r"^[0-9]*[1-9][0-9]*[smhd]?$")]
    pub precision: Option<String>,
    /// Only the slice holding this time (unix seconds) and later ones.
    #[param(minimum = 0, maximum = 253_402_300_799_i64)]
    pub from: Option<f64>,
    /// Only the slice holding this time (unix seconds) and earlier ones.
    #[param(minimum = 0, maximum = 253_402_300_799_i64)]
    pub to: Option<f64>,
    /// `true`: answer empty slices with a zero count, up to the current slice.
    #[serde(default)]
    pub fill: bool,
}

/// A counter's samples at one precision. Named `CounterSamples` in the contract: a
/// schema named as one of its own fields breaks clients generated for Python.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = CounterSamples)]
pub struct Samples {
    /// The counter.
    pub name: String,
    /// The precision, in seconds.
    pub precision: u64,
    /// `[slice_start, count]` pairs, oldest first.
    #[schema(value_type = Vec<Vec<i64>>)]
    pub samples: Vec<(i64, i64)>,
    /// The start of the current, still-open slice when `samples` holds it, else null.
    pub open: Option<i64>,
}

/// The body of `PUT /v1/counters/{name}`: `{"precisions": [1, "5m", "1h"]}` (seconds or
/// durations), or `{"precisions": null}` to go back to the global ones.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PrecisionsBody {
    /// 1 to 16 distinct precisions, each in seconds (`5`) or as a duration (`"5m"`).
    pub precisions: Option<Vec<PrecisionIn>>,
}

/// A precision as sent: seconds or a duration.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum PrecisionIn {
    /// Whole seconds.
    Seconds(#[serde(deserialize_with = "json_int::u64")] u64),
    /// A duration, `"5m"`.
    Text(String),
}

/// The precisions a counter counts at from now on.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CounterConfig {
    /// The counter.
    pub name: String,
    /// Its precisions, in seconds, finest first.
    pub precisions: Vec<u64>,
}

/// `GET /v1/counters`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CounterList {
    /// Every counter, by name.
    pub counters: Vec<CounterInfo>,
}

fn time(seconds: Option<f64>) -> crate::Result<Option<Timestamp>> {
    seconds.map(Timestamp::from_unix_seconds_f64).transpose()
}

/// Adds `count` (default 1) at `at` (default now) to every precision of the counter,
/// atomically; a counter not seen before starts here.
#[utoipa::path(
    post, path = "/v1/counters/{name}", tag = "counters", operation_id = "countersIncr",
    params(("name" = String, Path, description = "The counter: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$", example = json!("signups"))),
    request_body(content = Option<CountBody>, description = "Optional: an empty body counts 1 now", example = json!({"count": 2})),
    responses(
        (status = 200, description = "Counted", body = Counted, example = json!({"name": "signups", "count": 2})),
        (status = 400, description = "`bad_request`: not JSON or not the documented shape", body = ErrorBody),
        (status = 422, description = "`invalid_counter_name`, `invalid_delta`, `invalid_time`, `too_late`, `in_future`", body = ErrorBody),
    ),
    security(("writeToken" = []), ("adminToken" = []))
)]
pub async fn post_count(
    _: WriteAccess,
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    OptionalJson(body): OptionalJson<CountBody>,
) -> ApiResult<Json<Counted>> {
    let body = body.unwrap_or_default();
    let count = body.count.unwrap_or(1);
    state
        .boards
        .counters()
        .incr(&name, count, time(body.at)?)
        .await?;
    crate::metrics::counter_increment();
    Ok(Json(Counted { name, count }))
}

/// Gives the counter precisions of its own, used by every later increment (or, with
/// `null`, takes them away: the global ones apply again).
#[utoipa::path(
    put, path = "/v1/counters/{name}", tag = "counters", operation_id = "countersConfigure",
    params(("name" = String, Path, description = "The counter: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$", example = json!("signups"))),
    request_body(content = PrecisionsBody, example = json!({"precisions": [10, "1m", "1h"]})),
    responses(
        (status = 200, description = "The precisions the counter counts at from now on", body = CounterConfig, example = json!({"name": "signups", "precisions": [10, 60, 3600]})),
        (status = 400, description = "`bad_request`: not JSON or not the documented shape", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token may write but not administer", body = ErrorBody),
        (status = 422, description = "`invalid_counter_name`, `invalid_span` (a precision), `invalid_config` (none, too many, or repeated)", body = ErrorBody),
    ),
    security(("adminToken" = []))
)]
pub async fn put_config(
    _: AdminAccess,
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    ApiJson(body): ApiJson<PrecisionsBody>,
) -> ApiResult<Json<CounterConfig>> {
    let precisions = body
        .precisions
        .map(|list| {
            list.into_iter()
                .map(|p| match p {
                    PrecisionIn::Seconds(s) => Span::from_seconds(s),
                    PrecisionIn::Text(t) => Span::parse(&t),
                })
                .collect::<crate::Result<Vec<Span>>>()
        })
        .transpose()?;
    let set = state
        .boards
        .counters()
        .set_precisions(&name, precisions.as_deref())
        .await?;
    Ok(Json(CounterConfig {
        name,
        precisions: set.iter().map(|p| p.seconds()).collect(),
    }))
}

/// The counter's samples at one precision, oldest first.
#[utoipa::path(
    get, path = "/v1/counters/{name}", tag = "counters", operation_id = "countersSamples",
    params(("name" = String, Path, description = "The counter: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$", example = json!("signups")), SamplesQuery),
    responses(
        (status = 200, description = "The samples", body = Samples, example = json!({
            "name": "signups",
            "precision": 5,
            "samples": [[1_700_000_000, 4], [1_700_000_005, 0], [1_700_000_010, 1]],
            "open": 1_700_000_010
        })),
        (status = 404, description = "`counter_not_found`, `precision_not_found`", body = ErrorBody),
        (status = 422, description = "`invalid_counter_name`, `invalid_span`, `invalid_time`, `invalid_query` (from after to, too many slices to fill)", body = ErrorBody),
    )
)]
pub async fn get_samples(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    ApiQuery(q): ApiQuery<SamplesQuery>,
) -> ApiResult<Json<Samples>> {
    let precision = match q.precision.as_deref() {
        Some(text) => Span::parse(text)?,
        None => state.boards.counters().precisions_in_effect(&name).await?[0],
    };
    let query = SampleQuery {
        from: time(q.from)?,
        to: time(q.to)?,
        fill_gaps: q.fill,
    };
    let samples = state
        .boards
        .counters()
        .samples(&name, precision, query)
        .await?;
    Ok(Json(Samples {
        name,
        precision: precision.seconds(),
        open: samples.iter().find(|s| s.open).map(|s| s.slice_start),
        samples: samples.iter().map(|s| (s.slice_start, s.count)).collect(),
    }))
}

/// Every counter and its precisions.
#[utoipa::path(
    get, path = "/v1/counters", tag = "counters", operation_id = "countersList",
    responses((status = 200, description = "Every counter", body = CounterList, example = json!({"counters": [
        {"name": "signups", "precisions": ["10s", "1m", "1h"]},
        {"name": "logins", "precisions": ["1s", "5s", "1m", "5m", "1h", "5h", "1d"]}
    ]})))
)]
pub async fn list_counters(State(state): State<AppState>) -> ApiResult<Json<CounterList>> {
    Ok(Json(CounterList {
        counters: state.boards.counters().list().await?,
    }))
}

/// Deletes a counter and its samples.
#[utoipa::path(
    delete, path = "/v1/counters/{name}", tag = "counters", operation_id = "countersDelete",
    params(("name" = String, Path, description = "The counter: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$", example = json!("signups"))),
    responses(
        (status = 204, description = "Dropped"),
        (status = 403, description = "`forbidden`: the token may write but not administer", body = ErrorBody),
        (status = 404, description = "`counter_not_found`", body = ErrorBody),
        (status = 422, description = "`invalid_counter_name`", body = ErrorBody),
    ),
    security(("adminToken" = []))
)]
pub async fn delete_counter(
    _: AdminAccess,
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<StatusCode> {
    state.boards.counters().delete(&name).await?;
    Ok(StatusCode::NO_CONTENT)
}
