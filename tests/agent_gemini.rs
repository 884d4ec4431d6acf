//! Gemini CLI (`gemini --acp`, pinned in `tests/acp-agent`), driven by
//! `examples/acp_turn.rs` offline: `GOOGLE_GEMINI_BASE_URL` points at a
//! scripted Gemini API (`support::scripted_model`), and its settings turn
//! off usage statistics (its only requests beyond the machine), telemetry,
//! auto-update and the IDE link.
//!
//! What Gemini CLI does that an embedder must know, checked here: in a
//! workspace it does not trust it drops every ACP MCP server without a
//! word (`ToolSession::first_listing` is how the caller finds out); it asks
//! permission for every MCP call; the model sees `mcp_SERVER_TOOL`
//! (`Runner::GeminiCli`); it adds `wait_for_previous` to every tool's
//! schema and may send it; it never sends `MCP-Protocol-Version`, so its
//! requests are rendered in the version its MCP session negotiated; it
//! re-lists on `notifications/tools/list_changed`, and calls a tool added
//! mid-turn in the same turn. See `support::agents`
//! for the environment and the skip rule.
#![cfg(target_os = "linux")]

mod support;

use std::path::Path;

use embacle_tool_host::agent::Runner;
use serde_json::{json, Value};
use support::agents::*;
use support::deadlines::*;
use support::scripted_model::{Api, ScriptedModel};

/// Gemini CLI, offline, with `model` as its API; `trusted` sets
/// `GEMINI_CLI_TRUST_WORKSPACE`.
fn gemini(dir: &Path, model: &ScriptedModel, trusted: bool) -> Agent {
    let gemini = dir.join("node_modules").join(".bin").join("gemini");
    let agent = Agent::new(vec![gemini.into_os_string(), "--acp".into()]);
    let settings = agent.home.path().join(".gemini");
    std::fs::create_dir_all(&settings).unwrap();
    let quiet = json!({
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false},
        "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
        "ide": {"enabled": false},
        "security": {"auth": {"selectedType": "gemini-api-key"}},
    });
    std::fs::write(settings.join("settings.json"), quiet.to_string()).unwrap();
    let agent = agent
        .env("GOOGLE_GEMINI_BASE_URL", model.base_url())
        .env("GEMINI_API_KEY", "scripted-key")
        .env("GEMINI_CLI_NO_RELAUNCH", "true")
        .env("TERM", "dumb");
    match trusted {
        true => agent.env("GEMINI_CLI_TRUST_WORKSPACE", "true"),
        false => agent,
    }
}

/// One run of `acp_turn` with Gemini CLI; `None` when the test is skipped.
async fn gemini_turn(args: &[&str], trusted: bool) -> Option<Turn> {
    let dir = agents_dir().await?;
    let _one = ONE_AT_A_TIME.lock().await;
    let model = ScriptedModel::speaking(Api::Gemini, demo_script()).await;
    Some(run_turn(&gemini(&dir, &model, trusted), &model, args, |_| {}).await)
}

fn offered(request: &Value) -> Vec<String> {
    let tools = request["tools"].as_array().into_iter().flatten();
    tools
        .flat_map(|t| {
            t["functionDeclarations"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|d| d["name"].as_str().map(str::to_owned))
        .collect()
}

/// The `functionResponse` of a request's last content.
fn function_response(request: &Value) -> Value {
    let last = request["contents"].as_array().unwrap().last().unwrap();
    let parts = last["parts"].as_array().unwrap();
    let part = parts.iter().find_map(|p| p.get("functionResponse"));
    part.expect("a functionResponse")["response"].clone()
}

/// A tool, asked about, called and quoted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_calls_a_tool_and_quotes_it() {
    let Some(turn) = gemini_turn(&["--prompt", WEATHER], true).await else {
        return;
    };
    let name = Runner::GeminiCli.model_tool_name("demo", "get_weather");
    assert_eq!(name, "mcp_demo_get_weather");
    assert!(offered(&turn.requests[0]).contains(&name));
    assert_eq!(
        turn.lines("[host] the agent listed the tools ").len(),
        1,
        "{}",
        turn.stdout
    );
    assert_eq!(
        turn.lines("[permission] get_weather").len(),
        1,
        "{}",
        turn.stdout
    );
    assert_eq!(
        turn.lines("[host] tool call get_weather ").len(),
        1,
        "{}",
        turn.stdout
    );
    let response = function_response(&turn.requests[1]);
    assert!(response["output"]
        .as_str()
        .unwrap()
        .contains("Sunny and 21 °C in Paris"));
    turn.assert_has("[agent] The tool said: Sunny and 21 °C in Paris");
    turn.assert_has("[turn] end_turn");
    turn.assert_has("[host] calls served: 1");
    assert_eq!(
        turn.bearer_seen,
        BearerSeen::default(),
        "where the bearer showed up"
    );
    observe_package("Gemini", "@google/gemini-cli");
    observe_meta("Gemini", &turn, "get_weather");
    observe("Gemini", "model sees", "`mcp_demo_get_weather`");
    observe("Gemini", "tool search", "none: every tool offered");
    observe("Gemini", "the bearer", "kept in memory");
    observe("Gemini", "outbound attempts", "none");
    println!("{}", turn.stdout);
}

/// A refusal's reason reaches the model (inside Gemini CLI's error text).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_carries_a_refusal_to_the_model() {
    let Some(turn) = gemini_turn(&["--prompt", NOTES], true).await else {
        return;
    };
    assert_eq!(
        turn.lines("[host] tool call delete_all_notes ").len(),
        1,
        "{}",
        turn.stdout
    );
    let response = function_response(&turn.requests[1]);
    assert!(
        response["error"].as_str().unwrap().contains(REFUSAL),
        "{response}"
    );
    let answer = turn.lines("[agent] ");
    assert!(
        answer.iter().any(|a| a.contains(REFUSAL)),
        "{}",
        turn.stdout
    );
    turn.assert_has("[host] calls served: 1");
}

