//! The 2026-07-28 (stateless) revision beside the legacy era on one
//! endpoint: every row of the modern checks, over real HTTP.

mod support;

use std::sync::Arc;

use embacle_tool_host::{Tool, ToolHostConfig, ToolOutcome, ToolSurface};
use serde_json::{json, Value};
use support::*;

const V: &str = MODERN;

fn server_info() -> Value {
    json!({"io.modelcontextprotocol/serverInfo": {"name": "dravr", "version": env!("CARGO_PKG_VERSION")}})
}

/// server/discover lists every version the host speaks, tools-only
/// capabilities, the instructions, ttlMs/cacheScope and serverInfo.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discover() {
    let fx = Fixture::with(dravr()).await;
    let r = fx
        .modern(&modern_body(1, "server/discover", json!({})))
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json(),
        json!({"jsonrpc": "2.0", "id": 1, "result": {
            "supportedVersions": ALL_VERSIONS,
            "capabilities": {"tools": {"listChanged": true}},
            "instructions": "Use the echo tool.",
            "resultType": "complete",
            "ttlMs": 0,
            "cacheScope": "private",
            "_meta": server_info(),
        }})
    );
}

/// tools/list carries resultType, ttlMs, a private cacheScope and serverInfo.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_tools() {
    let fx = Fixture::with(dravr()).await;
    let r = fx.modern(&modern_body(2, "tools/list", json!({}))).await;
    assert_eq!(r.status, 200);
    let result = &r.json()["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["ttlMs"], 0);
    assert_eq!(result["cacheScope"], "private");
    assert_eq!(result["_meta"], server_info());
    assert_eq!(r.tool_names(), TOOL_NAMES);
}

/// tools/call: success, refusal, failure and unknown tool behave as in the
/// legacy era (handler errors stay HTTP 200), with the modern envelope on
/// results; calls_served counts both eras alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_tool_outcomes() {
    let fx = Fixture::with(dravr()).await;
    let r = fx
        .modern(&modern_call(1, "echo", json!({"text": "modern"})))
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json()["result"],
        json!({"content": [{"type": "text", "text": "modern"}], "resultType": "complete", "_meta": server_info()})
    );
    let r = fx.modern(&modern_call(2, "refuse", json!({}))).await;
    let result = &r.json()["result"];
    assert_eq!(
        (result["isError"].clone(), result["resultType"].clone()),
        (json!(true), json!("complete"))
    );
    assert_eq!(result["structuredContent"], refusal_payload());
    let r = fx.modern(&modern_call(3, "fail", json!({}))).await;
    assert_eq!((r.status, r.error_code()), (200, -32603));
    let r = fx.modern(&modern_call(4, "nope", json!({}))).await;
    assert_eq!((r.status, r.error_code()), (200, -32602));
    assert_eq!(fx.surface.calls(), 3);
    assert_eq!(fx.session().calls_served(), 2);
}

/// Methods outside the modern set — initialize and ping included — are
/// HTTP 404 with -32601.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_modern_methods_are_404() {
    let fx = Fixture::with(dravr()).await;
    for method in ["initialize", "ping", "resources/list", "x"] {
        let r = fx
            .modern(&modern_body(
                1,
                method,
                json!({"protocolVersion": "2025-11-25"}),
            ))
            .await;
        assert_eq!((r.status, r.error_code()), (404, -32601), "{method}");
        assert_eq!(r.json()["id"], 1);
    }
}

/// The modern checks in the spec's order (headers, version, `_meta`), each
/// with its status and code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn envelope_check_order() {
    let fx = Fixture::with(dravr()).await;
    // 1. The headers first: a body version the header does not mirror is a
    // mismatch even when it is also unsupported. This is the conformance
    // suite's sep-2575-http-server-header-mismatch-400, exactly.
    let discover_with = |version: Value| {
        let mut body = modern_body(302, "server/discover", json!({}));
        body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = version;
        body.to_string()
    };
    let discover = |version, body: &str| {
        let headers = [
            ("MCP-Protocol-Version", version),
            ("Mcp-Method", "server/discover"),
        ];
        fx.post_with(&headers, body)
    };
    let body = discover_with(json!("v999.0.0"));
    let r = fx.send(&discover(V, &body)).await;
    assert_eq!((r.status, r.error_code()), (400, -32020), "{:?}", r.json());
    let r = fx.rpc_text(&body).await;
    assert_eq!(
        (r.status, r.error_code()),
        (400, -32020),
        "no headers at all"
    );
    // A version that is not a string has no header spelling.
    let body = discover_with(json!(20260728));
    let r = fx.send(&discover("20260728", &body)).await;
    assert_eq!((r.status, r.error_code()), (400, -32020));
    // 2. Header and body agree on a version the host does not speak: -32022
    // (the suite's sep-2575-server-unsupported-version-error).
    let body = discover_with(json!("v999.0.0"));
    let r = fx.send(&discover("v999.0.0", &body)).await;
    assert_eq!((r.status, r.error_code()), (400, -32022));
    assert_eq!(r.json()["error"]["data"]["requested"], "v999.0.0");
    assert_eq!(r.json()["error"]["data"]["supported"], json!(ALL_VERSIONS));
    // 3. Then the other required _meta keys.
    for capabilities in [None, Some(json!([])), Some(json!("all"))] {
        let mut body = modern_body(3, "tools/list", json!({}));
        match capabilities {
            None => {
                body["params"]["_meta"]
                    .as_object_mut()
                    .unwrap()
                    .remove("io.modelcontextprotocol/clientCapabilities");
            }
            Some(c) => body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = c,
        }
        let r = fx.modern(&body).await;
        assert_eq!((r.status, r.error_code()), (400, -32602), "{body}");
    }
    assert_eq!(fx.surface.calls(), 0);
}

