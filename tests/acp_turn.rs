//! The whole loop with a real agent: `examples/acp_turn.rs` drives GitHub
//! Copilot CLI (`copilot --acp`, pinned in `tests/acp-agent`) through one
//! turn, with no login and no network: Copilot's bring-your-own-model
//! provider points at a scripted OpenAI-compatible endpoint
//! (`support::scripted_model`), which calls one of the host's tools and then
//! answers with text quoting the tool's result.
//!
//! The mid-turn change: `unlock` adds `secret_echo`, and Copilot must offer
//! it to the model in the request right after `unlock`'s result, on its
//! 2026-07-28 path and on its 2025 path (behind
//! `support::legacy_only_proxy`, which refuses `server/discover`).
//!
//! Each test asserts on both sides: what the host's tools saw (the call and
//! its arguments, `calls_served()`) and what the agent did (its tool-call
//! updates, the model's second request carrying the tool result, the final
//! text).
//!
//! Needs Node.js and npm, on Unix. `.ci/run` installs the pinned package
//! and sets `EMBACLE_REQUIRE_AGENT_TESTS=1`, under which a missing Node or
//! npm fails the tests; elsewhere each test says on the terminal (past the
//! test harness's capture) that it was skipped, and why, and returns.
//!
//! The agent runs with an empty environment but for `PATH` and what the
//! test sets: nothing of the developer's own Copilot set-up (a
//! `COPILOT_HOME`, an allow-all setting, a provider, a token) can change
//! what it does.
#![cfg(unix)]

mod support;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use support::legacy_only_proxy::LegacyOnlyProxy;
use support::processes::{client_dir, ensure_installed, example_path};
use support::scripted_model::{ScriptedModel, ToolCallScript};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::Command;

/// Copilot unpacks itself into a cache on first run: one test at a time.
static COPILOT: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// What one turn printed, and what the model endpoint received.
struct Turn {
    stdout: String,
    requests: Vec<Value>,
}

impl Turn {
    fn lines(&self, tag: &str) -> Vec<&str> {
        self.stdout.lines().filter(|l| l.starts_with(tag)).collect()
    }

    fn assert_has(&self, line: &str) {
        assert!(
            self.stdout.lines().any(|l| l == line),
            "no line {line:?} in:\n{}",
            self.stdout
        );
    }

    /// The `role: tool` message of the model's second request.
    fn tool_result_sent_to_model(&self) -> String {
        assert_eq!(self.requests.len(), 2, "one tool call, then the answer");
        let messages = self.requests[1]["messages"].as_array().unwrap();
        let tool = messages
            .iter()
            .find(|m| m["role"] == "tool")
            .expect("a tool message");
        tool["content"].as_str().unwrap().to_owned()
    }
}

/// The Copilot CLI launcher, installed; `None` (after saying why) when Node
/// or npm is missing and the tests may skip.
async fn copilot() -> Option<PathBuf> {
    for tool in ["node", "npm"] {
        let found = Command::new(tool)
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .await;
        if found.is_ok_and(|status| status.success()) {
            continue;
        }
        assert!(
            std::env::var_os("EMBACLE_REQUIRE_AGENT_TESTS").is_none(),
            "{tool} is missing, and EMBACLE_REQUIRE_AGENT_TESTS is set"
        );
        // Straight to the process's stderr: `eprintln!` would be captured
        // by the test harness, and the skip would look like a pass.
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: {tool} is not installed, so Copilot CLI cannot run; this ACP agent test did not run"
        );
        return None;
    }
    let dir = client_dir("acp-agent");
    ensure_installed(&dir, "@github/copilot").await;
    Some(dir.join("node_modules").join(".bin").join("copilot"))
}

