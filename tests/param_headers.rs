//! `x-mcp-header` over real HTTP: a 2026-07-28 call's `Mcp-Param-*` headers
//! must mirror the annotated arguments (400 `-32020` otherwise), with the
//! conformance suite's own cases (`http-custom-header-server-validation`).

mod support;

use std::net::SocketAddr;
use std::sync::Arc;

use embacle_tool_host::{Tool, ToolOutcome, ToolSurface};
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

fn modern_call(arguments: Value) -> String {
    json!({"jsonrpc": "2.0", "id": 200, "method": "tools/call", "params": {
        "name": "execute_sql", "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    }})
    .to_string()
}

async fn call(addr: SocketAddr, auth: &str, region: Option<&str>, body: &str) -> RawResponse {
    let mut headers = vec![
        ("Authorization", auth),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "execute_sql"),
    ];
    headers.extend(region.map(|value| ("Mcp-Param-Region", value)));
    send_once(addr, &post_with(addr, &headers, body)).await
}

/// The suite's cases, row by row: valid base64 decodes, bad padding and
/// bad characters are refused, a value without the full sentinel is
/// literal, and a missing header with the value in the body is refused.
/// Refused calls never reach the surface.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suite_cases() {
    let host = host().await;
    let surface = regional();
    let session = host.open_session(surface.clone()).unwrap();
    let addr = host.local_addr();
    let auth = format!("Bearer {}", bearer_of(&session));
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
        let body = modern_call(json!({"region": value, "query": "SELECT 1"}));
        let before = surface.calls.load(std::sync::atomic::Ordering::SeqCst);
        let r = call(addr, &auth, header, &body).await;
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
            assert!(r.json()["error"]["message"]
                .as_str()
                .unwrap()
                .contains("Mcp-Param-Region"));
            assert_eq!(after, before, "{value} / {header:?} reached the surface");
        }
    }
    // Without the argument, the header is not expected.
    let r = call(
        addr,
        &auth,
        None,
        &modern_call(json!({"query": "SELECT 1"})),
    )
    .await;
    assert_eq!(r.status, 200);
    // The annotation is served as written, so clients know to send it.
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let r = rpc(addr, &bearer_of(&session), list).await;
    assert_eq!(
        r.json()["result"]["tools"][0]["inputSchema"]["properties"]["region"]["x-mcp-header"],
        "Region"
    );
}

/// The legacy era defines no `Mcp-Param-*` headers, so none is checked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_calls_need_no_param_headers() {
    let host = host().await;
    let session = host.open_session(regional()).unwrap();
    let addr = host.local_addr();
    let r = rpc(
        addr,
        &bearer_of(&session),
        call_body(1, "execute_sql", json!({"region": "eu", "query": "q"})),
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["result"]["content"][0]["text"], "ran in \"eu\"");
}
