//! Listing and calling tools over real HTTP: outcomes, visibility, isolation.

mod support;

use std::sync::Arc;

use embacle_tool_host::{Tool, ToolHostConfig, ToolSurface};
use serde_json::json;
use support::*;

/// tools/list serves the surface's live list, in order, with each descriptor.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_tools_in_order() {
    let fx = Fixture::new().await;
    let r = fx.list().await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let body = r.json();
    assert_eq!(body["id"], 1);
    assert_eq!(r.tool_names(), TOOL_NAMES);
    let tools = &body["result"]["tools"];
    assert_eq!(tools[0]["description"], "test tool echo");
    assert_eq!(tools[0]["inputSchema"]["required"], json!(["text"]));
    assert!(body["result"].get("nextCursor").is_none());
    assert_eq!(fx.surface.calls(), 0, "listing never calls a tool");
}

/// A successful call returns the tool's text and is counted as served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_echo() {
    let fx = Fixture::new().await;
    let r = fx.call(7, "echo", json!({"text": "hi ✓"})).await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json(),
        json!({"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi ✓"}]}})
    );
    assert_eq!(fx.surface.calls(), 1);
    assert_eq!(fx.session().calls_served(), 1);
}

/// A refusal is a result with isError, the reason as text and the
/// structured payload; it counts as served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusal_carries_reason_and_structure() {
    let fx = Fixture::new().await;
    let r = fx
        .with_version("2025-11-25", call_body(2, "refuse", json!({})))
        .await;
    assert_eq!(r.status, 200);
    let result = &r.json()["result"];
    assert_eq!(result["isError"], true);
    assert_eq!(result["content"][0], json!({"type":"text","text":REFUSAL}));
    assert_eq!(result["structuredContent"], refusal_payload());
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(result["content"][1]["text"].as_str().unwrap())
            .unwrap(),
        result["structuredContent"]
    );
    assert_eq!(fx.session().calls_served(), 1);
    // 2025-03-26 (no version header) has no structuredContent: the payload
    // is in the text block alone.
    let r = fx.call(2, "refuse", json!({})).await;
    let result = &r.json()["result"];
    assert!(result.get("structuredContent").is_none(), "{result}");
    assert_eq!(result["content"][1]["text"], refusal_payload().to_string());
}

/// A failed outcome is a JSON-RPC -32603 error with no result content, and
/// is not counted as served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failure_is_internal_error() {
    let fx = Fixture::new().await;
    let r = fx.call(3, "fail", json!({})).await;
    assert_eq!(r.status, 200);
    let body = r.json();
    assert_eq!(body["id"], 3);
    assert_eq!(body["error"]["code"], -32603);
    assert!(r.error_message().contains("backend unavailable"));
    assert!(body.get("result").is_none());
    assert_eq!(fx.surface.calls(), 1);
    assert_eq!(fx.session().calls_served(), 0);
}

/// JSON results are mirrored: compact text plus structuredContent (from
/// 2025-06-18; 2025-03-26 gets the text alone).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_result_is_mirrored() {
    let fx = Fixture::new().await;
    let text = json!([{"type":"text","text":"{\"ok\":true}"}]);
    for version in ["2025-06-18", "2025-11-25"] {
        let r = fx
            .with_version(version, call_body(4, "withdrawable", json!({})))
            .await;
        assert_eq!(
            r.json()["result"],
            json!({"content": text, "structuredContent": {"ok": true}}),
            "{version}"
        );
    }
    let r = fx.call(4, "withdrawable", json!({})).await;
    assert_eq!(r.json()["result"], json!({"content": text}));
}

/// A tool the surface does not list is -32602 and never reaches `call`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_tool_never_reaches_surface() {
    let fx = Fixture::new().await;
    let r = fx.call(5, "rm_rf", json!({})).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.error_code(), -32602);
    assert_eq!(r.error_message(), "Unknown tool: rm_rf");
    // A name outside the MCP character set is refused without being echoed.
    let r = fx.call(6, "bad name\n<script>", json!({})).await;
    assert_eq!(r.error_code(), -32602);
    assert_eq!(r.error_message(), "Unknown tool");
    assert_eq!(fx.surface.calls(), 0);
    assert_eq!(fx.session().calls_served(), 0);
}

