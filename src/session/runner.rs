//! The agents the crate knows by name: how each shows an MCP tool to its
//! model (a server prefix, characters replaced, a length limit), and, for
//! those that read MCP servers from a file, the file's flag.
//!
//! Every rule here was read from the agent's own code and checked against
//! the version `tests/` runs; the variant docs say which.

use std::ffi::OsString;
use std::fmt;
use std::path::Path;

use super::mcp_servers::BearerEnv;
use crate::error::{Error, ErrorKind};
use crate::tool::Tool;

/// The longest tool name to count on, *after* the agent has added its
/// server prefix: OpenAI's function names are at most 64 characters of
/// `[A-Za-z0-9_-]`, Copilot CLI cuts every name to 64, and other model APIs
/// document limits of that order. A name within it reaches every model
/// whole. (Gemini CLI's own limit is one less:
/// [`Runner::tool_name_limit`].)
pub const MODEL_TOOL_NAME_LIMIT: usize = 64;

/// Mistral Vibe's `agentInfo.name` in its ACP `initialize` result: the
/// name to give
/// [`McpServers::for_acp_agent_taking_http`](crate::agent::McpServers::for_acp_agent_taking_http),
/// since Vibe takes an `http` MCP server in `session/new` without declaring
/// it (checked against `mistral-vibe` 3.0.3).
pub const MISTRAL_VIBE: &str = "@mistralai/mistral-vibe";

/// An agent the crate knows: how it names MCP tools to its model
/// ([`model_tool_name`](Self::model_tool_name),
/// [`check_tool_names`](Self::check_tool_names)), and, for Claude Code and
/// Copilot CLI, the config file it reads MCP servers from
/// ([`McpServers::config_for`](crate::agent::McpServers::config_for),
/// [`ToolSession::write_mcp_config`](crate::ToolSession::write_mcp_config),
/// [`config_args`](Self::config_args)). Every one of them also takes the
/// server in ACP `session/new` ([`McpServers::for_acp_agent`](crate::agent::McpServers::for_acp_agent)).
///
/// Characters are replaced per UTF-16 unit in the agents written in
/// TypeScript (so a character outside the Basic Multilingual Plane becomes
/// two), as their regular expressions do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Runner {
    /// Claude Code, alone (`claude`) or through its ACP adapter
    /// (`claude-agent-acp`, `@agentclientprotocol` on npm, which runs it).
    /// Tools reach the model as `mcp__SERVER__TOOL`, every character
    /// outside `[A-Za-z0-9_-]` replaced by `_`; the Messages API allows 64
    /// characters. Since Claude Code 2.1.3xx the model sees MCP tools by
    /// name only until it loads them with its `ToolSearch` tool. It expands
    /// `${NAME}` in a header value from its environment, which keeps the
    /// bearer off its command line
    /// ([`McpServers::with_bearer_from_env`](crate::agent::McpServers::with_bearer_from_env),
    /// [`session_new_meta`](Self::session_new_meta)).
    ///
    /// Its config file: `claude --mcp-config FILE` (add
    /// `--strict-mcp-config` to ignore the user's own servers), holding
    /// `{"mcpServers":{NAME:{"type":"http","url":…,"headers":{…}}}}`, with
    /// `headers` an object (an ACP-style array makes Claude Code skip the
    /// server silently). Format: <https://code.claude.com/docs/en/mcp>
    /// ("Add a remote HTTP server", the `.mcp.json` form); checked against
    /// Claude Code 2.1.83 (the adapter 0.23.1), 2.1.318 (the adapter
    /// 0.101.0) and 2.1.332.
    ClaudeCode,
    /// GitHub Copilot CLI (`copilot`, `copilot --acp`). Tools reach the
    /// model as `SERVER-TOOL`, every character outside `[A-Za-z0-9_-]`
    /// replaced by `-`, cut at 64 characters.
    ///
    /// Its config file: `copilot --additional-mcp-config @FILE` (it also
    /// takes the JSON inline), holding
    /// `{"mcpServers":{NAME:{"type":"http","url":…,"headers":{…},"tools":["*"]}}}`,
    /// the form `copilot mcp add --transport http` writes. Format:
    /// <https://docs.github.com/en/copilot/how-tos/copilot-cli/customize-copilot/add-mcp-servers>;
    /// checked against Copilot CLI 1.0.102.
    CopilotCli,
    /// Gemini CLI (`gemini --acp`). Tools reach the model as
    /// `mcp_SERVER_TOOL` (no second `mcp_` when the server's name starts
    /// with one), every character outside `[A-Za-z0-9_.:-]` replaced by
    /// `_`; a name over 63 characters is shortened to its first 30 and last
    /// 30 joined by `...`, and Gemini CLI may then ask permission for it.
    /// No config file here: it reads MCP servers from its settings. Checked
    /// against Gemini CLI 0.61.0.
    GeminiCli,
    /// Codex (`codex`, and `codex-acp`, its ACP adapter, `@agentclientprotocol`
    /// on npm, which drives `codex app-server`).
    /// Tools reach the model as `TOOL` inside a namespace `mcp__SERVER__`,
    /// every character outside `[A-Za-z0-9_]` replaced by `_`; Codex
    /// qualifies them as `mcp__SERVER__TOOL`, and replaces a qualified name
    /// over 64 characters by its first 24 followed by a SHA-1 of the
    /// original. No config file here: it reads MCP servers from its
    /// `config.toml`. Its ACP tool calls are titled `mcp.SERVER.TOOL`.
    /// Checked against codex 0.137 (`codex-acp` 0.16.0) and 0.166.0
    /// (`codex-acp` 2.6.0).
    Codex,
}

