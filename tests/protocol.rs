//! The MCP lifecycle and JSON-RPC envelope over real HTTP: every bad-input
//! row with its exact HTTP status and JSON-RPC code.

mod support;

use std::net::SocketAddr;

use embacle_tool_host::{ToolHostConfig, ToolSession};
use serde_json::{json, Value};
use support::*;

/// Every version the host speaks, newest first.
const ALL_VERSIONS: [&str; 4] = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"];

async fn setup() -> (
    embacle_tool_host::ToolHost,
    ToolSession,
    std::sync::Arc<RecordingSurface>,
) {
    let host = host_with(ToolHostConfig {
        server_name: "dravr".to_owned(),
        instructions: Some("Use the echo tool.".to_owned()),
        ..ToolHostConfig::default()
    })
    .await;
    let surface = RecordingSurface::new();
    let session = host.open_session(surface.clone()).unwrap();
    (host, session, surface)
}

async fn raw(addr: SocketAddr, bearer: &str, body: &str) -> RawResponse {
    send_once(addr, &post(addr, bearer, body)).await
}

async fn with_version(addr: SocketAddr, bearer: &str, version: &str, body: Value) -> RawResponse {
    let auth = format!("Bearer {bearer}");
    send_once(
        addr,
        &post_with(
            addr,
            &[("Authorization", &auth), ("MCP-Protocol-Version", version)],
            &body.to_string(),
        ),
    )
    .await
}

/// initialize echoes a supported version, counter-offers the newest for
/// anything else, advertises only tools (listChanged true: the recording
/// surface can change), and serves
/// serverInfo and instructions. No Mcp-Session-Id is minted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_negotiates() {
    let (host, session, _) = setup().await;
    let addr = host.local_addr();
    let bearer = bearer_of(&session);
    for (asked, answered) in [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ] {
        let body = json!({"jsonrpc":"2.0","id":"init","method":"initialize","params":{
            "protocolVersion": asked, "capabilities": {}, "clientInfo": {"name":"t","version":"1"}}});
        let r = rpc(addr, &bearer, body).await;
        assert_eq!(r.status, 200);
        assert!(r.header("mcp-session-id").is_none());
        assert_eq!(
            r.json(),
            json!({"jsonrpc":"2.0","id":"init","result":{
                "protocolVersion": answered,
                "capabilities": {"tools": {"listChanged": true}},
                "serverInfo": {"name": "dravr", "version": env!("CARGO_PKG_VERSION")},
                "instructions": "Use the echo tool.",
            }}),
            "asked {asked}"
        );
    }
    let r = rpc(
        addr,
        &bearer,
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}),
    )
    .await;
    assert_eq!((r.status, r.error_code()), (200, -32602));
}

/// ping answers {} with the id echoed verbatim, string or integer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ping_echoes_ids_verbatim() {
    let (host, session, _) = setup().await;
    let addr = host.local_addr();
    let bearer = bearer_of(&session);
    for id in [
        json!(1),
        json!("1"),
        json!(0),
        json!(-5),
        json!(9007199254740993u64),
        json!("a\"b"),
    ] {
        let r = rpc(
            addr,
            &bearer,
            json!({"jsonrpc":"2.0","id":id,"method":"ping"}),
        )
        .await;
        assert_eq!(r.status, 200);
        assert_eq!(r.json(), json!({"jsonrpc":"2.0","id":id,"result":{}}));
    }
    // The big integer is echoed digit for digit, not through a float.
    let r = raw(
        addr,
        &bearer,
        r#"{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}"#,
    )
    .await;
    assert!(String::from_utf8_lossy(&r.body).contains("\"id\":9007199254740993"));
}

/// Notifications (known or not) and client responses are accepted with 202
/// and an empty body; none produces a JSON-RPC response.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_and_responses_get_202() {
    let (host, session, surface) = setup().await;
    let addr = host.local_addr();
    let bearer = bearer_of(&session);
    for body in [
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}),
        json!({"jsonrpc":"2.0","method":"notifications/whatever","params":[1,2]}),
        json!({"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}),
        json!({"jsonrpc":"2.0","id":5,"result":{}}),
        json!({"jsonrpc":"2.0","id":5,"error":{"code":-1,"message":"no"}}),
    ] {
        let r = rpc(addr, &bearer, body.clone()).await;
        assert_eq!(r.status, 202, "{body}");
        assert!(r.body.is_empty(), "{body}");
    }
    assert_eq!(
        surface.calls(),
        0,
        "a tools/call notification is not a call"
    );
}

