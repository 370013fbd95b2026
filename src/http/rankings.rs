//! Reading a board: top N, one member's standing, its neighbours, its history; and
//! removing a member.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};

use super::AppState;
use super::auth::AdminAccess;
use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiPath, ApiQuery};
use crate::{Error, History, Span, Standing, TopPage};

/// `?window=` alone.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct WindowQuery {
    /// A window of the board (`"1h"`, `"24h"` or seconds); the board's first by default.
    pub window: Option<String>,
}

/// `?window=&limit=&offset=`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct TopQuery {
    /// A window of the board; the board's first by default.
    pub window: Option<String>,
    /// Entries to return, 1–1000 (default 10).
    pub limit: Option<u64>,
    /// Entries to skip (default 0).
    pub offset: Option<u64>,
}

/// `?window=&n=`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct AroundQuery {
    /// A window of the board; the board's first by default.
    pub window: Option<String>,
    /// Entries on each side of the member, 0–100 (default 5).
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

/// The ranking: members with a positive total, highest first, ties by member ascending.
#[utoipa::path(
    get, path = "/v1/boards/{board}/top", tag = "rankings",
    params(("board" = String, Path), TopQuery),
    responses((status = 200, body = TopPage), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody))
)]
pub async fn top(
    State(state): State<AppState>,
    ApiPath(board): ApiPath<String>,
    ApiQuery(q): ApiQuery<TopQuery>,
) -> ApiResult<Json<TopPage>> {
    let page = state
        .boards
        .top(
            &board,
            window(&q.window)?,
            q.offset.unwrap_or(0),
            q.limit.unwrap_or(10),
        )
        .await?;
    Ok(Json(page))
}

/// A member's total and competition rank (404 without a positive total).
#[utoipa::path(
    get, path = "/v1/boards/{board}/members/{member}", tag = "rankings",
    params(("board" = String, Path), ("member" = String, Path), WindowQuery),
    responses((status = 200, body = Standing), (status = 404, body = ErrorBody))
)]
pub async fn member(
    State(state): State<AppState>,
    ApiPath((board, member)): ApiPath<(String, String)>,
    ApiQuery(q): ApiQuery<WindowQuery>,
) -> ApiResult<Json<Standing>> {
    let standing = state
        .boards
        .score(&board, &member, window(&q.window)?)
        .await?;
    Ok(Json(standing.ok_or_else(|| not_ranked(&board, &member))?))
}

/// The member and up to `n` entries on each side (404 without a positive total).
#[utoipa::path(
    get, path = "/v1/boards/{board}/members/{member}/around", tag = "rankings",
    params(("board" = String, Path), ("member" = String, Path), AroundQuery),
    responses((status = 200, body = TopPage), (status = 404, body = ErrorBody))
)]
pub async fn around(
    State(state): State<AppState>,
    ApiPath((board, member)): ApiPath<(String, String)>,
    ApiQuery(q): ApiQuery<AroundQuery>,
) -> ApiResult<Json<TopPage>> {
    let page = state
        .boards
        .around(&board, &member, window(&q.window)?, q.n.unwrap_or(5))
        .await?;
    Ok(Json(page.ok_or_else(|| not_ranked(&board, &member))?))
}

/// The member's non-zero values per slot over the board's largest window.
#[utoipa::path(
    get, path = "/v1/boards/{board}/members/{member}/history", tag = "rankings",
    params(("board" = String, Path), ("member" = String, Path)),
    responses((status = 200, body = History), (status = 404, body = ErrorBody))
)]
pub async fn history(
    State(state): State<AppState>,
    ApiPath((board, member)): ApiPath<(String, String)>,
) -> ApiResult<Json<History>> {
    Ok(Json(state.boards.history(&board, &member).await?))
}

/// Removes the member from every slot and window (moderation).
#[utoipa::path(
    delete, path = "/v1/boards/{board}/members/{member}", tag = "rankings",
    params(("board" = String, Path), ("member" = String, Path)),
    responses((status = 200, body = MemberRemoved), (status = 404, body = ErrorBody)),
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
