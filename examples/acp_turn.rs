//! One whole ACP turn: host demo tools, start an ACP agent, give it this
//! host's MCP server in `session/new`, send a prompt, print what the agent
//! does, then revoke the bearer and say how many calls the tools served.
//!
//! ```text
//! cargo run --example acp_turn -- [--prompt TEXT]... [--permission allow|deny]
//!     [--config-file copilot-cli [--config-timeout-ms MS]] [--mcp-via HOST:PORT] [--bearer-in-env NAME]
//!     [--ping-after-exit] [--sessions N] [--name-per-session] [--agent-takes-http NAME]
//!     -- AGENT_COMMAND [ARGS...]
//! cargo run --example acp_turn -- --prompt "What is the weather in Paris?" -- copilot --acp
//! ```
//!
//! `--prompt` may be given more than once: each is one turn, in order, in
//! the same ACP session. `--sessions N` runs the prompts in N ACP sessions
//! in a row on the one agent process, each with a fresh `ToolSession` (a
//! new bearer, the same server name and URL), as a runner that keeps warm
//! agents does. With `--name-per-session`, the entry of session N > 1 is
//! named `demo-N` instead of `demo`: fast-agent keeps one MCP server per
//! name for its whole process, and refuses a second session's entry
//! (another bearer) under a name it already holds.
//!
//! # Agents
//!
//! Each agent tested (`tests/agent_*.rs`, versions pinned in
//! `tests/acp-agent`), with its command line and what it needs in its
//! environment; the tests run each offline, against a scripted model of its
//! provider's API:
//!
//! - **GitHub Copilot CLI**: `-- copilot --acp` (add `--no-auto-update
//!   --disable-client-telemetry`). Its own model provider needs a login; a
//!   bring-your-own-model one takes `COPILOT_PROVIDER_BASE_URL`,
//!   `COPILOT_PROVIDER_TYPE=openai`, `COPILOT_PROVIDER_API_KEY` and
//!   `COPILOT_MODEL`.
//! - **Claude**, through its adapter (`@agentclientprotocol/claude-agent-acp`):
//!   `-- claude-agent-acp`, with `ANTHROPIC_API_KEY` (or `ANTHROPIC_BASE_URL`
//!   for another endpoint). `DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1
//!   CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1
//!   CLAUDE_CODE_ENABLE_PROMPT_SUGGESTION=false` keep it quiet; as root,
//!   `IS_SANDBOX` must be unset or `1`, or the CLI exits and `session/new`
//!   fails. Its model loads MCP tools with `ToolSearch` before calling
//!   them. By default (auto mode) it asks its own classifier, a model
//!   request, about every MCP call, and this client is never asked;
//!   `{"permissions":{"defaultMode":"default"}}` in
//!   `$CLAUDE_CONFIG_DIR/settings.json` makes it ask this client instead.
//!   With `--bearer-in-env NAME` the bearer stays off its command line.
//! - **Gemini CLI**: `-- gemini --acp`, with `GEMINI_API_KEY` (or
//!   `GOOGLE_GEMINI_BASE_URL`) and **`GEMINI_CLI_TRUST_WORKSPACE=true`**
//!   (or `--skip-trust`): in a workspace it does not trust, it drops every
//!   ACP MCP server without a word, and the first-listing wait below says
//!   so. `privacy.usageStatisticsEnabled: false` in its settings stops its
//!   usage statistics; `GEMINI_CLI_NO_RELAUNCH=true` saves a second Node
//!   process. It asks permission for every MCP call.
//! - **Codex**, through its adapter (`@agentclientprotocol/codex-acp`,
//!   which drives `codex app-server`): `-- codex-acp`, with `CODEX_PATH`
//!   naming the native `codex` (else it runs the npm launcher) and
//!   `CODEX_HOME` holding a `config.toml` whose provider has
//!   `wire_api = "responses"`, and `[features] plugins = false` (else it
//!   tries GitHub and ChatGPT). By default ("Auto review") it has its
//!   guardian, a model request, review tools without `readOnlyHint`, and
//!   this client is never asked; `INITIAL_AGENT_MODE=workspace-write` makes
//!   it ask this client instead.
//! - **fast-agent** (PyPI `fast-agent-mcp`): `-- fast-agent-acp --model
//!   generic.NAME` with `GENERIC_BASE_URL` (an OpenAI-compatible endpoint),
//!   and `FAST_AGENT_HOME` (else it writes `./.fast-agent`). It asks
//!   permission for every MCP call, and keeps one MCP server per name for
//!   its whole process: give `--name-per-session` with `--sessions`.
//! - **Mistral Vibe** (PyPI `mistral-vibe`): `-- vibe-acp`, with a provider
//!   in `$HOME/.vibe/config.toml`, and `--agent-takes-http
//!   @mistralai/mistral-vibe`: it takes an `http` server without declaring
//!   it. Its model reaches MCP tools only from code (`run_typescript`). It
//!   asks permission for every MCP call.
//! - **Kilo** (npm `@kilocode/cli`, or its platform package): `-- kilo acp`,
//!   with a provider and `enabled_providers` in
//!   `$HOME/.config/kilo/kilo.json`, `KILO_DISABLE_MODELS_FETCH=1` and
//!   `KILO_TELEMETRY_LEVEL=off`. Its MCP servers belong to the working
//!   directory, not the ACP session: one live session per directory.
//!
//! The agent is spawned with this process's environment and spoken to in
//! ACP v1 over its stdio (JSON-RPC 2.0, one message per line), written by
//! hand here: no ACP crate is needed.
//!
//! 1. `initialize`, then a check of the agent's capabilities: an agent that
//!    cannot take an `http` MCP server gets a clear message, not an entry
//!    it would drop (`McpServers::for_acp_agent`). With
//!    `--agent-takes-http NAME`, an agent whose `agentInfo.name` is `NAME`
//!    is served though it does not declare `http`
//!    (`McpServers::for_acp_agent_taking_http`): Mistral Vibe's way.
//! 2. `session/new` with the current directory as `cwd` and the session's
//!    `mcpServers`. With `--config-file copilot-cli`, the server goes in a
//!    config file instead (`ToolSession::write_mcp_config`, in a directory
//!    of this process's own, handed over with `Runner::config_args`), and
//!    `mcpServers` is empty; `--config-timeout-ms MS` adds each server's
//!    `timeout` to the file (Copilot CLI's deadline for one call).
//!    With `--bearer-in-env NAME`, the entry's `Authorization` reads
//!    `Bearer ${NAME}` (`McpServers::with_bearer_from_env`) and the bearer
//!    goes in `session/new`'s `_meta` as the session's environment, which
//!    Claude's adapter passes to the Claude Code process it starts, and
//!    Claude Code expands: the bearer is then on no command line.
//!    With `--mcp-via HOST:PORT`, the entry's URL names that address
//!    instead of the host's own: a forwarder in front of the host (the
//!    tests put one there that refuses `server/discover`, as a 2025-only
//!    server does, to drive the agent's 2025 path).
//! 3. A wait of up to 10 s for the agent's first `tools/list`
//!    (`ToolSession::first_listing`), and a line that says whether it
//!    came: a prompt sent before it may run without the tools.
//! 4. `session/prompt` (once per `--prompt`), printing each `session/update` as it arrives:
//!    message and thought chunks, tool calls and their status, plans.
//!    `session/request_permission` is answered by `--permission`: allow
//!    once (the default) or deny. Other agent requests (file system,
//!    terminal) are refused: this client declares neither capability.
//! 5. Where the agent offers `session/close`
//!    (`agentCapabilities.sessionCapabilities.close`), the ACP session is
//!    closed before its guard drops: an ACP session must never be prompted
//!    again once its bearer is dead, and closing frees what the agent holds
//!    for it (Claude's adapter keeps a Claude Code process per session).
//! 6. With `--ping-after-exit`, once the agent has exited, a `ping` with
//!    the bearer shows that the session outlived the agent's own MCP
//!    session (Codex `DELETE`s its MCP session at exit).
//! 7. When the turn ends, the guard is dropped (the bearer dies, and any
//!    config file with it) and `calls_served()` is printed.
//!
//! Output lines start with a tag: `[agent]` (the agent's text), `[thought]`,
//! `[tool call]`, `[tool update]`, `[permission]`, `[plan]`, `[turn]` (the
//! stop reason) and `[host]` (what the tools saw). Errors go to stderr and
//! exit with status 1.
#![deny(warnings)]

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use embacle_tool_host::agent::{McpServers, Runner};
use embacle_tool_host::content::ToolAnnotations;
use embacle_tool_host::{
    Error, ListChangedNotifier, Tool, ToolCall, ToolHost, ToolHostConfig, ToolOutcome, ToolSession,
    ToolSurface,
};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// How long one turn may take, from spawning the agent to its last answer:
/// room for a `long_task` of five minutes, the longest deadline
/// `scripts/agent-deadlines` measures.
const TURN_LIMIT: Duration = Duration::from_secs(420);