/// Envelope errors: status 400 with the JSON-RPC code the spec digest gives,
/// echoing the id when it was readable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn envelope_errors() {
    let (host, session, surface) = setup().await;
    let addr = host.local_addr();
    let bearer = bearer_of(&session);
    let rows: [(&str, u16, i64, Value); 11] = [
        ("{not json", 400, -32700, Value::Null),
        ("", 400, -32700, Value::Null),
        ("\u{0}", 400, -32700, Value::Null),
        (r#""just a string""#, 400, -32600, Value::Null),
        ("42", 400, -32600, Value::Null),
        (
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            400,
            -32600,
            Value::Null,
        ),
        (
            r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#,
            400,
            -32600,
            json!(3),
        ),
        (r#"{"id":3,"method":"ping"}"#, 400, -32600, json!(3)),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":"ping","params":[]}"#,
            400,
            -32602,
            json!(4),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"x","method":"ping","params":7}"#,
            400,
            -32600,
            json!("x"),
        ),
        (
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
            400,
            -32600,
            Value::Null,
        ),
    ];
    for (body, status, code, id) in rows {
        let r = raw(addr, &bearer, body).await;
        assert_eq!((r.status, r.error_code()), (status, code), "{body:?}");
        assert_eq!(r.json()["id"], id, "{body:?}");
        assert_eq!(r.header("content-type"), Some("application/json"));
    }
    assert_eq!(surface.calls(), 0);
}

/// Unknown methods — resources, prompts, logging, the modern-only discover
/// when sent without the modern envelope — are -32601 on HTTP 200.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_methods() {
    let (host, session, _) = setup().await;
    let addr = host.local_addr();
    let bearer = bearer_of(&session);
    for method in [
        "resources/list",
        "prompts/get",
        "logging/setLevel",
        "completion/complete",
        "server/discover",
        "x",
    ] {
        let r = rpc(
            addr,
            &bearer,
            json!({"jsonrpc":"2.0","id":1,"method":method}),
        )
        .await;
        assert_eq!((r.status, r.error_code()), (200, -32601), "{method}");
        assert_eq!(
            r.json()["error"]["message"],
            format!("Method not found: {method}")
        );
    }
}

/// tools/list with any cursor (the host never issues one) is -32602; a null
/// cursor is the same as none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_cursor() {
    let (host, session, _) = setup().await;
    let addr = host.local_addr();
    let bearer = bearer_of(&session);
    for cursor in [json!("abc"), json!(""), json!(3)] {
        let r = rpc(
            addr,
            &bearer,
            json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":cursor}}),
        )
        .await;
        assert_eq!((r.status, r.error_code()), (200, -32602), "{cursor}");
    }
    let r = rpc(
        addr,
        &bearer,
        json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":null}}),
    )
    .await;
    assert!(r.json()["result"]["tools"].is_array());
}

/// The MCP-Protocol-Version header: supported legacy versions pass; an
/// unsupported one is 400 listing what is supported; 2026-07-28 without the
/// `_meta` envelope is 400 -32602.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protocol_version_header() {
    let (host, session, _) = setup().await;
    let addr = host.local_addr();
    let bearer = bearer_of(&session);
    let list = json!({"jsonrpc":"2.0","id":1,"method":"tools/list"});
    for ok in ["2025-03-26", "2025-06-18", "2025-11-25"] {
        assert_eq!(
            with_version(addr, &bearer, ok, list.clone()).await.status,
            200,
            "{ok}"
        );
    }
    let r = with_version(addr, &bearer, "2024-01-01", list.clone()).await;
    assert_eq!((r.status, r.error_code()), (400, -32600));
    assert_eq!(r.json()["error"]["data"]["supported"], json!(ALL_VERSIONS));
    assert_eq!(r.json()["error"]["data"]["requested"], "2024-01-01");
    let r = with_version(addr, &bearer, "2026-07-28", list).await;
    assert_eq!((r.status, r.error_code()), (400, -32602));
}

