//! Claude, through Zed's ACP adapter (`claude-agent-acp`, pinned in
//! `tests/acp-agent`, running Claude Code), driven by `examples/acp_turn.rs`
//! offline: `ANTHROPIC_BASE_URL` points at a scripted Messages API
//! (`support::scripted_model`), telemetry and updates are off, and the
//! plugin blocklist Claude Code fetches at start-up (its one request beyond
//! the machine) is pre-seeded in its config directory, so the proxy sink
//! sees nothing.
//!
//! What Claude does that an embedder must know, checked here: it asks
//! permission before every MCP call, read-only or not; the model sees
//! `mcp__SERVER__TOOL` (`Runner::ClaudeCode`); a refusal reaches the model
//! as an `is_error` tool result. In this headless mode it does not act on
//! `notifications/tools/list_changed`, so a tool added mid-turn is not
//! offered (the README's agent table says so). See `support::agents` for
//! the environment and the skip rule.
#![cfg(unix)]

mod support;

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use embacle_tool_host::Runner;
use serde_json::{json, Value};
use support::agents::*;
use support::scripted_model::{Api, ScriptedModel};

/// Claude through its adapter, offline, with `model` as its API.
fn claude(dir: &Path, model: &ScriptedModel) -> Agent {
    let adapter = dir
        .join("node_modules")
        .join(".bin")
        .join("claude-agent-acp");
    let agent = Agent::new(vec![adapter.into_os_string()]);
    let config = agent.home.path().join("claude-config");
    let plugins = config.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let blocklist = json!({"fetchedAt": iso_8601(now), "plugins": []});
    std::fs::write(plugins.join("blocklist.json"), blocklist.to_string()).unwrap();
    agent
        .env("CLAUDE_CONFIG_DIR", config)
        .env("ANTHROPIC_BASE_URL", model.base_url())
        .env("ANTHROPIC_API_KEY", "sk-ant-scripted")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
}

/// One run of `acp_turn` with Claude; `None` when the test is skipped.
async fn claude_turn(args: &[&str]) -> Option<Turn> {
    let dir = agents_dir().await?;
    let _one = ONE_AT_A_TIME.lock().await;
    let model = ScriptedModel::speaking(Api::Messages, demo_script()).await;
    Some(run_turn(&claude(&dir, &model), &model, args, |_| {}).await)
}

fn offered(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

/// The `tool_result` blocks of a request's last message.
fn tool_results(request: &Value) -> Vec<Value> {
    let last = request["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    last["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .cloned()
        .collect()
}

/// A read-only tool, asked about all the same, called and quoted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_calls_a_tool_and_quotes_it() {
    let Some(turn) = claude_turn(&["--prompt", WEATHER]).await else {
        return;
    };
    let name = Runner::ClaudeCode.model_tool_name("demo", "get_weather");
    assert_eq!(name, "mcp__demo__get_weather");
    assert!(offered(&turn.requests[0]).contains(&name));
    assert_eq!(
        turn.lines("[host] the agent listed the tools ").len(),
        1,
        "{}",
        turn.stdout
    );
    turn.assert_has(&format!("[permission] {name}: allow"));
    turn.assert_has(r#"[host] tool call get_weather {"city":"Paris"}"#);
    assert_eq!(turn.requests.len(), 2, "one tool call, then the answer");
    let results = tool_results(&turn.requests[1]);
    assert_eq!(results[0]["content"][0]["text"], "Sunny and 21 °C in Paris");
    turn.assert_has("[agent] The tool said: Sunny and 21 °C in Paris");
    turn.assert_has("[turn] end_turn");
    turn.assert_has("[host] calls served: 1");
    assert_eq!(
        turn.bearer_seen,
        BearerSeen {
            command_line: true,
            environment: false,
            files: vec![]
        },
        "where the bearer showed up"
    );
    println!("{}", turn.stdout);
}

/// A refusal's reason reaches the model as an error result, and its answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_carries_a_refusal_to_the_model() {
    let Some(turn) = claude_turn(&["--prompt", NOTES]).await else {
        return;
    };
    turn.assert_has("[host] tool call delete_all_notes {}");
    let results = tool_results(&turn.requests[1]);
    assert_eq!(results[0]["is_error"], true, "{results:?}");
    assert_eq!(results[0]["content"], REFUSAL);
    turn.assert_has(&format!("[agent] The tool said: {REFUSAL}"));
    turn.assert_has("[host] calls served: 1");
}

/// Denied permission: no tool runs, and the model is told.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_denied_permission_reaches_no_tool() {
    let Some(turn) = claude_turn(&["--prompt", WEATHER, "--permission", "deny"]).await else {
        return;
    };
    turn.assert_has("[permission] mcp__demo__get_weather: reject");
    assert!(turn.lines("[host] tool call").is_empty(), "{}", turn.stdout);
    turn.assert_has("[host] calls served: 0");
    let results = tool_results(&turn.requests[1]);
    assert_eq!(results[0]["is_error"], true, "{results:?}");
}

/// The blocklist's timestamp is in the form Claude Code writes
/// (`Date.toISOString`).
#[test]
fn iso_8601_matches_javascript() {
    assert_eq!(iso_8601(0), "1970-01-01T00:00:00.000Z");
    // new Date(1796447599000).toISOString()
    assert_eq!(iso_8601(1_796_447_599), "2026-12-05T05:13:19.000Z");
    assert_eq!(iso_8601(951_782_400), "2000-02-29T00:00:00.000Z");
}