/// The host's own limit on a call (`ToolHostConfig::call_timeout`), past
/// that five minutes: the agent's deadline is what is measured, not ours.
const CALL_LIMIT: Duration = Duration::from_secs(360);

/// How long to wait after `session/new` for the agent's first `tools/list`
/// before prompting.
const LISTING_WAIT: Duration = Duration::from_secs(10);

#[tokio::main]
async fn main() {
    let args = match Args::parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("acp_turn: {message}\n\n{USAGE}");
            std::process::exit(2);
        }
    };
    match tokio::time::timeout(TURN_LIMIT, run(args)).await {
        Ok(Ok(())) => {}
        Ok(Err(message)) => {
            eprintln!("acp_turn: {message}");
            std::process::exit(1);
        }
        Err(_) => {
            eprintln!("acp_turn: the turn took longer than {TURN_LIMIT:?}");
            std::process::exit(1);
        }
    }
}

const USAGE: &str = "usage: acp_turn [--prompt TEXT]... [--permission allow|deny] \
[--config-file copilot-cli [--config-timeout-ms MS]] [--mcp-via HOST:PORT] [--bearer-in-env NAME] [--ping-after-exit] \
[--sessions N] [--name-per-session] [--agent-takes-http NAME] -- AGENT_COMMAND [ARGS...]";