impl Runner {
    /// The command-line flag that takes the config file, for the agents
    /// that read one.
    pub fn config_flag(self) -> Option<&'static str> {
        match self {
            Self::ClaudeCode => Some("--mcp-config"),
            Self::CopilotCli => Some("--additional-mcp-config"),
            Self::GeminiCli | Self::Codex => None,
        }
    }

    /// The two arguments that hand `path` to this agent, for the agents
    /// that read a config file: the flag, and the path in the form the
    /// agent reads it (Copilot CLI takes a file as `@PATH`; without the `@`
    /// it would parse the path as JSON).
    ///
    /// ```
    /// use std::path::Path;
    /// use embacle_tool_host::agent::Runner;
    ///
    /// let file = Path::new("/run/user/1000/tools.json");
    /// assert_eq!(Runner::CopilotCli.config_args(file).unwrap(), ["--additional-mcp-config", "@/run/user/1000/tools.json"]);
    /// assert_eq!(Runner::ClaudeCode.config_args(file).unwrap(), ["--mcp-config", "/run/user/1000/tools.json"]);
    /// assert!(Runner::GeminiCli.config_args(file).is_none());
    /// ```
    pub fn config_args(self, path: &Path) -> Option<[OsString; 2]> {
        let flag = self.config_flag()?;
        let mut value = OsString::from(if self == Self::CopilotCli { "@" } else { "" });
        value.push(path);
        Some([OsString::from(flag), value])
    }

    /// The `_meta` of ACP `session/new` that puts `env` in the environment
    /// of the agent's process for that session, for the agents whose ACP
    /// adapter takes one: Claude's (`claude-agent-acp` 0.101) starts a
    /// Claude Code process per session with the `env` of
    /// `_meta.claudeCode.options`. `None` for the others: set the variable
    /// in the agent's environment when you start it. See
    /// [`McpServers::with_bearer_from_env`](crate::agent::McpServers::with_bearer_from_env).
    ///
    /// The variable's value is the bearer, so the `_meta` is a secret too.
    pub fn session_new_meta(self, env: &BearerEnv<'_>) -> Option<serde_json::Value> {
        (self == Self::ClaudeCode).then(
            || serde_json::json!({"claudeCode": {"options": {"env": {env.name(): env.value()}}}}),
        )
    }

    /// The name the model sees for `tool` served under `server`, cut or
    /// shortened past [`tool_name_limit`](Self::tool_name_limit) as the
    /// agent does (Codex: the qualified name it keeps, under which the
    /// model sees `tool` in a namespace, see [`Runner::Codex`]; past 64
    /// characters Codex hashes it, and this returns it unhashed).
    ///
    /// ```
    /// use embacle_tool_host::agent::Runner;
    ///
    /// assert_eq!(Runner::ClaudeCode.model_tool_name("my.tools", "echo"), "mcp__my_tools__echo");
    /// assert_eq!(Runner::CopilotCli.model_tool_name("my.tools", "echo"), "my-tools-echo");
    /// assert_eq!(Runner::GeminiCli.model_tool_name("my tools", "echo"), "mcp_my_tools_echo");
    /// assert_eq!(Runner::Codex.model_tool_name("my-tools", "echo"), "mcp__my_tools__echo");
    /// ```
    pub fn model_tool_name(self, server: &str, tool: &str) -> String {
        let name = self.full_name(server, tool);
        match self {
            _ if name.len() <= self.tool_name_limit() => name,
            // ASCII by now: byte offsets are character offsets.
            Self::CopilotCli => name[..MODEL_TOOL_NAME_LIMIT].to_owned(),
            Self::GeminiCli => format!("{}...{}", &name[..30], &name[name.len() - 30..]),
            Self::ClaudeCode | Self::Codex => name,
        }
    }

    /// The name before any cut, shortening or hash: what
    /// [`check_tool_names`](Self::check_tool_names) measures.
    fn full_name(self, server: &str, tool: &str) -> String {
        // The name as the agent joins it, the characters it keeps besides
        // `[A-Za-z0-9]`, and what it puts for every other one: once per
        // UTF-16 unit in the agents written in TypeScript, as a JavaScript
        // `replace(/[^…]/g, …)` does, once per character in Codex (Rust).
        let (joined, keep, with, per_utf16_unit) = match self {
            Self::ClaudeCode => (format!("mcp__{server}__{tool}"), "_-", '_', true),
            Self::CopilotCli => (format!("{server}-{tool}"), "_-", '-', true),
            Self::GeminiCli => match format!("{server}_{tool}") {
                joined if joined.starts_with("mcp_") => (joined, "_-.:", '_', true),
                joined => (format!("mcp_{joined}"), "_-.:", '_', true),
            },
            Self::Codex => (format!("mcp__{server}__{tool}"), "_", '_', false),
        };
        let units = |c: char| if per_utf16_unit { c.len_utf16() } else { 1 };
        joined
            .chars()
            .flat_map(|c| match c.is_ascii_alphanumeric() || keep.contains(c) {
                true => std::iter::repeat_n(c, 1),
                false => std::iter::repeat_n(with, units(c)),
            })
            .collect()
    }

    /// The longest name this agent passes to its model unchanged: 63 for
    /// Gemini CLI (it shortens longer ones), [`MODEL_TOOL_NAME_LIMIT`] for
    /// the others (Copilot CLI cuts, Codex hashes, and the Messages API
    /// refuses longer names).
    pub fn tool_name_limit(self) -> usize {
        match self {
            Self::GeminiCli => MODEL_TOOL_NAME_LIMIT - 1,
            Self::ClaudeCode | Self::CopilotCli | Self::Codex => MODEL_TOOL_NAME_LIMIT,
        }
    }

    /// Checks that every tool keeps a name of its own, within
    /// [`tool_name_limit`](Self::tool_name_limit), once this agent has
    /// prefixed it with `server` (the host's
    /// [`server_name`](crate::ToolHostConfig::server_name)).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidTool`](crate::ErrorKind::InvalidTool), naming the first tool whose model-side
    /// name is too long (the agent or the model API would reject, cut,
    /// shorten or hash it), or two tools the prefixing makes one.
    ///
    /// ```
    /// use embacle_tool_host::Tool;
    /// use embacle_tool_host::agent::Runner;
    /// use serde_json::json;
    ///
    /// let schema = json!({"type": "object"});
    /// let tools = [Tool::new("summarize_the_entire_quarterly_report", "…", schema)?];
    /// assert!(Runner::ClaudeCode.check_tool_names("tools", &tools).is_ok());
    /// let err = Runner::ClaudeCode
    ///     .check_tool_names("quarterly-reporting-assistant", &tools)
    ///     .unwrap_err();
    /// assert_eq!(err.kind(), embacle_tool_host::ErrorKind::InvalidTool);
    /// # Ok::<(), embacle_tool_host::Error>(())
    /// ```
    pub fn check_tool_names(self, server: &str, tools: &[Tool]) -> Result<(), Error> {
        let limit = self.tool_name_limit();
        let mut seen: Vec<(String, &str)> = Vec::with_capacity(tools.len());
        for tool in tools {
            let name = self.full_name(server, tool.name());
            let length = name.chars().count();
            if length > limit {
                return Err(ErrorKind::InvalidTool.error(format!(
                    "{self} shows tool {:?} to the model as {name:?}, {length} characters; it passes at most {limit} unchanged: shorten the tool or the server name",
                    tool.name(),
                )));
            }
            if let Some((_, other)) = seen.iter().find(|(seen, _)| *seen == name) {
                return Err(ErrorKind::InvalidTool.error(format!(
                    "{self} shows tools {other:?} and {:?} to the model under one name, {name:?}",
                    tool.name(),
                )));
            }
            seen.push((name, tool.name()));
        }
        Ok(())
    }
}

