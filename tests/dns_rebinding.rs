//! DNS-rebinding defence: Host must name this loopback listener and a
//! present Origin must be allowed — checked before auth or parsing (403).

mod support;

use embacle_tool_host::ToolHostConfig;
use support::*;

fn request(host_header: Option<&str>, origin: Option<&str>, bearer: &str) -> Vec<u8> {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let mut r = String::from("POST /mcp HTTP/1.1\r\n");
    if let Some(h) = host_header {
        r.push_str(&format!("Host: {h}\r\n"));
    }
    if let Some(o) = origin {
        r.push_str(&format!("Origin: {o}\r\n"));
    }
    r.push_str(&format!(
        "Authorization: Bearer {bearer}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    ));
    r.into_bytes()
}

/// Loopback names with the bound port pass; anything else is 403 — even with
/// a valid bearer, and even without one (the 403 comes first).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_header_must_name_this_listener() {
    let host = host().await;
    let session = host.open_session(RecordingSurface::new()).unwrap();
    let addr = host.local_addr();
    let port = addr.port();
    let bearer = bearer_of(&session);
    for ok in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("LOCALHOST:{port}"),
        format!("[::1]:{port}"),
    ] {
        let r = send_once(addr, &request(Some(&ok), None, &bearer)).await;
        assert_eq!(r.status, 200, "{ok}");
    }
    let other_port = port.wrapping_add(1);
    for bad in [
        "evil.example".to_owned(),
        format!("evil.example:{port}"),
        format!("localhost.:{port}"),
        format!("127.0.0.1:{other_port}"),
        "127.0.0.1".to_owned(),
        "localhost".to_owned(),
        format!("127.0.0.2:{port}"),
        format!("[::ffff:127.0.0.1]:{port}"),
        format!("0.0.0.0:{port}"),
        format!("localhost:{port}.evil.example"),
        String::new(),
    ] {
        let r = send_once(addr, &request(Some(&bad), None, &bearer)).await;
        assert_eq!((r.status, r.error_code()), (403, -32600), "{bad:?}");
        let r = send_once(addr, &request(Some(&bad), None, "")).await;
        assert_eq!(r.status, 403, "{bad:?} without a bearer: 403 before 401");
    }
    let r = send_once(addr, &request(None, None, &bearer)).await;
    assert_eq!(r.status, 403, "no Host header");
}

/// With the default (empty) allowlist every foreign Origin is refused,
/// `null` included; a request without Origin (what agents send) passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn origins_refused_by_default() {
    let host = host().await;
    let session = host.open_session(RecordingSurface::new()).unwrap();
    let addr = host.local_addr();
    let bearer = bearer_of(&session);
    let h = addr.to_string();
    let port = addr.port();
    let other_port = port.wrapping_add(1);
    for origin in [
        "null",
        "http://evil.example",
        &format!("http://evil.example:{port}"),
        &format!("https://{h}"),
        &format!("http://127.0.0.1:{other_port}"),
        &format!("http://{h}/"),
        "http://localhost",
    ] {
        let r = send_once(addr, &request(Some(&h), Some(origin), &bearer)).await;
        assert_eq!(r.status, 403, "{origin}");
        assert!(String::from_utf8_lossy(&r.body).contains("Origin"));
    }
    assert_eq!(
        send_once(addr, &request(Some(&h), None, &bearer))
            .await
            .status,
        200
    );
}

/// A configured Origin passes (case-insensitively); others stay refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_origin_allowed() {
    let host = host_with(ToolHostConfig {
        allowed_origins: vec!["http://localhost:3000".to_owned()],
        ..ToolHostConfig::default()
    })
    .await;
    let session = host.open_session(RecordingSurface::new()).unwrap();
    let addr = host.local_addr();
    let bearer = bearer_of(&session);
    let h = addr.to_string();
    for ok in ["http://localhost:3000", "HTTP://LOCALHOST:3000"] {
        assert_eq!(
            send_once(addr, &request(Some(&h), Some(ok), &bearer))
                .await
                .status,
            200,
            "{ok}"
        );
    }
    for bad in [
        "http://localhost:3001",
        "https://localhost:3000",
        "http://localhost:3000/",
        "null",
    ] {
        assert_eq!(
            send_once(addr, &request(Some(&h), Some(bad), &bearer))
                .await
                .status,
            403,
            "{bad}"
        );
    }
}

/// The listener's own origins pass by default, at its port only. This is
/// the official conformance suite's `localhost-host-valid-accepted` exactly:
/// `initialize` with `Host` and `Origin` naming the listener, then
/// `notifications/initialized`; and, in 2026-07-28, `server/discover`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn own_origins_allowed_by_default() {
    let host = host().await;
    let session = host.open_session(RecordingSurface::new()).unwrap();
    let addr = host.local_addr();
    let port = addr.port();
    let auth = format!("Bearer {}", bearer_of(&session));
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"conformance-dns-rebinding-test","version":"1.0.0"}}}"#;
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let discover = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"conformance-dns-rebinding-test","version":"1.0.0"},"io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    for name in ["127.0.0.1", "localhost", "[::1]"] {
        let authority = format!("{name}:{port}");
        let origin = format!("http://{authority}");
        let legacy = |body: &str, method: &str| {
            post_as(
                &authority,
                &[
                    ("Origin", &origin),
                    ("MCP-Protocol-Version", "2025-11-25"),
                    ("Mcp-Method", method),
                    ("Authorization", &auth),
                ],
                body,
            )
        };
        let r = send_once(addr, &legacy(initialize, "initialize")).await;
        assert_eq!(r.status, 200, "{origin}: {:?}", r.json());
        assert_eq!(r.json()["result"]["protocolVersion"], "2025-11-25");
        let r = send_once(addr, &legacy(initialized, "notifications/initialized")).await;
        assert_eq!(r.status, 202, "{origin}");
        let modern = post_as(
            &authority,
            &[
                ("Origin", &origin),
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "server/discover"),
                ("Authorization", &auth),
            ],
            discover,
        );
        let r = send_once(addr, &modern).await;
        assert_eq!(r.status, 200, "{origin}: {:?}", r.json());
        assert_eq!(r.json()["result"]["resultType"], "complete");
    }
    // The suite's rebinding half: a foreign Host and Origin, 4xx.
    let evil = post_as(
        "evil.example.com",
        &[
            ("Origin", "http://evil.example.com"),
            ("Authorization", &auth),
        ],
        initialize,
    );
    assert_eq!(send_once(addr, &evil).await.status, 403);
}
