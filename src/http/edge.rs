//! The edge: the one layer every request of the router passes through, doing in one
//! step what would otherwise be six layers (each layer of an axum router clones and
//! boxes its part of the stack on every request):
//! - a panic in a handler is answered 500 `internal` (tower-http's `CatchPanic`);
//! - a body announced larger than `max_body_bytes` is refused with 413 before any of it
//!   is read ([`body_limit`](super::body_limit)), and bodies read are cut at that limit
//!   (axum's `DefaultBodyLimit`);
//! - a request that takes longer than `request_timeout` is answered 503 `timeout`;
//! - its latency goes to the Prometheus histogram of its route ([`latency`]);
//! - with access times on (`rollboard serve`), its duration is recorded as a stats
//!   value of its route ([`access_time`](super::access_time)).

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use pin_project_lite::pin_project;
use tokio::time::Timeout;
use tower::{Layer, Service};
use tower_http::catch_panic::{CatchPanic, CatchPanicLayer};

use super::error::ApiError;
use super::{access_time, body_limit, latency};
use crate::Rollboard;

/// The edge's settings (see the module docs).
#[derive(Clone)]
pub(super) struct EdgeLayer {
    max_body_bytes: usize,
    request_timeout: Duration,
    /// Where access times are recorded (`None`: not recorded).
    access_times: Option<Rollboard>,
}

impl EdgeLayer {
    pub(super) fn new(
        max_body_bytes: usize,
        request_timeout: Duration,
        access_times: Option<Rollboard>,
    ) -> Self {
        EdgeLayer {
            max_body_bytes,
            request_timeout,
            access_times,
        }
    }
}

/// What a panic is answered with.
type PanicResponse = fn(Box<dyn Any + Send + 'static>) -> Response<Body>;

fn panic_response(_: Box<dyn Any + Send + 'static>) -> Response<Body> {
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal",
        "the request failed unexpectedly",
    )
    .into_response()
}

impl<S> Layer<S> for EdgeLayer {
    type Service = CatchPanic<Edge<S>, PanicResponse>;

    fn layer(&self, inner: S) -> Self::Service {
        CatchPanicLayer::custom(panic_response as PanicResponse).layer(Edge {
            inner,
            layer: self.clone(),
        })
    }
}

/// The service [`EdgeLayer`] wraps around each route (inside the panic catcher).
#[derive(Clone)]
pub(super) struct Edge<S> {
    inner: S,
    layer: EdgeLayer,
}

impl<S, E> Service<Request> for Edge<S>
where
    S: Service<Request, Response = Response, Error = E>,
{
    type Response = Response;
    type Error = E;
    type Future = EdgeFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), E>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        let layer = &self.layer;
        let observed = Observed {
            start: Instant::now(),
            method: request.method().clone(),
            route: request.extensions().get::<MatchedPath>().cloned(),
            access_times: layer.access_times.clone(),
        };
        let state = match body_limit::refusal(request.headers(), layer.max_body_bytes) {
            Some(refused) => State::Refused {
                response: Some(refused),
            },
            None => {
                DefaultBodyLimit::max(layer.max_body_bytes).apply(&mut request);
                State::Running {
                    call: tokio::time::timeout(layer.request_timeout, self.inner.call(request)),
                    limit: layer.request_timeout,
                }
            }
        };
        EdgeFuture { state, observed }
    }
}

/// What is recorded of a request once it is answered.
struct Observed {
    start: Instant,
    method: Method,
    route: Option<MatchedPath>,
    access_times: Option<Rollboard>,
}

impl Observed {
    fn record(&mut self, status: StatusCode) {
        let seconds = self.start.elapsed().as_secs_f64();
        if let (Some(boards), Some(route)) = (&self.access_times, &self.route) {
            let route = route.as_str();
            boards.record_stat_deferred(route, access_time::kind_of(route), seconds);
        }
        latency::latency(self.method.clone(), self.route.take(), status).record(seconds);
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F> {
        /// Refused before the route was called (413).
        Refused { response: Option<Response> },
        /// The route's call, under the request timeout.
        Running { #[pin] call: Timeout<F>, limit: Duration },
    }
}

pin_project! {
    /// The future of [`Edge`]'s call: the route's answer, then what is recorded of it.
    pub(super) struct EdgeFuture<F> {
        #[pin]
        state: State<F>,
        observed: Observed,
    }
}

impl<F, E> Future for EdgeFuture<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let response = match this.state.project() {
            StateProj::Refused { response } => response.take().expect("polled after it answered"),
            StateProj::Running { call, limit } => match ready!(call.poll(cx)) {
                Ok(Ok(response)) => response,
                Ok(Err(error)) => return Poll::Ready(Err(error)),
                Err(_) => ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "timeout",
                    format!("the request took longer than {} ms", limit.as_millis()),
                )
                .into_response(),
            },
        };
        this.observed.record(response.status());
        Poll::Ready(Ok(response))
    }
}
