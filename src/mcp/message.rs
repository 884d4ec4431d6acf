//! One message of a body (its only one, or a batch's member): the request
//! it is, or what else it is (a notification, a client's response, one
//! that cannot be read); a request's era; and its method run through an
//! [`Answer`], which tells the observer what it came to.

use super::context::RequestContext;
use super::lifecycle::{discover, initialize, set_log_level};
use super::reply::{write_error, write_unknown_session, Answer, Framing, Handled, Reply};
use super::reply::{ReplyClass, ResultKind};
use super::subscriptions;
use super::tools_call;
use super::tools_list::list_tools;
use super::watch::Watch;
use crate::jsonrpc::{code, ErrorObject, Message, Params, Request};
use crate::protocol::{era, Era};
use crate::state::{Lease, McpSessionHeader};

/// The reply to a body that was not a readable request, `error` of this
/// class (see [`Reply::error`]), once the observer (if any) is told of it.
pub(super) fn refused(
    lease: &Lease,
    context: &RequestContext<'_>,
    error: &ErrorObject,
    class: ReplyClass,
) -> Reply {
    let reply = Reply::error(error, class);
    if let Reply::Complete { body, .. } = &reply {
        context.tell_unreadable(lease, error.code, body.len());
    }
    reply
}

/// Handles one message of a body (its only one, or a batch's member).
pub(super) async fn handle_message(
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
    // The observer's watch on the request, if the host has an observer;
    // its answer follows the bytes already in `out`.
    let watch = context.since.map(|since| {
        let watched = (since, context.request_bytes);
        Watch::new(watched, &request, context.session, out.len())
    });
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
        Message::Invalid { id, error } => {
            let written = out.len();
            let handled = write_error(out, id.as_ref(), &error, ReplyClass::Malformed);
            context.tell_unreadable(lease, error.code, out.len() - written);
            handled
        }
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
    mut answer: Answer<'_>,
    context: &RequestContext<'_>,
    method: &str,
    params: Option<Params<'_>>,
) -> Handled {
    if method == "tools/call" {
        return tools_call::tools_call(answer, params, context).await;
    }
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
        (Era::Legacy(_), _) => answer.error_as(&not_found(method), ReplyClass::Answer),
        (Era::Modern(_), _) => answer.error_as(&not_found(method), ReplyClass::NotFound),
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

/// The error for a method this host does not serve, quoting its name fit
/// to print: at most 64 characters, with control characters replaced.
fn not_found(method: &str) -> ErrorObject {
    let printable: String = method
        .chars()
        .take(64)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    ErrorObject::new(
        code::METHOD_NOT_FOUND,
        format!("Method not found: {printable}"),
    )
}
