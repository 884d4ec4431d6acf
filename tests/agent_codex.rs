//! Codex, through its ACP adapter (`@agentclientprotocol/codex-acp` 2.6.0,
//! pinned in `tests/acp-agent`: a TypeScript adapter that drives
//! `codex app-server` from `@openai/codex` 0.166.0), driven by
//! `examples/acp_turn.rs` offline: `CODEX_PATH` names the native `codex`
//! of the platform package, and `CODEX_HOME` holds a `config.toml` whose
//! provider points at a scripted Responses API (`support::scripted_model`),
//! with update checks, analytics, feedback and telemetry export off, and
//! `features.plugins = false`: without it Codex tries GitHub twice (plugin
//! sync) and ChatGPT twice per run, and with it none of the four.
//! (`features.remote_control` is a removed flag in 0.166: set alone, it
//! stopped none of them.)
//!
//! What Codex does that an embedder must know, checked here:
//!
//! - The model sees MCP tools in a namespace `mcp__SERVER`
//!   (`Runner::Codex`); the ACP tool call is titled `mcp.SERVER.TOOL`, of
//!   kind `execute`.
//! - In its default mode ("Auto review"), a tool without `readOnlyHint`
//!   goes through a **guardian review**: a model request whose answer must
//!   match a JSON schema (`outcome` allow or deny), shown in ACP as a tool
//!   call of kind `think`; a denied (or unreadable) review means the call is
//!   not made. A `readOnlyHint` tool skips it. In its "Workspace access"
//!   mode (`INITIAL_AGENT_MODE=workspace-write`), the caller's ACP
//!   permission policy decides instead.
//! - It speaks MCP 2025-06-18 with an `Mcp-Session-Id`, and `DELETE`s its
//!   MCP session when it exits, which ends that MCP session only.
//! - It never re-lists on `notifications/tools/list_changed`, so a tool
//!   added mid-turn is not offered.
//!
//! See `support::agents` for the environment and the skip rule.
#![cfg(target_os = "linux")]

mod support;

use std::path::{Path, PathBuf};

use embacle_tool_host::agent::Runner;
use serde_json::Value;
use support::agents::*;
use support::deadlines::*;
use support::mcp_proxy::McpProxy;
use support::scripted_model::{Api, Review, ScriptedModel};

/// Who decides whether an unannotated MCP call is made.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// The adapter's default, "Auto review": the guardian, a model request.
    Default,
    /// "Workspace access": the ACP client, per call.
    AskTheCaller,
}

/// The native `codex` of this platform's `@openai/codex` package
/// (`@openai/codex-linux-x64` and the like: `vendor/TARGET/bin/codex`).
fn native_codex(dir: &Path) -> PathBuf {
    let packages = dir.join("node_modules").join("@openai");
    let vendors = std::fs::read_dir(&packages)
        .unwrap()
        .filter_map(|entry| entry.ok().map(|e| e.path().join("vendor")))
        .filter_map(|vendor| std::fs::read_dir(vendor).ok())
        .flatten()
        .filter_map(|target| target.ok().map(|t| t.path().join("bin").join("codex")));
    vendors
        .into_iter()
        .find(|binary| binary.is_file())
        .expect("npm installed this platform's codex package")
}

/// Codex through its adapter, offline, with `model` as its API.
fn codex(dir: &Path, model: &ScriptedModel, mode: Mode) -> Agent {
    codex_with(dir, model, mode, OFF_CATALOG_MODEL)
}

/// A model outside Codex's catalog: Codex runs it with fallback metadata
/// (and says so in the turn), without `tool_search`, so the MCP namespace
/// is offered to the model directly.
const OFF_CATALOG_MODEL: &str = "gpt-5.4-mini";

/// A model of Codex's catalog: Codex defers MCP tools behind its hosted
/// `tool_search`, which this scripted model does not speak.
const CATALOG_MODEL: &str = "gpt-5.5";

