//! The MCP dispatcher: one POST body in, one reply out.
//!
//! `transport.rs` has already checked Host/Origin, the bearer, the method,
//! the headers and the body size; it hands over the body bytes and a
//! [`Lease`] on the session. This module parses the JSON-RPC message (or a
//! 2025-03-26 batch), decides each message's era, runs the MCP method, and
//! writes the response bytes. It never sees a bearer and never speaks HTTP:
//! it says which [`ReplyClass`] its reply is, and the transport maps that to
//! a status code.
//!
//! Methods served:
//!
//! | era | methods | anything else |
//! |---|---|---|
//! | legacy (2025-03-26 … 2025-11-25) | `initialize`, `ping`, `tools/list`, `tools/call` | `-32601`, HTTP 200 |
//! | modern (2026-07-28) | `server/discover`, `tools/list`, `tools/call` | `-32601`, HTTP 404 |
//!
//! Every notification and client response is accepted and ignored. The
//! tools methods are one code path for both eras; a modern result only gets
//! its envelope members (`resultType`, `ttlMs`/`cacheScope` on lists,
//! serverInfo in `_meta`) added before its closing brace.

use serde_json::{Map, Value};

use std::sync::atomic::Ordering;

use crate::call::{CancelSignal, Progress, ToolCall};
use crate::entry::FirstPoll;
use crate::era::{self, EnvelopeHeaders, Era, ParamHeaders};
use crate::in_flight::InFlight;
use crate::json_scan;
use crate::jsonrpc::{self, code, take, Body, ErrorObject, Message, Params, Request};
use crate::outcome::write_json_str;
use crate::param_headers;
use crate::race::{race, First};
use crate::session::Lease;
use crate::sse::SseCall;
use crate::tool::is_valid_name;
use crate::unwind::{CatchUnwind, Panicked};

/// What the server says about itself at `initialize` and `server/discover`.
#[derive(Debug, Clone)]
pub(crate) struct ServerInfo {
    pub(crate) name: String,
    pub(crate) instructions: Option<String>,
    /// `{"name":…,"version":…}`, rendered once.
    implementation: String,
}

impl ServerInfo {
    pub(crate) fn new(name: String, instructions: Option<String>) -> Self {
        let implementation =
            serde_json::json!({"name": name, "version": env!("CARGO_PKG_VERSION")}).to_string();
        Self {
            name,
            instructions,
            implementation,
        }
    }
}

/// How long a modern client may cache a `tools/list` or `server/discover`
/// result: not at all, because a surface may withdraw a tool at any moment.
const TTL_MS: u64 = 0;

/// What kind of reply a body earned; `transport.rs` owns the status table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReplyClass {
    /// A response (or batch of responses) to deliver normally.
    Answer,
    /// Nothing to answer: notifications and client responses only.
    Accepted,
    /// The body was not JSON or not JSON-RPC, or its protocol version or
    /// envelope is wrong: a client error, with a JSON-RPC error body.
    Malformed,
    /// A modern-era request for a method this host does not serve.
    NotFound,
    /// The session's bearer was revoked while this request was in flight.
    Revoked,
}

/// The dispatcher's answer to one POST body.
pub(crate) enum Reply {
    /// A complete body of the given class.
    Complete { class: ReplyClass, body: Vec<u8> },
    /// A `tools/call` whose progress the client asked to follow: the
    /// response is an SSE stream that runs the call.
    Stream(Box<SseCall>),
}

impl Reply {
    fn new(class: ReplyClass, body: Vec<u8>) -> Self {
        Self::Complete { class, body }
    }
}

/// What the transport knows about the request besides its body.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestContext<'a> {
    /// The raw MCP headers.
    pub(crate) headers: EnvelopeHeaders<'a>,
    /// Whether `Accept` names `text/event-stream`, so a call may stream.
    pub(crate) accepts_sse: bool,
}

