//! `/v1/dashboard`: what the dashboard page reads. One request per refresh
//! (`GET /v1/dashboard`: health, the boards picked, counters, stats), whatever the number
//! of boards there are, and one per user action: the board picker's search (`GET
//! /v1/dashboard/boards`) and the member lookup (`GET /v1/dashboard/member`). Their
//! access times are recorded under the stats kind `DashboardTime` (see
//! [`super::access_time`]), so the dashboard does not show up among the service's
//! slowest routes.
//!
//! Every parameter is read as text and checked here, so that any bad value (`top=abc`
//! as well as `top=500`) is a 422 `invalid_query` saying what to fix.

use std::str::FromStr;

use axum::extract::State;
use serde::Deserialize;

use super::AppState;
use super::auth::Moderator;
use super::error::{ApiResult, ErrorBody};
use super::extract::ApiQuery;
use super::json::Json;
use crate::{BoardOrder, BoardSearch, Dashboard, DashboardQuery, Error, MemberLookup};

/// `?boards=&top=&order=&leaders=&counters=&samples=&kind=&slowest=`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DashboardParams {
    /// Comma-separated board names, at most 50, shown in this order (absent or empty:
    /// none).
    #[param(example = "hot-posts,trending-tags")]
    pub boards: Option<String>,
    /// Rows per window table, 1–100 (default 10).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub top: Option<String>,
    /// `desc` (the default): each table shows the top of its ranking; `asc`: the bottom,
    /// lowest first.
    #[param(value_type = Option<String>, pattern = "^(asc|desc)$")]
    pub order: Option<String>,
    /// Leaders per window whose per-slot history is answered, 0–10 (default 3).
    #[param(value_type = Option<u32>, minimum = 0, maximum = 10)]
    pub leaders: Option<String>,
    /// Comma-separated counter names, at most 20 (absent: the first 10 by name; empty:
    /// none).
    #[param(example = "likes,signups")]
    pub counters: Option<String>,
    /// Newest samples per counter precision, 1–1000 (default 120).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 1000)]
    pub samples: Option<String>,
    /// The stats kind of the slowest table (default `AccessTime`).
    #[param(
        min_length = 1,
        max_length = 64,
        pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"
    )]
    pub kind: Option<String>,
    /// Entries of the slowest table, 1–100 (default 10).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub slowest: Option<String>,
}

/// `?search=&limit=`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchParams {
    /// A case-insensitive part of the name (absent or empty: every board).
    #[param(example = "post")]
    pub search: Option<String>,
    /// Boards listed, 1–500 (default 50).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 500)]
    pub limit: Option<String>,
    /// `name` (the default) or `busiest`: the most members ranked in the board's first
    /// window now first (measured on the first 1,000 matches by name).
    #[param(inline)]
    pub sort: Option<BoardOrder>,
}

/// `?board=&member=`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MemberParams {
    /// The board (required).
    #[param(
        required = true,
        min_length = 1,
        max_length = 64,
        pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$",
        example = "hot-posts"
    )]
    pub board: Option<String>,
    /// The member (required).
    #[param(required = true, min_length = 1, max_length = 256, example = "post:a")]
    pub member: Option<String>,
}

/// A 422 `invalid_query` error.
fn invalid(reason: String) -> Error {
    Error::InvalidQuery { reason }
}

/// The number in query parameter `name`, or `default` when it is absent.
fn number<T: FromStr>(name: &str, value: Option<&str>, default: T, bounds: &str) -> ApiResult<T> {
    match value {
        None => Ok(default),
        Some(text) => text.parse().map_err(|_| {
            invalid(format!(
                "{name} must be a whole number {bounds}, got {text:?}"
            ))
            .into()
        }),
    }
}

