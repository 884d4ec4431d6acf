//! Claude, through its ACP adapter (`@agentclientprotocol/claude-agent-acp`
//! 0.101.0, pinned in `tests/acp-agent`, running Claude Code 2.1.318, a
//! native binary from an optional package), driven by
//! `examples/acp_turn.rs` offline: `ANTHROPIC_BASE_URL` points at a
//! scripted Messages API (`support::scripted_model`), and telemetry,
//! updates, nonessential traffic and prompt suggestions are off, so the
//! proxy sink sees nothing.
//!
//! What Claude does that an embedder must know, checked here:
//!
//! - MCP tools reach the model as `mcp__SERVER__TOOL`
//!   (`Runner::ClaudeCode`), **deferred behind `ToolSearch`**: the model
//!   sees their names only, and must call `ToolSearch` with
//!   `select:NAME` to load a tool's schema before calling it.
//! - Its default permission mode is **auto**: no ACP
//!   `session/request_permission`; a classifier request to the model
//!   reviews each MCP call, and one it blocks is not made. With
//!   `permissions.defaultMode: "default"` in its `settings.json`, the
//!   caller's ACP permission policy decides each call instead.
//! - It speaks MCP **2026-07-28** (`server/discover`, then
//!   `subscriptions/listen` because the host advertises `listChanged`),
//!   re-lists on a change notice, and calls a tool added mid-turn in the
//!   same turn.
//! - The bearer is on the `claude` process's command line, unless the
//!   entry reads `Bearer ${NAME}` with `NAME` in the session's environment
//!   (`McpServers::with_bearer_from_env`), which Claude Code expands.
//!
//! See `support::agents` for the environment and the skip rule.
#![cfg(target_os = "linux")]

mod support;

use std::path::Path;

use embacle_tool_host::agent::Runner;
use serde_json::{json, Value};
use support::agents::*;
use support::deadlines::*;
use support::mcp_proxy::McpProxy;
use support::scripted_model::{Api, Review, ScriptedModel};

/// Who decides whether an MCP call is made.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Claude Code's default: its auto-mode classifier, a model request.
    Auto,
    /// `permissions.defaultMode: "default"`: the ACP client, per call.
    AskTheCaller,
}

/// Claude through its adapter, offline, with `model` as its API.
fn claude(dir: &Path, model: &ScriptedModel, mode: Mode) -> Agent {
    let adapter = dir
        .join("node_modules")
        .join(".bin")
        .join("claude-agent-acp");
    let agent = Agent::new(vec![adapter.into_os_string()]);
    let config = agent.home.path().join("claude-config");
    std::fs::create_dir_all(&config).unwrap();
    if mode == Mode::AskTheCaller {
        let settings = json!({"permissions": {"defaultMode": "default"}});
        std::fs::write(config.join("settings.json"), settings.to_string()).unwrap();
    }
    agent
        .env("CLAUDE_CONFIG_DIR", config)
        .env("ANTHROPIC_BASE_URL", model.base_url())
        .env("ANTHROPIC_API_KEY", "sk-ant-scripted")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("CLAUDE_CODE_ENABLE_PROMPT_SUGGESTION", "false")
}

/// One run of `acp_turn` with Claude; `None` when the test is skipped.
async fn claude_turn(mode: Mode, review: Review, args: &[&str]) -> Option<Turn> {
    let dir = agents_dir().await?;
    let _one = ONE_AT_A_TIME.lock().await;
    let model = ScriptedModel::speaking(Api::Messages, demo_script())
        .await
        .reviewing(review);
    Some(run_turn(&claude(&dir, &model, mode), &model, args, |_| {}).await)
}

/// The tools a request offers callable now: not deferred, or loaded.
fn callable(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["defer_loading"] != true)
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

/// The `tool_result` blocks of a request's last message, but for those of
/// `ToolSearch` (which load tools: `tool_reference` blocks).
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
        .filter(|b| b["type"] == "tool_result" && !b.to_string().contains("\"tool_reference\""))
        .cloned()
        .collect()
}

/// The `ToolSearch` calls the model made in a request's history.
fn searches(request: &Value) -> Vec<Value> {
    request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "tool_use" && b["name"] == "ToolSearch")
        .map(|b| b["input"].clone())
        .collect()
}

