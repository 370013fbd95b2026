//! Several boards in one request: `POST /v1/events` writes one event (or a batch, each
//! event to the boards it names), each board's outcome reported on its own; `GET /v1/members/{member}`
//! reads one member on each board named. Thin: parse, call
//! [`Rollboard::write_to_boards`](crate::Rollboard::write_to_boards) or
//! [`Rollboard::member_across`](crate::Rollboard::member_across), render.
//!
//! Status: 200 whenever the request itself is valid, with every board's outcome (written,
//! or its error) in the body; a request that is not (no boards, too many, one named
//! twice, a bad member or delta, a malformed body) is refused whole with 400 or 422 and
//! nothing is applied.

use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::AppState;
use super::auth::WriteAccess;
use super::error::{ApiError, ApiResult, ErrorBody, ErrorDetail};
use super::events::{CountedReply, IdempotencyHeader, RejectedEvent};
use super::extract::{ApiPath, ApiQuery, JsonBytes};
use super::json::Json;
use super::wire::{NotAnEvent, parse_raw_event, window};
use crate::{BoardStanding, BoardWrite, BoardsEvent, Error, Event};

/// The body of `POST /v1/events`, as the handler reads it (keys given twice are
/// refused, unknown keys too).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MultiIn<'a> {
    boards: Option<Vec<String>>,
    #[serde(borrow)]
    events: Option<&'a RawValue>,
    #[serde(borrow)]
    member: Option<&'a RawValue>,
    #[serde(borrow)]
    delta: Option<&'a RawValue>,
    #[serde(borrow)]
    value: Option<&'a RawValue>,
    #[serde(borrow)]
    at: Option<&'a RawValue>,
    #[serde(borrow)]
    data: Option<&'a RawValue>,
    #[serde(borrow)]
    by: Option<&'a RawValue>,
}

/// The body: one event with its boards, or a batch of them.
// Documents the JSON; the handler reads it with `MultiIn`.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub enum MultiEventsBody {
    /// One event to every board it names.
    One(MultiEvent),
    /// A batch, each event to the boards it names.
    Batch(MultiBatch),
}

/// One event to each board: `{"boards": ["hot-posts", "top-authors"], "member": "post:42"}`.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct MultiEvent {
    /// The boards, 1 to 20 distinct names, of either kind.
    #[schema(min_items = 1, max_items = 20)]
    boards: Vec<String>,
    /// The member: 1–256 bytes of UTF-8.
    #[schema(min_length = 1, max_length = 256)]
    member: String,
    /// The change: a non-zero integer within ±(2^53 − 1); 1 when absent or null.
    #[schema(minimum = -9_007_199_254_740_991_i64, maximum = 9_007_199_254_740_991_i64)]
    delta: Option<i64>,
    /// Max, min and latest boards: the value (an integer within ±(2^53 − 1), 0 and
    /// negative ones too), instead of `delta`. A board of the other kind rejects the
    /// event (`invalid_value`, saying which to send), the others take it.
    #[schema(minimum = -9_007_199_254_740_991_i64, maximum = 9_007_199_254_740_991_i64)]
    value: Option<i64>,
    /// When it happened, unix seconds (fractions allowed, 1970 to 9999); now when absent
    /// or null. A time outside a board's windows is that board's error (`too_late`).
    #[schema(minimum = 0, maximum = 253_402_300_799_i64)]
    at: Option<f64>,
    /// Windowed boards: data to keep beside the member (a post's title), any JSON value, at
    /// most 1,024 bytes as compact JSON text (beyond: `invalid_member_data`), replacing
    /// what it held, kept when the member holds a total in the board's largest window once
    /// the event is applied; absent or null: its data stays as it is. A trending board
    /// refuses it (`invalid_member_data`).
    #[schema(value_type = crate::MemberData, required = false, example = json!({"title": "Hello"}))]
    data: Option<serde_json::Value>,
    /// Who gave it (a user id: 1–128 bytes of UTF-8, no control characters; else
    /// `invalid_contributor` and nothing is applied). Boards with
    /// `per_contributor_member` or `per_contributor` keep it and count it within them;
    /// the others check it and do not keep it.
    #[schema(min_length = 1, max_length = 128, example = "user:7")]
    by: Option<String>,
}

