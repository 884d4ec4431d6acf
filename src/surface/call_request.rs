//! What the agent sent with a call beyond its name and arguments, and the
//! session it came through ([`CallRequest`], from `ToolCall::request`): so
//! that a tool's own spans nest under the agent's trace, and its logs say
//! which agent-side session called it.

use serde_json::{Map, Value};

use crate::observer::{ClientInfo, SessionId};
use crate::trace_context::TraceContext;

/// What a call's request carried besides its name and arguments, and the
/// session whose bearer it presented. Nothing of the bearer, nor of any
/// header.
///
/// ```
/// use std::sync::Arc;
/// use embacle_tool_host::{Tool, ToolCall, ToolOutcome, ToolSurface};
///
/// struct Traced(Arc<[Tool]>);
///
/// impl ToolSurface for Traced {
///     async fn list_tools(&self) -> Arc<[Tool]> {
///         Arc::clone(&self.0)
///     }
///
///     async fn call_with(&self, call: ToolCall<'_>) -> ToolOutcome {
///         let request = call.request();
///         // A span of the tool's own, under the agent's, if it sent one.
///         let parent = request.trace.traceparent.unwrap_or("none");
///         // OpenCode, for one, names its own session in `_meta.sessionID`.
///         let agent_session = request.meta.and_then(|meta| meta.get("sessionID"));
///         ToolOutcome::text(format!("{} under {parent}, {agent_session:?}", request.session))
///     }
/// }
/// # drop(Traced(Vec::new().into()));
/// ```
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct CallRequest<'a> {
    /// The session whose bearer the call presented (the guard's
    /// `session_id()`).
    pub session: SessionId,
    /// `params._meta` as the client sent it, every key; `None` when it
    /// sent none (or not an object). The host reads `progressToken` and,
    /// in 2026-07-28, the `io.modelcontextprotocol/` keys from it; the rest
    /// is the client's, for the tool to read.
    pub meta: Option<&'a Map<String, Value>>,
    /// The W3C trace context in `_meta`, each member only when valid.
    pub trace: TraceContext<'a>,
    /// The client, as it named itself (see
    /// [`Observation::client`](crate::observe::Observation::client)).
    pub client: Option<ClientInfo<'a>>,
    /// Whether progress the tool reports can reach the client at all: it
    /// sent a `progressToken`, and the call is answered on a stream (it
    /// accepts one, and the call was its body's only message). A tool
    /// that runs long and cannot report progress runs against the
    /// client's own deadline (README, "Long calls").
    pub progress_reaches_client: bool,
}
