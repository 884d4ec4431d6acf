//! One SSE event carrying one JSON-RPC message: the frame both the
//! streams (`http/`) and a streamed call's end (`mcp/tools_call.rs`, which
//! frames its last events so it can tell the observer every byte its
//! stream sends) write.

use hyper::body::Bytes;

/// `message` as one SSE event. JSON text has no raw newlines, so one
/// `data:` line suffices. One allocation, of the event's exact size.
pub(crate) fn sse_event(message: &[u8]) -> Bytes {
    Bytes::from([b"event: message\ndata: ".as_slice(), message, b"\n\n"].concat())
}
