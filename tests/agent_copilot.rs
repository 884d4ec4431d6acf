//! The whole loop with a real agent: `examples/acp_turn.rs` drives GitHub
//! Copilot CLI (`copilot --acp`, pinned in `tests/acp-agent`) offline:
//! Copilot's bring-your-own-model provider points at a scripted
//! OpenAI-compatible endpoint (`support::scripted_model`), which calls one
//! of the host's tools and then answers with text quoting the tool's result.
//!
//! The mid-turn change: `unlock` adds `secret_echo`, and Copilot must offer
//! it to the model in the request right after `unlock`'s result, on its
//! 2026-07-28 path and on its 2025 path (behind
//! `support::mcp_proxy`, which refuses `server/discover`).
//!
//! Each test asserts on both sides: what the host's tools saw (the call and
//! its arguments, `calls_served()`) and what the agent did (its tool-call
//! updates, the model's second request carrying the tool result, the final
//! text). See `support::agents` for the environment and the skip rule.
#![cfg(target_os = "linux")]

mod support;

use std::path::Path;

use serde_json::Value;
use support::agents::{
    agents_dir, assert_two_sessions, demo_script, observe, observe_meta, observe_package, run_turn,
    run_turn_through, Agent, BearerSeen, Turn, ONE_AT_A_TIME, VAULT, WEATHER,
};
use support::deadlines::*;
use support::mcp_proxy::McpProxy;
use support::scripted_model::{Api, ScriptedModel};

/// The `role: tool` message of the model's second request.
fn tool_result_sent_to_model(turn: &Turn) -> String {
    assert_eq!(turn.requests.len(), 2, "one tool call, then the answer");
    let messages = turn.requests[1]["messages"].as_array().unwrap();
    let tool = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("a tool message");
    tool["content"].as_str().unwrap().to_owned()
}

/// Copilot CLI, offline, with its provider pointed at `model`.
fn copilot(dir: &Path, model: &ScriptedModel) -> Agent {
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("copilot-cache");
    let copilot = dir.join("node_modules").join(".bin").join("copilot");
    let args = [
        "--acp",
        "--no-auto-update",
        "--disable-client-telemetry",
        "--no-custom-instructions",
    ];
    let mut command = vec![copilot.into_os_string()];
    command.extend(args.map(Into::into));
    Agent::new(command)
        .env("COPILOT_CACHE_HOME", cache)
        .env("COPILOT_OFFLINE", "true")
        .env("COPILOT_PROVIDER_BASE_URL", model.base_url())
        .env("COPILOT_PROVIDER_TYPE", "openai")
        .env("COPILOT_PROVIDER_API_KEY", "sk-scripted")
        .env("COPILOT_MODEL", "scripted-model")
}

/// One turn of Copilot, one test at a time, against a fresh scripted
/// model; `None` when the test is skipped (see [`copilot`]).
async fn copilot_turn(args: &[&str]) -> Option<Turn> {
    let dir = agents_dir().await?;
    let _one = ONE_AT_A_TIME.lock().await;
    let model = ScriptedModel::start(demo_script()).await;
    Some(run_turn(&copilot(&dir, &model), &model, args, |_| {}).await)
}

/// The model calls a read-only tool (no permission asked), and its final
/// text quotes the tool's answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copilot_calls_a_tool_and_quotes_it() {
    let Some(turn) = copilot_turn(&["--prompt", "What is the weather in Paris?"]).await else {
        return;
    };
    // The host's side.
    turn.assert_has(r#"[host] tool call get_weather {"city":"Paris"}"#);
    turn.assert_has("[host] calls served: 1");
    assert_eq!(
        turn.lines("[host] the agent listed the tools ").len(),
        1,
        "Copilot lists before the prompt: {}",
        turn.stdout
    );
    // The agent's side.
    let offered: Vec<&str> = turn.requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(offered.contains(&"demo-get_weather"), "{offered:?}");
    assert!(
        turn.lines("[tool call] demo-get_weather").len() == 1,
        "{}",
        turn.stdout
    );
    assert!(
        turn.lines("[permission]").is_empty(),
        "a read-only tool is not asked about"
    );
    turn.assert_has("[tool update] call_1 completed: Sunny and 21 °C in Paris");
    assert_eq!(tool_result_sent_to_model(&turn), "Sunny and 21 °C in Paris");
    turn.assert_has("[agent] The tool said: Sunny and 21 °C in Paris");
    turn.assert_has("[turn] end_turn");
    assert_eq!(
        turn.bearer_seen,
        BearerSeen::default(),
        "where the bearer showed up"
    );
    observe_package("Copilot", "@github/copilot");
    observe_meta("Copilot", &turn, "get_weather");
    observe("Copilot", "model sees", "`demo-get_weather`");
    observe("Copilot", "tool search", "none: every tool offered");
    observe("Copilot", "the bearer", "kept in memory");
    observe("Copilot", "outbound attempts", "none");
    println!("{}", turn.stdout);
}

