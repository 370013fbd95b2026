//! Member data: `PUT`/`GET`/`DELETE /v1/boards/{board}/members/{member}/data` (a small
//! JSON value kept beside a member of a windowed board), and the `with=data` option of
//! the reads that return it.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::AppState;
use super::auth::WriteAccess;
use super::error::{ApiError, ApiResult, ErrorBody};
use super::extract::{ApiPath, JsonBytes};
use crate::{Error, MemberData};

/// Whether a read's `with` asks for member data (`with=data`); any other value is 422
/// `invalid_query` naming the one accepted.
pub fn with_data(with: Option<&str>) -> crate::Result<bool> {
    match with {
        None => Ok(false),
        Some("data") => Ok(true),
        Some(other) => Err(Error::InvalidQuery {
            reason: format!(
                "with={other:?} is not known: with=data returns each member's data beside it"
            ),
        }),
    }
}

/// Sets the member's data: any JSON value but null, at most 1,024 bytes as compact JSON
/// text (it is stored compact), replacing what it held. Data is kept only for members
/// holding a total in the board's largest window, and goes when that total does
/// (retirement, a write back to 0, removal, trim, a drop).
#[utoipa::path(
    put, path = "/v1/boards/{board}/members/{member}/data", tag = "rankings", operation_id = "boardsPutMemberData",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"), ("member" = String, Path, description = "The member: 1–256 bytes of UTF-8", min_length = 1, max_length = 256)),
    request_body(content = MemberData, description = "The data: any JSON value but null", example = json!({"title": "Hello"})),
    responses(
        (status = 204, description = "Set"),
        (status = 400, description = "`bad_request`: the body is not JSON", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token may not write", body = ErrorBody),
        (status = 404, description = "`board_not_found`, or `member_not_found`: the member holds no total in the board's largest window (data is kept only for members holding one)", body = ErrorBody),
        (status = 409, description = "`board_kind`: a trending board keeps no member data", body = ErrorBody),
        (status = 415, description = "`unsupported_media_type`: the body is not `application/json`", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_member`, `invalid_member_data` (null, or over 1,024 bytes of compact JSON)", body = ErrorBody),
    ),
    security(("writeToken" = []), ("adminToken" = []))
)]
pub async fn put_data(
    _: WriteAccess,
    State(state): State<AppState>,
    ApiPath((board, member)): ApiPath<(String, String)>,
    JsonBytes(body): JsonBytes,
) -> ApiResult<StatusCode> {
    let value: Value = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request(format!("the body is not JSON: {e}")))?;
    let data = MemberData::from_value(&value)?;
    state
        .boards
        .windowed(&board)
        .set_member_data(&member, data)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The member's data: the JSON value as it was set (compact).
#[utoipa::path(
    get, path = "/v1/boards/{board}/members/{member}/data", tag = "rankings", operation_id = "boardsGetMemberData",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"), ("member" = String, Path, description = "The member: 1–256 bytes of UTF-8", min_length = 1, max_length = 256)),
    responses(
        (status = 200, description = "The data", body = MemberData, example = json!({"title": "Hello"})),
        (status = 404, description = "`board_not_found`, or `member_not_found`: the member has no data", body = ErrorBody),
        (status = 409, description = "`board_kind`: a trending board keeps no member data", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_member`", body = ErrorBody),
    )
)]
pub async fn get_data(
    State(state): State<AppState>,
    ApiPath((board, member)): ApiPath<(String, String)>,
) -> ApiResult<Response> {
    let data = state.boards.windowed(&board).member_data(&member).await?;
    let data = data.ok_or_else(|| Error::MemberNotFound {
        board: board.clone(),
        member: member.clone(),
        missing: "data",
    })?;
    Ok((
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        data.as_str().to_owned(),
    )
        .into_response())
}

/// Deletes the member's data (204 whether or not it had any).
#[utoipa::path(
    delete, path = "/v1/boards/{board}/members/{member}/data", tag = "rankings", operation_id = "boardsDeleteMemberData",
    params(("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"), ("member" = String, Path, description = "The member: 1–256 bytes of UTF-8", min_length = 1, max_length = 256)),
    responses(
        (status = 204, description = "Deleted, or there was none"),
        (status = 403, description = "`forbidden`: the token may not write", body = ErrorBody),
        (status = 404, description = "`board_not_found`", body = ErrorBody),
        (status = 409, description = "`board_kind`: a trending board keeps no member data", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_member`", body = ErrorBody),
    ),
    security(("writeToken" = []), ("adminToken" = []))
)]
pub async fn delete_data(
    _: WriteAccess,
    State(state): State<AppState>,
    ApiPath((board, member)): ApiPath<(String, String)>,
) -> ApiResult<StatusCode> {
    state
        .boards
        .windowed(&board)
        .delete_member_data(&member)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