/// A read-only tool, in Claude's default (auto) mode: deferred, loaded with
/// `ToolSearch`, reviewed by the classifier, called and quoted; no ACP
/// permission request; the bearer on the command line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_calls_a_tool_and_quotes_it() {
    let Some(turn) = claude_turn(Mode::Auto, Review::Allow, &["--prompt", WEATHER]).await else {
        return;
    };
    let name = Runner::ClaudeCode.model_tool_name("demo", "get_weather");
    assert_eq!(name, "mcp__demo__get_weather");
    assert_eq!(
        turn.requests.len(),
        3,
        "search, call, answer:\n{}",
        turn.stdout
    );
    let first = &turn.requests[0];
    assert!(callable(first).contains(&"ToolSearch".to_owned()));
    assert!(!callable(first).contains(&name), "deferred, not offered");
    assert!(first.to_string().contains(&name), "named to the model");
    assert_eq!(
        searches(&turn.requests[1]),
        [json!({"query": format!("select:{name}"), "max_results": 5})]
    );
    let loaded = &turn.requests[1]["tools"];
    assert!(
        loaded.to_string().contains(&format!("\"{name}\"")),
        "loaded"
    );
    assert_eq!(turn.reviews.len(), 1, "the classifier reviewed the call");
    assert!(turn.reviews[0].to_string().contains(&name));
    assert!(turn.lines("[permission]").is_empty(), "{}", turn.stdout);
    turn.assert_has(r#"[host] tool call get_weather {"city":"Paris"}"#);
    let results = tool_results(&turn.requests[2]);
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
    observe_package("Claude", "@agentclientprotocol/claude-agent-acp");
    observe_meta("Claude", &turn, "get_weather");
    observe("Claude", "model sees", &format!("`{name}`"));
    observe("Claude", "tool search", "`ToolSearch` with `select:NAME`");
    observe(
        "Claude",
        "permission flow",
        "auto: one classifier request to the model per call",
    );
    observe("Claude", "the bearer", "**on the CLI's command line**");
    observe("Claude", "outbound attempts", "none");
    println!("{}", turn.stdout);
}

/// A refusal's reason reaches the model as an error result, and its answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_carries_a_refusal_to_the_model() {
    let Some(turn) = claude_turn(Mode::Auto, Review::Allow, &["--prompt", NOTES]).await else {
        return;
    };
    turn.assert_has("[host] tool call delete_all_notes {}");
    let results = tool_results(turn.requests.last().unwrap());
    assert_eq!(results[0]["is_error"], true, "{results:?}");
    assert_eq!(results[0]["content"], REFUSAL);
    turn.assert_has(&format!("[agent] The tool said: {REFUSAL}"));
    turn.assert_has("[host] calls served: 1");
}

/// Auto mode: a call the classifier blocks is not made, and the model is
/// told.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_classifier_denial_reaches_no_tool() {
    let Some(turn) = claude_turn(Mode::Auto, Review::Deny, &["--prompt", WEATHER]).await else {
        return;
    };
    assert!(!turn.reviews.is_empty(), "the classifier was asked");
    assert!(turn.lines("[host] tool call").is_empty(), "{}", turn.stdout);
    turn.assert_has("[host] calls served: 0");
    let results = tool_results(turn.requests.last().unwrap());
    assert_eq!(results[0]["is_error"], true, "{results:?}");
}

/// With `defaultMode: "default"`, the caller's ACP permission policy
/// decides each call, and no classifier is asked: allowed, it runs;
/// denied, no tool runs and the model is told.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_asks_the_caller_in_default_mode() {
    let name = Runner::ClaudeCode.model_tool_name("demo", "get_weather");
    let Some(turn) = claude_turn(Mode::AskTheCaller, Review::Deny, &["--prompt", WEATHER]).await
    else {
        return;
    };
    let allowed = turn.lines(&format!("[permission] {name}: allow"));
    assert_eq!(allowed.len(), 1, "{}", turn.stdout);
    assert!(turn.reviews.is_empty(), "no classifier in default mode");
    turn.assert_has(r#"[host] tool call get_weather {"city":"Paris"}"#);
    turn.assert_has("[host] calls served: 1");

    let args = ["--prompt", WEATHER, "--permission", "deny"];
    let Some(turn) = claude_turn(Mode::AskTheCaller, Review::Allow, &args).await else {
        return;
    };
    let rejected = turn.lines(&format!("[permission] {name}: reject"));
    assert_eq!(rejected.len(), 1, "{}", turn.stdout);
    assert!(turn.lines("[host] tool call").is_empty(), "{}", turn.stdout);
    turn.assert_has("[host] calls served: 0");
    let results = tool_results(turn.requests.last().unwrap());
    assert_eq!(results[0]["is_error"], true, "{results:?}");
    observe(
        "Claude",
        "permission flow",
        "with `defaultMode: \"default\"`, one ACP `session/request_permission` per call",
    );
}

