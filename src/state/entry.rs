//! The entry gate: once a session's guard has been dropped, no call can
//! *start* in its surface.
//!
//! Revocation itself is one atomic step in the slab, and a call re-checks
//! the bearer right before it invokes the surface. That alone leaves a
//! window: a call whose check passed an instant before the revocation could
//! still be on its way into the surface — building the future, about to
//! poll it — when `drop` returns, and the tool's first statement would then
//! run *after* the drop. The gate closes that window:
//!
//! - a call registers in the gate (`entering += 1`), then checks liveness,
//!   and stays registered until its future's **first poll** has returned —
//!   the poll in which the tool's code starts running;
//! - the guard's drop revokes, then waits until `entering` is zero.
//!
//! A SeqCst fence on each side (after the increment; after the revocation)
//! makes this a Dekker handshake: either the call's check sees the
//! revocation and refuses, or the drop sees the call registered and waits
//! for its first poll to end. The wait covers only calls caught between
//! their check and the end of their first poll — host code plus the tool's
//! code up to its first `.await` — never a call's whole run: later polls
//! are not waited for (those calls are cancelled instead).
//!
//! A drop made from inside a first poll (a tool dropping a guard) does not
//! wait, or it would wait for itself.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{fence, AtomicUsize, Ordering};
use std::task::{Context, Poll};

thread_local! {
    /// First polls running on this thread right now.
    static IN_FIRST_POLL: Cell<usize> = const { Cell::new(0) };
}

/// One session's gate.
#[derive(Debug, Default)]
pub(crate) struct EntryGate {
    entering: AtomicUsize,
    /// Raised once a `close` has started waiting: lets the tests see the
    /// wait itself, rather than sleep and hope the closer got that far.
    #[cfg(test)]
    closing: std::sync::atomic::AtomicBool,
}

/// A call's place in the gate, released when dropped.
#[derive(Debug)]
pub(crate) struct Entry<'a> {
    gate: &'a EntryGate,
}

impl EntryGate {
    /// Registers a call, then asks `live`; the call may enter only if the
    /// bearer is still live once it is registered.
    pub(crate) fn enter(&self, live: impl FnOnce() -> bool) -> Option<Entry<'_>> {
        self.entering.fetch_add(1, Ordering::Relaxed);
        // SeqCst: orders the increment before the liveness load, against
        // the fence in `close` (see the module doc).
        fence(Ordering::SeqCst);
        let entry = Entry { gate: self };
        live().then_some(entry)
    }

    /// Called after the revocation: waits until every registered call has
    /// finished its first poll.
    pub(crate) fn close(&self) {
        // SeqCst: orders the revocation before the loads below.
        fence(Ordering::SeqCst);
        if IN_FIRST_POLL.with(Cell::get) > 0 {
            return;
        }
        #[cfg(test)]
        self.closing.store(true, Ordering::SeqCst);
        let mut spins = 0u32;
        // Acquire: pairs with the Release in `Entry::drop`, so what a first
        // poll did happens before `close` returns.
        while self.entering.load(Ordering::Acquire) > 0 {
            if spins < 64 {
                std::hint::spin_loop();
                spins += 1;
            } else {
                std::thread::yield_now();
            }
        }
    }
}

impl Drop for Entry<'_> {
    fn drop(&mut self) {
        self.gate.entering.fetch_sub(1, Ordering::Release);
    }
}

/// Holds a call's [`Entry`] until the end of the future's first poll.
pub(crate) struct FirstPoll<'a, F> {
    inner: F,
    entry: Option<Entry<'a>>,
}

impl<'a, F> FirstPoll<'a, F> {
    pub(crate) fn new(inner: F, entry: Entry<'a>) -> Self {
        Self {
            inner,
            entry: Some(entry),
        }
    }
}

impl<F: Future + Unpin> Future for FirstPoll<'_, F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let first = self.entry.is_some();
        if first {
            IN_FIRST_POLL.with(|n| n.set(n.get() + 1));
        }
        let result = Pin::new(&mut self.inner).poll(cx);
        if first {
            IN_FIRST_POLL.with(|n| n.set(n.get() - 1));
            self.entry = None;
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    /// `close` waits for a call that entered, and returns once its first
    /// poll is over; a call entering after the revocation is refused.
    #[test]
    fn close_waits_for_first_polls() {
        let gate = Arc::new(EntryGate::default());
        let live = Arc::new(AtomicBool::new(true));
        let entry = gate.enter(|| live.load(Ordering::SeqCst)).expect("live");
        let closed = Arc::new(AtomicBool::new(false));
        let closer = {
            let (gate, live, closed) = (gate.clone(), live.clone(), closed.clone());
            std::thread::spawn(move || {
                live.store(false, Ordering::SeqCst);
                gate.close();
                closed.store(true, Ordering::SeqCst);
            })
        };
        // The closer is inside its wait (not merely scheduled to reach it)
        // before we look: then only the entry can be holding it.
        while !gate.closing.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        for _ in 0..1000 {
            std::thread::yield_now();
            assert!(
                !closed.load(Ordering::SeqCst),
                "close returned while a call was entering"
            );
        }
        drop(entry);
        closer.join().unwrap();
        assert!(closed.load(Ordering::SeqCst));
        assert!(gate.enter(|| live.load(Ordering::SeqCst)).is_none());
        assert_eq!(gate.entering.load(Ordering::SeqCst), 0);
    }

    /// The entry is released by the first poll, pending or not, and a close
    /// from inside a first poll does not wait for itself.
    #[test]
    fn first_poll_releases_and_reentrant_close_returns() {
        let gate = EntryGate::default();
        let entry = gate.enter(|| true).unwrap();
        let inner = std::future::poll_fn(|_| {
            gate.close(); // re-entrant: must not deadlock
            Poll::<()>::Pending
        });
        let mut future = FirstPoll::new(Box::pin(inner), entry);
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        assert!(Pin::new(&mut future).poll(&mut cx).is_pending());
        assert_eq!(gate.entering.load(Ordering::SeqCst), 0);
    }
}
