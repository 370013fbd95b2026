//! `/v1/boards`: create, list, describe and drop boards.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::AppState;
use super::auth::AdminAccess;
use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiJson, ApiPath, ApiQuery};
use super::json_int;
use super::wire::SpanInput;
use crate::{
    Board, BoardConfig, BoardName, BoardStatus, Created, RecomputeReport, SnapshotPolicy, Span,
    Ties,
};

/// A board's config as sent in `PUT /v1/boards/{board}`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigBody {
    /// Slot length, e.g. `"1h"`.
    #[schema(value_type = Span)]
    pub slot: SpanInput,
    /// Windows, smallest first, each a multiple of the slot and at most 100,000 slots,
    /// e.g. `["1h", "24h"]`.
    #[schema(value_type = Vec<Span>, min_items = 1, max_items = 8)]
    pub windows: Vec<SpanInput>,
    /// Shifts slot boundaries by this many seconds (`-slot < offset < slot`).
    #[serde(default, deserialize_with = "json_int::i64")]
    #[schema(minimum = -34_559_999, maximum = 34_559_999)]
    pub offset: i64,
    /// How equal totals share ranks: `"competition"` (1, 1, 3; the default) or
    /// `"dense"` (1, 1, 2). Fixed when the board is created: another value on an
    /// existing board is a conflict.
    #[serde(default)]
    #[schema(default = "competition")]
    pub ties: Ties,
    /// Period snapshots: at each slot boundary, once retirement is done, the top `top`
    /// of every window is kept, the newest `keep` per window (`GET …/snapshots`). May be
    /// added, changed or removed (left out) on an existing board: it changes no data.
    #[serde(default)]
    pub snapshots: Option<SnapshotsBody>,
}

/// `{"top": 100, "keep": 168}`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SnapshotsBody {
    /// Leaders per snapshot, 1–1000.
    #[schema(minimum = 1, maximum = 1000)]
    pub top: u32,
    /// Snapshots kept per window, 1–100000 (older ones are trimmed).
    #[schema(minimum = 1, maximum = 100000)]
    pub keep: u32,
}

impl ConfigBody {
    fn into_config(self) -> crate::Result<BoardConfig> {
        let windows = self
            .windows
            .into_iter()
            .map(SpanInput::parse)
            .collect::<crate::Result<Vec<_>>>()?;
        Ok(BoardConfig::new(self.slot.parse()?, windows)?
            .with_offset(self.offset)?
            .with_ties(self.ties)
            .with_snapshots(
                self.snapshots
                    .map(|s| SnapshotPolicy::new(s.top, s.keep))
                    .transpose()?,
            ))
    }
}

/// One board in `GET /v1/boards`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct BoardSummary {
    /// The board's name.
    pub name: BoardName,
    /// Slot length, windows and alignment.
    pub config: BoardConfig,
    /// When the board was created.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
}

impl From<Board> for BoardSummary {
    fn from(b: Board) -> Self {
        BoardSummary {
            name: b.name,
            config: b.config,
            created_at: crate::board::to_datetime(b.created_at),
        }
    }
}

/// `GET /v1/boards`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct BoardList {
    /// Every board, by name.
    pub boards: Vec<BoardSummary>,
}

