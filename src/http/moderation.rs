//! Moderation routes: hide a member from the rankings without losing its counts and show
//! it again, on one board, on a list of boards or on every board, and read the
//! moderation log. Thin: parse, call the library
//! ([`Windowed::hide`](crate::Windowed::hide), [`Rollboard::hide_member`](crate::Rollboard::hide_member),
//! [`Rollboard::moderation_log`](crate::Rollboard::moderation_log), …), answer.

use axum::extract::State;
use serde::{Deserialize, Serialize};

use super::AppState;
use super::auth::AdminAccess;
use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiPath, ApiQuery, OptionalJson};
use super::json::Json;
use super::wire::window;
use crate::domain::{HiddenMembers, LogEntry, Moderated, ModerationNote};

/// Why and by whom, kept in the moderation log; an empty body says neither.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NoteBody {
    /// Why (1–1,024 bytes).
    #[schema(min_length = 1, max_length = 1024, example = "spam, reported 3 times")]
    pub reason: Option<String>,
    /// Who, as your application names them (1–128 bytes).
    #[schema(min_length = 1, max_length = 128, example = "mod:alice")]
    pub actor: Option<String>,
}

impl NoteBody {
    fn note(self) -> crate::Result<ModerationNote> {
        ModerationNote::new(self.reason, self.actor)
    }
}

/// Where to hide or show a member, why and by whom; an empty body: on every board.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MemberModerationBody {
    /// The boards (1–1,000, each existing); left out: every board, boards created later
    /// included.
    #[schema(min_items = 1, max_items = 1000)]
    pub boards: Option<Vec<String>>,
    /// Why (1–1,024 bytes).
    #[schema(min_length = 1, max_length = 1024)]
    pub reason: Option<String>,
    /// Who (1–128 bytes).
    #[schema(min_length = 1, max_length = 128)]
    pub actor: Option<String>,
}

/// Whether a member is hidden now, and whether the call changed it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct MemberHidden {
    /// The board.
    pub board: String,
    /// The member.
    pub member: String,
    /// Whether it is hidden now.
    pub hidden: bool,
    /// Whether this call changed it (false: it already was so).
    pub changed: bool,
}

/// `GET /v1/moderation/log` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LogQuery {
    /// Entries older than this id only (the `next` of the page before).
    pub before: Option<String>,
    /// Entries to answer, 1–1000 (100 by default).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<usize>,
}

/// A page of the moderation log, newest first.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct LogPage {
    /// The entries, newest first.
    pub entries: Vec<LogEntry>,
    /// The `before` of the next page (older entries); absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// The members hidden on every board.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct HiddenEverywhere {
    /// The members, in byte order.
    pub members: Vec<String>,
}

pub(super) const BOARD_PARAM: &str =
    "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots";

