//! What the dispatcher answers, as data: what handling a body, or one
//! message of it, did, and the class of a complete reply
//! (`http/transport.rs` owns the status table), how a request's result is
//! framed in its era, and the rendered messages of a notification stream,
//! and the [`Answer`] every method handler writes through. Every file of
//! `mcp/` but `watch.rs` and `context.rs` builds on it, and it only on
//! those two.

use std::sync::Arc;

use hyper::body::Bytes;

use serde_json::Value;

use crate::jsonrpc::{self, code, ErrorObject, JsonWriter};
use crate::observer::Outcome;
use crate::protocol::{Era, ServerInfo};
use crate::state::{Lease, McpSession, StreamSlot};
use crate::surface::CallEvents;
use crate::util::BoxFuture;

use super::context::RequestContext;
use super::watch::Watch;

/// What kind of reply an error earns its body, as its only message;
/// `http/transport.rs` owns the status table. (A result, a batch, a body
/// that wrote nothing or met a revocation is told by its [`Handled`]
/// alone.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReplyClass {
    /// An error to deliver as a result is (a method error).
    Answer,
    /// The body was not JSON or not JSON-RPC, or its protocol version or
    /// envelope is wrong: a client error, with a JSON-RPC error body.
    Malformed,
    /// A modern-era request for a method this host does not serve.
    NotFound,
    /// A stream was asked for, and the session has all it may hold open.
    TooManyStreams,
    /// A legacy message named an MCP session that is not open (`-32001`):
    /// the client must initialize again.
    UnknownSession,
}

/// The dispatcher's answer to one POST body: what handling it did, and the
/// JSON body it wrote, which only `Wrote`, `Erred` and `Initialized`
/// answer with (a batch that came to `Silent` or `Revoked` leaves part of
/// an array there).
pub(crate) type Reply = (Handled, Vec<u8>);

/// The error for a message whose `Mcp-Session-Id` names no open MCP
/// session: `-32001`, the code MCP clients re-initialize on (Claude Code's
/// only when the body carries it). A GET or DELETE naming one gets it too
/// (`http/rejection.rs`).
pub(crate) fn session_not_found() -> ErrorObject {
    ErrorObject::new(
        code::SESSION_NOT_FOUND,
        "Session not found: initialize again for a new Mcp-Session-Id",
    )
}

/// Writes an error response of this class.
pub(super) fn write_error(
    out: &mut Vec<u8>,
    id: Option<&Value>,
    error: &ErrorObject,
    class: ReplyClass,
) -> Handled {
    jsonrpc::write_error(out, id, error);
    Handled::Erred(class, error.code)
}

/// A `tools/call` to run while its response streams: the future that runs
/// it and yields the stream's last frames (its events still waiting, then
/// its final response; none when it was cancelled and nothing more may be
/// sent), and the progress and logs it sends meanwhile.
pub(crate) struct StreamedCall {
    pub(crate) call: BoxFuture<'static, Vec<Bytes>>,
    pub(crate) events: Arc<CallEvents>,
}

impl StreamedCall {
    /// `call`, streaming `events` while it runs.
    pub(crate) fn new(call: BoxFuture<'static, Vec<Bytes>>, events: Arc<CallEvents>) -> Self {
        Self { call, events }
    }
}

/// What handling one message, or a whole body, did.
pub(crate) enum Handled {
    /// Wrote one result (or a batch's array): a reply to deliver
    /// normally.
    Wrote,
    /// Wrote one error, of this code; as the body's only message, its
    /// reply is of this class.
    Erred(ReplyClass, i32),
    /// Wrote nothing: a notification, a client response, or a cancelled
    /// call (MCP: a cancelled request SHOULD get no response); as the
    /// body's only message (or all of a batch's), its reply is a 202.
    Silent,
    /// The bearer was revoked mid-request; wrote nothing. The transport
    /// answers it as the 401 of a dead bearer.
    Revoked,
    /// A call to run on a stream; wrote nothing.
    Stream(Box<StreamedCall>),
    /// A notification stream to open; wrote nothing.
    Listen(Box<Subscription>),
    /// Answered `initialize`, minting this MCP session.
    Initialized(Arc<McpSession>),
}

