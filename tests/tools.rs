//! Listing and calling tools over real HTTP: outcomes, visibility, isolation.

mod support;

use serde_json::json;
use support::*;

/// tools/list serves the surface's live list, in order, with each descriptor.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_tools_in_order() {
    let host = host().await;
    let surface = RecordingSurface::new();
    let session = host.open_session(surface.clone()).unwrap();
    let addr = host.local_addr();
    let r = rpc(
        addr,
        &bearer_of(&session),
        json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let body = r.json();
    assert_eq!(body["id"], 1);
    let tools = body["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, TOOL_NAMES);
    assert_eq!(tools[0]["description"], "test tool echo");
    assert_eq!(tools[0]["inputSchema"]["required"], json!(["text"]));
    assert!(body["result"].get("nextCursor").is_none());
    assert_eq!(surface.calls(), 0, "listing never calls a tool");
}

/// A successful call returns the tool's text and is counted as served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_echo() {
    let host = host().await;
    let surface = RecordingSurface::new();
    let session = host.open_session(surface.clone()).unwrap();
    let r = rpc(
        host.local_addr(),
        &bearer_of(&session),
        call_body(7, "echo", json!({"text": "hi ✓"})),
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json(),
        json!({"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi ✓"}]}})
    );
    assert_eq!(surface.calls(), 1);
    assert_eq!(session.calls_served(), 1);
}

/// A refusal is a result with isError, the reason as text and the
/// structured payload; it counts as served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusal_carries_reason_and_structure() {
    let host = host().await;
    let surface = RecordingSurface::new();
    let session = host.open_session(surface.clone()).unwrap();
    let r = rpc(
        host.local_addr(),
        &bearer_of(&session),
        call_body(2, "refuse", json!({})),
    )
    .await;
    assert_eq!(r.status, 200);
    let result = &r.json()["result"];
    assert_eq!(result["isError"], true);
    assert_eq!(
        result["content"][0],
        json!({"type":"text","text":"daily quota reached"})
    );
    assert_eq!(
        result["structuredContent"],
        json!({"quota": 10, "resetsInSeconds": 3600})
    );
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(result["content"][1]["text"].as_str().unwrap())
            .unwrap(),
        result["structuredContent"]
    );
    assert_eq!(session.calls_served(), 1);
}

/// A failed outcome is a JSON-RPC -32603 error with no result content, and
/// is not counted as served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failure_is_internal_error() {
    let host = host().await;
    let surface = RecordingSurface::new();
    let session = host.open_session(surface.clone()).unwrap();
    let r = rpc(
        host.local_addr(),
        &bearer_of(&session),
        call_body(3, "fail", json!({})),
    )
    .await;
    assert_eq!(r.status, 200);
    let body = r.json();
    assert_eq!(body["id"], 3);
    assert_eq!(body["error"]["code"], -32603);
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("backend unavailable"));
    assert!(body.get("result").is_none());
    assert_eq!(surface.calls(), 1);
    assert_eq!(session.calls_served(), 0);
}

/// JSON results are mirrored: compact text plus structuredContent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_result_is_mirrored() {
    let host = host().await;
    let session = host.open_session(RecordingSurface::new()).unwrap();
    let r = rpc(
        host.local_addr(),
        &bearer_of(&session),
        call_body(4, "withdrawable", json!({})),
    )
    .await;
    assert_eq!(
        r.json()["result"],
        json!({"content":[{"type":"text","text":"{\"ok\":true}"}],"structuredContent":{"ok":true}})
    );
}

/// A tool the surface does not list is -32602 and never reaches `call`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_tool_never_reaches_surface() {
    let host = host().await;
    let surface = RecordingSurface::new();
    let session = host.open_session(surface.clone()).unwrap();
    let addr = host.local_addr();
    let bearer = bearer_of(&session);
    let r = rpc(addr, &bearer, call_body(5, "rm_rf", json!({}))).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.error_code(), -32602);
    assert_eq!(r.json()["error"]["message"], "Unknown tool: rm_rf");
    // A name outside the MCP character set is refused without being echoed.
    let r = rpc(addr, &bearer, call_body(6, "bad name\n<script>", json!({}))).await;
    assert_eq!(r.error_code(), -32602);
    assert_eq!(r.json()["error"]["message"], "Unknown tool");
    assert_eq!(surface.calls(), 0);
    assert_eq!(session.calls_served(), 0);
}