/// Malformed tools/call params are -32602 and never reach `call`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_call_params() {
    let fx = Fixture::new().await;
    for params in [
        json!({}),
        json!({"name": 5}),
        json!({"name": "echo", "arguments": [1]}),
        json!({"name": "echo", "arguments": "text"}),
    ] {
        let body = json!({"jsonrpc":"2.0","id":9,"method":"tools/call","params":params});
        let r = fx.rpc(body).await;
        assert_eq!((r.status, r.error_code()), (200, -32602), "{params}");
        assert_eq!(r.json()["id"], 9);
    }
    // No params at all: the name is missing.
    let r = fx
        .rpc(json!({"jsonrpc":"2.0","id":10,"method":"tools/call"}))
        .await;
    assert_eq!(r.error_code(), -32602);
    assert_eq!(fx.surface.calls(), 0);
    // Null or absent arguments are an empty object: the tool runs and
    // refuses because `text` is missing.
    let r = fx.call(11, "echo", serde_json::Value::Null).await;
    assert_eq!(r.json()["result"]["isError"], true);
    assert_eq!(fx.surface.calls(), 1);
}

/// Withdrawing a tool mid-session removes it from the next listing and makes
/// it uncallable, without reopening the session; restoring brings it back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn withdrawal_mid_session() {
    let fx = Fixture::new().await;
    let r = fx.call(2, "withdrawable", json!({})).await;
    assert!(r.json()["result"].is_object());
    assert_eq!(fx.surface.calls(), 1);

    fx.surface.withdraw("withdrawable");
    let listed = fx.list().await.tool_names();
    assert!(!listed.contains(&"withdrawable".to_owned()));
    assert_eq!(listed.len(), TOOL_NAMES.len() - 1);
    let r = fx.call(3, "withdrawable", json!({})).await;
    assert_eq!(r.error_code(), -32602);
    assert_eq!(fx.surface.calls(), 1, "a withdrawn tool never reaches call");

    fx.surface.restore("withdrawable");
    assert!(fx
        .list()
        .await
        .tool_names()
        .contains(&"withdrawable".to_owned()));
    let r = fx.call(4, "withdrawable", json!({})).await;
    assert!(r.json()["result"].is_object());
    assert_eq!(fx.surface.calls(), 2);
    assert_eq!(fx.session().calls_served(), 2);
}

/// A panicking tool fails its own call with -32603; the same connection, the
/// same session and other sessions keep working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panicking_tool_fails_one_call() {
    let fx = Fixture::new().await;
    let other = fx.host.open_session(RecordingSurface::new()).unwrap();
    let mut conn = fx.conn().await;
    let r = conn
        .send(&fx.post(&call_body(1, "panic", json!({})).to_string()))
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.error_code(), -32603);
    assert_eq!(r.error_message(), "tool panic panicked");
    // Same keep-alive connection still serves.
    let r = conn
        .send(&fx.post(&call_body(2, "echo", json!({"text": "alive"})).to_string()))
        .await;
    assert_eq!(r.first_text(), "alive");
    let r = rpc(
        fx.addr,
        &bearer_of(&other),
        call_body(3, "echo", json!({"text": "too"})),
    )
    .await;
    assert_eq!(r.first_text(), "too");
    assert_eq!(
        fx.session().calls_served(),
        1,
        "the panicked call is not served"
    );
}

/// Two sessions are isolated: each bearer reaches only its own surface, and
/// each counts only its own calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_sessions_are_isolated() {
    let a = Fixture::new().await;
    let b_surface = RecordingSurface::new();
    let b = a.host.open_session(b_surface.clone()).unwrap();
    let (bearer_a, bearer_b) = (a.bearer.clone(), bearer_of(&b));
    assert_ne!(bearer_a, bearer_b);
    assert_ne!(a.session().session_id(), b.session_id());
    b_surface.withdraw("echo");
    let addr = a.addr;
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
            assert_eq!(r.first_text(), format!("m{i}"));
        } else {
            assert_eq!(r.error_code(), -32602, "b withdrew echo");
        }
    }
    assert_eq!((a.surface.calls(), a.session().calls_served()), (10, 10));
    assert_eq!((b_surface.calls(), b.calls_served()), (0, 0));
    assert_eq!(a.host.live_sessions(), 2);
}

/// A surface that implements neither `call` nor `call_with` (the trait
/// cannot require one of the two) fails each call with JSON-RPC `-32603`
/// saying so, and the host goes on serving.
#[tokio::test]
async fn a_surface_without_a_call_fails_each_call_and_says_why() {
    struct ListOnly(Arc<[Tool]>);
    impl ToolSurface for ListOnly {
        async fn list_tools(&self) -> Arc<[Tool]> {
            Arc::clone(&self.0)
        }
    }
    let tool = Tool::new("lonely", "Has no call.", json!({"type": "object"})).unwrap();
    let fx = Fixture::serving(
        ToolHostConfig::default(),
        Arc::new(ListOnly(vec![tool].into())),
    )
    .await;
    let r = fx.call(1, "lonely", json!({})).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["error"]["code"], -32603);
    assert!(
        r.error_message()
            .contains("implements neither ToolSurface::call nor call_with"),
        "{}",
        r.error_message()
    );
    assert_eq!(fx.ping().await.status, 200);
}
