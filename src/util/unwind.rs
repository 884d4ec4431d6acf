//! Panic containment for the surface's futures: a panicking tool fails its
//! one request, not the connection, the host, or other sessions.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::util::future::BoxFuture;

/// A future that resolves to `Err(Panicked)` if polling the wrapped future panics.
pub(crate) struct CatchUnwind<'a, T>(BoxFuture<'a, T>);

impl<'a, T> CatchUnwind<'a, T> {
    /// `future`, whose panics become `Err(Panicked)`.
    pub(crate) fn new(future: BoxFuture<'a, T>) -> Self {
        Self(future)
    }
}

/// The surface panicked while this request was running.
#[derive(Debug)]
pub(crate) struct Panicked;

impl<T> Future for CatchUnwind<'_, T> {
    type Output = Result<T, Panicked>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // AssertUnwindSafe: after a panic the inner future is never polled
        // again (this request resolves to an error and is dropped), so no
        // broken invariant of *ours* can be observed. State the surface
        // shares with other requests is the surface's concern, as with any
        // panic in a Tokio task.
        let polled = catch_unwind(AssertUnwindSafe(|| self.0.as_mut().poll(cx)));
        polled.map_or(Poll::Ready(Err(Panicked)), |poll| poll.map(Ok))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A panic inside the future becomes `Err`; a normal value passes through.
    #[tokio::test]
    async fn panics_become_errors() {
        let ok: BoxFuture<'_, u8> = Box::pin(async { 7 });
        assert_eq!(CatchUnwind(ok).await.unwrap(), 7);
        let boom: BoxFuture<'_, u8> = Box::pin(async { panic!("tool exploded") });
        assert!(CatchUnwind(boom).await.is_err());
    }
}
