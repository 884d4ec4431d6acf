//! One session's MCP server, in the shape each kind of agent reads: the ACP
//! `mcpServers` array checked against the agent's capabilities, and the
//! config files of agents that read MCP servers from a file.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::mcp_servers::McpServers;
use super::private_file;
use super::runner::Runner;
use super::tool_session::ToolSession;
use crate::error::{Error, ErrorKind};
use crate::util::lock;

impl McpServers<'_> {
    /// The ACP `mcpServers` value for an agent whose `initialize` result is
    /// `initialize_result`, or an error when that agent cannot take an
    /// `http` server (ACP: clients MUST check before sending one).
    ///
    /// Support is read from ACP v1's
    /// `agentCapabilities.mcpCapabilities.http` (`true`; absent means
    /// false), and from the v2 draft's `capabilities.session.mcp.http` (an
    /// object, `{}` included), or `capabilities.mcp.http`, where earlier
    /// drafts had it. An agent known to take `http` without declaring it
    /// is served only by name:
    /// [`for_acp_agent_taking_http`](Self::for_acp_agent_taking_http).
    ///
    /// The value holds the bearer, and its `Debug` prints it: treat it as
    /// the secret it is.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::UnsupportedAgent`](crate::ErrorKind::UnsupportedAgent), saying what the agent declared.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), embacle_tool_host::Error> {
    /// # use std::sync::Arc;
    /// # use embacle_tool_host::{StaticSurface, ToolHost, ToolHostConfig};
    /// use serde_json::{json, Value};
    /// # let host = ToolHost::bind(ToolHostConfig::default()).await?;
    /// # let surface = Arc::new(StaticSurface::new(vec![], |_: String, _: Value| async { Ok::<_, String>(Value::Null) })?);
    /// let session = host.open_session(surface)?;
    /// let copilot = json!({"protocolVersion": 1,
    ///     "agentCapabilities": {"mcpCapabilities": {"http": true, "sse": true}}});
    /// let servers = session.mcp_servers().for_acp_agent(&copilot)?;
    /// assert_eq!(servers[0]["type"], "http");
    ///
    /// let stdio_only = json!({"protocolVersion": 1, "agentCapabilities": {}});
    /// assert_eq!(session.mcp_servers().for_acp_agent(&stdio_only).unwrap_err().kind(), embacle_tool_host::ErrorKind::UnsupportedAgent);
    /// # Ok(()) }
    /// ```
    pub fn for_acp_agent(&self, initialize_result: &Value) -> Result<Value, Error> {
        match http_refusal(initialize_result) {
            None => Ok(self.to_value()),
            Some(refusal) => Err(ErrorKind::UnsupportedAgent.error(format!(
                "{refusal}; give it this host some other way, such as a config file, or use an agent that supports MCP over HTTP"
            ))),
        }
    }

    /// [`for_acp_agent`](Self::for_acp_agent), with one exception the
    /// caller names: the agent whose `initialize` result gives
    /// `agentInfo.name` exactly `agent_name` is served even though it
    /// does not declare `http`.
    ///
    /// Some agents take an `http` server in `session/new` without saying so
    /// in `initialize`: Mistral Vibe 3.0 (its `agentInfo.name` is
    /// [`MISTRAL_VIBE`](crate::agent::MISTRAL_VIBE), checked by
    /// `tests/agent_vibe.rs`) declares `mcpCapabilities.http: false`, and
    /// connects all the same. Naming the agent you know keeps the check for
    /// every other: a different agent behind the same command (an update
    /// that renamed it, a wrapper) is still refused, with what it declared
    /// and what it is called, rather than handed an entry it may drop. An
    /// agent that does declare `http` is served whatever its name.
    ///
    /// The value holds the bearer, and its `Debug` prints it: treat it as
    /// the secret it is.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::UnsupportedAgent`](crate::ErrorKind::UnsupportedAgent) when the agent neither declares
    /// `http` nor is called `agent_name`; [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig)
    /// when `agent_name` is empty.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), embacle_tool_host::Error> {
    /// # use std::sync::Arc;
    /// # use embacle_tool_host::{StaticSurface, ToolHost, ToolHostConfig};
    /// use embacle_tool_host::agent::MISTRAL_VIBE;
    /// use serde_json::{json, Value};
    /// # let host = ToolHost::bind(ToolHostConfig::default()).await?;
    /// # let surface = Arc::new(StaticSurface::new(vec![], |_: String, _: Value| async { Ok::<_, String>(Value::Null) })?);
    /// let session = host.open_session(surface)?;
    /// let vibe = json!({"protocolVersion": 1,
    ///     "agentCapabilities": {"mcpCapabilities": {"http": false, "sse": false}},
    ///     "agentInfo": {"name": MISTRAL_VIBE, "version": "3.0.3"}});
    /// let servers = session.mcp_servers().for_acp_agent_taking_http(&vibe, MISTRAL_VIBE)?;
    /// assert_eq!(servers[0]["type"], "http");
    ///
    /// // Any other agent that does not declare http is still refused.
    /// let other = json!({"protocolVersion": 1, "agentCapabilities": {},
    ///     "agentInfo": {"name": "some-agent"}});
    /// let refused = session.mcp_servers().for_acp_agent_taking_http(&other, MISTRAL_VIBE);
    /// assert_eq!(refused.unwrap_err().kind(), embacle_tool_host::ErrorKind::UnsupportedAgent);
    /// # Ok(()) }
    /// ```
    pub fn for_acp_agent_taking_http(
        &self,
        initialize_result: &Value,
        agent_name: &str,
    ) -> Result<Value, Error> {
        if agent_name.is_empty() {
            return Err(ErrorKind::InvalidConfig.error(
                "for_acp_agent_taking_http needs the agent's name (its agentInfo.name), not an empty one",
            ));
        }
        let named = initialize_result.pointer("/agentInfo/name") == Some(&Value::from(agent_name));
        match http_refusal(initialize_result) {
            Some(refusal) if !named => Err(ErrorKind::UnsupportedAgent.error(format!(
                "{refusal}, and it is not {agent_name:?}, the agent named as taking one without declaring it"
            ))),
            _ => Ok(self.to_value()),
        }
    }

    /// The config JSON `runner` reads (see [`Runner`] for each shape). It
    /// carries the bearer, and its `Debug` prints it: keep it as secret as
    /// the session.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::UnsupportedAgent`](crate::ErrorKind::UnsupportedAgent) for an agent that reads no config
    /// file of this kind (Gemini CLI, Codex: give them the server in ACP
    /// `session/new`).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), embacle_tool_host::Error> {
    /// # use std::sync::Arc;
    /// # use embacle_tool_host::{StaticSurface, ToolHost, ToolHostConfig};
    /// # use serde_json::Value;
    /// use embacle_tool_host::agent::Runner;
    /// # let host = ToolHost::bind(ToolHostConfig::default()).await?;
    /// # let surface = Arc::new(StaticSurface::new(vec![], |_: String, _: Value| async { Ok::<_, String>(Value::Null) })?);
    /// let session = host.open_session(surface)?;
    /// let config = session.mcp_servers().config_for(Runner::CopilotCli)?;
    /// let server = &config["mcpServers"]["tools"];
    /// assert_eq!(server["type"], "http");
    /// assert!(server["headers"]["Authorization"].as_str().unwrap().starts_with("Bearer "));
    /// # Ok(()) }
    /// ```
    pub fn config_for(&self, runner: Runner) -> Result<Value, Error> {
        if runner.config_flag().is_none() {
            return Err(ErrorKind::UnsupportedAgent.error(format!(
                "{runner} reads no MCP config file this crate writes; give it the server in ACP session/new (McpServers::for_acp_agent)"
            )));
        }
        // One entry, with one header (`McpServers::one`).
        let entry = &self.entries()[0];
        let header = &entry.headers()[0];
        let headers = json!({header.name(): header.value()});
        let mut server = json!({"type": "http", "url": entry.url(), "headers": headers});
        if runner == Runner::CopilotCli {
            server["tools"] = json!(["*"]);
        }
        Ok(json!({"mcpServers": {entry.name(): server}}))
    }
}

