//! What the transport knows of a request besides its body
//! ([`RequestContext`]), and what the observer is told of a body, or a
//! message in it, that was not a readable request (a readable one gets a
//! watch, `watch.rs`). Builds on no other file of `mcp/`.

use std::time::Instant;

use crate::observer::{Observation, Outcome};
use crate::protocol::EnvelopeHeaders;
use crate::state::{Lease, McpSessionHeader};

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
    /// Whether the message is a member of a 2025-03-26 batch: its response
    /// joins the batch's array, so it never streams (`may_stream` is
    /// false), and it may not be `initialize`.
    pub(super) in_batch: bool,
}

impl<'a> RequestContext<'a> {
    /// A request's context as the transport read it. Only mcp/ reads its
    /// fields (and `batch.rs` sets `in_batch` and clears `may_stream` for
    /// a batch's members).
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
            in_batch: false,
        }
    }

    /// Tells the host's observer, if any, of this body, or a message in
    /// it, that was not a readable request: no method, an error of this
    /// `code`, answered with `response_bytes`.
    #[cold]
    #[inline(never)]
    pub(super) fn tell_unreadable(&self, lease: &Lease, code: i32, response_bytes: usize) {
        if let (Some(since), Some(observer)) = (self.since, &lease.shared.config.observer) {
            let session = Some(lease.session.id());
            let outcome = Outcome::Failed { code };
            observer.tell(&Observation {
                request_bytes: self.request_bytes as u64,
                response_bytes: response_bytes as u64,
                ..Observation::bare(session, since.elapsed(), outcome)
            });
        }
    }
}