/// The command line.
struct Args {
    /// One turn each, in order; a default question when none is given.
    prompts: Vec<String>,
    allow: bool,
    config_file: Option<Runner>,
    /// With `config_file`: each server's `timeout` (ms) in the file, the
    /// agent's deadline for one call of it (Copilot CLI's).
    config_timeout_ms: Option<u64>,
    mcp_via: Option<String>,
    /// Keep the bearer out of the entry: `Bearer ${NAME}`, with `NAME` in
    /// the session's environment (Claude's adapter).
    bearer_in_env: Option<String>,
    /// After the agent exits, ping the host with the bearer.
    ping_after_exit: bool,
    /// ACP sessions in a row on the one agent process, each with a fresh
    /// `ToolSession`.
    sessions: usize,
    /// The `agentInfo.name` of an agent known to take an `http` server
    /// without declaring it.
    takes_http: Option<String>,
    /// Name session N's entry `demo-N` (N > 1).
    name_per_session: bool,
    agent: Vec<String>,
}

impl Args {
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Self, String> {
        let mut parsed = Self {
            prompts: Vec::new(),
            allow: true,
            config_file: None,
            config_timeout_ms: None,
            mcp_via: None,
            bearer_in_env: None,
            ping_after_exit: false,
            sessions: 1,
            takes_http: None,
            name_per_session: false,
            agent: Vec::new(),
        };
        while let Some(arg) = args.next() {
            let mut value = || args.next().ok_or(format!("{arg} needs a value"));
            match arg.as_str() {
                "--prompt" => parsed.prompts.push(value()?),
                "--permission" => {
                    parsed.allow = match value()?.as_str() {
                        "allow" => true,
                        "deny" => false,
                        other => {
                            return Err(format!("--permission is allow or deny, not {other:?}"))
                        }
                    }
                }
                "--config-file" => {
                    parsed.config_file = Some(match value()?.as_str() {
                        "copilot-cli" => Runner::CopilotCli,
                        other => return Err(format!("no config file format {other:?} (the one ACP agent that takes one is copilot-cli)")),
                    })
                }
                "--config-timeout-ms" => {
                    let ms = value()?;
                    let ms = ms.parse().map_err(|_| format!("--config-timeout-ms takes milliseconds, not {ms:?}"))?;
                    parsed.config_timeout_ms = Some(ms);
                }
                "--mcp-via" => parsed.mcp_via = Some(value()?),
                "--bearer-in-env" => parsed.bearer_in_env = Some(value()?),
                "--ping-after-exit" => parsed.ping_after_exit = true,
                "--agent-takes-http" => parsed.takes_http = Some(value()?),
                "--name-per-session" => parsed.name_per_session = true,
                "--sessions" => {
                    parsed.sessions = match value()?.parse() {
                        Ok(n) if n >= 1 => n,
                        _ => return Err("--sessions takes a count of at least 1".to_owned()),
                    }
                }
                "--" => {
                    parsed.agent = args.collect();
                    break;
                }
                other => return Err(format!("unknown argument {other:?}")),
            }
        }
        if parsed.config_timeout_ms.is_some() && parsed.config_file.is_none() {
            return Err("--config-timeout-ms goes in the file of --config-file".to_owned());
        }
        if parsed.bearer_in_env.is_some() && parsed.config_file.is_some() {
            return Err(
                "--bearer-in-env keeps the bearer out of the entry, but --config-file \
                writes the entry, bearer and all, to a file: give one or the other"
                    .to_owned(),
            );
        }
        if parsed.sessions > 1 && parsed.config_file.is_some() {
            return Err(
                "--config-file hands the agent one session's bearer: use one session".to_owned(),
            );
        }
        if parsed.agent.is_empty() {
            return Err("no agent command after --".to_owned());
        }
        if parsed.prompts.is_empty() {
            let default = "What is the weather in Paris? Use the tools you have.";
            parsed.prompts.push(default.to_owned());
        }
        Ok(parsed)
    }
}

