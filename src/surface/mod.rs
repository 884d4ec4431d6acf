//! What user code implements and what it is handed:
//!
//! - `tool_surface.rs`: [`ToolSurface`], the two halves asked on every
//!   request (`list_tools`, `call`/`call_with`), and the object-safe
//!   `DynSurface` the host stores every session's surface behind;
//! - `static_surface.rs`: [`StaticSurface`], a fixed list plus an executor;
//! - `call.rs`: [`ToolCall`], the per-call context of `call_with`, with its
//!   [`CancelSignal`]; `call_request.rs`: [`CallRequest`], what the agent
//!   sent with the call;
//! - `reporter.rs`, `log_level.rs`: the call's [`Reporter`] of progress
//!   and log messages, and the [`LogLevel`] a session set;
//! - `call_events.rs`: the channel that carries a streamed call's progress
//!   and log messages to its SSE stream (`http/sse.rs`).

mod call;
mod call_events;
mod call_request;
mod log_level;
mod reporter;
mod static_surface;
mod tool_surface;

pub use call::{CancelSignal, ToolCall};
pub use call_request::CallRequest;
pub use log_level::LogLevel;
pub use reporter::Reporter;
pub use static_surface::{StaticSurface, ToolExecutor};
pub use tool_surface::ToolSurface;

pub(crate) use call_events::{CallEvents, Event};
pub(crate) use log_level::{AtomicLogLevel, LEVEL_NAMES};
pub(crate) use tool_surface::DynSurface;
