//! Ranks for a list of members (a user's friends): `GET /v1/boards/{board}/ranks?members=`
//! for short lists, `POST /v1/boards/{board}/ranks` with a JSON body for long ones. Thin:
//! parse, call [`Windowed::ranks`](crate::Windowed::ranks), render.

use axum::extract::State;
use serde::Deserialize;

use super::AppState;
use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiJson, ApiPath, ApiQuery};
use super::json::Json;
use super::json_int;
use super::staleness::reader;
use super::wire::window;
use crate::MemberRanks;

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
    /// How old the answer may be, in milliseconds, 0 to 60000 (a minute): 0 reads the
    /// store now; above 0 the answer may come from this service process's read cache
    /// while it is at most this old (`age_ms` in the reply says how old it is; a write
    /// through this process is seen at once, one through another replica within the
    /// bound). The service's `max_staleness_ms` setting (default 0) by default.
    #[param(minimum = 0, maximum = 60_000, example = 1000)]
    pub max_staleness_ms: Option<u64>,
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
    /// How old the answer may be, in milliseconds, 0 to 60000, as `max_staleness_ms=` of
    /// `GET …/ranks`; the service's setting by default.
    #[schema(minimum = 0, maximum = 60_000, example = 1000)]
    #[serde(default, deserialize_with = "json_int::opt_u64")]
    pub max_staleness_ms: Option<u64>,
}

/// A member: 1–256 bytes of UTF-8.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[schema(min_length = 1, max_length = 256)]
pub struct MemberName(pub String);

/// Each member's total and rank (competition; dense or position on a board created with that `"ties"`), in the order asked (a member asked twice
/// is answered twice); `"score": 0, "rank": null` without a positive total.
#[utoipa::path(
    get, path = "/v1/boards/{board}/ranks", tag = "rankings", operation_id = "boardsRanks",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"), RanksQuery),
    responses(
        (status = 200, description = "The members' ranks; `kind` tells a windowed board's from a trending board's", body = MemberRanks,
         example = json!({"kind": "windowed", "board": "hot-posts", "window": "1d", "from": 1_795_647_600, "to": 1_795_734_000, "behind": false, "lag_ms": 0, "age_ms": 0,
                          "entries": [{"member": "post:9", "score": 1, "rank": 2}, {"member": "post:1", "score": 0, "rank": null}, {"member": "post:7", "score": 3, "rank": 1}]})),
        (status = 404, description = "`board_not_found`, `window_not_found`", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_member` (an empty or over-long member), `invalid_span` (a window beyond 400 days), `invalid_query` (no member, or more than 1000; a window asked of a trending board; `max_staleness_ms` above 60000)", body = ErrorBody),
    )
)]
pub async fn get_ranks(
    State(state): State<AppState>,
    ApiPath(board): ApiPath<String>,
    ApiQuery(q): ApiQuery<RanksQuery>,
) -> ApiResult<Json<MemberRanks>> {
    let members: Vec<&str> = q.members.split(',').collect();
    let ranks = reader(&state, q.max_staleness_ms)?
        .member_ranks(&board, &members, window(&q.window)?)
        .await?;
    Ok(Json(ranks))
}

/// Like `GET …/ranks`, for long lists: the members in a JSON body.
#[utoipa::path(
    post, path = "/v1/boards/{board}/ranks", tag = "rankings", operation_id = "boardsRanksPost",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$")),
    request_body(content = RanksBody, example = json!({"members": ["post:9", "post:1", "post:7"], "window": "24h"})),
    responses(
        (status = 200, description = "The members' ranks; `kind` tells a windowed board's from a trending board's", body = MemberRanks,
         example = json!({"kind": "windowed", "board": "hot-posts", "window": "1d", "from": 1_795_647_600, "to": 1_795_734_000, "behind": false, "lag_ms": 0, "age_ms": 0,
                          "entries": [{"member": "post:9", "score": 1, "rank": 2}, {"member": "post:1", "score": 0, "rank": null}, {"member": "post:7", "score": 3, "rank": 1}]})),
        (status = 404, description = "`board_not_found`, `window_not_found`", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_member` (an empty or over-long member), `invalid_span` (a window beyond 400 days), `invalid_query` (no member, or more than 1000; a window asked of a trending board; `max_staleness_ms` above 60000)", body = ErrorBody),
    )
)]
pub async fn post_ranks(
    State(state): State<AppState>,
    ApiPath(board): ApiPath<String>,
    ApiJson(body): ApiJson<RanksBody>,
) -> ApiResult<Json<MemberRanks>> {
    let members: Vec<&str> = body.members.iter().map(|m| m.0.as_str()).collect();
    let ranks = reader(&state, body.max_staleness_ms)?
        .member_ranks(&board, &members, window(&body.window)?)
        .await?;
    Ok(Json(ranks))
}
