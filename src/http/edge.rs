//! The edge: the one layer every request of the router passes through, doing in one
//! step what would otherwise be six layers (each layer of an axum router clones and
//! boxes its part of the stack on every request):
//! - with CORS origins configured, all of what follows runs inside tower-http's CORS
//!   layer ([`cors`](super::cors)): it answers preflights, and every answer, the edge's
//!   own included, gets its headers;
//! - on a route that reads, a request without a token the read token's rule accepts is
//!   answered 401 before anything else ([`auth`](super::auth));
//! - a panic in a handler is answered 500 `internal`, and recorded like any answer;
//! - a body announced larger than `max_body_bytes` is refused with 413 before any of it
//!   is read ([`body_limit`](super::body_limit)), and one sent in chunks is cut at that
//!   limit as it is read (axum's `DefaultBodyLimit`, set on those requests only: the
//!   [`extract`](super::extract)ors read a body of known length whole);
//! - a request that takes longer than `request_timeout` is answered 503 `timeout`;
//! - its latency goes to the Prometheus histogram of its route ([`latency`]);
//! - with access times on (`rollboard serve`), its duration is recorded as a stats
//!   value of its route ([`access_time`](super::access_time));
//! - with the access log on, it is logged ([`access_log`](super::access_log)).
//!
//! The tokens, the access log and the CORS origins are read from the
//! [`Live`](super::live::Live) options once per request, so a reload applies from the
//! next request on.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::HttpBody;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::future::Either;
use pin_project_lite::pin_project;
use tokio::time::Timeout;
use tower::{Layer, Service};
use tower_http::cors::ResponseFuture as CorsFuture;

use super::cors::Cors;
use super::error::ApiError;
use super::live::{Live, Reload};
use super::{access_log, access_time, body_limit, latency};
use crate::Rollboard;

/// The edge's settings (see the module docs).
#[derive(Clone)]
pub(super) struct EdgeLayer {
    max_body_bytes: usize,
    request_timeout: Duration,
    /// Where access times are recorded (`None`: not recorded).
    access_times: Option<Rollboard>,
    /// The tokens, the access log and the CORS origins.
    live: Reload,
    /// The CORS layers.
    cors: Arc<Cors>,
    /// Whether the routes read (and so need the read token when one is configured).
    reads: bool,
}

impl EdgeLayer {
    pub(super) fn new(
        max_body_bytes: usize,
        request_timeout: Duration,
        access_times: Option<Rollboard>,
        live: Reload,
    ) -> Self {
        EdgeLayer {
            max_body_bytes,
            request_timeout,
            access_times,
            cors: Arc::new(Cors::new(live.clone())),
            live,
            reads: false,
        }
    }

    /// The same edge for routes that read.
    pub(super) fn reading(&self) -> Self {
        EdgeLayer {
            reads: true,
            ..self.clone()
        }
    }
}

/// The answer to a request whose handler panicked.
fn panicked() -> Response {
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal",
        "the request failed unexpectedly",
    )
    .into_response()
}

impl<S> Layer<S> for EdgeLayer {
    type Service = Edge<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Edge {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service [`EdgeLayer`] wraps around each route.
#[derive(Clone)]
pub(super) struct Edge<S> {
    inner: S,
    layer: EdgeLayer,
}

impl<S, E> Service<Request> for Edge<S>
where
    S: Service<Request, Response = Response, Error = E> + Clone,
{
    type Response = Response;
    type Error = E;
    type Future = Either<EdgeFuture<S::Future>, CorsFuture<EdgeFuture<S::Future>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), E>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let live = self.layer.live.load();
        match self.layer.cors.layer(&live.cors_origins) {
            None => Either::Left(self.edge(request, &live)),
            Some(cors) => Either::Right(cors.layer(InCors(self.clone())).call(request)),
        }
    }
}

/// The edge as the CORS layer calls it.
#[derive(Clone)]
pub(super) struct InCors<S>(Edge<S>);

impl<S, E> Service<Request> for InCors<S>
where
    S: Service<Request, Response = Response, Error = E> + Clone,
{
    type Response = Response;
    type Error = E;
    type Future = EdgeFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), E>> {
        self.0.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let live = self.0.layer.live.load();
        self.0.edge(request, &live)
    }
}

