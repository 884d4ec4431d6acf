//! `tools/call`: check the call against the live surface, run it under its
//! cancellation signal and time limit, and answer it — inline, or on a
//! stream that carries its progress and log messages.

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Bytes;
use serde_json::{Map, Value};

use super::reply::{
    surface_panicked, write_error, write_result, Answer, Handled, ReplyClass, ResultKind,
    StreamedCall,
};
use super::watch::{UntilAnswered, Watch};
use crate::jsonrpc::{self, code, ErrorObject, Params};
use crate::observer::Outcome;
use crate::protocol::{param_headers, Era, ParamHeaders, META_LOG_LEVEL};
use crate::state::{FirstPoll, Lease, McpSessionHeader};
use crate::surface::{CallEvents, CancelSignal, LogLevel, ToolCall, LEVEL_NAMES};
use crate::tool::{is_valid_name, ToolOutcome};
use crate::util::{race, sse_event, waiting_at_most, CatchUnwind, First, Panicked};

/// Checks a call and whether its tool is visible *now*; then runs it
/// inline (a JSON response) or, when the client may take a stream
/// (`may_stream`: it accepts SSE, and the call is its body's only message;
/// `batch.rs` clears it for a batch's members) and the call may report
/// progress (it sent a `progressToken`) or log, hands it back to run on
/// one. A call may log at or above its log threshold, which is `None` when
/// its surface does not log or (2026-07-28) the request did not ask for
/// logs in `_meta`; in the legacy era it is the session's level, as
/// `logging/setLevel` left it. Writes a complete
/// response, or nothing for `Stream`, `Revoked` and `Silent`. With a
/// `watch` (the host has an observer), tells it what the call came to when
/// that is known: here, or when the streamed call ends.
pub(super) async fn tools_call(answer: Answer<'_>, params: Option<Params<'_>>) -> Handled {
    // The call's id and watch move to its stream if it runs on one.
    let (lease, era, out, context) = (answer.lease, answer.era, answer.out, answer.context);
    // Told what the call came to once it is known; dropped untold, when
    // the call's connection closes before then, it tells that.
    let mut told = UntilAnswered {
        watch: answer.watch.as_deref(),
        lease,
        era,
        stream: None,
    };
    let written = out.len();
    let (outcome, handled) = match check(lease, params, era, context.headers.params).await {
        Err(error) => {
            // Only a header that does not mirror its argument is refused
            // as malformed (400); every other refusal is a method error.
            let class = match error.code {
                code::HEADER_MISMATCH => ReplyClass::Malformed,
                _ => ReplyClass::Answer,
            };
            let handled = write_error(out, Some(&answer.id), &error, class);
            (handled.outcome(), handled)
        }
        // Checked here too, so a revoked bearer is a 401 before any stream starts.
        Ok(_) if !lease.is_live() => (Outcome::Rejected { status: 401 }, Handled::Revoked),
        Ok(mut call) => {
            if let McpSessionHeader::Known(mcp_session) = context.session {
                call.session_client = mcp_session.client_info().map(Cow::Borrowed);
            }
            let log_threshold = lease.session.log_level().and_then(|level| match era {
                Era::Legacy(_) => Some(level.get()),
                Era::Modern(_) => call.log_level,
            });
            if context.may_stream && (call.progress_token.is_some() || log_threshold.is_some()) {
                let events = CallEvents::new(call.progress_token.clone(), log_threshold);
                // The stream's future tells it from here.
                told.hand_over();
                let (id, watch) = (answer.id, answer.watch);
                let stream = streamed(lease.clone(), id, call.into_owned(), era, events, watch);
                return Handled::Stream(Box::new(stream));
            }
            run(lease, (&answer.id, era), &call, None, out).await
        }
    };
    told.tell(outcome, (out.len() - written) as u64);
    handled
}

