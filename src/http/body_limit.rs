//! Bodies announced larger than the limit are refused before any of them is read: a
//! `Content-Length` over `max_body_bytes` gets 413 `body_too_large` at once, so a client
//! sending `Expect: 100-continue` gets the 413 instead of `100 Continue` (hyper sends
//! that only when a handler starts reading the body). Bodies without a length are cut
//! at the limit while read.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;

/// The 413 answer for a request whose body's known length (`length`: hyper's, from its
/// `Content-Length`) is over `limit`, if it is.
pub(super) fn refusal(length: Option<u64>, limit: usize) -> Option<Response> {
    let announced = length?;
    (announced > limit as u64).then(|| {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!(
                "the request body ({announced} bytes) is larger than the limit of {limit} bytes"
            ),
        )
        .into_response()
    })
}
