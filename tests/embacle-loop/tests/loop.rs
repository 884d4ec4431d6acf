//! The loop embacle-tool-host exists for, run with embacle's own runner.
//!
//! Per turn, as a user writes it:
//!
//! ```text
//! let session = host.open_session(surface)?;
//! let request = ChatRequest::new(messages).with_mcp_servers(embacle_servers(&session.mcp_servers()));
//! let response = runner.converse(&request).await?;   // CopilotHeadlessRunner
//! session.close().await;                              // the bearer is revoked
//! ```
//!
//! against the pinned Copilot CLI (`tests/acp-agent`) whose bring-your-own-
//! model provider points at a scripted OpenAI Chat Completions endpoint in
//! this process, offline: an isolated `HOME`, the proxy variables pointed at a
//! sink that fails the test on any attempt to leave the machine.
//!
//! `CopilotHeadlessRunner` keeps a pool of warm `copilot --acp` processes
//! (two by default), opens a fresh ACP session per `converse` (`session/new`
//! with our entry, then `session/set_config_option` mode = autopilot because
//! MCP servers are present), and never closes a session. In autopilot the
//! runtime keeps prompting the model until it calls Copilot's own
//! `task_complete` tool (`{"summary": string}`, required), so the scripted
//! model ends every turn with that call and no text of its own: Copilot
//! then writes the summary as the turn's only `agent_message_chunk`, and
//! `converse` returns it as `content`. (Text *and* `task_complete` in one
//! reply comes back twice, concatenated: the text, then the summary.)
//! Autopilot also turns Copilot's `allow_all` on, so no permission request
//! reaches the runner's `PermissionPolicy` for these tools.
//!
//! Five turns through one runner, each with a fresh `ToolSession` on the same
//! host (so the warm processes see the same server name and URL turn after
//! turn, each time with a new bearer):
//!
//! 1-3. `echo`: called with the model's arguments, `calls_served() == 1`,
//!      the answer quotes the result.
//! 4.   `hang_up`, then the guard is dropped (the model waits for it before
//!      asking for `echo`): `echo` never reaches the surface, and the count
//!      stays at 1.
//! 5.   `unlock` adds `secret_echo` mid-turn: offered in the model's next
//!      request, called in the same turn.
//!
//! Needs Node.js-installed `tests/acp-agent` (`npm ci --prefix tests/acp-agent`);
//! without it the test says so and passes, unless `EMBACLE_NO_SKIP=1`.
#![cfg(unix)]

// The model endpoint's request reader and the refusing proxy, shared with
// the main crate's agent tests.
#[path = "../../support/stubs.rs"]
mod stubs;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use embacle::types::{ChatMessage, ChatRequest, McpHeader, McpServerConfig, McpTransport};
use embacle::{
    CopilotHeadlessConfig, CopilotHeadlessRunner, HeadlessToolResponse, PermissionPolicy,
};
use embacle_tool_host::agent::McpServers;
use embacle_tool_host::{
    ListChangedNotifier, Tool, ToolHost, ToolHostConfig, ToolOutcome, ToolSurface,
};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};

use stubs::{read_post, ProxySink};

/// The server name: Copilot offers our tools as `loop-echo`, ….
const SERVER: &str = "loop";
/// The model name Copilot is pinned to (`--model` and `~/.copilot/settings.json`,
/// both written by the runner) and sends its provider.
const MODEL: &str = "scripted-model";

// ---------------------------------------------------------------------------
// The conversion README.md shows.
// ---------------------------------------------------------------------------

/// This crate's `mcpServers` entries as embacle's `McpServerConfig`s.
fn embacle_servers(servers: &McpServers<'_>) -> Vec<McpServerConfig> {
    servers
        .entries()
        .iter()
        .map(|entry| McpServerConfig {
            name: entry.name().to_owned(),
            transport: McpTransport::Http {
                url: entry.url().to_owned(),
                headers: entry
                    .headers()
                    .iter()
                    .map(|h| McpHeader {
                        name: h.name().to_owned(),
                        value: h.value().to_owned(),
                    })
                    .collect(),
            },
        })
        .collect()
}

// ---------------------------------------------------------------------------
// main: the environment first, on one thread; then the turns.
// ---------------------------------------------------------------------------

