//! The per-call context handed to [`ToolSurface::call_with`]: the call's
//! name and arguments, its progress reporter, and its cancellation signal.
//!
//! [`ToolSurface::call_with`]: crate::ToolSurface::call_with

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Waker;

use serde_json::Value;
use tokio::sync::Notify;

/// One tool call, as a surface that wants more than name and arguments sees
/// it. See [`ToolSurface::call_with`](crate::ToolSurface::call_with).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use embacle_tool_host::{Tool, ToolCall, ToolOutcome, ToolSurface};
/// use serde_json::Value;
///
/// struct Indexer(Arc<[Tool]>);
///
/// impl ToolSurface for Indexer {
///     async fn list_tools(&self) -> Arc<[Tool]> {
///         Arc::clone(&self.0)
///     }
///
///     async fn call(&self, _name: &str, _arguments: &Value) -> ToolOutcome {
///         unreachable!("call_with is overridden")
///     }
///
///     async fn call_with(&self, call: ToolCall<'_>) -> ToolOutcome {
///         for batch in 1..=4 {
///             // ... index one batch ...
///             call.progress(f64::from(batch), Some(4.0), Some("indexing"));
///         }
///         ToolOutcome::text("indexed 4 batches")
///     }
/// }
///
/// let surface = Arc::new(Indexer(Vec::new().into())); // for ToolHost::open_session
/// # drop(surface);
/// ```
pub struct ToolCall<'a> {
    pub(crate) name: &'a str,
    pub(crate) arguments: &'a Value,
    pub(crate) progress: &'a Progress,
    pub(crate) cancel: &'a CancelSignal,
}

impl<'a> ToolCall<'a> {
    /// The tool's name.
    pub fn name(&self) -> &'a str {
        self.name
    }

    /// The arguments: a JSON object, `{}` when the client sent none.
    pub fn arguments(&self) -> &'a Value {
        self.arguments
    }

    /// Reports progress; see [`Progress::report`].
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        self.progress.report(progress, total, message);
    }

    /// A handle on this call's progress reporting, to move into work the
    /// tool spawns.
    pub fn progress_reporter(&self) -> Progress {
        self.progress.clone()
    }

    /// This call's cancellation signal, to move into work the tool spawns.
    ///
    /// The host cancels a call by dropping its future, which is all an
    /// `async` tool needs. The signal is for work that lives outside that
    /// future (a spawned task, a thread, a remote job): watch it there.
    pub fn cancellation(&self) -> CancelSignal {
        self.cancel.clone()
    }
}

impl fmt::Debug for ToolCall<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolCall")
            .field("name", &self.name)
            .field("progress", self.progress)
            .field("cancelled", &self.cancel.is_cancelled())
            .finish_non_exhaustive()
    }
}

/// Reports a call's progress to the client, as `notifications/progress`
/// events on the request's SSE stream.
///
/// Reporting is enabled only when the request carried
/// `params._meta.progressToken` **and** its `Accept` header admits
/// `text/event-stream`; otherwise [`report`](Self::report) is a cheap no-op
/// and the response stays plain JSON. The host enforces MCP's rules for you:
///
/// - values must strictly increase: a report not above the last one is
///   dropped;
/// - reports are rate-limited: at most one event per 25 ms, and when reports
///   come faster only the latest is sent;
/// - nothing is sent after the final response, so a report from work that
///   outlives the call is dropped.
///
/// Cheap to clone (one reference count).
#[derive(Clone, Default)]
pub struct Progress {
    pub(crate) state: Option<Arc<ProgressState>>,
}

/// One progress report waiting to be sent.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProgressReport {
    pub(crate) progress: f64,
    pub(crate) total: Option<f64>,
    pub(crate) message: Option<String>,
}

/// What a `Progress` shares with the SSE stream that sends its reports.
#[derive(Debug)]
pub(crate) struct ProgressState {
    pub(crate) token: Value,
    inner: Mutex<ProgressInner>,
}

#[derive(Debug, Default)]
struct ProgressInner {
    /// The latest report not yet sent (newer reports replace it).
    pending: Option<ProgressReport>,
    /// The highest value accepted so far.
    last: Option<f64>,
    /// Set once the final response is on its way.
    closed: bool,
    /// The stream to wake when a report arrives.
    waker: Option<Waker>,
}

impl Progress {
    /// A reporter for the given token, and the state its stream reads.
    pub(crate) fn for_token(token: Value) -> (Self, Arc<ProgressState>) {
        let state = Arc::new(ProgressState {
            token,
            inner: Mutex::new(ProgressInner::default()),
        });
        let progress = Self {
            state: Some(Arc::clone(&state)),
        };
        (progress, state)
    }

    /// Whether reports reach the client (see the type's docs).
    pub fn is_enabled(&self) -> bool {
        self.state.is_some()
    }

    /// Reports `progress` (of `total`, if known), with an optional message.
    ///
    /// Non-finite or non-increasing values are dropped.
    pub fn report(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(state) = &self.state else { return };
        if !progress.is_finite() {
            return;
        }
        let mut inner = state.lock();
        if inner.closed || inner.last.is_some_and(|last| progress <= last) {
            return;
        }
        inner.last = Some(progress);
        inner.pending = Some(ProgressReport {
            progress,
            total: total.filter(|t| t.is_finite()),
            message: message.map(str::to_owned),
        });
        if let Some(waker) = inner.waker.take() {
            waker.wake();
        }
    }
}