async fn run(args: Args) -> Result<(), String> {
    let host = ToolHost::bind(ToolHostConfig {
        server_name: "demo".to_owned(),
        call_timeout: Some(CALL_LIMIT),
        ..ToolHostConfig::default()
    })
    .await
    .map_err(|e| format!("cannot bind the tool host: {e}"))?;
    let first = open_session(&host)?;
    let mut agent_command: Vec<OsString> = args.agent.iter().map(OsString::from).collect();
    let private_dir = match args.config_file {
        Some(runner) => Some(hand_over_in_a_file(
            &first,
            runner,
            args.config_timeout_ms,
            &mut agent_command,
        )?),
        None => None,
    };
    let mut agent = Agent::spawn(&agent_command, args.allow)?;
    let mut next = Some(first);
    let init = agent.initialize().await?;
    // ACP's `sessionCapabilities.close`: `{}` when the agent takes
    // `session/close`.
    let closes = init
        .pointer("/agentCapabilities/sessionCapabilities/close")
        .is_some_and(Value::is_object);
    let mut last = None;
    for n in 1..=args.sessions {
        let session = match next.take() {
            Some(first) => first,
            None => {
                println!("[host] session {n}: a fresh ToolSession: a new bearer, the same URL, the same agent process");
                open_session(&host)?
            }
        };
        let mut params = session_new_params(&args, &session, &init, private_dir.is_some())?;
        if args.name_per_session && n > 1 {
            let name = format!("demo-{n}");
            println!("[host] session {n}'s server is named {name}");
            params["mcpServers"][0]["name"] = json!(name);
        }
        let new = agent.request("session/new", params).await?;
        wait_for_first_listing(&session).await;
        for text in &args.prompts {
            let prompt =
                json!({"sessionId": new["sessionId"], "prompt": [{"type": "text", "text": text}]});
            let result = agent.request("session/prompt", prompt).await?;
            agent.end_chunks();
            println!(
                "[turn] {}",
                result["stopReason"].as_str().unwrap_or("(no stop reason)")
            );
        }
        // The ACP session ends before its bearer does: never prompt it
        // again once the guard drops (every call would be a 401).
        if closes {
            agent
                .request("session/close", json!({"sessionId": new["sessionId"]}))
                .await?;
            println!("[host] session/close: the agent has let go of the session");
        }
        if n < args.sessions {
            report(session).await;
        } else {
            last = Some(session);
        }
    }
    agent.finish().await;
    let session = last.expect("at least one session");
    if args.ping_after_exit {
        let status = ping(&host, &session).await;
        println!("[host] after the agent exited, the bearer still answers: ping {status}");
    }
    report(session).await;
    if let Some(dir) = private_dir {
        let _ = std::fs::remove_dir(dir);
    }
    Ok(())
}

/// A fresh session on fresh demo tools (the notifier is the session's).
fn open_session(host: &ToolHost) -> Result<ToolSession, String> {
    let surface = Arc::new(DemoTools::new().map_err(|e| e.to_string())?);
    let session = host
        .open_session(Arc::clone(&surface))
        .map_err(|e| e.to_string())?;
    let _ = surface.notifier.set(session.list_changed_notifier());
    Ok(session)
}

/// The turn is over: revokes the bearer (and removes any config file),
/// then prints what the session served.
async fn report(session: ToolSession) {
    let listed = session.listings_served();
    let served = session.close().await;
    println!("[host] tools/list answered with this session's bearer: {listed}");
    println!("[host] calls served: {served}");
}

