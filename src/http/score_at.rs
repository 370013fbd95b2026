//! The score at a percentile: `GET /v1/boards/{board}/score_at?percentile=Q&window=`.
//! Thin: parse, call [`Windowed::score_at`](crate::Windowed::score_at), render.

use axum::extract::State;
use serde::Deserialize;

use super::AppState;
use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiPath, ApiQuery};
use super::json::Json;
use super::wire::window;
use crate::ScoreAt;

/// `?percentile=&window=`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ScoreAtQuery {
    /// The share Q of ranked members to beat, 0 to 1 (0.9: the score that beats 90 %).
    #[param(minimum = 0, maximum = 1, example = 0.9)]
    pub percentile: f64,
    /// A window of the board (`"1h"`, `"24h"` or seconds); the board's first by default.
    #[param(pattern = r"^[0-9]*[1-9][0-9]*[smhd]?$")]
    pub window: Option<String>,
}

/// The lowest total that beats a share Q of the window's ranked members: a member whose
/// total is at least this has a `percentile` (the member read's: the share of ranked
/// members strictly below it) of at least Q, and one below it has less. With the ranked
/// totals ascending `a_1 ≤ … ≤ a_R` and `k` the least count with `k / R ≥ Q`, it is
/// `a_k + 1`; at Q = 0 it is `a_1`, the lowest ranked total. Windowed boards only.
#[utoipa::path(
    get, path = "/v1/boards/{board}/score_at", tag = "rankings", operation_id = "boardsScoreAt",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"), ScoreAtQuery),
    responses(
        (status = 200, description = "The score at the percentile, with the counts it rests on", body = ScoreAt,
         example = json!({"percentile": 0.5, "score": 4, "ranked": 4, "below": 2, "window": "1d"})),
        (status = 404, description = "`board_not_found`, `window_not_found`, `ranking_empty`: the window ranks no member", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_span`, `invalid_query` (percentile outside 0–1; a trending board, whose scores change with time: refused)", body = ErrorBody),
    )
)]
pub async fn score_at(
    State(state): State<AppState>,
    ApiPath(board): ApiPath<String>,
    ApiQuery(q): ApiQuery<ScoreAtQuery>,
) -> ApiResult<Json<ScoreAt>> {
    let window = window(&q.window)?;
    let at = state
        .boards
        .windowed(&board)
        .score_at(window, q.percentile)
        .await?;
    Ok(Json(at))
}