impl ProgressState {
    fn lock(&self) -> std::sync::MutexGuard<'_, ProgressInner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes the pending report, or registers `waker` for the next one.
    pub(crate) fn take_or_register(&self, waker: &Waker) -> Option<ProgressReport> {
        let mut inner = self.lock();
        let report = inner.pending.take();
        if report.is_none() && !inner.waker.as_ref().is_some_and(|w| w.will_wake(waker)) {
            inner.waker = Some(waker.clone());
        }
        report
    }

    /// The `notifications/progress` message that carries `report`.
    pub(crate) fn notification(&self, report: &ProgressReport) -> Vec<u8> {
        let mut params = serde_json::Map::new();
        params.insert("progressToken".into(), self.token.clone());
        params.insert("progress".into(), report.progress.into());
        if let Some(total) = report.total {
            params.insert("total".into(), total.into());
        }
        if let Some(message) = &report.message {
            params.insert("message".into(), message.as_str().into());
        }
        let mut notification = serde_json::Map::new();
        notification.insert("jsonrpc".into(), "2.0".into());
        notification.insert("method".into(), "notifications/progress".into());
        notification.insert("params".into(), params.into());
        serde_json::to_vec(&notification).unwrap_or_default()
    }

    /// Stops accepting reports: the final response is next. Returns a report
    /// still pending, to send before it.
    pub(crate) fn close(&self) -> Option<ProgressReport> {
        let mut inner = self.lock();
        inner.closed = true;
        inner.waker = None;
        inner.pending.take()
    }
}

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Progress")
            .field("enabled", &self.is_enabled())
            .finish()
    }
}

/// A call's cancellation signal: raised when the client cancels the
/// request, the session's guard is dropped, the call's time limit passes or
/// the host shuts down.
///
/// Cheap to clone (one reference count).
#[derive(Clone, Default)]
pub struct CancelSignal {
    state: Arc<CancelState>,
}

#[derive(Default)]
struct CancelState {
    raised: AtomicBool,
    notify: Notify,
}

impl CancelSignal {
    /// Whether the call has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        // Acquire: pairs with the Release in `cancel`.
        self.state.raised.load(Ordering::Acquire)
    }

    /// Resolves once the call is cancelled (at once if it already is).
    pub async fn cancelled(&self) {
        loop {
            let notified = self.state.notify.notified();
            let mut notified = std::pin::pin!(notified);
            // Register before checking the flag, so a `cancel` between the
            // check and the await still wakes us.
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }

    /// Raises the signal. Idempotent.
    pub(crate) fn cancel(&self) {
        if !self.state.raised.swap(true, Ordering::Release) {
            self.state.notify.notify_waiters();
        }
    }

    /// Whether two handles are the same call's signal.
    pub(crate) fn same_as(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.state, &other.state)
    }
}

impl fmt::Debug for CancelSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancelSignal")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::task::{Wake, Waker};

    struct CountWakes(std::sync::atomic::AtomicUsize);
    impl Wake for CountWakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Reports must increase; newer ones replace unsent ones; none after close.
    #[test]
    fn progress_rules() {
        let (progress, state) = Progress::for_token(json!("t"));
        let wakes = Arc::new(CountWakes(Default::default()));
        let waker = Waker::from(wakes.clone());
        assert_eq!(state.take_or_register(&waker), None);
        progress.report(1.0, Some(3.0), Some("one"));
        assert_eq!(wakes.0.load(Ordering::SeqCst), 1);
        progress.report(0.5, None, None); // not increasing: dropped
        progress.report(f64::NAN, None, None); // dropped
        progress.report(2.0, Some(f64::INFINITY), None); // replaces 1.0, total dropped
        let report = state.take_or_register(&waker).unwrap();
        assert_eq!(
            report,
            ProgressReport {
                progress: 2.0,
                total: None,
                message: None
            }
        );
        progress.report(2.0, None, None); // equal: dropped
        assert_eq!(state.take_or_register(&waker), None);
        progress.report(3.0, None, Some("three"));
        assert_eq!(state.close().unwrap().progress, 3.0);
        progress.report(4.0, None, None);
        assert_eq!(state.take_or_register(&waker), None, "nothing after close");
    }

    /// A disabled reporter says so, and stays disabled whatever it is sent:
    /// no report creates the state a stream would read, and a clone is as
    /// disabled. (`mcp::tests::progress_without_a_stream_is_disabled` shows
    /// what the tool and the client see: one plain JSON response.)
    #[test]
    fn disabled_progress_is_a_no_op() {
        let progress = Progress::default();
        assert!(!progress.is_enabled());
        for value in [1.0, 0.0, -1.0, f64::NAN, f64::INFINITY] {
            progress.report(value, Some(2.0), Some("ignored"));
        }
        assert!(progress.state.is_none());
        let clone = progress.clone();
        assert!(!clone.is_enabled() && clone.state.is_none());
        assert_eq!(format!("{progress:?}"), "Progress { enabled: false }");
    }

    /// `cancelled()` resolves after `cancel`, and at once when already raised.
    #[tokio::test]
    async fn cancel_signal() {
        let signal = CancelSignal::default();
        let waiter = {
            let signal = signal.clone();
            tokio::spawn(async move { signal.cancelled().await })
        };
        tokio::task::yield_now().await;
        assert!(!signal.is_cancelled());
        signal.cancel();
        signal.cancel();
        waiter.await.unwrap();
        assert!(signal.is_cancelled());
        signal.cancelled().await;
        assert!(signal.same_as(&signal.clone()));
        assert!(!signal.same_as(&CancelSignal::default()));
    }
}
