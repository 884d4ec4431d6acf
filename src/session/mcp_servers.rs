//! What a session hands an agent: the ACP `mcpServers` list
//! ([`McpServers`]), its entries ([`McpServer`]) and their headers
//! ([`HttpHeader`]), and the bearer kept in the agent's environment
//! instead ([`BearerEnv`]). Made by [`ToolSession::mcp_servers`](crate::ToolSession::mcp_servers); how each
//! kind of agent is handed them is in `agent_config.rs`.

use std::fmt;
use std::marker::PhantomData;

use serde_json::{json, Value};

use crate::error::{Error, ErrorKind};

/// The ACP `mcpServers` list for one session (see
/// [`ToolSession::mcp_servers`](crate::ToolSession::mcp_servers)).
///
/// One way for each use:
///
/// - **An ACP agent's `session/new`**: [`for_acp_agent`](Self::for_acp_agent),
///   given the agent's `initialize` result: the array, once the agent's
///   capabilities say it takes an `http` MCP server (an error otherwise,
///   rather than an entry the agent would drop in silence).
/// - **An agent that reads a config file**:
///   [`config_for`](Self::config_for), or
///   [`ToolSession::write_mcp_config`](crate::ToolSession::write_mcp_config) to write it.
/// - **Anything else** (printing it for a person or a script, a client
///   that is not an ACP agent): [`to_value`](Self::to_value), the same
///   array unchecked; [`entries`](Self::entries) for the parts.
///
/// The array, as JSON text:
///
/// ```json
/// [{"type":"http","name":"tools","url":"http://127.0.0.1:PORT/mcp",
///   "headers":[{"name":"Authorization","value":"Bearer eth_…"}]}]
/// ```
///
/// `headers` is always present: ACP v1 requires it, and drops malformed
/// entries silently. `Debug` redacts header values.
///
/// The list borrows its [`ToolSession`](crate::ToolSession) (the `'a`), because the bearer in
/// it is only live while the guard is.
#[derive(Clone, PartialEq, Eq)]
#[must_use = "the entries do nothing until they are sent to the agent"]
pub struct McpServers<'a> {
    /// The session's borrow (`ToolSession::mcp_servers` ties it): the
    /// bearer is live only while the guard is.
    session: PhantomData<&'a ()>,
    /// One entry, with one header (`one`): what a session hands an agent.
    entries: [McpServer; 1],
}

impl<'a> McpServers<'a> {
    /// One entry, `name` at `url`, with `Authorization: AUTHORIZATION`.
    pub(super) fn one(name: String, url: String, authorization: String) -> Self {
        Self {
            session: PhantomData,
            entries: [McpServer {
                name,
                url,
                headers: [HttpHeader {
                    name: "Authorization".to_owned(),
                    value: authorization,
                }],
            }],
        }
    }

    /// The entries, in order.
    pub fn entries(&self) -> &[McpServer] {
        &self.entries
    }

    /// The array as a JSON value, not checked against any agent: for uses
    /// other than an ACP agent's `session/new`, which takes
    /// [`for_acp_agent`](Self::for_acp_agent)'s. Its text is
    /// `to_value().to_string()`.
    pub fn to_value(&self) -> Value {
        let [entry] = &self.entries;
        let [header] = &entry.headers;
        let header = json!({"name": header.name, "value": header.value});
        json!([{"type": "http", "name": entry.name, "url": entry.url, "headers": [header]}])
    }