/// A batch: `{"events": [{"boards": [...], "member": …}, …]}`; each event names the
/// boards it counts on (1 to 20 distinct boards in all).
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct MultiBatch {
    /// The events, up to the configured `max_batch` (default 10,000). An element that
    /// is not of this shape (a key unknown or repeated, no boards, a time that is not a
    /// time …) refuses the whole request, naming its index; an event a board's rules
    /// reject (too late, a zero delta) is in that board's `rejected`.
    #[schema(max_items = 10_000)]
    events: Vec<MultiBatchEvent>,
}

/// One event of a batch, with its boards. Its values are judged on their own, by each
/// board it names: a member outside 1–256 bytes, a zero delta or one beyond
/// ±(2^53 − 1), a time outside 1970 to 9999 or outside the board's windows reject that
/// event alone, in those boards' `rejected`, while the others are applied.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct MultiBatchEvent {
    /// The boards, 1 to 20 distinct names, of either kind.
    #[schema(min_items = 1, max_items = 20)]
    boards: Vec<String>,
    /// The member: 1–256 bytes of UTF-8.
    member: String,
    /// The change: a non-zero integer within ±(2^53 − 1); 1 when absent or null.
    delta: Option<i64>,
    /// Max, min and latest boards: the value, instead of `delta` (see the single event).
    value: Option<i64>,
    /// When it happened, unix seconds (fractions allowed); now when absent or null.
    at: Option<f64>,
    /// Windowed boards: data to keep beside the member (a post's title), any JSON value, at
    /// most 1,024 bytes as compact JSON text (beyond: `invalid_member_data`), replacing
    /// what it held, kept when the member holds a total in the board's largest window once
    /// the event is applied; absent or null: its data stays as it is. A trending board
    /// refuses it (`invalid_member_data`).
    #[schema(value_type = crate::MemberData, required = false, example = json!({"title": "Hello"}))]
    data: Option<serde_json::Value>,
    /// Who gave it (1–128 bytes, no control characters): a board's `invalid_contributor`
    /// rejection when not, as for the single event's other values.
    #[schema(min_length = 1, max_length = 128)]
    by: Option<String>,
}

/// What each board did with the events, in the order the boards were named.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct MultiEventsResponse {
    /// One outcome per board.
    pub boards: Vec<BoardOutcome>,
}

/// One board's outcome: written, or its error.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum BoardOutcome {
    /// The board took the events (those a rule rejects listed by index).
    Written(BoardWritten),
    /// The board took none of them.
    Failed(BoardFailed),
}

/// A board that took the events.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct BoardWritten {
    /// The board.
    pub board: String,
    /// Events applied (the first time, when replayed).
    pub accepted: usize,
    /// The events this board rejected, by index in `events`, with the reason (always
    /// empty for a single event: its rejection is the board's `error`).
    pub rejected: Vec<RejectedEvent>,
    /// The Idempotency-Key had been applied to this board before: nothing was applied
    /// now, the outcome is the first time's.
    pub replayed: bool,
    /// On a board keeping contributors, for events with a `by`: what of the delta
    /// counts in its largest window. A single event: a number; a batch: by index in
    /// `events`. Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub counted: Option<CountedReply>,
}

/// A board that took none of the events, and why.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct BoardFailed {
    /// The board.
    pub board: String,
    /// Why: `board_not_found`, `too_late` (a single event), `store_unavailable`, ….
    pub error: ErrorDetail,
}

