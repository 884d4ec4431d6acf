//! One SSE event carrying one JSON-RPC message: the frame both the
//! streams (`http/`) and a streamed call's end (`mcp/tools_call.rs`, which
//! frames its last events so it can tell the observer every byte its
//! stream sends) write.

use hyper::body::Bytes;

/// `message` as one SSE event. JSON text has no raw newlines, so one
/// `data:` line suffices.
pub(crate) fn sse_event(message: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(message.len() + 23);
    out.extend_from_slice(b"event: message\ndata: ");
    out.extend_from_slice(message);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}