/// The model calls a destructive tool: the permission is granted, the tool
/// refuses, and the refusal's reason reaches the model and its answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copilot_carries_a_refusal_to_the_model() {
    let Some(turn) = copilot_turn(&["--prompt", "Delete all my notes."]).await else {
        return;
    };
    turn.assert_has("[host] tool call delete_all_notes {}");
    turn.assert_has("[host] calls served: 1");
    turn.assert_has("[permission] delete_all_notes: allow_once");
    observe(
        "Copilot",
        "permission flow",
        "ACP permission for destructive tools",
    );
    let reason = "deleting every note needs the user's confirmation in the app";
    let sent = tool_result_sent_to_model(&turn);
    assert!(sent.ends_with(reason), "{sent:?}");
    assert!(
        turn.lines("[tool update] call_1 failed").len() == 1,
        "{}",
        turn.stdout
    );
    let answer = turn.lines("[agent] ");
    assert!(
        answer.len() == 1 && answer[0].contains(reason),
        "{}",
        turn.stdout
    );
    println!("{}", turn.stdout);
}

/// Denied permission: the tool never runs, and nothing is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copilot_denied_permission_reaches_no_tool() {
    let Some(turn) =
        copilot_turn(&["--prompt", "Delete all my notes.", "--permission", "deny"]).await
    else {
        return;
    };
    turn.assert_has("[permission] delete_all_notes: reject_once");
    turn.assert_has("[host] calls served: 0");
    assert!(turn.lines("[host] tool call").is_empty(), "{}", turn.stdout);
}

/// The same turn with the server in a Copilot CLI config file
/// (`--additional-mcp-config @FILE`) instead of ACP `mcpServers`: the
/// file's format is the one Copilot reads, and it is gone after the turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copilot_reads_the_config_file() {
    let Some(turn) = copilot_turn(&[
        "--prompt",
        "What is the weather in Paris?",
        "--config-file",
        "copilot-cli",
    ])
    .await
    else {
        return;
    };
    turn.assert_has(r#"[host] tool call get_weather {"city":"Paris"}"#);
    turn.assert_has("[host] calls served: 1");
    turn.assert_has("[host] session/new with no mcpServers: the agent reads the config file");
    let line = turn.lines("[host] MCP config for Copilot CLI in ");
    let path = line[0]
        .strip_prefix("[host] MCP config for Copilot CLI in ")
        .unwrap();
    assert!(
        !Path::new(path).exists(),
        "the config file went with the guard"
    );
}

/// 2026-07-28 (Copilot settles on it by `server/discover`): the notice on
/// `subscriptions/listen` is written before `unlock`'s result, Copilot
/// re-lists before its next model request, and the model calls
/// `secret_echo` in the same turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copilot_calls_a_tool_added_mid_turn() {
    let Some(turn) = copilot_turn(&["--prompt", VAULT]).await else {
        return;
    };
    assert_same_turn(&turn);
    observe("Copilot", "MCP it speaks", "2026-07-28 (`server/discover`)");
    println!("{}", turn.stdout);
}

