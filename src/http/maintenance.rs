//! Bulk maintenance (admin): `POST /v1/boards/{board}/members/remove` (by list or by a
//! range of totals in one window) and `POST /v1/boards/{board}/trim` (keep a window's
//! top N). Thin: parse, call [`Windowed::remove_members`](crate::Windowed::remove_members),
//! [`remove_by_score`](crate::Rollboard::remove_by_score) or
//! [`trim`](crate::Rollboard::trim), render.

use axum::extract::State;
use serde::Deserialize;

use super::AppState;
use super::auth::AdminAccess;
use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiJson, ApiPath, ApiQuery};
use super::json::Json;
use super::ranks::MemberName;
use super::wire::window;
use crate::{BulkRemoved, Error, ScoreBounds};

/// `{"members": […]}`, or `{"min_score", "max_score", "window"}`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoveBody {
    /// The members to remove, 1 to 1000, each 1–256 bytes of UTF-8 (duplicates are
    /// removed once; a member holding nothing is not counted). Not with a range.
    #[schema(min_items = 1, max_items = 1000, inline)]
    pub members: Option<Vec<MemberName>>,
    /// Remove the members ranked in `window` whose total there is at least this
    /// (inclusive; a number within ±(2^53 − 1), 0.5 meaning 1).
    #[schema(minimum = -9_007_199_254_740_991_i64, maximum = 9_007_199_254_740_991_i64)]
    pub min_score: Option<f64>,
    /// Remove the members ranked in `window` whose total there is at most this
    /// (inclusive; not below `min_score`).
    #[schema(minimum = -9_007_199_254_740_991_i64, maximum = 9_007_199_254_740_991_i64)]
    pub max_score: Option<f64>,
    /// The window whose totals the range is about (`"1h"`, `"24h"` or seconds); the
    /// board's first by default. The members selected are removed from every window.
    #[schema(pattern = r"^[0-9]*[1-9][0-9]*[smhd]?$")]
    pub window: Option<String>,
}

/// `?window=&top=`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TrimQuery {
    /// The window whose ranking is cut (`"1h"`, `"24h"` or seconds); the board's first
    /// by default.
    #[param(pattern = r"^[0-9]*[1-9][0-9]*[smhd]?$")]
    pub window: Option<String>,
    /// Members to keep: the window's top N (0 to 1,000,000,000) in the board's tie
    /// order; the ranked members below them are removed from every window.
    #[param(minimum = 0, maximum = 1_000_000_000)]
    pub top: u64,
}

/// Removes members from every slot and window: those listed, or those ranked in one
/// window whose totals there are in an inclusive range (at most 1,000 per call, highest
/// first; `more` says others matched). The selection is read at one moment and each
/// member is removed exactly while writes go on: a member written after the selection
/// is not removed, and a removed member's later events count again.
#[utoipa::path(
    post, path = "/v1/boards/{board}/members/remove", tag = "rankings", operation_id = "boardsRemoveMembers",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$")),
    request_body(content = RemoveBody, example = json!({"members": ["post:7", "post:9", "spam:1"]})),
    responses(
        (status = 200, description = "The members removed (those that held something)", body = BulkRemoved,
         example = json!({"removed": 2, "members": ["post:7", "post:9"], "more": false})),
        (status = 403, description = "`forbidden`: the token may write but not administer", body = ErrorBody),
        (status = 404, description = "`board_not_found`, `window_not_found`", body = ErrorBody),
        (status = 409, description = "`board_changed`: the board was dropped or re-created meanwhile; retry; `board_kind`: a trending board (no per-slot values to remove); `board_busy`: a max, min or latest board being recomputed (remove after)", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_member`, `invalid_span`, `invalid_query` (neither or both of a list and a range; an empty list or one over 1000; no bound; a bound out of range or min_score above max_score)", body = ErrorBody),
    ),
    security(("adminToken" = []))
)]
pub async fn remove_members(
    _: AdminAccess,
    State(state): State<AppState>,
    ApiPath(board): ApiPath<String>,
    ApiJson(body): ApiJson<RemoveBody>,
) -> ApiResult<Json<BulkRemoved>> {
    let ranged = body.min_score.is_some() || body.max_score.is_some() || body.window.is_some();
    let removed = match (body.members, ranged) {
        (Some(members), false) => {
            let members: Vec<&str> = members.iter().map(|m| m.0.as_str()).collect();
            state
                .boards
                .windowed(&board)
                .remove_members(&members)
                .await?
        }
        (None, true) => {
            let bounds = ScoreBounds {
                min: body.min_score,
                max: body.max_score,
            };
            state
                .boards
                .windowed(&board)
                .remove_by_score(window(&body.window)?, bounds)
                .await?
        }
        (Some(_), true) | (None, false) => {
            return Err(Error::InvalidQuery {
                reason: "send either \"members\" (a list) or a range (\"min_score\", \
                         \"max_score\", \"window\"), not both and not neither"
                    .into(),
            }
            .into());
        }
    };
    Ok(Json(removed))
}

/// Trims the board to a window's top N: the members ranked in that window below its top
/// `top` (ties at the cut follow the board's tie order, so exactly N stay ranked) are
/// removed from every window, at most 1,000 per call, those right below the cut first
/// (`more` says others remain: call again). Members not ranked in that window are left
/// alone. Exact while writes go on, as the removal by list.
#[utoipa::path(
    post, path = "/v1/boards/{board}/trim", tag = "rankings", operation_id = "boardsTrim",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"), TrimQuery),
    responses(
        (status = 200, description = "The members removed", body = BulkRemoved,
         example = json!({"removed": 1, "members": ["post:3"], "more": false})),
        (status = 403, description = "`forbidden`: the token may write but not administer", body = ErrorBody),
        (status = 404, description = "`board_not_found`, `window_not_found`", body = ErrorBody),
        (status = 409, description = "`board_changed`: the board was dropped or re-created meanwhile; retry; `board_kind`: a trending board; `board_busy`: a max, min or latest board being recomputed (trim after)", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_span`, `invalid_query` (top above 1,000,000,000)", body = ErrorBody),
    ),
    security(("adminToken" = []))
)]
pub async fn trim(
    _: AdminAccess,
    State(state): State<AppState>,
    ApiPath(board): ApiPath<String>,
    ApiQuery(q): ApiQuery<TrimQuery>,
) -> ApiResult<Json<BulkRemoved>> {
    let removed = state
        .boards
        .windowed(&board)
        .trim(window(&q.window)?, q.top)
        .await?;
    Ok(Json(removed))
}
