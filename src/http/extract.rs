//! Extractors whose rejections are [`ApiError`]s, so a malformed body, query or path is
//! answered with the same JSON error shape as everything else.
//!
//! Every JSON body goes through [`JsonBytes`]: a `Content-Type` that is not JSON (see
//! [`media_type`](super::media_type)) is 415 `unsupported_media_type`, a body over the
//! limit 413 `body_too_large`, the same on every route.

use std::future::poll_fn;
use std::pin::Pin;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use super::error::ApiError;
use super::{media_type, plain_query};

/// A JSON body parsed into `T`; the rejection is a JSON [`ApiError`].
#[derive(Debug)]
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;
    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let JsonBytes(body) = JsonBytes::from_request(request, state).await?;
        parse(&body).map(ApiJson)
    }
}

/// A JSON body as bytes, for handlers that parse it themselves.
#[derive(Debug)]
pub struct JsonBytes(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for JsonBytes {
    type Rejection = ApiError;
    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        if !media_type::is_json(request.headers()) {
            return Err(ApiError::unsupported_media_type());
        }
        Ok(JsonBytes(body(request, state).await?))
    }
}

/// The request's body. One of a length hyper knows (its `Content-Length`, which the
/// edge held against the limit before any of it was read) is read as it comes; axum's
/// extractor wraps every body in its limit (a box) and gathers it in a list (~1,500
/// instructions of a like's). One sent in chunks goes through axum's, cut at the limit
/// the edge set.
async fn body<S: Send + Sync>(request: Request, state: &S) -> Result<Bytes, ApiError> {
    if request.body().size_hint().exact().is_some() {
        return whole(request.into_body()).await;
    }
    Ok(Bytes::from_request(request, state).await?)
}

/// The whole of `body`, which ends where its length says: a body in one frame (most
/// are) is that frame's bytes, not copied.
async fn whole(mut body: Body) -> Result<Bytes, ApiError> {
    let (mut first, mut joined) = (Bytes::new(), Vec::new());
    while !body.is_end_stream() {
        let Some(frame) = poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await else {
            break;
        };
        let frame = frame.map_err(|e| {
            ApiError::bad_request(format!("Failed to buffer the request body: {e}"))
        })?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if first.is_empty() {
            first = data;
        } else {
            if joined.is_empty() {
                joined.extend_from_slice(&first);
            }
            joined.extend_from_slice(&data);
        }
    }
    Ok(if joined.is_empty() {
        first
    } else {
        joined.into()
    })
}

/// A JSON body that may be left out: an empty body is `None`, whatever its
/// `Content-Type`; any other body must be JSON (a blank one is not: 400), and `null` is
/// `None` too.
#[derive(Debug)]
pub struct OptionalJson<T>(pub Option<T>);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for OptionalJson<T> {
    type Rejection = ApiError;
    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let is_json = media_type::is_json(request.headers());
        let body = body(request, state).await?;
        // No body at all is the default; a body of spaces is not JSON (400 below).
        if body.is_empty() {
            return Ok(OptionalJson(None));
        }
        if !is_json {
            return Err(ApiError::unsupported_media_type());
        }
        if body.trim_ascii() == b"null" {
            return Ok(OptionalJson(None));
        }
        parse(&body).map(|value| OptionalJson(Some(value)))
    }
}

/// Parses a JSON body, always an object; a syntax error or a wrong shape is 400
/// `bad_request`. (serde would also read a struct from an array of its fields.)
fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let text = body.trim_ascii_start();
    if !text.is_empty()
        && text[0] != b'{'
        && serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok()
    {
        return Err(ApiError::bad_request("the JSON body must be an object"));
    }
    serde_json::from_slice(body).map_err(|e| {
        if e.is_data() {
            ApiError::bad_request(format!("the JSON body does not fit: {e}"))
        } else {
            ApiError::bad_request(format!("Failed to parse the request body as JSON: {e}"))
        }
    })
}

/// `axum::extract::Query`, rejecting with a JSON [`ApiError`] that names the parameter
/// and what it expects (see [`ApiError::query`]). A query that parses is read without
/// axum's tracking of where in it the parser is (`serde_path_to_error`: query parsing
/// took 1.68% of a cached read's CPU, 0.99% without), and without decoding when nothing
/// in it is encoded ([`plain_query`]); only one that does not parse is read again by
/// axum, for its message.
#[derive(Debug)]
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or("");
        plain_query::from_plain(query)
            .unwrap_or_else(|| serde_urlencoded::from_str(query))
            .map(ApiQuery)
            .or_else(|_| {
                axum::extract::Query::try_from_uri(&parts.uri)
                    .map(|axum::extract::Query(value)| ApiQuery(value))
                    .map_err(|rejection| ApiError::query(&rejection, query))
            })
    }
}

/// `axum::extract::Path`, rejecting with a JSON [`ApiError`] that names the parameter.
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(ApiError))]
pub struct ApiPath<T>(pub T);
