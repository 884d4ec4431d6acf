//! One session's MCP server, in the shape each kind of agent reads: the ACP
//! `mcpServers` array checked against the agent's capabilities, and the
//! config files of agents that read MCP servers from a file.

use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::{Error, McpServers, Tool, ToolSession};

/// The longest tool name to count on, *after* the agent has added its
/// server prefix: OpenAI's function names are at most 64 characters of
/// `[A-Za-z0-9_-]`, Copilot CLI cuts every name to 64, and other model APIs
/// document limits of that order. A name within it reaches every model
/// whole.
pub const MODEL_TOOL_NAME_LIMIT: usize = 64;

/// An agent that reads its MCP servers from a JSON config file rather than
/// from ACP `session/new`.
///
/// Each one has its own file shape and its own way of folding the server
/// name into the tool names the model sees; both are documented per
/// variant, with where they come from. Use [`McpServers::config_for`] for
/// the JSON, [`ToolSession::write_mcp_config`](crate::ToolSession::write_mcp_config)
/// for a file that lives exactly as long as the session, and
/// [`check_tool_names`](Self::check_tool_names) before you hand the agent
/// your tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Runner {
    /// Claude Code: `claude --mcp-config FILE` (add `--strict-mcp-config`
    /// to ignore the user's own servers). The file is
    /// `{"mcpServers":{NAME:{"type":"http","url":…,"headers":{…}}}}`, with
    /// `headers` an object (an ACP-style array makes Claude Code skip the
    /// server silently). Tools reach the model as `mcp__SERVER__TOOL`, every
    /// character outside `[A-Za-z0-9_-]` replaced by `_`.
    /// Format: <https://code.claude.com/docs/en/mcp> (“Add a remote HTTP
    /// server”, the `.mcp.json` form); checked against Claude Code 2.1.332.
    ClaudeCode,
    /// GitHub Copilot CLI: `copilot --additional-mcp-config @FILE` (it also
    /// takes the JSON inline; combine with `--acp` or `-p`). The file is
    /// `{"mcpServers":{NAME:{"type":"http","url":…,"headers":{…},"tools":["*"]}}}`,
    /// the form `copilot mcp add --transport http` writes. Tools reach the
    /// model as `SERVER-TOOL`, every character outside `[A-Za-z0-9_-]`
    /// replaced by `-`, cut at 64 characters.
    /// Format: <https://docs.github.com/en/copilot/how-tos/copilot-cli/customize-copilot/add-mcp-servers>;
    /// checked against Copilot CLI 1.0.102.
    CopilotCli,
}

