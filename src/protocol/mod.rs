//! Which MCP revision a request speaks, and what follows from it:
//!
//! - `era/`: the two eras (legacy 2025-03-26 … 2025-11-25, and
//!   2026-07-28), classified per request from its headers and body; the
//!   era decides the result's envelope, logging, `Mcp-Param-*` checks,
//!   content rendering, the methods served and batching. Also the
//!   `Mcp-*` header values' decoding;
//! - `param_headers.rs`: `x-mcp-header` tool annotations, checked when a
//!   `Tool` is built and against a call's `Mcp-Param-*` headers;
//! - `server_info.rs`: what the server says about itself, rendered once per
//!   host.
//!
//! `era` and `param_headers` are also used as namespaces
//! (`era::negotiate`, `param_headers::check`).

pub(crate) mod era;
pub(crate) mod param_headers;
mod server_info;

pub(crate) use era::{
    EnvelopeHeaders, Era, Header, ParamHeaders, META_CLIENT_INFO, META_LOG_LEVEL, META_SERVER_INFO,
    META_SUBSCRIPTION_ID,
};
pub(crate) use param_headers::HeaderBinding;
pub(crate) use server_info::ServerInfo;
