//! Reading a board: top N, one member's standing, its neighbours, its history; and
//! removing a member.

use axum::extract::State;
use serde::{Deserialize, Serialize};

use super::AppState;
use super::auth::AdminAccess;
use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiPath, ApiQuery};
use super::json::Json;
use super::member_data;
use super::movement::{TopWith, with_movement};
use super::read_json::ReadJson;
use super::staleness::reader;
use super::wire::window;
use crate::{
    AroundOptions, BoardPage, Error, History, MemberStanding, Order, Rollboard, ScoreBounds,
};

/// `?window=` alone.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WindowQuery {
    /// A window of the board (`"1h"`, `"24h"` or seconds); the board's first by default.
    #[param(pattern = r"^[0-9]*[1-9][0-9]*[smhd]?$")]
    pub window: Option<String>,
    /// `data`: the standing with `"data"`, the member's data (`null` when it has none;
    /// see `PUT …/members/{member}/data`); windowed boards only. Absent: no `data` field.
    #[param(example = "data")]
    pub with: Option<String>,
    /// How old the answer may be, in milliseconds, 0 to 60000 (a minute): 0 reads the
    /// store now; above 0 the answer may come from this service process's read cache
    /// while it is at most this old (`age_ms` in the reply says how old it is; a write
    /// through this process is seen at once, one through another replica within the
    /// bound). The service's `max_staleness_ms` setting (default 0) by default.
    #[param(minimum = 0, maximum = 60_000, example = 1000)]
    pub max_staleness_ms: Option<u64>,
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
    /// Only members whose score (a windowed board: total in the window; a trending
    /// board: score now) is at least this (inclusive; a number within ±(2^53 − 1); on a
    /// windowed board, whose totals are integers, 0.5 means 1).
    #[param(minimum = -9_007_199_254_740_991_i64, maximum = 9_007_199_254_740_991_i64)]
    pub min_score: Option<f64>,
    /// Only members whose score is at most this (inclusive; a number within
    /// ±(2^53 − 1), not below `min_score`).
    #[param(minimum = -9_007_199_254_740_991_i64, maximum = 9_007_199_254_740_991_i64)]
    pub max_score: Option<f64>,
    /// `desc`: highest first; `asc`: lowest first. Absent: from rank 1, highest first
    /// (lowest first on an `"aggregate":"min"` board). The order that does not start at
    /// rank 1 reads the ranking from the bottom ("bottom N"): equal scores in the reverse
    /// of the board's tie order, `offset` counted from the bottom; ranks stay the board's
    /// ranks (the bottom member of 1,000 ranked has rank 1,000 unless tied).
    #[param(inline, example = "asc")]
    pub order: Option<Order>,
    /// The top P percent of the window's ranked members (0 < P ≤ 100): the first
    /// `ceil(P / 100 × ranked)` entries of the ranking (at least 1 when any is ranked; all
    /// at 100), of which `offset` and `limit` page as usual (`limit` then defaults to the
    /// configured `max_limit`, 1000 by default, rather than 10); with `order=asc`, the
    /// bottom P percent. Not with `min_score`/`max_score`; windowed boards only.
    #[param(exclusive_minimum = 0, maximum = 100, example = 10)]
    pub percent: Option<f64>,
    /// `data`: each entry with `"data"`, the member's data (`null` when it has none; see
    /// `PUT …/members/{member}/data`); `movement`: each entry inside the window's watched
    /// top with `"movement":{"was"}`, its rank there at `since` (`null`: outside it, a
    /// newcomer); `data,movement`: both. Windowed boards only. Absent: neither field.
    #[param(example = "data,movement")]
    pub with: Option<String>,
    /// With `with=movement` (and only then): the time to compare with, a span back from
    /// now (`24h`, `90m`: a number and its unit) or a unix time in seconds.
    #[param(example = "24h")]
    pub since: Option<String>,
    /// How old the answer may be, in milliseconds, 0 to 60000 (a minute): 0 reads the
    /// store now; above 0 the answer may come from this service process's read cache
    /// while it is at most this old (`age_ms` in the reply says how old it is; a write
    /// through this process is seen at once, one through another replica within the
    /// bound). The service's `max_staleness_ms` setting (default 0) by default.
    #[param(minimum = 0, maximum = 60_000, example = 1000)]
    pub max_staleness_ms: Option<u64>,
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
    /// `true`: a full page of `2n + 1` entries when the ranking holds that many, shifted
    /// at the ends (near rank 1 the page starts at rank 1, near the bottom it ends at
    /// the last ranked member); fewer only when fewer are ranked. `false` (default): up
    /// to `n` on each side, fewer at the ends.
    #[param(example = true)]
    pub fill: Option<bool>,
    /// `desc`: highest first; `asc`: the same entries lowest first. Absent: in rank order,
    /// highest first (lowest first on an `"aggregate":"min"` board).
    #[param(inline, example = "asc")]
    pub order: Option<Order>,
    /// `data`: each entry with `"data"`, the member's data (`null` when it has none; see
    /// `PUT …/members/{member}/data`); windowed boards only. Absent: no `data` field.
    #[param(example = "data")]
    pub with: Option<String>,
    /// How old the answer may be, in milliseconds, 0 to 60000 (a minute): 0 reads the
    /// store now; above 0 the answer may come from this service process's read cache
    /// while it is at most this old (`age_ms` in the reply says how old it is; a write
    /// through this process is seen at once, one through another replica within the
    /// bound). The service's `max_staleness_ms` setting (default 0) by default.
    #[param(minimum = 0, maximum = 60_000, example = 1000)]
    pub max_staleness_ms: Option<u64>,
}

