//! Internals the crate's own benches and fuzz targets reach without a
//! socket. Compiled only with the `bench-internals` feature; **not public
//! API**: it may change or vanish in any release.

use crate::auth::Bearer;
use crate::host::ToolHost;
use crate::jsonrpc::{parse, Message, Parsed, RawMembers};
use crate::mcp::{self, Handled, RequestContext};
use crate::protocol::EnvelopeHeaders;
use crate::state::Lease;

/// Step 3 of the transport alone: parse an `Authorization` value and check
/// the bearer against the revocation slab.
pub fn validate(host: &ToolHost, authorization: &[u8]) -> bool {
    Bearer::parse_header(authorization)
        .and_then(|bearer| host.shared().slab.validate(&bearer))
        .is_some()
}

/// The JSON-RPC path without a socket: authenticate, dispatch one POST body
/// (legacy era, JSON response), and return the response bytes — empty for
/// 202, or when the bearer is not live.
pub async fn dispatch(host: &ToolHost, authorization: &[u8], body: &[u8]) -> Vec<u8> {
    let shared = host.shared();
    let bearer = Bearer::parse_header(authorization);
    let Some(lease) = bearer.and_then(|bearer| Lease::acquire(shared, &bearer)) else {
        return Vec::new();
    };
    let absent = crate::state::McpSessionHeader::Absent;
    let context = RequestContext::new(EnvelopeHeaders::default(), false, absent, None, body.len());
    match mcp::dispatch(&lease, &context, body).await {
        (Handled::Wrote | Handled::Erred(..) | Handled::Initialized(_), body) => body,
        _ => Vec::new(),
    }
}

/// Reads a POST body as the dispatcher does (`jsonrpc::parse`), and says
/// whether it is one JSON-RPC request.
pub fn read_request(body: &[u8]) -> bool {
    matches!(
        parse(body, &mut RawMembers::default()),
        Parsed::Single(Message::Request(_))
    )
}

/// A `tools/call` body's `arguments` as the dispatcher reads them (found
/// as raw text, then read by serde_json from that text, or the body as one
/// `Value`): what the surface would be given. `None` when the body is not
/// a request with `params.arguments`.
pub fn call_arguments(body: &[u8]) -> Option<serde_json::Value> {
    let mut members = RawMembers::default();
    match parse(body, &mut members) {
        Parsed::Single(Message::Request(request)) => request.params?.take("arguments"),
        _ => None,
    }
}

/// Whether the JSON-RPC reader classifies `body` as reading it whole into
/// one `serde_json::Value` does (a parse error exactly when serde_json
/// refuses it), and whether its fast reading only accepted JSON serde_json
/// reads, member by member.
pub fn reads_agree(body: &[u8]) -> bool {
    crate::jsonrpc::reads_agree(body)
}

/// The host's bound on the memory `body` takes once parsed as JSON (see
/// `jsonrpc/json_scan.rs`).
pub fn parsed_size_bound(body: &[u8]) -> usize {
    crate::jsonrpc::json_scan::parsed_size_bound(body)
}

/// The modern-era header decoding (`=?base64?…?=` form), owned.
pub fn decode_header_value(raw: &[u8]) -> Option<Vec<u8>> {
    crate::protocol::era::decode_header_value(raw).map(|value| value.into_owned())
}

/// Standard base64 decoding, as the header form uses it.
pub fn base64_decode(text: &[u8]) -> Option<Vec<u8>> {
    crate::util::base64::decode(text)
}

/// The whole request path minus the socket: `input` is written, as raw
/// HTTP/1.1 bytes, into an in-memory duplex pipe served as a connection of
/// the host is (same builder, same service, but no supervisor, so no
/// header read timeout: the pipe ends the connection), the write side
/// is then closed, and everything the host wrote back is returned: until
/// the host closes the pipe, or falls silent for 100 ms (a response that
/// streams, such as the stream of list changes a GET opens, never ends by
/// itself). Then the connection is dropped.
pub async fn serve_raw(host: &ToolHost, input: &[u8]) -> Vec<u8> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let (client, server) = tokio::io::duplex(64 * 1024);
    let detached = crate::conn::Connection::detached();
    let connection = crate::http::serve_connection(host.shared(), server, detached);
    let serving = tokio::spawn(connection);
    let (mut reader, mut writer) = tokio::io::split(client);
    // Written from its own task, so a host that stops reading (a rejected
    // body) cannot block the read below.
    let input = input.to_vec();
    let writing = tokio::spawn(async move {
        let _ = writer.write_all(&input).await;
        let _ = writer.shutdown().await;
    });
    let mut output = Vec::new();
    let mut chunk = [0u8; 8192];
    // Until the pipe ends, fails, or is silent for the wait.
    let silence = std::time::Duration::from_millis(100);
    while let Ok(Ok(n @ 1..)) = tokio::time::timeout(silence, reader.read(&mut chunk)).await {
        output.extend_from_slice(&chunk[..n]);
    }
    writing.abort();
    serving.abort();
    let _ = serving.await;
    output
}

/// A call's result as the dispatcher writes it, a JSON-RPC response with
/// id 1, in the revision `version` (`"2025-03-26"` … `"2026-07-28"`);
/// `None` for a revision the host does not speak.
pub fn render_outcome(outcome: &crate::tool::ToolOutcome, version: &str) -> Option<Vec<u8>> {
    use crate::protocol::era::{LEGACY_VERSIONS, MODERN_VERSIONS};
    use crate::protocol::Era;
    let find = |versions: &[&'static str]| versions.iter().copied().find(|v| *v == version);
    let era = find(&LEGACY_VERSIONS)
        .map(Era::Legacy)
        .or_else(|| find(&MODERN_VERSIONS).map(Era::Modern))?;
    let mut out = Vec::new();
    crate::jsonrpc::write_result(&mut out, &serde_json::Value::from(1), |result| {
        outcome.write_members(result, era);
    });
    Some(out)
}

/// The owner of the client's end of the loopback connection from `peer` to
/// `local`, as the peer-user check asks the kernel for it.
pub fn peer_uid(local: std::net::SocketAddr, peer: std::net::SocketAddr) -> Option<u32> {
    crate::conn::peer_uid(local, peer)
}
