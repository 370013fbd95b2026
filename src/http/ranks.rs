//! Ranks for a list of members (a user's friends): `GET /v1/boards/{board}/ranks?members=`
//! for short lists, `POST /v1/boards/{board}/ranks` with a JSON body for long ones. Thin:
//! parse, call [`Rollboard::ranks`](crate::Rollboard::ranks), render.

use axum::Json;
use axum::extract::State;
use serde::Deserialize;

use super::AppState;
use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiJson, ApiPath, ApiQuery};
use super::trending::{RanksReply, is_trending, no_window};
use crate::Span;

/// `?members=a,b,c&window=`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RanksQuery {
    /// The members, comma-separated, 1 to 1000 (a member holding a comma is asked for
    /// with `POST`).
    #[param(pattern = r"^[^,]+(,[^,]+)*$")]
    pub members: String,
    /// A window of the board (`"1h"`, `"24h"` or seconds); the board's first by default.
    #[param(pattern = r"^[0-9]*[1-9][0-9]*[smhd]?$")]
    pub window: Option<String>,
}

/// `{"members": ["a", "b"], "window": "24h"}`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RanksBody {
    /// The members, 1 to 1000, each 1–256 bytes of UTF-8.
    #[schema(min_items = 1, max_items = 1000, inline)]
    pub members: Vec<MemberName>,
    /// A window of the board (`"1h"`, `"24h"` or seconds); the board's first by default.
    #[schema(pattern = r"^[0-9]*[1-9][0-9]*[smhd]?$")]
    pub window: Option<String>,
}

/// A member: 1–256 bytes of UTF-8.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[schema(min_length = 1, max_length = 256)]
pub struct MemberName(pub String);

fn window(text: &Option<String>) -> crate::Result<Option<Span>> {
    text.as_deref().map(Span::parse).transpose()
}

/// Each member's total and rank (competition, or dense on a `"ties":"dense"` board), in the order asked (a member asked twice
/// is answered twice); `"score": 0, "rank": null` without a positive total.
#[utoipa::path(
    get, path = "/v1/boards/{board}/ranks", tag = "rankings",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"), RanksQuery),
    responses(
        (status = 200, description = "The members' ranks", body = RanksReply),
        (status = 404, description = "`board_not_found`, `window_not_found`", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_member` (an empty or over-long member), `invalid_span`, `invalid_query` (no member, or more than 1000)", body = ErrorBody),
    )
)]
pub async fn get_ranks(
    State(state): State<AppState>,
    ApiPath(board): ApiPath<String>,
    ApiQuery(q): ApiQuery<RanksQuery>,
) -> ApiResult<Json<RanksReply>> {
    let members: Vec<&str> = q.members.split(',').collect();
    match state
        .boards
        .ranks(&board, &members, window(&q.window)?)
        .await
    {
        Ok(ranks) => Ok(Json(RanksReply::Windowed(ranks))),
        Err(e) if is_trending(&e) => {
            no_window(&q.window)?;
            let ranks = state.boards.trend_ranks(&board, &members).await?;
            Ok(Json(RanksReply::Trending(ranks)))
        }
        Err(e) => Err(e.into()),
    }
}

/// Like `GET …/ranks`, for long lists: the members in a JSON body.
#[utoipa::path(
    post, path = "/v1/boards/{board}/ranks", tag = "rankings",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$")),
    request_body = RanksBody,
    responses(
        (status = 200, description = "The members' ranks", body = RanksReply),
        (status = 404, description = "`board_not_found`, `window_not_found`", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_member` (an empty or over-long member), `invalid_span`, `invalid_query` (no member, or more than 1000)", body = ErrorBody),
    )
)]
pub async fn post_ranks(
    State(state): State<AppState>,
    ApiPath(board): ApiPath<String>,
    ApiJson(body): ApiJson<RanksBody>,
) -> ApiResult<Json<RanksReply>> {
    let members: Vec<&str> = body.members.iter().map(|m| m.0.as_str()).collect();
    match state
        .boards
        .ranks(&board, &members, window(&body.window)?)
        .await
    {
        Ok(ranks) => Ok(Json(RanksReply::Windowed(ranks))),
        Err(e) if is_trending(&e) => {
            no_window(&body.window)?;
            let ranks = state.boards.trend_ranks(&board, &members).await?;
            Ok(Json(RanksReply::Trending(ranks)))
        }
        Err(e) => Err(e.into()),
    }
}
