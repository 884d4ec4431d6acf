//! The crate's one public error type.
//!
//! Protocol failures (a bad bearer, an unknown tool, malformed JSON-RPC) are
//! not Rust errors: they are answers on the wire, decided in `http/transport.rs`
//! (with `http/rejection.rs`) and `mcp/` (with `jsonrpc/`). [`Error`] covers what
//! the *embedder* can get wrong or run into: binding the listener (and
//! calling it outside a Tokio runtime), configuration, tool descriptors and
//! their names as an agent shows them, the session limit, shutdown (and its
//! deadline), an agent that cannot take an `http` server or reads no config
//! file, and writing a config file.

use std::fmt;
use std::io;

/// An error from building or running a [`ToolHost`](crate::ToolHost).
///
/// The type is opaque: ask it what happened with the `is_*` predicates. They
/// are not exhaustive, so that new cases can be added without breaking you.
/// The [`Display`](fmt::Display) text is for people and is not a stable
/// contract; it never contains a bearer. [`source`](std::error::Error::source)
/// yields the underlying I/O error when there is one.
///
/// # Examples
///
/// ```
/// use embacle_tool_host::Tool;
/// use serde_json::json;
///
/// let err = Tool::new("has space", "a tool", json!({"type": "object"})).unwrap_err();
/// assert!(err.is_invalid_tool());
/// assert_eq!(
///     err.to_string(),
///     "invalid tool: name must be 1-128 characters of [A-Za-z0-9_.-]"
/// );
/// ```
pub struct Error {
    kind: ErrorKind,
    source: Option<io::Error>,
}

/// What went wrong. Private so that variants can change freely.
#[derive(Debug)]
enum ErrorKind {
    /// The listener could not be bound.
    Bind,
    /// `bind` was called outside a Tokio runtime.
    NoRuntime,
    /// A `ToolHostConfig` field holds a value the host refuses.
    InvalidConfig(std::borrow::Cow<'static, str>),
    /// A tool descriptor or a surface's tool list is not valid.
    InvalidTool(String),
    /// The configured maximum of live sessions is reached.
    SessionLimit,
    /// The host has been shut down.
    ShutDown,
    /// A graceful shutdown's grace period passed with work still in flight.
    ShutdownForced,
    /// An agent cannot take the kind of MCP server the host is.
    UnsupportedAgent(String),
    /// A config file for an agent could not be written.
    ConfigFile,
}

impl Error {
    pub(crate) fn bind(source: io::Error) -> Self {
        Self::of(ErrorKind::Bind, Some(source))
    }

    pub(crate) fn no_runtime() -> Self {
        Self::of(ErrorKind::NoRuntime, None)
    }

    pub(crate) fn invalid_config(what: impl Into<std::borrow::Cow<'static, str>>) -> Self {
        Self::of(ErrorKind::InvalidConfig(what.into()), None)
    }

    pub(crate) fn invalid_tool(what: impl Into<String>) -> Self {
        Self::of(ErrorKind::InvalidTool(what.into()), None)
    }

    pub(crate) fn session_limit() -> Self {
        Self::of(ErrorKind::SessionLimit, None)
    }

    pub(crate) fn shut_down() -> Self {
        Self::of(ErrorKind::ShutDown, None)
    }

    pub(crate) fn shutdown_forced() -> Self {
        Self::of(ErrorKind::ShutdownForced, None)
    }

    pub(crate) fn unsupported_agent(why: String) -> Self {
        Self::of(ErrorKind::UnsupportedAgent(why), None)
    }

    pub(crate) fn config_file(source: io::Error) -> Self {
        Self::of(ErrorKind::ConfigFile, Some(source))
    }

    fn of(kind: ErrorKind, source: Option<io::Error>) -> Self {
        Self { kind, source }
    }

    /// True when the listener could not be bound (the port is taken, the
    /// address is not local, ...). [`source`](std::error::Error::source)
    /// holds the I/O error.
    pub fn is_bind(&self) -> bool {
        matches!(self.kind, ErrorKind::Bind)
    }

    /// True when [`ToolHost::bind`](crate::ToolHost::bind) was called outside
    /// a Tokio runtime.
    pub fn is_no_runtime(&self) -> bool {
        matches!(self.kind, ErrorKind::NoRuntime)
    }

