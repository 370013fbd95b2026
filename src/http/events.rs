//! `POST /v1/boards/{board}/events`: one event, or a batch `{"events": […]}`, optionally
//! under an `Idempotency-Key` header (a retry with the same key and body is applied
//! once and answered as the first time; the key with another body is 422
//! `idempotency_key_reused`).

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::HeaderMap;
use axum::http::header::CONTENT_TYPE;
use serde::Serialize;
use serde_json::Value;

use super::AppState;
use super::auth::WriteAccess;
use super::error::{ApiError, ApiResult, ErrorBody, ErrorDetail};
use super::extract::ApiPath;
use super::wire::{EventsIn, parse_events_body, parse_raw_event};
use crate::{BatchOutcome, Error, Event, Fingerprint, IdempotencyKey};

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
}

/// One rejected event of a batch.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RejectedEvent {
    /// Its index in `events`, from 0.
    pub index: usize,
    /// Why it was rejected.
    pub error: ErrorDetail,
}

/// An event, or a batch of events, as the request body.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub enum EventsBody {
    /// `{"member": "post:1", "delta": 1, "at": 1700000000.5}`: `delta` defaults to 1,
    /// `at` (unix seconds, fractions allowed) to now.
    Single {
        /// The member.
        member: String,
        /// The change (non-zero integer).
        delta: Option<i64>,
        /// When it happened, unix seconds.
        at: Option<f64>,
    },
    /// `{"events": [ … ]}`, up to 10,000 events.
    Batch {
        /// The events.
        events: Vec<Value>,
    },
}

/// Records events: one (200 `{"accepted":1}`, or the error) or a batch (200 with the
/// accepted count and each rejected event's index and error).
#[utoipa::path(
    post, path = "/v1/boards/{board}/events", tag = "events",
    params(
        ("board" = String, Path),
        ("Idempotency-Key" = Option<String>, Header,
         description = "1-255 printable ASCII characters naming this write: a retry with the same key and body within the key's time to live (default 24 h) is applied once and answered as the first time; the same key with another body gets 422 idempotency_key_reused"),
    ),
    request_body = EventsBody,
    responses(
        (status = 200, body = EventsResponse),
        (status = 400, description = "Malformed body or Idempotency-Key", body = ErrorBody),
        (status = 404, description = "Unknown board", body = ErrorBody),
        (status = 413, description = "Body too large or more than 10,000 events", body = ErrorBody),
        (status = 422, description = "The single event was rejected, or the Idempotency-Key was used for another body", body = ErrorBody),
        (status = 503, description = "Store unavailable", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn post_events(
    _: WriteAccess,
    State(state): State<AppState>,
    ApiPath(board): ApiPath<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult<Json<EventsResponse>> {
    let is_json = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !is_json {
        return Err(ApiError::bad_request(
            "send the body as JSON with Content-Type: application/json",
        ));
    }
    let key = idempotency_key(&headers)?;
    let body = body.map_err(ApiError::from)?;
    let fingerprint = key.as_ref().map(|_| Fingerprint::of_bytes(&body));
    let write = |events: Vec<Event>| {
        let (state, board) = (state.clone(), board.clone());
        let (key, fingerprint) = (key.clone(), fingerprint.clone());
        async move { write(&state, &board, &events, key.zip(fingerprint)).await }
    };
    let items = match parse_events_body(&body).map_err(|e| ApiError::bad_request(e.0))? {
        EventsIn::One(event) => {
            let result = write(vec![event]).await.and_then(|outcome| {
                match outcome.rejected.into_iter().next() {
                    Some(rejected) => Err(rejected.error),
                    None => Ok(()),
                }
            });
            if let Err(e) = &result {
                crate::metrics::event_rejected(&board, e);
            }
            result?;
            crate::metrics::events_accepted(&board, 1);
            return Ok(Json(EventsResponse {
                accepted: 1,
                rejected: None,
            }));
        }
        EventsIn::Many(items) => items,
    };
    let max = state.boards.settings().max_batch;
    if items.len() > max {
        return Err(Error::BatchTooLarge {
            len: items.len(),
            max,
        }
        .into());
    }

    // Shape errors are rejected here, by index; the rest go to the library together.
    let mut rejected = Vec::new();
    let mut valid: Vec<Event> = Vec::with_capacity(items.len());
    let mut original_index = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        match parse_raw_event(item.get()) {
            Ok(event) => {
                valid.push(event);
                original_index.push(index);
            }
            Err(e) => rejected.push(RejectedEvent {
                index,
                error: ErrorDetail {
                    code: "invalid_event".into(),
                    message: e.0,
                },
            }),
        }
    }
    let outcome = write(valid).await?;
    for r in outcome.rejected {
        crate::metrics::event_rejected(&board, &r.error);
        rejected.push(RejectedEvent {
            index: original_index[r.index],
            error: ErrorDetail {
                code: r.error.code().into(),
                message: r.error.to_string(),
            },
        });
    }
    rejected.sort_by_key(|r| r.index);
    crate::metrics::events_accepted(&board, outcome.accepted);
    Ok(Json(EventsResponse {
        accepted: outcome.accepted,
        rejected: Some(rejected),
    }))
}

/// The request's `Idempotency-Key`, checked.
fn idempotency_key(headers: &HeaderMap) -> Result<Option<IdempotencyKey>, ApiError> {
    let Some(value) = headers.get(IDEMPOTENCY_KEY) else {
        return Ok(None);
    };
    let text = value.to_str().map_err(|_| {
        ApiError::from(Error::InvalidIdempotencyKey {
            reason: "only printable ASCII characters without spaces are allowed".into(),
        })
    })?;
    Ok(Some(IdempotencyKey::parse(text)?))
}

/// Applies the events, under the key and fingerprint when given.
async fn write(
    state: &AppState,
    board: &str,
    events: &[Event],
    keyed: Option<(IdempotencyKey, Fingerprint)>,
) -> Result<BatchOutcome, Error> {
    match keyed {
        None => state.boards.incr_batch(board, events).await,
        Some((key, fingerprint)) => Ok(state
            .boards
            .write_keyed(board, events, &key, &fingerprint)
            .await?
            .outcome),
    }
}
