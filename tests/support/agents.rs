//! Real ACP agents, driven offline through `examples/acp_turn.rs`: the
//! pinned packages (`tests/acp-agent`), each agent's command line and
//! environment, an isolated home, a proxy sink that records every attempt
//! to reach beyond the machine, and what a turn printed.
//!
//! Every agent runs with an empty environment but for `PATH` and what the
//! test sets, so nothing of the developer's own set-up (a home directory,
//! a login, a provider, a token, `IS_SANDBOX`) can change what it does.
//! `HTTP_PROXY`, `HTTPS_PROXY` and `ALL_PROXY` (both cases) point at the
//! sink, `NO_PROXY` covers loopback: an agent that honours them cannot
//! reach the network, and the test sees that it tried.
//!
//! Needs Node.js and npm, on Linux (the turn's processes are read from
//! `/proc`: tests/platform_needs.rs); the Python agents (fast-agent, Mistral
//! Vibe) need Python 3.12 or newer, which `tests/acp-agent-python/install`
//! finds. `.ci/run` installs the pinned packages and sets
//! `EMBACLE_NO_SKIP=1`, under which a missing Node, npm or Python fails the
//! tests; elsewhere each test says on the terminal (past the test harness's
//! capture) that it was skipped, and why, and returns.
#![cfg(target_os = "linux")]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::Command;

use super::mcp_proxy::McpProxy;
use super::processes::{client_dir, ensure_installed, example_path, has_node_and_npm};
use super::scripted_model::ScriptedModel;
use super::stubs::ProxySink;

/// The pinned packages, one per agent (`tests/acp-agent/package.json`).
const PACKAGES: [&str; 5] = [
    "@github/copilot",
    "@agentclientprotocol/claude-agent-acp",
    "@google/gemini-cli",
    "@agentclientprotocol/codex-acp",
    "@kilocode/cli-linux-x64",
];

/// Agents unpack and cache things on first run: one turn at a time.
pub static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// `tests/acp-agent`, installed; `None` (after saying why) when Node or
/// npm is missing and the tests may skip.
pub async fn agents_dir() -> Option<PathBuf> {
    if !has_node_and_npm("the ACP agents cannot run; this agent test").await {
        return None;
    }
    let dir = client_dir("acp-agent");
    for package in PACKAGES {
        ensure_installed(&dir, package).await;
    }
    Some(dir)
}

/// A Python agent's venv (`tests/acp-agent-python/.venv-NAME`, `NAME`
/// being `fast-agent` or `vibe`), installed by that folder's `install`
/// when missing; `None` (after saying why) when it cannot be, and the
/// tests may skip.
pub async fn python_agent(name: &str) -> Option<PathBuf> {
    static INSTALL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _turn = INSTALL.lock().await;
    let dir = client_dir("acp-agent-python");
    let installed = Command::new(dir.join("install"))
        .arg(name)
        .stdout(Stdio::null())
        .output()
        .await
        .expect("tests/acp-agent-python/install runs");
    if !installed.status.success() {
        super::skipped(&format!(
            "{name} could not be installed, so it did not run: {}",
            String::from_utf8_lossy(&installed.stderr).trim()
        ));
        return None;
    }
    Some(dir.join(format!(".venv-{name}")))
}

/// The installed version of `package` in the Python agent's `venv`,
/// observed in README.md's agent table as `` `PACKAGE` VERSION ``.
pub fn observe_python_package(agent: &str, venv: &Path, package: &str) {
    let asked = std::process::Command::new(venv.join("bin").join("python"))
        .args([
            "-c",
            &format!("import importlib.metadata as m; print(m.version({package:?}))"),
        ])
        .output()
        .unwrap();
    let version = String::from_utf8(asked.stdout).unwrap();
    observe(agent, "package", &format!("`{package}` {}", version.trim()));
}

/// An agent's command line and environment.
pub struct Agent {
    pub command: Vec<OsString>,
    pub env: Vec<(&'static str, OsString)>,
    /// The agent's isolated home (and whatever else it writes), removed
    /// when the agent is dropped.
    pub home: TempDir,
}

impl Agent {
    /// A command with a fresh home, `HOME` set to it.
    pub fn new(command: Vec<OsString>) -> Self {
        let home = TempDir::new("home");
        Self {
            command,
            env: vec![("HOME", home.0.clone().into())],
            home,
        }
    }

