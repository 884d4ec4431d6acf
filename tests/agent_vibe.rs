//! Mistral Vibe (`vibe-acp`, PyPI `mistral-vibe`, pinned in
//! `tests/acp-agent-python`), driven by `examples/acp_turn.rs` offline: its
//! config (`$HOME/.vibe/config.toml`) names one OpenAI-style provider, the
//! scripted model, and turns off telemetry, update checks and titles.
//!
//! Vibe takes an `http` MCP server in `session/new` without declaring
//! `mcpCapabilities.http` in `initialize`, so `McpServers::for_acp_agent`
//! refuses it and the named override serves it
//! (`for_acp_agent_taking_http` with `agent::MISTRAL_VIBE`, `acp_turn
//! --agent-takes-http`): both are checked here, with the real agent.
//!
//! What else Vibe does that an embedder must know, checked here: its model
//! never sees an MCP tool, only `run_typescript`, whose code calls
//! `tools.mcp_SERVER.TOOL(args)`; it asks ACP permission for every MCP
//! call; its MCP client (the Python SDK) opens an MCP session per
//! operation (2025-11-25: `initialize`, the GET stream, then `DELETE`),
//! and never re-lists on the notice, so a tool added mid-session is never
//! callable. See `support::agents` for the environment and the skip rule.
#![cfg(target_os = "linux")]

mod support;

use std::path::{Path, PathBuf};

use embacle_tool_host::agent::MISTRAL_VIBE;
use serde_json::Value;
use support::agents::*;
use support::deadlines::*;
use support::mcp_proxy::McpProxy;
use support::scripted_model::{Api, ScriptedModel};

/// Vibe, offline, with `model` as its only provider.
fn vibe(venv: &Path, model: &ScriptedModel) -> Agent {
    let agent = Agent::new(vec![venv.join("bin").join("vibe-acp").into_os_string()]);
    let settings = agent.home.path().join(".vibe");
    std::fs::create_dir_all(&settings).unwrap();
    let config = format!(
        r#"active_model = "scripted-model"
enable_telemetry = false
enable_update_checks = false
enable_auto_update = false

[session_logging]
generate_titles = false

[[providers]]
name = "scripted"
api_base = "{}"
api_key_env_var = "SCRIPTED_API_KEY"
api_style = "openai"
backend = "generic"

[[models]]
name = "scripted-model"
provider = "scripted"
alias = "scripted-model"
"#,
        model.base_url()
    );
    std::fs::write(settings.join("config.toml"), config).unwrap();
    agent.env("SCRIPTED_API_KEY", "scripted-key")
}

async fn venv() -> Option<PathBuf> {
    python_agent("vibe").await
}

/// The override that serves Vibe, then `args`.
fn with_override<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let mut all = vec!["--agent-takes-http", MISTRAL_VIBE];
    all.extend_from_slice(args);
    all
}

/// One run of `acp_turn` with Vibe, served through the override; `None`
/// when the test is skipped.
async fn vibe_turn(args: &[&str]) -> Option<Turn> {
    let venv = venv().await?;
    let _one = ONE_AT_A_TIME.lock().await;
    let model = ScriptedModel::start(demo_script()).await;
    Some(run_turn(&vibe(&venv, &model), &model, &with_override(args), |_| {}).await)
}

/// The code the model ran in its `n`th request's last tool call, and the
/// tool message that answered it in the next request.
fn code_and_result(turn: &Turn, n: usize) -> (String, String) {
    let messages = turn.requests[n + 1]["messages"].as_array().unwrap();
    let call = messages
        .iter()
        .rev()
        .find_map(|m| m["tool_calls"].as_array()?.last().cloned())
        .expect("a tool call");
    assert_eq!(call["function"]["name"], "run_typescript");
    let arguments: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    let result = messages.iter().rev().find(|m| m["role"] == "tool").unwrap();
    let text = result["content"].as_str().unwrap().to_owned();
    (arguments["code"].as_str().unwrap().to_owned(), text)
}

