//! A connection whose client stops reading is closed after
//! `write_stall_timeout`, releasing what its response held.
//!
//! hyper has read timeouts (the header timeout) but none for writing: a
//! client that sends a request and never reads the answer parks the
//! response in the host's memory for as long as it keeps the socket open.
//! [`WriteStallGuard`] wraps the socket and fails a write that has made no
//! progress for the timeout; hyper then drops the connection, and with it
//! the response body (and a streaming call's future, which is that call's
//! cancellation). Any progress — one byte accepted by the kernel — restarts
//! the clock, so a slow reader is not a stalled one. Writes that complete
//! at once, the usual case, never touch the timer.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// A socket whose writes fail with [`io::ErrorKind::TimedOut`] after
/// `timeout` without progress.
#[derive(Debug)]
pub(crate) struct WriteStallGuard<S> {
    inner: S,
    timeout: Duration,
    /// Armed while a write is pending; allocated on the first stall only.
    deadline: Option<Pin<Box<Sleep>>>,
    armed: bool,
}

impl<S> WriteStallGuard<S> {
    pub(crate) fn new(inner: S, timeout: Duration) -> Self {
        Self {
            inner,
            timeout,
            deadline: None,
            armed: false,
        }
    }

    /// What the inner socket answered to a write or a flush: any answer
    /// but `Pending` stops the clock; `Pending` starts it if it is not
    /// running, and fails once it has run out.
    fn guard<T>(
        &mut self,
        cx: &mut Context<'_>,
        result: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if result.is_ready() {
            self.armed = false;
            return result;
        }
        if !self.armed {
            let at = Instant::now() + self.timeout;
            match &mut self.deadline {
                Some(deadline) => deadline.as_mut().reset(at),
                None => self.deadline = Some(Box::pin(tokio::time::sleep_until(at))),
            }
            self.armed = true;
        }
        let deadline = self.deadline.as_mut().expect("armed above");
        ready!(deadline.as_mut().poll(cx));
        Poll::Ready(Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "the client stopped reading its response",
        )))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteStallGuard<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteStallGuard<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.guard(cx, result)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.guard(cx, result)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let result = Pin::new(&mut self.inner).poll_flush(cx);
        self.guard(cx, result)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A peer that stops reading makes the write fail after the timeout
    /// (and not before); a peer that reads lets every write through.
    #[tokio::test(start_paused = true)]
    async fn stalled_writes_fail_after_the_timeout() {
        let (near, far) = tokio::io::duplex(16);
        let mut guarded = WriteStallGuard::new(near, Duration::from_secs(5));
        let start = Instant::now();
        let error = guarded.write_all(&[7; 64]).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        assert_eq!(start.elapsed(), Duration::from_secs(5));
        drop((guarded, far));

        let (near, mut far) = tokio::io::duplex(16);
        let mut guarded = WriteStallGuard::new(near, Duration::from_secs(5));
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            let mut chunk = [0u8; 8];
            while got.len() < 64 {
                // Slow, but never 5 s without progress.
                tokio::time::sleep(Duration::from_secs(4)).await;
                let n = far.read(&mut chunk).await.unwrap();
                got.extend_from_slice(&chunk[..n]);
            }
            got
        });
        guarded
            .write_all(&[9; 64])
            .await
            .expect("a slow reader is not stalled");
        assert_eq!(reader.await.unwrap(), vec![9; 64]);
    }
}