impl<S, E> Edge<S>
where
    S: Service<Request, Response = Response, Error = E>,
{
    /// Everything the edge does but CORS, under the `live` options.
    fn edge(&mut self, mut request: Request, live: &Live) -> EdgeFuture<S::Future> {
        let layer = &self.layer;
        let route = request.extensions().get::<MatchedPath>().cloned();
        let observed = Observed {
            start: Instant::now(),
            method: request.method().clone(),
            logged: live
                .access_log
                .then(|| access_log::route(route.as_ref(), request.uri())),
            route,
            access_times: layer.access_times.clone(),
        };
        let refused = match layer.reads {
            true => live.tokens.may_read(request.headers()).err(),
            false => None,
        };
        // The body's length, when known (a `Content-Length`); one sent in chunks has none.
        let length = request.body().size_hint().exact();
        let refused = refused
            .map(IntoResponse::into_response)
            .or_else(|| body_limit::refusal(length, layer.max_body_bytes));
        let state = match refused {
            Some(refused) => State::Refused {
                response: Some(refused),
            },
            None => {
                if length.is_none() {
                    DefaultBodyLimit::max(layer.max_body_bytes).apply(&mut request);
                }
                let inner = &mut self.inner;
                match catch_unwind(AssertUnwindSafe(|| inner.call(request))) {
                    Ok(call) => State::Running {
                        call: tokio::time::timeout(layer.request_timeout, call),
                        limit: layer.request_timeout,
                    },
                    Err(_) => State::Refused {
                        response: Some(panicked()),
                    },
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
    /// The route as the access log names it, when the log is on.
    logged: Option<String>,
}

impl Observed {
    fn record(&mut self, status: StatusCode) {
        let seconds = self.start.elapsed().as_secs_f64();
        if let Some(route) = &self.logged {
            access_log::line(&self.method, route, status, seconds);
        }
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
        /// Answered without the route: refused (413), or its call panicked.
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
            StateProj::Running { call, limit } => {
                match catch_unwind(AssertUnwindSafe(|| call.poll(cx))) {
                    Err(_) => panicked(),
                    Ok(Poll::Pending) => return Poll::Pending,
                    Ok(Poll::Ready(Ok(Ok(response)))) => response,
                    Ok(Poll::Ready(Ok(Err(error)))) => return Poll::Ready(Err(error)),
                    Ok(Poll::Ready(Err(_))) => ApiError::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "timeout",
                        format!("the request took longer than {} ms", limit.as_millis()),
                    )
                    .into_response(),
                }
            }
        };
        this.observed.record(response.status());
        Poll::Ready(Ok(response))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::body::Body;
    use axum::routing::{get, post};

    async fn panics() -> &'static str {
        panic!("a handler bug")
    }

    fn app(timeout: Duration) -> Router {
        Router::new()
            .route("/panic", get(panics))
            .route(
                "/slow",
                get(|| async { tokio::time::sleep(Duration::from_secs(60)).await }),
            )
            .route("/echo", post(|body: String| async move { body }))
            .layer(EdgeLayer::new(
                8,
                timeout,
                None,
                Reload::new(Default::default()),
            ))
    }

    /// The status and body of `request` answered by `app`.
    async fn answer(app: Router, request: Request) -> (StatusCode, String) {
        let mut app = app;
        std::future::poll_fn(|cx| <Router as Service<Request>>::poll_ready(&mut app, cx))
            .await
            .unwrap();
        let response = app.call(request).await.unwrap();
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    fn get_(path: &str) -> Request {
        Request::get(path).body(Body::empty()).unwrap()
    }

    #[tokio::test]
    async fn a_panic_is_answered_500_internal() {
        let (status, body) = answer(app(Duration::from_secs(5)), get_("/panic")).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            body,
            r#"{"error":{"code":"internal","message":"the request failed unexpectedly"}}"#
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_over_the_timeout_is_answered_503() {
        let (status, body) = answer(app(Duration::from_millis(250)), get_("/slow")).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            body,
            r#"{"error":{"code":"timeout","message":"the request took longer than 250 ms"}}"#
        );
    }

    #[tokio::test]
    async fn bodies_over_the_limit_are_refused_announced_or_read() {
        let announced = Request::post("/echo")
            .header("content-length", "9")
            .body(Body::from("123456789"))
            .unwrap();
        let (status, body) = answer(app(Duration::from_secs(5)), announced).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
        assert!(body.contains(r#""code":"body_too_large""#), "{body}");
        assert!(
            body.contains("(9 bytes) is larger than the limit of 8 bytes"),
            "{body}"
        );
        // Without a length, the body is cut at the limit as it is read (axum's 413).
        let chunks = futures_util::stream::iter(["1234", "56789"].map(Ok::<_, std::io::Error>));
        let unannounced = Request::post("/echo")
            .body(Body::from_stream(chunks))
            .unwrap();
        let (status, _) = answer(app(Duration::from_secs(5)), unannounced).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
        let small = Request::post("/echo").body(Body::from("12345678")).unwrap();
        assert_eq!(
            answer(app(Duration::from_secs(5)), small).await,
            (StatusCode::OK, "12345678".to_owned())
        );
    }
}
