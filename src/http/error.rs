//! `ApiError`: every error the HTTP API returns, rendered as
//! `{"error":{"code":"…","message":"…"}}` with its status.
//!
//! 400 malformed request · 401/403 auth · 404 unknown board, member, window or route ·
//! 405 wrong method · 409 conflict · 413 body too large or too many events · 415 a body
//! that is not JSON · 422 a valid request the rules reject · 503 store unavailable ·
//! 500 only for store faults.

use axum::extract::path::ErrorKind as PathErrorKind;
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::json::Json;
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

    /// 500: the request failed in a way the service did not plan for.
    pub fn internal() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "the request failed unexpectedly",
        )
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
        | Error::InvalidValue { .. }
        | Error::InvalidQuery { .. }
        | Error::InvalidMemberData { .. }
        | Error::InvalidModeration { .. }
        | Error::InvalidContributor { .. }
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
        | Error::RetractionNotFound(_)
        | Error::WindowNotFound { .. }
        | Error::MemberNotFound { .. }
        | Error::CounterNotFound(_)
        | Error::PrecisionNotFound { .. }
        | Error::StatsNotFound { .. }
        | Error::RankingEmpty { .. } => StatusCode::NOT_FOUND,
        Error::BoardConflict { .. }
        | Error::HiddenEverywhere { .. }
        | Error::TrendingConflict { .. }
        | Error::BoardKind { .. }
        | Error::AggregateUnsupported { .. }
        | Error::ShardedUnsupported { .. }
        | Error::BoardChanged(_)
        | Error::BoardBusy(_)
        | Error::RelayoutRunning(_)
        | Error::ReshardRunning { .. } => StatusCode::CONFLICT,
        Error::ChangesTrimmed { .. } => StatusCode::GONE,
        Error::BatchTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
        Error::StoreUnavailable(_) | Error::WriteUncertain(_) => StatusCode::SERVICE_UNAVAILABLE,
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
    /// Without the query string at hand (see [`ApiError::query`] for the extractor's).
    fn from(rejection: QueryRejection) -> Self {
        ApiError::query(&rejection, "")
    }
}

impl ApiError {
    /// 400 for a query string that does not fit the route's parameters: which parameter
    /// and what it expects, in words of this API rather than of serde or axum. `query` is
    /// the raw query string, to tell a negative number from a malformed one.
    pub fn query(rejection: &QueryRejection, query: &str) -> Self {
        let text = rejection.body_text();
        let detail = text
            .strip_prefix("Failed to deserialize query string: ")
            .unwrap_or(&text);
        ApiError::bad_request(query_message(detail, query))
    }
}

/// The message for serde's account of a query string (serde_urlencoded's error, prefixed
/// with the parameter's name when serde_path_to_error knows it).
fn query_message(detail: &str, query: &str) -> String {
    let quoted = |text: &str, prefix: &str| {
        text.strip_prefix(prefix)
            .and_then(|rest| rest.split_once('`'))
            .map(|(name, _)| name.to_owned())
    };
    if let Some(name) = quoted(detail, "missing field `") {
        return format!("query parameter {name} is required");
    }
    if let Some(name) = quoted(detail, "duplicate field `") {
        return format!("query parameter {name} is given more than once");
    }
    let (name, what) = match detail.split_once(": ") {
        Some((name, what)) if is_parameter_name(name) => (Some(name), what),
        _ => (None, detail),
    };
    if let Some(name) = name.and_then(|_| quoted(what, "duplicate field `")) {
        return format!("query parameter {name} is given more than once");
    }
    let value = name.and_then(|name| query_value(query, name));
    let negative = value.is_some_and(|v| {
        v.strip_prefix('-')
            .is_some_and(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
    });
    let expected = match what {
        "invalid digit found in string" if negative => "expected a non-negative integer".to_owned(),
        "invalid digit found in string" => "expected an integer".to_owned(),
        "cannot parse integer from empty string" => {
            "expected an integer, not an empty value".to_owned()
        }
        "number too large to fit in target type" => "the number is too large".to_owned(),
        "number too small to fit in target type" => "the number is too small".to_owned(),
        "invalid float literal" => "expected a number".to_owned(),
        "cannot parse float from empty string" => {
            "expected a number, not an empty value".to_owned()
        }
        "provided string was not `true` or `false`" => "expected `true` or `false`".to_owned(),
        _ => match what
            .strip_prefix("unknown variant `")
            .and_then(|rest| rest.split_once(", expected "))
        {
            Some((_, one_of)) => format!("expected {one_of}"),
            None => "does not parse".to_owned(),
        },
    };
    match name {
        Some(name) => format!("query parameter {name}: {expected}"),
        None => "the query string does not parse".to_owned(),
    }
}

/// A query parameter's name as this API spells them (`min_score`, `last`).
fn is_parameter_name(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The first raw value of `name` in a query string (not percent-decoded).
fn query_value<'a>(query: &'a str, name: &str) -> Option<&'a str> {
    query.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        (key == name).then_some(value)
    })
}

