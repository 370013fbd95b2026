//! `GET /v1/boards/{board}/snapshots`: a window's period snapshots, newest first. Thin:
//! parse, call [`Windowed::snapshots`](crate::Windowed::snapshots), render.

use axum::extract::State;
use serde::Deserialize;

use super::AppState;
use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiPath, ApiQuery};
use super::json::Json;
use super::wire::window;
use crate::{SnapshotRange, Snapshots};

/// `?window=&from=&to=&limit=`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SnapshotsQuery {
    /// A window of the board (`"1h"`, `"24h"` or seconds); the board's first by default.
    #[param(pattern = r"^[0-9]*[1-9][0-9]*[smhd]?$")]
    pub window: Option<String>,
    /// Oldest boundary listed, unix seconds (inclusive; not after `to`: a `from` after
    /// `to` is 422 `invalid_query`).
    #[param(minimum = 0, maximum = 253_402_300_799_i64)]
    pub from: Option<i64>,
    /// Newest boundary listed, unix seconds (inclusive; not before `from`: a `to` before
    /// `from` is 422 `invalid_query`).
    #[param(minimum = 0, maximum = 253_402_300_799_i64)]
    pub to: Option<i64>,
    /// Snapshots to list, 1–1000 (default 24).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u64>,
}

/// The window's period snapshots (boards with a `snapshots` option), newest boundary
/// first: each the window's top at a slot boundary, taken once retirement for it was
/// complete, with ranks by the board's ties.
#[utoipa::path(
    get, path = "/v1/boards/{board}/snapshots", tag = "rankings", operation_id = "boardsSnapshots",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$", example = json!("hot")), SnapshotsQuery),
    responses(
        (status = 200, description = "The snapshots, newest first", body = Snapshots, example = json!({
            "board": "hot",
            "window": "1d",
            "snapshots": [
                {"window": "1d", "boundary": 1_700_006_400, "taken_ms": 1_700_006_400_731_i64, "entries": [
                    {"rank": 1, "member": "post:2", "score": 5},
                    {"rank": 2, "member": "post:1", "score": 3}
                ]},
                {"window": "1d", "boundary": 1_700_002_800, "taken_ms": 1_700_002_800_402_i64, "entries": [
                    {"rank": 1, "member": "post:1", "score": 3}
                ]}
            ]
        })),
        (status = 404, description = "`board_not_found`, `window_not_found`", body = ErrorBody),
        (status = 409, description = "`board_kind`: a trending board takes no snapshots", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_span`; `invalid_query`: `from` after `to` (each within its bounds, but not in order; e.g. `from=253402300798&to=0`), a time out of 0–253402300799, a limit out of 1–1000", body = ErrorBody),
    )
)]
pub async fn get_snapshots(
    State(state): State<AppState>,
    ApiPath(board): ApiPath<String>,
    ApiQuery(q): ApiQuery<SnapshotsQuery>,
) -> ApiResult<Json<Snapshots>> {
    let window = window(&q.window)?;
    let range = SnapshotRange::new(q.from, q.to, q.limit)?;
    Ok(Json(
        state
            .boards
            .windowed(&board)
            .snapshots(window, range)
            .await?,
    ))
}