    pub fn env(mut self, name: &'static str, value: impl Into<OsString>) -> Self {
        self.env.push((name, value.into()));
        self
    }
}

/// What one run of `acp_turn` printed, what the model endpoint received,
/// what the agent tried to reach beyond the machine, and where the bearer
/// showed up outside the host.
pub struct Turn {
    pub stdout: String,
    pub requests: Vec<Value>,
    /// The model requests that reviewed a tool call (Claude Code's
    /// auto-mode classifier, Codex's guardian).
    pub reviews: Vec<Value>,
    pub escapes: Vec<String>,
    pub bearer_seen: BearerSeen,
}

/// Where a bearer (`eth_` and 88 hex digits) showed up during the turn: in
/// a process's command line (readable by every local user), in a
/// process's environment, or in a file under the agent's home. A
/// `Bearer ${NAME}` reference is not a bearer.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct BearerSeen {
    pub command_line: bool,
    pub environment: bool,
    pub files: Vec<PathBuf>,
}

/// Samples the processes of the turn — `root` and its descendants — every
/// 50 ms, for a bearer in a command line or environment, until `done`.
/// (Other processes are not the turn's: an earlier test's agent may still
/// be exiting.)
async fn watch_for_bearers(root: u32, done: tokio::sync::watch::Receiver<bool>) -> BearerSeen {
    let mut seen = BearerSeen::default();
    while !*done.borrow() {
        for pid in descendants(root) {
            let dir = Path::new("/proc").join(pid.to_string());
            let holds = |file: &str| std::fs::read(dir.join(file)).is_ok_and(|b| holds_bearer(&b));
            seen.command_line |= holds("cmdline");
            seen.environment |= holds("environ");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    seen
}

/// `root` and every process whose parent chain reaches it.
fn descendants(root: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // `PID (COMM) STATE PPID …`: COMM may hold spaces and parentheses.
            let ppid = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            Some((pid, ppid))
        })
        .collect();
    let mut found = vec![root];
    let mut at = 0;
    while at < found.len() {
        let parent = found[at];
        found.extend(
            parents
                .iter()
                .filter(|(_, p)| *p == parent)
                .map(|(c, _)| *c),
        );
        at += 1;
    }
    found
}

/// Whether `bytes` hold a bearer's text: `eth_` and 88 hex digits.
pub fn holds_bearer(bytes: &[u8]) -> bool {
    const DIGITS: usize = 88;
    bytes.windows(4 + DIGITS).any(|w| {
        w.starts_with(b"eth_")
            && w[4..]
                .iter()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
    })
}

/// Files under `dir` that hold a bearer.
fn files_with_bearers(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => pending.push(path),
                Ok(kind) if kind.is_file() => {
                    let bytes = std::fs::read(&path).unwrap_or_default();
                    if holds_bearer(&bytes) {
                        found.push(path);
                    }
                }
                _ => {}
            }
        }
    }
    found
}

impl Turn {
    pub fn lines(&self, tag: &str) -> Vec<&str> {
        self.stdout.lines().filter(|l| l.starts_with(tag)).collect()
    }

    pub fn assert_has(&self, line: &str) {
        assert!(
            self.stdout.lines().any(|l| l == line),
            "no line {line:?} in:\n{}",
            self.stdout
        );
    }

    /// The tools offered in the model request `n`.
    pub fn offered(&self, n: usize, names: impl Fn(&Value) -> Vec<String>) -> Vec<String> {
        names(&self.requests[n])
    }
}

/// Runs `acp_turn` with `args` against `agent`, with `model` answering and
/// the proxy sink in place; returns what it printed. `on_line` sees each
/// line as it is printed. Fails the test if the agent tried to reach
/// beyond the machine.
pub async fn run_turn(
    agent: &Agent,
    model: &ScriptedModel,
    args: &[&str],
    on_line: impl FnMut(&str),
) -> Turn {
    run_turn_within(agent, model, args, Duration::from_secs(180), on_line).await
}