/// Served through the override: the tool, asked permission for, called
/// through the model's code, and quoted; the MCP session it opened for
/// the call, ended with `DELETE`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vibe_is_served_through_the_override_and_calls_a_tool() {
    let Some(venv) = venv().await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    let model = ScriptedModel::start(demo_script()).await;
    let proxy = McpProxy::recording().await;
    let args = with_override(&["--prompt", WEATHER]);
    let turn = run_turn_through(&proxy, &vibe(&venv, &model), &model, &args).await;
    let offered = chat_offered(&turn.requests[0]);
    assert!(
        offered.contains(&"run_typescript".to_owned()),
        "{offered:?}"
    );
    assert!(
        !offered.iter().any(|t| t.contains("get_weather")),
        "{offered:?}"
    );
    let (code, result) = code_and_result(&turn, 0);
    assert!(code.contains("tools.mcp_demo.get_weather("), "{code}");
    assert_eq!(result, r#""Sunny and 21 °C in Paris""#);
    assert_eq!(
        turn.lines("[permission] mcp_demo.get_weather").len(),
        1,
        "{}",
        turn.stdout
    );
    turn.assert_has(r#"[host] tool call get_weather {"city":"Paris"}"#);
    turn.assert_has("[agent] The tool said: Sunny and 21 °C in Paris");
    turn.assert_has("[turn] end_turn");
    turn.assert_has("[host] calls served: 1");
    assert_eq!(
        turn.bearer_seen,
        BearerSeen::default(),
        "where the bearer showed up"
    );
    let seen = proxy.seen();
    let count = |method: &str| seen.iter().filter(|m| *m == method).count();
    assert!(
        count("initialize") >= 2,
        "an MCP session per operation: {seen:?}"
    );
    assert_eq!(
        count("initialize"),
        count("DELETE"),
        "each one ended: {seen:?}"
    );
    assert!(!seen.iter().any(|m| m == "server/discover"), "{seen:?}");
    observe_python_package("Vibe", &venv, "mistral-vibe");
    observe_meta("Vibe", &turn, "get_weather");
    observe(
        "Vibe",
        "MCP it speaks",
        "2025-11-25, an MCP session per operation",
    );
    observe("Vibe", "model sees", "`run_typescript`");
    observe("Vibe", "tool search", "none");
    observe("Vibe", "the bearer", "kept in memory");
    observe("Vibe", "outbound attempts", "none");
    println!("{}", turn.stdout);
}

/// Without the override, the checked entry refuses Vibe, saying what it
/// declared and what it is called: no entry it might drop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vibe_is_refused_without_the_override() {
    let Some(venv) = venv().await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    let model = ScriptedModel::start(demo_script()).await;
    let failed = run_failing_turn(&vibe(&venv, &model), &["--prompt", WEATHER]).await;
    let refusal = format!(
        "the agent {MISTRAL_VIBE:?} cannot take an http MCP server (no http MCP transport)"
    );
    assert!(failed.contains(&refusal), "{failed}");
    assert!(model.requests().is_empty(), "no turn ran");
    observe("Vibe", "must set", "`for_acp_agent_taking_http`");
}

/// A refusal's reason reaches the model, inside the code tool's error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vibe_carries_a_refusal_to_the_model() {
    let Some(turn) = vibe_turn(&["--prompt", NOTES]).await else {
        return;
    };
    assert_eq!(turn.lines("[host] tool call delete_all_notes ").len(), 1);
    let (_, result) = code_and_result(&turn, 0);
    assert!(result.contains(REFUSAL), "{result}");
    turn.assert_has("[host] calls served: 1");
}

/// Denied permission: no tool runs, and the model's code is told so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vibe_denied_permission_reaches_no_tool() {
    let Some(turn) = vibe_turn(&["--prompt", WEATHER, "--permission", "deny"]).await else {
        return;
    };
    assert_eq!(
        turn.lines("[permission] mcp_demo.get_weather").len(),
        1,
        "{}",
        turn.stdout
    );
    assert!(turn.lines("[host] tool call").is_empty(), "{}", turn.stdout);
    let (_, result) = code_and_result(&turn, 0);
    assert!(result.contains("tool_denied"), "{result}");
    turn.assert_has("[host] calls served: 0");
    observe(
        "Vibe",
        "permission flow",
        "ACP permission for every MCP call",
    );
}

/// A tool added mid-turn is never callable: Vibe does not re-list on the
/// notice, and its code finds no such function.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vibe_never_sees_a_tool_added_mid_turn() {
    let Some(turn) = vibe_turn(&["--prompt", VAULT]).await else {
        return;
    };
    turn.assert_has("[host] tool call unlock {}");
    let (code, result) = code_and_result(&turn, 1);
    assert!(code.contains("tools.mcp_demo.secret_echo("), "{code}");
    assert!(result.contains("not a function"), "{result}");
    assert!(
        turn.lines("[host] tool call secret_echo").is_empty(),
        "{}",
        turn.stdout
    );
    turn.assert_has("[host] calls served: 1");
    observe(
        "Vibe",
        "tool added mid-turn",
        "never callable (never re-lists)",
    );
}

/// One agent process, two ACP sessions in a row, each with a fresh
/// `ToolSession`: each calls the tool with its own bearer (the second
/// lists only after its call: Vibe caches a server's tools by name, URL
/// and header names).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vibe_serves_two_sessions_in_a_row() {
    let Some(turn) = vibe_turn(&["--prompt", WEATHER, "--sessions", "2"]).await else {
        return;
    };
    assert_two_sessions(&turn, "Vibe");
    println!("{}", turn.stdout);
}

/// Vibe's deadline for one tool call, and whether progress extends it,
/// measured (`scripts/agent-deadlines`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "runs for minutes: scripts/agent-deadlines measures it"]
async fn vibe_deadline_for_a_long_tool() {
    let Some(dir) = venv().await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    measure_deadline(
        "Vibe",
        Api::ChatCompletions,
        |model| vibe(&dir, model),
        &with_override(&[]),
    )
    .await;
}
