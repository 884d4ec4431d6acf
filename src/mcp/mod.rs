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
//! - `batch.rs`: a 2025-03-26 batch, each member handled as a message;
//! - this file: the dispatcher, from a body to one of the above.

mod batch;
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

use crate::jsonrpc::{self, code, ErrorObject, Message, Params, Parsed, RawMembers, Request};
use crate::protocol::{era, EnvelopeHeaders, Era};
use crate::state::Lease;
use crate::state::McpSessionHeader;

use batch::{dispatch_batch, refused_batch};
use lifecycle::{discover, initialize, set_log_level};
use reply::{write_error, write_unknown_session, Answer, Framing, Handled, ResultKind};
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

impl RequestContext<'_> {
    /// The observer's watch on `request`, whose answer follows the
    /// `written` bytes already in the response buffer: `None` without an
    /// observer.
    fn watch(&self, request: &Request<'_>, written: usize) -> Option<Box<Watch>> {
        let since = self.since?;
        let watched = (since, self.request_bytes);
        Some(Watch::new(watched, request, self.session, written))
    }
}

/// Handles one POST body for the session behind `lease`.
pub(crate) async fn dispatch(lease: &Lease, request: &RequestContext<'_>, body: &[u8]) -> Reply {
    if let Some(refused) = refused_batch(lease, request, body) {
        return refused;
    }
    let mut params = RawMembers::default();
    let message = match jsonrpc::parse(body, &mut params) {
        Parsed::Single(message) => message,
        Parsed::Batch(batch) => return dispatch_batch(lease, request, batch).await,
        unread => {
            let error = unread.parse_error();
            return told(lease, request, Reply::malformed(&error), error.code);
        }
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

/// Handles one message of a body (its only one, or a batch's member).
async fn handle_message(
    lease: &Lease,
    context: &RequestContext<'_>,
    message: Message<'_>,
    framing: Framing,
    out: &mut Vec<u8>,
) -> Handled {
    let request = match request_of(lease, context, message, out) {
        Ok(request) => request,
        Err(handled) => return handled,
    };
    let watch = context.watch(&request, out.len());
    let era = era::classify(
        &context.headers,
        context.session.version(),
        &request.method,
        request.params.as_ref(),
    );
    let Request { id, method, params } = request;
    let refused = match era {
        // A legacy request naming an MCP session that is not open: 404,
        // except `initialize`, which mints a new one whatever it names.
        Ok(Era::Legacy(_))
            if matches!(context.session, McpSessionHeader::Unknown) && method != "initialize" =>
        {
            write_unknown_session(out, Some(&id))
        }
        Ok(era) => {
            let answer = Answer {
                lease,
                id,
                era,
                framing,
                out,
                watch,
            };
            return handle_request(answer, context, &method, params).await;
        }
        Err(ref error) => write_error(out, Some(&id), error, ReplyClass::Malformed),
    };
    // No era to answer in: told here, not through an `Answer`.
    if let Some(watch) = watch {
        watch.tell(
            lease,
            &method,
            era.ok(),
            refused.outcome(),
            watch.written_in(out),
        );
    }
    refused
}

/// The request `message` is; or, when it is none, what handling it did: a
/// notification cancels a call or is ignored, a client's response is
/// ignored, and one that could not be read is an error, told to the
/// observer. A notification or a response is not classified by era: one
/// that names an ended MCP session is refused as a request would be.
fn request_of<'m>(
    lease: &Lease,
    context: &RequestContext<'_>,
    message: Message<'m>,
    out: &mut Vec<u8>,
) -> Result<Request<'m>, Handled> {
    Err(match message {
        Message::Request(request) => return Ok(request),
        Message::Invalid { id, error } => unreadable(lease, context, id.as_ref(), &error, out),
        _ if matches!(context.session, McpSessionHeader::Unknown) => {
            write_unknown_session(out, None)
        }
        Message::Notification { method, params } => {
            if method == "notifications/cancelled" {
                cancel_request(lease, params.as_ref());
            }
            Handled::Silent
        }
        Message::Response => Handled::Silent,
    })
}

/// Runs one request's method, as its era defines it, and tells the
/// observer (if any) what it came to; a call tells it itself, when it
/// ends.
async fn handle_request(
    answer: Answer<'_>,
    context: &RequestContext<'_>,
    method: &str,
    params: Option<Params<'_>>,
) -> Handled {
    if method == "tools/call" {
        return tools_call::tools_call(answer, params, context).await;
    }
    let mut answer = answer;
    let params = params.as_ref();
    let logs = answer.lease.session.log_level().is_some();
    let handled = match (answer.era, method) {
        (Era::Legacy(_), "initialize") => initialize(&mut answer, params),
        (Era::Legacy(_), "ping") => answer.result(ResultKind::Plain, |_| {}),
        (Era::Legacy(_), "logging/setLevel") if logs => set_log_level(&mut answer, params),
        (Era::Modern(_), "server/discover") => discover(&mut answer),
        (Era::Modern(_), "subscriptions/listen") => {
            subscriptions::listen(&mut answer, params, context.may_stream)
        }
        (_, "tools/list") => list_tools(&mut answer, params).await,
        (era, _) => {
            let error = ErrorObject::new(
                code::METHOD_NOT_FOUND,
                format!("Method not found: {}", printable(method)),
            );
            let class = match era {
                Era::Legacy(_) => ReplyClass::Answer,
                Era::Modern(_) => ReplyClass::NotFound,
            };
            answer.error_as(&error, class)
        }
    };
    answer.told(method, handled)
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
