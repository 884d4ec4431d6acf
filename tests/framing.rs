//! Framing ambiguities the host must not resolve by guessing, each over a
//! raw socket: a header that must appear once appearing twice, and an
//! absolute-form request target naming another host.

mod support;

use serde_json::json;
use support::*;

/// A raw POST to `target` with exactly these headers.
fn raw_post(target: &str, headers: &[(&str, &str)], body: &str) -> Vec<u8> {
    request(&format!("POST {target} HTTP/1.1"), headers, Some(body))
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

/// Two `Host` headers are a 400 (RFC 9112 §3.2), whichever comes first and
/// with or without a bearer: the first no longer silently wins.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_host_headers_are_400() {
    let fx = Fixture::new().await;
    let (auth, own) = (fx.auth(), fx.addr.to_string());
    for (first, second) in [
        (own.as_str(), "evil.example"),
        ("evil.example", own.as_str()),
        (own.as_str(), own.as_str()),
    ] {
        for auth in [auth.as_str(), "Bearer nope"] {
            let mut headers = base(first, auth);
            headers.push(("Host", second));
            let r = fx.send(&raw_post("/mcp", &headers, &echo_call())).await;
            assert_eq!(
                (r.status, r.error_code()),
                (400, -32600),
                "{first} {second}"
            );
            assert!(r.text().contains("more than one Host"), "{:?}", r.json());
        }
    }
    assert_eq!(fx.surface.calls(), 0);
}

/// An absolute-form target's authority is checked exactly like `Host`:
/// another host is 403 (and the call never runs) even under a good `Host`;
/// this listener, in any of its loopback names, is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn absolute_form_target_is_checked_like_host() {
    let fx = Fixture::new().await;
    let (auth, own, port) = (fx.auth(), fx.addr.to_string(), fx.addr.port());
    for target in [
        "http://evil.example/mcp".to_owned(),
        format!("http://evil.example:{port}/mcp"),
        format!("http://127.0.0.1:{}/mcp", port.wrapping_add(1)),
        format!("https://{own}/mcp"),
    ] {
        let r = fx
            .send(&raw_post(&target, &base(&own, &auth), &echo_call()))
            .await;
        assert_eq!((r.status, r.error_code()), (403, -32600), "{target}");
        assert!(r.text().contains("request target"));
    }
    assert_eq!(
        fx.surface.calls(),
        0,
        "no call ran through a foreign target"
    );
    for target in [
        format!("http://{own}/mcp"),
        format!("http://localhost:{port}/mcp"),
    ] {
        let r = fx
            .send(&raw_post(&target, &base(&own, &auth), &echo_call()))
            .await;
        assert_eq!(r.status, 200, "{target}");
    }
    assert_eq!(fx.surface.calls(), 2);
    // A foreign Host stays refused even under this listener's own target.
    let target = format!("http://{own}/mcp");
    let r = fx
        .send(&raw_post(&target, &base("evil.example", &auth), PING))
        .await;
    assert_eq!(r.status, 403);
}

/// Two `Origin`s (400 before authentication), two `Content-Type`s, and
/// any MCP header sent twice: each a 400 with a message naming the header,
/// in both eras, and none reaches the surface.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_headers_are_400() {
    let fx = Fixture::new().await;
    let (auth, own) = (fx.auth(), fx.addr.to_string());
    let origin = format!("http://{own}");

    let mut headers = base(&own, "Bearer nope");
    headers.extend([
        ("Origin", origin.as_str()),
        ("Origin", "http://evil.example"),
    ]);
    let r = fx.send(&raw_post("/mcp", &headers, PING)).await;
    assert_eq!(r.status, 400, "two Origins, even without a bearer");
    assert!(r.text().contains("more than one Origin"));

    let mut headers = base(&own, &auth);
    headers.push(("Content-Type", "text/plain"));
    let r = fx.send(&raw_post("/mcp", &headers, &echo_call())).await;
    assert_eq!((r.status, r.error_code()), (400, -32600));
    assert!(r.text().contains("more than one Content-Type"));

    // Legacy era: -32600.
    for (name, value) in [
        ("MCP-Protocol-Version", "2025-11-25"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "echo"),
    ] {
        let mut headers = base(&own, &auth);
        headers.extend([(name, value), (name, value)]);
        let r = fx.send(&raw_post("/mcp", &headers, &echo_call())).await;
        assert_eq!((r.status, r.error_code()), (400, -32600), "{name}");
        let message = r.error_message();
        assert!(
            message.contains(name) && message.contains("more than once"),
            "{message}"
        );
    }

    // Modern era: -32020.
    let modern = modern_call(1, "echo", json!({"text": "hi"})).to_string();
    let mirrored = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "echo"),
    ];
    let mut headers = base(&own, &auth);
    headers.extend(mirrored);
    let r = fx.send(&raw_post("/mcp", &headers, &modern)).await;
    assert_eq!(r.status, 200, "the well-formed modern call is served");
    for (name, value) in mirrored {
        let mut headers = base(&own, &auth);
        headers.extend(mirrored);
        headers.push((name, value));
        let r = fx.send(&raw_post("/mcp", &headers, &modern)).await;
        assert_eq!((r.status, r.error_code()), (400, -32020), "{name}");
        let message = r.error_message();
        assert!(
            message.contains(name) && message.contains("more than once"),
            "{message}"
        );
    }
    assert_eq!(fx.surface.calls(), 1, "only the well-formed call ran");
}
