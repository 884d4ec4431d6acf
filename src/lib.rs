//! A loopback MCP tool host that lets an ACP agent call its caller's tools.
//!
//! An ACP agent (for example `copilot --acp`) runs its own tool loop in its
//! own process. The one way its caller can lend it the *caller's* tools is to
//! declare an MCP server in ACP `session/new` (`mcpServers`); the agent then
//! speaks MCP to that server over Streamable HTTP, and each `tools/call`
//! carries the tool's name and arguments in full. This crate is that server,
//! embedded in the caller's process, on 127.0.0.1.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), embacle_tool_host::Error> {
//! use std::sync::Arc;
//! use embacle_tool_host::{StaticSurface, Tool, ToolHost, ToolHostConfig};
//! use serde_json::{json, Value};
//!
//! let host = ToolHost::bind(ToolHostConfig {
//!     server_name: "dravr".to_owned(),
//!     ..ToolHostConfig::default()
//! })
//! .await?;
//! let tools = vec![Tool::new(
//!     "echo",
//!     "Returns the text it is given.",
//!     json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
//! )?];
//! let surface = StaticSurface::new(tools, |_name: String, args: Value| async move {
//!     args.get("text").cloned().ok_or("`text` is required")
//! })?;
//! let session = host.open_session(Arc::new(surface))?; // a guard, not an id
//! // The ACP mcpServers array for session/new, once the agent's initialize
//! // result says it takes an http MCP server.
//! let initialize_result = json!({"protocolVersion": 1,
//!     "agentCapabilities": {"mcpCapabilities": {"http": true}}});
//! let servers = session.mcp_servers().for_acp_agent(&initialize_result)?;
//! assert_eq!(servers[0]["name"], "dravr");
//! // ... the agent runs its turn and calls tools ...
//! drop(session); // the bearer is revoked at this instant
//! # Ok(())
//! # }
//! ```
//!
//! # Layout
//!
//! Requests flow one way: transport → auth → JSON-RPC → MCP → surface.
//! Each folder of `src/` is one concept, and its `mod.rs` is its map: what
//! it holds, and exactly what other folders may use. Folders import only
//! from folders below them (`scripts/layering` prints the order and fails
//! on a cycle). A folder's structs are built and written only in it:
//! elsewhere through their constructors and methods, `state/` behind
//! methods too (`scripts/layering` fails on a struct literal or a field
//! assignment outside the struct's folder; public value types such as
//! [`Observation`](observe::Observation) are their fields). From the top:
//!
//! - `host.rs`: [`ToolHost`]; the listener, the accept loop and shutdown.
//! - `http/`: the hyper service function and every HTTP check, the request
//!   headers and body, the status of every refusal, and response bodies
//!   (complete, a streamed call's SSE, a notification stream).
//! - `mcp/`, `session/` (side by side): the method dispatcher — a body and
//!   its MCP headers in, a reply out, asking the surface and changing the
//!   session's state on the way (unit-tested without a socket); and the
//!   caller's side: [`ToolSession`], [`McpServers`](agent::McpServers),
//!   each agent's config and [`Runner`](agent::Runner).
//! - `state/`: what the host and its sessions hold — the shared limits and
//!   slab, each session's state (behind methods), calls in flight, list
//!   changes (one owner: the signal, [`ListChangedNotifier`], the streams
//!   that deliver it, the count of listings, the hold on a result), the
//!   output schemas a listing declared, MCP sessions.
//! - `surface/`: what user code implements and is handed: [`ToolSurface`],
//!   [`StaticSurface`], [`ToolCall`], [`Reporter`](call::Reporter).
//! - `tool/`: [`Tool`], [`ToolOutcome`], [`ContentBlock`](content::ContentBlock).
//! - `protocol/`: MCP revisions (the two eras, classified per request),
//!   `x-mcp-header` bindings, the server's info.
//! - `config.rs`: [`ToolHostConfig`], every limit and its validation.
//! - `auth/`: the bearer format and the lock-free revocation slab.
//! - `jsonrpc/`: JSON-RPC envelopes, reading a body, writing JSON (one
//!   small writer owns the punctuation of objects and arrays, but for the
//!   batch's array, `mcp/batch.rs`, and the fixed modern `_meta` fragments
//!   rendered once at bind, `protocol/server_info.rs`).
//! - `conn/`: a connection's supervision: admission, the peer's user, the
//!   header read timeout, write stalls, graceful shutdown.
//! - `util/`: futures (a bounded wait, a wait on a `Notify`), a latch, the
//!   one way a lock is taken, panic containment, base64, the SSE frame of
//!   one message.
//! - `observer.rs`: the window on every request ([`observe`]), the
//!   [`SessionId`] it names sessions by, and the client a request names.
//! - `trace_context.rs`: the W3C trace context of a request's `_meta`,
//!   each member checked, for the observer and the tool.
//! - `error.rs`: the one public [`Error`], and its [`ErrorKind`].
//! - `bench_support.rs` (hidden, `bench-internals` feature): what the
//!   crate's benches and fuzz targets reach without a socket. Not API.
//!
//! # Security model
//!
//! The listener is reachable by every local process and, through DNS
//! rebinding, by browser pages. So every request must pass, in order: a
//! `Host` naming this loopback listener and no foreign `Origin` (else 403);
//! a live bearer of this host's minting (else 401), checked in constant time
//! before the body is read. Each bearer carries 256 random bits and belongs
//! to one [`ToolSession`]; dropping the guard revokes it in one atomic step.
//! It also cancels the session's calls in flight. A panicking tool fails its
//! own call only. Connection slots go to authenticated clients first: a
//! flood of connections without a live bearer sheds its own oldest members,
//! never a connection that has authenticated, and one session holds at most
//! its share of the slots. On Linux (on the architectures whose netlink
//! socket flags `conn/peer_user.rs` knows, which
//! [`ToolHost::checks_peer_user`] reports), a connection that another
//! local user opened is refused, so a bearer leaked to them is useless.
//! What one connection can make the host hold is bounded by the config
//! (see [`ToolHostConfig`]'s "Memory"). Bearers never appear in the
//! `Debug` of the crate's own types (the guard, the entries' headers,
//! [`BearerEnv`](agent::BearerEnv)), in errors or in logs (the crate logs
//! nothing) — but the JSON values the entries hand out for an agent carry
//! the bearer, and a `serde_json::Value`'s `Debug` prints it; they reach
//! disk only in a config file you ask for
//! ([`ToolSession::write_mcp_config`]: mode 0600 on Unix, removed with the
//! guard). What it cannot defend against: a process that can read the
//! caller's memory, or the agent it handed the bearer to, while the session
//! is open. See README.md for the full model.
// No `unsafe` but the two calls that open a netlink socket, in
// `conn/peer_user.rs` (Linux), and the Win32 calls that create a config
// file only its owner may open, in `session/owner_only_file.rs` (Windows);
// each module doc says why.
#![deny(unsafe_code)]
#![doc(test(attr(deny(warnings))))]

