//! Results every agent accepts: a tool the client listed with an
//! `outputSchema` never answers a success without `structuredContent` (the
//! TypeScript SDK's `callTool`, so Claude and Gemini CLI, would turn it
//! into an error), and arguments an agent adds on its own (Gemini CLI's
//! `wait_for_previous`) reach the surface unchanged.

mod support;

use std::sync::{Arc, Mutex};

use embacle_tool_host::{Tool, ToolHostConfig, ToolOutcome, ToolSurface};
use serde_json::{json, Value};
use support::*;

/// `report` declares an `outputSchema`; its `mode` argument says whether it
/// answers with the promised structure or, wrongly, with text alone.
struct Reports {
    tools: Arc<[Tool]>,
    arguments: Mutex<Vec<Value>>,
}

impl Reports {
    fn new() -> Arc<Self> {
        let schema = json!({"type": "object", "properties": {"mode": {"type": "string"}}});
        let output = json!({"type": "object", "properties": {"total": {"type": "integer"}}});
        let report = Tool::new("report", "A report.", schema)
            .unwrap()
            .with_output_schema(output)
            .unwrap();
        Arc::new(Self {
            tools: Arc::from([report]),
            arguments: Mutex::new(Vec::new()),
        })
    }
}

impl ToolSurface for Reports {
    async fn list_tools(&self) -> Arc<[Tool]> {
        Arc::clone(&self.tools)
    }

    async fn call(&self, _name: &str, arguments: &Value) -> ToolOutcome {
        self.arguments.lock().unwrap().push(arguments.clone());
        match arguments["mode"].as_str() {
            Some("json") => ToolOutcome::json(json!({"total": 3})),
            Some("refuse") => ToolOutcome::refused("not today"),
            _ => ToolOutcome::text("three"),
        }
    }

    fn list_can_change(&self) -> bool {
        false
    }
}

fn call(id: i64, mode: &str) -> Value {
    call_body(id, "report", json!({"mode": mode}))
}

/// Once a 2025-06-18 client has listed `report` with its schema, a text-only
/// success is served as a refusal that says what is wrong; structured and
/// refused results pass as they are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listed_output_schema_is_never_answered_without_structured_content() {
    let fx = Fixture::serving(ToolHostConfig::default(), Reports::new()).await;
    let version = "2025-06-18";
    // Not listed yet: the client holds no schema, and the text goes through.
    let unlisted = fx.with_version(version, call(1, "text")).await.json();
    assert_eq!(unlisted["result"]["content"][0]["text"], "three");
    assert!(unlisted["result"].get("isError").is_none(), "{unlisted}");

    let listed = fx
        .with_version(
            version,
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        )
        .await
        .json();
    assert!(listed["result"]["tools"][0]["outputSchema"].is_object());
    let text = fx.with_version(version, call(3, "text")).await;
    assert_eq!(text.status, 200);
    let text = text.json();
    assert_eq!(text["result"]["isError"], true, "{text}");
    let reason = text["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        reason.contains("report declares an outputSchema but returned no structured content"),
        "{reason}"
    );
    let structured = fx.with_version(version, call(4, "json")).await.json();
    assert_eq!(
        structured["result"]["structuredContent"],
        json!({"total": 3})
    );
    assert!(structured["result"].get("isError").is_none());
    let refused = fx.with_version(version, call(5, "refuse")).await.json();
    assert_eq!(refused["result"]["content"][0]["text"], "not today");

    // 2025-03-26 has no structuredContent and lists no outputSchema: text is
    // the whole answer there.
    let old = fx.with_version("2025-03-26", call(6, "text")).await.json();
    assert_eq!(old["result"]["content"][0]["text"], "three");
    assert!(old["result"].get("isError").is_none(), "{old}");
}

/// The same in 2026-07-28.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modern_listing_makes_the_same_promise() {
    let fx = Fixture::serving(ToolHostConfig::default(), Reports::new()).await;
    let listed = fx
        .modern(&modern_body(1, "tools/list", json!({})))
        .await
        .json();
    assert!(listed["result"]["tools"][0]["outputSchema"].is_object());
    let text = fx
        .modern(&modern_call(2, "report", json!({"mode": "text"})))
        .await
        .json();
    assert_eq!(text["result"]["isError"], true, "{text}");
    let structured = fx
        .modern(&modern_call(3, "report", json!({"mode": "json"})))
        .await
        .json();
    assert_eq!(
        structured["result"]["structuredContent"],
        json!({"total": 3})
    );
}

/// Arguments outside the tool's schema (Gemini CLI adds
/// `wait_for_previous` to every tool's schema and may send it) reach the
/// surface exactly as sent: the host does not validate or strip them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arguments_an_agent_adds_reach_the_surface_unchanged() {
    let surface = Reports::new();
    let fx = Fixture::serving(ToolHostConfig::default(), Arc::clone(&surface)).await;
    let arguments =
        json!({"mode": "json", "wait_for_previous": true, "nested": {"a": [1, 2.5, null]}});
    let answer = fx.call(1, "report", arguments.clone()).await;
    assert_eq!(answer.status, 200);
    assert_eq!(surface.arguments.lock().unwrap().as_slice(), [arguments]);
}