/// Malformed tools/call params are -32602 and never reach `call`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_call_params() {
    let host = host().await;
    let surface = RecordingSurface::new();
    let session = host.open_session(surface.clone()).unwrap();
    let addr = host.local_addr();
    let bearer = bearer_of(&session);
    for params in [
        json!({}),
        json!({"name": 5}),
        json!({"name": "echo", "arguments": [1]}),
        json!({"name": "echo", "arguments": "text"}),
    ] {
        let body = json!({"jsonrpc":"2.0","id":9,"method":"tools/call","params":params});
        let r = rpc(addr, &bearer, body).await;
        assert_eq!((r.status, r.error_code()), (200, -32602), "{params}");
        assert_eq!(r.json()["id"], 9);
    }
    // No params at all: the name is missing.
    let r = rpc(
        addr,
        &bearer,
        json!({"jsonrpc":"2.0","id":10,"method":"tools/call"}),
    )
    .await;
    assert_eq!(r.error_code(), -32602);
    assert_eq!(surface.calls(), 0);
    // Null or absent arguments are an empty object: the tool runs and
    // refuses because `text` is missing.
    let body = json!({"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"echo","arguments":null}});
    let r = rpc(addr, &bearer, body).await;
    assert_eq!(r.json()["result"]["isError"], true);
    assert_eq!(surface.calls(), 1);
}

/// Withdrawing a tool mid-session removes it from the next listing and makes
/// it uncallable, without reopening the session; restoring brings it back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn withdrawal_mid_session() {
    let host = host().await;
    let surface = RecordingSurface::new();
    let session = host.open_session(surface.clone()).unwrap();
    let addr = host.local_addr();
    let bearer = bearer_of(&session);
    let list = json!({"jsonrpc":"2.0","id":1,"method":"tools/list"});
    let names = |r: RawResponse| -> Vec<String> {
        r.json()["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };

    let r = rpc(addr, &bearer, call_body(2, "withdrawable", json!({}))).await;
    assert!(r.json()["result"].is_object());
    assert_eq!(surface.calls(), 1);

    surface.withdraw("withdrawable");
    let listed = names(rpc(addr, &bearer, list.clone()).await);
    assert!(!listed.contains(&"withdrawable".to_owned()));
    assert_eq!(listed.len(), TOOL_NAMES.len() - 1);
    let r = rpc(addr, &bearer, call_body(3, "withdrawable", json!({}))).await;
    assert_eq!(r.error_code(), -32602);
    assert_eq!(surface.calls(), 1, "a withdrawn tool never reaches call");

    surface.restore("withdrawable");
    assert!(names(rpc(addr, &bearer, list).await).contains(&"withdrawable".to_owned()));
    let r = rpc(addr, &bearer, call_body(4, "withdrawable", json!({}))).await;
    assert!(r.json()["result"].is_object());
    assert_eq!(surface.calls(), 2);
    assert_eq!(session.calls_served(), 2);
}

/// A panicking tool fails its own call with -32603; the same connection, the
/// same session and other sessions keep working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panicking_tool_fails_one_call() {
    let host = host().await;
    let surface = RecordingSurface::new();
    let session = host.open_session(surface.clone()).unwrap();
    let other = host.open_session(RecordingSurface::new()).unwrap();
    let addr = host.local_addr();
    let bearer = bearer_of(&session);
    let mut conn = Conn::open(addr).await;
    let r = conn
        .send(&post(
            addr,
            &bearer,
            &call_body(1, "panic", json!({})).to_string(),
        ))
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.error_code(), -32603);
    assert_eq!(r.json()["error"]["message"], "tool panic panicked");
    // Same keep-alive connection still serves.
    let r = conn
        .send(&post(
            addr,
            &bearer,
            &call_body(2, "echo", json!({"text": "alive"})).to_string(),
        ))
        .await;
    assert_eq!(r.json()["result"]["content"][0]["text"], "alive");
    let r = rpc(
        addr,
        &bearer_of(&other),
        call_body(3, "echo", json!({"text": "too"})),
    )
    .await;
    assert_eq!(r.json()["result"]["content"][0]["text"], "too");
    assert_eq!(session.calls_served(), 1, "the panicked call is not served");
}

/// Two sessions are isolated: each bearer reaches only its own surface, and
/// each counts only its own calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_sessions_are_isolated() {
    let host = host().await;
    let (a_surface, b_surface) = (RecordingSurface::new(), RecordingSurface::new());
    let a = host.open_session(a_surface.clone()).unwrap();
    let b = host.open_session(b_surface.clone()).unwrap();
    assert_ne!(bearer_of(&a), bearer_of(&b));
    assert_ne!(a.session_id(), b.session_id());
    b_surface.withdraw("echo");
    let addr = host.local_addr();
    let (bearer_a, bearer_b) = (bearer_of(&a), bearer_of(&b));
    let mut tasks = Vec::new();
    for i in 0..20 {
        let bearer = if i % 2 == 0 {
            bearer_a.clone()
        } else {
            bearer_b.clone()
        };
        tasks.push(tokio::spawn(async move {
            rpc(
                addr,
                &bearer,
                call_body(i, "echo", json!({"text": format!("m{i}")})),
            )
            .await
        }));
    }
    for (i, task) in tasks.into_iter().enumerate() {
        let r = within(task).await.unwrap();
        if i % 2 == 0 {
            assert_eq!(r.json()["result"]["content"][0]["text"], format!("m{i}"));
        } else {
            assert_eq!(r.error_code(), -32602, "b withdrew echo");
        }
    }
    assert_eq!((a_surface.calls(), a.calls_served()), (10, 10));
    assert_eq!((b_surface.calls(), b.calls_served()), (0, 0));
    assert_eq!(host.open_sessions(), 2);
}