/// Records one event, or a batch, on each of the boards each event names, all boards at
/// once, each through its own write path (group commit; either kind). Under an `Idempotency-Key` each board
/// applies the events once for that key: a retry replays the boards that took them and
/// applies them to the others (after a board that did not exist was created, say).
#[utoipa::path(
    post, path = "/v1/events", tag = "events", operation_id = "eventsPostMulti",
    params(
        ("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 255, pattern = r"^[!-~]+$",
         description = "1–255 printable ASCII characters, no spaces, naming this write on each board: a retry with the same key and events within the key's time to live (default 24 h) is applied once per board; the same key with other events is that board's `idempotency_key_reused`"),
    ),
    request_body(content = MultiEventsBody, examples(
        ("one" = (summary = "A like on a post in tag rust, on three boards", value = json!({"boards": ["hot-posts", "hot-posts:rust", "top-authors"], "member": "post:42"}))),
        ("batch" = (summary = "The post on two boards, its author on a third", value = json!({"events": [{"boards": ["hot-posts", "hot-posts:rust"], "member": "post:42"}, {"boards": ["top-authors"], "member": "user:alice"}]}))),
    )),
    responses(
        (status = 200, description = "The request was valid: each board's outcome, in the order named (a board's failure does not fail the others)", body = MultiEventsResponse,
         example = json!({"boards": [{"board": "hot-posts", "accepted": 1, "rejected": [], "replayed": false}, {"board": "top-authors", "error": {"code": "board_not_found", "message": "board \"top-authors\" does not exist"}}]})),
        (status = 400, description = "`bad_request`: not JSON, an unknown or repeated key, `boards` missing or not an array of strings, anything beside a batch's `events`, a batch element not of the event's shape (its index named); `invalid_idempotency_key`", body = ErrorBody),
        (status = 413, description = "`body_too_large`, or `batch_too_large`: more events than `max_batch`", body = ErrorBody),
        (status = 422, description = "Nothing applied: `invalid_query` (an event naming no boards, more than 20 or one twice; more than 20 boards in all), `invalid_board_name`, `invalid_time` or `invalid_member_data` (data over 1,024 bytes of compact JSON; a batch element's named by its index), and for a single event `invalid_member`, `invalid_delta`, `invalid_contributor`", body = ErrorBody),
    ),
    security(("writeToken" = []), ("adminToken" = []))
)]
pub async fn post_multi_events(
    _: WriteAccess,
    State(state): State<AppState>,
    key: IdempotencyHeader,
    JsonBytes(body): JsonBytes,
) -> ApiResult<Json<MultiEventsResponse>> {
    let key = key.parse()?;
    let lib = &state.boards;
    let parsed: MultiIn<'_> = parse_body(&body)?;
    let Some(events) = parsed.events else {
        // One event: its own shape and values are the request's.
        let boards = boards_of(&parsed)?;
        let event = single_event(&parsed)?;
        let written = lib
            .write_event_to_boards(boards, &event, key.as_ref())
            .await?;
        let mut outcomes = Vec::with_capacity(written.len());
        for w in written {
            outcomes.push(single_outcome(&state, w).await);
        }
        return Ok(Json(MultiEventsResponse { boards: outcomes }));
    };
    if parsed.boards.is_some()
        || parsed.member.is_some()
        || parsed.delta.is_some()
        || parsed.value.is_some()
        || parsed.at.is_some()
        || parsed.data.is_some()
        || parsed.by.is_some()
    {
        return Err(ApiError::bad_request(
            "a batch is {\"events\": [{\"boards\": [...], \"member\": ...}, ...]} and nothing else: each event names its boards",
        ));
    }
    let batch = parse_batch(events, lib.settings())?;
    let written = lib.write_to_boards(&batch, key.as_ref()).await?;
    let mut outcomes = Vec::with_capacity(written.len());
    for w in written {
        outcomes.push(batch_outcome(&state, w).await);
    }
    Ok(Json(MultiEventsResponse { boards: outcomes }))
}

