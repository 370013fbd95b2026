//! Bodies announced larger than the limit are refused before any of them is read: a
//! `Content-Length` over `max_body_bytes` gets 413 `body_too_large` at once, so a client
//! sending `Expect: 100-continue` gets the 413 instead of `100 Continue` (hyper sends
//! that only when a handler starts reading the body). Bodies without a length are cut
//! at the limit while read, as before.

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::http::header::CONTENT_LENGTH;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;

/// Answers 413 when the request's `Content-Length` is over `limit`.
pub async fn refuse_announced_oversize(
    State(limit): State<usize>,
    request: Request,
    next: Next,
) -> Response {
    let announced = request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    match announced {
        Some(length) if length > limit as u64 => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!("the request body ({length} bytes) is larger than the limit of {limit} bytes"),
        )
        .into_response(),
        _ => next.run(request).await,
    }
}
