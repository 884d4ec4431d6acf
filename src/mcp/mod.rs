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

mod subscriptions;
mod tools_call;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use serde_json::Value;

use crate::jsonrpc::json_scan;
use crate::jsonrpc::write_json_str;
use crate::jsonrpc::{self, code, ErrorObject, Message, Params, Parsed, RawMembers, Request};
use crate::protocol::ServerInfo;
use crate::protocol::{era, EnvelopeHeaders, Era};
use crate::state::{Lease, SessionState};
use crate::state::{McpSession, SessionHandle};
use crate::surface::CallEvents;
use crate::surface::{LogLevel, LEVEL_NAMES};
use crate::util::BoxFuture;
use crate::util::CatchUnwind;

pub(crate) use subscriptions::{legacy_stream, too_many_streams, StreamRefused, Subscription};

/// What kind of reply a body earned; `http/transport.rs` owns the status table.
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
    /// A stream was asked for, and the session has all it may hold open.
    TooManyStreams,
    /// A legacy message named an MCP session that is not open (`-32001`):
    /// the client must initialize again.
    UnknownSession,
}

/// The dispatcher's answer to one POST body.
pub(crate) enum Reply {
    /// A complete body of the given class.
    Complete { class: ReplyClass, body: Vec<u8> },
    /// A `tools/call` whose progress the client asked to follow.
    Stream(Box<StreamedCall>),
    /// A `subscriptions/listen`: a stream of notifications.
    Listen(Box<Subscription>),
    /// An `initialize` answered: the body, and the MCP session it minted,
    /// whose id goes in the `Mcp-Session-Id` response header.
    Initialized {
        body: Vec<u8>,
        session: Arc<McpSession>,
    },
}

impl Reply {
    fn new(class: ReplyClass, body: Vec<u8>) -> Self {
        Self::Complete { class, body }
    }

    /// A body-level error: the message could not be read as a request, so
    /// its id is unknown (`null`).
    fn malformed(error: &ErrorObject) -> Self {
        let mut out = Vec::with_capacity(128);
        jsonrpc::write_error(&mut out, None, error);
        Self::new(ReplyClass::Malformed, out)
    }

    /// A body that named an MCP session that is not open.
    fn unknown_session() -> Self {
        let mut out = Vec::with_capacity(128);
        let handled = write_unknown_session(&mut out, None);
        debug_assert!(matches!(
            handled,
            Handled::Wrote(ReplyClass::UnknownSession)
        ));
        Self::new(ReplyClass::UnknownSession, out)
    }
}

/// The error for a message whose `Mcp-Session-Id` names no open MCP
/// session: `-32001`, the code MCP clients re-initialize on (Claude Code's
/// only when the body carries it), with the request's id when it has one.
fn write_unknown_session(out: &mut Vec<u8>, id: Option<&Value>) -> Handled {
    let error = ErrorObject::new(
        code::SESSION_NOT_FOUND,
        "Session not found: initialize again for a new Mcp-Session-Id",
    );
    jsonrpc::write_error(out, id, &error);
    Handled::Wrote(ReplyClass::UnknownSession)
}

/// A `tools/call` to run while its response streams: the future that runs
/// it and yields its final response (`None` when it was cancelled and
/// nothing more may be sent), and the progress and logs it sends meanwhile.
pub(crate) struct StreamedCall {
    pub(crate) call: BoxFuture<'static, Option<Vec<u8>>>,
    pub(crate) events: Arc<CallEvents>,
}

/// What the transport knows about the request besides its body.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestContext<'a> {
    /// The raw MCP headers.
    pub(crate) headers: EnvelopeHeaders<'a>,
    /// Whether the client takes an SSE response (its `Accept` names
    /// `text/event-stream`), so a call with a progress token may stream.
    pub(crate) may_stream: bool,
    /// The MCP session its `Mcp-Session-Id` names, if it sent one.
    pub(crate) session: SessionHandle<'a>,
}

