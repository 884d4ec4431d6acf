//! The header read timeout: how long a connection may go without a request
//! in service — from its accept, or from the moment its last response was
//! handed to hyper, until the head of its next request is complete. A
//! connection past it is closed: a client that trickles a head, or sends
//! nothing, or idles between keep-alive requests, holds its slot no longer.
//!
//! hyper can enforce this itself, given a timer: it asks the timer for a
//! new boxed sleep each time it begins to read a head, polls that sleep
//! while the head is incomplete, and drops it once the head is in. On every
//! keep-alive request that is a clock read, an allocation, a timer reset and
//! at least one poll, even with the timer kept registered between heads
//! (benches/JOURNAL.md, "Server CPU per call", has the figure).
//!
//! Here the request path only records, in one atomic word of the
//! connection's [`Activity`], whether a request is in service and, if not,
//! since when: a store when a request's head is in, a clock read and a store
//! when its response is handed over. The timer belongs to the connection's
//! supervisor task (`host.rs`), which sleeps until the earliest moment the
//! connection could have gone the timeout without a request, reads the word,
//! and either closes the connection or sleeps until the next such moment.
//! A connection seen busy at `T` cannot time out before `T + timeout`, nor
//! one idle since `S` before `S + timeout`, so the supervisor wakes at most
//! once per timeout while requests come, and the timeout falls exactly
//! where hyper's would: `timeout` after the accept or the response.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

/// The word's value while a request is in service.
const IN_SERVICE: u64 = u64::MAX;

/// When one connection last had a request in service.
#[derive(Debug)]
pub(crate) struct Activity {
    /// The accept: the origin of `idle_since`, and the start of the first
    /// wait for a head.
    opened: Instant,
    /// [`IN_SERVICE`], or when the connection last became idle, in
    /// nanoseconds since `opened`.
    ///
    /// Relaxed everywhere: the word orders nothing else, and a supervisor
    /// that reads a value a moment old only decides a moment late, or — for
    /// a head that completes at the instant the timeout falls — too early;
    /// [`Activity::timed_out`] gives the connection's task one turn first.
    idle_since: AtomicU64,
}

/// A connection accepted now, idle until its first head is in.
impl Default for Activity {
    fn default() -> Self {
        Self {
            opened: Instant::now(),
            idle_since: AtomicU64::new(0),
        }
    }
}

impl Activity {
    /// A request's head is in: the connection is in service, and cannot
    /// time out until [`Activity::finish`].
    pub(crate) fn begin(&self) {
        // hyper's HTTP/1 dispatcher drops a response's body before it reads
        // the next head, so the previous request has always finished.
        debug_assert_ne!(self.idle_since.load(Ordering::Relaxed), IN_SERVICE);
        self.idle_since.store(IN_SERVICE, Ordering::Relaxed);
    }

    /// The request's response has been handed over: idle from now.
    pub(crate) fn finish(&self) {
        // 584 years of nanoseconds fit; past that, idle since then.
        let nanos = u64::try_from(self.opened.elapsed().as_nanos()).unwrap_or(IN_SERVICE - 1);
        self.idle_since.store(nanos, Ordering::Relaxed);
    }

    /// Resolves once the connection has gone `timeout` without a request in
    /// service (see the module doc). While a request is in service it wakes
    /// once per timeout, so a tiny timeout on a long stream wakes often.
    pub(crate) async fn timed_out(&self, timeout: Duration) {
        let mut deadline = Some(after(self.opened, timeout));
        while let Some(at) = deadline {
            tokio::time::sleep_until(at).await;
            deadline = self.wait_until(timeout);
            if deadline.is_none() {
                // A head that arrived just in time may not have been read yet:
                // tokio runs a yielding task only after it has polled for I/O,
                // so the connection's task gets its turn to begin the request.
                tokio::task::yield_now().await;
                deadline = self.wait_until(timeout);
            }
        }
    }

    /// The earliest moment the connection could time out, or `None` if it
    /// has already been `timeout` without a request in service.
    fn wait_until(&self, timeout: Duration) -> Option<Instant> {
        let now = Instant::now();
        match self.idle_since.load(Ordering::Relaxed) {
            // A whole timeout after the request finishes, later than now.
            IN_SERVICE => Some(after(now, timeout)),
            nanos => Some(after(self.opened + Duration::from_nanos(nanos), timeout))
                .filter(|&deadline| deadline > now),
        }
    }
}

/// `start + timeout`, or about 30 years from now (what tokio's own
/// `timeout` uses) for a timeout past the clock's range.
fn after(start: Instant, timeout: Duration) -> Instant {
    start
        .checked_add(timeout)
        .unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400 * 365 * 30))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How long after `start` the connection timed out.
    async fn timed_out_after(activity: &Activity, timeout: Duration, start: Instant) -> Duration {
        activity.timed_out(timeout).await;
        start.elapsed()
    }

    /// A connection that never has a request in service times out exactly
    /// `timeout` after its accept.
    #[tokio::test(start_paused = true)]
    async fn an_idle_connection_times_out_after_the_timeout() {
        let start = Instant::now();
        let activity = Activity::default();
        let after = timed_out_after(&activity, Duration::from_millis(300), start).await;
        assert_eq!(after, Duration::from_millis(300));
    }

    /// Requests in service hold the timeout off, however long they take;
    /// it falls exactly `timeout` after the last response, even when the
    /// supervisor's first wake finds the connection busy.
    #[tokio::test(start_paused = true)]
    async fn requests_hold_the_timeout_off_until_a_timeout_after_the_last() {
        let start = Instant::now();
        let activity = std::sync::Arc::new(Activity::default());
        let client = {
            let activity = std::sync::Arc::clone(&activity);
            tokio::spawn(async move {
                // A request at 100 ms that takes 700 ms, then one at 900 ms
                // answered at once.
                tokio::time::sleep(Duration::from_millis(100)).await;
                activity.begin();
                tokio::time::sleep(Duration::from_millis(700)).await;
                activity.finish();
                tokio::time::sleep(Duration::from_millis(100)).await;
                activity.begin();
                activity.finish();
            })
        };
        let after = timed_out_after(&activity, Duration::from_millis(300), start).await;
        client.await.unwrap();
        assert_eq!(after, Duration::from_millis(1_200));
    }

    /// A head that completes at the very instant the timeout falls wins:
    /// the supervisor gives the connection's task a turn before it decides.
    #[tokio::test(start_paused = true)]
    async fn a_head_at_the_instant_of_the_timeout_wins() {
        let start = Instant::now();
        let activity = std::sync::Arc::new(Activity::default());
        let client = {
            let activity = std::sync::Arc::clone(&activity);
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(300)).await;
                activity.begin();
                tokio::time::sleep(Duration::from_millis(50)).await;
                activity.finish();
            })
        };
        let after = timed_out_after(&activity, Duration::from_millis(300), start).await;
        client.await.unwrap();
        assert_eq!(after, Duration::from_millis(650));
    }

    /// A timeout past the clock's range never falls.
    #[tokio::test(start_paused = true)]
    async fn a_timeout_past_the_clock_never_falls() {
        let activity = Activity::default();
        let waited = tokio::time::timeout(
            Duration::from_secs(86_400 * 365),
            activity.timed_out(Duration::MAX),
        )
        .await;
        assert!(waited.is_err());
    }
}
