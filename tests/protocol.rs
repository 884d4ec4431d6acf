//! The MCP lifecycle and JSON-RPC envelope over real HTTP: every bad-input
//! row with its exact HTTP status and JSON-RPC code.

mod support;

use serde_json::{json, Value};
use support::*;

/// initialize echoes a supported version, counter-offers the newest for
/// anything else, advertises only tools (listChanged true: the recording
/// surface can change), and serves
/// serverInfo and instructions. No Mcp-Session-Id is minted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_negotiates() {
    let fx = Fixture::with(dravr()).await;
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
        let r = fx.rpc(body).await;
        assert_eq!(r.status, 200);
        // Every initialize mints an MCP session (tests/mcp_sessions.rs).
        let id = r.header("mcp-session-id").expect("an Mcp-Session-Id");
        assert!(
            id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()),
            "{id}"
        );
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
    let r = fx
        .rpc(json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}))
        .await;
    assert_eq!((r.status, r.error_code()), (200, -32602));
}

/// ping answers {} with the id echoed verbatim, string or integer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ping_echoes_ids_verbatim() {
    let fx = Fixture::with(dravr()).await;
    for id in [
        json!(1),
        json!("1"),
        json!(0),
        json!(-5),
        json!(9007199254740993u64),
        json!("a\"b"),
    ] {
        let r = fx
            .rpc(json!({"jsonrpc":"2.0","id":id,"method":"ping"}))
            .await;
        assert_eq!(r.status, 200);
        assert_eq!(r.json(), json!({"jsonrpc":"2.0","id":id,"result":{}}));
    }
    // The big integer is echoed digit for digit, not through a float.
    let r = fx
        .rpc_text(r#"{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}"#)
        .await;
    assert!(String::from_utf8_lossy(&r.body).contains("\"id\":9007199254740993"));
}

/// Notifications (known or not) and client responses are accepted with 202
/// and an empty body; none produces a JSON-RPC response.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_and_responses_get_202() {
    let fx = Fixture::with(dravr()).await;
    for body in [
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}),
        json!({"jsonrpc":"2.0","method":"notifications/whatever","params":[1,2]}),
        json!({"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}),
        json!({"jsonrpc":"2.0","id":5,"result":{}}),
        json!({"jsonrpc":"2.0","id":5,"error":{"code":-1,"message":"no"}}),
    ] {
        let r = fx.rpc(body.clone()).await;
        assert_eq!(r.status, 202, "{body}");
        assert!(r.body.is_empty(), "{body}");
    }
    assert_eq!(
        fx.surface.calls(),
        0,
        "a tools/call notification is not a call"
    );
}

/// Envelope errors: status 400 with the JSON-RPC code the spec digest gives,
/// echoing the id when it was readable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn envelope_errors() {
    let fx = Fixture::with(dravr()).await;
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
        let r = fx.rpc_text(body).await;
        assert_eq!((r.status, r.error_code()), (status, code), "{body:?}");
        assert_eq!(r.json()["id"], id, "{body:?}");
        assert_eq!(r.header("content-type"), Some("application/json"));
    }
    // Valid JSON, but a number no double holds: said as that, not as a
    // body that is not JSON.
    let huge = "9".repeat(1000);
    for number in ["1e309", "-1e309", huge.as_str()] {
        for body in [
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hi","n":{number}}}}}}}"#
            ),
            format!(r#"{{"jsonrpc":"2.0","id":{number},"method":"ping"}}"#),
        ] {
            let r = fx.rpc_text(&body).await;
            assert_eq!((r.status, r.error_code()), (400, -32700), "{body}");
            let message = r.error_message();
            assert!(message.contains("beyond a double's range"), "{message}");
        }
    }
    let r = fx.rpc_text("{not json").await;
    assert!(
        r.error_message().contains("not JSON"),
        "{}",
        r.error_message()
    );
    assert_eq!(fx.surface.calls(), 0);
}

