//! What the host's observer is told of each request the dispatcher answers
//! (see `observer.rs`, public as `observe`). A [`Watch`] exists only when
//! the host has an observer (`RequestContext::since` is then set), so a
//! host without one reads no clock and copies nothing for it.

use std::time::Instant;

use serde_json::Value;

use super::reply::Handled;
use crate::jsonrpc::Request;
use crate::observer::{printable_method, request_id_text, ClientInfo, Observation, Outcome};
use crate::protocol::{Era, META_CLIENT_INFO};
use crate::state::{Lease, McpSessionHeader};
use crate::tool::is_valid_name;
use crate::trace_context::TraceContext;

/// One request being watched: when its head arrived, and what of it the
/// observer is told besides its method. Owned, so a streamed call can take
/// it along, and boxed, so the futures that carry it past their awaits grow
/// by a pointer, not by the watch.
pub(super) struct Watch {
    since: Instant,
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
    /// The watch on a request whose head arrived at `since`, reading its
    /// tool name (for `tools/call`) and trace context from `params`. Cold:
    /// only a host with an observer comes here, and the dispatcher's hot
    /// path should not carry its code.
    #[cold]
    #[inline(never)]
    pub(super) fn new(
        since: Instant,
        request: &Request<'_>,
        mcp_session: McpSessionHeader<'_>,
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

    /// Tells the host's observer what the request came to.
    #[cold]
    #[inline(never)]
    pub(super) fn tell(&self, lease: &Lease, method: &str, era: Option<Era>, outcome: Outcome) {
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
        });
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
/// readable request: no method, an error of this code.
#[cold]
#[inline(never)]
pub(super) fn tell_unreadable(lease: &Lease, since: Option<Instant>, code: i32) {
    if let (Some(observer), Some(since)) = (&lease.shared.config.observer, since) {
        let session = Some(lease.session.id());
        let outcome = Outcome::Failed { code };
        observer.tell(&Observation::bare(session, since.elapsed(), outcome));
    }
}

/// What a request other than `tools/call` came to (a call tells its own,
/// which only it can tell apart: a success from a refusal).
pub(super) fn outcome_of(handled: &Handled) -> Outcome {
    match handled {
        Handled::Erred(_, code) => Outcome::Failed { code: *code },
        Handled::Revoked => Outcome::Rejected { status: 401 },
        Handled::Silent => Outcome::Cancelled,
        Handled::Wrote(_) | Handled::Stream(_) | Handled::Listen(_) | Handled::Initialized(_) => {
            Outcome::Success
        }
    }
}