    /// The same entries with the bearer kept out of them: each
    /// `Authorization` value reads `Bearer ${VARIABLE}`, and the returned
    /// [`BearerEnv`] is the variable to set, to the bearer, in the agent's
    /// environment. For agents that expand `${NAME}` in a header value from
    /// their environment — Claude Code does — the bearer then shows up in
    /// no process's command line (which every local user can read: Claude's
    /// ACP adapter passes its MCP servers to Claude Code on one), only in
    /// the agent's environment, which only the same user can read.
    ///
    /// The variable must reach the agent's environment before it connects:
    ///
    /// - **Per session**, where the agent's ACP adapter takes a session's
    ///   environment in `session/new`: Claude's (`claude-agent-acp`) starts
    ///   one Claude Code process per session with the `env` of
    ///   `_meta.claudeCode.options`; [`Runner::session_new_meta`](crate::agent::Runner::session_new_meta) writes
    ///   that `_meta`. One long-lived adapter then serves every session,
    ///   each with its own bearer.
    /// - **At the agent's start**, for the others: set it in the agent
    ///   process's environment, which suits a caller that starts an agent
    ///   per session (a warm agent would keep the first session's bearer).
    ///
    /// An agent that does not expand the variable sends `${VARIABLE}`
    /// literally and gets 401 on every request: use this only for agents
    /// known to expand it (`tests/agent_claude.rs` checks Claude's).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig) unless `variable` is 1 to 64 of
    /// `[A-Za-z0-9_]`, not starting with a digit, and outside the prefixes
    /// Claude Code keeps to itself (`ANTHROPIC_`, `CLAUDE_`, `OTEL_`: it
    /// blanks its own credentials rather than send them to a server).
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
    /// let (servers, env) = session.mcp_servers().with_bearer_from_env("TOOLS_BEARER")?;
    /// let header = &servers.entries()[0].headers()[0];
    /// assert_eq!(header.value(), "Bearer ${TOOLS_BEARER}");
    /// assert_eq!(env.name(), "TOOLS_BEARER");
    /// // session/new for Claude's adapter: the entry, and the bearer in
    /// // the environment of the Claude Code process it starts.
    /// let meta = Runner::ClaudeCode.session_new_meta(&env).unwrap();
    /// assert_eq!(meta["claudeCode"]["options"]["env"]["TOOLS_BEARER"], env.value());
    /// # Ok(()) }
    /// ```
    pub fn with_bearer_from_env(
        &self,
        variable: &str,
    ) -> Result<(McpServers<'a>, BearerEnv<'a>), Error> {
        check_variable_name(variable)?;
        let mut servers = self.clone();
        // The one entry's one header is `Authorization: Bearer …` (`one`).
        let authorization = &mut servers.entries[0].headers[0].value;
        let reference = format!("Bearer ${{{variable}}}");
        let header = std::mem::replace(authorization, reference);
        let bearer = header.strip_prefix("Bearer ").unwrap_or_default();
        let env = BearerEnv {
            session: PhantomData,
            name: variable.to_owned(),
            value: bearer.to_owned(),
        };
        Ok((servers, env))
    }
}

/// A name a shell and Claude Code's `${NAME}` expansion both take, and not
/// one of Claude Code's own.
fn check_variable_name(name: &str) -> Result<(), Error> {
    let well_formed = (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !name.as_bytes()[0].is_ascii_digit();
    let reserved = ["ANTHROPIC_", "CLAUDE_", "OTEL_"]
        .iter()
        .any(|prefix| name.starts_with(prefix));
    if well_formed && !reserved {
        return Ok(());
    }
    Err(ErrorKind::InvalidConfig.error(
        "the bearer's environment variable must be 1-64 of [A-Za-z0-9_], not starting with a digit, ANTHROPIC_, CLAUDE_ or OTEL_",
    ))
}

/// The environment variable that carries a session's bearer to an agent
/// that reads its header from it (see [`McpServers::with_bearer_from_env`]).
/// Its value is the bearer alone, without `Bearer `: a secret, which
/// `Debug` redacts. It borrows the [`ToolSession`](crate::ToolSession), like the entries.
#[derive(Clone, PartialEq, Eq)]
pub struct BearerEnv<'a> {
    /// The session's borrow (`ToolSession::mcp_servers` ties it): the
    /// bearer is live only while the guard is.
    session: PhantomData<&'a ()>,
    name: String,
    value: String,
}

impl BearerEnv<'_> {
    /// The variable's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The variable's value: the bearer. A secret.
    pub fn value(&self) -> &str {
        &self.value
    }
}

impl fmt::Debug for BearerEnv<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BearerEnv")
            .field("name", &self.name)
            .field("value", &"<redacted>")
            .finish()
    }
}

impl fmt::Debug for McpServers<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.entries).finish()
    }
}

/// One ACP `mcpServers` entry of type `http`.
#[derive(Clone, PartialEq, Eq)]
pub struct McpServer {
    name: String,
    url: String,
    headers: [HttpHeader; 1],
}

impl McpServer {
    /// The server name agents show and prefix tool names with.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The headers the agent must send: `Authorization: Bearer …`.
    pub fn headers(&self) -> &[HttpHeader] {
        &self.headers
    }
}

impl fmt::Debug for McpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer")
            .field("type", &"http")
            .field("name", &self.name)
            .field("url", &self.url)
            .field("headers", &self.headers)
            .finish()
    }
}

/// An HTTP header an agent must send to the server.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpHeader {
    name: String,
    value: String,
}

impl HttpHeader {
    /// The header name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The header value. For `Authorization` this is the bearer: a secret.
    pub fn value(&self) -> &str {
        &self.value
    }
}

impl fmt::Debug for HttpHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpHeader")
            .field("name", &self.name)
            .field("value", &"<redacted>")
            .finish()
    }
}