/// Where a message stands in its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// The body's one message.
    Single,
    /// A member of a 2025-03-26 batch: its response joins the batch's
    /// array, so it never streams, and it may not be `initialize`.
    BatchMember,
}

/// What handling one message did.
enum Handled {
    /// Wrote one response; as the body's only message, its reply is of
    /// this class.
    Wrote(ReplyClass),
    /// Wrote nothing: a notification, a client response, or a cancelled
    /// call (MCP: a cancelled request SHOULD get no response).
    Silent,
    /// The bearer was revoked mid-request; wrote nothing.
    Revoked,
    /// A call to run on a stream; wrote nothing.
    Stream(Box<StreamedCall>),
    /// A notification stream to open; wrote nothing.
    Listen(Box<Subscription>),
    /// Answered `initialize`, minting this MCP session.
    Initialized(Arc<McpSession>),
}

/// Handles one POST body for the session behind `lease`.
pub(crate) async fn dispatch(lease: &Lease, request: &RequestContext<'_>, body: &[u8]) -> Reply {
    if body.trim_ascii_start().starts_with(b"[") {
        if let Err(error) = admit_batch(request, body, lease.shared.config.max_batch_len) {
            return Reply::malformed(&error);
        }
        // Batches are legacy only: one that names an ended session runs
        // none of its members.
        if let SessionHandle::Unknown = request.session {
            return Reply::unknown_session();
        }
    }
    let mut params = RawMembers::default();
    let message = match jsonrpc::parse(body, &mut params) {
        Parsed::NotJson => {
            let error = ErrorObject::new(code::PARSE_ERROR, "Parse error: the body is not JSON");
            return Reply::malformed(&error);
        }
        Parsed::Batch(batch) => return dispatch_batch(lease, request, batch).await,
        Parsed::Single(message) => message,
    };
    let mut out = Vec::with_capacity(256);
    match handle_message(lease, request, message, Framing::Single, &mut out).await {
        Handled::Wrote(class) => Reply::new(class, out),
        Handled::Silent => Reply::new(ReplyClass::Accepted, out),
        Handled::Revoked => Reply::new(ReplyClass::Revoked, Vec::new()),
        Handled::Stream(call) => Reply::Stream(call),
        Handled::Listen(subscription) => Reply::Listen(subscription),
        Handled::Initialized(session) => Reply::Initialized { body: out, session },
    }
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
            Handled::Wrote(_) => out.push(b','),
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
            if matches!(context.session, SessionHandle::Unknown) =>
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
            jsonrpc::write_error(out, id.as_ref(), &error);
            return Handled::Wrote(ReplyClass::Malformed);
        }
    };
    let era = era::classify(
        &context.headers,
        context.session.version(),
        &request.method,
        request.params.as_ref(),
    );
    match era {
        // A legacy request naming an MCP session that is not open: 404,
        // except `initialize`, which mints a new one whatever it names.
        Ok(Era::Legacy(_))
            if matches!(context.session, SessionHandle::Unknown)
                && request.method != "initialize" =>
        {
            write_unknown_session(out, Some(&request.id))
        }
        Ok(era) => handle_request(lease, context, request, era, framing, out).await,
        Err(error) => {
            jsonrpc::write_error(out, Some(&request.id), &error);
            Handled::Wrote(ReplyClass::Malformed)
        }
    }
}

