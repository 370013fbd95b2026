//! `ApiError`: every error the HTTP API returns, rendered as
//! `{"error":{"code":"…","message":"…"}}` with its status.
//!
//! 400 malformed request · 401/403 auth · 404 unknown board, member, window or route ·
//! 405 wrong method · 409 conflict · 413 body too large or too many events · 415 a body
//! that is not JSON · 422 a valid request the rules reject · 503 store unavailable ·
//! 500 only for store faults.

use axum::Json;
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::Error;

/// An error response.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Stable snake_case code.
    pub code: &'static str,
    /// Human-readable explanation.
    pub message: String,
}

/// The JSON body of every error response.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// What went wrong.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ErrorDetail {
    /// Stable snake_case code, e.g. `too_late`, `board_not_found`.
    pub code: String,
    /// Human-readable explanation.
    pub message: String,
}

impl From<&Error> for ErrorDetail {
    /// A library error's code and message, as a batch reports a rejected item.
    fn from(error: &Error) -> Self {
        ErrorDetail {
            code: error.code().into(),
            message: error.to_string(),
        }
    }
}

impl ApiError {
    /// An error with its status, code and message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }

    /// 400: the request could not be understood.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    /// 415: the body is not JSON (see [`media_type`](super::media_type)).
    pub fn unsupported_media_type() -> Self {
        Self::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "send the body as JSON with Content-Type: application/json",
        )
    }

    /// The JSON body of this error.
    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail {
                code: self.code.to_owned(),
                message: self.message.clone(),
            },
        }
    }
}

/// The status for each library error.
pub fn status_of(error: &Error) -> StatusCode {
    match error {
        Error::InvalidBoardName { .. }
        | Error::InvalidCounterName { .. }
        | Error::InvalidMember { .. }
        | Error::InvalidSpan { .. }
        | Error::InvalidConfig { .. }
        | Error::InvalidTime { .. }
        | Error::InvalidDelta { .. }
        | Error::InvalidQuery { .. }
        | Error::InvalidRateKey { .. }
        | Error::InvalidRateWindow { .. }
        | Error::RateOverflow { .. }
        | Error::TooLate { .. }
        | Error::TooOld { .. }
        | Error::InFuture { .. }
        | Error::OutOfRange { .. }
        | Error::IdempotencyKeyReused { .. } => StatusCode::UNPROCESSABLE_ENTITY,
        Error::InvalidIdempotencyKey { .. } => StatusCode::BAD_REQUEST,
        Error::BoardNotFound(_)
        | Error::WindowNotFound { .. }
        | Error::MemberNotFound { .. }
        | Error::CounterNotFound(_)
        | Error::PrecisionNotFound { .. }
        | Error::StatsNotFound { .. } => StatusCode::NOT_FOUND,
        Error::BoardConflict { .. }
        | Error::TrendingConflict { .. }
        | Error::BoardKind { .. }
        | Error::BoardChanged(_)
        | Error::BoardBusy(_)
        | Error::RelayoutRunning(_) => StatusCode::CONFLICT,
        Error::BatchTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
        Error::StoreUnavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        Error::StoreFull(_) => StatusCode::INSUFFICIENT_STORAGE,
        Error::Store(_) => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl From<Error> for ApiError {
    fn from(error: Error) -> Self {
        if let Error::StoreFull(_) = error {
            crate::metrics::store_full();
        }
        ApiError::new(status_of(&error), error.code(), error.to_string())
    }
}

impl From<BytesRejection> for ApiError {
    fn from(rejection: BytesRejection) -> Self {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                "the request body is larger than the limit",
            )
        } else {
            ApiError::bad_request(rejection.body_text())
        }
    }
}

impl From<QueryRejection> for ApiError {
    fn from(rejection: QueryRejection) -> Self {
        ApiError::bad_request(rejection.body_text())
    }
}

impl From<PathRejection> for ApiError {
    fn from(rejection: PathRejection) -> Self {
        ApiError::bad_request(rejection.body_text())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status.is_server_error() {
            tracing::warn!(code = self.code, message = %self.message, "request failed");
        }
        let mut response = (self.status, Json(self.body())).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// Handler result.
pub type ApiResult<T> = Result<T, ApiError>;
