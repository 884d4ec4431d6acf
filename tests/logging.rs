//! Tool logging over real HTTP: `notifications/message` on the call's own
//! stream, the legacy `logging` capability and `logging/setLevel`, the
//! 2026-07-28 `_meta` level, and the cases where nothing is sent.

mod support;

use std::sync::Arc;

use embacle_tool_host::call::LogLevel;
use embacle_tool_host::{Tool, ToolCall, ToolHostConfig, ToolOutcome, ToolSurface};
use serde_json::{json, Value};
use support::*;

/// A surface whose `chatty` tool logs at four levels, and whose `flood`
/// tool logs far more than a call may keep waiting.
struct Chatty {
    tools: Arc<[Tool]>,
    logs: bool,
}

impl Chatty {
    fn new(logs: bool) -> Arc<Self> {
        let schema = json!({"type": "object", "additionalProperties": false});
        let tools = ["chatty", "flood", "both"]
            .map(|name| Tool::new(name, format!("logs ({name})"), schema.clone()).unwrap());
        Arc::new(Self {
            tools: tools.into(),
            logs,
        })
    }
}

const FLOOD: usize = 1_000;

impl ToolSurface for Chatty {
    async fn list_tools(&self) -> Arc<[Tool]> {
        Arc::clone(&self.tools)
    }

    async fn call_with(&self, call: ToolCall<'_>) -> ToolOutcome {
        if call.name() == "both" {
            // Logs and progress on one stream, with a pause between.
            call.log(LogLevel::Info, "first");
            call.progress(1.0, Some(2.0), None);
            tokio::time::sleep(std::time::Duration::from_millis(40)).await;
            call.log(LogLevel::Info, "second");
            call.progress(2.0, Some(2.0), None);
            return ToolOutcome::text("both done");
        }
        if call.name() == "flood" {
            for i in 0..FLOOD {
                call.log(LogLevel::Info, i);
            }
            return ToolOutcome::text("flooded");
        }
        call.log(LogLevel::Debug, "starting");
        call.log(LogLevel::Info, json!({"step": 1, "of": 2}));
        let logger = call.reporter();
        tokio::spawn(async move { logger.log_as(LogLevel::Warning, "worker", "disk almost full") })
            .await
            .unwrap();
        call.log(LogLevel::Error, "one row was skipped");
        ToolOutcome::text("done")
    }

    fn may_log(&self) -> bool {
        self.logs
    }
}

async fn chatty(logs: bool) -> Fixture<Chatty> {
    Fixture::serving(ToolHostConfig::default(), Chatty::new(logs)).await
}

/// The messages of a streamed response, in order.
async fn stream_of(fixture: &Fixture<Chatty>, request: &[u8]) -> Vec<Value> {
    let mut conn = fixture.conn().await;
    let mut stream = conn.send_streaming(request).await;
    assert_eq!(stream.status, 200);
    assert_eq!(stream.header("content-type"), Some("text/event-stream"));
    let events = stream.rest().await;
    events
        .iter()
        .filter(|e| !e.starts_with(':'))
        .map(|e| event_json(e))
        .collect()
}

fn levels(messages: &[Value]) -> Vec<&str> {
    messages
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .map(|m| m["params"]["level"].as_str().unwrap())
        .collect()
}

fn set_level(level: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 9, "method": "logging/setLevel", "params": {"level": level}})
}

/// Initialize advertises `logging` only for a surface that logs; then every
/// level is sent, in order, ahead of the result, on the call's stream.
#[tokio::test]
async fn legacy_call_streams_its_logs() {
    let fixture = chatty(true).await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let capabilities = fixture.rpc(init.clone()).await.json()["result"]["capabilities"].clone();
    assert_eq!(
        capabilities,
        json!({"tools": {"listChanged": true}, "logging": {}})
    );
    let plain = chatty(false).await;
    let capabilities = plain.rpc(init).await.json()["result"]["capabilities"].clone();
    assert_eq!(capabilities, json!({"tools": {"listChanged": true}}));

    let body = call_body(2, "chatty", json!({})).to_string();
    let messages = stream_of(&fixture, &fixture.post(&body)).await;
    assert_eq!(levels(&messages), ["debug", "info", "warning", "error"]);
    assert_eq!(
        messages[1]["params"],
        json!({"level": "info", "data": {"step": 1, "of": 2}})
    );
    assert_eq!(
        messages[2]["params"],
        json!({"level": "warning", "logger": "worker", "data": "disk almost full"})
    );
    let last = messages.last().unwrap();
    assert_eq!(last["id"], 2);
    assert_eq!(last["result"]["content"][0]["text"], "done");
    assert_eq!(messages.len(), 5);
}

/// `logging/setLevel` sets the session's threshold; a bad level is -32602;
/// on a surface that does not log the method does not exist.
#[tokio::test]
async fn set_level_filters_the_session() {
    let fixture = chatty(true).await;
    let response = fixture.rpc(set_level("warning")).await;
    assert_eq!(
        response.json(),
        json!({"jsonrpc": "2.0", "id": 9, "result": {}})
    );
    let body = call_body(2, "chatty", json!({})).to_string();
    let messages = stream_of(&fixture, &fixture.post(&body)).await;
    assert_eq!(levels(&messages), ["warning", "error"]);

    fixture.rpc(set_level("emergency")).await;
    let messages = stream_of(&fixture, &fixture.post(&body)).await;
    assert!(levels(&messages).is_empty(), "{messages:?}");
    assert_eq!(messages.len(), 1, "the result alone, still streamed");

    for bad in [json!("WARNING"), json!("verbose"), json!(3), Value::Null] {
        let body = json!({"jsonrpc": "2.0", "id": 9, "method": "logging/setLevel", "params": {"level": bad}});
        assert_eq!(fixture.rpc(body).await.error_code(), -32602, "{bad}");
    }
    let missing = json!({"jsonrpc": "2.0", "id": 9, "method": "logging/setLevel"});
    assert_eq!(fixture.rpc(missing).await.error_code(), -32602);

    let plain = chatty(false).await;
    let response = plain.rpc(set_level("info")).await;
    assert_eq!(response.error_code(), -32601);
}