/// Table of header/body mismatches, the base64 form included: each is 400
/// -32020 and never reaches the surface; each matching form is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn header_mismatch_table() {
    struct Unicode;
    impl ToolSurface for Unicode {
        async fn list_tools(&self) -> Arc<[Tool]> {
            vec![Tool::new("echo", "", json!({"type": "object"})).unwrap()].into()
        }
        async fn call(&self, _: &str, _: &Value) -> ToolOutcome {
            ToolOutcome::text("ok")
        }
    }
    let fx = Fixture::with(dravr()).await;
    let body = modern_call(1, "echo", json!({"text": "x"})).to_string();
    // (MCP-Protocol-Version, Mcp-Method, Mcp-Name, served?)
    type Row<'a> = (Option<&'a str>, Option<&'a str>, Option<&'a str>, bool);
    let rows: [Row<'_>; 14] = [
        (Some(V), Some("tools/call"), Some("echo"), true),
        (
            Some(V),
            Some("=?base64?dG9vbHMvY2FsbA==?="),
            Some("=?base64?ZWNobw==?="),
            true,
        ),
        (
            Some("=?base64?MjAyNi0wNy0yOA==?="),
            Some("tools/call"),
            Some("echo"),
            true,
        ),
        (None, Some("tools/call"), Some("echo"), false),
        (Some("2025-11-25"), Some("tools/call"), Some("echo"), false),
        (Some(V), None, Some("echo"), false),
        (Some(V), Some("tools/list"), Some("echo"), false),
        (Some(V), Some("TOOLS/CALL"), Some("echo"), false),
        (Some(V), Some("tools/call"), None, false),
        (Some(V), Some("tools/call"), Some("refuse"), false),
        (Some(V), Some("tools/call"), Some("Echo"), false),
        (
            Some(V),
            Some("tools/call"),
            Some("=?base64?cmVmdXNl?="),
            false,
        ),
        (
            Some(V),
            Some("tools/call"),
            Some("=?base64?ZWNobw=?="),
            false,
        ),
        (Some(V), Some("tools/call"), Some("=?base64?ZWNobw"), false),
    ];
    for (version, method, name, served) in rows {
        let mut headers = vec![];
        headers.extend(version.map(|v| ("MCP-Protocol-Version", v)));
        headers.extend(method.map(|m| ("Mcp-Method", m)));
        headers.extend(name.map(|n| ("Mcp-Name", n)));
        let before = fx.surface.calls();
        let r = fx.send(&fx.post_with(&headers, &body)).await;
        if served {
            assert_eq!(r.status, 200, "{version:?} {method:?} {name:?}");
            assert_eq!(fx.surface.calls(), before + 1);
        } else {
            assert_eq!(
                (r.status, r.error_code()),
                (400, -32020),
                "{version:?} {method:?} {name:?}"
            );
            assert_eq!(fx.surface.calls(), before);
        }
    }
    // A non-ASCII tool name must travel base64-encoded.
    let unicode = Fixture::serving(ToolHostConfig::default(), Arc::new(Unicode)).await;
    let body = modern_body(1, "tools/call", json!({"name": "héllo"})).to_string();
    let headers = [
        ("MCP-Protocol-Version", V),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "=?base64?aMOpbGxv?="),
    ];
    let r = unicode.send(&unicode.post_with(&headers, &body)).await;
    assert_eq!(
        (r.status, r.error_code()),
        (200, -32602),
        "header matched; the name is simply not a tool"
    );
    let mut raw = unicode.post_with(&headers[..2], &body);
    let at = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    raw.splice(at..at, b"\r\nMcp-Name: h\xc3\xa9llo".iter().copied());
    let r = unicode.send(&raw).await;
    assert_eq!(
        (r.status, r.error_code()),
        (400, -32020),
        "raw UTF-8 in a header is refused"
    );
}

/// Both eras interleave on one session's bearer and one connection; tool
/// semantics, revocation and Host checks are the same in each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eras_interleave_on_one_bearer() {
    let mut fx = Fixture::with(dravr()).await;
    let (addr, auth) = (fx.addr, fx.auth());
    let mut conn = fx.conn().await;
    for i in 0..3 {
        let legacy = call_body(i, "echo", json!({"text": format!("legacy {i}")})).to_string();
        let r = conn.send(&fx.post(&legacy)).await;
        assert_eq!(r.first_text(), format!("legacy {i}"));
        assert!(r.json()["result"].get("resultType").is_none());
        let body = modern_call(i, "echo", json!({"text": format!("modern {i}")}));
        let r = conn.send(&fx.modern_request(&body)).await;
        assert_eq!(r.first_text(), format!("modern {i}"));
        assert_eq!(r.json()["result"]["resultType"], "complete");
    }
    assert_eq!((fx.surface.calls(), fx.session().calls_served()), (6, 6));
    // Host/Origin: 403 before anything, as in the legacy era.
    let body = modern_body(9, "tools/list", json!({})).to_string();
    let bad_host = String::from_utf8(fx.post(&body))
        .unwrap()
        .replace(&format!("Host: {addr}"), "Host: evil.example");
    assert_eq!(send_once(addr, bad_host.as_bytes()).await.status, 403);
    // GET and DELETE: 405, with the modern header too.
    for method in ["GET", "DELETE"] {
        let request = format!("{method} /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {auth}\r\nMCP-Protocol-Version: {V}\r\n\r\n");
        assert_eq!(send_once(addr, request.as_bytes()).await.status, 405);
    }
    // Revocation: 401 in the modern era too.
    fx.revoke();
    let r = fx.modern(&modern_body(10, "tools/list", json!({}))).await;
    assert_eq!(r.status, 401);
}