impl From<PathRejection> for ApiError {
    /// 400 naming the path parameter (the service's are all text, so only bytes that are
    /// not UTF-8 once percent-decoded fail); a handler that does not fit its route is
    /// the service's fault, 500.
    fn from(rejection: PathRejection) -> Self {
        let PathRejection::FailedToDeserializePathParams(failed) = rejection else {
            return ApiError::internal();
        };
        let message = match failed.kind() {
            PathErrorKind::InvalidUtf8InPathParam { key } => {
                format!("path parameter {key}: expected UTF-8 text once percent-decoded")
            }
            PathErrorKind::ParseErrorAtKey {
                key, expected_type, ..
            } => format!(
                "path parameter {key}: expected {}",
                type_phrase(expected_type)
            ),
            PathErrorKind::DeserializeError { key, .. } => {
                format!("path parameter {key}: expected {}", type_phrase(""))
            }
            PathErrorKind::ParseErrorAtIndex { .. }
            | PathErrorKind::ParseError { .. }
            | PathErrorKind::Message(_) => "a path parameter does not parse".to_owned(),
            _ => return ApiError::internal(),
        };
        ApiError::bad_request(message)
    }
}

/// What a Rust type name stands for in a path parameter.
fn type_phrase(type_name: &str) -> &'static str {
    match type_name {
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => "a non-negative integer",
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "an integer",
        "f32" | "f64" => "a number",
        "bool" => "`true` or `false`",
        _ => "a value of the documented form",
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

#[cfg(test)]
mod tests {
    use axum::extract::Query;
    use axum::http::Uri;
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Params {
        limit: Option<u64>,
        min_score: Option<i64>,
        from: Option<f64>,
        fill: Option<bool>,
        layout: Option<Shape>,
        members: String,
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum Shape {
        Flat,
        Packed,
    }

    /// The message a real query string's rejection gets.
    fn message(query: &str) -> String {
        let uri: Uri = format!("/x?{query}").parse().unwrap();
        let rejection = Query::<Params>::try_from_uri(&uri).unwrap_err();
        let error = ApiError::query(&rejection, query);
        assert_eq!(
            (error.status, error.code),
            (StatusCode::BAD_REQUEST, "bad_request")
        );
        error.message
    }

    #[test]
    fn a_query_error_names_the_parameter_and_what_it_expects() {
        for (query, expected) in [
            (
                "members=a&limit=abc",
                "query parameter limit: expected an integer",
            ),
            (
                "members=a&limit=1.5",
                "query parameter limit: expected an integer",
            ),
            (
                "members=a&limit=-1",
                "query parameter limit: expected a non-negative integer",
            ),
            (
                "members=a&min_score=-1x",
                "query parameter min_score: expected an integer",
            ),
            (
                "members=a&limit=",
                "query parameter limit: expected an integer, not an empty value",
            ),
            (
                "members=a&limit=18446744073709551616",
                "query parameter limit: the number is too large",
            ),
            (
                "members=a&min_score=-9223372036854775809",
                "query parameter min_score: the number is too small",
            ),
            (
                "members=a&from=soon",
                "query parameter from: expected a number",
            ),
            (
                "members=a&from=",
                "query parameter from: expected a number, not an empty value",
            ),
            (
                "members=a&fill=yes",
                "query parameter fill: expected `true` or `false`",
            ),
            (
                "members=a&layout=round",
                "query parameter layout: expected `flat` or `packed`",
            ),
            ("limit=1", "query parameter members is required"),
            (
                "members=a&members=b",
                "query parameter members is given more than once",
            ),
        ] {
            let got = message(query);
            assert_eq!(got, expected, "{query}");
            for framework in [
                "Failed to deserialize",
                "invalid digit",
                "serde",
                "float literal",
            ] {
                assert!(!got.contains(framework), "{query}: {got}");
            }
        }
    }

    #[test]
    fn an_unknown_account_still_names_no_framework() {
        assert_eq!(
            query_message("limit: something new", "limit=1"),
            "query parameter limit: does not parse"
        );
        assert_eq!(
            query_message("something new without a name", ""),
            "the query string does not parse"
        );
        assert_eq!(
            query_message(
                "limit: unknown variant `x`, expected one of `a`, `b`, `c`",
                ""
            ),
            "query parameter limit: expected one of `a`, `b`, `c`"
        );
    }
}