    /// True when a [`ToolHostConfig`](crate::ToolHostConfig) field was
    /// refused, for example a non-loopback `bind_addr`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use embacle_tool_host::{ToolHost, ToolHostConfig};
    ///
    /// let config = ToolHostConfig {
    ///     bind_addr: "0.0.0.0".parse().unwrap(),
    ///     ..ToolHostConfig::default()
    /// };
    /// let err = ToolHost::bind(config).await.unwrap_err();
    /// assert!(err.is_invalid_config());
    /// # }
    /// ```
    pub fn is_invalid_config(&self) -> bool {
        matches!(self.kind, ErrorKind::InvalidConfig(_))
    }

    /// True when a [`Tool`](crate::Tool) descriptor or a
    /// [`StaticSurface`](crate::StaticSurface)'s list was refused, or when
    /// [`Runner::check_tool_names`](crate::agent::Runner::check_tool_names) found a
    /// name an agent would not show the model whole.
    pub fn is_invalid_tool(&self) -> bool {
        matches!(self.kind, ErrorKind::InvalidTool(_))
    }

    /// True when opening a session failed because
    /// [`ToolHostConfig::max_sessions`](crate::ToolHostConfig::max_sessions)
    /// sessions are live.
    pub fn is_session_limit(&self) -> bool {
        matches!(self.kind, ErrorKind::SessionLimit)
    }

    /// True when the host was shut down before the operation.
    pub fn is_shut_down(&self) -> bool {
        matches!(self.kind, ErrorKind::ShutDown)
    }

    /// True when [`ToolHost::shutdown_within`](crate::ToolHost::shutdown_within)'s
    /// grace period passed before every connection finished: the rest, with
    /// their work in flight, were closed.
    pub fn is_shutdown_forced(&self) -> bool {
        matches!(self.kind, ErrorKind::ShutdownForced)
    }

    /// True when an ACP agent's capabilities say it cannot take an `http`
    /// MCP server (see [`McpServers::for_acp_agent`](crate::agent::McpServers::for_acp_agent)).
    pub fn is_unsupported_agent(&self) -> bool {
        matches!(self.kind, ErrorKind::UnsupportedAgent(_))
    }

    /// True when an agent's config file could not be written (see
    /// [`ToolSession::write_mcp_config`](crate::ToolSession::write_mcp_config));
    /// [`source`](std::error::Error::source) holds the I/O error.
    pub fn is_config_file(&self) -> bool {
        matches!(self.kind, ErrorKind::ConfigFile)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ErrorKind::Bind => f.write_str("could not bind the tool host listener"),
            ErrorKind::NoRuntime => {
                f.write_str("the tool host must be bound inside a tokio runtime")
            }
            ErrorKind::InvalidConfig(what) => write!(f, "invalid tool host config: {what}"),
            ErrorKind::InvalidTool(what) => write!(f, "invalid tool: {what}"),
            ErrorKind::SessionLimit => f.write_str("the tool host's session limit is reached"),
            ErrorKind::ShutDown => f.write_str("the tool host is shut down"),
            ErrorKind::ShutdownForced => {
                f.write_str("the shutdown's grace period passed before in-flight calls finished")
            }
            ErrorKind::UnsupportedAgent(why) => f.write_str(why),
            ErrorKind::ConfigFile => f.write_str("could not write the agent's MCP config file"),
        }
    }
}

/// `Debug` is the same one line as `Display`, plus the I/O cause when there
/// is one, so `unwrap()` failures read well.
impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)?;
        if let Some(source) = &self.source {
            write!(f, " ({source})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    /// Each constructor answers exactly its own predicate, and only the bind
    /// error carries a source.
    #[test]
    fn predicates_are_exclusive() {
        let all = [
            Error::bind(io::Error::from(io::ErrorKind::AddrInUse)),
            Error::no_runtime(),
            Error::invalid_config("x"),
            Error::invalid_tool("y"),
            Error::session_limit(),
            Error::shut_down(),
            Error::shutdown_forced(),
            Error::unsupported_agent("the agent cannot".to_owned()),
            Error::config_file(io::Error::from(io::ErrorKind::AlreadyExists)),
        ];
        for (i, e) in all.iter().enumerate() {
            let answers = [
                e.is_bind(),
                e.is_no_runtime(),
                e.is_invalid_config(),
                e.is_invalid_tool(),
                e.is_session_limit(),
                e.is_shut_down(),
                e.is_shutdown_forced(),
                e.is_unsupported_agent(),
                e.is_config_file(),
            ];
            for (j, a) in answers.iter().enumerate() {
                assert_eq!(*a, i == j, "error {i} answered predicate {j} with {a}");
            }
            assert_eq!(e.source().is_some(), i == 0 || i == 8);
            let text = e.to_string();
            assert!(!text.ends_with('.'), "{text}");
            assert_eq!(text.chars().next().map(|c| c.is_lowercase()), Some(true));
        }
    }
}