/// Handles one POST body for the session behind `lease`.
pub(crate) async fn dispatch(lease: &Lease, request: &RequestContext<'_>, body: &[u8]) -> Reply {
    let mut out = Vec::with_capacity(256);
    if body.trim_ascii_start().starts_with(b"[") {
        if let Err(error) = admit_batch(&request.headers, body, lease.shared.max_batch_len) {
            jsonrpc::write_error(&mut out, None, &error);
            return Reply::new(ReplyClass::Malformed, out);
        }
    }
    match jsonrpc::parse(body) {
        Body::NotJson => {
            let error = ErrorObject::new(code::PARSE_ERROR, "Parse error: the body is not JSON");
            jsonrpc::write_error(&mut out, None, &error);
            Reply::new(ReplyClass::Malformed, out)
        }
        Body::Batch(batch) => dispatch_batch(lease, &request.headers, batch, out).await,
        Body::Single(message) => {
            match handle_message(lease, request, message, false, &mut out).await {
                Handled::Stream(call) => Reply::Stream(call),
                Handled::Answered => Reply::new(ReplyClass::Answer, out),
                Handled::Rejected => Reply::new(ReplyClass::Malformed, out),
                Handled::NotFound => Reply::new(ReplyClass::NotFound, out),
                Handled::Silent => Reply::new(ReplyClass::Accepted, out),
                Handled::Revoked => Reply::new(ReplyClass::Revoked, Vec::new()),
            }
        }
    }
}

/// A 2025-03-26 batch: each member handled in order, the responses gathered
/// into one array (none for notifications).
async fn dispatch_batch(
    lease: &Lease,
    headers: &EnvelopeHeaders<'_>,
    batch: Vec<Value>,
    mut out: Vec<u8>,
) -> Reply {
    // Batch members never stream: their responses share one JSON array.
    let request = RequestContext {
        headers: *headers,
        accepts_sse: false,
    };
    if batch.is_empty() {
        let error = ErrorObject::new(code::INVALID_REQUEST, "an empty batch is not a request");
        jsonrpc::write_error(&mut out, None, &error);
        return Reply::new(ReplyClass::Malformed, out);
    }
    out.push(b'[');
    let opened = out.len();
    for member in batch {
        let before = out.len();
        if before > opened {
            out.push(b',');
        }
        let message = jsonrpc::classify(member);
        match handle_message(lease, &request, message, true, &mut out).await {
            Handled::Answered | Handled::Rejected | Handled::NotFound | Handled::Stream(_) => {}
            Handled::Silent => out.truncate(before),
            Handled::Revoked => return Reply::new(ReplyClass::Revoked, Vec::new()),
        }
    }
    if out.len() == opened {
        return Reply::new(ReplyClass::Accepted, Vec::new());
    }
    out.push(b']');
    Reply::new(ReplyClass::Answer, out)
}