/// A tool added mid-turn is called in the same turn, on the 2026-07-28
/// path: `server/discover`, `subscriptions/listen`, a re-list after the
/// change notice, `ToolSearch` for the new tool, then the call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_calls_a_tool_added_mid_turn() {
    let Some(dir) = agents_dir().await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    let model = ScriptedModel::speaking(Api::Messages, demo_script()).await;
    let proxy = McpProxy::recording().await;
    let agent = claude(&dir, &model, Mode::Auto);
    let turn = run_turn_through(&proxy, &agent, &model, &["--prompt", VAULT]).await;
    turn.assert_has("[host] tool call unlock {}");
    turn.assert_has(r#"[host] tool call secret_echo {"text":"open sesame"}"#);
    turn.assert_has("[agent] The tool said: From the vault: open sesame");
    turn.assert_has("[host] calls served: 2");
    let seen = proxy.requests();
    let methods: Vec<&str> = seen.iter().map(|s| s.method.as_str()).collect();
    assert_eq!(methods.first(), Some(&"server/discover"), "{methods:?}");
    assert!(methods.contains(&"subscriptions/listen"), "{methods:?}");
    assert!(!methods.contains(&"initialize"), "{methods:?}");
    let lists = methods.iter().filter(|m| **m == "tools/list").count();
    assert!(lists >= 2, "re-listed after the notice: {methods:?}");
    assert!(
        seen.iter()
            .filter(|s| s.method != "GET")
            .all(|s| s.version.as_deref() == Some("2026-07-28")),
        "{seen:?}"
    );
    let secret = Runner::ClaudeCode.model_tool_name("demo", "secret_echo");
    let last = turn.requests.last().unwrap();
    assert!(
        searches(last).contains(&json!({"query": format!("select:{secret}"), "max_results": 5})),
        "the new tool was loaded with ToolSearch"
    );
    observe(
        "Claude",
        "MCP it speaks",
        "2026-07-28 (`server/discover`, `subscriptions/listen`)",
    );
    observe(
        "Claude",
        "tool added mid-turn",
        "re-lists; called in the same turn",
    );
}

/// `Bearer ${NAME}`, with the bearer in the session's environment
/// (`_meta.claudeCode.options.env`): every request authenticates, and the
/// bearer is on no process's command line, only in an environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_keeps_the_bearer_off_the_command_line() {
    let args = ["--prompt", WEATHER, "--bearer-in-env", "EMBACLE_MCP_BEARER"];
    let Some(turn) = claude_turn(Mode::Auto, Review::Allow, &args).await else {
        return;
    };
    turn.assert_has(
        "[host] the entry's header reads Bearer ${EMBACLE_MCP_BEARER}; EMBACLE_MCP_BEARER is in session/new's _meta",
    );
    turn.assert_has(r#"[host] tool call get_weather {"city":"Paris"}"#);
    turn.assert_has("[host] calls served: 1");
    assert_eq!(
        turn.bearer_seen,
        BearerSeen {
            command_line: false,
            environment: true,
            files: vec![]
        },
        "where the bearer showed up"
    );
    observe(
        "Claude",
        "the bearer",
        "with `Bearer ${NAME}`: in its environment only",
    );
}

/// One agent process, two ACP sessions in a row, each with a fresh
/// `ToolSession`: each lists and calls the tool with its own bearer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_serves_two_sessions_in_a_row() {
    let Some(turn) = claude_turn(
        Mode::Auto,
        Review::Allow,
        &["--prompt", WEATHER, "--sessions", "2"],
    )
    .await
    else {
        return;
    };
    assert_two_sessions(&turn, "Claude");
    println!("{}", turn.stdout);
}

/// Claude's deadline for one tool call, and whether progress extends it,
/// measured (`scripts/agent-deadlines`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "runs for minutes: scripts/agent-deadlines measures it"]
async fn claude_deadline_for_a_long_tool() {
    let Some(dir) = agents_dir().await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    measure_deadline(
        "Claude",
        Api::Messages,
        |model| claude(&dir, model, Mode::Auto),
        &[],
    )
    .await;
}

/// Claude Code stops a tool call that has sent nothing for its idle
/// timeout (`CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT`, 5 minutes by default, read
/// every 30 s), and each progress notification starts it again: with it
/// at 10 s, a tool of 45 s that reports progress every 2 s is done, and the
/// same tool without progress is stopped before its time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_progress_keeps_a_long_tool_alive() {
    let Some(dir) = agents_dir().await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    let make = |model: &ScriptedModel| {
        claude(&dir, model, Mode::Auto).env("CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT", "10000")
    };
    assert_progress_outlives_deadline(Api::Messages, 45, make, &[]).await;
    observe("Claude", "progress extends the deadline", "yes");
    observe(
        "Claude",
        "raise the deadline",
        "`CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT`",
    );
}
