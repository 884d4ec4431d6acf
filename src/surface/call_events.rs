//! What a streamed tool call sends before its result: the channel between
//! the call's [`Reporter`](crate::call::Reporter)
//! handles and the SSE stream that carries their messages.
//!
//! Progress is a *state*: only the latest unsent report matters, so a new
//! one replaces it, and the stream sends at most one per interval. Log
//! messages are *events*: each is sent, in order, as soon as the stream can
//! — up to [`MAX_PENDING_LOGS`] messages or [`MAX_PENDING_LOG_BYTES`] bytes
//! waiting at once. The stream drains the queue while the tool is
//! suspended at an `.await` and the client reads, so a tool that logs more
//! than that between two awaits, or while the client is not reading, loses
//! the excess; the stream then says how many were lost, rather than letting
//! a tool or a slow reader grow the embedder's memory without bound.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Waker;

use serde_json::Value;

use crate::jsonrpc;
use crate::surface::log_level::LogLevel;

/// The most log messages one call keeps waiting for its stream.
pub(crate) const MAX_PENDING_LOGS: usize = 256;

/// The most bytes of rendered log messages one call keeps waiting: a tool
/// that logs its (peer-chosen) arguments cannot make one call hold more.
pub(crate) const MAX_PENDING_LOG_BYTES: usize = 1024 * 1024;

/// The logger name of the message that reports dropped log messages.
const HOST_LOGGER: &str = "embacle-tool-host";

/// One progress report waiting to be sent: its progress, total and message.
type ProgressReport = (f64, Option<f64>, Option<String>);

/// The events of one streamed call, shared by its handles and its stream.
#[derive(Debug, Default)]
pub(crate) struct CallEvents {
    /// The request's `progressToken`: progress is reported only with one.
    pub(crate) progress_token: Option<Value>,
    /// The least severe level sent, when the call may log at all.
    pub(crate) log_threshold: Option<LogLevel>,
    inner: Mutex<Inner>,
    /// The bytes the call's stream has sent, for the host's observer.
    sent: AtomicU64,
}

#[derive(Debug, Default)]
struct Inner {
    /// The latest report not yet sent (newer reports replace it).
    progress: Option<ProgressReport>,
    /// The highest value accepted so far.
    last_progress: Option<f64>,
    /// Rendered `notifications/message` messages, oldest first.
    logs: VecDeque<Vec<u8>>,
    /// Their total length.
    log_bytes: usize,
    /// Messages refused since the queue was last full.
    logs_dropped: u64,
    /// Set once the final response is on its way.
    closed: bool,
    /// The stream to wake when an event arrives.
    waker: Option<Waker>,
}

impl CallEvents {
    pub(crate) fn new(progress_token: Option<Value>, log_threshold: Option<LogLevel>) -> Arc<Self> {
        Arc::new(Self {
            progress_token,
            log_threshold,
            ..Self::default()
        })
    }

    /// The call's stream sent `bytes` more.
    pub(crate) fn count_sent(&self, bytes: usize) {
        self.sent.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// The bytes the call's stream has sent so far.
    pub(crate) fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Accepts a progress report if it is finite and above the last one.
    pub(crate) fn report_progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if self.progress_token.is_none() || !progress.is_finite() {
            return;
        }
        let mut inner = self.lock();
        if inner.closed || inner.last_progress.is_some_and(|last| progress <= last) {
            return;
        }
        inner.last_progress = Some(progress);
        let total = total.filter(|t| t.is_finite());
        inner.progress = Some((progress, total, message.map(str::to_owned)));
        wake(inner);
    }

    /// Whether a message at `level` is sent at all: the call may log, at
    /// that level or a more severe one.
    pub(crate) fn admits(&self, level: LogLevel) -> bool {
        self.log_threshold
            .is_some_and(|threshold| level >= threshold)
    }

    /// Queues a log message at `level` if the threshold admits it.
    pub(crate) fn log(&self, level: LogLevel, logger: Option<&str>, data: &Value) {
        if !self.admits(level) {
            return;
        }
        // Rendered outside the lock: `data` may be large.
        let message = log_message(level, logger, data);
        let mut inner = self.lock();
        if inner.closed {
            return;
        }
        if inner.logs.len() >= MAX_PENDING_LOGS
            || inner.log_bytes + message.len() > MAX_PENDING_LOG_BYTES
        {
            inner.logs_dropped += 1;
            return;
        }
        inner.log_bytes += message.len();
        inner.logs.push_back(message);
        wake(inner);
    }