/// The events of a batch, each with its boards. An element that is not an event with
/// its boards refuses the request (nothing is applied), naming its index; one a board's
/// rules reject is left for that board to report by its index.
fn parse_batch(
    events: &RawValue,
    settings: &crate::Settings,
) -> Result<Vec<BoardsEvent>, ApiError> {
    let items: Vec<&RawValue> = serde_json::from_str(events.get())
        .map_err(|_| ApiError::bad_request("\"events\" must be an array of events"))?;
    settings.admission().check_batch(items.len())?;
    let mut batch = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let in_batch = |mut e: ApiError| {
            e.message = format!("events[{index}]: {}; nothing was applied", e.message);
            e
        };
        let element: MultiIn<'_> = parse_body(item.get().as_bytes()).map_err(in_batch)?;
        if element.events.is_some() {
            return Err(in_batch(ApiError::bad_request(
                "an event of a batch has boards, member, delta or value, at, data and by",
            )));
        }
        let boards = boards_of(&element).map_err(in_batch)?.to_vec();
        let event = single_event(&element).map_err(in_batch)?;
        batch.push(BoardsEvent { boards, event });
    }
    Ok(batch)
}

/// One board's outcome of a batch: written (with the events it rejected, by index), or
/// the board's error.
async fn batch_outcome(state: &AppState, BoardWrite { board, result }: BoardWrite) -> BoardOutcome {
    let keyed = match result {
        Ok(keyed) => keyed,
        Err(error) => return failed(board, &error),
    };
    // A replay applied nothing: it counts in no metric.
    if !keyed.replayed {
        let series = state.boards.board_series();
        for r in &keyed.outcome.rejected {
            crate::metrics::event_rejected(series, &board, &r.error);
        }
        crate::metrics::events_accepted(series, &board, keyed.outcome.accepted);
    }
    let rejected = keyed
        .outcome
        .rejected
        .iter()
        .map(|r| RejectedEvent {
            index: r.index,
            error: (&r.error).into(),
        })
        .collect();
    // The board's indices are the batch's already.
    let counted = CountedReply::batch(&keyed.outcome.counted, |i| i);
    BoardOutcome::Written(BoardWritten {
        board,
        accepted: keyed.outcome.accepted,
        rejected,
        replayed: keyed.replayed,
        counted,
    })
}

/// The event's boards: missing is a 400 saying how to name them.
fn boards_of<'p>(parsed: &'p MultiIn<'_>) -> Result<&'p [String], ApiError> {
    parsed.boards.as_deref().ok_or_else(|| {
        ApiError::bad_request(
            "boards is missing: name the boards to write to, as {\"boards\": [\"hot-posts\"], \"member\": \"post:1\"}",
        )
    })
}

/// Reads the body's keys (a key given twice or unknown is a 400 naming it).
fn parse_body(body: &[u8]) -> Result<MultiIn<'_>, ApiError> {
    let text = std::str::from_utf8(body).map_err(|_| {
        ApiError::bad_request("Failed to parse the request body as JSON: it is not UTF-8")
    })?;
    serde_json::from_str(text).map_err(|e| {
        if e.is_data() {
            ApiError::bad_request(format!(
                "{e}; an event is {{\"boards\": [...], \"member\", \"delta\" or \"value\", \"at\"}}, a batch {{\"events\": [...]}}"
            ))
        } else {
            ApiError::bad_request(format!("Failed to parse the request body as JSON: {e}"))
        }
    })
}

/// The single event beside `boards`: a wrong shape is 400, a time out of range 422.
fn single_event(parsed: &MultiIn<'_>) -> Result<Event, ApiError> {
    let mut text = String::from("{");
    for (name, value) in [
        ("member", parsed.member),
        ("delta", parsed.delta),
        ("value", parsed.value),
        ("at", parsed.at),
        ("data", parsed.data),
        ("by", parsed.by),
    ] {
        if let Some(value) = value {
            if text.len() > 1 {
                text.push(',');
            }
            text.push_str(&format!("\"{name}\":{}", value.get()));
        }
    }
    text.push('}');
    parse_raw_event(&text).map_err(|e| match e {
        NotAnEvent::Shape(message) => ApiError::bad_request(message),
        NotAnEvent::Invalid(error) => ApiError::from(error),
    })
}