/// `session/new`'s params: the working directory and the entry, as the
/// options ask (none when the agent reads a config file, the bearer in the
/// session's environment, the URL of a forwarder).
fn session_new_params(
    args: &Args,
    session: &ToolSession,
    init: &Value,
    in_a_file: bool,
) -> Result<Value, String> {
    let cwd = std::env::current_dir().map_err(|e| format!("no current directory: {e}"))?;
    if in_a_file {
        println!("[host] session/new with no mcpServers: the agent reads the config file");
        return Ok(json!({"cwd": cwd, "mcpServers": []}));
    }
    let entry = session.mcp_servers();
    let mut meta = None;
    let mut servers = match &args.bearer_in_env {
        Some(name) => {
            let (entry, env) = entry.with_bearer_from_env(name).map_err(|e| e.to_string())?;
            meta = Runner::ClaudeCode.session_new_meta(&env);
            println!("[host] the entry's header reads Bearer ${{{name}}}; {name} is in session/new's _meta");
            checked(&entry, init, args)
        }
        None => checked(&entry, init, args),
    }
    .map_err(|e| e.to_string())?;
    if let Some(via) = &args.mcp_via {
        let url = format!("http://{via}/mcp");
        println!(
            "[host] the agent is given {url}, a forwarder to {}",
            servers[0]["url"].as_str().unwrap_or("?")
        );
        servers[0]["url"] = json!(url);
    }
    let mut params = json!({"cwd": cwd, "mcpServers": servers});
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    Ok(params)
}

/// The entry, checked against the agent's capabilities, or against its
/// name with `--agent-takes-http`.
fn checked(entry: &McpServers<'_>, init: &Value, args: &Args) -> Result<Value, Error> {
    match &args.takes_http {
        Some(name) => entry.for_acp_agent_taking_http(init, name),
        None => entry.for_acp_agent(init),
    }
}

/// A `ping` to the host with the session's bearer, as another client of
/// the session would send it; the HTTP status, or 0 when none came. An
/// agent that ends its MCP session at exit (Codex `DELETE`s it) ends that
/// MCP session only: the bearer is the guard's, live until it drops.
async fn ping(host: &ToolHost, session: &ToolSession) -> u16 {
    use tokio::io::AsyncReadExt as _;
    let servers = session.mcp_servers();
    let authorization = servers.entries()[0].headers()[0].value().to_owned();
    let addr = host.local_addr();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {authorization}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut head = [0u8; 12];
        stream.read_exact(&mut head).await.ok()?;
        std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
    };
    tokio::time::timeout(Duration::from_secs(5), exchange)
        .await
        .ok()
        .flatten()
        .unwrap_or(0)
}

/// Waits, up to [`LISTING_WAIT`], until the agent has listed the tools,
/// and says whether it did: an agent may answer `session/new` before its
/// MCP client has connected, and one that dropped the server says nothing.
/// The turn goes ahead either way.
async fn wait_for_first_listing(session: &ToolSession) {
    let since = std::time::Instant::now();
    match tokio::time::timeout(LISTING_WAIT, session.first_listing()).await {
        Ok(()) => println!(
            "[host] the agent listed the tools {} ms after session/new",
            since.elapsed().as_millis()
        ),
        Err(_) => println!(
            "[host] no tools/list within {} s of session/new: the agent has not taken the tools \
             (an untrusted workspace, a refused bearer, a dropped server?); prompting anyway",
            LISTING_WAIT.as_secs()
        ),
    }
}

/// Writes the session's config file for `runner` into a directory of this
/// process's own (mode 0700), adds its arguments to the agent's command,
/// and returns the directory.
/// Creates `dir`, mode 0700 on Unix. Elsewhere it takes its parent's
/// access rules.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    return std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700)
        .create(dir);
    #[cfg(not(unix))]
    return std::fs::create_dir(dir);
}

fn hand_over_in_a_file(
    session: &ToolSession,
    runner: Runner,
    timeout_ms: Option<u64>,
    agent_command: &mut Vec<OsString>,
) -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("acp-turn-{}", std::process::id()));
    create_private_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = session
        .write_mcp_config(runner, &dir)
        .map_err(|e| format!("{e}: {:?}", std::error::Error::source(&e)))?;
    if let Some(ms) = timeout_ms {
        // Rewritten in place: the file keeps its owner-only mode.
        let unreadable = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
        let text = std::fs::read(&path).map_err(|e| unreadable(&e))?;
        let mut config: Value = serde_json::from_slice(&text).map_err(|e| unreadable(&e))?;
        for server in config["mcpServers"]
            .as_object_mut()
            .into_iter()
            .flat_map(|s| s.values_mut())
        {
            server["timeout"] = json!(ms);
        }
        std::fs::write(&path, config.to_string()).map_err(|e| unreadable(&e))?;
        println!("[host] each server's timeout in the file: {ms} ms");
    }
    agent_command.extend(runner.config_args(&path).into_iter().flatten());
    println!("[host] MCP config for {runner} in {}", path.display());
    Ok(dir)
}