/// [`codex`], asking for the model `model_name`.
fn codex_with(dir: &Path, model: &ScriptedModel, mode: Mode, model_name: &str) -> Agent {
    let adapter = dir.join("node_modules").join(".bin").join("codex-acp");
    let agent = Agent::new(vec![adapter.into_os_string()]).env("CODEX_PATH", native_codex(dir));
    let codex_home = agent.home.path().join("codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    let config = format!(
        r#"model = "{model_name}"
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

[features]
plugins = false

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
    let agent = match mode {
        Mode::Default => agent,
        Mode::AskTheCaller => agent.env("INITIAL_AGENT_MODE", "workspace-write"),
    };
    agent
        .env("CODEX_HOME", codex_home)
        .env("SCRIPTED_API_KEY", "sk-scripted")
        .env("RUST_LOG", "warn")
}

/// One run of `acp_turn` with Codex; `None` when the test is skipped.
async fn codex_turn(mode: Mode, review: Review, args: &[&str]) -> Option<Turn> {
    let dir = agents_dir().await?;
    let _one = ONE_AT_A_TIME.lock().await;
    let model = ScriptedModel::speaking(Api::Responses, demo_script())
        .await
        .reviewing(review);
    Some(run_turn(&codex(&dir, &model, mode), &model, args, |_| {}).await)
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

/// The text of a request's last `function_call_output`.
fn last_output(request: &Value) -> String {
    let items = request["input"].as_array().unwrap();
    let output = items
        .iter()
        .rev()
        .find(|i| i["type"] == "function_call_output")
        .expect("a function_call_output");
    match &output["output"] {
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        other => other.as_str().unwrap_or_default().to_owned(),
    }
}

/// A read-only tool runs without review or approval, and is quoted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_calls_a_tool_and_quotes_it() {
    let Some(turn) = codex_turn(Mode::Default, Review::Deny, &["--prompt", WEATHER]).await else {
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
    assert!(turn.reviews.is_empty(), "read-only: no guardian review");
    assert!(
        turn.lines("[permission]").is_empty(),
        "read-only: not asked\n{}",
        turn.stdout
    );
    let title = turn.lines("[tool call] mcp.demo.get_weather (execute, ");
    assert_eq!(title.len(), 1, "{}", turn.stdout);
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
    observe_package("Codex", "@agentclientprotocol/codex-acp");
    observe_meta("Codex", &turn, "get_weather");
    observe_package("Codex", "@openai/codex");
    observe(
        "Codex",
        "model sees",
        "`get_weather` in namespace `mcp__demo`",
    );
    observe("Codex", "permission flow", "with `readOnlyHint`: none");
    observe("Codex", "the bearer", "kept in memory");
    observe(
        "Codex",
        "outbound attempts",
        "none, with `features.plugins = false`",
    );
    println!("{}", turn.stdout);
}

/// An unannotated tool goes through the guardian review (a model request,
/// shown as a `think` tool call); approved, it runs, and its refusal
/// reaches the model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_guardian_reviews_an_unannotated_tool() {
    let Some(turn) = codex_turn(Mode::Default, Review::Allow, &["--prompt", NOTES]).await else {
        return;
    };
    assert_eq!(turn.reviews.len(), 1, "{}", turn.stdout);
    assert_eq!(turn.lines("[tool call] Guardian Review (think, ").len(), 1);
    assert!(turn.lines("[permission]").is_empty(), "{}", turn.stdout);
    turn.assert_has("[host] tool call delete_all_notes {}");
    assert!(last_output(turn.requests.last().unwrap()).contains(REFUSAL));
    turn.assert_has(&format!("[agent] The tool said: {REFUSAL}"));
    turn.assert_has("[host] calls served: 1");
    observe(
        "Codex",
        "permission flow",
        "tools without `readOnlyHint`: a guardian review by the model, shown as a `think` tool call",
    );
}

/// A guardian denial: no tool runs, and the model is told.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_guardian_denial_reaches_no_tool() {
    let Some(turn) = codex_turn(Mode::Default, Review::Deny, &["--prompt", NOTES]).await else {
        return;
    };
    assert_eq!(turn.reviews.len(), 1, "{}", turn.stdout);
    assert!(turn.lines("[host] tool call").is_empty(), "{}", turn.stdout);
    turn.assert_has("[host] calls served: 0");
    assert!(!last_output(turn.requests.last().unwrap()).contains(REFUSAL));
}

/// In "Workspace access" mode the caller's ACP permission policy decides
/// an unannotated call, and no guardian is asked: allowed, it runs;
/// denied, no tool runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_asks_the_caller_in_workspace_mode() {
    let Some(turn) = codex_turn(Mode::AskTheCaller, Review::Deny, &["--prompt", NOTES]).await
    else {
        return;
    };
    assert_eq!(turn.lines("[permission]").len(), 1, "{}", turn.stdout);
    assert!(turn.reviews.is_empty(), "no guardian in this mode");
    turn.assert_has("[host] tool call delete_all_notes {}");
    turn.assert_has("[host] calls served: 1");

    let args = ["--prompt", NOTES, "--permission", "deny"];
    let Some(turn) = codex_turn(Mode::AskTheCaller, Review::Allow, &args).await else {
        return;
    };
    assert_eq!(turn.lines("[permission]").len(), 1, "{}", turn.stdout);
    assert!(turn.lines("[host] tool call").is_empty(), "{}", turn.stdout);
    turn.assert_has("[host] calls served: 0");
    observe(
        "Codex",
        "permission flow",
        "in \"Workspace access\" mode (`INITIAL_AGENT_MODE=workspace-write`), one ACP `session/request_permission` per call",
    );
}