impl Runner {
    /// The command-line flag that takes the config file.
    pub fn config_flag(self) -> &'static str {
        match self {
            Self::ClaudeCode => "--mcp-config",
            Self::CopilotCli => "--additional-mcp-config",
        }
    }

    /// The two arguments that hand `path` to this agent: the flag, and the
    /// path in the form the agent reads it (Copilot CLI takes a file as
    /// `@PATH`; without the `@` it would parse the path as JSON).
    ///
    /// ```
    /// use std::path::Path;
    /// use embacle_tool_host::Runner;
    ///
    /// let file = Path::new("/run/user/1000/tools.json");
    /// assert_eq!(Runner::CopilotCli.config_args(file), ["--additional-mcp-config", "@/run/user/1000/tools.json"]);
    /// assert_eq!(Runner::ClaudeCode.config_args(file), ["--mcp-config", "/run/user/1000/tools.json"]);
    /// ```
    pub fn config_args(self, path: &Path) -> [OsString; 2] {
        let mut value = OsString::new();
        if self == Self::CopilotCli {
            value.push("@");
        }
        value.push(path);
        [OsString::from(self.config_flag()), value]
    }

    /// The name the model sees for `tool` served under `server`.
    ///
    /// ```
    /// use embacle_tool_host::Runner;
    ///
    /// assert_eq!(Runner::ClaudeCode.model_tool_name("my.tools", "echo"), "mcp__my_tools__echo");
    /// assert_eq!(Runner::CopilotCli.model_tool_name("my.tools", "echo"), "my-tools-echo");
    /// ```
    pub fn model_tool_name(self, server: &str, tool: &str) -> String {
        let (prefix, separator, replacement) = match self {
            Self::ClaudeCode => ("mcp__", "__", '_'),
            Self::CopilotCli => ("", "-", '-'),
        };
        let clean = |part: &str| -> String {
            part.chars()
                .map(|c| match c {
                    'A'..='Z' | 'a'..='z' | '0'..='9' | '_' | '-' => c,
                    _ => replacement,
                })
                .collect()
        };
        format!("{prefix}{}{separator}{}", clean(server), clean(tool))
    }

    /// Checks that every tool keeps a name of its own, within
    /// [`MODEL_TOOL_NAME_LIMIT`], once this agent has prefixed it with
    /// `server` (the host's [`server_name`](crate::ToolHostConfig::server_name)).
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid_tool`], naming the first tool whose model-side
    /// name is too long (the agent or the model API would reject or cut
    /// it), or two tools the prefixing makes one.
    ///
    /// ```
    /// use embacle_tool_host::{Runner, Tool};
    /// use serde_json::json;
    ///
    /// let schema = json!({"type": "object"});
    /// let tools = [Tool::new("summarize_the_entire_quarterly_report", "…", schema)?];
    /// assert!(Runner::ClaudeCode.check_tool_names("tools", &tools).is_ok());
    /// let err = Runner::ClaudeCode
    ///     .check_tool_names("quarterly-reporting-assistant", &tools)
    ///     .unwrap_err();
    /// assert!(err.is_invalid_tool());
    /// # Ok::<(), embacle_tool_host::Error>(())
    /// ```
    pub fn check_tool_names(self, server: &str, tools: &[Tool]) -> Result<(), Error> {
        let mut seen: Vec<(String, &str)> = Vec::with_capacity(tools.len());
        for tool in tools {
            let name = self.model_tool_name(server, tool.name());
            if name.len() > MODEL_TOOL_NAME_LIMIT {
                return Err(Error::invalid_tool(format!(
                    "{self} shows tool {:?} to the model as {name:?}, {} characters; model APIs allow {MODEL_TOOL_NAME_LIMIT}: shorten the tool or the server name",
                    tool.name(),
                    name.len(),
                )));
            }
            if let Some((_, other)) = seen.iter().find(|(seen, _)| *seen == name) {
                return Err(Error::invalid_tool(format!(
                    "{self} shows tools {other:?} and {:?} to the model under one name, {name:?}",
                    tool.name(),
                )));
            }
            seen.push((name, tool.name()));
        }
        Ok(())
    }

    fn file_stem(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::CopilotCli => "copilot-cli",
        }
    }
}

impl fmt::Display for Runner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ClaudeCode => "Claude Code",
            Self::CopilotCli => "Copilot CLI",
        })
    }
}