/// A request in the modern envelope naming a revision the host does not
/// speak is 400 -32022 listing every version it does — the refusal on which
/// dual-era clients fall back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_modern_version_is_refused_with_supported_versions() {
    let (host, session, _) = setup().await;
    let addr = host.local_addr();
    let bearer = bearer_of(&session);
    let body = json!({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{
        "io.modelcontextprotocol/protocolVersion":"2027-01-01",
        "io.modelcontextprotocol/clientCapabilities":{}}}});
    // Headers that mirror the body, as a dual-era client sends them (the
    // header check comes first: see tests/modern.rs, envelope_check_order).
    let auth = format!("Bearer {bearer}");
    let headers = [
        ("Authorization", auth.as_str()),
        ("MCP-Protocol-Version", "2027-01-01"),
        ("Mcp-Method", "server/discover"),
    ];
    let r = send_once(addr, &post_with(addr, &headers, &body.to_string())).await;
    assert_eq!((r.status, r.error_code()), (400, -32022));
    assert_eq!(r.json()["id"], 1);
    assert_eq!(r.json()["error"]["data"]["requested"], "2027-01-01");
    assert_eq!(r.json()["error"]["data"]["supported"], json!(ALL_VERSIONS));
}

/// Batches: accepted without a version header or at 2025-03-26 (responses in
/// order, none for notifications, errors per member); refused at later
/// versions; an empty batch is one -32600 object; all-notification → 202.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_only_in_2025_03_26() {
    let (host, session, surface) = setup().await;
    let addr = host.local_addr();
    let bearer = bearer_of(&session);
    let batch = json!([
        {"jsonrpc":"2.0","id":1,"method":"ping"},
        {"jsonrpc":"2.0","method":"notifications/initialized"},
        {"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"echo","arguments":{"text":"in batch"}}},
        {"jsonrpc":"2.0","id":3,"method":"nope"},
        {"jsonrpc":"1.0","id":4,"method":"ping"},
        {"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":"2025-03-26"}},
    ]);
    for r in [
        rpc(addr, &bearer, batch.clone()).await,
        with_version(addr, &bearer, "2025-03-26", batch.clone()).await,
    ] {
        assert_eq!(r.status, 200);
        let replies = r.json();
        let replies = replies.as_array().unwrap();
        assert_eq!(replies.len(), 5);
        assert_eq!(replies[0], json!({"jsonrpc":"2.0","id":1,"result":{}}));
        assert_eq!(replies[1]["id"], "b");
        assert_eq!(replies[1]["result"]["content"][0]["text"], "in batch");
        assert_eq!(
            (
                replies[2]["id"].clone(),
                replies[2]["error"]["code"].clone()
            ),
            (json!(3), json!(-32601))
        );
        assert_eq!(
            (
                replies[3]["id"].clone(),
                replies[3]["error"]["code"].clone()
            ),
            (json!(4), json!(-32600))
        );
        assert_eq!(
            (
                replies[4]["id"].clone(),
                replies[4]["error"]["code"].clone()
            ),
            (json!(5), json!(-32600))
        );
    }
    assert_eq!(surface.calls(), 2);
    for version in ["2025-06-18", "2025-11-25"] {
        let r = with_version(addr, &bearer, version, batch.clone()).await;
        assert_eq!((r.status, r.error_code()), (400, -32600), "{version}");
    }
    assert_eq!(surface.calls(), 2);
    let r = raw(addr, &bearer, "[]").await;
    assert_eq!((r.status, r.error_code()), (400, -32600));
    assert!(r.json().is_object());
    let r = rpc(
        addr,
        &bearer,
        json!([{"jsonrpc":"2.0","method":"notifications/initialized"}]),
    )
    .await;
    assert_eq!(r.status, 202);
    assert!(r.body.is_empty());
}

