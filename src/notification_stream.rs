//! The SSE body of a notification stream (see `mcp/subscriptions.rs` for
//! what it carries).
//!
//! Event order on the wire: the opening message if any (2026-07-28's
//! acknowledgement, always first), then one change notification per burst
//! of signals (see `list_changed.rs`), with `:` keep-alive comments after
//! each `keep_alive` of silence. The stream ends:
//!
//! - at once, with nothing more, when the session is revoked;
//! - after its closing message (2026-07-28: the listen request's result),
//!   when the host shuts down gracefully, or right after its opening when
//!   it has nothing to listen for;
//! - when the client closes it (hyper drops the body, which gives back the
//!   stream's place in its session's limit).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::Bytes;
use tokio::sync::futures::OwnedNotified;
use tokio::sync::Notify;
use tokio::time::Sleep;

use crate::list_changed::{Latch, COALESCE};
use crate::mcp::{Delivery, Subscription};
use crate::sse::{event, KeepAlive};

/// One open notification stream.
pub(crate) struct NotificationStream {
    opening: Option<Bytes>,
    subscription: Subscription,
    /// The host's shutdown: every stream ends, gracefully.
    host_closing: Arc<Latch>,
    /// The last generation of changes this stream has caught up with.
    seen: u64,
    /// Armed when a change is first seen; the announcement waits for it.
    coalesce: Option<Pin<Box<Sleep>>>,
    changed: Waiter,
    closing: Waiter,
    keep_alive: KeepAlive,
    ended: bool,
}

impl NotificationStream {
    pub(crate) fn new(
        mut subscription: Subscription,
        host_closing: Arc<Latch>,
        keep_alive: Duration,
    ) -> Self {
        let listening = subscription.listening.as_ref();
        let changes = listening.map(|l| l.slot.changes());
        // A subscription hears of changes from its start; a legacy stream
        // takes over from the client's last announcement, so a change whose
        // stream closed before announcing it is not lost.
        let seen = listening.map_or(0, |l| match l.delivery {
            Delivery::EverySubscription => l.slot.changes().generation(),
            Delivery::OneStreamPerClient => l.slot.changes().legacy_announced(),
        });
        // A stream with nothing to listen for waits on the host's latch in
        // both places; it ends on its first poll anyway.
        let changed = Waiter::new(changes.map_or(host_closing.wake(), |c| c.wake()));
        let closing = Waiter::new(host_closing.wake());
        Self {
            opening: subscription.opening.take().map(|m| event(&m)),
            subscription,
            host_closing,
            seen,
            coalesce: None,
            changed,
            closing,
            keep_alive: KeepAlive::new(keep_alive),
            ended: false,
        }
    }

    pub(crate) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        if let Some(opening) = self.opening.take() {
            return Poll::Ready(Some(opening));
        }
        if self.ended {
            return Poll::Ready(None);
        }
        // Wake-ups first, then the state they guard: a signal or a close
        // after this point wakes the task.
        self.changed.register(cx);
        self.closing.register(cx);
        let Some(listening) = &self.subscription.listening else {
            return Poll::Ready(self.end());
        };
        let changes = listening.slot.changes();
        if changes.is_revoked() {
            self.ended = true;
            return Poll::Ready(None);
        }
        if self.host_closing.is_raised() {
            return Poll::Ready(self.end());
        }
        if changes.generation() != self.seen {
            let coalesce = self
                .coalesce
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(COALESCE)));
            if coalesce.as_mut().poll(cx).is_ready() {
                self.coalesce = None;
                self.seen = changes.generation();
                let mine = listening.delivery == Delivery::EverySubscription
                    || changes.claim_legacy(self.seen);
                if mine {
                    let frame = event(&listening.change);
                    self.keep_alive.sent();
                    return Poll::Ready(Some(frame));
                }
            }
        }
        if let Some(comment) = self.keep_alive.poll(cx) {
            return Poll::Ready(Some(comment));
        }
        Poll::Pending
    }

    /// Ends the stream gracefully: its closing message, if it has one.
    fn end(&mut self) -> Option<Bytes> {
        self.ended = true;
        self.subscription.closing.take().map(|m| event(&m))
    }
}

/// A registration on a `Notify`, renewed each time it fires.
struct Waiter {
    notify: Arc<Notify>,
    notified: Pin<Box<OwnedNotified>>,
}

