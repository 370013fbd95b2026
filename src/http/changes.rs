//! `GET /v1/boards/{board}/changes`: the rank changes of a board's watched tops, a page
//! as JSON, or (asked with `Accept: text/event-stream`, as a browser's `EventSource`
//! does) as Server-Sent Events that follow them. Thin: parse, call
//! [`Windowed::changes`](crate::Windowed::changes) or
//! [`Windowed::change_stream`](crate::Windowed::change_stream), answer.

use std::convert::Infallible;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::http::header::ACCEPT;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde::Deserialize;

use super::AppState;
use super::error::{ApiError, ApiResult, ErrorBody};
use super::extract::{ApiPath, ApiQuery};
use super::json::Json;
use super::moderation::BOARD_PARAM;
use crate::domain::ChangePage;
use crate::rollboard::changes::CHANGES_POLL;

/// The query of `GET /v1/boards/{board}/changes`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ChangesQuery {
    /// The id of the last change seen (`<ms>-<n>`): the changes after it. Without it,
    /// from the oldest kept.
    #[param(pattern = r"^[0-9]+-[0-9]+$")]
    pub after: Option<String>,
    /// Most changes to answer, 1–1000 (100 by default).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u64>,
}

/// The changes of the board's watched tops (`watch` in its config), oldest first: who
/// entered, left or moved in each watched window's top N, in the same atomic step as the
/// write, retirement, removal, recompute, hide or show that caused it. A reader that
/// applies them in order to the tops it saw at `after` holds the tops as of the last
/// one; with `after` older than the oldest kept (the newest 10,000 of a board, for 7
/// days), 410 `changes_trimmed`: read a top, then the changes from the newest id.
///
/// With `Accept: text/event-stream` (a browser's `EventSource`), the answer is a stream of
/// Server-Sent Events that follows the changes as they are recorded: each an event
/// `change` whose `id` is the change's and whose data is the change as JSON; a reconnect
/// sends `Last-Event-ID` and resumes after it (it takes the place of `after`); an
/// `error` event (data `{"error":{"code","message"}}`) ends the stream.
#[utoipa::path(
    get, path = "/v1/boards/{board}/changes", tag = "rankings", operation_id = "boardsChanges",
    params(("board" = String, Path, description = BOARD_PARAM, min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"), ChangesQuery),
    responses(
        (status = 200, description = "The changes after `after`, or with `Accept: text/event-stream` their stream (events `change`, `id` the change's, data the change)", content(
         (ChangePage = "application/json", example = json!({"board": "hot-posts", "changes": [
             {"id": "1795647600000-0", "type": "entered", "member": "post:9", "window": "1d", "rank": 2, "score": 41, "cause": "write", "at": 1_795_647_600_000_i64},
             {"id": "1795647600000-1", "type": "moved", "member": "post:7", "window": "1d", "rank": 3, "score": 40, "from": 2, "to": 3, "passed": ["post:9"], "cause": "write", "at": 1_795_647_600_000_i64}]})),
         (String = "text/event-stream"))),
        (status = 400, description = "`bad_request`: a query parameter that does not parse", body = ErrorBody),
        (status = 404, description = "`board_not_found`", body = ErrorBody),
        (status = 409, description = "`board_kind`: a trending board", body = ErrorBody),
        (status = 410, description = "`changes_trimmed`: changes after `after` are no longer kept", body = ErrorBody),
        (status = 422, description = "`invalid_board_name`, `invalid_query`: limit out of range, or `after` not an id", body = ErrorBody),
    )
)]
pub async fn changes(
    State(state): State<AppState>,
    ApiPath(board): ApiPath<String>,
    ApiQuery(q): ApiQuery<ChangesQuery>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let limit = q.limit.unwrap_or(100).min(u64::from(u32::MAX)) as usize;
    let windowed = state.boards.windowed(&board);
    let streamed = headers
        .get(ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.contains("text/event-stream"));
    if !streamed {
        let changes = windowed.changes(q.after.as_deref(), limit).await?;
        return Ok(Json(changes).into_response());
    }
    let last_seen = headers.get("last-event-id").and_then(|v| v.to_str().ok());
    let after = last_seen.map(str::to_owned).or(q.after);
    // What is wrong with the request is answered before the stream starts.
    windowed.changes(after.as_deref(), 1).await?;
    let events = windowed.change_stream(after, CHANGES_POLL).map(|item| {
        let event = match item {
            Ok(change) => Event::default()
                .id(change.id.clone())
                .event("change")
                .data(serde_json::to_string(&change).unwrap_or_default()),
            Err(e) => Event::default()
                .event("error")
                .data(serde_json::to_string(&ApiError::from(e).body()).unwrap_or_default()),
        };
        Ok::<_, Infallible>(event)
    });
    Ok(Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response())
}
