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
//! let servers = session.mcp_servers(); // the ACP mcpServers entries for session/new
//! assert!(servers.to_json().starts_with(r#"[{"type":"http","name":"dravr","url":"http://127.0.0.1:"#));
//! // ... the agent runs its turn and calls tools ...
//! drop(session); // the bearer is revoked at this instant
//! # Ok(())
//! # }
//! ```
//!
//! # Layout
//!
//! Requests flow one way: transport → auth → JSON-RPC → MCP → surface.
//! The modules form layers: each imports only from layers below it
//! (`scripts/layering` prints the layers and fails on a cycle). Roughly
//! from the top (the script's order is exact):
//!
//! - `host`: [`ToolHost`]; the listener, the accept loop and shutdown.
//! - `transport`, `rejection`, `request_headers` (private): the hyper
//!   service function, every HTTP check, and the HTTP/1.1 settings a
//!   connection is served with; the status table of every refusal; the one
//!   pass that reads every header the checks need. The transport maps the dispatcher's
//!   reply classes to status codes.
//! - `response_body`, `sse`, `notification_stream` (private): response
//!   bodies; the SSE stream that drives a streamed call and frames its
//!   progress, and the one that carries a session's list changes.
//! - `mcp` (private): the method dispatcher: a body and its MCP headers in,
//!   a reply out, asking the surface and changing the session's state on
//!   the way (unit-tested without a socket);
//!   `mcp/tools_call.rs` checks, runs and answers `tools/call`;
//!   `mcp/subscriptions.rs` opens notification streams and renders what
//!   they carry.
//! - `agent_config`: each kind of agent's entry, as methods of
//!   [`McpServers`] and [`ToolSession`]: [`McpServers::for_acp_agent`] (the
//!   ACP array, checked against the agent's capabilities) and the config
//!   files of the agents that read one (written only into private
//!   directories).
//! - `runner`: [`Runner`], each agent tested: how it names tools to its
//!   model, the limits that follow, and its config-file flag.
//! - `session`: [`ToolSession`], the guard whose drop revokes the bearer;
//!   [`McpServers`], the ACP entries.
//! - `shared` (private): the host's `Shared` limits and revocation slab,
//!   each session's state (which holds its surface, so `shared` sits above
//!   `surface`), [`SessionId`], and the `Lease` a request holds on its
//!   session.
//! - `listings` (private): what a session's listings told its agents: the
//!   count, the wait for the first ([`ToolSession::first_listing`]), and
//!   which tools the latest declared an `outputSchema` for.
//! - `surface`, `static_surface`: [`ToolSurface`], the two halves every
//!   request asks; [`StaticSurface`], a fixed list plus an executor.
//! - `tool`, `outcome`, `content`: [`Tool`] descriptors; [`ToolOutcome`],
//!   success, refusal or failure, and its [`OutcomeBuilder`];
//!   [`ContentBlock`]s and their per-revision rendering.
//! - `in_flight`, `entry` (private): a session's calls in flight, for
//!   cancellation; the gate that makes "no call starts after the guard's
//!   drop returns" exact.
//! - `call`, `progress`, `logging`, `log_level`, `call_events` (private):
//!   [`ToolCall`], the per-call context of long calls, with its [`Progress`]
//!   reporter, its [`Logger`] and [`CancelSignal`]; the channel that carries
//!   a streamed call's progress and log messages to its stream.
//! - `list_changed`: [`ListChangedNotifier`], and each session's record of
//!   its list changes that streams wait on, of the audiences (one client's
//!   streams) each change has reached, and of the wait that holds a call's
//!   result until its change is on every stream.
//! - `mcp_session` (private): the MCP sessions (`Mcp-Session-Id`) each
//!   legacy `initialize` mints inside a bearer's session: their ids, the
//!   version each negotiated, and the per-bearer cap.
//! - `config`: [`ToolHostConfig`], every limit and its validation.
//! - `server_info` (private): what the server says about itself, rendered
//!   once per host.
//! - `era`, `param_headers` (private): protocol revisions (legacy and
//!   2026-07-28, classified per request); `x-mcp-header` annotations,
//!   checked when a [`Tool`] is built and against `Mcp-Param-*` headers.
//! - `jsonrpc` (private): JSON-RPC envelopes, error codes and response
//!   framing; `jsonrpc/read.rs` reads a body, the usual one by the
//!   allocation-free pass of `jsonrpc/envelope.rs`, whose members
//!   `jsonrpc/member_value.rs` builds into `Value`s when a method asks.
//! - `bearer`, `revocation` (private): the token format, and the lock-free
//!   slab that validates and revokes bearers in O(1).
//! - `admission`, `peer_user`, `write_stall`, `idle_deadline`, `drain`
//!   (private): which connections hold the host's slots (authenticated
//!   ones always win, each session within its share), which local user a
//!   connection comes from (Linux), closing those whose client stopped
//!   reading, the header read
//!   timeout kept off the request path (two stores and a clock read per
//!   request, the timer in each connection's supervisor), and graceful
//!   shutdown at the cost of one atomic load per poll.
//! - `json_scan`, `json_out`, `base64` (private): a body's JSON shape
//!   before parsing (the memory its parse would take, a batch's length);
//!   appending JSON to a response; base64 (decoding the `=?base64?…?=`
//!   header form, encoding media blocks).
//! - `future`, `unwind` (private): a boxed future type and a two-way
//!   select; panic containment.
//! - `error`: the one public [`Error`].
//! - `bench_support` (hidden, `bench-internals` feature): what the crate's
//!   benches and fuzz targets reach without a socket. Not API.
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
//! its share of the slots. On Linux, a connection that another local user
//! opened is refused, so a bearer leaked to them is useless. What one
//! connection can make
//! the host hold is bounded by the config (see [`ToolHostConfig`]'s
//! "Memory"). Bearers never appear in
//! `Debug`, errors or logs (the crate logs nothing); they reach disk only
//! in a config file you ask for ([`ToolSession::write_mcp_config`]: mode
//! 0600 on Unix, removed with the guard). What it cannot defend
//! against: a process that can read the caller's memory, or the agent it
//! handed the bearer to, while the session is open. See README.md for the
//! full model.
// No `unsafe` but the two calls that open a netlink socket, in
// `peer_user.rs` (its module doc says why).
#![deny(unsafe_code)]
#![doc(test(attr(deny(warnings))))]