/// The 2025 path, through a forwarder that refuses `server/discover` as a
/// 2025-only server does: Copilot falls back to `initialize`, gets an
/// `Mcp-Session-Id`, opens that session's `GET` stream, receives the
/// notice there before `unlock`'s result, and calls `secret_echo` in the
/// same turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copilot_calls_a_tool_added_mid_turn_on_its_2025_path() {
    let Some(dir) = agents_dir().await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    let model = ScriptedModel::start(demo_script()).await;
    let proxy = McpProxy::legacy_only().await;
    let turn = run_turn_through(&proxy, &copilot(&dir, &model), &model, &["--prompt", VAULT]).await;
    assert_same_turn(&turn);
    let seen = proxy.seen();
    let first = |method: &str| seen.iter().position(|m| m == method);
    assert_eq!(
        seen.first().map(String::as_str),
        Some("server/discover"),
        "{seen:?}"
    );
    let initialized = first("notifications/initialized").expect("the 2025 handshake");
    let get = first("GET").expect("a GET stream was opened");
    assert!(get > initialized, "{seen:?}");
    let calls: Vec<usize> = (0..seen.len())
        .filter(|&i| seen[i] == "tools/call")
        .collect();
    assert_eq!(calls.len(), 2, "unlock, then secret_echo: {seen:?}");
    assert!(
        seen[calls[0]..calls[1]].iter().any(|m| m == "tools/list"),
        "re-listed between the two calls: {seen:?}"
    );
    assert!(
        !seen.iter().any(|m| m == "subscriptions/listen"),
        "the 2025 path: {seen:?}"
    );
    let versions = proxy.requests().into_iter().filter_map(|s| s.version);
    let after_fallback: Vec<String> = versions.skip(1).collect();
    assert!(
        !after_fallback.is_empty() && after_fallback.iter().all(|v| v == "2025-11-25"),
        "{after_fallback:?}"
    );
    observe("Copilot", "MCP it speaks", "else 2025-11-25");
    observe(
        "Copilot",
        "tool added mid-turn",
        "called in the same turn (both eras)",
    );
    println!("{}\nthe forwarder saw: {seen:?}", turn.stdout);
}

/// `unlock` then `secret_echo`, both served, and `secret_echo` offered in
/// the model request right after `unlock`'s result: the same turn.
fn assert_same_turn(turn: &Turn) {
    turn.assert_has("[host] tool call unlock {}");
    turn.assert_has(r#"[host] tool call secret_echo {"text":"open sesame"}"#);
    turn.assert_has("[host] calls served: 2");
    let offered = |request: &Value| -> Vec<String> {
        request["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
            .collect()
    };
    assert_eq!(turn.requests.len(), 3, "unlock, secret_echo, the answer");
    assert!(
        !offered(&turn.requests[0]).contains(&"demo-secret_echo".to_owned()),
        "locked at first"
    );
    assert!(
        offered(&turn.requests[1]).contains(&"demo-secret_echo".to_owned()),
        "offered right after unlock: {:?}",
        offered(&turn.requests[1])
    );
    turn.assert_has("[agent] The tool said: From the vault: open sesame");
    turn.assert_has("[turn] end_turn");
}

/// One agent process, two ACP sessions in a row, each with a fresh
/// `ToolSession`: each lists and calls the tool with its own bearer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copilot_serves_two_sessions_in_a_row() {
    let Some(turn) = copilot_turn(&["--prompt", WEATHER, "--sessions", "2"]).await else {
        return;
    };
    assert_two_sessions(&turn, "Copilot");
    println!("{}", turn.stdout);
}

/// Copilot CLI's deadline for one tool call, and whether progress extends it,
/// measured (`scripts/agent-deadlines`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "runs for minutes: scripts/agent-deadlines measures it"]
async fn copilot_deadline_for_a_long_tool() {
    let Some(dir) = agents_dir().await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    measure_deadline(
        "Copilot",
        Api::ChatCompletions,
        |model| copilot(&dir, model),
        &[],
    )
    .await;
}

/// Copilot CLI stops a tool call after its server's `timeout` (180 s when
/// none is set, and a server given over ACP has none), and each progress
/// notification starts it again. A server in its config file takes a
/// `timeout`: with it at 10 s, a tool of 25 s that reports progress every
/// 2 s is done, and the same tool without progress is stopped before its
/// time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copilot_progress_keeps_a_long_tool_alive() {
    let Some(dir) = agents_dir().await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    let args = [
        "--config-file",
        "copilot-cli",
        "--config-timeout-ms",
        "10000",
    ];
    let make = |model: &ScriptedModel| copilot(&dir, model);
    assert_progress_outlives_deadline(Api::ChatCompletions, 25, make, &args).await;
    observe("Copilot", "progress extends the deadline", "yes");
    observe("Copilot", "raise the deadline", "`timeout` (ms)");
}
