//! The future tools the crate needs, written here so that neither the
//! `futures` crate nor tokio's `macros` feature (and its proc-macro crate)
//! enters the tree: a boxed future type, a two-way select, and a time
//! limit that costs nothing when it is not needed.

use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Sleep;

/// A boxed `Send` future: the erased form of the surface's futures, and of
/// a streamed call.
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Which future finished first.
#[derive(Debug)]
pub(crate) enum First<A, B> {
    Left(A),
    Right(B),
}

/// Polls both futures, `left` first, and returns the first output.
///
/// The futures are pinned where the caller made them (`pin!`), so racing
/// never moves them: a tool call's futures are large, and a race that owned
/// them would copy each one twice.
pub(crate) fn race<'a, A: Future, B: Future>(
    mut left: Pin<&'a mut A>,
    mut right: Pin<&'a mut B>,
) -> impl Future<Output = First<A::Output, B::Output>> + 'a {
    poll_fn(move |cx| {
        if let Poll::Ready(a) = left.as_mut().poll(cx) {
            return Poll::Ready(First::Left(a));
        }
        if let Poll::Ready(b) = right.as_mut().poll(cx) {
            return Poll::Ready(First::Right(b));
        }
        Poll::Pending
    })
}

/// `future`, or `None` once it has waited `limit`.
///
/// The limit counts from the first poll that finds `future` not ready, and
/// the timer is made only then: a future ready at once (the usual request
/// body, already in hyper's buffer; the usual tool, which answers in its
/// first poll) never reads the clock or touches the timer wheel. A limit
/// past the clock's range never passes.
pub(crate) async fn waiting_at_most<F: Future>(limit: Duration, future: F) -> Option<F::Output> {
    let mut timer = pin!(None::<Sleep>);
    let passed = poll_fn(|cx| poll_limit(timer.as_mut(), limit, cx));
    match race(pin!(future), pin!(passed)).await {
        First::Left(output) => Some(output),
        First::Right(()) => None,
    }
}

/// [`waiting_at_most`]'s timer, apart from its generic part so that it is
/// compiled once: made at the first call, then polled; ready when `limit`
/// has passed since then.
fn poll_limit(
    mut timer: Pin<&mut Option<Sleep>>,
    limit: Duration,
    cx: &mut Context<'_>,
) -> Poll<()> {
    if timer.is_none() {
        let Some(deadline) = tokio::time::Instant::now().checked_add(limit) else {
            return Poll::Pending;
        };
        timer.set(Some(tokio::time::sleep_until(deadline)));
    }
    timer.as_pin_mut().map_or(Poll::Pending, |t| t.poll(cx))
}

/// Resolves to the first `Some` that `ready` returns, asked again each time
/// `notify` wakes its waiters. Registered before each check, so a
/// notification between the check and the await still wakes this task.
pub(crate) async fn wait_for<T>(notify: &Notify, mut ready: impl FnMut() -> Option<T>) -> T {
    loop {
        let mut notified = pin!(notify.notified());
        notified.as_mut().enable();
        if let Some(output) = ready() {
            return output;
        }
        notified.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ready future never meets the clock; a pending one is cut off at
    /// the limit after its first wait; a limit past the clock's range
    /// never fires.
    #[tokio::test(start_paused = true)]
    async fn waiting_at_most_counts_from_the_first_wait() {
        let limit = Duration::from_secs(1);
        assert_eq!(waiting_at_most(limit, async { 7 }).await, Some(7));
        let start = tokio::time::Instant::now();
        let stuck = std::future::pending::<()>();
        assert_eq!(waiting_at_most(limit, stuck).await, None);
        assert_eq!(start.elapsed(), limit);
        let slow = async {
            tokio::time::sleep(Duration::from_millis(999)).await;
            8
        };
        assert_eq!(waiting_at_most(limit, slow).await, Some(8));
        let late = async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            9
        };
        assert_eq!(waiting_at_most(Duration::MAX, late).await, Some(9));
    }

    /// The ready side wins; left wins a tie.
    #[tokio::test]
    async fn first_ready_wins() {
        assert!(matches!(
            race(pin!(async { 1 }), pin!(std::future::pending::<()>())).await,
            First::Left(1)
        ));
        assert!(matches!(
            race(pin!(std::future::pending::<()>()), pin!(async { 2 })).await,
            First::Right(2)
        ));
        assert!(matches!(
            race(pin!(async { 1 }), pin!(async { 2 })).await,
            First::Left(1)
        ));
    }
}