/// Whether a body that is a JSON array may be read as a batch at all:
/// batches exist only in 2025-03-26, and one longer than `max_batch_len`
/// is refused whole. Both are decided before the body is parsed (the length
/// by counting its top-level members), so a refused batch costs no parse
/// and none of it runs.
fn admit_batch(
    headers: &EnvelopeHeaders<'_>,
    body: &[u8],
    max_batch_len: usize,
) -> Result<(), ErrorObject> {
    if !era::allows_batch(headers.protocol_version) {
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

/// What handling one message wrote.
enum Handled {
    /// A response, result or method error.
    Answered,
    /// An error about the message itself (envelope, version).
    Rejected,
    /// A modern-era method this host does not serve.
    NotFound,
    /// Nothing: a notification or a client response.
    Silent,
    /// The bearer was revoked mid-request; nothing is written.
    Revoked,
    /// A call to run on an SSE stream; nothing is written.
    Stream(Box<SseCall>),
}

async fn handle_message(
    lease: &Lease,
    context: &RequestContext<'_>,
    message: Message<'_>,
    in_batch: bool,
    out: &mut Vec<u8>,
) -> Handled {
    let info = &lease.shared.info;
    let request = match message {
        Message::Request(request) => request,
        Message::Notification { method, params } => {
            if method == "notifications/cancelled" {
                cancel_request(lease, params.as_ref());
            }
            return Handled::Silent;
        }
        Message::Response => return Handled::Silent,
        Message::Invalid { id, error } => {
            jsonrpc::write_error(out, id.as_ref(), &error);
            return Handled::Rejected;
        }
    };
    let era = match era::classify(&context.headers, &request.method, request.params.as_ref()) {
        Ok(era) => era,
        Err(error) => {
            jsonrpc::write_error(out, Some(&request.id), &error);
            return Handled::Rejected;
        }
    };
    let Request { id, method, params } = request;
    let modern = matches!(era, Era::Modern(_));
    let start = jsonrpc::open_result(out, &id);
    let result = match (era, method.as_ref()) {
        (Era::Legacy(_), "initialize") if in_batch => Err(ErrorObject::new(
            code::INVALID_REQUEST,
            "initialize must not be part of a batch",
        )),
        (Era::Legacy(_), "initialize") => initialize(info, params.as_ref(), out),
        (Era::Legacy(_), "ping") => {
            out.extend_from_slice(b"{}");
            Ok(())
        }
        (Era::Modern(_), "server/discover") => {
            discover(info, out);
            Ok(())
        }
        (_, "tools/list") => list_tools(lease, params.as_ref(), out).await.map(|()| {
            if modern {
                seal_modern(out, info, true);
            }
        }),
        (_, "tools/call") => {
            out.truncate(start);
            return tools_call(lease, context, id, params, era, in_batch, out).await;
        }
        (_, _) => {
            out.truncate(start);
            let error = ErrorObject::new(
                code::METHOD_NOT_FOUND,
                format!("Method not found: {}", printable(&method)),
            );
            jsonrpc::write_error(out, Some(&id), &error);
            return if modern {
                Handled::NotFound
            } else {
                Handled::Answered
            };
        }
    };
    match result {
        Ok(()) => jsonrpc::close_result(out),
        Err(error) => {
            out.truncate(start);
            jsonrpc::write_error(out, Some(&id), &error);
        }
    }
    Handled::Answered
}

/// Adds the members every modern result carries to the result object just
/// written: `resultType`, `ttlMs` and `cacheScope` on lists, and serverInfo
/// in `_meta`. The scope is private because the list depends on the bearer.
fn seal_modern(out: &mut Vec<u8>, info: &ServerInfo, list: bool) {
    debug_assert_eq!(out.last(), Some(&b'}'), "every result is a JSON object");
    out.pop();
    out.extend_from_slice(b",\"resultType\":\"complete\"");
    if list {
        out.extend_from_slice(b",\"ttlMs\":");
        out.extend_from_slice(TTL_MS.to_string().as_bytes());
        out.extend_from_slice(b",\"cacheScope\":\"private\"");
    }
    out.extend_from_slice(b",\"_meta\":{\"");
    out.extend_from_slice(era::META_SERVER_INFO.as_bytes());
    out.extend_from_slice(b"\":");
    out.extend_from_slice(info.implementation.as_bytes());
    out.extend_from_slice(b"}}");
}

/// `server/discover` (2026-07-28): every version the host speaks, its
/// capabilities (tools only), and the instructions.
fn discover(info: &ServerInfo, out: &mut Vec<u8>) {
    let mut result = Map::new();
    result.insert("supportedVersions".into(), era::supported_versions().into());
    result.insert("capabilities".into(), serde_json::json!({"tools": {}}));
    if let Some(instructions) = &info.instructions {
        result.insert("instructions".into(), instructions.as_str().into());
    }
    crate::outcome::write_json(out, &Value::Object(result));
    seal_modern(out, info, true);
}

/// `initialize`: negotiate the version, advertise only `tools`.
fn initialize(
    info: &ServerInfo,
    params: Option<&Params<'_>>,
    out: &mut Vec<u8>,
) -> Result<(), ErrorObject> {
    let Some(requested) = params
        .and_then(|p| p.get("protocolVersion"))
        .and_then(Value::as_str)
    else {
        return Err(ErrorObject::new(
            code::INVALID_PARAMS,
            "initialize needs params.protocolVersion, a string",
        ));
    };
    out.extend_from_slice(b"{\"protocolVersion\":");
    write_json_str(out, era::negotiate(requested));
    // listChanged: false — a POST-only host with JSON responses has no
    // channel to deliver notifications/tools/list_changed on.
    out.extend_from_slice(b",\"capabilities\":{\"tools\":{\"listChanged\":false}}");
    out.extend_from_slice(b",\"serverInfo\":");
    out.extend_from_slice(info.implementation.as_bytes());
    if let Some(instructions) = &info.instructions {
        out.extend_from_slice(b",\"instructions\":");
        write_json_str(out, instructions);
    }
    out.push(b'}');
    Ok(())
}

/// `tools/list`: the surface's live answer, in its order, one page.
async fn list_tools(
    lease: &Lease,
    params: Option<&Params<'_>>,
    out: &mut Vec<u8>,
) -> Result<(), ErrorObject> {
    // The host never hands out a cursor, so any cursor is one it did not
    // issue. `null` is read as absent.
    if params
        .and_then(|p| p.get("cursor"))
        .is_some_and(|c| !c.is_null())
    {
        return Err(ErrorObject::new(code::INVALID_PARAMS, "Invalid cursor"));
    }
    let tools = CatchUnwind::new(lease.session.surface.list_tools())
        .await
        .map_err(|_| ErrorObject::new(code::INTERNAL_ERROR, "the tool surface panicked"))?;
    out.extend_from_slice(b"{\"tools\":[");
    for (i, tool) in tools.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(tool.rendered().as_bytes());
    }
    out.extend_from_slice(b"]}");
    Ok(())
}

/// `tools/call`: check the shape and whether the tool is visible *now*;
/// then run it inline (a JSON response) or, when the client sent a
/// `progressToken` and accepts SSE, on a stream that carries its progress.
/// Writes a complete response (or nothing, for `Stream` and `Revoked`).
async fn tools_call(
    lease: &Lease,
    context: &RequestContext<'_>,
    id: Value,
    params: Option<Params<'_>>,
    era: Era,
    in_batch: bool,
    out: &mut Vec<u8>,
) -> Handled {
    let modern = matches!(era, Era::Modern(_));
    let call = match check_call(lease, params).await {
        Ok(call) => call,
        Err(error) => {
            jsonrpc::write_error(out, Some(&id), &error);
            return Handled::Answered;
        }
    };
    if modern {
        match check_param_headers(lease, &call, context.headers.params).await {
            Ok(()) => {}
            Err(CallRefused::Header(error)) => {
                jsonrpc::write_error(out, Some(&id), &error);
                return Handled::Rejected;
            }
            Err(CallRefused::Params(error)) => {
                jsonrpc::write_error(out, Some(&id), &error);
                return Handled::Answered;
            }
        }
    }
    // Checked here too, so a revoked bearer is a 401 before any stream starts.
    if !lease.is_live() {
        return Handled::Revoked;
    }
    if let Some(token) = call
        .progress_token
        .clone()
        .filter(|_| context.accepts_sse && !in_batch)
    {
        let progress = Progress::for_token(token);
        let state = progress.state.clone().expect("a token enables progress");
        let keep_alive = lease.shared.sse_keep_alive;
        let lease = lease.clone();
        let stream = async move {
            let mut out = Vec::with_capacity(256);
            match run_call(&lease, &id, &call, modern, &progress, &mut out).await {
                CallEnd::Answered => Some(out),
                // The response head is already sent: say it in the stream.
                CallEnd::Revoked => {
                    let error = ErrorObject::new(code::INVALID_REQUEST, "the session was revoked");
                    jsonrpc::write_error(&mut out, Some(&id), &error);
                    Some(out)
                }
                CallEnd::Cancelled => None,
            }
        };
        return Handled::Stream(Box::new(SseCall::new(Box::pin(stream), state, keep_alive)));
    }
    match run_call(lease, &id, &call, modern, &Progress::default(), out).await {
        CallEnd::Answered => Handled::Answered,
        CallEnd::Revoked => Handled::Revoked,
        // MCP: a cancelled request SHOULD get no response. The POST still
        // needs an HTTP answer, so it gets what a message without a
        // response gets: 202 and no body.
        CallEnd::Cancelled => Handled::Silent,
    }
}

/// Why a modern call's `Mcp-Param-*` check refused it.
enum CallRefused {
    /// A header does not mirror its argument: 400 `-32020`.
    Header(ErrorObject),
    /// The tool is gone, or the surface failed: the usual call errors.
    Params(ErrorObject),
}

/// 2026-07-28: the `Mcp-Param-*` headers mirror the tool's `x-mcp-header`
/// arguments. The tool is looked up in the live list, whose schema is the
/// one the client built its headers from; a tool `is_visible` admits but
/// the list lacks is unknown, as a tool the model cannot see must be.
async fn check_param_headers(
    lease: &Lease,
    call: &CheckedCall,
    headers: ParamHeaders<'_>,
) -> Result<(), CallRefused> {
    let tools = CatchUnwind::new(lease.session.surface.list_tools())
        .await
        .map_err(|_| {
            CallRefused::Params(ErrorObject::new(
                code::INTERNAL_ERROR,
                "the tool surface panicked",
            ))
        })?;
    let Some(tool) = tools.iter().find(|tool| tool.name() == call.name) else {
        return Err(CallRefused::Params(ErrorObject::new(
            code::INVALID_PARAMS,
            format!("Unknown tool: {}", call.name),
        )));
    };
    param_headers::check(tool.header_bindings(), &call.arguments, headers)
        .map_err(CallRefused::Header)
}

/// A `tools/call` that passed its shape and visibility checks.
struct CheckedCall {
    name: String,
    arguments: Value,
    progress_token: Option<Value>,
}

async fn check_call(lease: &Lease, params: Option<Params<'_>>) -> Result<CheckedCall, ErrorObject> {
    let mut params = params.unwrap_or(Params::Owned(Map::new()));
    let Some(Value::String(name)) = params.take("name") else {
        return Err(ErrorObject::new(
            code::INVALID_PARAMS,
            "tools/call needs params.name, a string",
        ));
    };
    // Absent or null arguments mean no arguments.
    let arguments = match params.take("arguments") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(arguments @ Value::Object(_)) => arguments,
        Some(_) => {
            return Err(ErrorObject::new(
                code::INVALID_PARAMS,
                "tools/call params.arguments must be an object",
            ))
        }
    };
    // A progress token is a string or an integer; anything else is ignored.
    let progress_token = params
        .take("_meta")
        .as_mut()
        .and_then(Value::as_object_mut)
        .and_then(|meta| take(meta, "progressToken"))
        .filter(|t| t.is_string() || t.is_i64() || t.is_u64());
    // A name outside the MCP rule can't be one of the surface's tools
    // (`Tool::new` refuses it), so don't ask; and don't echo it back.
    if !is_valid_name(&name) {
        return Err(ErrorObject::new(code::INVALID_PARAMS, "Unknown tool"));
    }
    let visible = CatchUnwind::new(lease.session.surface.is_visible(&name))
        .await
        .map_err(|_| ErrorObject::new(code::INTERNAL_ERROR, "the tool surface panicked"))?;
    if !visible {
        return Err(ErrorObject::new(
            code::INVALID_PARAMS,
            format!("Unknown tool: {name}"),
        ));
    }
    Ok(CheckedCall {
        name,
        arguments,
        progress_token,
    })
}