/// What removing a member did.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct MemberRemoved {
    /// The member.
    pub member: String,
    /// Slot values deleted.
    pub slot_values: u64,
}

/// `page` with each entry's member data when `with_data` (a windowed board's page only).
async fn page_data(
    boards: &Rollboard,
    board: &str,
    page: BoardPage,
    with_data: bool,
) -> crate::Result<BoardPage> {
    match page {
        BoardPage::Windowed(page) if with_data => Ok(BoardPage::Windowed(
            boards.windowed(board).with_data(page).await?,
        )),
        BoardPage::Trending(_) if with_data => Err(no_data(board)),
        page => Ok(page),
    }
}

/// `with=data` asked of a trending board.
fn no_data(board: &str) -> Error {
    Error::InvalidQuery {
        reason: format!(
            "with=data reads member data, which only windowed boards keep, and board {board:?} \
             is a trending board: leave out with"
        ),
    }
}

fn not_found(board: &str, member: &str, missing: &'static str) -> Error {
    Error::MemberNotFound {
        board: board.to_owned(),
        member: member.to_owned(),
        missing,
    }
}

/// The ranking: the ranked members (positive scores; every non-zero one on a board with
/// `"rank":"nonzero"`; every value on a max, min or latest board), from rank 1: highest first
/// (lowest first on a min board), ties by member ascending;
/// with `min_score`/`max_score`, the members whose scores are in that range (their
/// ranks still their ranks in the whole ranking); with the other `order`, read from the
/// bottom (ties by member descending, `offset` counted from the bottom, ranks
/// unchanged); with `percent=P`, the top P percent of the ranked members
/// (`ceil(P / 100 × ranked)` entries, paged by `offset` and `limit`). A windowed board
/// ranks a window's totals (integers), a trending board its scores now (numbers; it has
/// no windows).
#[utoipa::path(
    get, path = "/v1/boards/{board}/top", tag = "rankings", operation_id = "boardsTop",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"), TopQuery),
    responses(
        (status = 200, description = "A page of the ranking; `kind` tells a windowed board's page from a trending board's", body = BoardPage,
         example = json!({"kind": "windowed", "board": "hot-posts", "window": "1d", "from": 1_795_647_600, "to": 1_795_734_000, "behind": false, "lag_ms": 0, "age_ms": 0,
                          "entries": [{"rank": 1, "member": "post:7", "score": 3}, {"rank": 2, "member": "post:9", "score": 1}]})),
        (status = 404, description = "`board_not_found`, `window_not_found`", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_span` (a window beyond 400 days), `invalid_query` (limit, offset, min_score, max_score or percent out of range, or min_score above max_score; percent with a score range or of a trending board; a window asked of a trending board; `with` other than `data`, `movement` or both, either of a trending board; `with=movement` of a window not watched or without `since`, `since` without it or neither a span nor a time; `max_staleness_ms` above 60000)", body = ErrorBody),
    )
)]
pub async fn top(
    State(state): State<AppState>,
    ApiPath(board): ApiPath<String>,
    ApiQuery(q): ApiQuery<TopQuery>,
) -> ApiResult<ReadJson<BoardPage>> {
    let bounds = ScoreBounds {
        min: q.min_score,
        max: q.max_score,
    };
    let order = state.boards.ranking_end(&board, q.order).await?;
    let with = TopWith::parse(q.with.as_deref())?;
    let boards = reader(&state, q.max_staleness_ms)?;
    let since = q.since.as_deref();
    if let Some(percent) = q.percent {
        if q.min_score.is_some() || q.max_score.is_some() {
            return Err(Error::InvalidQuery {
                reason: "percent takes the top of the whole ranking: leave out min_score and \
                         max_score"
                    .into(),
            }
            .into());
        }
        let max_limit = state.boards.settings().max_limit;
        let (offset, limit) = (q.offset.unwrap_or(0), q.limit.unwrap_or(max_limit));
        let page = boards
            .windowed(&board)
            .top_percent(window(&q.window)?, percent, order, offset, limit)
            .await?;
        let page = page_data(&boards, &board, BoardPage::Windowed(page), with.data).await?;
        return Ok(ReadJson(
            with_movement(&boards, &board, page, with, since).await?,
        ));
    }
    let (offset, limit) = (q.offset.unwrap_or(0), q.limit.unwrap_or(10));
    let page = boards
        .ordered_page(&board, window(&q.window)?, bounds, order, offset, limit)
        .await?;
    let page = page_data(&boards, &board, page, with.data).await?;
    Ok(ReadJson(
        with_movement(&boards, &board, page, with, since).await?,
    ))
}

/// A member's score, rank (competition; dense or position on a board created so) and
/// percentile: the share of ranked members whose score is strictly below its own, in
/// [0, 1). Any non-zero score is answered, negative ones too (`rank` null, percentile 0:
/// not ranked); 404 when the member holds none (a windowed board: no total in the
/// window).
#[utoipa::path(
    get, path = "/v1/boards/{board}/members/{member}", tag = "rankings", operation_id = "boardsMember",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"), ("member" = String, Path, description = "The member: 1–256 bytes of UTF-8", min_length = 1, max_length = 256), WindowQuery),
    responses(
        (status = 200, description = "The member's standing; `kind` tells a windowed board's (integer total in a window) from a trending board's (score now); either of any sign, `rank` null when it is not positive or the member is hidden (`hidden`: true, see `…/hide`)", body = MemberStanding,
         example = json!({"kind": "windowed", "member": "post:7", "score": 3, "rank": 1, "percentile": 0.5, "window": "1d", "from": 1_795_647_600, "to": 1_795_734_000, "behind": false, "lag_ms": 0, "age_ms": 0})),
        (status = 404, description = "`board_not_found`, `window_not_found`, or `member_not_found`: the member holds no score (a windowed board: no total in the window)", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_member`, `invalid_span` (a window beyond 400 days), `invalid_query` (a window asked of a trending board; `with` other than `data`, or `with=data` of a trending board; `max_staleness_ms` above 60000)", body = ErrorBody),
    )
)]
pub async fn member(
    State(state): State<AppState>,
    ApiPath((board, member)): ApiPath<(String, String)>,
    ApiQuery(q): ApiQuery<WindowQuery>,
) -> ApiResult<ReadJson<MemberStanding>> {
    let with_data = member_data::with_data(q.with.as_deref())?;
    let boards = reader(&state, q.max_staleness_ms)?;
    let standing = boards.standing(&board, &member, window(&q.window)?).await?;
    // A windowed board's total in the window, a trending board's score now.
    let missing = "score";
    let standing = standing.ok_or_else(|| not_found(&board, &member, missing))?;
    Ok(ReadJson(match standing {
        MemberStanding::Windowed(s) if with_data => {
            MemberStanding::Windowed(boards.windowed(&board).standing_with_data(s).await?)
        }
        MemberStanding::Trending(_) if with_data => return Err(no_data(&board).into()),
        other => other,
    }))
}

