//! What the transport knows of a request besides its body
//! ([`RequestContext`]), and the observer's watch it starts on a request.
//! Builds on `watch.rs` only.

use std::time::Instant;

use super::watch::Watch;
use crate::jsonrpc::Request;
use crate::protocol::EnvelopeHeaders;
use crate::state::McpSessionHeader;

/// What the transport knows about the request besides its body.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestContext<'a> {
    /// The raw MCP headers.
    pub(super) headers: EnvelopeHeaders<'a>,
    /// Whether the client takes an SSE response (its `Accept` names
    /// `text/event-stream`), so a call with a progress token may stream.
    pub(super) may_stream: bool,
    /// The MCP session its `Mcp-Session-Id` names, if it sent one.
    pub(super) session: McpSessionHeader<'a>,
    /// When the request's head arrived, read only when the host has an
    /// observer (`watch.rs`): `None` without one.
    pub(super) since: Option<Instant>,
    /// The length of the request's body, for the observer.
    pub(super) request_bytes: usize,
}

impl<'a> RequestContext<'a> {
    /// A request's context as the transport read it. Only mcp/ reads its
    /// fields (and `batch.rs` clears `may_stream` for a batch's members).
    pub(crate) fn new(
        headers: EnvelopeHeaders<'a>,
        may_stream: bool,
        session: McpSessionHeader<'a>,
        since: Option<Instant>,
        request_bytes: usize,
    ) -> Self {
        Self {
            headers,
            may_stream,
            session,
            since,
            request_bytes,
        }
    }

    /// The observer's watch on `request`, whose answer follows the
    /// `written` bytes already in the response buffer: `None` without an
    /// observer.
    pub(super) fn watch(&self, request: &Request<'_>, written: usize) -> Option<Box<Watch>> {
        let since = self.since?;
        let watched = (since, self.request_bytes);
        Some(Watch::new(watched, request, self.session, written))
    }
}