/// Creates a board, or confirms an existing one with the same config.
#[utoipa::path(
    put, path = "/v1/boards/{board}", tag = "boards",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$")),
    request_body = ConfigBody,
    responses(
        (status = 201, description = "Created", body = BoardStatus),
        (status = 200, description = "Already exists with this config, or with another `snapshots` option only (now this one)", body = BoardStatus),
        (status = 202, description = "Existed; the larger windows added are being built", body = BoardStatus),
        (status = 403, description = "`forbidden`: the token may write but not administer", body = ErrorBody),
        (status = 409, description = "`board_conflict`: exists with another config (only windows larger than the existing ones can be added); `board_busy`, `board_changed`: retry", body = ErrorBody),
        (status = 422, description = "`invalid_span`, `invalid_config`: a duration out of range, a window that is not a multiple of the slot, windows not increasing, too many slots, an offset beyond the slot, or snapshots' top or keep out of range", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn put_board(
    _: AdminAccess,
    State(state): State<AppState>,
    ApiPath(board): ApiPath<String>,
    ApiJson(body): ApiJson<ConfigBody>,
) -> ApiResult<(StatusCode, Json<BoardStatus>)> {
    let config = body.into_config()?;
    let created = state.boards.create_board(&board, config).await?;
    let status = match created {
        Created::New(_) => StatusCode::CREATED,
        Created::Existing(_) => StatusCode::OK,
        Created::Extended(_) => {
            // Runs on after the reply; the service's sweep retries a build that failed.
            drop(state.boards.spawn_build_windows(&board));
            StatusCode::ACCEPTED
        }
    };
    Ok((status, Json(state.boards.describe_board(&board).await?)))
}

/// Lists every board.
#[utoipa::path(
    get, path = "/v1/boards", tag = "boards",
    responses((status = 200, description = "Every board", body = BoardList))
)]
pub async fn list_boards(State(state): State<AppState>) -> ApiResult<Json<BoardList>> {
    let boards = state.boards.boards().await?;
    Ok(Json(BoardList {
        boards: boards.into_iter().map(BoardSummary::from).collect(),
    }))
}

/// A board's config, members per window, live slots and retirement lag.
#[utoipa::path(
    get, path = "/v1/boards/{board}", tag = "boards",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$")),
    responses(
        (status = 200, description = "The board's state", body = BoardStatus),
        (status = 404, description = "`board_not_found`", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`", body = ErrorBody),
    )
)]
pub async fn get_board(
    State(state): State<AppState>,
    ApiPath(board): ApiPath<String>,
) -> ApiResult<Json<BoardStatus>> {
    Ok(Json(state.boards.describe_board(&board).await?))
}

/// Deletes a board and all its data.
#[utoipa::path(
    delete, path = "/v1/boards/{board}", tag = "boards",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$")),
    responses(
        (status = 204, description = "Dropped"),
        (status = 403, description = "`forbidden`: the token may write but not administer", body = ErrorBody),
        (status = 404, description = "`board_not_found`", body = ErrorBody),
        (status = 409, description = "`board_busy`: the board is being changed; retry", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn delete_board(
    _: AdminAccess,
    State(state): State<AppState>,
    ApiPath(board): ApiPath<String>,
) -> ApiResult<StatusCode> {
    state.boards.drop_board(&board).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `?window=` of a recompute.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RecomputeQuery {
    /// The window to rebuild (`"24h"` or seconds); every window when absent.
    #[param(pattern = r"^[0-9]*[1-9][0-9]*[smhd]?$")]
    pub window: Option<String>,
}

/// Rebuilds the board's totals from its live slots (repairs drift), exactly, while
/// writes go on. Runs to its end even if the request times out.
#[utoipa::path(
    post, path = "/v1/boards/{board}/recompute", tag = "boards",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"), RecomputeQuery),
    responses(
        (status = 200, description = "What the rebuild changed", body = RecomputeReport),
        (status = 403, description = "`forbidden`: the token may write but not administer", body = ErrorBody),
        (status = 404, description = "`board_not_found`, `window_not_found`", body = ErrorBody),
        (status = 409, description = "`board_busy`: another recompute of the board is running; `board_changed`", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_span`", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn recompute(
    _: AdminAccess,
    State(state): State<AppState>,
    ApiPath(board): ApiPath<String>,
    ApiQuery(q): ApiQuery<RecomputeQuery>,
) -> ApiResult<Json<RecomputeReport>> {
    let window = q.window.as_deref().map(Span::parse).transpose()?;
    let boards = state.boards.clone();
    let task = tokio::spawn(async move { boards.recompute(&board, window).await });
    let report = task
        .await
        .map_err(|e| crate::Error::Store(format!("recompute task failed: {e}")))??;
    Ok(Json(report))
}