    /// The next message to send: a log message first (logs are not
    /// throttled), then, if `progress_due`, the pending progress report.
    /// With nothing to send, registers `waker` for the next event.
    pub(crate) fn next(&self, waker: &Waker, progress_due: bool) -> Option<Event> {
        let mut inner = self.lock();
        if let Some(message) = self.take_log(&mut inner) {
            return Some(Event::Log(message));
        }
        if let Some(report) = inner.progress.take_if(|_| progress_due) {
            drop(inner);
            return Some(Event::Progress(self.progress_message(&report)));
        }
        if !inner.waker.as_ref().is_some_and(|w| w.will_wake(waker)) {
            inner.waker = Some(waker.clone());
        }
        None
    }

    /// Stops accepting events: the final response is next. Returns what is
    /// still waiting, in the order to send it ahead of the response.
    pub(crate) fn close(&self) -> Vec<Vec<u8>> {
        let mut inner = self.lock();
        inner.closed = true;
        inner.waker = None;
        let mut pending: Vec<_> = std::iter::from_fn(|| self.take_log(&mut inner)).collect();
        if let Some(report) = inner.progress.take() {
            drop(inner);
            pending.push(self.progress_message(&report));
        }
        pending
    }

    /// The oldest queued log message; once the queue has drained after
    /// drops, the message that says how many were lost, at the call's
    /// threshold if that is above `warning`, so a client that asked only
    /// for errors still hears of it.
    fn take_log(&self, inner: &mut Inner) -> Option<Vec<u8>> {
        if let Some(message) = inner.logs.pop_front() {
            inner.log_bytes -= message.len();
            return Some(message);
        }
        let dropped = std::mem::take(&mut inner.logs_dropped);
        (dropped > 0).then(|| {
            let data = Value::from(format!(
                "{dropped} log messages were dropped: more than {MAX_PENDING_LOGS} messages or {MAX_PENDING_LOG_BYTES} bytes were waiting to be sent"
            ));
            let level = self.log_threshold.map_or(LogLevel::Warning, |t| t.max(LogLevel::Warning));
            log_message(level, Some(HOST_LOGGER), &data)
        })
    }

    /// The `notifications/progress` message that carries `report`.
    fn progress_message(&self, (progress, total, message): &ProgressReport) -> Vec<u8> {
        jsonrpc::notification(128, "notifications/progress", |params| {
            let token = self.progress_token.as_ref().unwrap_or(&Value::Null);
            params
                .value("progressToken", token)
                .value("progress", &(*progress).into());
            if let Some(total) = *total {
                params.value("total", &total.into());
            }
            params.opt_str("message", message.as_deref());
        })
    }
}

/// A message for the stream to send.
#[derive(Debug, PartialEq)]
pub(crate) enum Event {
    Log(Vec<u8>),
    Progress(Vec<u8>),
}

/// Wakes the stream, after letting go of the lock, so the woken task never
/// finds it held.
fn wake(mut inner: MutexGuard<'_, Inner>) {
    let waker = inner.waker.take();
    drop(inner);
    if let Some(waker) = waker {
        waker.wake();
    }
}

