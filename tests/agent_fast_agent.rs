//! fast-agent (`fast-agent-acp`, PyPI `fast-agent-mcp`, pinned in
//! `tests/acp-agent-python`), driven by `examples/acp_turn.rs` offline:
//! its `generic` provider (OpenAI Chat Completions) points at the scripted
//! model (`GENERIC_BASE_URL`, `--model generic.scripted`), and its home
//! (`FAST_AGENT_HOME`: logs, sessions, saved permissions) is inside the
//! isolated home rather than the working directory.
//!
//! What fast-agent does that an embedder must know, checked here: its MCP
//! client (the Python SDK) takes the 2026-07-28 path (`server/discover`,
//! `subscriptions/listen`), and 2025-11-25 behind a server that refuses
//! discovery; the model sees `SERVER__TOOL`; it asks ACP permission for
//! every MCP call; it re-lists on the notice, but the tools of a turn are
//! fixed when the turn starts, so a tool added mid-turn is offered from
//! the next prompt; and it keeps one MCP server per name for its whole
//! process, refusing a second session's entry under a name it holds (so
//! each session's entry needs its own name: `acp_turn --name-per-session`).
//! See `support::agents` for the environment and the skip rule.
#![cfg(target_os = "linux")]

mod support;

use std::path::{Path, PathBuf};

use support::agents::*;
use support::deadlines::*;
use support::mcp_proxy::McpProxy;
use support::scripted_model::{Api, ScriptedModel};

/// fast-agent, offline, with `model` as its provider.
fn fast_agent(venv: &Path, model: &ScriptedModel) -> Agent {
    let command = venv.join("bin").join("fast-agent-acp");
    let agent = Agent::new(vec![
        command.into_os_string(),
        "--model".into(),
        "generic.scripted".into(),
    ]);
    let home = agent.home.path().join("fast-agent");
    agent
        .env("GENERIC_BASE_URL", model.base_url())
        .env("FAST_AGENT_HOME", home)
}

/// The venv, and the lock that keeps its turns one at a time; `None` when
/// the test is skipped.
async fn venv() -> Option<PathBuf> {
    python_agent("fast-agent").await
}

/// One run of `acp_turn` with fast-agent; `None` when the test is skipped.
async fn fast_agent_turn(args: &[&str]) -> Option<Turn> {
    let venv = venv().await?;
    let _one = ONE_AT_A_TIME.lock().await;
    let model = ScriptedModel::start(demo_script()).await;
    Some(run_turn(&fast_agent(&venv, &model), &model, args, |_| {}).await)
}

/// A tool, asked permission for, called and quoted, on the 2026-07-28
/// path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fast_agent_calls_a_tool_and_quotes_it() {
    let Some(venv) = venv().await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    let model = ScriptedModel::start(demo_script()).await;
    let proxy = McpProxy::recording().await;
    let args = ["--prompt", WEATHER];
    let turn = run_turn_through(&proxy, &fast_agent(&venv, &model), &model, &args).await;
    assert!(chat_offered(&turn.requests[0]).contains(&"demo__get_weather".to_owned()));
    assert_eq!(
        turn.lines("[permission] demo/get_weather").len(),
        1,
        "{}",
        turn.stdout
    );
    turn.assert_has(r#"[host] tool call get_weather {"city":"Paris"}"#);
    assert_eq!(
        last_tool_message(&turn.requests[1]),
        "Sunny and 21 °C in Paris"
    );
    turn.assert_has("[agent] The tool said: Sunny and 21 °C in Paris");
    turn.assert_has("[turn] end_turn");
    turn.assert_has("[host] calls served: 1");
    assert_eq!(
        turn.bearer_seen,
        BearerSeen::default(),
        "where the bearer showed up"
    );
    let seen = proxy.seen();
    assert_eq!(
        seen.first().map(String::as_str),
        Some("server/discover"),
        "{seen:?}"
    );
    assert!(seen.iter().any(|m| m == "subscriptions/listen"), "{seen:?}");
    assert!(!seen.iter().any(|m| m == "initialize"), "{seen:?}");
    observe_python_package("fast-agent", &venv, "fast-agent-mcp");
    observe_meta("fast-agent", &turn, "get_weather");
    observe(
        "fast-agent",
        "MCP it speaks",
        "2026-07-28 (`server/discover`, `subscriptions/listen`)",
    );
    observe("fast-agent", "model sees", "`demo__get_weather`");
    observe("fast-agent", "tool search", "none: every tool offered");
    observe("fast-agent", "the bearer", "kept in memory");
    observe("fast-agent", "outbound attempts", "none");
    println!("{}", turn.stdout);
}