/// The agent process and this side of its ACP connection.
struct Agent {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    next_id: u64,
    allow: bool,
    /// Whether message chunks are being printed on the current line.
    in_chunks: bool,
    /// Each tool call's title, by id, for a permission request that gives
    /// only the id (Mistral Vibe's).
    titles: HashMap<String, String>,
}

impl Agent {
    fn spawn(command: &[OsString], allow: bool) -> Result<Self, String> {
        let mut child = Command::new(&command[0])
            .args(&command[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {:?}: {e}", command[0]))?;
        let stdin = child.stdin.take().expect("piped");
        let lines = BufReader::new(child.stdout.take().expect("piped")).lines();
        Ok(Self {
            child,
            stdin,
            lines,
            next_id: 1,
            allow,
            in_chunks: false,
            titles: HashMap::new(),
        })
    }

    /// `initialize` as an ACP v1 client without file system or terminal;
    /// prints who answered, and returns the result.
    async fn initialize(&mut self) -> Result<Value, String> {
        let init = self
            .request(
                "initialize",
                json!({
                    "protocolVersion": 1,
                    "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false},
                    "clientInfo": {"name": "embacle-tool-host acp_turn", "version": env!("CARGO_PKG_VERSION")},
                }),
            )
            .await?;
        let name = init
            .pointer("/agentInfo/name")
            .and_then(Value::as_str)
            .unwrap_or("the agent");
        println!("[host] {name} speaks ACP {}", init["protocolVersion"]);
        Ok(init)
    }

    async fn send(&mut self, message: &Value) -> Result<(), String> {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .await
            .map_err(|e| format!("the agent's stdin closed: {e}"))
    }

    /// Sends a request and handles what the agent sends meanwhile, until
    /// the answer comes.
    async fn request(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        loop {
            let line = self
                .lines
                .next_line()
                .await
                .map_err(|e| format!("reading the agent: {e}"))?
                .ok_or_else(|| format!("the agent exited before answering {method}"))?;
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue; // not JSON-RPC: an agent's stray output
            };
            match (message.get("method"), message.get("id")) {
                (Some(_), Some(_)) => self.answer(&message).await?,
                (Some(_), None) => self.print_notification(&message),
                (None, Some(got)) if got == &json!(id) => {
                    if let Some(error) = message.get("error") {
                        return Err(format!("{method} failed: {error}"));
                    }
                    return Ok(message.get("result").cloned().unwrap_or(Value::Null));
                }
                (None, _) => {} // an answer to nothing we asked
            }
        }
    }

    /// Answers a request from the agent: a permission by policy, anything
    /// else with "method not found".
    async fn answer(&mut self, request: &Value) -> Result<(), String> {
        let id = request["id"].clone();
        let reply = if request["method"] == "session/request_permission" {
            let outcome = self.permission(&request["params"]);
            json!({"jsonrpc": "2.0", "id": id, "result": {"outcome": outcome}})
        } else {
            let message = format!("this client does not serve {}", request["method"]);
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": message}})
        };
        self.send(&reply).await
    }

    /// The option of the kind `--permission` asks for, or a cancelled
    /// outcome when the agent offers none.
    fn permission(&mut self, params: &Value) -> Value {
        let wanted = if self.allow {
            "allow_once"
        } else {
            "reject_once"
        };
        let options = params["options"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        let chosen = options.iter().find(|o| o["kind"] == wanted);
        let id = params
            .pointer("/toolCall/toolCallId")
            .and_then(Value::as_str);
        let title = params
            .pointer("/toolCall/title")
            .and_then(Value::as_str)
            .or_else(|| self.titles.get(id?).map(String::as_str))
            .unwrap_or("?")
            .to_owned();
        self.end_chunks();
        match chosen.and_then(|o| o["optionId"].as_str()) {
            Some(option) => {
                println!("[permission] {title}: {option}");
                json!({"outcome": "selected", "optionId": option})
            }
            None => {
                println!("[permission] {title}: cancelled (no {wanted} option)");
                json!({"outcome": "cancelled"})
            }
        }
    }

    fn print_notification(&mut self, message: &Value) {
        if message["method"] != "session/update" {
            return;
        }
        let update = &message["params"]["update"];
        match update["sessionUpdate"].as_str().unwrap_or_default() {
            "agent_message_chunk" => self.chunk("[agent] ", &update["content"]),
            "agent_thought_chunk" => self.chunk("[thought] ", &update["content"]),
            "tool_call" => {
                self.end_chunks();
                if let (Some(id), Some(title)) =
                    (update["toolCallId"].as_str(), update["title"].as_str())
                {
                    self.titles.insert(id.to_owned(), title.to_owned());
                }
                println!(
                    "[tool call] {} ({}, {}) {}",
                    update["title"].as_str().unwrap_or("?"),
                    update["kind"].as_str().unwrap_or("other"),
                    update["status"].as_str().unwrap_or("pending"),
                    update.get("rawInput").unwrap_or(&Value::Null),
                );
            }
            "tool_call_update" => {
                self.end_chunks();
                let text = tool_update_text(update);
                let status = update["status"].as_str().unwrap_or("updated");
                println!(
                    "[tool update] {} {status}{text}",
                    update["toolCallId"].as_str().unwrap_or("?")
                );
            }
            "plan" => {
                self.end_chunks();
                for entry in update["entries"]
                    .as_array()
                    .map(Vec::as_slice)
                    .unwrap_or_default()
                {
                    println!(
                        "[plan] {} ({})",
                        entry["content"].as_str().unwrap_or(""),
                        entry["status"].as_str().unwrap_or("")
                    );
                }
            }
            _ => {} // usage, commands, modes, titles: not part of the turn's story
        }
    }

    /// Prints a text chunk, continuing the current line of chunks.
    fn chunk(&mut self, tag: &str, content: &Value) {
        let Some(text) = content["text"].as_str() else {
            return;
        };
        if !self.in_chunks {
            print!("{tag}");
            self.in_chunks = true;
        }
        print!("{text}");
        let _ = std::io::stdout().flush();
    }

    fn end_chunks(&mut self) {
        if std::mem::take(&mut self.in_chunks) {
            println!();
        }
    }

    /// Closes the agent's stdin (ACP's end of the connection) and waits
    /// briefly for it to exit. Not every agent exits on that (Gemini CLI
    /// not while its MCP stream is open; the Claude adapter 0.23 did not),
    /// so after two seconds it is killed.
    async fn finish(mut self) {
        drop(self.stdin);
        if tokio::time::timeout(Duration::from_secs(2), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}

/// `: TEXT` for a tool call update's first text content or `rawOutput`
/// message; empty when it has neither.
fn tool_update_text(update: &Value) -> String {
    let text = update
        .pointer("/content/0/content/text")
        .or_else(|| update.pointer("/rawOutput/message"))
        .and_then(Value::as_str);
    text.map(|t| format!(": {t}")).unwrap_or_default()
}

/// The demo tools: a read-only weather lookup; a destructive tool that
/// always refuses, as a policy guard would; `unlock`, which adds
/// `secret_echo` to the list mid-turn and signals the change before it
/// returns, so an agent that re-lists on `notifications/tools/list_changed`
/// can call the new tool in the same turn; and `long_task`, which works as
/// long as it is asked (reporting progress if asked), to find an agent's
/// deadline for one call. Each call is printed, with the keys of the
/// `_meta` the agent sent with it.
struct DemoTools {
    base: Vec<Tool>,
    secret_echo: Tool,
    unlocked: AtomicBool,
    notifier: OnceLock<ListChangedNotifier>,
}

impl DemoTools {
    fn new() -> Result<Self, embacle_tool_host::Error> {
        let read_only = ToolAnnotations {
            read_only_hint: Some(true),
            ..ToolAnnotations::default()
        };
        let weather = Tool::new(
            "get_weather",
            "The current weather in a city.",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        )?
        .with_annotations(read_only.clone());
        let delete = Tool::new(
            "delete_all_notes",
            "Deletes every note the user has.",
            json!({"type": "object", "additionalProperties": false}),
        )?
        .with_annotations(ToolAnnotations {
            destructive_hint: Some(true),
            ..ToolAnnotations::default()
        });
        let unlock = Tool::new(
            "unlock",
            "Unlocks the vault: adds the secret_echo tool.",
            json!({"type": "object", "additionalProperties": false}),
        )?
        .with_annotations(read_only.clone());
        let secret_echo = Tool::new(
            "secret_echo",
            "Echoes a text from inside the vault (after unlock).",
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        )?
        .with_annotations(read_only.clone());
        let long_task = Tool::new(
            "long_task",
            "Works for `seconds`, reporting progress every `progress_every` seconds if given.",
            json!({"type": "object", "properties": {
                "seconds": {"type": "number"}, "progress_every": {"type": "number"}
            }, "required": ["seconds"]}),
        )?
        .with_annotations(read_only);
        Ok(Self {
            base: vec![weather, delete, unlock, long_task],
            secret_echo,
            unlocked: AtomicBool::new(false),
            notifier: OnceLock::new(),
        })
    }
}

impl ToolSurface for DemoTools {
    async fn list_tools(&self) -> Arc<[Tool]> {
        let mut tools = self.base.clone();
        if self.unlocked.load(Ordering::Acquire) {
            tools.push(self.secret_echo.clone());
        }
        tools.into()
    }

    /// Prints the keys of the call's `_meta` (what the agent sends of its
    /// own), then runs `long_task` here and every other tool in `call`.
    async fn call_with(&self, call: ToolCall<'_>) -> ToolOutcome {
        let request = call.request();
        let mut keys: Vec<&str> = request
            .meta
            .iter()
            .flat_map(|m| m.keys())
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        println!("[host] _meta of {}: [{}]", call.name(), keys.join(", "));
        if call.name() == "long_task" {
            return long_task(&call, request.progress_reaches_client).await;
        }
        self.call(call.name(), call.arguments()).await
    }

    async fn call(&self, name: &str, arguments: &Value) -> ToolOutcome {
        println!("[host] tool call {name} {arguments}");
        let unlocked = self.unlocked.load(Ordering::Acquire);
        match (name, arguments.get("city").and_then(Value::as_str)) {
            ("get_weather", Some(city)) => ToolOutcome::text(format!("Sunny and 21 °C in {city}")),
            ("get_weather", None) => ToolOutcome::refused("`city` must be a string"),
            ("delete_all_notes", _) => {
                ToolOutcome::refused("deleting every note needs the user's confirmation in the app")
            }
            ("unlock", _) => {
                // Changed, then announced, then returned: the host writes
                // the notice to the session's open streams before it
                // releases this result.
                if !self.unlocked.swap(true, Ordering::AcqRel) {
                    if let Some(notifier) = self.notifier.get() {
                        notifier.notify();
                    }
                }
                ToolOutcome::text("The vault is open: secret_echo is now available.")
            }
            ("secret_echo", _) if unlocked => match arguments.get("text").and_then(Value::as_str) {
                Some(text) => ToolOutcome::text(format!("From the vault: {text}")),
                None => ToolOutcome::refused("`text` must be a string"),
            },
            _ => ToolOutcome::failed(format!("no tool named {name}")),
        }
    }
}

/// `long_task`: works for `seconds`, reporting progress every
/// `progress_every` seconds when asked to (and when progress can reach the
/// client at all, which it prints). Prints how it ended: done, or stopped
/// after how long (the agent gave up on it: its deadline).
async fn long_task(call: &ToolCall<'_>, progress_reaches_client: bool) -> ToolOutcome {
    let arguments = call.arguments();
    println!("[host] tool call long_task {arguments}");
    println!("[host] long_task: progress reaches the client: {progress_reaches_client}");
    let seconds = arguments
        .get("seconds")
        .and_then(Value::as_f64)
        .unwrap_or(0.0);
    let every = arguments.get("progress_every").and_then(Value::as_f64);
    let (Ok(total), Ok(step)) = (
        Duration::try_from_secs_f64(seconds),
        Duration::try_from_secs_f64(every.unwrap_or(seconds).max(0.1)),
    ) else {
        return ToolOutcome::refused("`seconds` and `progress_every` must be durations");
    };
    let mut run = LongTaskRun {
        started: Instant::now(),
        done: false,
    };
    while run.started.elapsed() < total {
        tokio::time::sleep(step.min(total.saturating_sub(run.started.elapsed()))).await;
        if every.is_some() {
            let done = run.started.elapsed().as_secs_f64().min(seconds);
            call.progress(done, Some(seconds), Some("working"));
        }
    }
    run.done = true;
    println!(
        "[host] long_task done after {:.1} s",
        run.started.elapsed().as_secs_f64()
    );
    ToolOutcome::text(format!("long_task done after {seconds} s"))
}

/// One `long_task`: dropped before it is done (the agent cancelled it, or
/// closed its stream or connection), it prints how long it ran.
struct LongTaskRun {
    started: Instant,
    done: bool,
}

impl Drop for LongTaskRun {
    fn drop(&mut self) {
        if !self.done {
            let ran = self.started.elapsed().as_secs_f64();
            println!("[host] long_task stopped after {ran:.1} s");
        }
    }
}
