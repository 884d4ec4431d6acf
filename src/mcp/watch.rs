//! What the host's observer is told of each readable request the dispatcher
//! answers (see `observer.rs`, public as `observe`; a body it could not read
//! is told by `context.rs`). A [`Watch`] exists only when
//! the host has an observer (`RequestContext::since` is then set), so a
//! host without one reads no clock and copies nothing for it. A leaf of
//! `mcp/`: it builds on no other file of the folder.

use std::time::Instant;

use serde_json::Value;

use crate::jsonrpc::Request;
use crate::observer::{printable_method, write_request_id, ClientInfo, Observation, Outcome};
use crate::protocol::{Era, META_CLIENT_INFO};
use crate::state::{Lease, McpSessionHeader};
use crate::surface::CallEvents;
use crate::tool::is_valid_name;
use crate::trace_context::TraceContext;

/// One request being watched: when its head arrived, and what of it the
/// observer is told besides its method. Owned, so a streamed call can take
/// it along, and boxed, so the futures that carry it past their awaits grow
/// by a pointer, not by the watch. Its texts share one buffer: one
/// allocation to make, and one to free wherever a watch is dropped.
pub(super) struct Watch {
    since: Instant,
    /// The bytes of the body that carried the request.
    request_bytes: u64,
    /// How much of the response buffer was written before this request's
    /// answer (in a batch, the members before it).
    written_before: usize,
    /// The texts of [`Text`], one after another.
    text: String,
    /// Where each [`Text`] is in `text`, when the request gave one fit to
    /// pass on.
    spans: [Option<(usize, usize)>; TEXTS],
}

/// What a watch keeps of a request's text, each only when fit to log (see
/// [`Observation`]'s fields of the same names).
#[derive(Clone, Copy)]
enum Text {
    RequestId,
    /// For `tools/call`: `params.name`, once it is a name a tool could have.
    Tool,
    ClientName,
    ClientVersion,
    Traceparent,
    Tracestate,
    Baggage,
}

const TEXTS: usize = 7;

impl Watch {
    /// The watch on a request whose head arrived at `since`, in a body of
    /// `request_bytes`, whose answer will follow the `written_before`
    /// bytes already in the response buffer, reading its tool name (for
    /// `tools/call`), client and trace context from `params` (or its MCP
    /// session). Cold: only a host with an observer comes here, and the
    /// dispatcher's hot path should not carry its code.
    #[cold]
    #[inline(never)]
    pub(super) fn new(
        (since, request_bytes): (Instant, usize),
        request: &Request<'_>,
        mcp_session: McpSessionHeader<'_>,
        written_before: usize,
    ) -> Box<Self> {
        let mut watch = Box::new(Self {
            since,
            request_bytes: request_bytes as u64,
            written_before,
            text: String::new(),
            spans: [None; TEXTS],
        });
        if write_request_id(&request.id, &mut watch.text) {
            watch.spans[Text::RequestId as usize] = Some((0, watch.text.len()));
        }
        let params = request.params.as_ref();
        if let ("tools/call", Some(params)) = (request.method.as_ref(), params) {
            let name = params.get_str("name");
            watch.keep(Text::Tool, name.as_deref().filter(|n| is_valid_name(n)));
        }
        let meta = params.and_then(|p| p.get("_meta"));
        let meta = meta.as_deref().and_then(Value::as_object);
        // Its client: an `initialize`'s own `clientInfo` (no MCP session
        // knows it yet), or the one in `_meta` (2026-07-28 sends it on every
        // request), or the one its MCP session's `initialize` gave.
        let own_info = params
            .filter(|_| request.method == "initialize")
            .and_then(|p| p.get("clientInfo"));
        let session_info = match mcp_session {
            McpSessionHeader::Known(session) => session.client_info(),
            McpSessionHeader::Absent | McpSessionHeader::Unknown => None,
        };
        let info = own_info
            .as_deref()
            .or_else(|| meta?.get(META_CLIENT_INFO))
            .or(session_info.map(|info| &**info));
        if let Some(client) = info.and_then(ClientInfo::from_value) {
            watch.keep(Text::ClientName, Some(client.name));
            watch.keep(Text::ClientVersion, client.version);
        }
        let trace = meta.map(TraceContext::from_meta).unwrap_or_default();
        watch.keep(Text::Traceparent, trace.traceparent);
        watch.keep(Text::Tracestate, trace.tracestate);
        watch.keep(Text::Baggage, trace.baggage);
        watch
    }

