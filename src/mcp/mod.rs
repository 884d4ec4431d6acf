//! The MCP dispatcher: one POST body in, one reply out. It reads the body's
//! bytes with its MCP headers, asks the session's surface (user code, run
//! under panic containment), and changes the session's state: it mints and
//! ends MCP sessions, sets the log level, opens notification streams and
//! counts calls and listings.
//!
//! `http/transport.rs` has already checked Host/Origin, the bearer, the method,
//! the headers and the body size; it hands over the body bytes and a
//! [`Lease`] on the session. This module parses the JSON-RPC message (or a
//! 2025-03-26 batch), decides each message's era, runs the MCP method, and
//! writes the response bytes. It never sees a bearer and never speaks HTTP:
//! it says which [`ReplyClass`] its reply is, and the transport maps that to
//! a status code; a streamed call is a future and its progress, which the
//! transport frames as SSE.
//!
//! Methods served:
//!
//! | era | methods | anything else |
//! |---|---|---|
//! | legacy (2025-03-26 … 2025-11-25) | `initialize`, `ping`, `tools/list`, `tools/call`; `logging/setLevel` when the surface logs | `-32601`, HTTP 200 |
//! | modern (2026-07-28) | `server/discover`, `tools/list`, `tools/call`, `subscriptions/listen` | `-32601`, HTTP 404 |
//!
//! Every notification and client response is accepted (202) and, but for
//! `notifications/cancelled`, which cancels that call, ignored. The
//! tools methods are one code path for both eras; a modern result only gets
//! its envelope members (`resultType`, `ttlMs`/`cacheScope` on listings,
//! serverInfo in `_meta`, rendered once per host in `protocol/server_info.rs`) after
//! its own.
//!
//! The folder, each file building only on those listed before it:
//!
//! - `watch.rs`: what the host's observer is told of each request (a
//!   leaf);
//! - `reply.rs`: what the dispatcher answers, as data (a leaf);
//! - `lifecycle.rs`: `initialize`, `logging/setLevel`, `server/discover`;
//! - `tools_list.rs`: `tools/list`;
//! - `subscriptions.rs`: the notification streams (`GET`, `subscriptions/listen`);
//! - `tools_call.rs`: `tools/call`, inline or streamed;
//! - this file: the dispatcher, from a body to one of the above.

mod lifecycle;
mod reply;
mod subscriptions;
mod tools_call;
mod tools_list;
mod watch;

#[cfg(test)]
mod tests;

use std::time::Instant;

use serde_json::Value;

use crate::jsonrpc::json_scan;
use crate::jsonrpc::{self, code, ErrorObject, Message, Params, Parsed, RawMembers, Request};
use crate::protocol::{era, EnvelopeHeaders, Era};
use crate::state::Lease;
use crate::state::McpSessionHeader;

use lifecycle::{discover, initialize, set_log_level};
use reply::{write_error, write_unknown_session, Framing, Handled, Respond, ResultKind};
pub(crate) use reply::{Reply, ReplyClass, StreamedCall, Subscription};
pub(crate) use subscriptions::{legacy_stream, too_many_streams};
use tools_list::list_tools;
use watch::{tell_unreadable, Watch};

/// What the transport knows about the request besides its body.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestContext<'a> {
    /// The raw MCP headers.
    pub(crate) headers: EnvelopeHeaders<'a>,
    /// Whether the client takes an SSE response (its `Accept` names
    /// `text/event-stream`), so a call with a progress token may stream.
    pub(crate) may_stream: bool,
    /// The MCP session its `Mcp-Session-Id` names, if it sent one.
    pub(crate) session: McpSessionHeader<'a>,
    /// When the request's head arrived, read only when the host has an
    /// observer (`watch.rs`): `None` without one.
    pub(crate) since: Option<Instant>,
    /// The length of the request's body, for the observer.
    pub(crate) request_bytes: usize,
}

