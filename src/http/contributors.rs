//! `GET /v1/contributors/{by}`: what one contributor (an event's `by`) gave on the boards
//! that keep contributors, window by window, with what of it counts under each board's
//! `per_contributor_member` and `per_contributor`. Admin only (it shows who liked what).
//! Thin: parse, call
//! [`Rollboard::contributions`](crate::Rollboard::contributions), answer.

use axum::Json;
use axum::extract::State;
use serde::Deserialize;

use super::AppState;
use super::auth::AdminAccess;
use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiPath, ApiQuery};
use crate::ContributorView;

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
    params(("by" = String, Path, description = "The contributor, as sent in events' `by`: 1–128 bytes of UTF-8, no control characters", min_length = 1, max_length = 128), ContributorsQuery),
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