/// Denied permission: no tool runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_denied_permission_reaches_no_tool() {
    let Some(turn) = gemini_turn(&["--prompt", WEATHER, "--permission", "deny"], true).await else {
        return;
    };
    assert_eq!(
        turn.lines("[permission] get_weather").len(),
        1,
        "{}",
        turn.stdout
    );
    assert!(turn.lines("[host] tool call").is_empty(), "{}", turn.stdout);
    turn.assert_has("[host] calls served: 0");
    observe(
        "Gemini",
        "permission flow",
        "ACP permission for every MCP call",
    );
}

/// A tool added mid-turn: Gemini CLI re-lists on the notice, and the host
/// holds `unlock`'s result until that listing is answered and applied, so
/// `secret_echo` is offered in the very next model request of the turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_calls_a_tool_added_mid_turn() {
    let Some(turn) = gemini_turn(&["--prompt", VAULT], true).await else {
        return;
    };
    turn.assert_has("[host] tool call unlock {}");
    assert!(!offered(&turn.requests[0]).contains(&"mcp_demo_secret_echo".to_owned()));
    let next = offered(&turn.requests[1]);
    assert!(
        next.contains(&"mcp_demo_secret_echo".to_owned()),
        "offered in the same turn: {next:?}"
    );
    assert_eq!(
        turn.lines("[host] tool call secret_echo ").len(),
        1,
        "{}",
        turn.stdout
    );
    turn.assert_has("[agent] The tool said: From the vault: open sesame");
    turn.assert_has("[host] calls served: 2");
    observe(
        "Gemini",
        "tool added mid-turn",
        "re-lists; called in the same turn",
    );
}

/// An untrusted workspace: Gemini CLI drops the server without a word;
/// the first-listing wait is what tells the caller.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_workspace_is_seen_before_the_turn() {
    let Some(turn) = gemini_turn(&["--prompt", WEATHER], false).await else {
        return;
    };
    assert_eq!(
        turn.lines("[host] no tools/list within ").len(),
        1,
        "{}",
        turn.stdout
    );
    assert!(offered(&turn.requests[0])
        .iter()
        .all(|t| !t.starts_with("mcp_")));
    turn.assert_has("[host] calls served: 0");
}

/// One agent process, two ACP sessions in a row, each with a fresh
/// `ToolSession`: each lists and calls the tool with its own bearer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_serves_two_sessions_in_a_row() {
    let Some(turn) = gemini_turn(&["--prompt", WEATHER, "--sessions", "2"], true).await else {
        return;
    };
    assert_two_sessions(&turn, "Gemini");
    println!("{}", turn.stdout);
}

/// Gemini CLI's deadline for one tool call, and whether progress extends it,
/// measured (`scripts/agent-deadlines`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "runs for minutes: scripts/agent-deadlines measures it"]
async fn gemini_deadline_for_a_long_tool() {
    let Some(dir) = agents_dir().await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    measure_deadline(
        "Gemini",
        Api::Gemini,
        |model| gemini(&dir, model, true),
        &[],
    )
    .await;
}