/// The names of a comma-separated list (empty parts left out).
fn names(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Everything one dashboard refresh shows: health, the boards asked for (each window's
/// top, newest snapshot and leaders' histories, and the newest changes of a board that
/// watches tops; a trending board's top), counters and the slowest contexts of a stats
/// kind, with every kind. A caller that may administer (the admin token, or none
/// configured) also gets each window's `hidden` members: what a moderator reviews.
#[utoipa::path(
    get, path = "/v1/dashboard", tag = "dashboard", operation_id = "dashboardGet",
    params(DashboardParams),
    responses(
        (status = 200, description = "The dashboard; a board that cannot be read is an entry with its `error`", body = Dashboard, example = json!({
            "now": 1_764_201_600,
            "health": {"ready": true, "problem": null, "store": "redis", "clock_skew_seconds": 0.002,
                       "memory": {"used_bytes": 1_048_576, "max_bytes": 0, "policy": "noeviction"}},
            "boards": [
                {"name": "hot-posts", "kind": "windowed", "config": {"slot": "1h", "windows": ["1h", "1d"], "offset": 0, "ties": "competition",
                                                                     "watch": [{"window": "1d", "top": 10}]},
                 "windows": [{"window": "1h", "members": 3, "ranked": 3, "lag_seconds": 0, "from": 1_764_198_000, "to": 1_764_201_600,
                              "entries": [{"rank": 1, "member": "post:a", "score": 3}],
                              "snapshot": null, "leaders": ["post:a"]},
                             {"window": "1d", "members": 3, "ranked": 3, "lag_seconds": 0, "from": 1_764_118_800, "to": 1_764_201_600,
                              "entries": [{"rank": 1, "member": "post:a", "score": 5}],
                              "snapshot": null, "leaders": ["post:a"]}],
                 "histories": [{"member": "post:a", "slot": "1h", "from": 1_764_118_800, "to": 1_764_201_600,
                                "points": [{"slot": 1_764_190_800, "value": 2}, {"slot": 1_764_198_000, "value": 3}]}],
                 "changes": [{"id": "1764201540000-0", "type": "moved", "member": "post:a", "window": "1d", "rank": 1, "score": 5,
                              "from": 2, "to": 1, "passed": ["post:b"], "cause": "write", "at": 1_764_201_540_000_i64},
                             {"id": "1764200000000-0", "type": "entered", "member": "post:a", "window": "1d", "rank": 2, "score": 2,
                              "cause": "write", "at": 1_764_200_000_000_i64}]},
                {"name": "trending-tags", "kind": "trending", "config": {"half_life": "1h", "floor": 0.001, "max_age": "10h"},
                 "members": 12, "ranked": 12, "entries": [{"rank": 1, "member": "rust", "score": 41.5}]},
                {"name": "deleted-board", "error": {"code": "board_not_found", "message": "board \"deleted-board\" does not exist"}}
            ],
            "counters": {"total": 2, "names": ["likes", "signups"],
                         "shown": [{"name": "likes", "precisions": [{"precision": "1s", "samples": [[1_764_201_599, 3]]}]}]},
            "stats": {"kind": "AccessTime", "kinds": ["AccessTime", "DashboardTime", "Latency"],
                      "slowest": [{"context": "/v1/boards/{board}/top", "mean": 0.0042, "count": 120, "p95": 0.009}]}
        })),
        (status = 422, description = "`invalid_query`: more than 50 boards or 20 counters, a bad board or counter name, `top`, `leaders`, `samples` or `slowest` out of range or not a number, `order` not `asc` or `desc`, a bad `kind`", body = ErrorBody),
    )
)]
pub async fn dashboard(
    Moderator(moderator): Moderator,
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<DashboardParams>,
) -> ApiResult<Json<Dashboard>> {
    let defaults = DashboardQuery::default();
    let query = DashboardQuery {
        boards: q.boards.as_deref().map(names).unwrap_or_default(),
        top: number("top", q.top.as_deref(), defaults.top, "from 1 to 100")?,
        order: match q.order.as_deref() {
            None | Some("desc") => crate::Order::Desc,
            Some("asc") => crate::Order::Asc,
            Some(other) => {
                return Err(Error::InvalidQuery {
                    reason: format!("order must be asc or desc, got {other:?}"),
                }
                .into());
            }
        },
        leaders: number(
            "leaders",
            q.leaders.as_deref(),
            defaults.leaders,
            "from 0 to 10",
        )?,
        counters: q.counters.as_deref().map(names),
        samples: number(
            "samples",
            q.samples.as_deref(),
            defaults.samples,
            "from 1 to 1000",
        )?,
        kind: q.kind.unwrap_or(defaults.kind),
        slowest: number(
            "slowest",
            q.slowest.as_deref(),
            defaults.slowest,
            "from 1 to 100",
        )?,
        max_clock_skew: state.max_clock_skew,
        hidden: moderator,
    };
    Ok(Json(state.boards.dashboard(&query).await?))
}