/// Runs one request's method, as its era defines it.
async fn handle_request(
    lease: &Lease,
    context: &RequestContext<'_>,
    request: Request<'_>,
    era: Era,
    framing: Framing,
    out: &mut Vec<u8>,
) -> Handled {
    let Request { id, method, params } = request;
    let respond = Respond {
        id: &id,
        era,
        info: &lease.shared.info,
    };
    // Arms are tried in order, and no two match the same method: the
    // method nearly every request names comes first.
    match (era, method.as_ref()) {
        (_, "tools/call") => {
            let call = tools_call::CallRequest {
                id,
                params,
                era,
                may_stream: context.may_stream && framing == Framing::Single,
            };
            tools_call::tools_call(lease, call, context.headers.params, out).await
        }
        (Era::Legacy(_), "initialize") => initialize(lease, respond, params.as_ref(), framing, out),
        (Era::Legacy(_), "ping") => respond.result(out, ResultKind::Plain, |_| {}),
        (Era::Legacy(_), "logging/setLevel") if lease.session.may_log => {
            set_log_level(respond, params.as_ref(), &lease.session, out)
        }
        (Era::Modern(_), "server/discover") => respond.result(out, ResultKind::Listing, |out| {
            discover(respond, &lease.session, out)
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
            jsonrpc::write_error(out, Some(&id), &error);
            Handled::Wrote(match era {
                Era::Legacy(_) => ReplyClass::Answer,
                Era::Modern(_) => ReplyClass::NotFound,
            })
        }
    }
}

/// Which envelope members close a modern result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ResultKind {
    /// `tools/list` and `server/discover`: with `ttlMs` and `cacheScope`.
    Listing,
    /// Every other result.
    Plain,
}

/// How one request is answered: its id, its era, and what the modern
/// envelope names the server as.
#[derive(Debug, Clone, Copy)]
struct Respond<'a> {
    id: &'a Value,
    era: Era,
    info: &'a ServerInfo,
}

impl Respond<'_> {
    /// Writes a result response: the object members `members` writes, then
    /// (in the modern era) the envelope's.
    fn result(
        self,
        out: &mut Vec<u8>,
        kind: ResultKind,
        members: impl FnOnce(&mut Vec<u8>),
    ) -> Handled {
        jsonrpc::open_result(out, self.id);
        members(out);
        if let Era::Modern(_) = self.era {
            // The envelope's members start with a comma: every modern
            // result has members of its own before them.
            debug_assert_ne!(out.last(), Some(&b'{'), "a modern result has members");
            let envelope = match kind {
                ResultKind::Listing => &self.info.modern_listing_members,
                ResultKind::Plain => &self.info.modern_result_members,
            };
            out.extend_from_slice(envelope.as_bytes());
        }
        jsonrpc::close_result(out);
        Handled::Wrote(ReplyClass::Answer)
    }

    /// Writes an error response to a request that was read (a method
    /// error: the body itself was fine).
    fn error(self, out: &mut Vec<u8>, error: &ErrorObject) -> Handled {
        jsonrpc::write_error(out, Some(self.id), error);
        Handled::Wrote(ReplyClass::Answer)
    }
}

/// The error for a surface that panicked while answering.
fn surface_panicked() -> ErrorObject {
    ErrorObject::new(code::INTERNAL_ERROR, "the tool surface panicked")
}

/// `initialize`: negotiate the version, advertise the session's
/// capabilities (see [`write_capabilities`]), and mint an MCP session at
/// the negotiated version (see `state/mcp_session.rs`).
fn initialize(
    lease: &Lease,
    respond: Respond<'_>,
    params: Option<&Params<'_>>,
    framing: Framing,
    out: &mut Vec<u8>,
) -> Handled {
    let session = &lease.session;
    if framing == Framing::BatchMember {
        let error = ErrorObject::new(
            code::INVALID_REQUEST,
            "initialize must not be part of a batch",
        );
        return respond.error(out, &error);
    }
    let Some(requested) = params.and_then(|p| p.get_str("protocolVersion")) else {
        let error = ErrorObject::new(
            code::INVALID_PARAMS,
            "initialize needs params.protocolVersion, a string",
        );
        return respond.error(out, &error);
    };
    let info = respond.info;
    let version = era::negotiate(&requested);
    respond.result(out, ResultKind::Plain, |out| {
        out.extend_from_slice(b"\"protocolVersion\":");
        write_json_str(out, version);
        out.push(b',');
        write_capabilities(out, session, respond.era);
        out.extend_from_slice(b",\"serverInfo\":");
        out.extend_from_slice(info.implementation.as_bytes());
        if let Some(instructions) = &info.instructions {
            out.extend_from_slice(b",\"instructions\":");
            write_json_str(out, instructions);
        }
    });
    let minted = session.mcp_sessions.mint(
        version,
        &session.list_changes,
        lease.shared.config.max_mcp_sessions_per_session,
    );
    Handled::Initialized(minted)
}