/// The call as a stream's future: it runs when the response body is first
/// polled, and yields the stream's last frames: the events still waiting
/// when it ended, then its final response. It tells the `watch`, if any,
/// what the call came to, with every byte of its stream.
fn streamed(
    lease: Lease,
    id: Value,
    call: CheckedCall<'static>,
    era: Era,
    events: Arc<CallEvents>,
    watch: Option<Box<Watch>>,
) -> StreamedCall {
    let call_events = Arc::clone(&events);
    let run = async move {
        let mut told = UntilAnswered {
            watch: watch.as_deref(),
            lease: &lease,
            era,
            stream: Some(&call_events),
        };
        let mut out = Vec::with_capacity(256);
        let (outcome, handled) = run(&lease, (&id, era), &call, Some(&call_events), &mut out).await;
        match handled {
            Handled::Wrote | Handled::Erred(..) => {}
            // The response head is already sent: say it in the stream.
            Handled::Revoked => {
                let error = ErrorObject::new(code::INVALID_REQUEST, "the session was revoked");
                jsonrpc::write_error(&mut out, Some(&id), &error);
            }
            // Cancelled (`Silent`): the stream ends with nothing more. `run`
            // makes no other kind of reply.
            _ => {
                told.tell(outcome, call_events.sent());
                return Vec::new();
            }
        }
        let pending = call_events.close();
        let last: Vec<Bytes> = pending.iter().chain([&out]).map(|m| sse_event(m)).collect();
        let sent = last.iter().map(|frame| frame.len() as u64).sum::<u64>();
        told.tell(outcome, call_events.sent() + sent);
        last
    };
    StreamedCall::new(Box::pin(run), events)
}

/// A `tools/call` that passed its checks. The name is borrowed from the
/// body while the call runs inline, and owned once it runs on a stream.
struct CheckedCall<'a> {
    name: Cow<'a, str>,
    arguments: Value,
    progress_token: Option<Value>,
    /// 2026-07-28: the level `_meta` asked logs at, if it asked.
    log_level: Option<LogLevel>,
    /// `params._meta`, whole, when it is an object (for `CallRequest`).
    meta: Option<Value>,
    /// The `clientInfo` its MCP session's `initialize` gave (before
    /// 2026-07-28; in it, the client names itself in `meta`).
    /// Borrowed while the call runs inline, shared (an `Arc` count) once
    /// it runs on a stream: a call pays nothing for it until then.
    session_client: Option<Cow<'a, Arc<Value>>>,
}

impl CheckedCall<'_> {
    /// The call, owning what it borrowed: to run on a stream.
    fn into_owned(self) -> CheckedCall<'static> {
        CheckedCall {
            name: Cow::Owned(self.name.into_owned()),
            arguments: self.arguments,
            progress_token: self.progress_token,
            log_level: self.log_level,
            meta: self.meta,
            session_client: self
                .session_client
                .map(|info| Cow::Owned(info.into_owned())),
        }
    }
}

/// The checks, in order: the params' shape, then the tool's visibility:
/// in the legacy era by `is_visible`; in 2026-07-28 by finding the tool in
/// the live list (whose schema is the one the client built its headers
/// from), whose `x-mcp-header` bindings the `Mcp-Param-*` headers are then
/// checked against (one listing answers both). A tool the surface does not
/// show is unknown; a header that does not mirror its argument is a 400
/// `-32020`.
async fn check<'a>(
    lease: &Lease,
    params: Option<Params<'a>>,
    era: Era,
    headers: ParamHeaders<'_>,
) -> Result<CheckedCall<'a>, ErrorObject> {
    let call = check_shape(params, era)?;
    let surface = lease.session.surface();
    let visible = match era {
        Era::Legacy(_) => CatchUnwind::new(surface.is_visible(&call.name))
            .await
            .map_err(|_| surface_panicked())?,
        Era::Modern(_) => {
            let tools = CatchUnwind::new(surface.list_tools())
                .await
                .map_err(|_| surface_panicked())?;
            let tool = tools.iter().find(|tool| tool.name() == call.name);
            if let Some(tool) = tool {
                param_headers::check(tool.header_bindings(), &call.arguments, headers)?;
            }
            tool.is_some()
        }
    };
    if !visible {
        return Err(invalid_params(format!("Unknown tool: {}", call.name)));
    }
    Ok(call)
}

/// A `-32602`: the call's params are not what `tools/call` takes, or name
/// no tool it can run.
fn invalid_params(message: impl Into<Cow<'static, str>>) -> ErrorObject {
    ErrorObject::new(code::INVALID_PARAMS, message)
}

