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
        let changes = subscription.listening.as_ref().map(|l| l.slot.changes());
        let seen = changes.map_or(0, |c| c.generation());
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
