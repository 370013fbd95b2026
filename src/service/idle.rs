//! Idle connections end: a connection that has sent nothing since it opened, or since its
//! last response was written, reads as closed by the client once `timeout` has passed,
//! so hyper ends it as a client hanging up between requests.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep, sleep};

/// A connection that reads as closed after `timeout` of idleness.
pub(crate) struct IdleTimeout<T> {
    io: T,
    timeout: Duration,
    /// Running while the connection waits for a request: since it opened, or since the
    /// last bytes of a response went out. Stopped by the first byte of a request.
    idle: Option<Pin<Box<Sleep>>>,
}

impl<T> IdleTimeout<T> {
    /// `io`, idle from now on.
    pub(crate) fn new(io: T, timeout: Duration) -> Self {
        IdleTimeout {
            io,
            timeout,
            idle: Some(Box::pin(sleep(timeout))),
        }
    }

    /// Starts the idle timer again (bytes of a response went out).
    fn wrote(&mut self) {
        let deadline = Instant::now() + self.timeout;
        match &mut self.idle {
            Some(idle) => idle.as_mut().reset(deadline),
            None => self.idle = Some(Box::pin(tokio::time::sleep_until(deadline))),
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
                    self.idle = None;
                }
                Poll::Ready(Ok(()))
            }
            Poll::Pending => {
                let expired = match &mut self.idle {
                    Some(idle) => idle.as_mut().poll(cx).is_ready(),
                    None => false,
                };
                // Idle too long: an end of stream, as if the client had hung up.
                if expired {
                    Poll::Ready(Ok(()))
                } else {
                    Poll::Pending
                }
            }
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
