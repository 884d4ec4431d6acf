//! A session's calls in flight: each held by a [`Registration`] while it
//! runs, so that the client's `notifications/cancelled` (by request id)
//! and the guard's drop (all of them) can cancel it, and so that a drop
//! can wait until none is left.

use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

use crate::state::shared::SessionState;
use crate::surface::CancelSignal;
use crate::util::{lock, wait_for};

impl SessionState {
    /// Registers a call with request id `id` as in flight (in `running`,
    /// the host's count, too), for cancellation.
    pub(crate) fn register_call<'a>(
        &'a self,
        running: &'a AtomicUsize,
        id: Value,
        signal: CancelSignal,
    ) -> Registration<'a> {
        lock(&self.in_flight).push((id, signal.clone()));
        running.fetch_add(1, Ordering::Relaxed);
        Registration {
            session: self,
            running,
            signal,
            finished: false,
        }
    }

    /// Cancels the call with request id `id`, if one is in flight. Ids
    /// compare exactly: `"1"` and `1` are different requests.
    pub(crate) fn cancel(&self, id: &Value) {
        for (call_id, signal) in lock(&self.in_flight).iter() {
            if call_id == id {
                signal.cancel();
            }
        }
    }

    /// Resolves once none of its calls is in flight.
    pub(crate) async fn drained(&self) {
        wait_for(&self.drained, || {
            lock(&self.in_flight).is_empty().then_some(())
        })
        .await;
    }
}

/// A call's registration: in its session's list and in the host's count of
/// running calls for as long as it lives. Dropping it (the call ended, or
/// its future was dropped) removes both; if the call did not
/// [`finish`](Self::finish), it also raises the call's cancellation signal,
/// so work the tool moved out of its future learns that nobody waits for it
/// any more.
pub(crate) struct Registration<'a> {
    session: &'a SessionState,
    running: &'a AtomicUsize,
    signal: CancelSignal,
    finished: bool,
}

impl Registration<'_> {
    /// The surface answered: the call ends normally when this is dropped.
    pub(crate) fn finish(mut self) {
        self.finished = true;
    }
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        let mut calls = lock(&self.session.in_flight);
        if let Some(at) = calls.iter().position(|(_, s)| s.same_as(&self.signal)) {
            calls.swap_remove(at);
        }
        let empty = calls.is_empty();
        drop(calls);
        if empty {
            self.session.drained.notify_waiters();
        }
        if !self.finished {
            self.signal.cancel();
        }
        self.running.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::state::shared::tests::session;

    /// A registration is listed and counted while it lives; dropped
    /// unfinished it raises its signal, finished it does not; a
    /// cancellation by id reaches only that call, a revocation every one.
    #[tokio::test]
    async fn registrations_list_count_and_cancel() {
        let session = session();
        let running = AtomicUsize::new(0);
        let (first, second) = (CancelSignal::default(), CancelSignal::default());
        let a = session.register_call(&running, json!(1), first.clone());
        let b = session.register_call(&running, json!("1"), second.clone());
        assert_eq!(running.load(Ordering::Relaxed), 2);
        session.cancel(&json!("1"));
        assert!(second.is_cancelled() && !first.is_cancelled());
        a.finish();
        assert!(!first.is_cancelled(), "a finished call is not cancelled");
        assert_eq!(running.load(Ordering::Relaxed), 1);
        drop(b);
        assert_eq!(running.load(Ordering::Relaxed), 0);
        session.drained().await;
        let third = CancelSignal::default();
        let c = session.register_call(&running, json!(3), third.clone());
        session.revoke();
        assert!(third.is_cancelled());
        drop(c);
    }
}
