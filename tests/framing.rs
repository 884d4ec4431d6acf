//! Framing ambiguities the host must not resolve by guessing, each over a
//! raw socket: a header that must appear once appearing twice, and an
//! absolute-form request target naming another host.

mod support;

use std::net::SocketAddr;

use serde_json::json;
use support::*;

/// A raw POST: the request line's target, then every header as given (no
/// defaults, so a test can repeat or omit any of them).
fn raw_post(target: &str, headers: &[(&str, &str)], body: &str) -> Vec<u8> {
    let mut r = format!("POST {target} HTTP/1.1\r\n");
    for (name, value) in headers {
        r.push_str(&format!("{name}: {value}\r\n"));
    }
    r.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    r.into_bytes()
}

fn ping() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string()
}

fn echo_call() -> String {
    call_body(1, "echo", json!({"text": "hi"})).to_string()
}

/// The headers every well-formed request carries, for `addr` and `auth`.
fn base<'a>(authority: &'a str, auth: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("Host", authority),
        ("Authorization", auth),
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ]
}

async fn setup() -> (
    embacle_tool_host::ToolHost,
    embacle_tool_host::ToolSession,
    std::sync::Arc<RecordingSurface>,
    SocketAddr,
) {
    let host = host().await;
    let surface = RecordingSurface::new();
    let session = host.open_session(surface.clone()).unwrap();
    let addr = host.local_addr();
    (host, session, surface, addr)
}

/// Two `Host` headers are a 400 (RFC 9112 §3.2), whichever comes first and
/// with or without a bearer: the first no longer silently wins.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_host_headers_are_400() {
    let (_host, session, surface, addr) = setup().await;
    let auth = format!("Bearer {}", bearer_of(&session));
    let own = addr.to_string();
    for (first, second) in [
        (own.as_str(), "evil.example"),
        ("evil.example", own.as_str()),
        (own.as_str(), own.as_str()),
    ] {
        for auth in [auth.as_str(), "Bearer nope"] {
            let mut headers = base(first, auth);
            headers.push(("Host", second));
            let r = send_once(addr, &raw_post("/mcp", &headers, &echo_call())).await;
            assert_eq!(
                (r.status, r.error_code()),
                (400, -32600),
                "{first} {second}"
            );
            assert!(
                String::from_utf8_lossy(&r.body).contains("more than one Host"),
                "{:?}",
                r.json()
            );
        }
    }
    assert_eq!(surface.calls(), 0);
}

/// An absolute-form target's authority is checked exactly like `Host`:
/// another host is 403 (and the call never runs) even under a good `Host`;
/// this listener, in any of its loopback names, is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn absolute_form_target_is_checked_like_host() {
    let (_host, session, surface, addr) = setup().await;
    let auth = format!("Bearer {}", bearer_of(&session));
    let own = addr.to_string();
    let port = addr.port();
    for target in [
        "http://evil.example/mcp".to_owned(),
        format!("http://evil.example:{port}/mcp"),
        format!("http://127.0.0.1:{}/mcp", port.wrapping_add(1)),
        format!("https://{own}/mcp"),
    ] {
        let r = send_once(addr, &raw_post(&target, &base(&own, &auth), &echo_call())).await;
        assert_eq!((r.status, r.error_code()), (403, -32600), "{target}");
        assert!(String::from_utf8_lossy(&r.body).contains("request target"));
    }
    assert_eq!(surface.calls(), 0, "no call ran through a foreign target");
    for target in [
        format!("http://{own}/mcp"),
        format!("http://localhost:{port}/mcp"),
    ] {
        let r = send_once(addr, &raw_post(&target, &base(&own, &auth), &echo_call())).await;
        assert_eq!(r.status, 200, "{target}");
    }
    assert_eq!(surface.calls(), 2);
    // A foreign Host stays refused even under this listener's own target.
    let r = send_once(
        addr,
        &raw_post(
            &format!("http://{own}/mcp"),
            &base("evil.example", &auth),
            &ping(),
        ),
    )
    .await;
    assert_eq!(r.status, 403);
}

/// Two `Origin`s (400 before authentication), two `Content-Type`s, and
/// any MCP header sent twice: each a 400 with a message naming the header,
/// in both eras, and none reaches the surface.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_headers_are_400() {
    let (_host, session, surface, addr) = setup().await;
    let auth = format!("Bearer {}", bearer_of(&session));
    let own = addr.to_string();
    let origin = format!("http://{own}");

    let mut headers = base(&own, "Bearer nope");
    headers.extend([
        ("Origin", origin.as_str()),
        ("Origin", "http://evil.example"),
    ]);
    let r = send_once(addr, &raw_post("/mcp", &headers, &ping())).await;
    assert_eq!(r.status, 400, "two Origins, even without a bearer");
    assert!(String::from_utf8_lossy(&r.body).contains("more than one Origin"));

    let mut headers = base(&own, &auth);
    headers.push(("Content-Type", "text/plain"));
    let r = send_once(addr, &raw_post("/mcp", &headers, &echo_call())).await;
    assert_eq!((r.status, r.error_code()), (400, -32600));
    assert!(String::from_utf8_lossy(&r.body).contains("more than one Content-Type"));

    // Legacy era: -32600.
    for (name, value) in [
        ("MCP-Protocol-Version", "2025-11-25"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "echo"),
    ] {
        let mut headers = base(&own, &auth);
        headers.extend([(name, value), (name, value)]);
        let r = send_once(addr, &raw_post("/mcp", &headers, &echo_call())).await;
        assert_eq!((r.status, r.error_code()), (400, -32600), "{name}");
        let message = r.json()["error"]["message"].as_str().unwrap().to_owned();
        assert!(
            message.contains(name) && message.contains("more than once"),
            "{message}"
        );
    }

    // Modern era: -32020.
    let modern = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"text": "hi"},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    }})
    .to_string();
    let mirrored = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "echo"),
    ];
    let mut headers = base(&own, &auth);
    headers.extend(mirrored);
    let r = send_once(addr, &raw_post("/mcp", &headers, &modern)).await;
    assert_eq!(r.status, 200, "the well-formed modern call is served");
    for (name, value) in mirrored {
        let mut headers = base(&own, &auth);
        headers.extend(mirrored);
        headers.push((name, value));
        let r = send_once(addr, &raw_post("/mcp", &headers, &modern)).await;
        assert_eq!((r.status, r.error_code()), (400, -32020), "{name}");
        let message = r.json()["error"]["message"].as_str().unwrap().to_owned();
        assert!(
            message.contains(name) && message.contains("more than once"),
            "{message}"
        );
    }
    assert_eq!(surface.calls(), 1, "only the well-formed call ran");
}
