//! Codex, through Zed's ACP adapter (`codex-acp`, pinned in
//! `tests/acp-agent`, which carries the native codex build), driven by
//! `examples/acp_turn.rs` offline: `CODEX_HOME` holds a `config.toml` whose
//! provider points at a scripted Responses API (`support::scripted_model`),
//! with update checks, analytics, feedback and telemetry export off.
//!
//! The native binary is run directly: the npm launcher spawns it as a
//! child and does not pass signals on, so killing the launcher would leave
//! Codex running.
//!
//! What Codex does that an embedder must know, checked here: it asks
//! approval only for tools without `readOnlyHint`; the model sees MCP
//! tools in a namespace `mcp__SERVER` (`Runner::Codex`); a refusal reaches
//! the model as the tool's output. It never re-lists on
//! `notifications/tools/list_changed`, so a tool added mid-turn is not
//! offered (the README's agent table says so). See `support::agents` for
//! the environment and the skip rule.
#![cfg(unix)]

mod support;

use std::path::{Path, PathBuf};

use embacle_tool_host::Runner;
use serde_json::Value;
use support::agents::*;
use support::scripted_model::{Api, ScriptedModel};

/// The native `codex-acp` of this platform's package.
fn native_codex_acp(dir: &Path) -> PathBuf {
    let packages = dir.join("node_modules").join("@zed-industries");
    std::fs::read_dir(&packages)
        .unwrap()
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .map(|package| package.join("bin").join("codex-acp"))
        .find(|binary| binary.is_file())
        .expect("npm installed this platform's codex-acp package")
}

/// Codex through its adapter, offline, with `model` as its API.
fn codex(dir: &Path, model: &ScriptedModel) -> Agent {
    let agent = Agent::new(vec![native_codex_acp(dir).into_os_string()]);
    let codex_home = agent.home.path().join("codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    // A built-in model name: an unknown one makes Codex say so in the turn.
    let config = format!(
        r#"model = "gpt-5.4-mini"
model_provider = "scripted"
check_for_update_on_startup = false

[model_providers.scripted]
name = "Scripted"
base_url = "{}"
wire_api = "responses"
env_key = "SCRIPTED_API_KEY"
requires_openai_auth = false
request_max_retries = 0
stream_max_retries = 0
supports_websockets = false

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"
trace_exporter = "none"
metrics_exporter = "none"
"#,
        model.base_url()
    );
    std::fs::write(codex_home.join("config.toml"), config).unwrap();
    agent
        .env("CODEX_HOME", codex_home)
        .env("SCRIPTED_API_KEY", "sk-scripted")
        .env("RUST_LOG", "warn")
}

/// One run of `acp_turn` with Codex; `None` when the test is skipped.
async fn codex_turn(args: &[&str]) -> Option<Turn> {
    let dir = agents_dir().await?;
    let _one = ONE_AT_A_TIME.lock().await;
    let model = ScriptedModel::speaking(Api::Responses, demo_script()).await;
    Some(run_turn(&codex(&dir, &model), &model, args, |_| {}).await)
}

/// The `namespace/tool` names of a request's namespaced tools.
fn namespaced(request: &Value) -> Vec<String> {
    let tools = request["tools"].as_array().into_iter().flatten();
    tools
        .filter(|t| t["type"] == "namespace")
        .flat_map(|ns| {
            let name = ns["name"].as_str().unwrap_or("").to_owned();
            let inner = ns["tools"].as_array().cloned().unwrap_or_default();
            inner
                .into_iter()
                .filter_map(move |t| Some(format!("{name}/{}", t["name"].as_str()?)))
        })
        .collect()
}

/// The output of a request's last `function_call_output`.
fn last_output(request: &Value) -> String {
    let items = request["input"].as_array().unwrap();
    let output = items
        .iter()
        .rev()
        .find(|i| i["type"] == "function_call_output");
    output.expect("a function_call_output")["output"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A read-only tool runs without approval, and is quoted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_calls_a_tool_and_quotes_it() {
    let Some(turn) = codex_turn(&["--prompt", WEATHER]).await else {
        return;
    };
    // Codex qualifies the tool as mcp__demo__get_weather, and shows it to
    // the model as get_weather in the namespace mcp__demo.
    assert_eq!(
        Runner::Codex.model_tool_name("demo", "get_weather"),
        "mcp__demo__get_weather"
    );
    let tools = namespaced(&turn.requests[0]);
    assert!(
        tools.contains(&"mcp__demo/get_weather".to_owned()),
        "{tools:?}"
    );
    assert_eq!(
        turn.lines("[host] the agent listed the tools ").len(),
        1,
        "{}",
        turn.stdout
    );
    assert!(
        turn.lines("[permission]").is_empty(),
        "read-only: not asked\n{}",
        turn.stdout
    );
    turn.assert_has(r#"[host] tool call get_weather {"city":"Paris"}"#);
    assert_eq!(turn.requests.len(), 2, "one tool call, then the answer");
    assert!(last_output(&turn.requests[1]).contains("Sunny and 21 °C in Paris"));
    turn.assert_has("[agent] The tool said: Sunny and 21 °C in Paris");
    turn.assert_has("[turn] end_turn");
    turn.assert_has("[host] calls served: 1");
    assert_eq!(
        turn.bearer_seen,
        BearerSeen::default(),
        "where the bearer showed up"
    );
    println!("{}", turn.stdout);
}

/// An unannotated tool is approved first; its refusal reaches the model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_carries_a_refusal_to_the_model() {
    let Some(turn) = codex_turn(&["--prompt", NOTES]).await else {
        return;
    };
    assert_eq!(turn.lines("[permission]").len(), 1, "{}", turn.stdout);
    turn.assert_has("[host] tool call delete_all_notes {}");
    assert!(last_output(&turn.requests[1]).contains(REFUSAL));
    turn.assert_has(&format!("[agent] The tool said: {REFUSAL}"));
    turn.assert_has("[host] calls served: 1");
}

/// Denied approval: no tool runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_denied_permission_reaches_no_tool() {
    let Some(turn) = codex_turn(&["--prompt", NOTES, "--permission", "deny"]).await else {
        return;
    };
    assert_eq!(turn.lines("[permission]").len(), 1, "{}", turn.stdout);
    assert!(turn.lines("[host] tool call").is_empty(), "{}", turn.stdout);
    turn.assert_has("[host] calls served: 0");
}
