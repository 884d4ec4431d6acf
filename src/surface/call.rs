//! The per-call context handed to [`ToolSurface::call_with`]: the call's
//! name and arguments, its progress reporter and logger, and its
//! cancellation signal.
//!
//! [`ToolSurface::call_with`]: crate::ToolSurface::call_with

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::{Map, Value};
use tokio::sync::Notify;

use super::call_request::CallRequest;
use super::reporter::{self, Reporter};
use crate::observer::{ClientInfo, SessionId};
use crate::protocol::META_CLIENT_INFO;
use crate::surface::call_events::CallEvents;
use crate::surface::log_level::LogLevel;
use crate::trace_context::TraceContext;
use crate::util::wait_for;

/// One tool call, as a surface that wants more than name and arguments sees
/// it. See [`ToolSurface::call_with`](crate::ToolSurface::call_with).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use embacle_tool_host::{Tool, ToolCall, ToolOutcome, ToolSurface};
/// use embacle_tool_host::call::LogLevel;
///
/// struct Indexer(Arc<[Tool]>);
///
/// impl ToolSurface for Indexer {
///     async fn list_tools(&self) -> Arc<[Tool]> {
///         Arc::clone(&self.0)
///     }
///
///     fn may_log(&self) -> bool {
///         true
///     }
///
///     async fn call_with(&self, call: ToolCall<'_>) -> ToolOutcome {
///         for batch in 1..=4 {
///             // ... index one batch ...
///             call.progress(f64::from(batch), Some(4.0), Some("indexing"));
///             call.log(LogLevel::Info, format!("batch {batch} indexed"));
///         }
///         ToolOutcome::text("indexed 4 batches")
///     }
/// }
///
/// let surface = Arc::new(Indexer(Vec::new().into())); // for ToolHost::open_session
/// # drop(surface);
/// ```
pub struct ToolCall<'a> {
    name: &'a str,
    arguments: &'a Value,
    /// Where its progress and log messages go: present only when the call
    /// runs on a stream (see `call_events.rs`, which also decides what each
    /// kind of event may send).
    events: Option<&'a Arc<CallEvents>>,
    cancel: &'a CancelSignal,
    // What `request` reads, kept as the request left it: nothing is
    // parsed until a tool asks, so a call whose tool never does pays for
    // none of it.
    /// The session whose bearer the call presented.
    session: SessionId,
    /// `params._meta`, when an object.
    meta: Option<&'a Map<String, Value>>,
    /// The `clientInfo` its MCP session's `initialize` gave (before
    /// 2026-07-28, where the client names itself in `meta` instead).
    session_client: Option<&'a Value>,
}

impl<'a> ToolCall<'a> {
    /// The call `tools_call.rs` hands the surface, with what it knows of
    /// the request: its session, `_meta` and MCP session's client.
    pub(crate) fn new(
        name: &'a str,
        arguments: &'a Value,
        events: Option<&'a Arc<CallEvents>>,
        cancel: &'a CancelSignal,
        session: SessionId,
        meta: Option<&'a Map<String, Value>>,
        session_client: Option<&'a Value>,
    ) -> Self {
        Self {
            name,
            arguments,
            events,
            cancel,
            session,
            meta,
            session_client,
        }
    }

    /// The tool's name.
    pub fn name(&self) -> &'a str {
        self.name
    }

    /// The arguments: a JSON object, `{}` when the client sent none.
    pub fn arguments(&self) -> &'a Value {
        self.arguments
    }

    /// What the agent sent with the call (its `_meta`, trace context and
    /// client) and the session it came through; see [`CallRequest`].
    pub fn request(&self) -> CallRequest<'a> {
        let client = self.meta.and_then(|meta| meta.get(META_CLIENT_INFO));
        CallRequest {
            session: self.session,
            meta: self.meta,
            trace: self.meta.map(TraceContext::from_meta).unwrap_or_default(),
            client: client
                .or(self.session_client)
                .and_then(ClientInfo::from_value),
            // The stream's events carry the request's progress token.
            progress_reaches_client: self.events.is_some_and(|e| e.progress_token.is_some()),
        }
    }

    /// Reports progress; see [`Reporter`] for when it reaches the client.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(events) = self.events {
            events.report_progress(progress, total, message);
        }
    }

    /// Sends a log message at `level`; see [`Reporter`] for when it
    /// reaches the client.
    pub fn log(&self, level: LogLevel, data: impl Into<Value>) {
        reporter::send(self.events.map(|events| &**events), level, None, data);
    }

    /// A handle on this call's progress and logging, to move into work the
    /// tool spawns.
    pub fn reporter(&self) -> Reporter {
        Reporter {
            events: self.events.cloned(),
        }
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
            .field("reporter", &self.reporter())
            .field("cancelled", &self.cancel.is_cancelled())
            .finish_non_exhaustive()
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
        wait_for(&self.state.notify, || self.is_cancelled().then_some(())).await;
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
