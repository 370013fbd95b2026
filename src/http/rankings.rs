//! Reading a board: top N, one member's standing, its neighbours, its history; and
//! removing a member.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};

use super::AppState;
use super::auth::AdminAccess;
use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiPath, ApiQuery};
use super::trending::{PageReply, StandingReply, is_trending, no_window};
use crate::{Error, History, ScoreRange, Span, TrendRange};

/// `?window=` alone.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WindowQuery {
    /// A window of the board (`"1h"`, `"24h"` or seconds); the board's first by default.
    #[param(pattern = r"^[0-9]*[1-9][0-9]*[smhd]?$")]
    pub window: Option<String>,
}

/// `?window=&limit=&offset=`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TopQuery {
    /// A window of the board (`"1h"`, `"24h"` or seconds); the board's first by default.
    #[param(pattern = r"^[0-9]*[1-9][0-9]*[smhd]?$")]
    pub window: Option<String>,
    /// Entries to return, 1 to the configured `max_limit` (default 1000); 10 by default.
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u64>,
    /// Entries to skip, up to 1,000,000,000 (default 0); inside the score range when
    /// one is given.
    #[param(minimum = 0, maximum = 1_000_000_000)]
    pub offset: Option<u64>,
    /// Only members whose total (a trending board: score now) is at least this
    /// (inclusive; within ±(2^53 − 1)).
    #[param(minimum = -9_007_199_254_740_991_i64, maximum = 9_007_199_254_740_991_i64)]
    pub min_score: Option<i64>,
    /// Only members whose total is at most this (inclusive; within ±(2^53 − 1), not
    /// below `min_score`).
    #[param(minimum = -9_007_199_254_740_991_i64, maximum = 9_007_199_254_740_991_i64)]
    pub max_score: Option<i64>,
}

/// `?window=&n=`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AroundQuery {
    /// A window of the board (`"1h"`, `"24h"` or seconds); the board's first by default.
    #[param(pattern = r"^[0-9]*[1-9][0-9]*[smhd]?$")]
    pub window: Option<String>,
    /// Entries on each side of the member, 0–100 (default 5).
    #[param(minimum = 0, maximum = 100)]
    pub n: Option<u64>,
}

/// What removing a member did.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct MemberRemoved {
    /// The member.
    pub member: String,
    /// Slot values deleted.
    pub slot_values: u64,
}

fn window(text: &Option<String>) -> crate::Result<Option<Span>> {
    text.as_deref().map(Span::parse).transpose()
}

fn not_ranked(board: &str, member: &str) -> Error {
    Error::MemberNotFound {
        board: board.to_owned(),
        member: member.to_owned(),
    }
}

/// The ranking: members with a positive total, highest first, ties by member ascending;
/// with `min_score`/`max_score`, the members whose totals are in that range (their
/// ranks still their ranks in the whole ranking).
#[utoipa::path(
    get, path = "/v1/boards/{board}/top", tag = "rankings",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"), TopQuery),
    responses(
        (status = 200, description = "A page of the ranking (float scores on a trending board)", body = PageReply),
        (status = 404, description = "`board_not_found`, `window_not_found`", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_span`, `invalid_query` (limit, offset, min_score or max_score out of range, or min_score above max_score; a window on a trending board)", body = ErrorBody),
    )
)]
pub async fn top(
    State(state): State<AppState>,
    ApiPath(board): ApiPath<String>,
    ApiQuery(q): ApiQuery<TopQuery>,
) -> ApiResult<Json<PageReply>> {
    let range = ScoreRange::new(q.min_score, q.max_score)?;
    let (offset, limit) = (q.offset.unwrap_or(0), q.limit.unwrap_or(10));
    match state
        .boards
        .top_in_range(&board, window(&q.window)?, range, offset, limit)
        .await
    {
        Ok(page) => Ok(Json(PageReply::Windowed(page))),
        Err(e) if is_trending(&e) => {
            no_window(&q.window)?;
            let range =
                TrendRange::new(q.min_score.map(|x| x as f64), q.max_score.map(|x| x as f64))?;
            let page = state
                .boards
                .trend_top_in_range(&board, range, offset, limit)
                .await?;
            Ok(Json(PageReply::Trending(page)))
        }
        Err(e) => Err(e.into()),
    }
}

/// A member's total, rank (competition, or dense on a dense board) and percentile: the share of ranked members
/// whose total is strictly below its own, in [0, 1) (404 without a positive total).
#[utoipa::path(
    get, path = "/v1/boards/{board}/members/{member}", tag = "rankings",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"), ("member" = String, Path, description = "The member: 1–256 bytes of UTF-8", min_length = 1, max_length = 256), WindowQuery),
    responses(
        (status = 200, description = "The member's total and rank (a float score on a trending board)", body = StandingReply),
        (status = 404, description = "`board_not_found`, `window_not_found`, or `member_not_found`: the member holds no positive total", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_member`, `invalid_span`", body = ErrorBody),
    )
)]
pub async fn member(
    State(state): State<AppState>,
    ApiPath((board, member)): ApiPath<(String, String)>,
    ApiQuery(q): ApiQuery<WindowQuery>,
) -> ApiResult<Json<StandingReply>> {
    let standing = match state
        .boards
        .score(&board, &member, window(&q.window)?)
        .await
    {
        Ok(standing) => standing.map(StandingReply::Windowed),
        Err(e) if is_trending(&e) => {
            no_window(&q.window)?;
            let standing = state.boards.trend_score(&board, &member).await?;
            standing.map(StandingReply::Trending)
        }
        Err(e) => return Err(e.into()),
    };
    Ok(Json(standing.ok_or_else(|| not_ranked(&board, &member))?))
}

