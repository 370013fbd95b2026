//! `POST /v1/contributors/{by}/retract`: takes back a contributor's contributions (a
//! brigade's votes) from every window of every board keeping contributors, or of the
//! boards named; answers 200 once done within `wait_ms`, else 202 with its progress and
//! a `Location` to poll, `GET /v1/contributors/{by}/retract`. Admin only. Thin: parse,
//! call [`Rollboard::start_retraction`](crate::Rollboard::start_retraction) or
//! [`Rollboard::retraction`](crate::Rollboard::retraction), answer.

use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Deserialize;

use super::AppState;
use super::auth::AdminAccess;
use super::contributors::BY_PARAM;
use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiPath, OptionalJson};
use super::json::Json;
use super::json_int;
use crate::domain::Timestamp;
use crate::error::Error;
use crate::{Retraction, RetractionState};

/// The longest `wait_ms`.
const MAX_WAIT_MS: u64 = 10_000;

/// What to take back; an empty body: every contribution on every board.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RetractBody {
    /// Take back only the contributions from the slot holding this instant on (unix
    /// seconds, fractions allowed; each board's slot: the finest grain contributions
    /// are kept at); every contribution still inside a window when absent.
    #[schema(minimum = 0, maximum = 253_402_300_799_i64)]
    pub since: Option<f64>,
    /// The boards (1–20 distinct, each keeping contributors); every board keeping
    /// contributors when absent.
    #[schema(min_items = 1, max_items = 20)]
    pub boards: Option<Vec<String>>,
    /// How long to wait for it to finish before answering 202 (0–10000 ms; 1000 by
    /// default; 0: answer 202 at once).
    #[schema(minimum = 0, maximum = 10000)]
    #[serde(default, deserialize_with = "json_int::opt_u64")]
    pub wait_ms: Option<u64>,
}

/// Takes back every contribution of `by` (an event's `by`) still inside a window of each
/// board keeping contributors (`per_contributor_member`, `per_contributor`), or of the
/// boards named: every window, every member's total and what the caps counted become
/// what they would be had those events never been written, and the budget they used is
/// given back. In bounded steps (no store call holds Redis for more than ~2 ms) while
/// writes go on; a contribution written while it runs may stay (run it again). Answers
/// 200 once done within `wait_ms`; else 202 with its progress and `Location` to poll.
/// Cut short (a crash, `failed`), running it again finishes it: what it took back is
/// gone. Running the same retraction again while it runs joins it.
#[utoipa::path(
    post, path = "/v1/contributors/{by}/retract", tag = "contributors", operation_id = "contributorsRetract",
    params(("by" = String, Path, description = BY_PARAM, min_length = 1, max_length = 128)),
    request_body(content = Option<RetractBody>, description = "Optional: from when, which boards, how long to wait", example = json!({"since": 1_795_726_800, "boards": ["forum-likes"]})),
    responses(
        (status = 200, description = "Done: what it took back", body = Retraction,
         example = json!({"by": "user:7", "state": "done", "boards": 2, "boards_left": 0, "contributions": 41, "events": 43})),
        (status = 202, description = "Running (or done just after the wait): its progress; poll `Location`", body = Retraction,
         headers(("Location" = String, description = "`/v1/contributors/{by}/retract`, to poll")),
         example = json!({"by": "user:7", "state": "running", "boards": 1, "boards_left": 3, "contributions": 2100, "events": 2210})),
        (status = 400, description = "`bad_request`: not JSON or not the documented shape", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token may read or write but not administer", body = ErrorBody),
        (status = 404, description = "`board_not_found`: a board of `boards`", body = ErrorBody),
        (status = 409, description = "`board_changed`: a board was dropped or re-created meanwhile; retry; `board_kind`: a board of `boards` is a trending board", body = ErrorBody),
        (status = 422, description = "`invalid_contributor`; `invalid_board_name`; `invalid_time`: `since` outside 1970–9999; `invalid_query`: a board of `boards` without `per_contributor_member` or `per_contributor`, more than 20 boards or one named twice, or `wait_ms` over 10000", body = ErrorBody),
    ),
    security(("adminToken" = []))
)]
pub async fn retract(
    _: AdminAccess,
    State(state): State<AppState>,
    ApiPath(by): ApiPath<String>,
    OptionalJson(body): OptionalJson<RetractBody>,
) -> ApiResult<Response> {
    let body = body.unwrap_or_default();
    let since = body
        .since
        .map(Timestamp::from_unix_seconds_f64)
        .transpose()?;
    let wait = body.wait_ms.unwrap_or(1_000);
    if wait > MAX_WAIT_MS {
        return Err(Error::InvalidQuery {
            reason: format!("wait_ms must be 0 to {MAX_WAIT_MS}, got {wait}"),
        }
        .into());
    }
    let boards = body.boards.as_deref();
    let wait = Duration::from_millis(wait);
    let progress = state
        .boards
        .start_retraction(&by, since, boards, wait)
        .await?;
    if !wait.is_zero() && progress.state != RetractionState::Running {
        return Ok(Json(progress).into_response());
    }
    let mut response = (StatusCode::ACCEPTED, Json(progress)).into_response();
    let by = utf8_percent_encode(&by, NON_ALPHANUMERIC);
    let location = format!("/v1/contributors/{by}/retract");
    if let Ok(value) = HeaderValue::from_str(&location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    Ok(response)
}

/// The progress of the last retraction of `by` this replica started (the one a 202
/// pointed to): `running`, `done` with what it took back, or `failed` (run it again).
#[utoipa::path(
    get, path = "/v1/contributors/{by}/retract", tag = "contributors", operation_id = "contributorsRetraction",
    params(("by" = String, Path, description = BY_PARAM, min_length = 1, max_length = 128)),
    responses(
        (status = 200, description = "Its progress", body = Retraction,
         example = json!({"by": "user:7", "state": "done", "boards": 4, "boards_left": 0, "contributions": 10000, "events": 10000})),
        (status = 403, description = "`forbidden`: the token may read or write but not administer", body = ErrorBody),
        (status = 404, description = "`retraction_not_found`: none of `by` ran on this replica since it started", body = ErrorBody),
        (status = 422, description = "`invalid_contributor`", body = ErrorBody),
    ),
    security(("adminToken" = []))
)]
pub async fn retraction(
    _: AdminAccess,
    State(state): State<AppState>,
    ApiPath(by): ApiPath<String>,
) -> ApiResult<Json<Retraction>> {
    Ok(Json(state.boards.retraction(&by)?))
}