/// `"capabilities":{…}`: `tools`, with `listChanged` when the session can
/// deliver it (on its GET stream, or on `subscriptions/listen` in
/// 2026-07-28), and `logging` when its surface logs. Nothing else: the
/// host serves no resources, prompts, completions or tasks.
fn write_capabilities(out: &mut Vec<u8>, session: &SessionState, era: Era) {
    out.extend_from_slice(match (session.list_can_change, era) {
        (true, _) => b"\"capabilities\":{\"tools\":{\"listChanged\":true}",
        (false, Era::Legacy(_)) => b"\"capabilities\":{\"tools\":{\"listChanged\":false}",
        (false, Era::Modern(_)) => b"\"capabilities\":{\"tools\":{}",
    });
    if session.may_log {
        out.extend_from_slice(b",\"logging\":{}");
    }
    out.push(b'}');
}

/// `logging/setLevel` (MCP 2025-11-25 and earlier, on a surface that
/// logs): the least severe level the session's calls log at from now on.
fn set_log_level(
    respond: Respond<'_>,
    params: Option<&Params<'_>>,
    session: &SessionState,
    out: &mut Vec<u8>,
) -> Handled {
    let level = params.and_then(|p| p.get_str("level"));
    match level.as_deref().and_then(LogLevel::parse) {
        Some(level) => {
            session.log_level.set(level);
            respond.result(out, ResultKind::Plain, |_| {})
        }
        None => {
            let error = ErrorObject::new(
                code::INVALID_PARAMS,
                format!("logging/setLevel needs params.level, one of {LEVEL_NAMES}"),
            );
            respond.error(out, &error)
        }
    }
}

/// `server/discover` (2026-07-28): its capabilities, the instructions, and
/// every version the host speaks.
fn discover(respond: Respond<'_>, session: &SessionState, out: &mut Vec<u8>) {
    let info = respond.info;
    write_capabilities(out, session, respond.era);
    if let Some(instructions) = &info.instructions {
        out.extend_from_slice(b",\"instructions\":");
        write_json_str(out, instructions);
    }
    out.extend_from_slice(b",\"supportedVersions\":[");
    for (i, version) in era::supported_versions().into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_json_str(out, version);
    }
    out.push(b']');
}

/// `tools/list`: the surface's live answer, in its order, one page.
async fn list_tools(
    lease: &Lease,
    respond: Respond<'_>,
    params: Option<&Params<'_>>,
    out: &mut Vec<u8>,
) -> Handled {
    // The host never hands out a cursor, so any cursor is one it did not
    // issue. `null` is read as absent.
    if params
        .and_then(|p| p.get("cursor"))
        .is_some_and(|c| !c.is_null())
    {
        return respond.error(
            out,
            &ErrorObject::new(code::INVALID_PARAMS, "Invalid cursor"),
        );
    }
    let Ok(tools) = CatchUnwind::new(lease.session.surface.list_tools()).await else {
        return respond.error(out, &surface_panicked());
    };
    lease.session.listings.record(&tools, respond.era);
    respond.result(out, ResultKind::Listing, |out| {
        out.extend_from_slice(b"\"tools\":[");
        for (i, tool) in tools.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(tool.rendered_for(respond.era).as_bytes());
        }
        out.push(b']');
    })
}

/// `notifications/cancelled`: cancel the session's call with that request
/// id, if it is in flight. Unknown, finished or malformed cancellations are
/// ignored, as MCP asks.
fn cancel_request(lease: &Lease, params: Option<&Params<'_>>) {
    let id = params.and_then(|p| p.get("requestId"));
    if let Some(id) = id.filter(|id| id.is_string() || id.is_i64() || id.is_u64()) {
        lease.session.in_flight.cancel(&id);
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
