//! Pin routes: show a member at a fixed position of the first page of a board's top
//! until a time, end a pin, list the pins. Thin: parse, call
//! [`Windowed::pin`](crate::Windowed::pin), [`Windowed::unpin`](crate::Windowed::unpin)
//! or [`Windowed::pins`](crate::Windowed::pins), answer.

use axum::extract::State;
use serde::{Deserialize, Serialize};

use super::AppState;
use super::auth::AdminAccess;
use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiJson, ApiPath, OptionalJson};
use super::json::Json;
use super::json_int;
use super::moderation::NoteBody;
use crate::domain::{ModerationNote, Pin, Timestamp};

/// `POST /v1/boards/{board}/pins`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PinBody {
    /// The member to pin.
    #[schema(min_length = 1, max_length = 256, example = "post:announcement")]
    pub member: String,
    /// Its position on the first page of the top, 1-based.
    #[serde(deserialize_with = "json_int::u64")]
    #[schema(minimum = 1, maximum = 100, example = 1)]
    pub position: u64,
    /// When the pin ends, unix seconds (in the future).
    #[serde(deserialize_with = "json_int::u64")]
    #[schema(minimum = 0, maximum = 253_402_300_799_i64, example = 1_764_288_000)]
    pub until: u64,
    /// Why (1–1,024 bytes), for the moderation log.
    #[schema(min_length = 1, max_length = 1024)]
    pub reason: Option<String>,
    /// Who (1–128 bytes), for the moderation log.
    #[schema(min_length = 1, max_length = 128)]
    pub actor: Option<String>,
}

/// A board's pins.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct BoardPins {
    /// The board.
    pub board: String,
    /// The pins that hold now, by position.
    pub pins: Vec<Pin>,
}

/// What ending a pin did.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Unpinned {
    /// The board.
    pub board: String,
    /// The member.
    pub member: String,
    /// Whether it was pinned (false: nothing changed).
    pub removed: bool,
}

const BOARD: &str = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots";

/// Pins a member at a position of the first page of the board's top (from the top end,
/// `offset` 0) until a time: every such page shows it there, marked `"pinned": true`
/// with the rank its counts give (0: not ranked), each member once, the page still
/// `limit` long; the others keep the ranks their counts give. A pinned member that is
/// hidden is not shown. Pinning a member again replaces its pin. At most 10 pins; kept in
/// the moderation log.
#[utoipa::path(
    post, path = "/v1/boards/{board}/pins", tag = "moderation", operation_id = "boardsPin",
    params(("board" = String, Path, description = BOARD, min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$")),
    request_body = PinBody,
    responses(
        (status = 200, description = "Pinned: the board's pins now", body = BoardPins,
         example = json!({"board": "hot-posts", "pins": [{"member": "post:announcement", "position": 1, "until": 1_764_288_000}]})),
        (status = 400, description = "`bad_request`: not JSON or not the documented shape", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token may write but not administer", body = ErrorBody),
        (status = 404, description = "`board_not_found`", body = ErrorBody),
        (status = 409, description = "`board_changed`: the board was dropped or re-created meanwhile; retry; `board_kind`: a trending board", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_member`, `invalid_time`, `invalid_moderation`: a position outside 1–100, an end not in the future, a board holding 10 pins already, or a bad reason or actor", body = ErrorBody),
    ),
    security(("adminToken" = []))
)]
pub async fn pin(
    _: AdminAccess,
    State(state): State<AppState>,
    ApiPath(board): ApiPath<String>,
    ApiJson(body): ApiJson<PinBody>,
) -> ApiResult<Json<BoardPins>> {
    let note = ModerationNote::new(body.reason, body.actor)?;
    let until = Timestamp::from_unix_seconds(i64::try_from(body.until).unwrap_or(i64::MAX))?;
    // Past u32, a position is as far out of range as u32::MAX.
    let position = u32::try_from(body.position).unwrap_or(u32::MAX);
    let windowed = state.boards.windowed(&board);
    let pins = windowed.pin(&body.member, position, until, &note).await?;
    Ok(Json(BoardPins { board, pins }))
}

/// Ends the member's pin (`removed` false: it had none). Kept in the moderation log with
/// the body's reason and actor, if any.
#[utoipa::path(
    delete, path = "/v1/boards/{board}/pins/{member}", tag = "moderation", operation_id = "boardsUnpin",
    params(("board" = String, Path, description = BOARD, min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"), ("member" = String, Path, description = "The member: 1–256 bytes of UTF-8", min_length = 1, max_length = 256)),
    request_body(content = Option<NoteBody>, description = "Optional: why and by whom"),
    responses(
        (status = 200, description = "Done", body = Unpinned,
         example = json!({"board": "hot-posts", "member": "post:announcement", "removed": true})),
        (status = 400, description = "`bad_request`: not JSON or not the documented shape", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token may write but not administer", body = ErrorBody),
        (status = 404, description = "`board_not_found`", body = ErrorBody),
        (status = 409, description = "`board_changed`: the board was dropped or re-created meanwhile; retry; `board_kind`: a trending board", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_member`, `invalid_moderation`", body = ErrorBody),
    ),
    security(("adminToken" = []))
)]
pub async fn unpin(
    _: AdminAccess,
    State(state): State<AppState>,
    ApiPath((board, member)): ApiPath<(String, String)>,
    OptionalJson(body): OptionalJson<NoteBody>,
) -> ApiResult<Json<Unpinned>> {
    let body = body.unwrap_or_default();
    let note = ModerationNote::new(body.reason, body.actor)?;
    let removed = state.boards.windowed(&board).unpin(&member, &note).await?;
    Ok(Json(Unpinned {
        board,
        member,
        removed,
    }))
}

/// The board's pins that hold now, by position.
#[utoipa::path(
    get, path = "/v1/boards/{board}/pins", tag = "moderation", operation_id = "boardsPins",
    params(("board" = String, Path, description = BOARD, min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$")),
    responses(
        (status = 200, description = "The pins", body = BoardPins,
         example = json!({"board": "hot-posts", "pins": [{"member": "post:announcement", "position": 1, "until": 1_764_288_000}]})),
        (status = 404, description = "`board_not_found`", body = ErrorBody),
        (status = 409, description = "`board_kind`: a trending board", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`", body = ErrorBody),
    )
)]
pub async fn pins(
    State(state): State<AppState>,
    ApiPath(board): ApiPath<String>,
) -> ApiResult<Json<BoardPins>> {
    let pins = state.boards.windowed(&board).pins().await?;
    Ok(Json(BoardPins { board, pins }))
}