impl McpServers<'_> {
    /// The ACP `mcpServers` value for an agent whose `initialize` result is
    /// `initialize_result`, or an error when that agent cannot take an
    /// `http` server (ACP: clients MUST check before sending one).
    ///
    /// Support is read from ACP v1's
    /// `agentCapabilities.mcpCapabilities.http` (`true`; absent means
    /// false), and from the v2 draft's `capabilities.session.mcp.http` (an
    /// object, `{}` included), or `capabilities.mcp.http`, where earlier
    /// drafts had it.
    ///
    /// The value holds the bearer, and its `Debug` prints it: treat it as
    /// the secret it is.
    ///
    /// # Errors
    ///
    /// [`Error::is_unsupported_agent`], saying what the agent declared.
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
    /// assert!(session.mcp_servers().for_acp_agent(&stdio_only).unwrap_err().is_unsupported_agent());
    /// # Ok(()) }
    /// ```
    pub fn for_acp_agent(&self, initialize_result: &Value) -> Result<Value, Error> {
        let v1 = initialize_result.pointer("/agentCapabilities/mcpCapabilities/http");
        let v2 = ["/capabilities/session/mcp/http", "/capabilities/mcp/http"]
            .iter()
            .find_map(|path| Some((*path, initialize_result.pointer(path)?)));
        if v1 == Some(&Value::Bool(true)) || v2.is_some_and(|(_, http)| http.is_object()) {
            return Ok(self.to_value());
        }
        let agent = match initialize_result
            .pointer("/agentInfo/name")
            .and_then(Value::as_str)
        {
            Some(name) => format!("the agent {name:?}"),
            None => "the agent".to_owned(),
        };
        let declared = match (v1, v2) {
            (Some(v1), _) => format!("agentCapabilities.mcpCapabilities.http is {v1}"),
            (None, Some((path, v2))) => format!("{} is {v2}", path[1..].replace('/', ".")),
            (None, None) => "no http MCP transport".to_owned(),
        };
        Err(Error::unsupported_agent(format!(
            "{agent} cannot take an http MCP server ({declared}); give it this host some other way, such as a config file, or use an agent that supports MCP over HTTP"
        )))
    }

    /// The config JSON `runner` reads (see [`Runner`] for each shape). It
    /// carries the bearer, and its `Debug` prints it: keep it as secret as
    /// the session.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), embacle_tool_host::Error> {
    /// # use std::sync::Arc;
    /// # use embacle_tool_host::{StaticSurface, ToolHost, ToolHostConfig};
    /// # use serde_json::Value;
    /// use embacle_tool_host::Runner;
    /// # let host = ToolHost::bind(ToolHostConfig::default()).await?;
    /// # let surface = Arc::new(StaticSurface::new(vec![], |_: String, _: Value| async { Ok::<_, String>(Value::Null) })?);
    /// let session = host.open_session(surface)?;
    /// let config = session.mcp_servers().config_for(Runner::CopilotCli);
    /// let server = &config["mcpServers"]["tools"];
    /// assert_eq!(server["type"], "http");
    /// assert!(server["headers"]["Authorization"].as_str().unwrap().starts_with("Bearer "));
    /// # Ok(()) }
    /// ```
    pub fn config_for(&self, runner: Runner) -> Value {
        let mut servers = Map::new();
        for entry in self.entries() {
            let headers: Map<String, Value> = entry
                .headers()
                .iter()
                .map(|h| (h.name().to_owned(), Value::from(h.value())))
                .collect();
            let mut server = Map::new();
            server.insert("type".into(), "http".into());
            server.insert("url".into(), entry.url().into());
            server.insert("headers".into(), headers.into());
            if runner == Runner::CopilotCli {
                server.insert("tools".into(), Value::Array(vec!["*".into()]));
            }
            servers.insert(entry.name().to_owned(), server.into());
        }
        let mut config = Map::new();
        config.insert("mcpServers".into(), servers.into());
        config.into()
    }
}

impl ToolSession {
    /// Writes this session's config file for `runner` into `dir`, and
    /// returns its path, to hand over with [`Runner::config_args`]. The file
    /// is **removed when this guard drops**, when the bearer in it dies; a
    /// process that aborts leaves it behind, holding a dead bearer.
    ///
    /// It is created new (never over an existing file, nor through a
    /// symlink), with a random name; on Unix with mode 0600, readable by its
    /// owner alone. It holds the bearer, so `dir` should be private to the
    /// user too (a directory of the process's own, mode 0700); elsewhere
    /// than Unix the file takes `dir`'s access rules.
    ///
    /// # Errors
    ///
    /// [`Error::is_config_file`] when the file cannot be created or written;
    /// [`source`](std::error::Error::source) holds the I/O error.
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
    /// use embacle_tool_host::Runner;
    /// # let host = ToolHost::bind(ToolHostConfig::default()).await?;
    /// # let surface = Arc::new(StaticSurface::new(vec![], |_: String, _: Value| async { Ok::<_, String>(Value::Null) })?);
    /// let mut session = host.open_session(surface)?;
    /// let dir = std::env::temp_dir(); // better: a directory of your own, mode 0700
    /// let path = session.write_mcp_config(Runner::ClaudeCode, &dir)?;
    /// let args = Runner::ClaudeCode.config_args(&path); // claude --mcp-config PATH …
    /// assert!(path.exists() && args[1] == path.as_os_str());
    /// drop(session);
    /// assert!(!path.exists());
    /// # Ok(()) }
    /// ```
    pub fn write_mcp_config(&mut self, runner: Runner, dir: &Path) -> Result<PathBuf, Error> {
        let config = self.mcp_servers().config_for(runner);
        let path = write_config_file(dir, runner, &config)?;
        self.config_files.push(path.clone());
        Ok(path)
    }
}

