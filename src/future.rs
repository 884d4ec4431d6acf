//! The two future tools the crate needs, written here so that neither the
//! `futures` crate nor tokio's `macros` feature (and its proc-macro crate)
//! enters the tree: a boxed future type, and a two-way select.

use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::task::Poll;

/// A boxed `Send` future: the erased form of the surface's futures, and of
/// a streamed call.
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Which future finished first.
#[derive(Debug)]
pub(crate) enum First<A, B> {
    Left(A),
    Right(B),
}

/// Polls both futures, `left` first, and returns the first output; the other
/// future is dropped.
pub(crate) async fn race<A: Future, B: Future>(left: A, right: B) -> First<A::Output, B::Output> {
    let mut left = pin!(left);
    let mut right = pin!(right);
    poll_fn(|cx| {
        if let Poll::Ready(a) = left.as_mut().poll(cx) {
            return Poll::Ready(First::Left(a));
        }
        if let Poll::Ready(b) = right.as_mut().poll(cx) {
            return Poll::Ready(First::Right(b));
        }
        Poll::Pending
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ready side wins; left wins a tie.
    #[tokio::test]
    async fn first_ready_wins() {
        assert!(matches!(
            race(async { 1 }, std::future::pending::<()>()).await,
            First::Left(1)
        ));
        assert!(matches!(
            race(std::future::pending::<()>(), async { 2 }).await,
            First::Right(2)
        ));
        assert!(matches!(
            race(async { 1 }, async { 2 }).await,
            First::Left(1)
        ));
    }
}
