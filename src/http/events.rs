//! `POST /v1/boards/{board}/events`: one event, or a batch `{"events": […]}`, optionally
//! under an `Idempotency-Key` header (a retry with the same key and body is applied
//! once and answered as the first time; the key with another body is 422
//! `idempotency_key_reused`), and with `?return=standing` answering each written
//! member's score and rank before and after the write (`Windowed::incr_batch_standing`).

use axum::body::Bytes;
use axum::extract::{FromRequestParts, State};
use axum::http::HeaderValue;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use super::AppState;
use super::auth::WriteAccess;
use super::error::{ApiError, ApiResult, ErrorBody, ErrorDetail};
use super::extract::{ApiPath, ApiQuery, JsonBytes};
use super::json::{Json, answer};
use super::wire::{BadBody, EventsIn, NotAnEvent, parse_events_body, parse_raw_event};
use crate::{BatchOutcome, Error, Event, Fingerprint, IdempotencyKey, Span, WrittenStanding};

/// The answer to a single event applied with nothing more to say (the usual like), as
/// serde writes it ([`EventsResponse`] with `accepted` 1), written once.
const ONE_ACCEPTED: &[u8] = br#"{"accepted":1}"#;

/// The request header naming a write, so that retrying it is safe.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// What happened to the events of a request.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct EventsResponse {
    /// Events applied.
    pub accepted: usize,
    /// Batches only: the events rejected, by index, with the reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejected: Option<Vec<RejectedEvent>>,
    /// With `?return=standing` only: one per distinct member with an event applied, in
    /// order of first appearance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub standings: Option<Vec<WrittenStanding>>,
    /// On a board keeping contributors (`per_contributor_member`, `per_contributor`), for
    /// events with a `by`: how much of the delta counts in the largest window (the rest
    /// was over the contributor's cap or budget). A single event: a number; a batch:
    /// its applied events with a `by`, by index. Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub counted: Option<CountedReply>,
}

/// What of the events with a contributor counts: a number for a single event, a list
/// by index for a batch.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum CountedReply {
    /// A single event: what of its delta counts in the largest window.
    One(i64),
    /// A batch: each applied event with a `by`, in index order.
    Batch(Vec<CountedEvent>),
}

/// What of one event of a batch counts.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CountedEvent {
    /// Its index in `events`, from 0.
    pub index: usize,
    /// What of its delta counts in the board's largest window (0: the contributor was
    /// at its cap for the member already).
    pub counted: i64,
}

impl CountedReply {
    /// A batch's counted events, by their index in the request (`index` maps an
    /// outcome's index to it); `None` when there are none.
    pub(super) fn batch(
        counted: &[crate::Counted],
        index: impl Fn(usize) -> usize,
    ) -> Option<CountedReply> {
        let mut events: Vec<CountedEvent> = counted
            .iter()
            .map(|c| CountedEvent {
                index: index(c.index),
                counted: c.counted,
            })
            .collect();
        events.sort_by_key(|c| c.index);
        (!events.is_empty()).then_some(CountedReply::Batch(events))
    }
}

/// `?return=standing&windows=1h,24h`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    /// `standing`: also answer each written member's score and rank in the board's
    /// windows just after the write and its rank just before, read atomically with the
    /// write (a windowed board; at most 100 events, 20 distinct members and 40 members
    /// times windows).
    #[serde(rename = "return")]
    #[param(rename = "return", pattern = "^standing$")]
    pub return_: Option<String>,
    /// With `return=standing`: a comma list of the board's windows to answer (`1h,24h`);
    /// every window by default.
    pub windows: Option<String>,
}

/// One rejected event of a batch.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RejectedEvent {
    /// Its index in `events`, from 0.
    pub index: usize,
    /// Why it was rejected.
    pub error: ErrorDetail,
}

/// The body: one event, or a batch `{"events": […]}`.
// Documents the JSON; the handler reads it with `parse_events_body`.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub enum EventsBody {
    /// One event.
    One(EventIn),
    /// A batch.
    Batch(EventBatch),
}

