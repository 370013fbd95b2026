//! Extractors whose rejections are [`ApiError`]s, so a malformed body, query or path is
//! answered with the same JSON error shape as everything else.

use axum::extract::{FromRequest, FromRequestParts};

use super::error::ApiError;

/// `axum::Json`, rejecting with a JSON [`ApiError`].
#[derive(Debug, FromRequest)]
#[from_request(via(axum::Json), rejection(ApiError))]
pub struct ApiJson<T>(pub T);

/// `axum::extract::Query`, rejecting with a JSON [`ApiError`].
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub struct ApiQuery<T>(pub T);

/// `axum::extract::Path`, rejecting with a JSON [`ApiError`].
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(ApiError))]
pub struct ApiPath<T>(pub T);
