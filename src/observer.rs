//! The window on every request: [`Observer`], what it is told
//! ([`Observation`], [`Outcome`]), and the [`SessionId`] it names sessions
//! by. Public as `observe` (see the crate root for what is observed, and
//! what it costs).
//!
//! A leaf: it names no other folder, so the config (which holds the
//! observer) and the state (which mints session ids) both build on it.

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

/// A session's non-secret identifier, unique within its host; for logs,
/// and for telling [`Observation`]s apart by session.
///
/// Its `Display` form is `session-N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(pub(crate) u64);

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "session-{}", self.0)
    }
}

/// Told of each request the host answers (see [`observe`](crate::observe)
/// for which, and what it costs): a function of one [`Observation`],
/// shared by every connection's task.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), embacle_tool_host::Error> {
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
/// use embacle_tool_host::observe::{Observer, Outcome};
/// use embacle_tool_host::{ToolHost, ToolHostConfig};
///
/// let refused = Arc::new(AtomicU64::new(0));
/// let count = Arc::clone(&refused);
/// let host = ToolHost::bind(ToolHostConfig {
///     observer: Some(Observer::new(move |seen| {
///         if let Outcome::Rejected { status: 401 } = seen.outcome {
///             count.fetch_add(1, Ordering::Relaxed);
///         }
///     })),
///     ..ToolHostConfig::default()
/// })
/// .await?;
/// # drop(host);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Observer(Arc<dyn Fn(&Observation<'_>) + Send + Sync>);

impl Observer {
    /// An observer that calls `observe` with each observation.
    pub fn new(observe: impl Fn(&Observation<'_>) + Send + Sync + 'static) -> Self {
        Self(Arc::new(observe))
    }

    /// Tells the observer; a panic in it is contained here.
    pub(crate) fn tell(&self, observation: &Observation<'_>) {
        let _ = catch_unwind(AssertUnwindSafe(|| (self.0)(observation)));
    }
}

impl fmt::Debug for Observer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Observer(..)")
    }
}

/// One request, as the host answered it. Borrowed from the request: copy
/// out what you keep. It never holds a bearer, nor any header's value:
/// only the MCP method and tool name the client sent, and a `traceparent`
/// checked to be one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Observation<'a> {
    /// The session whose bearer the request presented; `None` when it was
    /// refused before a live bearer was found.
    pub session: Option<SessionId>,
    /// The JSON-RPC method (`tools/call`, `tools/list`, `initialize`, …);
    /// `None` for a request refused before its body was read, or a message
    /// that was not a readable request.
    pub method: Option<&'a str>,
    /// The tool a `tools/call` named, once it is a name a tool could have
    /// (an invalid name is not passed on); `None` for other methods.
    pub tool: Option<&'a str>,
    /// The MCP revision the request was served under (`"2025-06-18"`, …,
    /// `"2026-07-28"`): its era, which is modern for `2026-07-28` and
    /// legacy before it. `None` when it was refused before its era was
    /// decided.
    pub protocol_version: Option<&'static str>,
    /// From the moment the request's HTTP head arrived to the moment its
    /// answer was decided (for a streamed call, its final response).
    pub elapsed: Duration,
    /// What the request came to.
    pub outcome: Outcome,
    /// The W3C trace context a client sent in `params._meta.traceparent`,
    /// when it is well-formed (`00-` 32 hex digits `-` 16 hex digits `-` 2
    /// hex digits, lowercase, 55 characters); anything else is dropped, so
    /// an observer can log it as is.
    pub traceparent: Option<&'a str>,
}

/// What a request came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// Answered with a result: a tool's success, a listing, an
    /// `initialize`, a `ping`.
    Success,
    /// A tool ran and declined (`ToolOutcome::refused`): a result flagged
    /// `isError`, which the model reads.
    Refused,
    /// Answered with a JSON-RPC error of this code: an unknown tool or
    /// method, bad params, a failed or panicking tool, a call past its time
    /// limit (`-32603`), a message naming an ended MCP session (`-32001`).
    Failed {
        /// The JSON-RPC error code.
        code: i32,
    },
    /// The client cancelled the call (`notifications/cancelled`), or its
    /// session ended while it ran: nothing was answered.
    Cancelled,
    /// Refused at the HTTP layer with this status, before (or, for a 401,
    /// while) it was dispatched: no JSON-RPC answer of its own.
    Rejected {
        /// The HTTP status code.
        status: u16,
    },
}

/// `value` when it is a well-formed W3C `traceparent` (version `00`):
/// `00-TRACEID-PARENTID-FLAGS`, lowercase hex of 32, 16 and 2 digits.
pub(crate) fn valid_traceparent(value: &str) -> Option<&str> {
    let bytes = value.as_bytes();
    let hex = |range: std::ops::Range<usize>| {
        bytes[range]
            .iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
    };
    let shaped = bytes.len() == 55
        && bytes.starts_with(b"00-")
        && bytes[35] == b'-'
        && bytes[52] == b'-'
        && hex(3..35)
        && hex(36..52)
        && hex(53..55);
    shaped.then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only the W3C form passes: every malformed variant is dropped.
    #[test]
    fn traceparent_is_checked() {
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert_eq!(valid_traceparent(good), Some(good));
        for bad in [
            "",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-011",
            "00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0\n",
        ] {
            assert_eq!(valid_traceparent(bad), None, "{bad:?}");
        }
    }

    /// A panicking observer loses its observation, nothing more.
    #[test]
    fn a_panicking_observer_is_contained() {
        let observer = Observer::new(|_| panic!("observer bug"));
        let seen = Observation {
            session: None,
            method: None,
            tool: None,
            protocol_version: None,
            elapsed: Duration::ZERO,
            outcome: Outcome::Rejected { status: 401 },
            traceparent: None,
        };
        observer.tell(&seen);
        assert_eq!(format!("{observer:?}"), "Observer(..)");
    }
}