impl Waiter {
    fn new(notify: &Arc<Notify>) -> Self {
        Self {
            notify: Arc::clone(notify),
            notified: Box::pin(Arc::clone(notify).notified_owned()),
        }
    }

    /// Polls until the registration is pending, so the next
    /// `notify_waiters` wakes this task.
    fn register(&mut self, cx: &mut Context<'_>) {
        while self.notified.as_mut().poll(cx).is_ready() {
            self.notified = Box::pin(Arc::clone(&self.notify).notified_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ToolHostConfig;
    use crate::mcp::legacy_stream;
    use crate::shared::{Lease, Shared};
    use crate::{Tool, ToolOutcome, ToolSurface};
    use serde_json::Value;
    use tokio::time::Instant;

    /// A surface that can change (the default); its tools do not matter.
    struct Changing;

    impl ToolSurface for Changing {
        async fn list_tools(&self) -> Arc<[Tool]> {
            Arc::new([])
        }

        async fn call(&self, _name: &str, _arguments: &Value) -> ToolOutcome {
            ToolOutcome::failed("no tools")
        }
    }

    const KEEP_ALIVE: Duration = Duration::from_secs(15);

    fn session() -> (Arc<Shared>, Lease) {
        let config = ToolHostConfig::default();
        let shared = Arc::new(Shared::new(&config, "127.0.0.1:4321".parse().unwrap()));
        let (_, bearer) = shared.open_session(Arc::new(Changing)).unwrap();
        let lease = Lease::acquire(&shared, &bearer).unwrap();
        (shared, lease)
    }

    fn legacy(shared: &Shared, lease: &Lease) -> NotificationStream {
        let subscription = legacy_stream(lease).unwrap_or_else(|_| panic!("a stream opens"));
        NotificationStream::new(subscription, Arc::clone(&shared.streams_end), KEEP_ALIVE)
    }

    async fn next(stream: &mut NotificationStream) -> Option<Bytes> {
        std::future::poll_fn(|cx| stream.poll_next(cx)).await
    }

    fn change() -> Bytes {
        event(br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#)
    }

    /// A burst is announced once, exactly `COALESCE` after it began; then
    /// the stream is silent until its keep-alive.
    #[tokio::test(start_paused = true)]
    async fn a_burst_is_one_announcement_after_the_coalescing_wait() {
        let (shared, lease) = session();
        let mut stream = legacy(&shared, &lease);
        let started = Instant::now();
        for _ in 0..100 {
            lease.session.list_changes.signal();
        }
        assert_eq!(next(&mut stream).await, Some(change()));
        assert_eq!(started.elapsed(), COALESCE);
        let comment = next(&mut stream).await.unwrap();
        assert!(comment.starts_with(b":"), "then only a keep-alive");
        assert_eq!(started.elapsed(), COALESCE + KEEP_ALIVE);
    }

    /// A change whose only legacy stream closed before announcing it is
    /// announced by the client's next stream, and by that one only.
    #[tokio::test(start_paused = true)]
    async fn an_unannounced_change_is_announced_by_the_next_stream() {
        let (shared, lease) = session();
        let first = legacy(&shared, &lease);
        lease.session.list_changes.signal();
        drop(first);
        let mut second = legacy(&shared, &lease);
        assert_eq!(next(&mut second).await, Some(change()));
        let mut third = legacy(&shared, &lease);
        let started = Instant::now();
        assert!(next(&mut third).await.unwrap().starts_with(b":"));
        assert_eq!(started.elapsed(), KEEP_ALIVE, "announced once only");
    }

    /// Revocation ends a stream at once, with nothing more; the host's
    /// shutdown ends it too.
    #[tokio::test(start_paused = true)]
    async fn revocation_and_shutdown_end_streams() {
        let (shared, lease) = session();
        let mut stream = legacy(&shared, &lease);
        let mut other = legacy(&shared, &lease);
        let started = Instant::now();
        shared.streams_end.raise();
        assert_eq!(next(&mut other).await, None);
        lease.session.list_changes.revoke();
        assert_eq!(next(&mut stream).await, None);
        assert_eq!(next(&mut stream).await, None);
        assert_eq!(started.elapsed(), Duration::ZERO);
    }
}