/// Handles one POST body for the session behind `lease`.
pub(crate) async fn dispatch(lease: &Lease, request: &RequestContext<'_>, body: &[u8]) -> Reply {
    if body.trim_ascii_start().starts_with(b"[") {
        if let Err(error) = admit_batch(request, body, lease.shared.config.max_batch_len) {
            return told(lease, request, Reply::malformed(&error), error.code);
        }
        // Batches are legacy only: one that names an ended session runs
        // none of its members.
        if let McpSessionHeader::Unknown = request.session {
            let reply = Reply::unknown_session();
            return told(lease, request, reply, code::SESSION_NOT_FOUND);
        }
    }
    let mut params = RawMembers::default();
    let message = match jsonrpc::parse(body, &mut params) {
        Parsed::NotJson => {
            let error = ErrorObject::new(code::PARSE_ERROR, "Parse error: the body is not JSON");
            return told(lease, request, Reply::malformed(&error), error.code);
        }
        Parsed::NumberOutOfRange => {
            let error = ErrorObject::new(
                code::PARSE_ERROR,
                "Parse error: the body holds a number beyond a double's range \
                 (about 1.8e308), which this host cannot read",
            );
            return told(lease, request, Reply::malformed(&error), error.code);
        }
        Parsed::Batch(batch) => return dispatch_batch(lease, request, batch).await,
        Parsed::Single(message) => message,
    };
    let mut out = Vec::with_capacity(256);
    match handle_message(lease, request, message, Framing::Single, &mut out).await {
        Handled::Wrote(class) | Handled::Erred(class, _) => Reply::new(class, out),
        Handled::Silent => Reply::new(ReplyClass::Accepted, out),
        Handled::Revoked => Reply::new(ReplyClass::Revoked, Vec::new()),
        Handled::Stream(call) => Reply::Stream(call),
        Handled::Listen(subscription) => Reply::Listen(subscription),
        Handled::Initialized(session) => Reply::Initialized { body: out, session },
    }
}

/// `reply`, to a body that was not a readable request, once the observer
/// (if any) is told of it: an error of this code.
fn told(lease: &Lease, context: &RequestContext<'_>, reply: Reply, code: i32) -> Reply {
    if let Some(since) = context.since {
        let written = match &reply {
            Reply::Complete { body, .. } => body.len(),
            _ => 0,
        };
        tell_unreadable(lease, (since, context.request_bytes), code, written);
    }
    reply
}

/// A message that was not a readable request: its error written in `out`,
/// and the observer (if any) told.
fn unreadable(
    lease: &Lease,
    context: &RequestContext<'_>,
    id: Option<&Value>,
    error: &ErrorObject,
    out: &mut Vec<u8>,
) -> Handled {
    let written = out.len();
    let handled = write_error(out, id, error, ReplyClass::Malformed);
    if let Some(since) = context.since {
        let told = (since, context.request_bytes);
        tell_unreadable(lease, told, error.code, out.len() - written);
    }
    handled
}

/// A 2025-03-26 batch: each member handled in order, the responses gathered
/// into one array (none for notifications).
async fn dispatch_batch(lease: &Lease, context: &RequestContext<'_>, batch: Vec<Value>) -> Reply {
    if batch.is_empty() {
        let error = ErrorObject::new(code::INVALID_REQUEST, "an empty batch is not a request");
        return Reply::malformed(&error);
    }
    let request = RequestContext {
        may_stream: false,
        ..*context
    };
    let mut out = Vec::with_capacity(256);
    out.push(b'[');
    for member in batch {
        let message = jsonrpc::classify(member);
        match handle_message(lease, &request, message, Framing::BatchMember, &mut out).await {
            Handled::Wrote(_) | Handled::Erred(..) => out.push(b','),
            // `may_stream` is false, so no member streams (and listening
            // is modern, so never in a batch, nor is `initialize`).
            Handled::Silent | Handled::Stream(_) | Handled::Listen(_) => {}
            Handled::Initialized(_) => unreachable!("initialize is refused in a batch"),
            Handled::Revoked => return Reply::new(ReplyClass::Revoked, Vec::new()),
        }
    }
    match out.last_mut() {
        // The comma after the last response becomes the closing bracket.
        Some(last @ b',') => *last = b']',
        _ => return Reply::new(ReplyClass::Accepted, Vec::new()),
    }
    Reply::new(ReplyClass::Answer, out)
}

/// Whether a body that is a JSON array may be read as a batch at all:
/// batches exist only in 2025-03-26, and one longer than `max_batch_len`
/// is refused whole. Both are decided before the body is parsed (the length
/// by counting its top-level members), so a refused batch costs no parse
/// and none of it runs.
fn admit_batch(
    context: &RequestContext<'_>,
    body: &[u8],
    max_batch_len: usize,
) -> Result<(), ErrorObject> {
    if !era::allows_batch(context.headers.protocol_version, context.session.version()) {
        return Err(ErrorObject::new(
            code::INVALID_REQUEST,
            "JSON-RPC batches are only allowed in MCP 2025-03-26",
        ));
    }
    if json_scan::array_len_within(body, max_batch_len).is_none() {
        return Err(ErrorObject::new(
            code::INVALID_REQUEST,
            format!("the batch has more than {max_batch_len} messages, the host's limit; none of it ran"),
        )
        .with_data(serde_json::json!({"maxBatchLength": max_batch_len})));
    }
    Ok(())
}