impl Handled {
    /// What the observer is told of a request other than `tools/call` (a
    /// call tells its own, which only it can tell apart: a success from a
    /// refusal).
    pub(super) fn outcome(&self) -> Outcome {
        match self {
            Self::Erred(_, code) => Outcome::Failed { code: *code },
            Self::Revoked => Outcome::Rejected { status: 401 },
            Self::Silent => Outcome::Cancelled,
            Self::Wrote | Self::Stream(_) | Self::Listen(_) | Self::Initialized(_) => {
                Outcome::Success
            }
        }
    }
}

/// Which envelope members close a modern result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ResultKind {
    /// `tools/list` and `server/discover`: with `ttlMs` and `cacheScope`.
    Listing,
    /// Every other result.
    Plain,
}

/// One request's answer in the making: the session it answers for, the
/// request's id and era, what the transport knows of it besides its body
/// (whether it may stream, whether it is a batch's member), the buffer
/// its response is written to, and the observer's watch on it (only when
/// the host has an observer). Every method handler takes one: it is the
/// one way a response is written, and [`told`](Self::told) the one way the
/// observer hears what a request came to (a `tools/call` takes the watch
/// and tells it when its outcome is known).
pub(super) struct Answer<'a> {
    pub(super) lease: &'a Lease,
    pub(super) id: Value,
    pub(super) era: Era,
    pub(super) context: &'a RequestContext<'a>,
    pub(super) out: &'a mut Vec<u8>,
    pub(super) watch: Option<Box<Watch>>,
}

impl Answer<'_> {
    /// Writes a result response: the object members `members` writes, then
    /// (in the modern era) the envelope's.
    pub(super) fn result(
        &mut self,
        kind: ResultKind,
        members: impl FnOnce(&mut JsonWriter<'_>),
    ) -> Handled {
        let info = &self.lease.shared.info;
        write_result(self.out, (&self.id, self.era, info), kind, members)
    }

    /// Writes an error response to a request that was read (a method
    /// error: the body itself was fine).
    pub(super) fn error(&mut self, error: &ErrorObject) -> Handled {
        self.error_as(error, ReplyClass::Answer)
    }

    /// Writes an error response of this class.
    pub(super) fn error_as(&mut self, error: &ErrorObject, class: ReplyClass) -> Handled {
        write_error(self.out, Some(&self.id), error, class)
    }

    /// `handled`, once the observer (if any) is told what the request
    /// (`method`) came to, and how many bytes answered it.
    pub(super) fn told(self, method: &str, handled: Handled) -> Handled {
        if let Some(watch) = &self.watch {
            let (outcome, written) = (handled.outcome(), watch.written_in(self.out));
            watch.tell(self.lease, method, Some(self.era), outcome, written);
        }
        handled
    }
}

/// Writes a result response to the request of this id and era: the object
/// members `members` writes, then (in the modern era) the envelope's,
/// which `info` holds pre-rendered. What [`Answer::result`] writes, for a
/// call whose answer has left its `Answer` (one that runs on a stream).
pub(super) fn write_result(
    out: &mut Vec<u8>,
    (id, era, info): (&Value, Era, &ServerInfo),
    kind: ResultKind,
    members: impl FnOnce(&mut JsonWriter<'_>),
) -> Handled {
    jsonrpc::write_result(out, id, |result| {
        members(result);
        if let Era::Modern(_) = era {
            // Pre-rendered, each member after a comma: every modern
            // result has members of its own before them.
            result.members_text(match kind {
                ResultKind::Listing => &info.modern_listing_members,
                ResultKind::Plain => &info.modern_result_members,
            });
        }
    });
    Handled::Wrote
}

/// The error for a surface that panicked while answering.
pub(super) fn surface_panicked() -> ErrorObject {
    ErrorObject::new(code::INTERNAL_ERROR, "the tool surface panicked")
}

/// Everything one notification stream will send, rendered.
pub(crate) struct Subscription {
    /// Sent first: the 2026-07-28 acknowledgement.
    pub(crate) opening: Option<Vec<u8>>,
    /// What the stream listens for; `None` when nothing requested can be
    /// delivered, and the stream ends after its opening and closing.
    pub(crate) listening: Option<Listening>,
    /// Sent when the host ends the stream gracefully: 2026-07-28's result
    /// of the listen request. (At revocation nothing more is sent.)
    pub(crate) closing: Option<Vec<u8>>,
}

/// A stream's hold on its session's changes.
pub(crate) struct Listening {
    /// The message each announced change sends.
    pub(crate) change: Vec<u8>,
    /// The stream's place among the session's, its changes, and its
    /// audience (the client it announces to).
    pub(crate) slot: StreamSlot,
}
