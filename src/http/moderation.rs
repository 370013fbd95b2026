//! Moderation routes: hide a member from every ranking of a board without losing its
//! counts, and show it again. Thin: parse, call [`Windowed::hide`](crate::Windowed::hide)
//! or [`Windowed::show`](crate::Windowed::show), answer.

use axum::Json;
use axum::extract::State;
use serde::Serialize;

use super::AppState;
use super::auth::AdminAccess;
use super::error::{ApiResult, ErrorBody};
use super::extract::ApiPath;

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

/// Hides the member from every ranking of the board, in every window, before it
/// answers: it keeps counting exactly, but no top page, rank, `around`, percentile,
/// snapshot or multi-board read lists it, and the members below it move up a rank. Its
/// own member read still answers its score, with `"hidden": true` and `"rank": null`.
/// Sum boards that are not sharded.
#[utoipa::path(
    post, path = "/v1/boards/{board}/members/{member}/hide", tag = "moderation", operation_id = "boardsHideMember",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"), ("member" = String, Path, description = "The member: 1–256 bytes of UTF-8", min_length = 1, max_length = 256)),
    responses(
        (status = 200, description = "Hidden (`changed` false: it was hidden already)", body = MemberHidden,
         example = json!({"board": "hot-posts", "member": "post:7", "hidden": true, "changed": true})),
        (status = 403, description = "`forbidden`: the token may write but not administer", body = ErrorBody),
        (status = 404, description = "`board_not_found`", body = ErrorBody),
        (status = 409, description = "`board_changed`: the board was dropped or re-created meanwhile; retry; `board_kind`: a trending board; `aggregate_unsupported`: a max, min or latest board; `sharded_unsupported`: a sharded board (both: not yet)", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_member`", body = ErrorBody),
    ),
    security(("adminToken" = []))
)]
pub async fn hide(
    access: AdminAccess,
    state: State<AppState>,
    path: ApiPath<(String, String)>,
) -> ApiResult<Json<MemberHidden>> {
    set_hidden(access, state, path, true).await
}

/// Shows a hidden member again, in every window, at the rank its totals give: exactly
/// what they would be had it never been hidden.
#[utoipa::path(
    post, path = "/v1/boards/{board}/members/{member}/show", tag = "moderation", operation_id = "boardsShowMember",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"), ("member" = String, Path, description = "The member: 1–256 bytes of UTF-8", min_length = 1, max_length = 256)),
    responses(
        (status = 200, description = "Shown (`changed` false: it was not hidden)", body = MemberHidden,
         example = json!({"board": "hot-posts", "member": "post:7", "hidden": false, "changed": true})),
        (status = 403, description = "`forbidden`: the token may write but not administer", body = ErrorBody),
        (status = 404, description = "`board_not_found`", body = ErrorBody),
        (status = 409, description = "`board_changed`: the board was dropped or re-created meanwhile; retry; `board_kind`: a trending board; `aggregate_unsupported`: a max, min or latest board; `sharded_unsupported`: a sharded board (both: not yet)", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_member`", body = ErrorBody),
    ),
    security(("adminToken" = []))
)]
pub async fn show(
    access: AdminAccess,
    state: State<AppState>,
    path: ApiPath<(String, String)>,
) -> ApiResult<Json<MemberHidden>> {
    set_hidden(access, state, path, false).await
}

async fn set_hidden(
    _: AdminAccess,
    State(state): State<AppState>,
    ApiPath((board, member)): ApiPath<(String, String)>,
    hidden: bool,
) -> ApiResult<Json<MemberHidden>> {
    let windowed = state.boards.windowed(&board);
    let changed = if hidden {
        windowed.hide(&member).await?
    } else {
        windowed.show(&member).await?
    };
    Ok(Json(MemberHidden {
        board,
        member,
        hidden,
        changed,
    }))
}