mod auth;
#[cfg(feature = "bench-internals")]
#[doc(hidden)]
pub mod bench_support;
mod config;
mod conn;
mod error;
mod host;
mod http;
mod jsonrpc;
mod mcp;
mod observer;
mod protocol;
mod session;
mod state;
mod surface;
mod tool;
mod trace_context;
mod util;

pub use config::ToolHostConfig;
pub use error::{Error, ErrorKind};
pub use host::ToolHost;
pub use observer::SessionId;
pub use session::ToolSession;
pub use state::ListChangedNotifier;
pub use surface::{StaticSurface, ToolCall, ToolSurface};
pub use tool::{Tool, ToolOutcome};

/// Describing tools and what they return: a tool's annotations, the
/// content blocks of a result (text, image, audio, resource links and
/// embedded resources, each with optional annotations), and the builder
/// of a result of several blocks.
pub mod content {
    pub use crate::tool::{
        Annotations, ContentBlock, EmbeddedResource, OutcomeBuilder, ResourceLink, Role,
        ToolAnnotations,
    };
}

/// Answering a call beyond its result: its cancellation signal, the
/// reporter of its progress and log messages, what the agent sent with it
/// ([`CallRequest`](call::CallRequest)), and the closure type a
/// [`StaticSurface`] runs.
pub mod call {
    pub use crate::surface::{CallRequest, CancelSignal, LogLevel, Reporter, ToolExecutor};
}

/// Handing a session to an agent: its `mcpServers` entries, the agents the
/// crate knows by name ([`Runner`](agent::Runner)) and how each names a
/// tool to its model, and the bearer kept in an agent's environment.
pub mod agent {
    pub use crate::session::{
        BearerEnv, HttpHeader, McpServer, McpServers, Runner, MISTRAL_VIBE, MODEL_TOOL_NAME_LIMIT,
    };
}

/// A window on every request the host answers: an optional [`Observer`](observe::Observer)
/// in [`ToolHostConfig::observer`] is told each request's session, method,
/// tool, revision, duration, outcome and trace context.
///
/// # What is observed
///
/// - **Every JSON-RPC request the host answers** (a message with an `id`,
///   alone or in a 2025-03-26 batch), once its answer is decided: its
///   session, method, tool (for `tools/call`), protocol revision, how long
///   since its HTTP request's head arrived, and what it came to. A call
///   answered on an SSE stream is observed when its final response is
///   ready; a call cancelled by its client, when the cancellation ends it.
/// - **Every HTTP request refused before its body reached the dispatcher**:
///   403 (a foreign `Host` or `Origin`, another local user), 401 (no live
///   bearer), 429 (the session holds its share of connections), 404, 405,
///   406, 408, 409, 413, 415, 400. Those refused before authentication
///   have no session, and are told together: at most one observation per
///   status each [`REFUSALS_WINDOW`](observe::REFUSALS_WINDOW), counting
///   them (`Observation::requests`), so a flood without a bearer cannot
///   make the observer run once per request. Nothing about the bearer is
///   kept, not even whether one was sent.
///
/// Notifications and client responses (202, nothing answered) are not
/// observed, nor are the legacy era's `GET` stream and `DELETE`, which are
/// not JSON-RPC requests.
///
/// # Cost
///
/// Without an observer (the default) the host takes no clock readings and
/// builds nothing for it: a few branches per request on `Option`s that
/// are `None` (a `tools/call` tests one at the transport, one at dispatch
/// and two as it ends). With one, the observer runs on the request's own task, inline,
/// before the answer is sent (the refusals told together, on a task of
/// their own): keep it short and never block, not even on a write to
/// stderr, which waits for ever once a pipe nobody reads is full (send the
/// observation to a bounded channel, dropping when it is full, as
/// `examples/host_tools.rs` does). A panicking observer loses its own
/// observation, not the request.
pub mod observe {
    pub use crate::observer::{
        ClientInfo, Observation, Observer, Outcome, INVALID_METHOD, REFUSALS_WINDOW,
    };
    pub use crate::trace_context::TraceContext;
}

/// The README's Rust examples compile and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
