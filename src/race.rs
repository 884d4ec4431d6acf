//! Waiting on the first of two futures, without `tokio::select!` (the crate
//! keeps tokio's `macros` feature, and its proc-macro crate, out of its tree).

use std::future::{poll_fn, Future};
use std::pin::pin;
use std::task::Poll;

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