impl ToolSession {
    /// Writes this session's config file for `runner` into `dir`, and
    /// returns its path, to hand over with [`Runner::config_args`]. The file
    /// is **removed when this guard drops**, when the bearer in it dies; a
    /// process that aborts leaves it behind, holding a dead bearer.
    ///
    /// It is created new (never over an existing file, nor through a
    /// symlink), with a random name, readable by its owner alone: on Unix
    /// with mode 0600; on Windows with a protected access list whose one
    /// entry lets this process's user, its owner, open it. It holds the
    /// bearer, and the agent trusts what it reads there, so on Unix `dir`
    /// must belong to this process's user and be writable by no one else
    /// (not `/tmp` itself: another user could swap the file for one naming
    /// a server of theirs). Use a private runtime directory
    /// (`$XDG_RUNTIME_DIR`, mode 0700), or a directory of your own, mode
    /// 0700. Every directory above `dir` must belong to this user or root,
    /// and be writable by no one else unless sticky. On Linux (on the
    /// architectures `private_file.rs` lists: x86, x86-64, ARM, AArch64,
    /// PowerPC, RISC-V, s390x, LoongArch) the checks
    /// and the write are one walk by file descriptor, each directory
    /// opened without following a symlink and only as a directory, and
    /// checked as opened, so no directory swapped while it runs redirects
    /// the file, and no FIFO on the path holds the call; on other Unix
    /// systems the same checks are made by name, before the write. On
    /// Windows `dir`'s own rules are not checked: use a directory under
    /// your profile, which other users cannot change.
    ///
    /// A process that ends without dropping the guard leaves the file
    /// behind, holding a dead bearer: an abort, or a signal it does not
    /// handle (the default action of SIGTERM and SIGINT ends the process
    /// without running destructors). Handle those signals and drop your
    /// sessions to have the files removed.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::ConfigFile`](crate::ErrorKind::ConfigFile) when the file cannot be created or written,
    /// or `dir` is not private (above: the I/O error's kind is
    /// `PermissionDenied`, and its message says why);
    /// [`source`](std::error::Error::source) holds the I/O error.
    /// [`ErrorKind::UnsupportedAgent`](crate::ErrorKind::UnsupportedAgent) for an agent that reads no config
    /// file ([`Runner::config_flag`] is `None`).
    ///
    /// # Panics
    ///
    /// If the operating system's random generator fails, as bearers do.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # use std::sync::Arc;
    /// # use embacle_tool_host::{StaticSurface, ToolHost, ToolHostConfig};
    /// # use serde_json::Value;
    /// use embacle_tool_host::agent::Runner;
    /// # let host = ToolHost::bind(ToolHostConfig::default()).await?;
    /// # let surface = Arc::new(StaticSurface::new(vec![], |_: String, _: Value| async { Ok::<_, String>(Value::Null) })?);
    /// let session = host.open_session(surface)?;
    /// // A directory of this process's own, mode 0700.
    /// let dir = std::env::temp_dir().join(format!("tools-{}", std::process::id()));
    /// # #[cfg(unix)]
    /// std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700).create(&dir)?;
    /// # #[cfg(not(unix))]
    /// # std::fs::create_dir_all(&dir)?;
    /// let path = session.write_mcp_config(Runner::ClaudeCode, &dir)?;
    /// let args = Runner::ClaudeCode.config_args(&path).unwrap(); // claude --mcp-config PATH …
    /// assert!(path.exists() && args[1] == path.as_os_str());
    /// drop(session);
    /// assert!(!path.exists());
    /// # std::fs::remove_dir(&dir)?;
    /// # Ok(()) }
    /// ```
    pub fn write_mcp_config(&self, runner: Runner, dir: &Path) -> Result<PathBuf, Error> {
        let config = self.mcp_servers().config_for(runner)?;
        // A new file, readable by its owner alone, in a directory no other
        // user can change (`private_file.rs`); its name ends in random hex.
        let nonce = getrandom::u64().expect("the operating system's random generator failed");
        // Named after the agent: `Claude Code` as `claude-code`.
        let stem = runner.to_string().to_ascii_lowercase().replace(' ', "-");
        let name = format!("embacle-mcp-{stem}-{nonce:016x}.json");
        let path = private_file::write(dir, &name, config.to_string().as_bytes())
            .map_err(|e| ErrorKind::ConfigFile.io_error(e))?;
        lock(&self.config_files).push(path.clone());
        Ok(path)
    }
}