/// One event: `{"member": "post:1", "delta": 1, "at": 1700000000.5}`.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct EventIn {
    /// The member: 1–256 bytes of UTF-8.
    #[schema(min_length = 1, max_length = 256)]
    member: String,
    /// The change: a non-zero integer within ±(2^53 − 1); 1 when absent or null. For a
    /// sum board (the default `aggregate`); a max, min or latest board takes `value` instead.
    #[schema(minimum = -9_007_199_254_740_991_i64, maximum = 9_007_199_254_740_991_i64)]
    delta: Option<i64>,
    /// The value, for a max, min or latest board (`"aggregate":"max"`, `"min"` or `"latest"`): an integer
    /// within ±(2^53 − 1), zero included; required there, refused on a sum board
    /// (`invalid_value`). Not with `delta`.
    #[schema(minimum = -9_007_199_254_740_991_i64, maximum = 9_007_199_254_740_991_i64)]
    value: Option<i64>,
    /// When it happened, unix seconds (fractions allowed, 1970 to 9999); now when absent
    /// or null. Out of that range: 422 `invalid_time`; older than the largest window:
    /// `too_late`; more than the allowed skew ahead: `in_future`.
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
    /// `invalid_contributor`). A board with `per_contributor_member` or `per_contributor`
    /// keeps it and counts each contributor's events within the cap and the budget;
    /// other boards check it and do not keep it.
    #[schema(min_length = 1, max_length = 128, example = "user:7")]
    by: Option<String>,
}

/// One event of a batch: the shape of a single event. Its values are judged on their
/// own: a member outside 1–256 bytes, a zero delta or one beyond ±(2^53 − 1), a time
/// outside 1970 to 9999 or outside the board's windows reject that event alone, reported
/// by its index in `rejected` while the others are applied.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct BatchEvent {
    /// The member: 1–256 bytes of UTF-8.
    member: String,
    /// The change: a non-zero integer within ±(2^53 − 1); 1 when absent or null (a sum
    /// board).
    delta: Option<i64>,
    /// The value (a max, min or latest board): an integer within ±(2^53 − 1). Not with `delta`.
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
    /// Who gave it (1–128 bytes, no control characters), as for a single event.
    #[schema(min_length = 1, max_length = 128)]
    by: Option<String>,
}

/// A batch: `{"events": [ … ]}`. An element that is not of the event's shape (not an
/// object, an unknown or repeated key, a member that is not a string …) refuses the
/// whole batch (400, naming its index; nothing is applied); an event whose values a
/// rule rejects is reported in `rejected` by its index and the others are applied.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct EventBatch {
    /// The events, up to the configured `max_batch` (default 10,000).
    #[schema(max_items = 10_000)]
    events: Vec<BatchEvent>,
}

