//! The `ToolSurface` trait: what a session offers, asked on every request.

use std::future::Future;
use std::sync::Arc;

use serde_json::Value;

use super::call::ToolCall;
use crate::tool::{Tool, ToolOutcome};
use crate::util::BoxFuture;

/// The tools one session offers, and how to run them.
///
/// Both halves are asked **on every request**: `tools/list` calls
/// [`list_tools`](Self::list_tools), and `tools/call` first checks that
/// the tool is visible right now ([`is_visible`](Self::is_visible), or in
/// 2026-07-28 the live list) and only then runs it. A surface implements
/// [`list_tools`](Self::list_tools) and one of the two ways to run a tool: [`call`](Self::call) (the name and
/// arguments) or [`call_with`](Self::call_with) (the call's full context:
/// progress, logging, cancellation). So a tool withdrawn mid-session vanishes
/// from the next listing and stops being callable, without reopening the
/// session; a call to it is answered with JSON-RPC `-32602` and never reaches
/// `call`. The host keeps no copy of the list between requests.
///
/// Implement it with plain `async fn`s; the trait needs no macro crate. The
/// futures must be `Send` because the host runs them on Tokio's worker
/// threads.
///
/// # Choices
///
/// - The methods return `impl Future` rather than boxed futures, so an
///   implementation is ordinary async Rust. The host erases the type once per
///   session (one `Box` per call), which keeps it non-generic: sessions with
///   different surface types share one host.
/// - `list_tools` returns `Arc<[Tool]>` so a surface can keep its current list
///   in an `Arc` and hand it out without copying. The host serves the tools
///   in the order given; keep it deterministic.
/// - A panic in `list_tools`, `is_visible`, `call` or `call_with` fails that
///   one request with JSON-RPC `-32603`; the host and every other call keep
///   going. `list_can_change` and `may_log` are asked once, inside
///   [`ToolHost::open_session`](crate::ToolHost::open_session), on the
///   caller's own task: a panic there is the caller's, as any in its code.
///
/// # Examples
///
/// A surface whose `delete_all` tool can be switched off at any time:
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::Arc;
/// use embacle_tool_host::{Tool, ToolOutcome, ToolSurface};
/// use serde_json::{json, Value};
///
/// struct Notes {
///     deletion_allowed: AtomicBool,
///     read: Tool,
///     delete: Tool,
/// }
///
/// impl ToolSurface for Notes {
///     async fn list_tools(&self) -> Arc<[Tool]> {
///         let mut tools = vec![self.read.clone()];
///         if self.deletion_allowed.load(Ordering::Relaxed) {
///             tools.push(self.delete.clone());
///         }
///         tools.into()
///     }
///
///     async fn call(&self, name: &str, _arguments: &Value) -> ToolOutcome {
///         match name {
///             "read_notes" => ToolOutcome::text("buy milk"),
///             "delete_all" => ToolOutcome::refused("deletion needs the user's confirmation"),
///             _ => ToolOutcome::failed("no such tool"),
///         }
///     }
/// }
///
/// let schema = json!({"type": "object", "additionalProperties": false});
/// let notes = Notes {
///     deletion_allowed: AtomicBool::new(true),
///     read: Tool::new("read_notes", "Read the notes.", schema.clone())?,
///     delete: Tool::new("delete_all", "Delete every note.", schema)?,
/// };
/// let surface = Arc::new(notes); // ready for ToolHost::open_session
/// notes_off(&surface);
///
/// // Withdrawing `delete_all` takes effect on the very next request.
/// fn notes_off(notes: &Notes) {
///     notes.deletion_allowed.store(false, Ordering::Relaxed);
/// }
/// # Ok::<(), embacle_tool_host::Error>(())
/// ```
pub trait ToolSurface: Send + Sync + 'static {
    /// The tools visible right now, in the order `tools/list` serves them.
    fn list_tools(&self) -> impl Future<Output = Arc<[Tool]>> + Send;

    /// Runs the tool `name` with `arguments` (a JSON object; `{}` when the
    /// client sent none).
    ///
    /// The host calls this only for a name it just found visible — by
    /// [`is_visible`](Self::is_visible) in the legacy era, in a fresh
    /// [`list_tools`](Self::list_tools) in 2026-07-28 — on a session whose
    /// bearer it re-checked immediately before. The arguments are not validated against the tool's input
    /// schema: check them and answer [`ToolOutcome::refused`] with a readable
    /// reason, so the model can correct itself (MCP 2025-11-25 wants argument
    /// errors reported that way, not as protocol errors).
    ///
    /// Implement this or [`call_with`](Self::call_with). The default, for a
    /// surface that implements `call_with`, is never reached through the
    /// host; a surface that implements neither fails every call (JSON-RPC
    /// `-32603`) with a message saying so. (Stable Rust cannot require "one
    /// of the two", and the default cannot forward to `call_with`, whose own
    /// default forwards here.)
    fn call(&self, name: &str, arguments: &Value) -> impl Future<Output = ToolOutcome> + Send {
        let _ = arguments;
        std::future::ready(ToolOutcome::failed(format!(
            "tool {name}: the surface implements neither ToolSurface::call nor call_with"
        )))
    }

    /// Runs a call with its full context: progress reporting and the
    /// cancellation signal (see [`ToolCall`]). This is what the host
    /// invokes; the default forwards to [`call`](Self::call), so plain
    /// surfaces need not know it exists.
    ///
    /// The host cancels a call — the client's `notifications/cancelled`,
    /// a closed stream or connection, the session's guard dropped, the call's
    /// time limit — by dropping this future at its next `.await`.
    fn call_with(&self, call: ToolCall<'_>) -> impl Future<Output = ToolOutcome> + Send {
        self.call(call.name(), call.arguments())
    }

    /// Whether `name` is callable right now; asked before every legacy-era
    /// `call`. A 2026-07-28 call needs the tool's `x-mcp-header` bindings
    /// anyway, so the host finds the tool in [`list_tools`](Self::list_tools)
    /// instead: one listing per call, not a check and a listing.
    ///
    /// The default lists the tools and looks for the name, which is what
    /// "asked on every request" means. Override it when listing is costly
    /// (a database query, say) and a direct check is cheaper — but keep it
    /// in agreement with [`list_tools`](Self::list_tools): a tool the model
    /// cannot see must not be callable, and the other way round.
    fn is_visible(&self, name: &str) -> impl Future<Output = bool> + Send {
        async move { self.list_tools().await.iter().any(|t| t.name() == name) }
    }

    /// Whether this surface's list can change while a session is open.
    /// Asked once, when the session opens.
    ///
    /// When true (the default), the session advertises `listChanged: true`
    /// and serves the streams clients listen on, so a
    /// [`ListChangedNotifier`](crate::ListChangedNotifier) signal reaches
    /// them. A surface whose list is fixed says false, and clients then
    /// hold no stream open for it: [`StaticSurface`](crate::StaticSurface)
    /// does. A surface that says false but does change is still asked on
    /// every request; its clients just learn of a change only when they
    /// list again.
    fn list_can_change(&self) -> bool {
        true
    }

    /// Whether this surface's tools send log messages
    /// ([`ToolCall::log`](crate::ToolCall::log)). Asked once, when the
    /// session opens.
    ///
    /// When true, the session advertises the `logging` capability and
    /// serves `logging/setLevel`, and a call that may log is answered on a
    /// stream that carries its log messages ahead of the result (see
    /// [`Reporter`](crate::call::Reporter)): in the legacy era, every call whose
    /// client accepts SSE, whether or not the tool then logs; in
    /// 2026-07-28, a call whose `_meta` asks for a log level. The default is
    /// false: no capability, `logging/setLevel` is `-32601`, and `log` is a
    /// no-op, so surfaces that never log keep plain JSON responses.
    fn may_log(&self) -> bool {
        false
    }
}

/// `ToolSurface` with its futures boxed, so sessions can hold any surface
/// behind one `dyn` type.
pub(crate) trait DynSurface: Send + Sync {
    fn list_tools(&self) -> BoxFuture<'_, Arc<[Tool]>>;
    fn is_visible<'a>(&'a self, name: &'a str) -> BoxFuture<'a, bool>;
    fn call_with<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, ToolOutcome>;
}

impl<S: ToolSurface> DynSurface for S {
    fn list_tools(&self) -> BoxFuture<'_, Arc<[Tool]>> {
        Box::pin(ToolSurface::list_tools(self))
    }

    fn is_visible<'a>(&'a self, name: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(ToolSurface::is_visible(self, name))
    }

    fn call_with<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(ToolSurface::call_with(self, call))
    }
}
