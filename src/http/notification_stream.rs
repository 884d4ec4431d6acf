//! The SSE body of a notification stream (see `mcp/subscriptions.rs` for
//! what it carries).
//!
//! Event order on the wire: the opening message if any (2026-07-28's
//! acknowledgement, always first), then a change notification as soon as a
//! change is seen — or, within the coalescing window of the previous one,
//! at the end of that window, for every change it gathered
//! ([`AnnouncementWindow`], in `state/list_changed/`) —
//! with `:` keep-alive comments after each `keep_alive` of silence. A
//! change goes out on this stream only if no other stream of its audience
//! (the same client) announced it first. The stream ends:
//!
//! - at once, with nothing more, when the session is revoked or its MCP
//!   session ends (`DELETE`, or displaced past the per-session limit);
//! - after its closing message (2026-07-28: the listen request's result),
//!   when the host shuts down gracefully, or right after its opening when
//!   it has nothing to listen for;
//! - when the client closes it (hyper drops the body, which gives back the
//!   stream's place in its session's limit).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper::body::Bytes;
use tokio::sync::futures::OwnedNotified;
use tokio::sync::Notify;

use crate::http::sse::KeepAlive;
use crate::mcp::Subscription;
use crate::state::{AnnouncementWindow, Shared};
use crate::util::{sse_event as event, Latch};

/// One open notification stream.
pub(crate) struct NotificationStream {
    opening: Option<Bytes>,
    subscription: Subscription,
    /// The host's shutdown: every stream ends, gracefully.
    host_closing: Arc<Latch>,
    /// The last generation of changes this stream has caught up with.
    seen: u64,
    /// When it may announce a change (at once, or at the end of the
    /// coalescing window its last announcement opened).
    window: AnnouncementWindow,
    /// An announcement returned to hyper and not yet known to be written.
    handover: Option<Handover>,
    changed: Waiter,
    closing: Waiter,
    keep_alive: KeepAlive,
    ended: bool,
}

