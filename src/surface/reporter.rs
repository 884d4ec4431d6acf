//! Reporting from a call: the [`Reporter`] a tool takes from its
//! [`ToolCall`](crate::ToolCall) into work it spawns, to send progress and
//! log messages on the call's stream.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use super::call_events::CallEvents;
use super::log_level::LogLevel;

/// Sends a call's progress and log messages to the client, as
/// `notifications/progress` and `notifications/message` events on the
/// request's SSE stream, ahead of its result. One handle for both: take it
/// with [`ToolCall::reporter`](crate::ToolCall::reporter) and move it into
/// work the tool spawns. (Within the tool's own future,
/// [`ToolCall::progress`](crate::ToolCall::progress) and
/// [`ToolCall::log`](crate::ToolCall::log) do the same.)
///
/// **Progress** reaches the client only when the request carried
/// `params._meta.progressToken` **and** its `Accept` header admits
/// `text/event-stream`; otherwise [`progress`](Self::progress) is a cheap
/// no-op and the response stays plain JSON. The host enforces MCP's rules
/// for you:
///
/// - values must strictly increase: a report not above the last one is
///   dropped;
/// - reports are rate-limited: at most one event per 25 ms, and when
///   reports come faster only the latest is sent;
/// - nothing is sent after the final response, so a report from work that
///   outlives the call is dropped.
///
/// **A log message** goes out only when all of these hold; otherwise
/// [`log`](Self::log) is a cheap no-op (one branch):
///
/// - the session's surface said it logs
///   ([`ToolSurface::may_log`](crate::ToolSurface::may_log)), so the host
///   advertised the `logging` capability;
/// - the request's `Accept` header admits `text/event-stream`;
/// - the client asked for logs at that level: in MCP 2025-11-25 and
///   earlier, the session's level from `logging/setLevel` (every level
///   until the client sets one); in 2026-07-28, the request's own
///   `_meta["io.modelcontextprotocol/logLevel"]` — a request without it
///   gets no messages at all.
///
/// The legacy level belongs to the *bearer*, as everything else here does:
/// every MCP client that presents it shares one level, and a new
/// `initialize` does not reset it. A call reads the level once, when it
/// starts. Messages are sent in order, never after the result. They wait
/// for the stream while the tool runs: at most 256 messages and 1 MiB per
/// call, so a tool that logs more between two `.await`s, or while the
/// client is not reading, loses the excess, and one message from the
/// logger `embacle-tool-host` (at `warning`, or the client's level if
/// higher) says how many.
///
/// Cheap to clone (one reference count).
#[derive(Clone, Default)]
pub struct Reporter {
    /// The call's events, when it runs on a stream.
    pub(crate) events: Option<Arc<CallEvents>>,
}

impl Reporter {
    /// Reports `progress` (of `total`, if known), with an optional message.
    ///
    /// Non-finite or non-increasing values are dropped, and so is every
    /// report of a call without a token.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(events) = &self.events {
            events.report_progress(progress, total, message);
        }
    }

    /// Whether progress reaches the client (see the type's docs).
    pub fn progress_enabled(&self) -> bool {
        self.events
            .as_ref()
            .is_some_and(|events| events.progress_token.is_some())
    }

    /// Sends `data` (any JSON: a string, or an object with details) at
    /// `level`.
    pub fn log(&self, level: LogLevel, data: impl Into<Value>) {
        send(self.events.as_deref(), level, None, data);
    }

    /// Sends `data` at `level` under a logger name (`logger` on the wire),
    /// such as the component that speaks.
    pub fn log_as(&self, level: LogLevel, logger: &str, data: impl Into<Value>) {
        send(self.events.as_deref(), level, Some(logger), data);
    }

    /// Whether a message at `level` would reach the client: check it before
    /// building costly data.
    pub fn log_enabled(&self, level: LogLevel) -> bool {
        self.events
            .as_deref()
            .is_some_and(|events| events.admits(level))
    }
}

/// Sends `data` at `level` through a call's `events`, if any; the data is
/// converted to JSON only when the level is admitted. What [`Reporter`]
/// and `ToolCall::log` both do.
pub(crate) fn send(
    events: Option<&CallEvents>,
    level: LogLevel,
    logger: Option<&str>,
    data: impl Into<Value>,
) {
    if let Some(events) = events.filter(|events| events.admits(level)) {
        events.log(level, logger, &data.into());
    }
}

impl fmt::Debug for Reporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let threshold = self.events.as_ref().and_then(|e| e.log_threshold);
        f.debug_struct("Reporter")
            .field("progress", &self.progress_enabled())
            .field("log_threshold", &threshold)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A disabled reporter says so, and stays disabled whatever it is sent:
    /// no report creates the state a stream would read, and a clone is as
    /// disabled. (`mcp::tests::progress_without_a_stream_is_disabled` shows
    /// what the tool and the client see: one plain JSON response.)
    #[test]
    fn a_default_reporter_is_a_no_op() {
        let reporter = Reporter::default();
        assert!(!reporter.progress_enabled());
        assert!(LogLevel::ALL
            .iter()
            .all(|&level| !reporter.log_enabled(level)));
        for value in [1.0, 0.0, -1.0, f64::NAN, f64::INFINITY] {
            reporter.progress(value, Some(2.0), Some("ignored"));
        }
        reporter.log(LogLevel::Emergency, "nowhere");
        assert!(reporter.events.is_none());
        let clone = reporter.clone();
        assert!(!clone.progress_enabled() && clone.events.is_none());
        assert_eq!(
            format!("{reporter:?}"),
            "Reporter { progress: false, log_threshold: None }"
        );
    }
}