fn main() {
    let Some(copilot) = copilot_cli() else { return };
    let dirs = Dirs::new();
    // Bound before any thread exists, so their ports can go into the
    // environment the runner copies into the Copilot child.
    let model_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let sink_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    set_environment(&dirs, &model_listener, &sink_listener);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let outcome = runtime.block_on(async {
        let model = ScriptedModel::start(model_listener);
        let sink = ProxySink::start_on(sink_listener);
        let result =
            tokio::time::timeout(Duration::from_secs(600), run(&copilot, &dirs, &model)).await;
        let escapes = sink.attempts();
        assert!(
            escapes.is_empty(),
            "Copilot tried to leave the machine: {escapes:?}"
        );
        result.expect("the five turns finished within 10 minutes")
    });
    drop(runtime);
    println!("{outcome}");
}

/// The pinned CLI, or `None` (after saying why) when it is not installed and
/// the test may skip.
fn copilot_cli() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../acp-agent/node_modules");
    // What `.bin/copilot` links to: a Node script (`#!/usr/bin/env node`,
    // PATH is passed to the child) that runs the platform package's native
    // binary with inherited stdio. Named directly: `.bin` may be missing
    // (an install with --no-bin-links).
    let cli = root.join("@github/copilot/npm-loader.js");
    let version = std::fs::read(root.join("@github/copilot/package.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|m| m["version"].as_str().map(str::to_owned));
    match version {
        Some(v) if cli.exists() => {
            assert_eq!(v, "1.0.102", "tests/acp-agent pins @github/copilot 1.0.102");
            Some(cli)
        }
        _ if std::env::var_os("EMBACLE_NO_SKIP").is_some() => {
            panic!(
                "{} is not installed (npm ci --prefix tests/acp-agent)",
                cli.display()
            )
        }
        _ => {
            eprintln!(
                "SKIPPED: {} is not installed (npm ci --prefix tests/acp-agent)",
                cli.display()
            );
            None
        }
    }
}

/// The test's own directories: a home, the session working directory, and
/// Copilot's package cache (kept across runs: the first start unpacks
/// ~150 MB).
struct Dirs {
    root: PathBuf,
    home: PathBuf,
    work: PathBuf,
    pkg_cache: PathBuf,
}

impl Dirs {
    fn new() -> Self {
        let root = std::env::temp_dir().join(format!("embacle-loop-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let (home, work) = (root.join("home"), root.join("work"));
        let pkg_cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("copilot-cache");
        for dir in [&home, &work, &pkg_cache] {
            std::fs::create_dir_all(dir).unwrap();
        }
        Self {
            root,
            home,
            work,
            pkg_cache,
        }
    }
}

impl Drop for Dirs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// What the runner hands its child comes from this process's environment,
/// through its allowlist (`embacle::copilot_common::runtime_env_keys`: HOME,
/// PATH, TERM, USER, LANG, the GitHub token variables, COPILOT_PROVIDER_*,
/// COPILOT_OFFLINE, the proxy and CA variables, COPILOT_PKG_CACHE_HOME,
/// COPILOT_AUTO_UPDATE, COPILOT_HOME, XDG_*, TMPDIR); the child's
/// environment is cleared first. So: set what the offline run needs, remove
/// what the developer's own set-up could bring in. Single-threaded here.
fn set_environment(dirs: &Dirs, model: &std::net::TcpListener, sink: &std::net::TcpListener) {
    let model_url = format!("http://{}/v1", model.local_addr().unwrap());
    let proxy = format!("http://{}", sink.local_addr().unwrap());
    for name in [
        "COPILOT_GITHUB_TOKEN",
        "GH_TOKEN",
        "GITHUB_TOKEN",
        "COPILOT_HOME",
        "COPILOT_PROVIDER_MAX_PROMPT_TOKENS",
        "XDG_CONFIG_HOME",
        "XDG_STATE_HOME",
        "XDG_CACHE_HOME",
        "XDG_DATA_HOME",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "NODE_EXTRA_CA_CERTS",
        "COPILOT_HEADLESS_MODEL",
        "EMBACLE_ACP_POOL_SIZE",
    ] {
        std::env::remove_var(name);
    }
    let vars: [(&str, &str); 13] = [
        // The runner writes `$HOME/.copilot/settings.json` (the model pin)
        // in *this* process: HOME must be the test's.
        ("HOME", dirs.home.to_str().unwrap()),
        ("COPILOT_PKG_CACHE_HOME", dirs.pkg_cache.to_str().unwrap()),
        ("COPILOT_AUTO_UPDATE", "false"),
        ("COPILOT_OFFLINE", "true"),
        ("COPILOT_PROVIDER_BASE_URL", &model_url),
        ("COPILOT_PROVIDER_TYPE", "openai"),
        ("COPILOT_PROVIDER_API_KEY", "sk-scripted"),
        ("HTTP_PROXY", &proxy),
        ("HTTPS_PROXY", &proxy),
        ("http_proxy", &proxy),
        ("https_proxy", &proxy),
        ("NO_PROXY", "127.0.0.1,localhost,::1"),
        ("no_proxy", "127.0.0.1,localhost,::1"),
    ];
    for (name, value) in vars {
        std::env::set_var(name, value);
    }
    // The first session/new may wait for the package to unpack.
    std::env::set_var("EMBACLE_ACP_SESSION_TIMEOUT_SECS", "120");
}

// ---------------------------------------------------------------------------
// The turns.
// ---------------------------------------------------------------------------

async fn run(copilot: &Path, dirs: &Dirs, model: &ScriptedModel) -> String {
    let host = ToolHost::bind(ToolHostConfig {
        server_name: SERVER.to_owned(),
        ..ToolHostConfig::default()
    })
    .await
    .unwrap();
    let runner = CopilotHeadlessRunner::with_config(CopilotHeadlessConfig {
        cli_path: Some(copilot.to_path_buf()),
        working_directory: Some(dirs.work.clone()),
        model: MODEL.to_owned(),
        github_token: None,
        permission_policy: PermissionPolicy::AutoApprove,
        max_history_turns: 0,
        mcp_tool_calling: true,
    });
    let mut log = String::new();
    let mut urls = BTreeSet::new();

    // 1-3: echo, each turn a fresh ToolSession.
    for (n, word) in [(1, "alpha"), (2, "bravo"), (3, "charlie")] {
        let surface = Arc::new(Surface::new());
        let session = host.open_session(Arc::clone(&surface)).unwrap();
        let servers = embacle_servers(&session.mcp_servers());
        urls.insert(url_of(&servers));
        let request = ChatRequest::new(vec![ChatMessage::user(format!(
            "[[turn {n}: echo {word}]]"
        ))])
        .with_mcp_servers(servers);
        let started = Instant::now();
        let response = runner
            .converse(&request)
            .await
            .unwrap_or_else(|e| panic!("turn {n}: {e}"));
        let served = session.close().await;
        assert_eq!(served, 1, "turn {n}: calls_served");
        assert_eq!(
            surface.calls(),
            [("echo".to_owned(), json!({"text": word}))],
            "turn {n}"
        );
        assert_eq!(
            response.content,
            format!("The tool said: {word}"),
            "turn {n}"
        );
        assert_observed(&response, n, &["loop-echo"]);
        let requests = model.requests_of(n);
        assert_eq!(
            requests.len(),
            2,
            "turn {n}: the echo call, then task_complete"
        );
        log += &format!(
            "turn {n}: echo {{\"text\":\"{word}\"}} -> {:?}, calls served {served}, {:?}\n",
            response.content,
            started.elapsed()
        );
    }
    assert_eq!(
        urls.len(),
        1,
        "every turn's entry has the same URL (only the bearer changes)"
    );
    assert_eq!(
        copilot_children().len(),
        2,
        "two warm processes served three turns (the default pool)"
    );

    // 4: the guard is dropped between hang_up's result and the model's next
    // request, which asks for echo with the dead bearer.
    {
        let n = 4;
        let surface = Arc::new(Surface::new());
        let session = host.open_session(Arc::clone(&surface)).unwrap();
        let request = ChatRequest::new(vec![ChatMessage::user(format!(
            "[[turn {n}: hangup delta]]"
        ))])
        .with_mcp_servers(embacle_servers(&session.mcp_servers()));
        let mut hangups = model.hangups.lock().await;
        let cut = async {
            let ack = hangups
                .recv()
                .await
                .expect("the model asks for the hang-up");
            let served = session.close().await; // revoked here
            let _ = ack.send(());
            served
        };
        let (response, served) = tokio::join!(runner.converse(&request), cut);
        let response = response.unwrap_or_else(|e| panic!("turn {n}: {e}"));
        assert_eq!(served, 1, "turn {n}: hang_up only");
        assert_eq!(
            surface.calls(),
            [("hang_up".to_owned(), json!({}))],
            "turn {n}: echo got nothing through"
        );
        let requests = model.requests_of(n);
        assert!(
            requests.iter().any(|r| called(r, "loop-echo")),
            "turn {n}: the model did ask for echo after the hang-up: {requests:?}"
        );
        // The dead bearer's 401 reaches the model as Copilot words it.
        assert!(
            response.content.contains("Re-authentication required"),
            "turn {n}: {}",
            response.content
        );
        log += &format!(
            "turn {n}: hang_up, guard dropped, echo refused -> {:?}, calls served {served}\n",
            response.content
        );
    }

    // 5: unlock adds secret_echo mid-turn; offered in the next request,
    // called in the same turn.
    {
        let n = 5;
        let surface = Arc::new(Surface::new());
        let session = host.open_session(Arc::clone(&surface)).unwrap();
        let _ = surface.notifier.set(session.list_changed_notifier());
        let request = ChatRequest::new(vec![ChatMessage::user(format!(
            "[[turn {n}: vault sesame]]"
        ))])
        .with_mcp_servers(embacle_servers(&session.mcp_servers()));
        let response = runner
            .converse(&request)
            .await
            .unwrap_or_else(|e| panic!("turn {n}: {e}"));
        let served = session.close().await;
        assert_eq!(served, 2, "turn {n}: unlock, secret_echo");
        assert_eq!(
            surface.calls(),
            [
                ("unlock".to_owned(), json!({})),
                ("secret_echo".to_owned(), json!({"text": "sesame"}))
            ]
        );
        let requests = model.requests_of(n);
        assert!(!offers(&requests[0], "loop-secret_echo"), "locked at first");
        assert!(
            offers(&requests[1], "loop-secret_echo"),
            "offered right after unlock's result"
        );
        assert_eq!(response.content, "The tool said: From the vault: sesame");
        log += &format!("turn {n}: unlock, secret_echo {{\"text\":\"sesame\"}} -> {:?}, calls served {served}\n",
            response.content);
    }

    assert_eq!(
        copilot_children().len(),
        2,
        "still the same two warm processes"
    );
    assert_eq!(host.live_sessions(), 0);
    // The runner has no shutdown: dropping it drops each child's stdin, and
    // Copilot exits on EOF (its `Child`, without kill_on_drop, is not reaped:
    // a zombie until this process ends).
    drop(runner);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !copilot_children().is_empty() {
        assert!(
            Instant::now() < deadline,
            "Copilot still runs 20 s after the runner dropped"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    log
}

fn url_of(servers: &[McpServerConfig]) -> String {
    match &servers[0].transport {
        McpTransport::Http { url, .. } => url.clone(),
        other => panic!("not http: {other:?}"),
    }
}

/// What the runner observed: each tool as Copilot titles it, completed, and
/// Copilot's own `task_complete` ("Task completion").
fn assert_observed(response: &HeadlessToolResponse, n: usize, tools: &[&str]) {
    let seen: Vec<(&str, &str)> = response
        .tool_calls
        .iter()
        .map(|t| (t.title.as_str(), t.status.as_str()))
        .collect();
    for tool in tools {
        assert!(seen.contains(&(tool, "Completed")), "turn {n}: {seen:?}");
    }
    assert!(
        seen.contains(&("Task completion", "Completed")),
        "turn {n}: {seen:?}"
    );
}

/// The live `copilot --acp` processes this process started (zombies excluded).
fn copilot_children() -> Vec<u32> {
    let me = std::process::id();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let mut rest = stat.rsplit_once(')')?.1.split_whitespace();
            let (state, ppid) = (rest.next()?, rest.next()?.parse::<u32>().ok()?);
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let acp = cmdline.split(|b| *b == 0).any(|arg| arg == b"--acp");
            (ppid == me && state != "Z" && acp).then_some(pid)
        })
        .collect()
}

// ---------------------------------------------------------------------------
// The surface: echo, hang_up, unlock (adds secret_echo); every call recorded.
// ---------------------------------------------------------------------------

struct Surface {
    base: Vec<Tool>,
    secret_echo: Tool,
    unlocked: std::sync::atomic::AtomicBool,
    notifier: OnceLock<ListChangedNotifier>,
    calls: Mutex<Vec<(String, Value)>>,
}

impl Surface {
    fn new() -> Self {
        let text = json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
        let none = json!({"type": "object", "additionalProperties": false});
        let tool = |name: &str, description: &str, schema: &Value| {
            Tool::new(name, description, schema.clone()).unwrap()
        };
        Self {
            base: vec![
                tool("echo", "Returns the text it is given.", &text),
                tool("hang_up", "Ends the call.", &none),
                tool(
                    "unlock",
                    "Unlocks the vault: adds the secret_echo tool.",
                    &none,
                ),
            ],
            secret_echo: tool("secret_echo", "Echoes a text from inside the vault.", &text),
            unlocked: Default::default(),
            notifier: OnceLock::new(),
            calls: Mutex::default(),
        }
    }

    fn calls(&self) -> Vec<(String, Value)> {
        self.calls.lock().unwrap().clone()
    }
}

impl ToolSurface for Surface {
    async fn list_tools(&self) -> Arc<[Tool]> {
        let mut tools = self.base.clone();
        if self.unlocked.load(std::sync::atomic::Ordering::Acquire) {
            tools.push(self.secret_echo.clone());
        }
        tools.into()
    }

    async fn call(&self, name: &str, arguments: &Value) -> ToolOutcome {
        self.calls
            .lock()
            .unwrap()
            .push((name.to_owned(), arguments.clone()));
        let text = arguments.get("text").and_then(Value::as_str);
        match (name, text) {
            ("echo", Some(text)) => ToolOutcome::text(text),
            ("hang_up", _) => ToolOutcome::text("hung up"),
            ("unlock", _) => {
                // Changed, announced, then returned: the notice is written
                // before the result.
                if !self
                    .unlocked
                    .swap(true, std::sync::atomic::Ordering::AcqRel)
                {
                    if let Some(notifier) = self.notifier.get() {
                        notifier.notify();
                    }
                }
                ToolOutcome::text("The vault is open: secret_echo is now available.")
            }
            ("secret_echo", Some(text)) => ToolOutcome::text(format!("From the vault: {text}")),
            _ => ToolOutcome::refused(format!("bad call: {name} {arguments}")),
        }
    }
}

// ---------------------------------------------------------------------------
// The scripted model: OpenAI Chat Completions, streamed.
// ---------------------------------------------------------------------------

/// The prompt of turn `n` is `[[turn N: VERB WORD]]`; Copilot wraps it in a
/// user message of its own (date, autopilot notice), so the model looks for
/// the marker in every user message. Per verb, the calls the model makes,
/// one per request, each once the previous one's result is in; then
/// `task_complete` with the summary `The tool said: LAST RESULT`:
///
/// - `echo W`: `echo {"text": W}`;
/// - `hangup W`: `hang_up {}`, then (after the test dropped the guard)
///   `echo {"text": W}`;
/// - `vault W`: `unlock {}`, then `secret_echo {"text": W}` if offered.
///
/// Every request body is kept, by turn.
struct ScriptedModel {
    requests: Arc<Mutex<Vec<(usize, Value)>>>,
    /// One message per hang-up: the test drops the guard, then answers.
    hangups: tokio::sync::Mutex<mpsc::UnboundedReceiver<oneshot::Sender<()>>>,
}

impl ScriptedModel {
    fn start(listener: std::net::TcpListener) -> Self {
        listener.set_nonblocking(true).unwrap();
        let listener = TcpListener::from_std(listener).unwrap();
        let requests: Arc<Mutex<Vec<(usize, Value)>>> = Arc::default();
        let (hangup_tx, hangups) = mpsc::unbounded_channel();
        let kept = Arc::clone(&requests);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (kept, hangup_tx) = (Arc::clone(&kept), hangup_tx.clone());
                tokio::spawn(async move { serve_model(stream, &kept, &hangup_tx).await });
            }
        });
        Self {
            requests,
            hangups: tokio::sync::Mutex::new(hangups),
        }
    }

    fn requests_of(&self, turn: usize) -> Vec<Value> {
        let all = self.requests.lock().unwrap();
        all.iter()
            .filter(|(n, _)| *n == turn)
            .map(|(_, body)| body.clone())
            .collect()
    }
}

