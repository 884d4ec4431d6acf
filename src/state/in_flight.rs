//! The calls a session has in flight, so they can be cancelled: by the
//! client's `notifications/cancelled` (looked up by request id), or all at
//! once when the session's guard is dropped.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use serde_json::Value;
use tokio::sync::Notify;

use crate::surface::CancelSignal;
use crate::util::wait_for;

/// One session's calls in flight. A `Vec`, not a map: a session rarely has
/// more than a few calls at once, and a scan of a few entries beats hashing
/// a JSON id.
#[derive(Debug, Default)]
pub(crate) struct InFlightCalls {
    calls: Mutex<Vec<(Value, CancelSignal)>>,
    /// Woken whenever the list becomes empty.
    drained: Notify,
}

impl InFlightCalls {
    /// Cancels the call with request id `id`, if one is in flight, or
    /// every call in flight when `id` is `None`. Ids compare exactly: `"1"`
    /// and `1` are different requests.
    pub(crate) fn cancel(&self, id: Option<&Value>) {
        for (call_id, signal) in self.lock().iter() {
            if id.is_none_or(|id| id == call_id) {
                signal.cancel();
            }
        }
    }

    /// Resolves once no call is in flight.
    pub(crate) async fn drained(&self) {
        wait_for(&self.drained, || self.lock().is_empty().then_some(())).await;
    }

    /// Registers a call with request id `id` in this list, and in
    /// `running`, the host's count.
    pub(crate) fn register<'a>(
        &'a self,
        running: &'a AtomicUsize,
        id: Value,
        signal: CancelSignal,
    ) -> Registration<'a> {
        self.lock().push((id, signal.clone()));
        running.fetch_add(1, Ordering::Relaxed);
        Registration {
            calls: self,
            running,
            signal,
            finished: false,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<(Value, CancelSignal)>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A call's registration: in its session's list and in the host's count of
/// running calls for as long as it lives. Dropping it (the call ended, or
/// its future was dropped) removes both; if the call did not
/// [`finish`](Self::finish), it also raises the call's cancellation signal,
/// so work the tool moved out of its future learns that nobody waits for it
/// any more.
#[derive(Debug)]
pub(crate) struct Registration<'a> {
    calls: &'a InFlightCalls,
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
        let mut calls = self.calls.lock();
        if let Some(at) = calls.iter().position(|(_, s)| s.same_as(&self.signal)) {
            calls.swap_remove(at);
        }
        let empty = calls.is_empty();
        drop(calls);
        if empty {
            self.calls.drained.notify_waiters();
        }
        if !self.finished {
            self.signal.cancel();
        }
        self.running.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A registration is listed and counted while it lives; dropped
    /// unfinished it raises its signal, finished it does not; a
    /// cancellation by id reaches only that call.
    #[tokio::test]
    async fn registrations_list_count_and_cancel() {
        let calls = InFlightCalls::default();
        let running = AtomicUsize::new(0);
        let (first, second) = (CancelSignal::default(), CancelSignal::default());
        let a = calls.register(&running, json!(1), first.clone());
        let b = calls.register(&running, json!("1"), second.clone());
        assert_eq!(running.load(Ordering::Relaxed), 2);
        calls.cancel(Some(&json!("1")));
        assert!(second.is_cancelled() && !first.is_cancelled());
        a.finish();
        assert!(!first.is_cancelled(), "a finished call is not cancelled");
        assert_eq!(running.load(Ordering::Relaxed), 1);
        drop(b);
        assert_eq!(running.load(Ordering::Relaxed), 0);
        calls.drained().await;
        let third = CancelSignal::default();
        let c = calls.register(&running, json!(3), third.clone());
        calls.cancel(None);
        assert!(third.is_cancelled());
        drop(c);
    }
}