/// Hides the member from every ranking of the board, in every window, before it
/// answers: it keeps counting exactly, but no top page, rank, `around`, percentile,
/// snapshot or multi-board read lists it, and the members below it move up a rank. Its
/// own member read still answers its score, with `"hidden": true` and `"rank": null`.
/// Kept in the moderation log with the body's reason and actor. Boards of every
/// aggregate, sharded or not (409 `board_busy` while a reshard runs).
#[utoipa::path(
    post, path = "/v1/boards/{board}/members/{member}/hide", tag = "moderation", operation_id = "boardsHideMember",
    params(("board" = String, Path, description = BOARD_PARAM, min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"), ("member" = String, Path, description = "The member: 1–256 bytes of UTF-8", min_length = 1, max_length = 256)),
    request_body(content = Option<NoteBody>, description = "Optional: why and by whom", example = json!({"reason": "spam, reported 3 times", "actor": "mod:alice"})),
    responses(
        (status = 200, description = "Hidden (`changed` false: it was hidden already)", body = MemberHidden,
         example = json!({"board": "hot-posts", "member": "post:7", "hidden": true, "changed": true})),
        (status = 400, description = "`bad_request`: not JSON or not the documented shape", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token may write but not administer", body = ErrorBody),
        (status = 404, description = "`board_not_found`", body = ErrorBody),
        (status = 409, description = "`board_changed`: the board was dropped or re-created meanwhile; retry; `board_kind`: a trending board; `board_busy`: a reshard of the board runs; retry when it ends", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_member`, `invalid_moderation`", body = ErrorBody),
    ),
    security(("adminToken" = []))
)]
pub async fn hide(
    access: AdminAccess,
    state: State<AppState>,
    path: ApiPath<(String, String)>,
    body: OptionalJson<NoteBody>,
) -> ApiResult<Json<MemberHidden>> {
    set_hidden(access, state, path, body, true).await
}

/// Shows a hidden member again, in every window, at the rank its totals give: exactly
/// what they would be had it never been hidden. A member hidden on every board is shown
/// by `POST /v1/members/{member}/show` only (409 `hidden_everywhere`).
#[utoipa::path(
    post, path = "/v1/boards/{board}/members/{member}/show", tag = "moderation", operation_id = "boardsShowMember",
    params(("board" = String, Path, description = BOARD_PARAM, min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"), ("member" = String, Path, description = "The member: 1–256 bytes of UTF-8", min_length = 1, max_length = 256)),
    request_body(content = Option<NoteBody>, description = "Optional: why and by whom", example = json!({"reason": "appeal granted", "actor": "mod:bob"})),
    responses(
        (status = 200, description = "Shown (`changed` false: it was not hidden)", body = MemberHidden,
         example = json!({"board": "hot-posts", "member": "post:7", "hidden": false, "changed": true})),
        (status = 400, description = "`bad_request`: not JSON or not the documented shape", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token may write but not administer", body = ErrorBody),
        (status = 404, description = "`board_not_found`", body = ErrorBody),
        (status = 409, description = "`board_changed`: the board was dropped or re-created meanwhile; retry; `board_kind`: a trending board; `board_busy`: a reshard of the board runs; retry when it ends; `hidden_everywhere`: the member is hidden on every board", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_member`, `invalid_moderation`", body = ErrorBody),
    ),
    security(("adminToken" = []))
)]
pub async fn show(
    access: AdminAccess,
    state: State<AppState>,
    path: ApiPath<(String, String)>,
    body: OptionalJson<NoteBody>,
) -> ApiResult<Json<MemberHidden>> {
    set_hidden(access, state, path, body, false).await
}

async fn set_hidden(
    _: AdminAccess,
    State(state): State<AppState>,
    ApiPath((board, member)): ApiPath<(String, String)>,
    OptionalJson(body): OptionalJson<NoteBody>,
    hidden: bool,
) -> ApiResult<Json<MemberHidden>> {
    let note = body.unwrap_or_default().note()?;
    let windowed = state.boards.windowed(&board);
    let changed = if hidden {
        windowed.hide(&member, &note).await?
    } else {
        windowed.show(&member, &note).await?
    };
    Ok(Json(MemberHidden {
        board,
        member,
        hidden,
        changed,
    }))
}

/// Hides the member on each board of `boards`, or, without `boards`, on every board and
/// on every board created later, each board as `POST
/// /v1/boards/{board}/members/{member}/hide` does, before it answers. Boards whose kind
/// cannot hide members yet are listed in `skipped`. One entry in the moderation log.
#[utoipa::path(
    post, path = "/v1/members/{member}/hide", tag = "moderation", operation_id = "membersHide",
    params(("member" = String, Path, description = "The member: 1–256 bytes of UTF-8", min_length = 1, max_length = 256)),
    request_body(content = Option<MemberModerationBody>, description = "Optional: the boards (every board without), why and by whom", example = json!({"reason": "spam bot", "actor": "mod:alice"})),
    responses(
        (status = 200, description = "Hidden", body = Moderated,
         example = json!({"member": "post:7", "hidden": true, "every_board": true, "boards": 3, "changed": 3, "skipped": []})),
        (status = 400, description = "`bad_request`: not JSON or not the documented shape", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token may write but not administer", body = ErrorBody),
        (status = 404, description = "`board_not_found`: a board of `boards`", body = ErrorBody),
        (status = 409, description = "`board_changed`: a board was dropped or re-created meanwhile; retry", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_member`, `invalid_moderation`", body = ErrorBody),
    ),
    security(("adminToken" = []))
)]
pub async fn hide_member(
    access: AdminAccess,
    state: State<AppState>,
    path: ApiPath<String>,
    body: OptionalJson<MemberModerationBody>,
) -> ApiResult<Json<Moderated>> {
    set_member_hidden(access, state, path, body, true).await
}

/// Shows the member again on each board of `boards`, or, without `boards`, on every
/// board (and boards created later no longer hide it). A member hidden on every board is
/// shown on every board only (409 `hidden_everywhere` with `boards`). One entry in the
/// moderation log.
#[utoipa::path(
    post, path = "/v1/members/{member}/show", tag = "moderation", operation_id = "membersShow",
    params(("member" = String, Path, description = "The member: 1–256 bytes of UTF-8", min_length = 1, max_length = 256)),
    request_body(content = Option<MemberModerationBody>, description = "Optional: the boards (every board without), why and by whom", example = json!({"reason": "appeal granted"})),
    responses(
        (status = 200, description = "Shown", body = Moderated,
         example = json!({"member": "post:7", "hidden": false, "every_board": true, "boards": 3, "changed": 3, "skipped": []})),
        (status = 400, description = "`bad_request`: not JSON or not the documented shape", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token may write but not administer", body = ErrorBody),
        (status = 404, description = "`board_not_found`: a board of `boards`", body = ErrorBody),
        (status = 409, description = "`board_changed`: a board was dropped or re-created meanwhile; retry; `hidden_everywhere`: `boards` named for a member hidden on every board", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_member`, `invalid_moderation`", body = ErrorBody),
    ),
    security(("adminToken" = []))
)]
pub async fn show_member(
    access: AdminAccess,
    state: State<AppState>,
    path: ApiPath<String>,
    body: OptionalJson<MemberModerationBody>,
) -> ApiResult<Json<Moderated>> {
    set_member_hidden(access, state, path, body, false).await
}

async fn set_member_hidden(
    _: AdminAccess,
    State(state): State<AppState>,
    ApiPath(member): ApiPath<String>,
    OptionalJson(body): OptionalJson<MemberModerationBody>,
    hidden: bool,
) -> ApiResult<Json<Moderated>> {
    let body = body.unwrap_or_default();
    let note = ModerationNote::new(body.reason, body.actor)?;
    let boards = body.boards.as_deref();
    let moderated = if hidden {
        state.boards.hide_member(&member, boards, &note).await?
    } else {
        state.boards.show_member(&member, boards, &note).await?
    };
    Ok(Json(moderated))
}

/// `GET /v1/boards/{board}/hidden` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct HiddenQuery {
    /// A window of the board (`"1h"`, `"24h"` or seconds); the board's first by default.
    #[param(pattern = r"^[0-9]*[1-9][0-9]*[smhd]?$")]
    pub window: Option<String>,
}

/// Every member the board hides, with its value in the window (0 when it holds none),
/// in the board's ranking order: what a moderator reviews before showing one again.
#[utoipa::path(
    get, path = "/v1/boards/{board}/hidden", tag = "moderation", operation_id = "boardsHidden",
    params(("board" = String, Path, description = BOARD_PARAM, min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"), HiddenQuery),
    responses(
        (status = 200, description = "The hidden members", body = HiddenMembers,
         example = json!({"board": "hot-posts", "window": "1d", "members": [{"member": "post:7", "score": 41}]})),
        (status = 400, description = "`bad_request`: a query parameter that does not parse", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token may write but not administer", body = ErrorBody),
        (status = 404, description = "`board_not_found`, `window_not_found`", body = ErrorBody),
        (status = 409, description = "`board_kind`: a trending board", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_span`", body = ErrorBody),
    ),
    security(("adminToken" = []))
)]
pub async fn board_hidden(
    _: AdminAccess,
    State(state): State<AppState>,
    ApiPath(board): ApiPath<String>,
    ApiQuery(query): ApiQuery<HiddenQuery>,
) -> ApiResult<Json<HiddenMembers>> {
    let window = window(&query.window)?;
    let hidden = state.boards.windowed(&board).hidden_members(window).await?;
    Ok(Json(hidden))
}

/// The members hidden on every board (`POST /v1/members/{member}/hide` without
/// `boards`), which boards created later hide too.
#[utoipa::path(
    get, path = "/v1/moderation/hidden", tag = "moderation", operation_id = "moderationHidden",
    responses(
        (status = 200, description = "The members", body = HiddenEverywhere, example = json!({"members": ["post:7"]})),
        (status = 403, description = "`forbidden`: the token may write but not administer", body = ErrorBody),
    ),
    security(("adminToken" = []))
)]
pub async fn hidden(
    _: AdminAccess,
    State(state): State<AppState>,
) -> ApiResult<Json<HiddenEverywhere>> {
    let members = state.boards.hidden_everywhere().await?;
    Ok(Json(HiddenEverywhere { members }))
}

/// The moderation log, newest first: every hide and show, where, when, why and by whom
/// (the newest 100,000 entries are kept). Page on with `before` = the answer's `next`.
#[utoipa::path(
    get, path = "/v1/moderation/log", tag = "moderation", operation_id = "moderationLog",
    params(LogQuery),
    responses(
        (status = 200, description = "A page of the log", body = LogPage,
         example = json!({"entries": [{"id": "1764770400000-0", "at": 1764770400.0, "action": "hide", "member": "post:7", "boards": ["hot-posts"], "changed": 1, "reason": "spam", "actor": "mod:alice"}]})),
        (status = 400, description = "`bad_request`: a query parameter that does not parse", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token may write but not administer", body = ErrorBody),
        (status = 422, description = "`invalid_query`: `limit` out of range, or `before` not an id", body = ErrorBody),
    ),
    security(("adminToken" = []))
)]
pub async fn log(
    _: AdminAccess,
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<LogQuery>,
) -> ApiResult<Json<LogPage>> {
    let limit = query.limit.unwrap_or(100);
    let entries = state
        .boards
        .moderation_log(query.before.as_deref(), limit)
        .await?;
    let next = (entries.len() == limit)
        .then(|| entries.last().map(|e| e.id.clone()))
        .flatten();
    Ok(Json(LogPage { entries, next }))
}