/// A `notifications/message` message.
fn log_message(level: LogLevel, logger: Option<&str>, data: &Value) -> Vec<u8> {
    jsonrpc::notification(96, "notifications/message", |params| {
        params
            .str("level", level.as_str())
            .opt_str("logger", logger)
            .value("data", data);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    struct CountWakes(AtomicUsize);
    impl Wake for CountWakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn parse(message: &[u8]) -> Value {
        serde_json::from_slice(message).expect("valid JSON")
    }

    /// Reports must increase; newer ones replace unsent ones; none after close.
    #[test]
    fn progress_rules() {
        let events = CallEvents::new(Some(json!("t")), None);
        let wakes = Arc::new(CountWakes(AtomicUsize::new(0)));
        let waker = Waker::from(wakes.clone());
        assert_eq!(events.next(&waker, true), None);
        events.report_progress(1.0, Some(3.0), Some("one"));
        assert_eq!(wakes.0.load(Ordering::SeqCst), 1);
        events.report_progress(0.5, None, None); // not increasing: dropped
        events.report_progress(f64::NAN, None, None); // dropped
        events.report_progress(2.0, Some(f64::INFINITY), None); // replaces 1.0, total dropped
        assert_eq!(events.next(&waker, false), None, "not due: kept");
        let Some(Event::Progress(message)) = events.next(&waker, true) else {
            panic!("a progress event");
        };
        assert_eq!(
            parse(&message),
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
                   "params": {"progressToken": "t", "progress": 2.0}})
        );
        events.report_progress(2.0, None, None); // equal: dropped
        assert_eq!(events.next(&waker, true), None);
        events.report_progress(3.0, None, Some("three"));
        let pending = events.close();
        assert_eq!(pending.len(), 1);
        assert_eq!(parse(&pending[0])["params"]["message"], "three");
        events.report_progress(4.0, None, None);
        assert_eq!(events.next(&waker, true), None, "nothing after close");
    }

    /// Logs below the threshold, or with no threshold, are never queued;
    /// the rest go out in order, ahead of progress, and flush at close.
    #[test]
    fn log_rules() {
        let waker = Waker::from(Arc::new(CountWakes(AtomicUsize::new(0))));
        let silent = CallEvents::new(None, None);
        silent.log(LogLevel::Emergency, None, &json!("x"));
        assert_eq!(silent.next(&waker, true), None);

        let events = CallEvents::new(Some(json!(1)), Some(LogLevel::Warning));
        events.log(LogLevel::Info, None, &json!("below the threshold"));
        events.report_progress(1.0, None, None);
        events.log(LogLevel::Error, Some("db"), &json!({"code": 7}));
        events.log(LogLevel::Warning, None, &json!("second"));
        let Some(Event::Log(first)) = events.next(&waker, true) else {
            panic!("logs first");
        };
        assert_eq!(
            parse(&first),
            json!({"jsonrpc": "2.0", "method": "notifications/message",
                   "params": {"level": "error", "logger": "db", "data": {"code": 7}}})
        );
        let pending = events.close();
        assert_eq!(pending.len(), 2, "the second log, then the progress");
        assert_eq!(parse(&pending[0])["params"]["data"], "second");
        assert_eq!(parse(&pending[1])["method"], "notifications/progress");
        events.log(LogLevel::Error, None, &json!("after close"));
        assert!(events.close().is_empty());
    }

    /// A full queue drops further messages, and then says how many.
    #[test]
    fn log_queue_is_bounded() {
        let waker = Waker::from(Arc::new(CountWakes(AtomicUsize::new(0))));
        let events = CallEvents::new(None, Some(LogLevel::Debug));
        for i in 0..MAX_PENDING_LOGS + 10 {
            events.log(LogLevel::Info, None, &json!(i));
        }
        let mut sent = Vec::new();
        while let Some(Event::Log(message)) = events.next(&waker, true) {
            sent.push(parse(&message));
        }
        assert_eq!(sent.len(), MAX_PENDING_LOGS + 1);
        assert_eq!(
            sent[MAX_PENDING_LOGS - 1]["params"]["data"],
            MAX_PENDING_LOGS - 1
        );
        let report = &sent[MAX_PENDING_LOGS]["params"];
        assert_eq!(report["level"], "warning");
        assert_eq!(report["logger"], HOST_LOGGER);
        assert!(report["data"]
            .as_str()
            .unwrap()
            .starts_with("10 log messages were dropped"));
    }

    /// Big messages hit the byte budget before the count; the notice of
    /// drops goes out at the client's threshold when that is above warning.
    #[test]
    fn log_bytes_are_bounded_and_the_notice_respects_the_threshold() {
        let waker = Waker::from(Arc::new(CountWakes(AtomicUsize::new(0))));
        let events = CallEvents::new(None, Some(LogLevel::Error));
        let big = json!("x".repeat(100 * 1024));
        for _ in 0..20 {
            events.log(LogLevel::Critical, None, &big);
        }
        let mut sent = Vec::new();
        while let Some(Event::Log(message)) = events.next(&waker, true) {
            sent.push(parse(&message));
        }
        assert_eq!(sent.len(), 10 + 1, "ten 100 KiB messages fit in 1 MiB");
        let notice = &sent[10]["params"];
        assert_eq!(notice["level"], "error");
        assert!(notice["data"]
            .as_str()
            .unwrap()
            .starts_with("10 log messages were dropped"));
        assert!(events.admits(LogLevel::Error) && !events.admits(LogLevel::Warning));
    }
}