/// Unknown methods — resources, prompts, logging, the modern-only discover
/// when sent without the modern envelope — are -32601 on HTTP 200.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_methods() {
    let fx = Fixture::with(dravr()).await;
    for method in [
        "resources/list",
        "prompts/get",
        "logging/setLevel",
        "completion/complete",
        "server/discover",
        "x",
    ] {
        let r = fx
            .rpc(json!({"jsonrpc":"2.0","id":1,"method":method}))
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
    let fx = Fixture::with(dravr()).await;
    for cursor in [json!("abc"), json!(""), json!(3)] {
        let r = fx
            .rpc(json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":cursor}}))
            .await;
        assert_eq!((r.status, r.error_code()), (200, -32602), "{cursor}");
    }
    let r = fx
        .rpc(json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":null}}))
        .await;
    assert!(r.json()["result"]["tools"].is_array());
}

/// The MCP-Protocol-Version header: supported legacy versions pass; an
/// unsupported one is 400 listing what is supported; 2026-07-28 without the
/// `_meta` envelope is 400 -32602.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protocol_version_header() {
    let fx = Fixture::with(dravr()).await;
    let list = json!({"jsonrpc":"2.0","id":1,"method":"tools/list"});
    for ok in ["2025-03-26", "2025-06-18", "2025-11-25"] {
        assert_eq!(fx.with_version(ok, list.clone()).await.status, 200, "{ok}");
    }
    let r = fx.with_version("2024-01-01", list.clone()).await;
    assert_eq!((r.status, r.error_code()), (400, -32600));
    assert_eq!(r.json()["error"]["data"]["supported"], json!(ALL_VERSIONS));
    assert_eq!(r.json()["error"]["data"]["requested"], "2024-01-01");
    let r = fx.with_version("2026-07-28", list).await;
    assert_eq!((r.status, r.error_code()), (400, -32602));
}

/// A request in the modern envelope naming a revision the host does not
/// speak is 400 -32022 listing every version it does — the refusal on which
/// dual-era clients fall back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_modern_version_is_refused_with_supported_versions() {
    let fx = Fixture::with(dravr()).await;
    let body = json!({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{
        "io.modelcontextprotocol/protocolVersion":"2027-01-01",
        "io.modelcontextprotocol/clientCapabilities":{}}}});
    // Headers that mirror the body, as a dual-era client sends them (the
    // header check comes first: see tests/modern.rs, envelope_check_order).
    let headers = [
        ("MCP-Protocol-Version", "2027-01-01"),
        ("Mcp-Method", "server/discover"),
    ];
    let r = fx.send(&fx.post_with(&headers, &body.to_string())).await;
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
    let fx = Fixture::with(dravr()).await;
    let batch = json!([
        {"jsonrpc":"2.0","id":1,"method":"ping"},
        {"jsonrpc":"2.0","method":"notifications/initialized"},
        {"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"echo","arguments":{"text":"in batch"}}},
        {"jsonrpc":"2.0","id":3,"method":"nope"},
        {"jsonrpc":"1.0","id":4,"method":"ping"},
        {"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":"2025-03-26"}},
    ]);
    for r in [
        fx.rpc(batch.clone()).await,
        fx.with_version("2025-03-26", batch.clone()).await,
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
    assert_eq!(fx.surface.calls(), 2);
    for version in ["2025-06-18", "2025-11-25"] {
        let r = fx.with_version(version, batch.clone()).await;
        assert_eq!((r.status, r.error_code()), (400, -32600), "{version}");
    }
    assert_eq!(fx.surface.calls(), 2);
    let r = fx.rpc_text("[]").await;
    assert_eq!((r.status, r.error_code()), (400, -32600));
    assert!(r.json().is_object());
    let r = fx
        .rpc(json!([{"jsonrpc":"2.0","method":"notifications/initialized"}]))
        .await;
    assert_eq!(r.status, 202);
    assert!(r.body.is_empty());
}