async fn serve_model(
    mut stream: TcpStream,
    kept: &Mutex<Vec<(usize, Value)>>,
    hangup_tx: &mpsc::UnboundedSender<oneshot::Sender<()>>,
) {
    let (status, body) = match read_post(&mut stream).await {
        Ok((path, body)) if path.ends_with("/chat/completions") => {
            let turn = Turn::of(&body);
            if let Some(turn) = &turn {
                kept.lock().unwrap().push((turn.n, body.clone()));
            }
            let step = next_step(turn.as_ref(), &body);
            if let Step::HangUpThenCall(..) = step {
                let (ack, acked) = oneshot::channel();
                let _ = hangup_tx.send(ack);
                let _ = acked.await;
            }
            (200, stream_body(&body, step))
        }
        Ok((path, _)) => (
            400,
            format!("{{\"error\":{{\"message\":\"not served: {path}\"}}}}"),
        ),
        Err(why) => (400, json!({"error": {"message": why}}).to_string()),
    };
    let kind = if status == 200 {
        "text/event-stream"
    } else {
        "application/json"
    };
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        if status == 200 { "OK" } else { "Bad Request" },
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// The turn a request belongs to, from the marker in its user messages.
struct Turn {
    n: usize,
    verb: String,
    word: String,
}

impl Turn {
    fn of(body: &Value) -> Option<Self> {
        let messages = body["messages"].as_array()?;
        messages
            .iter()
            .filter(|m| m["role"] == "user")
            .find_map(|m| {
                let text = text_of(&m["content"]);
                let inner = text.split("[[turn ").nth(1)?.split("]]").next()?.to_owned();
                let (n, command) = inner.split_once(": ")?;
                let (verb, word) = command.split_once(' ')?;
                Some(Self {
                    n: n.parse().ok()?,
                    verb: verb.to_owned(),
                    word: word.to_owned(),
                })
            })
    }
}

enum Step {
    /// Call the offered tool (its name as offered) with these arguments.
    Call(String, Value),
    /// The test drops the guard first, then the call is made.
    HangUpThenCall(String, Value),
    /// `task_complete` with this summary: the turn's answer.
    Complete(String),
}

/// The calls made so far this turn, by tool name as offered, with their
/// results, oldest first (ids are matched to the assistant messages' calls).
fn results(body: &Value) -> Vec<(String, String)> {
    let messages = body["messages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let name_of = |id: &str| {
        messages
            .iter()
            .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
            .find(|c| c["id"] == id)
            .and_then(|c| c["function"]["name"].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                name_of(m["tool_call_id"].as_str().unwrap_or_default()),
                text_of(&m["content"]),
            )
        })
        .collect()
}

