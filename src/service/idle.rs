//! Idle connections end: a connection that has sent nothing since it opened, or since its
//! last response was written, reads as closed by the client once `timeout` has passed,
//! so hyper ends it as a client hanging up between requests.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep, sleep_until};

/// A connection that reads as closed after `timeout` of idleness.
///
/// One timer per connection, never reset per request: a response only notes when the
/// wait began, and the timer, when it fires early (it was set for an older wait), is set
/// again for the current one. So a response costs a clock read, not a timer registration.
pub(crate) struct IdleTimeout<T> {
    io: T,
    timeout: Duration,
    /// Whether the connection waits for a request: since it opened, or since the last
    /// bytes of a response went out, until the first byte of a request.
    waiting: bool,
    /// When the current wait began (the last bytes written).
    since: Instant,
    idle: Pin<Box<Sleep>>,
}

impl<T> IdleTimeout<T> {
    /// `io`, idle from now on.
    pub(crate) fn new(io: T, timeout: Duration) -> Self {
        let since = Instant::now();
        IdleTimeout {
            io,
            timeout,
            waiting: true,
            since,
            idle: Box::pin(sleep_until(since + timeout)),
        }
    }

    /// Bytes of a response went out: the wait begins again.
    fn wrote(&mut self) {
        self.waiting = true;
        self.since = Instant::now();
    }

    /// Whether the current wait has lasted `timeout` (registers the timer otherwise).
    fn expired(&mut self, cx: &mut Context<'_>) -> bool {
        if !self.waiting {
            return false;
        }
        let deadline = self.since + self.timeout;
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
            self.wrote();
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
            self.wrote();
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
