//! 2025-03-26 batches: whether a body that is a JSON array may be read as
//! one at all, and each member handled in order as a message of its own,
//! the responses gathered into one array.

use serde_json::Value;

use super::context::RequestContext;
use super::message::{handle_message, refused};
use super::reply::{session_not_found, write_error, Handled, ReplyClass};
use crate::jsonrpc::{self, code, json_scan, ErrorObject};
use crate::protocol::era;
use crate::state::{Lease, McpSessionHeader};
use ReplyClass::{Malformed, UnknownSession};

/// A 2025-03-26 batch: each member handled in order, the responses gathered
/// into one array in `out` (none for notifications).
pub(super) async fn dispatch_batch(
    lease: &Lease,
    context: &RequestContext<'_>,
    batch: Vec<Value>,
    out: &mut Vec<u8>,
) -> Handled {
    if batch.is_empty() {
        let error = ErrorObject::new(code::INVALID_REQUEST, "an empty batch is not a request");
        return write_error(out, None, &error, Malformed);
    }
    let request = RequestContext {
        may_stream: false,
        in_batch: true,
        ..*context
    };
    out.push(b'[');
    for member in batch {
        let message = jsonrpc::classify(member);
        match handle_message(lease, &request, message, out).await {
            Handled::Wrote | Handled::Erred(..) => out.push(b','),
            // `may_stream` is false, so no member streams (and listening
            // is modern, so never in a batch, nor is `initialize`).
            Handled::Silent | Handled::Stream(_) | Handled::Listen(_) => {}
            Handled::Initialized(_) => unreachable!("initialize is refused in a batch"),
            Handled::Revoked => return Handled::Revoked,
        }
    }
    match out.last_mut() {
        // The comma after the last response becomes the closing bracket.
        Some(last @ b',') => *last = b']',
        _ => return Handled::Silent,
    }
    Handled::Wrote
}

/// For a body that is a JSON array and may not be read as a batch, writes
/// its refusal in `out` (told to the observer); `None` for any other body.
/// Batches exist only in 2025-03-26, and one longer than `max_batch_len` is refused whole.
/// Both are decided before the body is parsed (the length by counting its
/// top-level members), so a refused batch costs no parse and none of it
/// runs. Batches are legacy only: one that names an ended MCP session runs
/// none of its members.
pub(super) fn refused_batch(
    lease: &Lease,
    context: &RequestContext<'_>,
    body: &[u8],
    out: &mut Vec<u8>,
) -> Option<Handled> {
    if !body.trim_ascii_start().starts_with(b"[") {
        return None;
    }
    let max_batch_len = lease.shared.config.max_batch_len;
    let error = if !era::allows_batch(context.headers.protocol_version, context.session.version()) {
        ErrorObject::new(
            code::INVALID_REQUEST,
            "JSON-RPC batches are only allowed in MCP 2025-03-26",
        )
    } else if json_scan::array_len_within(body, max_batch_len).is_none() {
        ErrorObject::new(
            code::INVALID_REQUEST,
            format!("the batch has more than {max_batch_len} messages, the host's limit; none of it ran"),
        )
        .with_data(serde_json::json!({"maxBatchLength": max_batch_len}))
    } else if let McpSessionHeader::Unknown = context.session {
        let unknown = session_not_found();
        return Some(refused(lease, context, out, None, &unknown, UnknownSession));
    } else {
        return None;
    };
    Some(refused(lease, context, out, None, &error, Malformed))
}
