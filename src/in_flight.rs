//! The calls a session has in flight, so they can be cancelled: by the
//! client's `notifications/cancelled` (looked up by request id), or all at
//! once when the session's guard is dropped.

use std::sync::atomic::Ordering;
use std::sync::{Mutex, MutexGuard, PoisonError};

use serde_json::Value;
use tokio::sync::Notify;

use crate::call::CancelSignal;
use crate::session::Lease;

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
    /// Cancels the call with this request id, if one is in flight. Ids
    /// compare exactly: `"1"` and `1` are different requests.
    pub(crate) fn cancel(&self, id: &Value) {
        for (call_id, signal) in self.lock().iter() {
            if call_id == id {
                signal.cancel();
            }
        }
    }

    /// Cancels every call in flight.
    pub(crate) fn cancel_all(&self) {
        for (_, signal) in self.lock().iter() {
            signal.cancel();
        }
    }

    /// Resolves once no call is in flight.
    pub(crate) async fn drained(&self) {
        loop {
            let mut notified = std::pin::pin!(self.drained.notified());
            // Registered before the check, so an emptying in between wakes us.
            notified.as_mut().enable();
            if self.lock().is_empty() {
                return;
            }
            notified.await;
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<(Value, CancelSignal)>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A call's registration: in its session's list and in the host's count for
/// as long as it lives. Dropping it (the call ended, or its future was
/// dropped) removes both; if the call did not [`finish`](Self::finish), it
/// also raises the call's cancellation signal, so work the tool moved out of
/// its future learns that nobody waits for it any more.
#[derive(Debug)]
pub(crate) struct InFlight<'a> {
    lease: &'a Lease,
    signal: CancelSignal,
    finished: bool,
}

impl<'a> InFlight<'a> {
    pub(crate) fn register(lease: &'a Lease, id: Value, signal: CancelSignal) -> Self {
        lease.session.in_flight.lock().push((id, signal.clone()));
        lease.shared.in_flight.fetch_add(1, Ordering::Relaxed);
        Self {
            lease,
            signal,
            finished: false,
        }
    }

    /// The surface answered: the call ends normally when this is dropped.
    pub(crate) fn finish(mut self) {
        self.finished = true;
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut calls = self.lease.session.in_flight.lock();
        if let Some(at) = calls.iter().position(|(_, s)| s.same_as(&self.signal)) {
            calls.swap_remove(at);
        }
        let empty = calls.is_empty();
        drop(calls);
        if empty {
            self.lease.session.in_flight.drained.notify_waiters();
        }
        if !self.finished {
            self.signal.cancel();
        }
        self.lease.shared.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}
