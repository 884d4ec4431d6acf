//! The whole loop with a real agent: `examples/acp_turn.rs` drives GitHub
//! Copilot CLI (`copilot --acp`, pinned in `tests/acp-agent`) through one
//! turn, with no login and no network: Copilot's bring-your-own-model
//! provider points at a scripted OpenAI-compatible endpoint
//! (`support::scripted_model`), which calls one of the host's tools and then
//! answers with text quoting the tool's result.
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
use support::processes::{client_dir, ensure_installed, example_path};
use support::scripted_model::{ScriptedModel, ToolCallScript};
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
/// returns what it printed.
async fn run_turn(copilot: &Path, model: &ScriptedModel, args: &[&str]) -> Turn {
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
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(180), command.output())
        .await
        .expect("the turn finished within 3 minutes")
        .expect("acp_turn runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "acp_turn failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
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
    Some(run_turn(&copilot, &model, args).await)
}

fn script() -> Vec<ToolCallScript> {
    vec![
        ToolCallScript {
            trigger: "weather",
            tool: "get_weather",
            arguments: json!({"city": "Paris"}),
        },
        ToolCallScript {
            trigger: "notes",
            tool: "delete_all_notes",
            arguments: json!({}),
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