/// The member and up to `n` entries on each side, or with `fill=true` a full page of
/// `2n + 1` shifted at the ends of the ranking, in rank order unless `order` says (404
/// when the member is not ranked).
#[utoipa::path(
    get, path = "/v1/boards/{board}/members/{member}/around", tag = "rankings", operation_id = "boardsAround",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"), ("member" = String, Path, description = "The member: 1–256 bytes of UTF-8", min_length = 1, max_length = 256), AroundQuery),
    responses(
        (status = 200, description = "The member and its neighbours; `kind` as in `top`", body = BoardPage,
         example = json!({"kind": "trending", "board": "trending-posts", "at": 1_795_734_000.0, "age_ms": 0,
                          "entries": [{"rank": 1, "member": "post:7", "score": 2.83}, {"rank": 2, "member": "post:9", "score": 0.97}]})),
        (status = 404, description = "`board_not_found`, `window_not_found`, or `member_not_found`: the member is not ranked", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_member`, `invalid_span` (a window beyond 400 days), `invalid_query` (n out of range; a window asked of a trending board; `with` other than `data`, or `with=data` of a trending board; `max_staleness_ms` above 60000)", body = ErrorBody),
    )
)]
pub async fn around(
    State(state): State<AppState>,
    ApiPath((board, member)): ApiPath<(String, String)>,
    ApiQuery(q): ApiQuery<AroundQuery>,
) -> ApiResult<ReadJson<BoardPage>> {
    let with_data = member_data::with_data(q.with.as_deref())?;
    let options = AroundOptions {
        fill: q.fill.unwrap_or(false),
        order: state.boards.ranking_end(&board, q.order).await?,
    };
    let boards = reader(&state, q.max_staleness_ms)?;
    let page = boards
        .neighbours(
            &board,
            &member,
            window(&q.window)?,
            q.n.unwrap_or(5),
            options,
        )
        .await?;
    let missing = "total that ranks it";
    let page = page.ok_or_else(|| not_found(&board, &member, missing))?;
    Ok(ReadJson(page_data(&boards, &board, page, with_data).await?))
}

/// The member's non-zero values per slot over the board's largest window (404 when it
/// holds none, like a removed member).
#[utoipa::path(
    get, path = "/v1/boards/{board}/members/{member}/history", tag = "rankings", operation_id = "boardsHistory",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"), ("member" = String, Path, description = "The member: 1–256 bytes of UTF-8", min_length = 1, max_length = 256)),
    responses(
        (status = 200, description = "The member's values per slot", body = History,
         example = json!({"member": "post:7", "slot": "1h", "from": 1_795_647_600, "to": 1_795_734_000, "points": [{"slot": 1_795_726_800, "value": 2}, {"slot": 1_795_730_400, "value": 1}]})),
        (status = 404, description = "`board_not_found`, or `member_not_found`: the member holds no value in the largest window", body = ErrorBody),
        (status = 409, description = "`board_kind`: a trending board keeps no per-slot history", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_member`", body = ErrorBody),
    )
)]
pub async fn history(
    State(state): State<AppState>,
    ApiPath((board, member)): ApiPath<(String, String)>,
) -> ApiResult<Json<History>> {
    let history = state.boards.windowed(&board).history(&member).await?;
    if history.points.is_empty() {
        // Like its standing: a member holding nothing (never seen, or removed) is 404.
        return Err(not_found(&board, &member, "value in the largest window").into());
    }
    Ok(Json(history))
}

