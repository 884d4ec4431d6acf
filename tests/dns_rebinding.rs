//! DNS-rebinding defence: Host must name this loopback listener and a
//! present Origin must be allowed — checked before auth or parsing (403).

mod support;

use embacle_tool_host::ToolHostConfig;
use support::*;

/// A ping with these `Host` and `Origin` headers, if any, and the bearer.
fn request(host_header: Option<&str>, origin: Option<&str>, bearer: &str) -> Vec<u8> {
    let auth = format!("Bearer {bearer}");
    let mut headers = vec![];
    headers.extend(host_header.map(|h| ("Host", h)));
    headers.extend(origin.map(|o| ("Origin", o)));
    headers.extend([
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
    ]);
    support::request("POST /mcp HTTP/1.1", &headers, Some(PING))
}

/// Loopback names with the bound port pass; anything else is 403 — even with
/// a valid bearer, and even without one (the 403 comes first).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_header_must_name_this_listener() {
    let fx = Fixture::new().await;
    let (addr, port, bearer) = (fx.addr, fx.addr.port(), &fx.bearer);
    for ok in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("LOCALHOST:{port}"),
        format!("[::1]:{port}"),
    ] {
        let r = send_once(addr, &request(Some(&ok), None, bearer)).await;
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
        let r = send_once(addr, &request(Some(&bad), None, bearer)).await;
        assert_eq!((r.status, r.error_code()), (403, -32600), "{bad:?}");
        let r = send_once(addr, &request(Some(&bad), None, "")).await;
        assert_eq!(r.status, 403, "{bad:?} without a bearer: 403 before 401");
    }
    let r = send_once(addr, &request(None, None, bearer)).await;
    assert_eq!(r.status, 403, "no Host header");
}

/// With the default (empty) allowlist every foreign Origin is refused,
/// `null` included; a request without Origin (what agents send) passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn origins_refused_by_default() {
    let fx = Fixture::new().await;
    let (addr, bearer) = (fx.addr, &fx.bearer);
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
        let r = send_once(addr, &request(Some(&h), Some(origin), bearer)).await;
        assert_eq!(r.status, 403, "{origin}");
        assert!(r.text().contains("Origin"));
    }
    assert_eq!(
        send_once(addr, &request(Some(&h), None, bearer))
            .await
            .status,
        200
    );
}

/// A configured Origin passes (case-insensitively); others stay refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_origin_allowed() {
    let fx = Fixture::with(ToolHostConfig {
        allowed_origins: vec!["http://localhost:3000".to_owned()],
        ..ToolHostConfig::default()
    })
    .await;
    let (h, bearer) = (fx.addr.to_string(), &fx.bearer);
    for (origin, status) in [
        ("http://localhost:3000", 200),
        ("HTTP://LOCALHOST:3000", 200),
        ("http://localhost:3001", 403),
        ("https://localhost:3000", 403),
        ("http://localhost:3000/", 403),
        ("null", 403),
    ] {
        let r = fx.send(&request(Some(&h), Some(origin), bearer)).await;
        assert_eq!(r.status, status, "{origin}");
    }
}

/// The listener's own origins pass by default, at its port only. This is
/// the official conformance suite's `localhost-host-valid-accepted` exactly:
/// `initialize` with `Host` and `Origin` naming the listener, then
/// `notifications/initialized`; and, in 2026-07-28, `server/discover`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn own_origins_allowed_by_default() {
    let fx = Fixture::new().await;
    let (addr, port, auth) = (fx.addr, fx.addr.port(), fx.auth());
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"conformance-dns-rebinding-test","version":"1.0.0"}}}"#;
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let discover = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"conformance-dns-rebinding-test","version":"1.0.0"},"io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    for name in ["127.0.0.1", "localhost", "[::1]"] {
        let authority = format!("{name}:{port}");
        let origin = format!("http://{authority}");
        let from_origin = |version: &str, method: &str, body: &str| {
            let headers = [
                ("Origin", origin.as_str()),
                ("MCP-Protocol-Version", version),
                ("Mcp-Method", method),
                ("Authorization", auth.as_str()),
            ];
            post_as(&authority, &headers, body)
        };
        let legacy = |body, method| from_origin("2025-11-25", method, body);
        let r = send_once(addr, &legacy(initialize, "initialize")).await;
        assert_eq!(r.status, 200, "{origin}: {:?}", r.json());
        assert_eq!(r.json()["result"]["protocolVersion"], "2025-11-25");
        let r = send_once(addr, &legacy(initialized, "notifications/initialized")).await;
        assert_eq!(r.status, 202, "{origin}");
        let modern = from_origin(MODERN, "server/discover", discover);
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

/// Other spellings of the loopback address in Host are refused: only the
/// canonical `127.0.0.1`, `localhost` and `[::1]` (with the bound port) pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_spellings() {
    let fx = Fixture::new().await;
    let port = fx.addr.port();
    for (host_value, status) in [
        (format!("[::1]:{port}"), 200),
        (format!("[0:0:0:0:0:0:0:1]:{port}"), 403),
        ("[::1]".to_owned(), 403),
        (format!("::1:{port}"), 403),
        (format!("2130706433:{port}"), 403),
        (format!("0x7f.0.0.1:{port}"), 403),
        (format!("127.1:{port}"), 403),
        (format!("localhost:0{port}"), 403),
        (format!("localhost:{port} "), 200), // trailing whitespace is not part of a header value
        (format!("user@localhost:{port}"), 403),
    ] {
        assert_eq!(
            fx.send(&request(Some(&host_value), None, &fx.bearer))
                .await
                .status,
            status,
            "{host_value:?}"
        );
    }
}