/// Codex's MCP client: 2025-06-18, an MCP session, the GET stream; it never
/// re-lists, so a tool added mid-turn is not offered; at exit it DELETEs
/// its MCP session, which ends that session only: the bearer stays live
/// for the guard's other clients until the guard drops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_speaks_2025_and_ends_only_its_own_mcp_session() {
    let Some(dir) = agents_dir().await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    let model = ScriptedModel::speaking(Api::Responses, demo_script()).await;
    let proxy = McpProxy::recording().await;
    let agent = codex(&dir, &model, Mode::Default);
    let args = ["--prompt", VAULT, "--ping-after-exit"];
    let turn = run_turn_through(&proxy, &agent, &model, &args).await;
    turn.assert_has("[host] tool call unlock {}");
    turn.assert_has("[agent] The scripted tool secret_echo was not offered.");
    turn.assert_has("[host] calls served: 1");
    let seen = proxy.requests();
    let methods: Vec<&str> = seen.iter().map(|s| s.method.as_str()).collect();
    assert_eq!(methods.first(), Some(&"initialize"), "{methods:?}");
    assert!(methods.contains(&"GET"), "the stream: {methods:?}");
    assert_eq!(methods.last(), Some(&"DELETE"), "at exit: {methods:?}");
    let lists = methods.iter().filter(|m| **m == "tools/list").count();
    assert_eq!(lists, 1, "never re-listed: {methods:?}");
    let versions: Vec<_> = seen.iter().filter_map(|s| s.version.as_deref()).collect();
    assert!(
        !versions.is_empty() && versions.iter().all(|v| *v == "2025-06-18"),
        "{seen:?}"
    );
    assert!(
        seen.iter().all(|s| s
            .user_agent
            .as_deref()
            .is_some_and(|ua| ua.starts_with("codex-mcp-client/0.166.0"))),
        "{seen:?}"
    );
    // After Codex's DELETE, the bearer still reaches the host.
    turn.assert_has("[host] after the agent exited, the bearer still answers: ping 200");
    observe("Codex", "MCP it speaks", "2025-06-18 (`initialize`, `Mcp-Session-Id`, the GET stream; `DELETE` of its MCP session at exit)");
    observe(
        "Codex",
        "tool added mid-turn",
        "not offered (never re-lists)",
    );
}

/// With a model of its catalog, Codex defers MCP tools behind its hosted
/// `tool_search`: the first request offers that tool and no MCP namespace.
/// (The other tests use a model outside the catalog, which Codex offers
/// the namespace directly.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_defers_mcp_tools_with_a_catalog_model() {
    let Some(dir) = agents_dir().await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    let model = ScriptedModel::speaking(Api::Responses, demo_script()).await;
    let agent = codex_with(&dir, &model, Mode::Default, CATALOG_MODEL);
    let turn = run_turn(&agent, &model, &["--prompt", WEATHER], |_| {}).await;
    let tools = turn.requests[0]["tools"].as_array().unwrap();
    assert!(
        tools.iter().any(|t| t["type"] == "tool_search"),
        "{tools:?}"
    );
    assert!(namespaced(&turn.requests[0]).is_empty(), "{tools:?}");
    turn.assert_has("[host] calls served: 0");
    observe(
        "Codex",
        "tool search",
        "with a model of its catalog (`gpt-5.5`)",
    );
    observe(
        "Codex",
        "tool search",
        "with another model, every tool offered",
    );
}

/// One agent process, two ACP sessions in a row, each with a fresh
/// `ToolSession`: each lists and calls the tool with its own bearer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_serves_two_sessions_in_a_row() {
    let Some(turn) = codex_turn(
        Mode::Default,
        Review::Allow,
        &["--prompt", WEATHER, "--sessions", "2"],
    )
    .await
    else {
        return;
    };
    assert_two_sessions(&turn, "Codex");
    println!("{}", turn.stdout);
}

/// Codex's deadline for one tool call, and whether progress extends it,
/// measured (`scripts/agent-deadlines`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "runs for minutes: scripts/agent-deadlines measures it"]
async fn codex_deadline_for_a_long_tool() {
    let Some(dir) = agents_dir().await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    measure_deadline(
        "Codex",
        Api::Responses,
        |model| codex(&dir, model, Mode::Default),
        &[],
    )
    .await;
}