/// Writes `config` to a new file in `dir`, readable by its owner alone
/// (mode 0600 on Unix), and returns its path.
///
/// The name ends in random hex, and the file must not exist yet
/// (`create_new`, which also refuses to follow a symlink planted at that
/// path), so no other local user can make the host write elsewhere or read
/// the bearer.
pub(crate) fn write_config_file(
    dir: &Path,
    runner: Runner,
    config: &Value,
) -> Result<PathBuf, Error> {
    let mut nonce = [0u8; 8];
    getrandom::fill(&mut nonce).expect("the operating system's random generator failed");
    let hex: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
    let path = dir.join(format!("embacle-mcp-{}-{hex}.json", runner.file_stem()));
    create_private(&path, config.to_string().as_bytes()).map_err(Error::config_file)?;
    Ok(path)
}

/// Creates `path` with `bytes`, owner-only on Unix; never over an existing
/// file or through a symlink. A failure to create leaves the path alone
/// (it is not ours); a failure to write removes the incomplete file.
fn create_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    let written = file.write_all(bytes).and_then(|()| file.sync_all());
    if written.is_err() {
        let _ = fs::remove_file(path);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str) -> Tool {
        Tool::new(name, "t", json!({"type": "object"})).unwrap()
    }

    /// Both prefix schemes, as each agent applies them.
    #[test]
    fn model_tool_names() {
        assert_eq!(
            Runner::ClaudeCode.model_tool_name("My Host.tools", "dotted.name"),
            "mcp__My_Host_tools__dotted_name"
        );
        assert_eq!(
            Runner::CopilotCli.model_tool_name("My Host.tools", "dotted.name"),
            "My-Host-tools-dotted-name"
        );
    }

    /// Exactly 64 is allowed, 65 is not; a clash after cleaning is named.
    #[test]
    fn tool_name_limits() {
        // "mcp__" + "s" + "__" = 8 characters of prefix.
        let fits = tool(&"a".repeat(56));
        let over = tool(&"a".repeat(57));
        assert!(Runner::ClaudeCode
            .check_tool_names("s", std::slice::from_ref(&fits))
            .is_ok());
        let err = Runner::ClaudeCode
            .check_tool_names("s", &[over])
            .unwrap_err();
        assert!(err.to_string().contains("65 characters"), "{err}");
        // "s-" = 2 characters.
        assert!(Runner::CopilotCli
            .check_tool_names("s", &[tool(&"b".repeat(62))])
            .is_ok());
        assert!(Runner::CopilotCli
            .check_tool_names("s", &[tool(&"b".repeat(63))])
            .is_err());
        let err = Runner::CopilotCli
            .check_tool_names("s", &[tool("a.b"), tool("a-b")])
            .unwrap_err();
        assert!(
            err.to_string().contains("under one name, \"s-a-b\""),
            "{err}"
        );
        assert!(Runner::ClaudeCode
            .check_tool_names("s", &[tool("a.b"), tool("a-b")])
            .is_ok());
    }

    /// An existing file, or a symlink planted at the name, is refused and
    /// left as it was.
    #[test]
    fn never_over_an_existing_path() {
        let dir =
            std::env::temp_dir().join(format!("embacle-create-private-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let existing = dir.join("existing.json");
        fs::write(&existing, b"theirs").unwrap();
        let err = create_private(&existing, b"ours").unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&existing).unwrap(), b"theirs");
        #[cfg(unix)]
        {
            let target = dir.join("target.json");
            let link = dir.join("link.json");
            std::os::unix::fs::symlink(&target, &link).unwrap();
            assert!(create_private(&link, b"ours").is_err());
            assert!(!target.exists(), "nothing written through the link");
        }
        let fresh = dir.join("fresh.json");
        create_private(&fresh, b"ours").unwrap();
        assert_eq!(fs::read(&fresh).unwrap(), b"ours");
        fs::remove_dir_all(&dir).unwrap();
    }
}