impl NotificationStream {
    /// The stream of `subscription`, which ends when the host's
    /// `streams_end` is raised, with a keep-alive comment after each
    /// `sse_keep_alive` of silence.
    pub(crate) fn new(mut subscription: Subscription, shared: &Shared) -> Self {
        let host_closing = Arc::clone(&shared.streams_end);
        let listening = subscription.listening.as_ref();
        // A stream takes over from its audience's last announcement: a
        // subscription's starts at its opening, and a legacy stream's at
        // what its client was last told, so a change whose stream closed
        // before announcing it is not lost.
        let seen = listening.map_or(0, |l| l.slot.audience().announced());
        // A stream with nothing to listen for waits on the host's latch in
        // both places; it ends on its first poll anyway.
        let changes = listening.map_or(host_closing.wake(), |l| l.slot.changes().wake());
        Self {
            changed: Waiter::new(changes),
            opening: subscription.opening.take().map(|m| event(&m)),
            closing: Waiter::new(host_closing.wake()),
            subscription,
            host_closing,
            seen,
            window: AnnouncementWindow::default(),
            handover: None,
            keep_alive: KeepAlive::new(shared.config.sse_keep_alive),
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
        if let Some(pending) = self.handover.as_mut() {
            if !pending.flushed {
                // hyper polls a body again before it flushes what the body
                // gave it, and flushes before it next yields: so yield once
                // (waking ourselves) and the next poll comes after the
                // announcement reached the socket.
                pending.flushed = true;
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            let generation = pending.generation;
            self.handover = None;
            if let Some(listening) = &self.subscription.listening {
                let slot = &listening.slot;
                slot.changes().delivered_to(slot.audience(), generation);
            }
        }
        // Wake-ups first, then the state they guard: a signal or a close
        // after this point wakes the task.
        self.changed.register(cx);
        self.closing.register(cx);
        let Some(listening) = &self.subscription.listening else {
            return Poll::Ready(self.end());
        };
        let (changes, audience) = (listening.slot.changes(), listening.slot.audience());
        if changes.is_revoked() || audience.is_ended() {
            self.ended = true;
            return Poll::Ready(None);
        }
        if self.host_closing.is_raised() {
            return Poll::Ready(self.end());
        }
        let generation = changes.generation();
        if generation != self.seen && self.window.is_closed(cx) {
            self.seen = generation;
            self.window.open();
            if let Some(frame) = self.announce(generation) {
                self.keep_alive.sent();
                return Poll::Ready(Some(frame));
            }
        }
        if let Some(comment) = self.keep_alive.poll(cx) {
            return Poll::Ready(Some(comment));
        }
        Poll::Pending
    }

    /// The change notification for `generation`, unless another stream of
    /// the same client announced it first. The calls waiting for it are
    /// told once it is written (see `handover`).
    fn announce(&mut self, generation: u64) -> Option<Bytes> {
        let listening = self.subscription.listening.as_ref()?;
        if !listening.slot.audience().claim(generation) {
            return None;
        }
        self.handover = Some(Handover {
            generation,
            flushed: false,
        });
        Some(event(&listening.change))
    }

    /// Ends the stream gracefully: its closing message, if it has one.
    fn end(&mut self) -> Option<Bytes> {
        self.ended = true;
        self.subscription.closing.take().map(|m| event(&m))
    }
}

/// An announcement on its way to the socket.
struct Handover {
    generation: u64,
    /// Whether the stream has yielded once since, so hyper has flushed it.
    flushed: bool,
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
    use crate::state::{Lease, Shared, COALESCE};
    use crate::surface::ToolSurface;
    use crate::tool::{Tool, ToolOutcome};
    use serde_json::Value;
    use std::time::Duration;
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

    /// The default `sse_keep_alive`, which the streams below run with.
    const KEEP_ALIVE: Duration = Duration::from_secs(15);

    fn session() -> (Arc<Shared>, Lease) {
        let config = ToolHostConfig::default();
        let shared = Arc::new(Shared::new(config, "127.0.0.1:4321".parse().unwrap()));
        let (_, bearer) = shared.open_session(Arc::new(Changing)).unwrap();
        let lease = Lease::acquire(&shared, &bearer).unwrap();
        (shared, lease)
    }

    fn legacy(shared: &Shared, lease: &Lease) -> NotificationStream {
        let audience = Arc::clone(lease.session.list_changes().stateless());
        let subscription =
            legacy_stream(lease, audience).unwrap_or_else(|_| panic!("a stream opens"));
        NotificationStream::new(subscription, shared)
    }

    async fn next(stream: &mut NotificationStream) -> Option<Bytes> {
        std::future::poll_fn(|cx| stream.poll_next(cx)).await
    }

    fn change() -> Bytes {
        event(br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#)
    }

    /// The first change is announced at once; the rest of a burst within
    /// `COALESCE` of it is one more announcement, at the end of that
    /// window; then the stream is silent until its keep-alive. A change
    /// after a quiet period is announced at once again.
    #[tokio::test(start_paused = true)]
    async fn the_first_change_goes_out_at_once_and_a_burst_is_folded() {
        let (shared, lease) = session();
        let mut stream = legacy(&shared, &lease);
        let started = Instant::now();
        let changes = lease.session.list_changes();
        changes.signal();
        assert_eq!(next(&mut stream).await, Some(change()));
        assert_eq!(
            started.elapsed(),
            Duration::ZERO,
            "no wait before the first"
        );
        for _ in 0..100 {
            changes.signal();
        }
        assert_eq!(next(&mut stream).await, Some(change()));
        assert_eq!(
            started.elapsed(),
            COALESCE,
            "the burst, once, after the window"
        );
        let comment = next(&mut stream).await.unwrap();
        assert!(comment.starts_with(b":"), "then only a keep-alive");
        assert_eq!(started.elapsed(), COALESCE + KEEP_ALIVE);
        changes.signal();
        assert_eq!(next(&mut stream).await, Some(change()));
        assert_eq!(
            started.elapsed(),
            COALESCE + KEEP_ALIVE,
            "quiet again: at once"
        );
    }

    /// A call waiting for its change to be delivered is released only once
    /// the stream has been polled again after yielding the notice (hyper
    /// has flushed it by then), and never waits past its bound on a stream
    /// that is not polled again (a connection whose client stopped
    /// reading).
    #[tokio::test(start_paused = true)]
    async fn delivery_counts_from_the_poll_after_the_notice() {
        let (shared, lease) = session();
        let changes = Arc::clone(lease.session.list_changes());
        let mut stream = legacy(&shared, &lease);
        changes.signal();
        assert_eq!(next(&mut stream).await, Some(change()));
        let started = Instant::now();
        let wait = Duration::from_millis(100);
        changes.delivered(1, wait).await;
        assert_eq!(started.elapsed(), wait, "yielded is not yet written");
        let waiter = {
            let changes = Arc::clone(&changes);
            tokio::spawn(async move { changes.delivered(1, Duration::from_secs(60)).await })
        };
        // The next polls: the first yields once for hyper's flush, the
        // second counts the notice delivered (then waits for more).
        let poll = std::future::poll_fn(|cx| Poll::Ready(stream.poll_next(cx)));
        assert!(poll.await.is_pending());
        assert!(!waiter.is_finished());
        let poll = std::future::poll_fn(|cx| Poll::Ready(stream.poll_next(cx)));
        assert!(poll.await.is_pending());
        tokio::time::timeout(Duration::from_millis(1), waiter)
            .await
            .expect("released")
            .unwrap();
    }

    /// A change whose only legacy stream closed before announcing it is
    /// announced by the client's next stream, and by that one only.
    #[tokio::test(start_paused = true)]
    async fn an_unannounced_change_is_announced_by_the_next_stream() {
        let (shared, lease) = session();
        let first = legacy(&shared, &lease);
        lease.session.list_changes().signal();
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
        lease.session.list_changes().revoke();
        assert_eq!(next(&mut stream).await, None);
        assert_eq!(next(&mut stream).await, None);
        assert_eq!(started.elapsed(), Duration::ZERO);
    }
}