impl fmt::Display for Runner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ClaudeCode => "Claude Code",
            Self::CopilotCli => "Copilot CLI",
            Self::GeminiCli => "Gemini CLI",
            Self::Codex => "Codex",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str) -> Tool {
        Tool::new(name, "t", json!({"type": "object"})).unwrap()
    }

    /// Each agent's prefix and replacement, as it applies them.
    #[test]
    fn model_tool_names() {
        let names = |server, tool| {
            [
                Runner::ClaudeCode,
                Runner::CopilotCli,
                Runner::GeminiCli,
                Runner::Codex,
            ]
            .map(|runner| runner.model_tool_name(server, tool))
        };
        assert_eq!(
            names("My Host.tools", "dotted.name"),
            [
                "mcp__My_Host_tools__dotted_name",
                "My-Host-tools-dotted-name",
                "mcp_My_Host.tools_dotted.name",
                "mcp__My_Host_tools__dotted_name",
            ]
        );
        assert_eq!(
            names("a-b:c", "x-y"),
            [
                "mcp__a-b_c__x-y",
                "a-b-c-x-y",
                "mcp_a-b:c_x-y",
                "mcp__a_b_c__x_y"
            ]
        );
        // Gemini CLI adds no second `mcp_`; the others prefix regardless.
        assert_eq!(
            Runner::GeminiCli.model_tool_name("mcp_host", "t"),
            "mcp_host_t"
        );
        assert_eq!(
            Runner::ClaudeCode.model_tool_name("mcp_host", "t"),
            "mcp__mcp_host__t"
        );
        // One replacement per UTF-16 unit in the TypeScript agents, per
        // character in Codex.
        assert_eq!(Runner::ClaudeCode.model_tool_name("é𝄞", "t"), "mcp_______t");
        assert_eq!(Runner::Codex.model_tool_name("é𝄞", "t"), "mcp______t");
    }

    /// Past the limit: Copilot CLI cuts, Gemini CLI keeps 30 + `...` + 30.
    #[test]
    fn long_names_as_each_agent_shows_them() {
        let long = "t".repeat(70);
        let copilot = Runner::CopilotCli.model_tool_name("s", &long);
        assert_eq!(copilot, format!("s-{}", "t".repeat(62)));
        let gemini = Runner::GeminiCli.model_tool_name("s", &long);
        assert_eq!(
            gemini,
            format!("mcp_s_{}...{}", "t".repeat(24), "t".repeat(30))
        );
        assert_eq!(gemini.len(), 63);
    }

    /// Exactly at each limit is allowed, one more is not; a clash after
    /// cleaning is named.
    #[test]
    fn tool_name_limits() {
        // Prefix lengths with server "s": Claude "mcp__s__" 8, Copilot
        // "s-" 2, Gemini "mcp_s_" 6, Codex "mcp__s__" 8.
        for (runner, prefix) in [
            (Runner::ClaudeCode, 8),
            (Runner::CopilotCli, 2),
            (Runner::GeminiCli, 6),
            (Runner::Codex, 8),
        ] {
            let room = runner.tool_name_limit() - prefix;
            assert!(
                runner
                    .check_tool_names("s", &[tool(&"a".repeat(room))])
                    .is_ok(),
                "{runner}"
            );
            let err = runner
                .check_tool_names("s", &[tool(&"a".repeat(room + 1))])
                .unwrap_err();
            let over = format!("{} characters", runner.tool_name_limit() + 1);
            assert!(err.to_string().contains(&over), "{runner}: {err}");
        }
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
        assert!(Runner::GeminiCli
            .check_tool_names("s", &[tool("a.b"), tool("a-b")])
            .is_ok());
        assert!(Runner::Codex
            .check_tool_names("s", &[tool("a.b"), tool("a-b")])
            .is_err());
    }
}