    /// Keeps `text`, if any, as `what`. Not inlined, nor is `get`: one
    /// copy serves every text.
    #[inline(never)]
    fn keep(&mut self, what: Text, text: Option<&str>) {
        if let Some(text) = text {
            let start = self.text.len();
            self.text.push_str(text);
            self.spans[what as usize] = Some((start, self.text.len()));
        }
    }

    /// The text kept as `what`, if any.
    #[inline(never)]
    fn get(&self, what: Text) -> Option<&str> {
        let (start, end) = self.spans[what as usize]?;
        self.text.get(start..end)
    }

    /// The bytes of the answer written in `out` since the watch began.
    pub(super) fn written_in(&self, out: &[u8]) -> u64 {
        out.len().saturating_sub(self.written_before) as u64
    }

    /// Tells the host's observer what the request came to, and how many
    /// bytes answered it.
    #[cold]
    #[inline(never)]
    pub(super) fn tell(
        &self,
        lease: &Lease,
        method: &str,
        era: Option<Era>,
        outcome: Outcome,
        response_bytes: u64,
    ) {
        let Some(observer) = &lease.shared.config.observer else {
            return;
        };
        let session = Some(lease.session.id());
        observer.tell(&Observation {
            method: Some(printable_method(method)),
            tool: self.get(Text::Tool),
            protocol_version: era.map(Era::version),
            request_id: self.get(Text::RequestId),
            client: self.get(Text::ClientName).map(|name| ClientInfo {
                name,
                version: self.get(Text::ClientVersion),
            }),
            traceparent: self.get(Text::Traceparent),
            tracestate: self.get(Text::Tracestate),
            baggage: self.get(Text::Baggage),
            request_bytes: self.request_bytes,
            response_bytes,
            ..Observation::bare(session, self.since.elapsed(), outcome)
        });
    }
}

/// The watch, if any, on one `tools/call` until it is told what the call
/// came to; dropped untold (the call's future dropped: its connection or
/// stream closed, by the client or at shutdown), it tells `Disconnected`,
/// with what the call's stream (if any) had sent. Borrows all it holds,
/// so the futures that carry it drop nothing but it.
pub(super) struct UntilAnswered<'a> {
    pub(super) watch: Option<&'a Watch>,
    pub(super) lease: &'a Lease,
    pub(super) era: Era,
    /// The events of the call's stream, when it runs on one.
    pub(super) stream: Option<&'a CallEvents>,
}

impl UntilAnswered<'_> {
    /// Lets go of the watch untold: the call is told elsewhere.
    pub(super) fn hand_over(mut self) {
        self.watch = None;
    }

    /// Tells the watch, if it is still held, that the call came to
    /// `outcome`, answered with `response_bytes`, and lets go of it.
    pub(super) fn tell(&mut self, outcome: Outcome, response_bytes: u64) {
        if let Some(watch) = self.watch.take() {
            let era = Some(self.era);
            watch.tell(self.lease, "tools/call", era, outcome, response_bytes);
        }
    }
}

impl Drop for UntilAnswered<'_> {
    fn drop(&mut self) {
        // Read only when there is a watch to tell: most drops have none.
        if self.watch.is_some() {
            let sent = self.stream.map_or(0, CallEvents::sent);
            self.tell(Outcome::Disconnected, sent);
        }
    }
}
