//! `GET /v1/contributors/{by}`: what one contributor (an event's `by`) gave on the boards
//! that keep contributors, window by window, with what of it counts under each board's
//! `per_contributor_member` and `per_contributor`; `GET
//! /v1/boards/{board}/members/{member}/contributors`: who gave to one member. Admin only
//! (they show who liked what). Thin: parse, call
//! [`Rollboard::contributions`](crate::Rollboard::contributions) or
//! [`Rollboard::member_contributors`](crate::Rollboard::member_contributors), answer.

use axum::extract::State;
use serde::Deserialize;

use super::AppState;
use super::auth::AdminAccess;
use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiPath, ApiQuery};
use super::json::Json;
use crate::{ContributorView, MemberContributors};

/// The `{by}` path parameter's description.
pub(super) const BY_PARAM: &str =
    "The contributor, as sent in events' `by`: 1–128 bytes of UTF-8, no control characters";

/// `?boards=a,b`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ContributorsQuery {
    /// The boards, comma-separated, 1 to 20 distinct names, each keeping contributors;
    /// every board keeping contributors when absent.
    #[param(pattern = r"^[^,]+(,[^,]+)*$")]
    pub boards: Option<String>,
}

/// What the contributor gave inside each window of each board keeping contributors
/// (`per_contributor_member`, `per_contributor`), or of the boards named: per member, the
/// sum of its deltas (`contributed`) and what of it counts in the member's total
/// (`counted`: the part the budget admitted, clamped to the board's cap), highest
/// `contributed` first; each window's sums.
/// Boards in name order (or as named), windows smallest first.
#[utoipa::path(
    get, path = "/v1/contributors/{by}", tag = "contributors", operation_id = "contributorsGet",
    params(("by" = String, Path, description = BY_PARAM, min_length = 1, max_length = 128), ContributorsQuery),
    responses(
        (status = 200, description = "What the contributor gave, board by board", body = ContributorView,
         example = json!({"by": "user:7", "boards": [{"board": "forum-likes", "windows": [
             {"window": "1h", "contributed": 1, "counted": 1, "members": [{"member": "post:1", "contributed": 1, "counted": 1}]},
             {"window": "1d", "contributed": 4, "counted": 2, "members": [{"member": "post:1", "contributed": 3, "counted": 1}, {"member": "post:2", "contributed": 1, "counted": 1}]}]}]})),
        (status = 403, description = "`forbidden`: the token may read or write but not administer", body = ErrorBody),
        (status = 404, description = "`board_not_found`: a board of `boards`", body = ErrorBody),
        (status = 409, description = "`board_changed`: a board was dropped or re-created meanwhile; retry; `board_kind`: a board of `boards` is a trending board", body = ErrorBody),
        (status = 422, description = "`invalid_contributor`: `by` outside 1–128 bytes or with a control character; `invalid_board_name`; `invalid_query`: a board of `boards` without `per_contributor_member` or `per_contributor`, more than 20 boards or one named twice", body = ErrorBody),
    ),
    security(("adminToken" = []))
)]
pub async fn contributor(
    _: AdminAccess,
    State(state): State<AppState>,
    ApiPath(by): ApiPath<String>,
    ApiQuery(query): ApiQuery<ContributorsQuery>,
) -> ApiResult<Json<ContributorView>> {
    let boards: Option<Vec<String>> = query
        .boards
        .map(|list| list.split(',').map(str::to_owned).collect());
    let view = state.boards.contributions(&by, boards.as_deref()).await?;
    Ok(Json(view))
}

/// `?limit=`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MemberContributorsQuery {
    /// Contributors to list per window, 1 to 1000; 10 by default.
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u64>,
}

/// Who gave to the member inside each window of the board (which keeps contributors):
/// per window how many contributors, the sums over all of them (`counted`: the member's
/// total less its events without `by`), and the first `limit`, highest `contributed`
/// first (ties by `by`). Windows smallest first.
#[utoipa::path(
    get, path = "/v1/boards/{board}/members/{member}/contributors", tag = "contributors", operation_id = "contributorsOfMember",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"), ("member" = String, Path, description = "The member: 1–256 bytes of UTF-8", min_length = 1, max_length = 256), MemberContributorsQuery),
    responses(
        (status = 200, description = "Who gave to the member, window by window", body = MemberContributors,
         example = json!({"board": "forum-likes", "member": "post:1", "windows": [
             {"window": "1h", "contributors": 1, "contributed": 1, "counted": 1, "top": [{"by": "user:7", "contributed": 1, "counted": 1}]},
             {"window": "1d", "contributors": 2, "contributed": 4, "counted": 2, "top": [{"by": "user:7", "contributed": 3, "counted": 1}, {"by": "user:9", "contributed": 1, "counted": 1}]}]})),
        (status = 403, description = "`forbidden`: the token may read or write but not administer", body = ErrorBody),
        (status = 404, description = "`board_not_found`", body = ErrorBody),
        (status = 409, description = "`board_changed`: the board was dropped or re-created meanwhile; retry; `board_kind`: a trending board", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_member`; `invalid_query`: a board without `per_contributor_member` or `per_contributor`, or `limit` outside 1–1000", body = ErrorBody),
    ),
    security(("adminToken" = []))
)]
pub async fn member_contributors(
    _: AdminAccess,
    State(state): State<AppState>,
    ApiPath((board, member)): ApiPath<(String, String)>,
    ApiQuery(query): ApiQuery<MemberContributorsQuery>,
) -> ApiResult<Json<MemberContributors>> {
    let limit = query.limit.unwrap_or(10);
    let view = state
        .boards
        .member_contributors(&board, &member, limit)
        .await?;
    Ok(Json(view))
}