/// One board's outcome of a single event: written, or the board's error (the event's
/// rejection included).
async fn single_outcome(state: &AppState, w: BoardWrite) -> BoardOutcome {
    let series = state.boards.board_series();
    let result = w.result.and_then(|keyed| {
        keyed
            .outcome
            .single()
            .map(|counted| (counted, keyed.replayed))
    });
    match result {
        Ok((counted, replayed)) => {
            // A replay applied nothing: it counts in no metric.
            if !replayed {
                crate::metrics::events_accepted(series, &w.board, 1);
            }
            BoardOutcome::Written(BoardWritten {
                board: w.board,
                accepted: 1,
                rejected: Vec::new(),
                replayed,
                counted: counted.map(CountedReply::One),
            })
        }
        Err(error) => {
            crate::metrics::event_rejected(series, &w.board, &error);
            failed(w.board, &error)
        }
    }
}

fn failed(board: String, error: &Error) -> BoardOutcome {
    BoardOutcome::Failed(BoardFailed {
        board,
        error: error.into(),
    })
}

/// `?boards=a,b,c&window=`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AcrossQuery {
    /// The boards, comma-separated, 1 to 20 distinct names.
    #[param(pattern = r"^[^,]+(,[^,]+)*$")]
    pub boards: String,
    /// One window (`"1h"`, `"24h"` or seconds) read on every windowed board (a board
    /// without it answers `window_not_found` as its entry); every window of each board
    /// when absent. Trending boards have no windows and answer their score now.
    #[param(pattern = r"^[0-9]*[1-9][0-9]*[smhd]?$")]
    pub window: Option<String>,
}

/// The member on each board named, in that order.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct MemberAcrossResponse {
    /// The member.
    pub member: String,
    /// One entry per board: the member's standing (`kind` tells a windowed board's from a
    /// trending board's), or the board's error.
    pub boards: Vec<MemberOnBoard>,
}

/// One board of a cross-board read.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum MemberOnBoard {
    /// The member's standing on the board.
    Standing(BoardStanding),
    /// The board could not be read.
    Failed(BoardFailed),
}

/// One member on several boards: on a windowed board its total (any sign; 0 when none),
/// rank (`null` unless positive) and percentile in each window (or the one asked); on a
/// trending board its score now. Every board and window is read at once.
#[utoipa::path(
    get, path = "/v1/members/{member}", tag = "rankings", operation_id = "membersAcross",
    params(("member" = String, Path, description = "The member: 1–256 bytes of UTF-8", min_length = 1, max_length = 256), AcrossQuery),
    responses(
        (status = 200, description = "The request was valid: each board's entry, in the order named (a board that cannot be read is an entry with its error)", body = MemberAcrossResponse,
         example = json!({"member": "post:42", "boards": [
             {"kind": "windowed", "board": "hot-posts", "windows": [{"window": "1h", "score": 1, "rank": 2, "percentile": 0.5, "behind": false}, {"window": "1d", "score": 1, "rank": 2, "percentile": 0.5, "behind": false}]},
             {"kind": "trending", "board": "trending-posts", "score": 2.5, "rank": 1, "percentile": 0.0},
             {"board": "top-authors", "error": {"code": "board_not_found", "message": "board \"top-authors\" does not exist"}}]})),
        (status = 422, description = "`invalid_member`, `invalid_board_name`, `invalid_span`, `invalid_query` (no boards, more than 20, a board named twice)", body = ErrorBody),
    )
)]
pub async fn member_across(
    State(state): State<AppState>,
    ApiPath(member): ApiPath<String>,
    ApiQuery(q): ApiQuery<AcrossQuery>,
) -> ApiResult<Json<MemberAcrossResponse>> {
    let window = window(&q.window)?;
    let boards: Vec<&str> = q.boards.split(',').collect();
    let across = state.boards.member_across(&member, &boards, window).await?;
    Ok(Json(MemberAcrossResponse {
        member: across.member,
        boards: across
            .boards
            .into_iter()
            .map(|b| match b.result {
                Ok(standing) => MemberOnBoard::Standing(standing),
                Err(error) => MemberOnBoard::Failed(BoardFailed {
                    board: b.board,
                    error: (&error).into(),
                }),
            })
            .collect(),
    }))
}