/// Records events: one (200 `{"accepted":1}`, or the error) or a batch (200 with the
/// accepted count and each rejected event's index and error), on a board of either kind.
/// On a board keeping contributors, the reply says what of each event with a `by`
/// counts (`counted`).
#[utoipa::path(
    post, path = "/v1/boards/{board}/events", tag = "events", operation_id = "boardsPostEvents",
    params(
        ("board" = String, Path, description = "The board: 1–64 characters of A-Z a-z 0-9 _ . : -, not only dots", min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"),
        EventsQuery,
        ("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 255, pattern = r"^[!-~]+$",
         description = "1–255 printable ASCII characters, no spaces, naming this write: a retry with the same key and body within the key's time to live (default 24 h) is applied once and answered as the first time; the same key with another body gets 422 `idempotency_key_reused`"),
    ),
    request_body(content = EventsBody, examples(
        ("one" = (summary = "One like", value = json!({"member": "post:42"}))),
        ("batch" = (summary = "A batch", value = json!({"events": [{"member": "post:7", "delta": 3}, {"member": "post:42", "delta": -1}, {"member": "post:9", "at": 1_700_000_000}]}))),
        ("value" = (summary = "A run's score on a max board", value = json!({"member": "player:7", "value": 4200}))),
        ("by" = (summary = "A like given by a user (a board with per_contributor_member counts it within the cap)", value = json!({"member": "post:42", "by": "user:7"}))),
    )),
    responses(
        (status = 200, description = "Applied: the single event, or the batch's accepted events (with the rejected ones by index); with `return=standing`, each written member's standing", body = EventsResponse,
         example = json!({"accepted": 2, "rejected": [{"index": 2, "error": {"code": "too_late", "message": "the event at 1700000000 is older than every window of board \"hot-posts\""}}]})),
        (status = 400, description = "`bad_request`: not JSON, not an event nor a batch, an unknown or repeated key, a batch element not of the event's shape (its index named); `invalid_idempotency_key`", body = ErrorBody),
        (status = 404, description = "`board_not_found` (unless the service has a default board: then the board is created with it, see docs/operations.md, \"Boards without ceremony\")", body = ErrorBody),
        (status = 409, description = "`board_changed`: the board was dropped or re-created meanwhile; retry; `sharded_unsupported`: `return=standing` on a sharded board", body = ErrorBody),
        (status = 413, description = "`body_too_large`, or `batch_too_large`: more events than `max_batch`", body = ErrorBody),
        (status = 422, description = "The single event was rejected: `invalid_board_name`, `invalid_member`, `invalid_contributor` (a `by` outside 1–128 bytes or with a control character), `invalid_delta`, `invalid_value` (a value on a sum board, none or one beyond ±(2^53 − 1) on a max, min or latest board), `invalid_time`, `too_late`, `in_future`, `out_of_range`, `too_old` (a trending board: older than its max age), `invalid_member_data` (data over 1,024 bytes of compact JSON, or data sent to a trending board); or `idempotency_key_reused`: the Idempotency-Key was used for another body; or `invalid_query`: `return` other than `standing`, `windows` without it or naming a window not of the board, more than 20 distinct members, 40 members times windows or 100 events with `return=standing`, or `return=standing` on a trending board; `invalid_span`: a window of `windows` that is not a span", body = ErrorBody),
    ),
    security(("writeToken" = []), ("adminToken" = []))
)]
pub async fn post_events(
    _: WriteAccess,
    State(state): State<AppState>,
    ApiPath(board): ApiPath<String>,
    ApiQuery(query): ApiQuery<EventsQuery>,
    key: IdempotencyHeader,
    JsonBytes(body): JsonBytes,
) -> ApiResult<Response> {
    let standing = standing_windows(&query)?;
    let key = key.parse()?;
    let fingerprint = key.as_ref().map(|_| Fingerprint::of_bytes(&body));
    let keyed = key.zip(fingerprint);
    let series = state.boards.board_series();
    let parsed = parse_events_body(&body).map_err(|e| match e {
        BadBody::Shape(message) => ApiError::bad_request(message),
        BadBody::Invalid(error) => {
            crate::metrics::event_rejected(series, &board, &error);
            ApiError::from(error)
        }
    })?;
    if let Some(windows) = standing {
        let written = post_standing(&state, &board, parsed, keyed.as_ref(), windows.as_deref());
        return written.await.map(IntoResponse::into_response);
    }
    let items = match parsed {
        EventsIn::One(event) => {
            let events = std::slice::from_ref(&event);
            let result =
                match &keyed {
                    None => state
                        .boards
                        .write_events(&board, events)
                        .await
                        .and_then(|written| written.single().map(|counted| (counted, false))),
                    Some(keyed) => write(&state, &board, events, keyed).await.and_then(
                        |(written, replayed)| written.single().map(|counted| (counted, replayed)),
                    ),
                };
            if let Err(e) = &result {
                crate::metrics::event_rejected(series, &board, e);
            }
            let (counted, replayed) = result?;
            // A replay applied nothing: it counts in no metric.
            if !replayed {
                crate::metrics::events_accepted(series, &board, 1);
            }
            return Ok(match counted {
                None => answer(Bytes::from_static(ONE_ACCEPTED)),
                Some(counted) => Json(EventsResponse {
                    accepted: 1,
                    rejected: None,
                    standings: None,
                    counted: Some(CountedReply::One(counted)),
                })
                .into_response(),
            });
        }
        EventsIn::Many(items) => items,
    };
    let BatchEvents {
        valid,
        index: original_index,
        mut rejected,
    } = batch_events(&state, &board, &items)?;
    let (outcome, replayed) = match &keyed {
        None => (state.boards.write_events(&board, &valid).await?, false),
        Some(keyed) => write(&state, &board, &valid, keyed).await?,
    };
    for r in outcome.rejected {
        if !replayed {
            crate::metrics::event_rejected(series, &board, &r.error);
        }
        rejected.push(RejectedEvent {
            index: original_index[r.index],
            error: (&r.error).into(),
        });
    }
    rejected.sort_by_key(|r| r.index);
    if !replayed {
        crate::metrics::events_accepted(series, &board, outcome.accepted);
    }
    Ok(Json(EventsResponse {
        accepted: outcome.accepted,
        rejected: Some(rejected),
        standings: None,
        counted: CountedReply::batch(&outcome.counted, |i| original_index[i]),
    })
    .into_response())
}