fn next_step(turn: Option<&Turn>, body: &Value) -> Step {
    let Some(turn) = turn else {
        return Step::Complete("No turn marker.".to_owned());
    };
    let done = results(body);
    let offered = |tool: &str| offers(body, &format!("{SERVER}-{tool}"));
    let call = |tool: &str, args: Value| Step::Call(format!("{SERVER}-{tool}"), args);
    let word = json!({"text": turn.word});
    let answer = || {
        Step::Complete(format!(
            "The tool said: {}",
            done.last().map_or("nothing", |(_, r)| r.as_str())
        ))
    };
    match (turn.verb.as_str(), done.len()) {
        ("echo", 0) => call("echo", word),
        ("hangup", 0) => call("hang_up", json!({})),
        ("hangup", 1) if offered("echo") => Step::HangUpThenCall(format!("{SERVER}-echo"), word),
        ("vault", 0) => call("unlock", json!({})),
        ("vault", 1) if offered("secret_echo") => call("secret_echo", word),
        ("vault", 1) => Step::Complete("secret_echo was not offered after unlock.".to_owned()),
        _ => answer(),
    }
}

/// The step as a `chat.completion.chunk` stream: a tool call and
/// `finish_reason: tool_calls`, never text (see the crate doc).
fn stream_body(body: &Value, step: Step) -> String {
    let model = body["model"].clone();
    let n = results(body).len() + 1;
    let (name, arguments) = match step {
        Step::Call(name, args) | Step::HangUpThenCall(name, args) => (name, args),
        Step::Complete(summary) => ("task_complete".to_owned(), json!({"summary": summary})),
    };
    let call = json!({"index": 0, "id": format!("call_{n}"), "type": "function",
        "function": {"name": name, "arguments": arguments.to_string()}});
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 0, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let events = [
        chunk(
            json!({"role": "assistant", "content": null, "tool_calls": [call]}),
            Value::Null,
        ),
        chunk(json!({}), json!("tool_calls")),
    ];
    events
        .iter()
        .map(|e| format!("data: {e}\n\n"))
        .collect::<String>()
        + "data: [DONE]\n\n"
}

fn offers(body: &Value, name: &str) -> bool {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|t| t["function"]["name"] == name)
}

fn called(body: &Value, name: &str) -> bool {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
        .any(|c| c["function"]["name"] == name)
}

fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    }
}