/// Behind a server that refuses `server/discover`, the 2025 path:
/// `initialize` at 2025-11-25, an `Mcp-Session-Id`, the GET stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fast_agent_falls_back_to_2025() {
    let Some(venv) = venv().await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    let model = ScriptedModel::start(demo_script()).await;
    let proxy = McpProxy::legacy_only().await;
    let args = ["--prompt", WEATHER];
    let turn = run_turn_through(&proxy, &fast_agent(&venv, &model), &model, &args).await;
    turn.assert_has(r#"[host] tool call get_weather {"city":"Paris"}"#);
    turn.assert_has("[host] calls served: 1");
    let seen = proxy.seen();
    let at = |method: &str| seen.iter().position(|m| m == method);
    // The GET stream needs the session id `initialize` minted; whether it
    // opens before or after `notifications/initialized` is the client's
    // own concurrency (both orders seen, the second under load in CI).
    let initialize = at("initialize").expect("the 2025 handshake");
    assert!(at("notifications/initialized").is_some(), "{seen:?}");
    assert!(at("GET").expect("a GET stream") > initialize, "{seen:?}");
    assert!(
        !seen.iter().any(|m| m == "subscriptions/listen"),
        "{seen:?}"
    );
    observe("fast-agent", "MCP it speaks", "else 2025-11-25");
}

/// A refusal's reason reaches the model as the tool message's text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fast_agent_carries_a_refusal_to_the_model() {
    let Some(turn) = fast_agent_turn(&["--prompt", NOTES]).await else {
        return;
    };
    assert_eq!(turn.lines("[host] tool call delete_all_notes ").len(), 1);
    assert!(last_tool_message(&turn.requests[1]).contains(REFUSAL));
    turn.assert_has("[host] calls served: 1");
}

/// Denied permission: no tool runs, and the model is told so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fast_agent_denied_permission_reaches_no_tool() {
    let Some(turn) = fast_agent_turn(&["--prompt", WEATHER, "--permission", "deny"]).await else {
        return;
    };
    assert_eq!(
        turn.lines("[permission] demo/get_weather").len(),
        1,
        "{}",
        turn.stdout
    );
    assert!(turn.lines("[host] tool call").is_empty(), "{}", turn.stdout);
    assert!(last_tool_message(&turn.requests[1]).contains("declined permission"));
    turn.assert_has("[host] calls served: 0");
    observe(
        "fast-agent",
        "permission flow",
        "ACP permission for every MCP call",
    );
}

/// A tool added mid-turn: fast-agent re-lists on the notice, but the turn
/// keeps the tools it started with; the next prompt is offered the new
/// tool, and calls it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fast_agent_offers_a_tool_added_mid_turn_from_the_next_prompt() {
    let args = ["--prompt", VAULT, "--prompt", SECRET_NOW];
    let Some(turn) = fast_agent_turn(&args).await else {
        return;
    };
    turn.assert_has("[host] tool call unlock {}");
    turn.assert_has("[agent] The scripted tool secret_echo was not offered.");
    let last = turn.requests.last().unwrap();
    assert!(chat_offered(last).contains(&"demo__secret_echo".to_owned()));
    assert_eq!(
        turn.lines("[host] tool call secret_echo ").len(),
        1,
        "{}",
        turn.stdout
    );
    turn.assert_has("[agent] The tool said: From the vault: open sesame");
    turn.assert_has("[host] calls served: 2");
    observe(
        "fast-agent",
        "tool added mid-turn",
        "re-lists; offered from the next prompt",
    );
}

/// One agent process, two ACP sessions in a row, each with a fresh
/// `ToolSession` and its own server name: each lists and calls the tool
/// with its own bearer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fast_agent_serves_two_sessions_in_a_row() {
    let args = ["--prompt", WEATHER, "--sessions", "2", "--name-per-session"];
    let Some(turn) = fast_agent_turn(&args).await else {
        return;
    };
    turn.assert_has("[host] session 2's server is named demo-2");
    assert_two_sessions(&turn, "fast-agent");
    println!("{}", turn.stdout);
}

/// Without a name of its own, a second session's entry is refused:
/// `session/new` fails, saying the name is taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fast_agent_refuses_a_second_session_under_the_same_name() {
    let Some(venv) = venv().await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    let model = ScriptedModel::start(demo_script()).await;
    let agent = fast_agent(&venv, &model);
    let failed = run_failing_turn(&agent, &["--prompt", WEATHER, "--sessions", "2"]).await;
    assert!(
        failed.contains("already registered with different settings"),
        "{failed}"
    );
    observe("fast-agent", "must set", "a server name per session");
}

/// fast-agent's deadline for one tool call, and whether progress extends it,
/// measured (`scripts/agent-deadlines`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "runs for minutes: scripts/agent-deadlines measures it"]
async fn fast_agent_deadline_for_a_long_tool() {
    let Some(dir) = venv().await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    measure_deadline(
        "fast-agent",
        Api::ChatCompletions,
        |model| fast_agent(&dir, model),
        &[],
    )
    .await;
}
