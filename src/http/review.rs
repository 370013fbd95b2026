//! Review gate routes: the members a board's gate holds, and a moderator's decision on
//! one. Thin: parse, call [`Windowed::review_queue`](crate::Windowed::review_queue) or
//! [`Windowed::review`](crate::Windowed::review), answer.

use axum::extract::State;
use serde::{Deserialize, Serialize};

use super::AppState;
use super::auth::AdminAccess;
use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiJson, ApiPath, ApiQuery};
use super::json::Json;
use super::moderation::{BOARD_PARAM, HiddenQuery};
use super::wire::window;
use crate::domain::{Decision, ModerationNote, ReviewQueue};

/// `POST /v1/boards/{board}/review`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionBody {
    /// The member decided on.
    #[schema(min_length = 1, max_length = 256, example = "post:7")]
    pub member: String,
    /// `allow`: it may rank anywhere on the board, now and later; `deny`: it is hidden on
    /// the board (as `…/members/{member}/hide` does).
    pub decision: Decision,
    /// Why (1–1,024 bytes), for the moderation log.
    #[schema(min_length = 1, max_length = 1024)]
    pub reason: Option<String>,
    /// Who (1–128 bytes), for the moderation log.
    #[schema(min_length = 1, max_length = 128)]
    pub actor: Option<String>,
}

/// What a decision did.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Decided {
    /// The board.
    pub board: String,
    /// The member.
    pub member: String,
    /// The decision.
    pub decision: Decision,
    /// Whether it changed anything (false: it was so already).
    pub changed: bool,
}

/// The board's review queue: every member its review gate (`review` in the board's
/// config) holds out of the public ranking until a moderator decides, with its value in
/// the window and the rank it would have there among the public members and itself.
#[utoipa::path(
    get, path = "/v1/boards/{board}/review", tag = "moderation", operation_id = "boardsReviewQueue",
    params(("board" = String, Path, description = BOARD_PARAM, min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"), HiddenQuery),
    responses(
        (status = 200, description = "The held members", body = ReviewQueue,
         example = json!({"board": "hot-posts", "window": "1d", "above_rank": 10, "held": [{"member": "post:9", "score": 57, "rank": 2}]})),
        (status = 400, description = "`bad_request`: a query parameter that does not parse", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token may write but not administer", body = ErrorBody),
        (status = 404, description = "`board_not_found`, `window_not_found`", body = ErrorBody),
        (status = 409, description = "`board_kind`: a trending board", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_span`", body = ErrorBody),
    ),
    security(("adminToken" = []))
)]
pub async fn queue(
    _: AdminAccess,
    State(state): State<AppState>,
    ApiPath(board): ApiPath<String>,
    ApiQuery(query): ApiQuery<HiddenQuery>,
) -> ApiResult<Json<ReviewQueue>> {
    let window = window(&query.window)?;
    let queue = state.boards.windowed(&board).review_queue(window).await?;
    Ok(Json(queue))
}

/// Decides on a member: `allow` lets it rank anywhere on the board, now and later (held,
/// it takes its place in the ranking before this answers; hidden by a moderator, it stays
/// hidden); `deny` hides it on the board. A decision is kept whether or not the board has
/// a review gate now, and logged in the moderation log.
#[utoipa::path(
    post, path = "/v1/boards/{board}/review", tag = "moderation", operation_id = "boardsReview",
    params(("board" = String, Path, description = BOARD_PARAM, min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$")),
    request_body = DecisionBody,
    responses(
        (status = 200, description = "Decided", body = Decided,
         example = json!({"board": "hot-posts", "member": "post:9", "decision": "allow", "changed": true})),
        (status = 400, description = "`bad_request`: not JSON or not the documented shape", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token may write but not administer", body = ErrorBody),
        (status = 404, description = "`board_not_found`", body = ErrorBody),
        (status = 409, description = "`board_changed`: the board was dropped or re-created meanwhile; retry; `board_kind`: a trending board; `board_busy`: a reshard of the board runs (it moves the decisions with their members); retry once it ends", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_member`, `invalid_moderation`: a bad reason or actor", body = ErrorBody),
    ),
    security(("adminToken" = []))
)]
pub async fn decide(
    _: AdminAccess,
    State(state): State<AppState>,
    ApiPath(board): ApiPath<String>,
    ApiJson(body): ApiJson<DecisionBody>,
) -> ApiResult<Json<Decided>> {
    let note = ModerationNote::new(body.reason, body.actor)?;
    let windowed = state.boards.windowed(&board);
    let changed = windowed.review(&body.member, body.decision, &note).await?;
    Ok(Json(Decided {
        board,
        member: body.member,
        decision: body.decision,
        changed,
    }))
}
