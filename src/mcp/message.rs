//! One message of a body (its only one, or a batch's member): the request
//! it is, or what else it is (a notification, a client's response, one
//! that cannot be read); a request's era; and its method run through an
//! [`Answer`], which tells the observer what it came to.

use serde_json::Value;

use super::context::RequestContext;
use super::lifecycle::{discover, initialize, set_log_level};
use super::reply::{session_not_found, write_error, Answer, Handled, ReplyClass, ResultKind};
use super::subscriptions::listen;
use super::tools_call;
use super::tools_list::list_tools;
use super::watch::Watch;
use crate::jsonrpc::{code, ErrorObject, Message, Params, Request};
use crate::protocol::{era, Era};
use crate::state::{Lease, McpSessionHeader};
use ReplyClass::Malformed;

/// Writes `error`, of this class, in answer to a body, or a message in it,
/// that was not a readable request (with its `id`, when it has one), and
/// tells the observer (if any) of it.
pub(super) fn refused(
    lease: &Lease,
    context: &RequestContext<'_>,
    out: &mut Vec<u8>,
    id: Option<&Value>,
    error: &ErrorObject,
    class: ReplyClass,
) -> Handled {
    let written = out.len();
    let handled = write_error(out, id, error, class);
    context.tell_unreadable(lease, error.code, out.len() - written);
    handled
}

/// Handles one message of a body (its only one, or a batch's member).
pub(super) async fn handle_message(
    lease: &Lease,
    context: &RequestContext<'_>,
    message: Message<'_>,
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
    let era = match era {
        Ok(era) => era,
        Err(error) => {
            let refused = write_error(out, Some(&id), &error, Malformed);
            // No era to answer in: told here, not through an `Answer`.
            if let Some(watch) = watch {
                let (outcome, written) = (refused.outcome(), watch.written_in(out));
                watch.tell(lease, &method, None, outcome, written);
            }
            return refused;
        }
    };
    let answer = Answer {
        lease,
        id,
        era,
        context,
        out,
        watch,
    };
    handle_request(answer, &method, params).await
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
            refused(lease, context, out, id.as_ref(), &error, Malformed)
        }
        _ if matches!(context.session, McpSessionHeader::Unknown) => {
            write_error(out, None, &session_not_found(), ReplyClass::UnknownSession)
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
/// ends. A legacy request naming an MCP session that is not open is a 404
/// (`-32001`), but `initialize`, which mints a new one whatever it names.
async fn handle_request(
    mut answer: Answer<'_>,
    method: &str,
    params: Option<Params<'_>>,
) -> Handled {
    let unknown = matches!(answer.context.session, McpSessionHeader::Unknown);
    let logs = answer.lease.session.log_level().is_some();
    let handled = match (answer.era, method) {
        (Era::Legacy(_), _) if unknown && method != "initialize" => {
            answer.error_as(&session_not_found(), ReplyClass::UnknownSession)
        }
        (_, "tools/call") => return tools_call::tools_call(answer, params).await,
        (Era::Legacy(_), "initialize") => initialize(&mut answer, params.as_ref()),
        (Era::Legacy(_), "ping") => answer.result(ResultKind::Plain, |_| {}),
        (Era::Legacy(_), "logging/setLevel") if logs => set_log_level(&mut answer, params.as_ref()),
        (Era::Modern(_), "server/discover") => discover(&mut answer),
        (Era::Modern(_), "subscriptions/listen") => listen(&mut answer, params.as_ref()),
        (_, "tools/list") => list_tools(&mut answer, params.as_ref()).await,
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
