//! Tool logging: the [`Logger`] a call sends `notifications/message`
//! through.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::surface::call_events::CallEvents;
use crate::surface::log_level::LogLevel;

/// Sends a call's log messages to the client, as `notifications/message`
/// events on the request's SSE stream, ahead of its result.
///
/// A message goes out only when all of these hold; otherwise
/// [`log`](Self::log) is a cheap no-op (one branch):
///
/// - the session's surface said it logs ([`ToolSurface::may_log`]), so the
///   host advertised the `logging` capability;
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
/// starts.
///
/// Messages are sent in order, never after the result. They wait for the
/// stream while the tool runs: at most 256 messages and 1 MiB per call, so
/// a tool that logs more between two `.await`s, or while the client is not
/// reading, loses the excess, and one message from the logger
/// `embacle-tool-host` (at `warning`, or the client's level if higher)
/// says how many.
///
/// Cheap to clone (one reference count).
///
/// [`ToolSurface::may_log`]: crate::ToolSurface::may_log
#[derive(Clone, Default)]
pub struct Logger {
    pub(crate) events: Option<Arc<CallEvents>>,
}

impl Logger {
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
    pub fn is_enabled(&self, level: LogLevel) -> bool {
        self.events
            .as_deref()
            .is_some_and(|events| events.admits(level))
    }
}

/// Sends `data` at `level` through a call's `events`, if any; the data is
/// converted to JSON only when the level is admitted. What [`Logger`] and
/// `ToolCall::log` both do.
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

impl fmt::Debug for Logger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let threshold = self.events.as_ref().and_then(|e| e.log_threshold);
        f.debug_struct("Logger")
            .field("threshold", &threshold)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A default logger is disabled at every level.
    #[test]
    fn default_logger_is_disabled() {
        let logger = Logger::default();
        assert!(LogLevel::ALL.iter().all(|&level| !logger.is_enabled(level)));
        logger.log(LogLevel::Emergency, "nowhere");
        assert_eq!(format!("{logger:?}"), "Logger { threshold: None }");
    }
}