/// HTTP-level rejections after auth: wrong method 405 with `Allow: POST`,
/// wrong content type 415, an Accept that rules out JSON 406, another path
/// 404 (checked before auth, so OAuth discovery probes get 404).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_rejections() {
    let (host, session, surface) = setup().await;
    let addr = host.local_addr();
    let bearer = bearer_of(&session);
    // GET is a stream only with `Accept: text/event-stream` (tests/streams.rs).
    for (method, accept) in [
        ("GET", "application/json"),
        ("DELETE", "text/event-stream"),
        ("PUT", "text/event-stream"),
        ("PATCH", "text/event-stream"),
        ("OPTIONS", "text/event-stream"),
    ] {
        let request = format!(
            "{method} /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {bearer}\r\nAccept: {accept}\r\nContent-Length: 0\r\n\r\n"
        );
        let r = send_once(addr, request.as_bytes()).await;
        assert_eq!(r.status, 405, "{method}");
        assert_eq!(r.header("allow"), Some("GET, POST"), "{method}");
    }
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let auth = format!("Bearer {bearer}");
    for content_type in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "application/jsonl",
    ] {
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {auth}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        assert_eq!(
            send_once(addr, request.as_bytes()).await.status,
            415,
            "{content_type}"
        );
    }
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {auth}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    assert_eq!(
        send_once(addr, request.as_bytes()).await.status,
        415,
        "missing content type"
    );
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {auth}\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let r = send_once(addr, request.as_bytes()).await;
    assert_eq!((r.status, r.error_code()), (406, -32600));
    // Charset parameters and missing Accept are fine.
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {auth}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    assert_eq!(send_once(addr, request.as_bytes()).await.status, 200);
    for path in [
        "/",
        "/mcp/",
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-authorization-server",
    ] {
        let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n");
        assert_eq!(
            send_once(addr, request.as_bytes()).await.status,
            404,
            "{path}"
        );
    }
    assert_eq!(surface.calls(), 0);
}

/// The request sequence Copilot CLI 1.0.102 (`copilot --acp`) sends, as the
/// core issue records it: a modern server/discover first (now answered, with
/// the versions the host speaks — the legacy path must keep working
/// whichever the client picks), then initialize at 2025-11-25,
/// notifications/initialized, a GET expecting 405, tools/list, a call, and a
/// DELETE on exit. Python SDK 2.x also opens with server/discover. All on
/// one keep-alive connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copilot_cli_sequence() {
    let (host, session, surface) = setup().await;
    let addr = host.local_addr();
    let bearer = bearer_of(&session);
    let auth = format!("Bearer {bearer}");
    let mut conn = Conn::open(addr).await;
    let discover = json!({"jsonrpc":"2.0","id":0,"method":"server/discover","params":{"_meta":{
        "io.modelcontextprotocol/protocolVersion":"2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":{},
        "io.modelcontextprotocol/clientInfo":{"name":"copilot","version":"1.0.102"}}}});
    let r = conn
        .send(&post_with(
            addr,
            &[
                ("Authorization", &auth),
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "server/discover"),
            ],
            &discover.to_string(),
        ))
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["result"]["supportedVersions"], json!(ALL_VERSIONS));
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"copilot","version":"1.0.102"}}});
    let r = conn.send(&post(addr, &bearer, &init.to_string())).await;
    assert_eq!(r.json()["result"]["protocolVersion"], "2025-11-25");
    let v = [
        ("Authorization", auth.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let r = conn
        .send(&post_with(
            addr,
            &v,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        ))
        .await;
    assert_eq!(r.status, 202);
    // Copilot opens the GET stream on a connection of its own; it stays
    // open (an event stream) while the POSTs go on.
    let get = format!("GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {auth}\r\nAccept: text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n");
    let mut stream = Conn::open(addr).await;
    let events = stream.send_streaming(get.as_bytes()).await;
    assert_eq!(events.status, 200);
    assert_eq!(events.header("content-type"), Some("text/event-stream"));
    let r = conn
        .send(&post_with(
            addr,
            &v,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        ))
        .await;
    assert_eq!(
        r.json()["result"]["tools"].as_array().unwrap().len(),
        TOOL_NAMES.len()
    );
    let r = conn
        .send(&post_with(
            addr,
            &v,
            &call_body(3, "echo", json!({"text":"from copilot"})).to_string(),
        ))
        .await;
    assert_eq!(r.json()["result"]["content"][0]["text"], "from copilot");
    let delete = format!("DELETE /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {auth}\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n");
    assert_eq!(conn.send(delete.as_bytes()).await.status, 405);
    assert_eq!((surface.calls(), session.calls_served()), (1, 1));
}
