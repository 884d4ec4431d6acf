//! Kilo (`kilo acp`, its linux-x64 binary pinned in `tests/acp-agent`:
//! `@kilocode/cli` 7.7.9 is not published, only its platform package),
//! driven by `examples/acp_turn.rs` offline: its config
//! (`$HOME/.config/kilo/kilo.json`) names one OpenAI-compatible provider,
//! the scripted model, and enables no other (its own `kilo` provider
//! would fetch a model list); `KILO_DISABLE_MODELS_FETCH` (else
//! models.dev) and `KILO_TELEMETRY_LEVEL=off` (else PostHog) keep it on
//! the machine.
//!
//! What Kilo does that an embedder must know, checked here: it speaks
//! MCP 2025-11-25 (`initialize`, `Mcp-Session-Id`, a GET stream), lists
//! before `session/new` answers, and re-lists on the notice, calling a
//! tool added mid-turn in the same turn; the model sees `SERVER_TOOL`; it
//! asks no permission unless its config says `ask` for the tool; a
//! refusal reaches the model as the tool's bare text. See
//! `support::agents` for the environment and the skip rule.
#![cfg(target_os = "linux")]

mod support;

use std::path::Path;

use serde_json::{json, Value};
use support::agents::*;
use support::deadlines::*;
use support::mcp_proxy::McpProxy;
use support::scripted_model::{Api, ScriptedModel};

/// Kilo, offline, with `model` as its only provider; `ask` makes its
/// config ask permission for every tool of the `demo` server.
fn kilo(dir: &Path, model: &ScriptedModel, ask: bool) -> Agent {
    let kilo = dir.join("node_modules/@kilocode/cli-linux-x64/bin/kilo");
    let agent = Agent::new(vec![kilo.into_os_string(), "acp".into()]);
    let settings = agent.home.path().join(".config").join("kilo");
    std::fs::create_dir_all(&settings).unwrap();
    let mut config = json!({
        "model": "scripted/scripted-model",
        "small_model": "scripted/scripted-model",
        "enabled_providers": ["scripted"],
        "autoupdate": false,
        "share": "disabled",
        "agent": {"title": {"disable": true}},
        "provider": {"scripted": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Scripted",
            "options": {"baseURL": model.base_url(), "apiKey": "scripted-key"},
            "models": {"scripted-model": {"name": "Scripted model", "tool_call": true}},
        }},
    });
    if ask {
        config["permission"] = json!({"demo_*": "ask"});
    }
    std::fs::write(settings.join("kilo.json"), config.to_string()).unwrap();
    agent
        .env("KILO_DISABLE_MODELS_FETCH", "1")
        .env("KILO_TELEMETRY_LEVEL", "off")
        .env("KILO_DISABLE_AUTOUPDATE", "1")
        .env("KILO_DISABLE_SHARE", "1")
        .env("KILO_DISABLE_LSP_DOWNLOAD", "1")
        .env("KILO_DISABLE_PROJECT_CONFIG", "1")
}

/// One run of `acp_turn` with Kilo; `None` when the test is skipped.
async fn kilo_turn(args: &[&str], ask: bool) -> Option<Turn> {
    let dir = agents_dir().await?;
    let _one = ONE_AT_A_TIME.lock().await;
    let model = ScriptedModel::start(demo_script()).await;
    Some(run_turn(&kilo(&dir, &model, ask), &model, args, |_| {}).await)
}

/// A tool, listed before `session/new` answered, called without a
/// permission request, and quoted; the MCP it spoke, seen by a forwarder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kilo_calls_a_tool_and_quotes_it() {
    let Some(dir) = agents_dir().await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    let model = ScriptedModel::start(demo_script()).await;
    let proxy = McpProxy::recording().await;
    let args = ["--prompt", WEATHER];
    let turn = run_turn_through(&proxy, &kilo(&dir, &model, false), &model, &args).await;
    assert!(chat_offered(&turn.requests[0]).contains(&"demo_get_weather".to_owned()));
    assert_eq!(turn.lines("[host] the agent listed the tools ").len(), 1);
    assert!(turn.lines("[permission]").is_empty(), "{}", turn.stdout);
    turn.assert_has(r#"[host] tool call get_weather {"city":"Paris"}"#);
    assert!(last_tool_message(&turn.requests[1]).contains("Sunny and 21 °C in Paris"));
    turn.assert_has("[agent] The tool said: Sunny and 21 °C in Paris");
    turn.assert_has("[turn] end_turn");
    turn.assert_has("[host] calls served: 1");
    assert_eq!(
        turn.bearer_seen,
        BearerSeen::default(),
        "where the bearer showed up"
    );
    let requests = proxy.requests();
    let methods: Vec<&str> = requests.iter().map(|r| r.method.as_str()).collect();
    assert_eq!(methods.first(), Some(&"initialize"), "{methods:?}");
    assert!(methods.contains(&"GET"), "{methods:?}");
    assert!(!methods.contains(&"server/discover"), "{methods:?}");
    assert!(!methods.contains(&"DELETE"), "{methods:?}");
    let call = methods.iter().position(|m| *m == "tools/call").unwrap();
    assert!(
        methods[call..].contains(&"notifications/cancelled"),
        "{methods:?}"
    );
    let versions: Vec<_> = requests
        .iter()
        .filter_map(|r| r.version.as_deref())
        .collect();
    assert!(versions.iter().all(|v| *v == "2025-11-25"), "{versions:?}");
    observe("Kilo", "MCP it speaks", "2025-11-25 (`initialize`, `Mcp-Session-Id`, the GET stream; no `DELETE`); cancels each call after its answer");
    observe_package("Kilo", "@kilocode/cli-linux-x64");
    observe_meta("Kilo", &turn, "get_weather");
    observe("Kilo", "model sees", "`demo_get_weather`");
    observe("Kilo", "tool search", "none: every tool offered");
    observe("Kilo", "the bearer", "kept in memory");
    observe("Kilo", "outbound attempts", "none");
    println!("{}", turn.stdout);
}