mod admission;
mod agent_config;
mod base64;
mod bearer;
#[cfg(feature = "bench-internals")]
#[doc(hidden)]
pub mod bench_support;
mod call;
mod call_events;
mod config;
mod content;
mod drain;
mod entry;
mod era;
mod error;
mod future;
mod host;
mod idle_deadline;
mod in_flight;
mod json_out;
mod json_scan;
mod jsonrpc;
mod list_changed;
mod listings;
mod log_level;
mod logging;
mod mcp;
mod mcp_session;
mod notification_stream;
mod outcome;
mod param_headers;
mod peer_user;
mod progress;
mod rejection;
mod request_body;
mod request_headers;
mod response_body;
mod revocation;
mod runner;
mod server_info;
mod session;
mod shared;
mod sse;
mod static_surface;
mod surface;
mod tool;
mod transport;
mod unwind;
mod write_stall;

pub use call::{CancelSignal, ToolCall};
pub use config::ToolHostConfig;
pub use content::{Annotations, ContentBlock, EmbeddedResource, ResourceLink, Role};
pub use error::Error;
pub use host::ToolHost;
pub use list_changed::ListChangedNotifier;
pub use log_level::LogLevel;
pub use logging::Logger;
pub use outcome::{OutcomeBuilder, ToolOutcome};
pub use progress::Progress;
pub use runner::{Runner, MODEL_TOOL_NAME_LIMIT};
pub use session::{HttpHeader, McpServer, McpServers, ToolSession};
pub use shared::SessionId;
pub use static_surface::{StaticSurface, ToolExecutor};
pub use surface::ToolSurface;
pub use tool::{Tool, ToolAnnotations};

/// The README's Rust examples compile and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