/// The member and up to `n` entries on each side (404 without a positive total).
#[utoipa::path(
    get, path = "/v1/boards/{board}/members/{member}/around", tag = "rankings",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"), ("member" = String, Path, description = "The member: 1–256 bytes of UTF-8", min_length = 1, max_length = 256), AroundQuery),
    responses(
        (status = 200, description = "The member and its neighbours", body = PageReply),
        (status = 404, description = "`board_not_found`, `window_not_found`, or `member_not_found`: the member holds no positive total", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_member`, `invalid_span`, `invalid_query` (n out of range)", body = ErrorBody),
    )
)]
pub async fn around(
    State(state): State<AppState>,
    ApiPath((board, member)): ApiPath<(String, String)>,
    ApiQuery(q): ApiQuery<AroundQuery>,
) -> ApiResult<Json<PageReply>> {
    let n = q.n.unwrap_or(5);
    let page = match state
        .boards
        .around(&board, &member, window(&q.window)?, n)
        .await
    {
        Ok(page) => page.map(PageReply::Windowed),
        Err(e) if is_trending(&e) => {
            no_window(&q.window)?;
            let page = state.boards.trend_around(&board, &member, n).await?;
            page.map(PageReply::Trending)
        }
        Err(e) => return Err(e.into()),
    };
    Ok(Json(page.ok_or_else(|| not_ranked(&board, &member))?))
}

/// The member's non-zero values per slot over the board's largest window (404 when it
/// holds none, like a removed member).
#[utoipa::path(
    get, path = "/v1/boards/{board}/members/{member}/history", tag = "rankings",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"), ("member" = String, Path, description = "The member: 1–256 bytes of UTF-8", min_length = 1, max_length = 256)),
    responses(
        (status = 200, description = "The member's values per slot", body = History),
        (status = 404, description = "`board_not_found`, or `member_not_found`: the member holds no value in the largest window", body = ErrorBody),
        (status = 409, description = "`board_kind`: a trending board keeps no per-slot history", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_member`", body = ErrorBody),
    )
)]
pub async fn history(
    State(state): State<AppState>,
    ApiPath((board, member)): ApiPath<(String, String)>,
) -> ApiResult<Json<History>> {
    let history = state.boards.history(&board, &member).await?;
    if history.points.is_empty() {
        // Like its standing: a member holding nothing (never seen, or removed) is 404.
        return Err(not_ranked(&board, &member).into());
    }
    Ok(Json(history))
}

/// Removes the member from every slot and window (moderation).
#[utoipa::path(
    delete, path = "/v1/boards/{board}/members/{member}", tag = "rankings",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"), ("member" = String, Path, description = "The member: 1–256 bytes of UTF-8", min_length = 1, max_length = 256)),
    responses(
        (status = 200, description = "Removed (or held nothing)", body = MemberRemoved),
        (status = 403, description = "`forbidden`: the token may write but not administer", body = ErrorBody),
        (status = 404, description = "`board_not_found`", body = ErrorBody),
        (status = 409, description = "`board_changed`: the board was dropped or re-created meanwhile; retry; `board_kind`: a trending board (no per-slot values to remove)", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_member`", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn remove_member(
    _: AdminAccess,
    State(state): State<AppState>,
    ApiPath((board, member)): ApiPath<(String, String)>,
) -> ApiResult<Json<MemberRemoved>> {
    let removed = state.boards.remove_member(&board, &member).await?;
    Ok(Json(MemberRemoved {
        member,
        slot_values: removed.slot_values,
    }))
}