async fn handle_message(
    lease: &Lease,
    context: &RequestContext<'_>,
    message: Message<'_>,
    framing: Framing,
    out: &mut Vec<u8>,
) -> Handled {
    let request = match message {
        Message::Request(request) => request,
        // A notification or a response is not classified by era: one that
        // names an ended MCP session is refused like a request would be.
        Message::Notification { .. } | Message::Response
            if matches!(context.session, McpSessionHeader::Unknown) =>
        {
            return write_unknown_session(out, None);
        }
        Message::Notification { method, params } => {
            if method == "notifications/cancelled" {
                cancel_request(lease, params.as_ref());
            }
            return Handled::Silent;
        }
        Message::Response => return Handled::Silent,
        Message::Invalid { id, error } => {
            return unreadable(lease, context, id.as_ref(), &error, out);
        }
    };
    let watch = context.since.map(|since| {
        Watch::new(
            (since, context.request_bytes),
            &request,
            context.session,
            out.len(),
        )
    });
    let era = era::classify(
        &context.headers,
        context.session.version(),
        &request.method,
        request.params.as_ref(),
    );
    let refused = match &era {
        // A legacy request naming an MCP session that is not open: 404,
        // except `initialize`, which mints a new one whatever it names.
        Ok(Era::Legacy(_))
            if matches!(context.session, McpSessionHeader::Unknown)
                && request.method != "initialize" =>
        {
            write_unknown_session(out, Some(&request.id))
        }
        Ok(era) => return handle_request(lease, context, request, *era, framing, watch, out).await,
        Err(error) => write_error(out, Some(&request.id), error, ReplyClass::Malformed),
    };
    if let Some(watch) = watch {
        let written = watch.written_in(out);
        watch.tell(lease, &request.method, era.ok(), refused.outcome(), written);
    }
    refused
}

/// Runs one request's method, as its era defines it.
async fn handle_request(
    lease: &Lease,
    context: &RequestContext<'_>,
    request: Request<'_>,
    era: Era,
    framing: Framing,
    watch: Option<Box<Watch>>,
    out: &mut Vec<u8>,
) -> Handled {
    let Request { id, method, params } = request;
    let respond = Respond {
        id: &id,
        era,
        info: &lease.shared.info,
    };
    if method == "tools/call" {
        // A call tells the observer itself, when it ends.
        return tools_call::tools_call(lease, id, params, era, context, framing, watch, out).await;
    }
    let handled = match (era, method.as_ref()) {
        (Era::Legacy(_), "initialize") => initialize(lease, respond, params.as_ref(), framing, out),
        (Era::Legacy(_), "ping") => respond.result(out, ResultKind::Plain, |_| {}),
        (Era::Legacy(_), "logging/setLevel") if lease.session.log_level().is_some() => {
            set_log_level(respond, params.as_ref(), &lease.session, out)
        }
        (Era::Modern(_), "server/discover") => respond.result(out, ResultKind::Listing, |result| {
            discover(respond, &lease.session, result)
        }),
        (Era::Modern(_), "subscriptions/listen") => {
            subscriptions::listen(lease, respond, params.as_ref(), context.may_stream, out)
        }
        (_, "tools/list") => list_tools(lease, respond, params.as_ref(), out).await,
        (_, _) => {
            let error = ErrorObject::new(
                code::METHOD_NOT_FOUND,
                format!("Method not found: {}", printable(&method)),
            );
            let class = match era {
                Era::Legacy(_) => ReplyClass::Answer,
                Era::Modern(_) => ReplyClass::NotFound,
            };
            write_error(out, Some(&id), &error, class)
        }
    };
    if let Some(watch) = watch {
        let written = watch.written_in(out);
        watch.tell(lease, &method, Some(era), handled.outcome(), written);
    }
    handled
}

/// `notifications/cancelled`: cancel the session's call with that request
/// id, if it is in flight. Unknown, finished or malformed cancellations are
/// ignored, as MCP asks.
fn cancel_request(lease: &Lease, params: Option<&Params<'_>>) {
    let id = params.and_then(|p| p.get("requestId"));
    if let Some(id) = id.filter(|id| id.is_string() || id.is_i64() || id.is_u64()) {
        lease.session.cancel(&id);
    }
}

/// A method name fit to quote in an error: at most 64 characters, with
/// control characters replaced.
fn printable(method: &str) -> String {
    method
        .chars()
        .take(64)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}
