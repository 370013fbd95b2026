//! CORS from the [`Live`](super::live::Live) origins: off (no CORS headers at all, not
//! even `Vary`) while the list is empty; otherwise tower-http's [`CorsLayer`], answering
//! `*` when the list has it, else the origins in the list. A reload turns it on, off, or changes the origins
//! from the next request on.

use std::task::{Context, Poll};

use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue, Method, header, request::Parts};
use futures_util::future::Either;
use tower::{Layer, Service};
use tower_http::cors::{AllowOrigin, Cors, CorsLayer};

use super::live::Reload;

/// Wraps a service in [`LiveCors`].
#[derive(Clone)]
pub(super) struct LiveCorsLayer {
    live: Reload,
}

impl LiveCorsLayer {
    pub(super) fn new(live: Reload) -> Self {
        LiveCorsLayer { live }
    }
}

impl<S: Clone> Layer<S> for LiveCorsLayer {
    type Service = LiveCors<S>;

    fn layer(&self, inner: S) -> Self::Service {
        let live = self.live.clone();
        let listed = AllowOrigin::predicate(move |origin: &HeaderValue, _: &Parts| {
            let live = live.load();
            live.cors_origins
                .iter()
                .any(|o| o.as_bytes() == origin.as_bytes())
        });
        let cors = CorsLayer::new()
            .allow_methods([
                Method::GET,
                Method::POST,
                Method::PUT,
                Method::DELETE,
                Method::OPTIONS,
            ])
            .allow_headers([
                header::CONTENT_TYPE,
                header::AUTHORIZATION,
                HeaderName::from_static("idempotency-key"),
            ]);
        LiveCors {
            any: cors
                .clone()
                .allow_origin(AllowOrigin::any())
                .layer(inner.clone()),
            listed: cors.allow_origin(listed).layer(inner.clone()),
            inner,
            live: self.live.clone(),
        }
    }
}

/// The service [`LiveCorsLayer`] wraps.
#[derive(Clone)]
pub(super) struct LiveCors<S> {
    inner: S,
    /// For a list with `*`.
    any: Cors<S>,
    /// For a list of origins.
    listed: Cors<S>,
    live: Reload,
}

impl<S, B> Service<Request> for LiveCors<S>
where
    S: Service<Request, Response = axum::http::Response<B>> + Clone,
    B: Default,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Either<S::Future, <Cors<S> as Service<Request>>::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        // All three wrap clones of one router, which is always ready.
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let live = self.live.load();
        if live.cors_origins.is_empty() {
            Either::Left(self.inner.call(request))
        } else if live.cors_origins.iter().any(|o| o == "*") {
            Either::Right(self.any.call(request))
        } else {
            Either::Right(self.listed.call(request))
        }
    }
}