/// Without SSE in `Accept`, or on a surface that does not log, a call is
/// plain JSON and logs nothing.
#[tokio::test]
async fn no_stream_no_logs() {
    let fixture = chatty(true).await;
    let body = call_body(2, "chatty", json!({})).to_string();
    let json_only = fixture.post_with(&[("Accept", "application/json")], &body);
    // The fixture's default Accept is sent first; make it the only one.
    let json_only = String::from_utf8(json_only)
        .unwrap()
        .replace("Accept: application/json, text/event-stream\r\n", "")
        .into_bytes();
    let response = fixture.send(&json_only).await;
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert_eq!(response.first_text(), "done");

    let plain = chatty(false).await;
    let response = plain.rpc(call_body(2, "chatty", json!({}))).await;
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert_eq!(response.first_text(), "done");
}

/// 2026-07-28: a request without `_meta` logLevel gets no messages (and a
/// plain JSON answer); with one, exactly the levels at or above it; an
/// unknown level is -32602; `logging/setLevel` does not exist.
#[tokio::test]
async fn modern_logs_only_when_asked() {
    let fixture = chatty(true).await;
    let response = fixture.modern(&modern_call(1, "chatty", json!({}))).await;
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert_eq!(response.first_text(), "done");

    let mut asked = modern_call(2, "chatty", json!({}));
    asked["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("info");
    let messages = stream_of(&fixture, &fixture.modern_request(&asked)).await;
    assert_eq!(levels(&messages), ["info", "warning", "error"]);
    assert_eq!(messages.last().unwrap()["result"]["resultType"], "complete");

    asked["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("loud");
    let response = fixture.modern(&asked).await;
    assert_eq!(response.error_code(), -32602);
    assert!(response.error_message().contains("logLevel"));

    let discover = modern_body(3, "server/discover", json!({}));
    let capabilities = fixture.modern(&discover).await.json()["result"]["capabilities"].clone();
    assert_eq!(
        capabilities,
        json!({"tools": {"listChanged": true}, "logging": {}})
    );

    let mut set = set_level("info");
    set["params"]["_meta"] = modern_meta();
    let response = fixture.modern(&set).await;
    assert_eq!((response.status, response.error_code()), (404, -32601));
}

/// A call that logs more between two awaits than may wait keeps 256
/// messages, and then says how many it dropped; the result still arrives.
#[tokio::test]
async fn a_log_flood_is_bounded() {
    let fixture = chatty(true).await;
    let body = call_body(2, "flood", json!({})).to_string();
    let messages = stream_of(&fixture, &fixture.post(&body)).await;
    let logs: Vec<&Value> = messages
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .collect();
    assert_eq!(logs.len(), 256 + 1);
    for (i, log) in logs[..256].iter().enumerate() {
        assert_eq!(log["params"]["data"], i);
    }
    let report = &logs[256]["params"];
    assert_eq!(report["logger"], "embacle-tool-host");
    assert_eq!(
        report["data"],
        format!(
            "{} log messages were dropped: more than 256 messages or 1048576 bytes were waiting to be sent",
            FLOOD - 256
        )
    );
    assert_eq!(
        messages.last().unwrap()["result"]["content"][0]["text"],
        "flooded"
    );
}

/// Logs and progress share a call's stream, in every legacy revision the
/// client names in its header: logs in order, progress increasing, the
/// response last.
#[tokio::test]
async fn logs_and_progress_share_the_stream() {
    let fixture = chatty(true).await;
    for version in ["2025-06-18", "2025-11-25"] {
        let body = call_with_token(4, "both", json!("tok")).to_string();
        let request = fixture.post_with(&[("MCP-Protocol-Version", version)], &body);
        let messages = stream_of(&fixture, &request).await;
        let logs: Vec<&Value> = messages
            .iter()
            .filter(|m| m["method"] == "notifications/message")
            .map(|m| &m["params"]["data"])
            .collect();
        assert_eq!(logs, [&json!("first"), &json!("second")], "{version}");
        let progress: Vec<f64> = messages
            .iter()
            .filter(|m| m["method"] == "notifications/progress")
            .map(|m| m["params"]["progress"].as_f64().unwrap())
            .collect();
        assert_eq!(progress, [1.0, 2.0], "{version}");
        let last = messages.last().unwrap();
        assert_eq!(
            (
                last["id"].clone(),
                last["result"]["content"][0]["text"].clone()
            ),
            (json!(4), json!("both done"))
        );
    }
}

/// `logging/setLevel` on one session leaves another session's level alone.
#[tokio::test]
async fn set_level_is_per_session() {
    let fixture = chatty(true).await;
    let other = fixture.host.open_session(Chatty::new(true)).unwrap();
    let other_bearer = bearer_of(&other);
    fixture.rpc(set_level("error")).await;
    let body = call_body(2, "chatty", json!({})).to_string();
    let mine = stream_of(&fixture, &fixture.post(&body)).await;
    assert_eq!(levels(&mine), ["error"]);
    let theirs = stream_of(&fixture, &post(fixture.addr, &other_bearer, &body)).await;
    assert_eq!(levels(&theirs), ["debug", "info", "warning", "error"]);
}
