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
//! it says what handling the body did ([`Handled`], with a [`ReplyClass`]
//! for an error), and the transport maps that to a status code; a streamed
//! call is a future and its progress, which the transport frames as SSE.
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
//! - `watch.rs`: what the host's observer is told of each request (the
//!   leaf);
//! - `context.rs`: what the transport knows of a request besides its body,
//!   and what the observer is told of a body it could not read;
//! - `reply.rs`: what the dispatcher answers, as data, and the `Answer`
//!   every method handler writes through;
//! - `lifecycle.rs`: `initialize`, `logging/setLevel`, `server/discover`;
//! - `tools_list.rs`: `tools/list`;
//! - `subscriptions.rs`: the notification streams (`GET`, `subscriptions/listen`);
//! - `tools_call.rs`: `tools/call`, inline or streamed;
//! - `message.rs`: one message, from what it is to its method's answer;
//! - `batch.rs`: a 2025-03-26 batch, each member handled as a message;
//! - this file: the dispatcher, from a body to one of the above.

mod batch;
mod context;
mod lifecycle;
mod message;
mod reply;
mod subscriptions;
mod tools_call;
mod tools_list;
mod watch;

#[cfg(test)]
mod tests;

use crate::jsonrpc::{self, Parsed, RawMembers};
use crate::state::Lease;

use batch::{dispatch_batch, refused_batch};
pub(crate) use context::RequestContext;
use message::{handle_message, refused};
pub(crate) use reply::{session_not_found, Handled, Reply, ReplyClass, StreamedCall, Subscription};
pub(crate) use subscriptions::{legacy_stream, too_many_streams};
use ReplyClass::Malformed;

/// Handles one POST body for the session behind `lease`.
pub(crate) async fn dispatch(lease: &Lease, request: &RequestContext<'_>, body: &[u8]) -> Reply {
    let mut out = Vec::with_capacity(256);
    if let Some(refused) = refused_batch(lease, request, body, &mut out) {
        return (refused, out);
    }
    let mut params = RawMembers::default();
    let handled = match jsonrpc::parse(body, &mut params) {
        Parsed::Single(message) => handle_message(lease, request, message, &mut out).await,
        Parsed::Batch(batch) => dispatch_batch(lease, request, batch, &mut out).await,
        Parsed::Unread(error) => refused(lease, request, &mut out, None, &error, Malformed),
    };
    (handled, out)
}