/// A batch's events as parsed.
struct BatchEvents {
    /// Those of the event's shape (a rule may still reject them).
    valid: Vec<Event>,
    /// Each valid event's index in the batch.
    index: Vec<usize>,
    /// Those a rule rejected already.
    rejected: Vec<RejectedEvent>,
}

/// The events of a batch (see [`BatchEvents`]). An element not of the event's shape
/// refuses the batch.
fn batch_events(
    state: &AppState,
    board: &str,
    items: &[&serde_json::value::RawValue],
) -> Result<BatchEvents, ApiError> {
    state
        .boards
        .settings()
        .admission()
        .check_batch(items.len())?;
    let series = state.boards.board_series();
    let mut rejected = Vec::new();
    let mut valid: Vec<Event> = Vec::with_capacity(items.len());
    let mut original_index = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        match parse_raw_event(item.get()) {
            Ok(event) => {
                valid.push(event);
                original_index.push(index);
            }
            Err(NotAnEvent::Shape(message)) => {
                return Err(ApiError::bad_request(format!(
                    "events[{index}]: {message}; nothing was applied"
                )));
            }
            Err(NotAnEvent::Invalid(error)) => rejected.push((index, error)),
        }
    }
    for (_, error) in &rejected {
        crate::metrics::event_rejected(series, board, error);
    }
    let rejected = rejected
        .into_iter()
        .map(|(index, error)| RejectedEvent {
            index,
            error: (&error).into(),
        })
        .collect();
    Ok(BatchEvents {
        valid,
        index: original_index,
        rejected,
    })
}

/// `Some` for `?return=standing`, with the windows asked (`None`: every window);
/// `return` other than `standing`, or `windows` without it, is `invalid_query`.
fn standing_windows(query: &EventsQuery) -> Result<Option<Option<Vec<Span>>>, ApiError> {
    match query.return_.as_deref() {
        None if query.windows.is_some() => Err(Error::InvalidQuery {
            reason: "windows is read with return=standing only: add return=standing, or \
                     leave out windows"
                .into(),
        }
        .into()),
        None => Ok(None),
        Some("standing") => {
            let windows = query
                .windows
                .as_deref()
                .map(|list| {
                    list.split(',')
                        .map(Span::parse)
                        .collect::<crate::Result<Vec<_>>>()
                })
                .transpose()?;
            Ok(Some(windows))
        }
        Some(other) => Err(Error::InvalidQuery {
            reason: format!("return={other:?} is not known: the accepted value is return=standing"),
        }
        .into()),
    }
}