/// The board picker's search: boards whose name holds `search` (case-insensitive),
/// by name or the busiest first.
#[utoipa::path(
    get, path = "/v1/dashboard/boards", tag = "dashboard", operation_id = "dashboardBoards",
    params(SearchParams),
    responses(
        (status = 200, description = "The first matches; `matched` counts them all, `total` every board", body = BoardSearch, example = json!({
            "total": 231, "matched": 2,
            "boards": [{"name": "hot-posts", "kind": "windowed"}, {"name": "trending-posts", "kind": "trending"}]
        })),
        (status = 422, description = "`invalid_query`: `limit` out of range or not a number", body = ErrorBody),
    )
)]
pub async fn search_boards(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<SearchParams>,
) -> ApiResult<Json<BoardSearch>> {
    let limit = number("limit", q.limit.as_deref(), 50, "from 1 to 500")?;
    let search = q.search.unwrap_or_default();
    let order = q.sort.unwrap_or_default();
    Ok(Json(
        state.boards.search_boards(&search, limit, order).await?,
    ))
}

/// A member's score, rank and percentile in every window of a board (its score now on a
/// trending board) and its per-slot history, in one request; for a caller that may
/// administer (the admin token, or none configured), on a board keeping contributors,
/// who gave to it (`contributors`, the first 5 per window).
#[utoipa::path(
    get, path = "/v1/dashboard/member", tag = "dashboard", operation_id = "dashboardMember",
    params(MemberParams),
    responses(
        (status = 200, description = "The member in every window; a window where it has no positive total answers its total with a null rank and percentile", body = MemberLookup, example = json!({
            "board": "hot-posts", "member": "post:a",
            "windows": [{"window": "1h", "score": 3, "rank": 1, "percentile": 0.6666666666666666, "ranked": 3},
                        {"window": "1d", "score": 5, "rank": 1, "percentile": 0.6666666666666666, "ranked": 3}],
            "history": {"member": "post:a", "slot": "1h", "from": 1_764_118_800, "to": 1_764_201_600,
                        "points": [{"slot": 1_764_190_800, "value": 2}, {"slot": 1_764_198_000, "value": 3}]}
        })),
        (status = 404, description = "`board_not_found`; `member_not_found`: the member has no event in any window of the board", body = ErrorBody),
        (status = 422, description = "`invalid_query`: `board` or `member` missing or not a valid name", body = ErrorBody),
    )
)]
pub async fn member(
    Moderator(moderator): Moderator,
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<MemberParams>,
) -> ApiResult<Json<MemberLookup>> {
    let required = |value: Option<String>, name: &str| {
        value
            .filter(|v| !v.is_empty())
            .ok_or_else(|| invalid(format!("query parameter {name} is required")))
    };
    let board = required(q.board, "board")?;
    let member = required(q.member, "member")?;
    crate::BoardName::parse(&board).map_err(|e| invalid(format!("board: {e}")))?;
    crate::Member::parse(&member).map_err(|e| invalid(format!("member: {e}")))?;
    Ok(Json(
        state
            .boards
            .lookup_member(&board, &member, moderator)
            .await?,
    ))
}
