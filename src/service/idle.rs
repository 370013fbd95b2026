//! A connection's timeouts between requests, on one timer per connection: one that has
//! sent nothing since it opened, or since its last response was written, reads as closed
//! by the client once `keep_alive` has passed, and one whose next request head has not
//! reached the service within `header_read` of that same instant (a byte every few
//! seconds does not extend it), so hyper ends it as a client hanging up between
//! requests (no answer, as hyper's own header-read timeout gives none).
//!
//! hyper's own header-read timeout set a timer for every request head (a boxed sleep
//! registered with tokio's timer and removed again: ~1,600 instructions a request,
//! measured); this one is never reset per request. The service tells it which requests
//! are in progress ([`Requests`]): while one is, no head is awaited (its body may be
//! read, after `100 Continue`, or its answer computed), as with hyper's.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep, sleep_until};

/// A connection that reads as closed once idle too long (see the module docs).
///
/// One timer per connection, never reset per request: a response only notes when the
/// wait began, and the timer, when it fires early (it was set for an older wait), is set
/// again for the current one. So a response costs a clock read, not a timer registration.
pub(crate) struct IdleTimeout<T> {
    io: T,
    keep_alive: Duration,
    header_read: Duration,
    /// Whether the connection waits for a request: since it opened, or since the last
    /// bytes of a response went out, until the first byte of a request.
    waiting: bool,
    /// When the current wait began (the last bytes written).
    since: Instant,
    /// The connection's requests in progress.
    requests: Requests,
    idle: Pin<Box<Sleep>>,
}

impl<T> IdleTimeout<T> {
    /// `io`, idle from now on, whose service tracks its requests with `requests`.
    pub(crate) fn new(
        io: T,
        keep_alive: Duration,
        header_read: Duration,
        requests: Requests,
    ) -> Self {
        let since = Instant::now();
        IdleTimeout {
            io,
            keep_alive,
            header_read,
            waiting: true,
            since,
            requests,
            idle: Box::pin(sleep_until(since + keep_alive.min(header_read))),
        }
    }

    /// Bytes of a response went out: the wait begins again, and its timer is set (hyper
    /// reads nothing more until a request comes, so a wait's first read may never
    /// come to set it).
    fn wrote(&mut self, cx: &mut Context<'_>) {
        self.waiting = true;
        self.since = Instant::now();
        self.expired(cx);
    }

    /// Whether the current wait has lasted its limit (registers the timer otherwise).
    fn expired(&mut self, cx: &mut Context<'_>) -> bool {
        let head = self.requests.none();
        let limit = match (self.waiting, head) {
            (true, true) => self.keep_alive.min(self.header_read),
            (true, false) => self.keep_alive,
            (false, true) => self.header_read,
            // A request's body or answer: no limit here.
            (false, false) => return false,
        };
        let deadline = self.since + limit;
        if self.idle.deadline() > deadline {
            self.idle.as_mut().reset(deadline);
        }
        loop {
            if self.idle.as_mut().poll(cx).is_pending() {
                return false;
            }
            if self.idle.deadline() >= deadline {
                return true;
            }
            // Fired for an older wait: set for this one.
            self.idle.as_mut().reset(deadline);
        }
    }
}

/// The requests of one connection its service has taken and not answered yet, shared
/// with the connection's [`IdleTimeout`].
#[derive(Clone, Default)]
pub(crate) struct Requests(Arc<AtomicUsize>);

impl Requests {
    /// Whether no request is in progress.
    fn none(&self) -> bool {
        self.0.load(Ordering::Relaxed) == 0
    }

    /// `service`, counting its requests here while they are in progress.
    pub(crate) fn track<S>(&self, service: S) -> Tracked<S> {
        Tracked {
            service,
            requests: self.clone(),
        }
    }
}

/// A connection's service, counting its requests in progress (see [`Requests`]).
pub(crate) struct Tracked<S> {
    service: S,
    requests: Requests,
}

impl<S: hyper::service::Service<R>, R> hyper::service::Service<R> for Tracked<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = InProgress<S::Future>;

    fn call(&self, request: R) -> Self::Future {
        InProgress {
            _held: Held::new(&self.requests),
            call: self.service.call(request),
        }
    }
}

/// One request in progress, until its answer is ready (or it is dropped).
struct Held(Requests);

impl Held {
    fn new(requests: &Requests) -> Self {
        requests.0.fetch_add(1, Ordering::Relaxed);
        Held(requests.clone())
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        (self.0).0.fetch_sub(1, Ordering::Relaxed);
    }
}

pin_project! {
    /// A request's call, counted in progress while it runs.
    pub(crate) struct InProgress<F> {
        #[pin]
        call: F,
        _held: Held,
    }
}

impl<F: Future> Future for InProgress<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.project().call.poll(cx)
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for IdleTimeout<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.io).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    self.waiting = false;
                }
                Poll::Ready(Ok(()))
            }
            // Idle too long: an end of stream, as if the client had hung up.
            Poll::Pending if self.expired(cx) => Poll::Ready(Ok(())),
            other => other,
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for IdleTimeout<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.io).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = written
            && n > 0
        {
            self.wrote(cx);
        }
        written
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = written
            && n > 0
        {
            self.wrote(cx);
        }
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