/// `None` when the agent's `initialize` result declares it takes an
/// `http` MCP server; else the refusal: the agent, by its `agentInfo.name`
/// if it gave one, and what it declared instead. Read from ACP v1's
/// `agentCapabilities.mcpCapabilities.http` (`true`; absent means false),
/// and from the v2 draft's `capabilities.session.mcp.http` (an object, `{}`
/// included), or `capabilities.mcp.http`, where earlier drafts had it.
fn http_refusal(initialize_result: &Value) -> Option<String> {
    let v1 = initialize_result.pointer("/agentCapabilities/mcpCapabilities/http");
    let v2 = ["/capabilities/session/mcp/http", "/capabilities/mcp/http"]
        .iter()
        .find_map(|path| Some((*path, initialize_result.pointer(path)?)));
    if v1 == Some(&Value::Bool(true)) || v2.is_some_and(|(_, http)| http.is_object()) {
        return None;
    }
    let declared = match (v1, v2) {
        (Some(v1), _) => format!("agentCapabilities.mcpCapabilities.http is {v1}"),
        (None, Some((path, v2))) => format!("{} is {v2}", path[1..].replace('/', ".")),
        (None, None) => "no http MCP transport".to_owned(),
    };
    let agent = match initialize_result.pointer("/agentInfo/name") {
        Some(Value::String(name)) => format!("the agent {name:?}"),
        _ => "the agent".to_owned(),
    };
    let refusal = format!("{agent} cannot take an http MCP server ({declared})");
    Some(refusal)
}