/// HTTP-level rejections after auth: wrong method 405 with `Allow: POST`,
/// wrong content type 415, an Accept that rules out JSON 406, another path
/// 404 (checked before auth, so OAuth discovery probes get 404).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_rejections() {
    let fx = Fixture::with(dravr()).await;
    let (host, auth) = (fx.addr.to_string(), fx.auth());
    let (host, auth) = (host.as_str(), auth.as_str());
    // GET is a stream only with `Accept: text/event-stream` (tests/streams.rs).
    for (method, accept) in [
        ("GET", "application/json"),
        ("DELETE", "text/event-stream"),
        ("PUT", "text/event-stream"),
        ("PATCH", "text/event-stream"),
        ("OPTIONS", "text/event-stream"),
    ] {
        let headers = [("Host", host), ("Authorization", auth), ("Accept", accept)];
        let r = fx
            .send(&request(
                &format!("{method} /mcp HTTP/1.1"),
                &headers,
                Some(""),
            ))
            .await;
        assert_eq!(r.status, 405, "{method}");
        assert_eq!(r.header("allow"), Some("GET, POST, DELETE"), "{method}");
    }
    let post_typed = |content_type: Option<&str>, accept: Option<&str>| {
        let mut headers = vec![("Host", host), ("Authorization", auth)];
        headers.extend(content_type.map(|v| ("Content-Type", v)));
        headers.extend(accept.map(|v| ("Accept", v)));
        request("POST /mcp HTTP/1.1", &headers, Some(PING))
    };
    for content_type in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "application/jsonl",
    ] {
        assert_eq!(
            fx.send(&post_typed(Some(content_type), None)).await.status,
            415,
            "{content_type}"
        );
    }
    assert_eq!(
        fx.send(&post_typed(None, None)).await.status,
        415,
        "missing content type"
    );
    let r = fx
        .send(&post_typed(
            Some("application/json"),
            Some("text/event-stream"),
        ))
        .await;
    assert_eq!((r.status, r.error_code()), (406, -32600));
    // Charset parameters and missing Accept are fine.
    let r = fx
        .send(&post_typed(Some("application/json; charset=utf-8"), None))
        .await;
    assert_eq!(r.status, 200);
    for path in [
        "/",
        "/mcp/",
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-authorization-server",
    ] {
        let r = fx
            .send(&request(
                &format!("GET {path} HTTP/1.1"),
                &[("Host", host)],
                None,
            ))
            .await;
        assert_eq!(r.status, 404, "{path}");
    }
    assert_eq!(fx.surface.calls(), 0);
}

/// The request sequence Copilot CLI 1.0.102 (`copilot --acp`) sends, as the
/// core issue records it: a modern server/discover first (now answered, with
/// the versions the host speaks — the legacy path must keep working
/// whichever the client picks), then initialize at 2025-11-25,
/// notifications/initialized, a GET expecting 405, tools/list, a call, and a
/// DELETE on exit — each with the Mcp-Session-Id initialize minted. Python
/// SDK 2.x also opens with server/discover. All on one keep-alive
/// connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copilot_cli_sequence() {
    let fx = Fixture::with(dravr()).await;
    let (host, auth) = (fx.addr.to_string(), fx.auth());
    let mut conn = fx.conn().await;
    let discover = json!({"jsonrpc":"2.0","id":0,"method":"server/discover","params":{"_meta":{
        "io.modelcontextprotocol/protocolVersion":"2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":{},
        "io.modelcontextprotocol/clientInfo":{"name":"copilot","version":"1.0.102"}}}});
    let r = conn.send(&fx.modern_request(&discover)).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["result"]["supportedVersions"], json!(ALL_VERSIONS));
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"copilot","version":"1.0.102"}}});
    let r = conn.send(&fx.post(&init.to_string())).await;
    assert_eq!(r.json()["result"]["protocolVersion"], "2025-11-25");
    let id = r.header("mcp-session-id").expect("a session id").to_owned();
    let v = [
        ("MCP-Protocol-Version", "2025-11-25"),
        ("Mcp-Session-Id", &id),
    ];
    let r = conn
        .send(&fx.post_with(
            &v,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        ))
        .await;
    assert_eq!(r.status, 202);
    let bodiless = |method: &str, accept: Option<&str>| {
        let mut headers = vec![("Host", host.as_str()), ("Authorization", auth.as_str())];
        headers.extend(accept.map(|v| ("Accept", v)));
        headers.push(("MCP-Protocol-Version", "2025-11-25"));
        headers.push(("Mcp-Session-Id", &id));
        request(&format!("{method} /mcp HTTP/1.1"), &headers, None)
    };
    // Copilot opens the GET stream on a connection of its own; it stays
    // open (an event stream) while the POSTs go on.
    let get = bodiless("GET", Some("text/event-stream"));
    let mut stream = fx.conn().await;
    let mut events = stream.send_streaming(&get).await;
    assert_eq!(events.status, 200);
    assert_eq!(events.header("content-type"), Some("text/event-stream"));
    let r = conn
        .send(&fx.post_with(&v, r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#))
        .await;
    assert_eq!(
        r.json()["result"]["tools"].as_array().unwrap().len(),
        TOOL_NAMES.len()
    );
    let r = conn
        .send(&fx.post_with(
            &v,
            &call_body(3, "echo", json!({"text":"from copilot"})).to_string(),
        ))
        .await;
    assert_eq!(r.first_text(), "from copilot");
    let delete = bodiless("DELETE", None);
    assert_eq!(conn.send(&delete).await.status, 200);
    assert_eq!(
        events.rest().await,
        Vec::<String>::new(),
        "DELETE ends its stream"
    );
    assert_eq!((fx.surface.calls(), fx.session().calls_served()), (1, 1));
}