/// A refusal's reason reaches the model, as the tool message's text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kilo_carries_a_refusal_to_the_model() {
    let Some(turn) = kilo_turn(&["--prompt", NOTES], false).await else {
        return;
    };
    assert_eq!(turn.lines("[host] tool call delete_all_notes ").len(), 1);
    assert_eq!(last_tool_message(&turn.requests[1]), REFUSAL);
    turn.assert_has(&format!("[agent] The tool said: {REFUSAL}"));
    turn.assert_has("[host] calls served: 1");
}

/// With `ask` in its config, one ACP permission request per call; denied,
/// no tool runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kilo_denied_permission_reaches_no_tool() {
    let Some(turn) = kilo_turn(&["--prompt", WEATHER, "--permission", "deny"], true).await else {
        return;
    };
    assert_eq!(
        turn.lines("[permission] demo_get_weather").len(),
        1,
        "{}",
        turn.stdout
    );
    assert!(turn.lines("[host] tool call").is_empty(), "{}", turn.stdout);
    turn.assert_has("[host] calls served: 0");
    observe(
        "Kilo",
        "permission flow",
        "none by default; with `\"permission\": {\"demo_*\": \"ask\"}`, ACP permission for every call",
    );
}

/// A tool added mid-turn: Kilo re-lists on the notice, and `secret_echo`
/// is offered in the very next model request of the turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kilo_calls_a_tool_added_mid_turn() {
    let Some(turn) = kilo_turn(&["--prompt", VAULT], false).await else {
        return;
    };
    turn.assert_has("[host] tool call unlock {}");
    assert!(!chat_offered(&turn.requests[0]).contains(&"demo_secret_echo".to_owned()));
    let next = chat_offered(&turn.requests[1]);
    assert!(
        next.contains(&"demo_secret_echo".to_owned()),
        "offered in the same turn: {next:?}"
    );
    turn.assert_has("[agent] The tool said: From the vault: open sesame");
    turn.assert_has("[host] calls served: 2");
    observe(
        "Kilo",
        "tool added mid-turn",
        "re-lists; called in the same turn",
    );
}

/// One agent process, two ACP sessions in a row, each with a fresh
/// `ToolSession`: each lists and calls the tool with its own bearer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kilo_serves_two_sessions_in_a_row() {
    let Some(turn) = kilo_turn(&["--prompt", WEATHER, "--sessions", "2"], false).await else {
        return;
    };
    assert_two_sessions(&turn, "Kilo");
    println!("{}", turn.stdout);
}

/// Kilo's deadline for one tool call, and whether progress extends it,
/// measured (`scripts/agent-deadlines`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "runs for minutes: scripts/agent-deadlines measures it"]
async fn kilo_deadline_for_a_long_tool() {
    let Some(dir) = agents_dir().await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    measure_deadline(
        "Kilo",
        Api::ChatCompletions,
        |model| kilo(&dir, model, false),
        &[],
    )
    .await;
}

/// Kilo stops a tool call after its MCP timeout (60 s by default,
/// `experimental.mcp_timeout` in its config), and each progress
/// notification starts that timeout again: with it at 10 s, a tool of 25 s
/// that reports progress every 2 s is done, and the same tool without
/// progress is stopped before its time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kilo_progress_keeps_a_long_tool_alive() {
    let Some(dir) = agents_dir().await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    let make = |model: &ScriptedModel| {
        let agent = kilo(&dir, model, false);
        let path = agent.home.path().join(".config/kilo/kilo.json");
        let mut config: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        config["experimental"] = json!({"mcp_timeout": 10_000});
        std::fs::write(&path, config.to_string()).unwrap();
        agent
    };
    assert_progress_outlives_deadline(Api::ChatCompletions, 25, make, &[]).await;
    observe("Kilo", "progress extends the deadline", "yes");
    observe("Kilo", "raise the deadline", "`experimental.mcp_timeout`");
}