/// `params.name` (a string naming a possible tool), `params.arguments` (an
/// object, absent or null meaning none), `params._meta.progressToken` and,
/// in 2026-07-28, `params._meta["io.modelcontextprotocol/logLevel"]`.
fn check_shape(params: Option<Params<'_>>, era: Era) -> Result<CheckedCall<'_>, ErrorObject> {
    let mut params = params.unwrap_or(Params::Owned(Map::new()));
    let name = params
        .take_str("name")
        .ok_or_else(|| invalid_params("tools/call needs params.name, a string"))?;
    let arguments = params
        .take("arguments")
        .filter(|arguments| !arguments.is_null())
        .unwrap_or_else(|| Value::Object(Map::new()));
    if !arguments.is_object() {
        return Err(invalid_params(
            "tools/call params.arguments must be an object",
        ));
    }
    let meta = params.take("_meta").filter(Value::is_object);
    let members = meta.as_ref().and_then(Value::as_object);
    // A progress token is a string or an integer; anything else is ignored.
    let progress_token = members
        .and_then(|meta| meta.get("progressToken"))
        .filter(|t| t.is_string() || t.is_i64() || t.is_u64())
        .cloned();
    // 2026-07-28: absent means no logs; anything but one of the eight
    // level names is refused.
    let log_level = match (era, members.and_then(|meta| meta.get(META_LOG_LEVEL))) {
        (Era::Modern(_), Some(level)) => {
            Some(level.as_str().and_then(LogLevel::parse).ok_or_else(|| {
                invalid_params(format!(
                    "_meta[\"{META_LOG_LEVEL}\"] must be one of {LEVEL_NAMES}"
                ))
            })?)
        }
        _ => None,
    };
    // A name outside the MCP rule can't be one of the surface's tools
    // (`Tool::new` refuses it), so don't ask; and don't echo it back.
    if !is_valid_name(&name) {
        return Err(invalid_params("Unknown tool"));
    }
    Ok(CheckedCall {
        name,
        arguments,
        progress_token,
        log_level,
        meta,
        session_client: None,
    })
}

/// Runs a checked call and writes its response: `Wrote` a complete
/// response (a result or an error); `Revoked` when the bearer died before
/// the surface could be invoked (or during a hold on its result), and
/// `Silent` when the call was cancelled, both with nothing written. A
/// cancelled POST still needs an HTTP answer: it gets what a message
/// without a response gets (202, no body). Before it, what the observer is
/// told the call came to.
async fn run(
    lease: &Lease,
    (id, era): (&Value, Era),
    call: &CheckedCall<'_>,
    events: Option<&Arc<CallEvents>>,
    out: &mut Vec<u8>,
) -> (Outcome, Handled) {
    let answering = (id, era, &lease.shared.info);
    let changes = lease.session.list_changes();
    let before = changes.generation();
    let invocation = invoke(lease, id, call, events).await;
    // A list change the tool signalled goes out on the session's streams
    // before its result does (see `state/list_changed/`), so an agent that
    // reads the notice first re-lists before its next model request. A
    // guard dropped meanwhile ends the hold, and the result goes nowhere.
    let withheld = changes.hold_result(before).await && !lease.is_live();
    match invocation {
        // The tool ran, but the bearer died before its held result could
        // be sent.
        Ok(_) | Err((_, Some(_))) if withheld => (Outcome::Withheld, Handled::Revoked),
        Ok(outcome) => {
            let told = if outcome.is_refused() {
                Outcome::Refused
            } else {
                Outcome::Success
            };
            let outcome = keep_output_schema_promise(lease, &call.name, era, outcome);
            let handled = write_result(out, answering, ResultKind::Plain, |result| {
                outcome.write_members(result, era)
            });
            (told, handled)
        }
        Err((told, Some(error))) => (told, write_error(out, Some(id), &error, ReplyClass::Answer)),
        Err((told @ Outcome::Cancelled, None)) => (told, Handled::Silent),
        Err((told, None)) => (told, Handled::Revoked),
    }
}

/// A success without `structuredContent` from a tool the client listed
/// with an `outputSchema` is an error in the client (see
/// `SessionState::declared_output_schema`, in `state/output_schemas.rs`), which
/// some agents report as a failed call and others as a broken server. It is served instead as a refusal that says what is wrong: a
/// result every client accepts and passes to its model, and a message the
/// surface's author can act on.
fn keep_output_schema_promise(
    lease: &Lease,
    name: &str,
    era: Era,
    outcome: ToolOutcome,
) -> ToolOutcome {
    if outcome.lacks_structured_content(era) && lease.session.declared_output_schema(name) {
        return ToolOutcome::refused(format!(
            "tool {name} declares an outputSchema but returned no structured content \
             (its surface must return it: ToolOutcome::json or OutcomeBuilder::structured)"
        ));
    }
    outcome
}

/// How invoking the surface came to no outcome to answer with, as the
/// observer is told it: a failed outcome, a panic or the time limit
/// (`Failed`, `Panicked`, `TimedOut`), with the JSON-RPC error to answer;
/// `Cancelled`; or `Rejected` (401), with no error, when the bearer died
/// before the surface was invoked.
type Ended = (Outcome, Option<ErrorObject>);

/// Registers the call as in flight, re-checks the bearer, and invokes the
/// surface under the call's cancellation signal and time limit: a success
/// or a refusal, which it counts, or how the call ended without one.
async fn invoke(
    lease: &Lease,
    id: &Value,
    call: &CheckedCall<'_>,
    events: Option<&Arc<CallEvents>>,
) -> Result<ToolOutcome, Ended> {
    let signal = CancelSignal::default();
    // Registered before the liveness check, so a revocation either fails
    // that check or finds this call to cancel (see `ToolSession`'s drop).
    let session = &lease.session;
    let registration =
        session.register_call(&lease.shared.calls_running, id.clone(), signal.clone());
    // The last check before the surface runs, made inside the session's
    // entry gate: either it sees a revocation, or the guard's drop waits
    // until this call's first poll is over (see `state/entry.rs`).
    let Some(entry) = session.enter(|| lease.is_live()) else {
        return Err((Outcome::Rejected { status: 401 }, None));
    };
    // With what the tool is told of its request (`ToolCall::request`).
    let context = ToolCall::new(
        &call.name,
        &call.arguments,
        events,
        &signal,
        session.id(),
        call.meta.as_ref().and_then(Value::as_object),
        call.session_client.as_deref().map(|info| &**info),
    );
    let name = &call.name;
    // In a block, so the surface's future is dropped before the call
    // leaves the in-flight list below.
    let outcome = {
        let invocation = FirstPoll::new(
            CatchUnwind::new(session.surface().call_with(context)),
            entry,
        );
        let limit = lease.shared.config.call_timeout;
        until_done(pin!(invocation), &signal, limit, name).await
    }?;
    // Counted before the call leaves the in-flight list, so that
    // `ToolSession::close`, which waits for that list to empty, reads a
    // final count.
    let invocation = match outcome.failure_message() {
        None => {
            session.served_one();
            Ok(outcome)
        }
        Some(message) => {
            let error = tool_error(name, format_args!("failed: {message}"));
            Err((Outcome::Failed { code: error.code }, Some(error)))
        }
    };
    registration.finish();
    invocation
}

/// Polls the surface's future (pinned where it was made: it is large)
/// until it answers, the call is cancelled, or `limit` passes; the limit
/// counts from the first wait (see `waiting_at_most`), and is in the
/// error's data too.
async fn until_done<F: Future<Output = Result<ToolOutcome, Panicked>>>(
    invocation: Pin<&mut F>,
    signal: &CancelSignal,
    limit: Option<Duration>,
    name: &str,
) -> Result<ToolOutcome, Ended> {
    let cancelled = pin!(signal.cancelled());
    let run = race(invocation, cancelled);
    let ended = match limit {
        Some(limit) => waiting_at_most(limit, run).await,
        None => Some(run.await),
    };
    match ended {
        Some(First::Left(Ok(outcome))) => Ok(outcome),
        Some(First::Left(Err(Panicked))) => {
            Err((Outcome::Panicked, Some(tool_error(name, "panicked"))))
        }
        Some(First::Right(())) => Err((Outcome::Cancelled, None)),
        None => {
            let limit = limit.unwrap_or_default();
            let data = serde_json::json!({"timeLimitMs": limit.as_millis() as u64});
            let error = tool_error(
                name,
                format_args!("exceeded the call time limit of {limit:?}"),
            );
            Err((Outcome::TimedOut, Some(error.with_data(data))))
        }
    }
}

/// `tool NAME WHAT`, as a JSON-RPC internal error: the call ran and the
/// host could not get a result from it.
fn tool_error(name: &str, what: impl fmt::Display) -> ErrorObject {
    ErrorObject::new(code::INTERNAL_ERROR, format!("tool {name} {what}"))
}
