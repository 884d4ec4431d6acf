//! `x-mcp-header` over real HTTP: a 2026-07-28 call's `Mcp-Param-*` headers
//! must mirror the annotated arguments (400 `-32020` otherwise), with the
//! conformance suite's own cases (`http-custom-header-server-validation`).

mod support;

use std::sync::Arc;

use embacle_tool_host::{Tool, ToolHostConfig, ToolOutcome, ToolSurface};
use serde_json::{json, Value};
use support::*;

/// One tool whose `region` argument is mirrored into `Mcp-Param-Region`.
struct Regional {
    tool: Tool,
    calls: std::sync::atomic::AtomicUsize,
}

impl ToolSurface for Regional {
    async fn list_tools(&self) -> Arc<[Tool]> {
        vec![self.tool.clone()].into()
    }

    async fn call(&self, _: &str, arguments: &Value) -> ToolOutcome {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        ToolOutcome::text(format!("ran in {}", arguments["region"]))
    }
}

fn regional() -> Arc<Regional> {
    let tool = Tool::new(
        "execute_sql",
        "Runs SQL in a region.",
        json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "query": {"type": "string"},
            },
            "required": ["region", "query"],
        }),
    )
    .unwrap();
    Arc::new(Regional {
        tool,
        calls: Default::default(),
    })
}

/// A 2026-07-28 call of `execute_sql`, with its mirrored headers and, if
/// given, `Mcp-Param-Region`.
async fn call(fx: &Fixture<Regional>, region: Option<&str>, arguments: Value) -> RawResponse {
    let body = modern_call(200, "execute_sql", arguments);
    let mut headers = vec![
        ("MCP-Protocol-Version", MODERN),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "execute_sql"),
    ];
    headers.extend(region.map(|value| ("Mcp-Param-Region", value)));
    fx.send(&fx.post_with(&headers, &body.to_string())).await
}

/// The suite's cases, row by row: valid base64 decodes, bad padding and
/// bad characters are refused, a value without the full sentinel is
/// literal, and a missing header with the value in the body is refused.
/// Refused calls never reach the surface.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suite_cases() {
    let fx = Fixture::serving(ToolHostConfig::default(), regional()).await;
    let surface = &fx.surface;
    let rows: [(&str, Option<&str>, bool); 7] = [
        ("Hello", Some("=?base64?SGVsbG8=?="), true),
        ("Hello", Some("=?base64?SGVsbG8?="), false),
        ("Hello", Some("=?base64?SGVs!!!bG8=?="), false),
        ("SGVsbG8=", Some("SGVsbG8="), true),
        ("=?base64?SGVsbG8=", Some("=?base64?SGVsbG8="), true),
        ("test-value", None, false),
        ("us-west1", Some("us-east1"), false),
    ];
    for (value, header, served) in rows {
        let arguments = json!({"region": value, "query": "SELECT 1"});
        let before = surface.calls.load(std::sync::atomic::Ordering::SeqCst);
        let r = call(&fx, header, arguments).await;
        let after = surface.calls.load(std::sync::atomic::Ordering::SeqCst);
        if served {
            assert_eq!(r.status, 200, "{value} / {header:?}: {:?}", r.json());
            assert_eq!(r.json()["result"]["isError"], Value::Null);
            assert_eq!(after, before + 1);
        } else {
            assert_eq!(
                (r.status, r.error_code()),
                (400, -32020),
                "{value} / {header:?}"
            );
            assert!(r.error_message().contains("Mcp-Param-Region"));
            assert_eq!(after, before, "{value} / {header:?} reached the surface");
        }
    }
    // Without the argument, the header is not expected.
    let r = call(&fx, None, json!({"query": "SELECT 1"})).await;
    assert_eq!(r.status, 200);
    // The annotation is served as written, so clients know to send it.
    let r = fx.list().await;
    assert_eq!(
        r.json()["result"]["tools"][0]["inputSchema"]["properties"]["region"]["x-mcp-header"],
        "Region"
    );
}

/// The legacy era defines no `Mcp-Param-*` headers, so none is checked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_calls_need_no_param_headers() {
    let fx = Fixture::serving(ToolHostConfig::default(), regional()).await;
    let r = fx
        .call(1, "execute_sql", json!({"region": "eu", "query": "q"}))
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.first_text(), "ran in \"eu\"");
}