/// Runs `acp_turn` with `args` against Copilot, offline, with the scripted
/// model, in an environment of `PATH` and the test's own variables only;
/// returns what it printed. `on_line` sees each line as it is printed.
async fn run_turn(
    copilot: &Path,
    model: &ScriptedModel,
    args: &[&str],
    mut on_line: impl FnMut(&str),
) -> Turn {
    let home = TempHome::new();
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("copilot-cache");
    let mut command = Command::new(example_path("acp_turn"));
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .args(args)
        .arg("--")
        .arg(copilot)
        .args([
            "--acp",
            "--no-auto-update",
            "--disable-client-telemetry",
            "--no-custom-instructions",
        ])
        .current_dir(&home.0)
        .env("HOME", &home.0)
        .env("COPILOT_CACHE_HOME", &cache)
        .env("COPILOT_OFFLINE", "true")
        .env("COPILOT_PROVIDER_BASE_URL", model.base_url())
        .env("COPILOT_PROVIDER_TYPE", "openai")
        .env("COPILOT_PROVIDER_API_KEY", "sk-scripted")
        .env("COPILOT_MODEL", "scripted-model")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().expect("acp_turn runs");
    let mut stderr = child.stderr.take().unwrap();
    let errors = tokio::spawn(async move {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text).await;
        text
    });
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let run = async {
        let mut stdout = String::new();
        while let Some(line) = lines.next_line().await.expect("acp_turn's stdout") {
            on_line(&line);
            stdout.push_str(&line);
            stdout.push('\n');
        }
        (stdout, child.wait().await.expect("acp_turn exits"))
    };
    let (stdout, status) = tokio::time::timeout(Duration::from_secs(180), run)
        .await
        .expect("the turn finished within 3 minutes");
    assert!(
        status.success(),
        "acp_turn failed ({status}):\n{stdout}\n{}",
        errors.await.unwrap()
    );
    Turn {
        stdout,
        requests: model.requests(),
    }
}

/// A fresh `HOME` for the agent, removed when the turn is over, passed or
/// failed.
struct TempHome(PathBuf);

impl TempHome {
    fn new() -> Self {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let home =
            std::env::temp_dir().join(format!("embacle-acp-home-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&home);
        std::fs::create_dir_all(&home).unwrap();
        Self(home)
    }
}

impl Drop for TempHome {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One turn of Copilot, one test at a time, against a fresh scripted
/// model; `None` when the test is skipped (see [`copilot`]).
async fn copilot_turn(args: &[&str]) -> Option<Turn> {
    let copilot = copilot().await?;
    let _one = COPILOT.lock().await;
    let model = ScriptedModel::start(script()).await;
    Some(run_turn(&copilot, &model, args, |_| {}).await)
}

fn script() -> Vec<ToolCallScript> {
    vec![
        ToolCallScript {
            trigger: "weather",
            calls: vec![("get_weather", json!({"city": "Paris"}))],
        },
        ToolCallScript {
            trigger: "notes",
            calls: vec![("delete_all_notes", json!({}))],
        },
        ToolCallScript {
            trigger: "vault",
            calls: vec![
                ("unlock", json!({})),
                ("secret_echo", json!({"text": "open sesame"})),
            ],
        },
    ]
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
    assert_eq!(turn.tool_result_sent_to_model(), "Sunny and 21 °C in Paris");
    turn.assert_has("[agent] The tool said: Sunny and 21 °C in Paris");
    turn.assert_has("[turn] end_turn");
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
    let reason = "deleting every note needs the user's confirmation in the app";
    let sent = turn.tool_result_sent_to_model();
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

/// The prompt of the mid-turn change: `unlock` adds `secret_echo`, which
/// the model calls in its very next request if Copilot offers it there.
const VAULT: &str = "Open the vault and echo a secret.";

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
    println!("{}", turn.stdout);
}

/// The 2025 path, through a forwarder that refuses `server/discover` as a
/// 2025-only server does: Copilot falls back to `initialize`, gets an
/// `Mcp-Session-Id`, opens that session's `GET` stream, receives the
/// notice there before `unlock`'s result, and calls `secret_echo` in the
/// same turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copilot_calls_a_tool_added_mid_turn_on_its_2025_path() {
    let Some(copilot) = copilot().await else {
        return;
    };
    let _one = COPILOT.lock().await;
    let model = ScriptedModel::start(script()).await;
    let proxy = LegacyOnlyProxy::start().await;
    let via = proxy.addr.to_string();
    let turn = run_turn(
        &copilot,
        &model,
        &["--prompt", VAULT, "--mcp-via", &via],
        |line| {
            if let Some(rest) = line.strip_prefix("[host] the agent is given ") {
                let upstream = rest.rsplit(' ').next().unwrap();
                let addr = upstream
                    .trim_start_matches("http://")
                    .trim_end_matches("/mcp");
                proxy.forward_to(addr.parse().expect("the host's address"));
            }
        },
    )
    .await;
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