/// How running a call ended.
enum CallEnd {
    /// A complete response (result or error) was written.
    Answered,
    /// The bearer died before the surface could be invoked; nothing written.
    Revoked,
    /// The call was cancelled (by the client or by revocation); nothing written.
    Cancelled,
}

/// Runs a checked call: registers it as in flight, re-checks the bearer,
/// invokes the surface under the call's cancellation signal and time limit,
/// counts it, and writes the response.
async fn run_call(
    lease: &Lease,
    id: &Value,
    call: &CheckedCall,
    modern: bool,
    progress: &Progress,
    out: &mut Vec<u8>,
) -> CallEnd {
    let signal = CancelSignal::default();
    // Registered before the liveness check, so a revocation either fails
    // that check or finds this call to cancel (see `ToolSession`'s drop).
    let in_flight = InFlight::register(lease, id.clone(), signal.clone());
    // The last check before the surface runs, made inside the session's
    // entry gate: either it sees a revocation, or the guard's drop waits
    // until this call's first poll is over (see `entry.rs`).
    let Some(entry) = lease.session.entry.enter(|| lease.is_live()) else {
        return CallEnd::Revoked;
    };
    let context = ToolCall {
        name: &call.name,
        arguments: &call.arguments,
        progress,
        cancel: &signal,
    };
    let invocation = FirstPoll::new(
        CatchUnwind::new(lease.session.surface.call_with(context)),
        entry,
    );
    let limit = lease.shared.call_timeout;
    let deadline = async move {
        match limit {
            Some(limit) => tokio::time::sleep(limit).await,
            None => std::future::pending().await,
        }
    };
    let name = &call.name;
    let outcome = match race(invocation, race(signal.cancelled(), deadline)).await {
        First::Left(Ok(outcome)) => outcome,
        First::Left(Err(Panicked)) => {
            let error = ErrorObject::new(code::INTERNAL_ERROR, format!("tool {name} panicked"));
            jsonrpc::write_error(out, Some(id), &error);
            return CallEnd::Answered;
        }
        First::Right(First::Left(())) => return CallEnd::Cancelled,
        First::Right(First::Right(())) => {
            let limit = limit.unwrap_or_default();
            let error = ErrorObject::new(
                code::INTERNAL_ERROR,
                format!("tool {name} exceeded the call time limit of {limit:?}"),
            )
            .with_data(serde_json::json!({"timeLimitMs": limit.as_millis() as u64}));
            jsonrpc::write_error(out, Some(id), &error);
            return CallEnd::Answered;
        }
    };
    // Counted before the call leaves the in-flight list, so that
    // `ToolSession::close`, which waits for that list to empty, reads a
    // final count.
    if !outcome.is_failed() {
        lease.session.calls_served.fetch_add(1, Ordering::Relaxed);
    }
    in_flight.finish();
    let start = jsonrpc::open_result(out, id);
    // 2026-07-28 lets structuredContent be any JSON value; earlier
    // revisions only an object.
    match outcome.write_result(out, modern) {
        Ok(()) => {
            if modern {
                seal_modern(out, &lease.shared.info, false);
            }
            jsonrpc::close_result(out);
        }
        Err(message) => {
            let error = ErrorObject::new(
                code::INTERNAL_ERROR,
                format!("tool {name} failed: {message}"),
            );
            out.truncate(start);
            jsonrpc::write_error(out, Some(id), &error);
        }
    }
    CallEnd::Answered
}

/// `notifications/cancelled`: cancel the session's call with that request
/// id, if it is in flight. Unknown, finished or malformed cancellations are
/// ignored, as MCP asks.
fn cancel_request(lease: &Lease, params: Option<&Params<'_>>) {
    let id = params.and_then(|p| p.get("requestId"));
    if let Some(id) = id.filter(|id| id.is_string() || id.is_i64() || id.is_u64()) {
        lease.session.in_flight.cancel(id);
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
