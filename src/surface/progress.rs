//! Progress reporting: the [`Progress`] handle a call reports through.

use std::fmt;
use std::sync::Arc;

use crate::surface::call_events::CallEvents;

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
    /// The call's events, when it runs on a stream.
    pub(crate) events: Option<Arc<CallEvents>>,
}

impl Progress {
    /// Whether reports reach the client (see the type's docs).
    pub fn is_enabled(&self) -> bool {
        self.events
            .as_ref()
            .is_some_and(|events| events.progress_token.is_some())
    }

    /// Reports `progress` (of `total`, if known), with an optional message.
    ///
    /// Non-finite or non-increasing values are dropped, and so is every
    /// report of a call without a token.
    pub fn report(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(events) = &self.events {
            events.report_progress(progress, total, message);
        }
    }
}

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Progress")
            .field("enabled", &self.is_enabled())
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
    fn disabled_progress_is_a_no_op() {
        let progress = Progress::default();
        assert!(!progress.is_enabled());
        for value in [1.0, 0.0, -1.0, f64::NAN, f64::INFINITY] {
            progress.report(value, Some(2.0), Some("ignored"));
        }
        assert!(progress.events.is_none());
        let clone = progress.clone();
        assert!(!clone.is_enabled() && clone.events.is_none());
        assert_eq!(format!("{progress:?}"), "Progress { enabled: false }");
    }
}