/// [`run_turn`], for a turn that may take up to `limit`.
pub async fn run_turn_within(
    agent: &Agent,
    model: &ScriptedModel,
    args: &[&str],
    limit: Duration,
    mut on_line: impl FnMut(&str),
) -> Turn {
    let sink = ProxySink::start().await;
    let work = TempDir::new("work");
    let mut command = turn_command(agent, &sink, &work, args);
    let (finished, done) = tokio::sync::watch::channel(false);
    let mut child = command.spawn().expect("acp_turn runs");
    let watcher = tokio::spawn(watch_for_bearers(child.id().unwrap(), done));
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
    let (stdout, status) = tokio::time::timeout(limit, run)
        .await
        .unwrap_or_else(|_| panic!("the turn did not finish within {limit:?}"));
    let errors = errors.await.unwrap();
    finished.send_replace(true);
    let mut bearer_seen = watcher.await.unwrap();
    bearer_seen.files = files_with_bearers(agent.home.path());
    bearer_seen.files.extend(files_with_bearers(work.path()));
    assert!(
        status.success(),
        "acp_turn failed ({status}):\n{stdout}\n{errors}"
    );
    let turn = Turn {
        stdout,
        requests: model.requests(),
        reviews: model.reviews(),
        escapes: sink.attempts(),
        bearer_seen,
    };
    assert!(
        turn.escapes.is_empty(),
        "the agent tried to reach beyond the machine: {:?}\n{}",
        turn.escapes,
        turn.stdout
    );
    turn
}

/// `acp_turn ARGS -- AGENT` in `work`, with nothing of this process's
/// environment but `PATH`, and the sink as every proxy.
fn turn_command(agent: &Agent, sink: &ProxySink, work: &TempDir, args: &[&str]) -> Command {
    let mut command = Command::new(example_path("acp_turn"));
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(sink.env())
        .envs(agent.env.iter().map(|(k, v)| (*k, v)))
        .args(args)
        .arg("--")
        .args(&agent.command)
        .current_dir(&work.0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// Runs `acp_turn` with `args` against `agent`, as [`run_turn`] does, for a
/// turn that must fail: what it printed, stdout then stderr. Fails the
/// test if `acp_turn` succeeded, or if the agent tried to reach beyond
/// the machine.
pub async fn run_failing_turn(agent: &Agent, args: &[&str]) -> String {
    let sink = ProxySink::start().await;
    let work = TempDir::new("work");
    let run = turn_command(agent, &sink, &work, args).output();
    let output = tokio::time::timeout(Duration::from_secs(180), run)
        .await
        .expect("the turn finished within 3 minutes")
        .expect("acp_turn runs");
    let printed = String::from_utf8_lossy(&output.stdout) + String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "acp_turn succeeded:\n{printed}");
    assert!(sink.attempts().is_empty(), "{:?}", sink.attempts());
    printed.into_owned()
}

/// [`run_turn`] with the agent given `proxy`'s address (`--mcp-via`)
/// instead of the host's; the proxy forwards to the host once `acp_turn`
/// names it.
pub async fn run_turn_through(
    proxy: &McpProxy,
    agent: &Agent,
    model: &ScriptedModel,
    args: &[&str],
) -> Turn {
    let via = proxy.addr.to_string();
    let mut args = args.to_vec();
    args.extend(["--mcp-via", via.as_str()]);
    run_turn(agent, model, &args, |line| proxy.follow(line)).await
}

/// A directory of the test's own, removed when dropped, passed or failed.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(what: &str) -> Self {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("embacle-agent-{what}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The script every agent test runs against `acp_turn`'s demo tools.
pub fn demo_script() -> Vec<super::scripted_model::ToolCallScript> {
    use super::scripted_model::ToolCallScript;
    use serde_json::json;
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
        ToolCallScript {
            trigger: "secret now",
            calls: vec![("secret_echo", json!({"text": "open sesame"}))],
        },
    ]
}