/// A write with `?return=standing`: one event or a batch, in one atomic store call that
/// also reads each written member's standing (see `Windowed::incr_batch_standing`).
async fn post_standing(
    state: &AppState,
    board: &str,
    parsed: EventsIn<'_>,
    keyed: Option<&(IdempotencyKey, Fingerprint)>,
    windows: Option<&[Span]>,
) -> ApiResult<Json<EventsResponse>> {
    let series = state.boards.board_series();
    let (valid, original_index, mut rejected, single) = match parsed {
        EventsIn::One(event) => (vec![event], vec![0], Vec::new(), true),
        EventsIn::Many(items) => {
            let batch = batch_events(state, board, &items)?;
            (batch.valid, batch.index, batch.rejected, false)
        }
    };
    let written = match keyed {
        None => {
            state
                .boards
                .windowed(board)
                .incr_batch_standing(&valid, windows)
                .await
        }
        Some((key, fingerprint)) => {
            state
                .boards
                .windowed(board)
                .write_keyed_standing(&valid, windows, key, fingerprint)
                .await
        }
    };
    let written = match written {
        Ok(written) => written,
        Err(error) => {
            if single {
                crate::metrics::event_rejected(series, board, &error);
            }
            return Err(error.into());
        }
    };
    let replayed = written.replayed;
    let counted = if single {
        written
            .outcome
            .counted
            .first()
            .map(|c| CountedReply::One(c.counted))
    } else {
        CountedReply::batch(&written.outcome.counted, |i| original_index[i])
    };
    for r in written.outcome.rejected {
        if !replayed {
            crate::metrics::event_rejected(series, board, &r.error);
        }
        if single {
            return Err(r.error.into());
        }
        rejected.push(RejectedEvent {
            index: original_index[r.index],
            error: (&r.error).into(),
        });
    }
    rejected.sort_by_key(|r| r.index);
    if !replayed {
        crate::metrics::events_accepted(series, board, written.outcome.accepted);
    }
    Ok(Json(EventsResponse {
        accepted: written.outcome.accepted,
        rejected: (!single).then_some(rejected),
        standings: Some(written.standings),
        counted,
    }))
}

/// The request's `Idempotency-Key` header, taken alone (axum's `HeaderMap` extractor
/// copies every header of every write), and parsed where the handler asks: a bad query
/// is answered before a bad key.
pub(super) struct IdempotencyHeader(Option<HeaderValue>);

impl<S: Send + Sync> FromRequestParts<S> for IdempotencyHeader {
    type Rejection = std::convert::Infallible;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(IdempotencyHeader(
            parts.headers.get(IDEMPOTENCY_KEY).cloned(),
        ))
    }
}

impl IdempotencyHeader {
    /// The key, if the request names one: 422 `invalid_idempotency_key` when it is not
    /// 1–255 printable ASCII characters without spaces.
    pub(super) fn parse(&self) -> Result<Option<IdempotencyKey>, ApiError> {
        let Some(value) = &self.0 else {
            return Ok(None);
        };
        let text = value.to_str().map_err(|_| {
            ApiError::from(Error::InvalidIdempotencyKey {
                reason: "only printable ASCII characters without spaces are allowed".into(),
            })
        })?;
        Ok(Some(IdempotencyKey::parse(text)?))
    }
}

/// Applies the events once under the key and the body's fingerprint: the outcome, and
/// whether it was a replay (nothing applied this time).
async fn write(
    state: &AppState,
    board: &str,
    events: &[Event],
    (key, fingerprint): &(IdempotencyKey, Fingerprint),
) -> Result<(BatchOutcome, bool), Error> {
    let written = state
        .boards
        .write_events_keyed(board, events, key, fingerprint)
        .await?;
    Ok((written.outcome, written.replayed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_accepted_is_what_serde_writes() {
        let one = EventsResponse {
            accepted: 1,
            rejected: None,
            standings: None,
            counted: None,
        };
        assert_eq!(serde_json::to_vec(&one).unwrap(), ONE_ACCEPTED);
    }
}