/// Removes the member from every slot and window (moderation).
#[utoipa::path(
    delete, path = "/v1/boards/{board}/members/{member}", tag = "rankings", operation_id = "boardsRemoveMember",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"), ("member" = String, Path, description = "The member: 1–256 bytes of UTF-8", min_length = 1, max_length = 256)),
    responses(
        (status = 200, description = "Removed (or held nothing)", body = MemberRemoved,
         example = json!({"member": "post:7", "slot_values": 2})),
        (status = 403, description = "`forbidden`: the token may write but not administer", body = ErrorBody),
        (status = 404, description = "`board_not_found`", body = ErrorBody),
        (status = 409, description = "`board_changed`: the board was dropped or re-created meanwhile; retry; `board_kind`: a trending board (no per-slot values to remove); `board_busy`: a max, min or latest board being recomputed (remove after)", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_member`", body = ErrorBody),
    ),
    security(("adminToken" = []))
)]
pub async fn remove_member(
    _: AdminAccess,
    State(state): State<AppState>,
    ApiPath((board, member)): ApiPath<(String, String)>,
) -> ApiResult<Json<MemberRemoved>> {
    let removed = state.boards.windowed(&board).remove_member(&member).await?;
    Ok(Json(MemberRemoved {
        member,
        slot_values: removed.slot_values,
    }))
}
