//! What the host's observer is told of each request the dispatcher answers
//! (see `observer.rs`, public as `observe`). A [`Watch`] exists only when
//! the host has an observer (`RequestContext::since` is then set), so a
//! host without one reads no clock and copies nothing for it. The leaf of
//! `mcp/`: it builds on no other file of the folder.

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use crate::jsonrpc::Request;
use crate::observer::{printable_method, request_id_text, ClientInfo, Observation, Outcome};
use crate::protocol::{Era, META_CLIENT_INFO};
use crate::state::{Lease, McpSessionHeader};
use crate::surface::CallEvents;
use crate::tool::is_valid_name;
use crate::trace_context::TraceContext;

/// One request being watched: when its head arrived, and what of it the
/// observer is told besides its method. Owned, so a streamed call can take
/// it along, and boxed, so the futures that carry it past their awaits grow
/// by a pointer, not by the watch.
pub(super) struct Watch {
    since: Instant,
    /// The bytes of the body that carried the request.
    request_bytes: u64,
    /// How much of the response buffer was written before this request's
    /// answer (in a batch, the members before it).
    written_before: usize,
    /// The request id as text, when it is fit to log.
    request_id: Option<String>,
    /// For `tools/call`: `params.name`, once it is a name a tool could have.
    tool: Option<String>,
    /// The client's name and version, when fit to log (see
    /// [`Observation::client`]).
    client: Option<(String, Option<String>)>,
    /// `params._meta`'s `traceparent`, `tracestate` and `baggage`, each
    /// once valid.
    trace: [Option<String>; 3],
}

impl Watch {
    /// The watch on a request whose head arrived at `since`, in a body of
    /// `request_bytes`, whose answer will follow the `written_before` bytes already in the response
    /// buffer, reading its tool name (for `tools/call`) and trace context
    /// from `params`. Cold: only a host with an observer comes here, and
    /// the dispatcher's hot path should not carry its code.
    #[cold]
    #[inline(never)]
    pub(super) fn new(
        (since, request_bytes): (Instant, usize),
        request: &Request<'_>,
        mcp_session: McpSessionHeader<'_>,
        written_before: usize,
    ) -> Box<Self> {
        let params = request.params.as_ref();
        let tool = match (request.method.as_ref(), params) {
            ("tools/call", Some(params)) => params.get_str("name").filter(|n| is_valid_name(n)),
            _ => None,
        };
        let meta = params.and_then(|p| p.get("_meta"));
        let meta = meta.as_deref().and_then(Value::as_object);
        let trace = meta.map(TraceContext::from_meta).unwrap_or_default();
        let owned = |text: Option<&str>| text.map(str::to_owned);
        Box::new(Self {
            since,
            request_bytes: request_bytes as u64,
            written_before,
            request_id: request_id_text(&request.id),
            tool: tool.map(|tool| tool.into_owned()),
            client: match request.method.as_ref() {
                // Its own `clientInfo`, before any MCP session knows it.
                "initialize" => params
                    .and_then(|p| p.get("clientInfo"))
                    .and_then(|info| owned_client(&info)),
                _ => client_info(meta, mcp_session).and_then(owned_client),
            },
            trace: [
                owned(trace.traceparent),
                owned(trace.tracestate),
                owned(trace.baggage),
            ],
        })
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
        observer.tell(&Observation {
            session: Some(lease.session.id()),
            method: Some(printable_method(method)),
            tool: self.tool.as_deref(),
            protocol_version: era.map(Era::version),
            elapsed: self.since.elapsed(),
            outcome,
            requests: 1,
            request_id: self.request_id.as_deref(),
            client: self.client.as_ref().map(|(name, version)| ClientInfo {
                name,
                version: version.as_deref(),
            }),
            traceparent: self.trace[0].as_deref(),
            tracestate: self.trace[1].as_deref(),
            baggage: self.trace[2].as_deref(),
            request_bytes: self.request_bytes,
            response_bytes,
        });
    }
}

/// The watch on one `tools/call`, told when dropped: what the call came to
/// (`Disconnected` until it is known, so a call whose future is dropped,
/// its connection closed, is told as that), and the bytes that answered
/// it: those written inline, or, once it runs on a stream, every byte the
/// stream sent by then (`CallEvents::sent`). A streamed call's watch is
/// handed to its stream with the final response ([`CallEnd`]), and dropped
/// there once that response is sent.
///
/// [`CallEnd`]: super::reply::CallEnd
pub(crate) struct CallWatch {
    watch: Box<Watch>,
    lease: Lease,
    era: Era,
    outcome: Outcome,
    response_bytes: u64,
    stream: Option<Arc<CallEvents>>,
}

impl CallWatch {
    /// Watches a call of `lease`'s session, served in `era`.
    pub(super) fn new(watch: Box<Watch>, lease: &Lease, era: Era) -> Self {
        Self {
            watch,
            lease: lease.clone(),
            era,
            outcome: Outcome::Disconnected,
            response_bytes: 0,
            stream: None,
        }
    }

    /// From now on the call answers on the stream `events` belongs to.
    pub(super) fn streaming(mut self, events: &Arc<CallEvents>) -> Self {
        self.stream = Some(Arc::clone(events));
        self
    }

    /// The call came to `outcome`, its answer (if inline) written in `out`:
    /// told now, or for a streamed call once its stream lets go of it.
    pub(super) fn ended(&mut self, outcome: Outcome, out: &[u8]) {
        self.outcome = outcome;
        self.response_bytes = self.watch.written_in(out);
    }
}

impl Drop for CallWatch {
    fn drop(&mut self) {
        let response_bytes = match &self.stream {
            Some(events) => events.sent(),
            None => self.response_bytes,
        };
        let era = Some(self.era);
        let watch = &self.watch;
        watch.tell(&self.lease, "tools/call", era, self.outcome, response_bytes);
    }
}

/// The name and version of a `clientInfo`, when fit to log.
fn owned_client(info: &Value) -> Option<(String, Option<String>)> {
    let info = ClientInfo::from_value(info)?;
    Some((info.name.to_owned(), info.version.map(str::to_owned)))
}

/// The `clientInfo` a request's client gave: in its `_meta` (2026-07-28
/// sends it on every request), or at its MCP session's `initialize`.
fn client_info<'a>(
    meta: Option<&'a serde_json::Map<String, Value>>,
    mcp_session: McpSessionHeader<'a>,
) -> Option<&'a Value> {
    let from_session = match mcp_session {
        McpSessionHeader::Known(session) => session.client_info().map(|info| &**info),
        McpSessionHeader::Absent | McpSessionHeader::Unknown => None,
    };
    meta.and_then(|meta| meta.get(META_CLIENT_INFO))
        .or(from_session)
}

/// Tells the host's observer of a body, or a message in it, that was not a
/// readable request: no method, an error of this code, answered with
/// `response_bytes`.
#[cold]
#[inline(never)]
pub(super) fn tell_unreadable(
    lease: &Lease,
    (since, request_bytes): (Instant, usize),
    code: i32,
    response_bytes: usize,
) {
    if let Some(observer) = &lease.shared.config.observer {
        let session = Some(lease.session.id());
        let outcome = Outcome::Failed { code };
        observer.tell(&Observation {
            request_bytes: request_bytes as u64,
            response_bytes: response_bytes as u64,
            ..Observation::bare(session, since.elapsed(), outcome)
        });
    }
}