/// The tool names a Chat Completions request offers its model
/// (`tools[].function.name`): what fast-agent, Mistral Vibe and Kilo send.
pub fn chat_offered(request: &Value) -> Vec<String> {
    let tools = request["tools"].as_array().into_iter().flatten();
    tools
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

/// The text of a Chat Completions request's last `role: tool` message.
pub fn last_tool_message(request: &Value) -> String {
    let messages = request["messages"].as_array().unwrap();
    let tool = messages.iter().rev().find(|m| m["role"] == "tool");
    tool.expect("a tool message")["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The demo prompts.
pub const WEATHER: &str = "What is the weather in Paris?";
pub const NOTES: &str = "Delete all my notes.";
pub const VAULT: &str = "Open the vault and echo a secret.";
pub const SECRET_NOW: &str = "Echo the secret now.";
/// What the refusing tool says.
pub const REFUSAL: &str = "deleting every note needs the user's confirmation in the app";

/// The cell of README.md's agent table in `agent`'s column (a header that
/// names it: `Copilot`, `Claude`, `Gemini`, `Codex`, `fast-agent`, `Vibe`,
/// `Kilo`) and the row whose
/// first cell starts with `row`.
pub fn readme_cell(agent: &str, row: &str) -> String {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let cells = |line: &str| -> Vec<String> {
        let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
        inner.split(" | ").map(|c| c.trim().to_owned()).collect()
    };
    let mut lines = readme
        .lines()
        .skip_while(|l| !l.starts_with("| | Copilot CLI |"));
    let header = cells(lines.next().expect("README.md has the agent table"));
    let column = header
        .iter()
        .position(|h| h.contains(agent))
        .unwrap_or_else(|| panic!("no column for {agent} in {header:?}"));
    lines
        .skip(1)
        .take_while(|l| l.starts_with('|'))
        .map(cells)
        .find(|r| r[0].starts_with(row))
        .unwrap_or_else(|| panic!("no row {row:?} in README.md's agent table"))
        .get(column)
        .cloned()
        .unwrap_or_default()
}

/// What an agent test observed, checked against README.md's agent table:
/// the cell for `agent` and `row` must say `observed`, so the table
/// cannot drift from what the pinned agents do.
pub fn observe(agent: &str, row: &str, observed: &str) {
    let cell = readme_cell(agent, row);
    assert!(
        cell.contains(observed),
        "README.md's agent table, {agent} / {row}: {cell:?} does not say what the test observed: {observed:?}"
    );
}

/// The installed version of `package` in `tests/acp-agent`, observed in
/// README.md's agent table as `` `PACKAGE` VERSION ``.
pub fn observe_package(agent: &str, package: &str) {
    let manifest = client_dir("acp-agent")
        .join("node_modules")
        .join(package)
        .join("package.json");
    let manifest: Value = serde_json::from_slice(&std::fs::read(manifest).unwrap()).unwrap();
    let version = manifest["version"].as_str().unwrap();
    observe(agent, "package", &format!("`{package}` {version}"));
}

/// A run of `acp_turn --sessions 2 --prompt WEATHER`: one agent process,
/// two ACP sessions in a row, each with a fresh `ToolSession` (a new
/// bearer, the same URL); each listed the tools and called `get_weather`
/// with its own bearer (each guard counts only requests that presented
/// its bearer). Whether the agent offers `session/close` is checked
/// against README.md's agent table.
pub fn assert_two_sessions(turn: &Turn, agent: &str) {
    let fresh = turn.lines("[host] session 2: a fresh ToolSession");
    assert_eq!(fresh.len(), 1, "{}", turn.stdout);
    let calls = turn.lines(r#"[host] tool call get_weather {"city":"Paris"}"#);
    assert_eq!(calls.len(), 2, "{}", turn.stdout);
    let served = turn.lines("[host] calls served: 1");
    assert_eq!(
        served.len(),
        2,
        "each session served its call: {}",
        turn.stdout
    );
    let listed: Vec<u64> = turn
        .lines("[host] tools/list answered with this session's bearer: ")
        .iter()
        .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
        .collect();
    assert!(
        listed.len() == 2 && listed.iter().all(|&n| n >= 1),
        "each session listed with its own bearer: {listed:?}\n{}",
        turn.stdout
    );
    let closed = turn.lines("[host] session/close").len();
    assert!(closed == 0 || closed == 2, "{}", turn.stdout);
    observe(
        agent,
        "`session/close`",
        if closed == 2 {
            "offered"
        } else {
            "not offered"
        },
    );
}

/// The keys of the `_meta` the agent sent with its call of `tool`, as
/// `acp_turn` printed them, observed in README.md's agent table (the row
/// "`_meta` on `tools/call`": `none`, or each key in backquotes).
pub fn observe_meta(agent: &str, turn: &Turn, tool: &str) {
    let tag = format!("[host] _meta of {tool}: [");
    let lines = turn.lines(&tag);
    let keys = lines
        .first()
        .unwrap_or_else(|| panic!("no {tag:?} line:\n{}", turn.stdout))
        .strip_prefix(tag.as_str())
        .and_then(|rest| rest.strip_suffix(']'))
        .unwrap();
    let cell = match keys {
        "" => "none".to_owned(),
        keys => keys
            .split(", ")
            .map(|key| format!("`{key}`"))
            .collect::<Vec<_>>()
            .join(", "),
    };
    observe(agent, "`_meta` on `tools/call`", &cell);
}
