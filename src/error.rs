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

use std::borrow::Cow;
use std::fmt;
use std::io;

/// An error from building or running a [`ToolHost`](crate::ToolHost).
///
/// The type is opaque: ask it what happened with [`kind`](Error::kind),
/// whose [`ErrorKind`] is not exhaustive, so that new cases can be added
/// without breaking you.
/// The [`Display`](fmt::Display) text is for people and is not a stable
/// contract; it never contains a bearer. [`source`](std::error::Error::source)
/// yields the underlying I/O error when there is one.
///
/// # Examples
///
/// ```
/// use embacle_tool_host::{ErrorKind, Tool};
/// use serde_json::json;
///
/// let err = Tool::new("has space", "a tool", json!({"type": "object"})).unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::InvalidTool);
/// assert_eq!(
///     err.to_string(),
///     "invalid tool: name must be 1-128 characters of [A-Za-z0-9_.-]"
/// );
/// ```
pub struct Error {
    kind: ErrorKind,
    /// What the message says beyond the kind: the refused field or tool
    /// and why, or why an agent cannot be served. Private: the public
    /// answer is [`ErrorKind`], which carries no text.
    detail: Cow<'static, str>,
    source: Option<io::Error>,
}

/// What kind of [`Error`] happened: [`Error::kind`]'s answer.
///
/// Not exhaustive, so that new kinds can be added without breaking you.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The listener could not be bound (the port is taken, the address is
    /// not local, ...). [`source`](std::error::Error::source) holds the I/O
    /// error.
    Bind,
    /// [`ToolHost::bind`](crate::ToolHost::bind) was called outside a Tokio
    /// runtime.
    NoRuntime,
    /// A [`ToolHostConfig`](crate::ToolHostConfig) field was refused, for
    /// example a non-loopback `bind_addr`.
    InvalidConfig,
    /// A [`Tool`](crate::Tool) descriptor or a
    /// [`StaticSurface`](crate::StaticSurface)'s list was refused, or
    /// [`Runner::check_tool_names`](crate::agent::Runner::check_tool_names)
    /// found a name an agent would not show the model whole.
    InvalidTool,
    /// Opening a session failed because
    /// [`ToolHostConfig::max_sessions`](crate::ToolHostConfig::max_sessions)
    /// sessions are live.
    SessionLimit,
    /// The host was shut down before the operation.
    ShutDown,
    /// [`ToolHost::shutdown_within`](crate::ToolHost::shutdown_within)'s
    /// grace period passed before every connection finished: the rest, with
    /// their work in flight, were closed.
    ShutdownForced,
    /// An ACP agent's capabilities say it cannot take an `http` MCP server
    /// (see [`McpServers::for_acp_agent`](crate::agent::McpServers::for_acp_agent)).
    UnsupportedAgent,
    /// An agent's config file could not be written (see
    /// [`ToolSession::write_mcp_config`](crate::ToolSession::write_mcp_config));
    /// [`source`](std::error::Error::source) holds the I/O error.
    ConfigFile,
}

impl Error {
    pub(crate) fn bind(source: io::Error) -> Self {
        Self::of(ErrorKind::Bind, "", Some(source))
    }

    pub(crate) fn no_runtime() -> Self {
        Self::of(ErrorKind::NoRuntime, "", None)
    }

    pub(crate) fn invalid_config(what: impl Into<Cow<'static, str>>) -> Self {
        Self::of(ErrorKind::InvalidConfig, what, None)
    }

    pub(crate) fn invalid_tool(what: impl Into<String>) -> Self {
        Self::of(ErrorKind::InvalidTool, what.into(), None)
    }

    pub(crate) fn session_limit() -> Self {
        Self::of(ErrorKind::SessionLimit, "", None)
    }

    pub(crate) fn shut_down() -> Self {
        Self::of(ErrorKind::ShutDown, "", None)
    }

    pub(crate) fn shutdown_forced() -> Self {
        Self::of(ErrorKind::ShutdownForced, "", None)
    }

    pub(crate) fn unsupported_agent(why: String) -> Self {
        Self::of(ErrorKind::UnsupportedAgent, why, None)
    }

    pub(crate) fn config_file(source: io::Error) -> Self {
        Self::of(ErrorKind::ConfigFile, "", Some(source))
    }

    fn of(
        kind: ErrorKind,
        detail: impl Into<Cow<'static, str>>,
        source: Option<io::Error>,
    ) -> Self {
        let detail = detail.into();
        Self {
            kind,
            detail,
            source,
        }
    }

    /// What went wrong, as a [`ErrorKind`] to match on.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use embacle_tool_host::{ErrorKind, ToolHost, ToolHostConfig};
    ///
    /// let config = ToolHostConfig {
    ///     bind_addr: "0.0.0.0".parse().unwrap(),
    ///     ..ToolHostConfig::default()
    /// };
    /// let err = ToolHost::bind(config).await.unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::InvalidConfig);
    /// # }
    /// ```
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let detail = &self.detail;
        match self.kind {
            ErrorKind::Bind => f.write_str("could not bind the tool host listener"),
            ErrorKind::NoRuntime => {
                f.write_str("the tool host must be bound inside a tokio runtime")
            }
            ErrorKind::InvalidConfig => write!(f, "invalid tool host config: {detail}"),
            ErrorKind::InvalidTool => write!(f, "invalid tool: {detail}"),
            ErrorKind::SessionLimit => f.write_str("the tool host's session limit is reached"),
            ErrorKind::ShutDown => f.write_str("the tool host is shut down"),
            ErrorKind::ShutdownForced => {
                f.write_str("the shutdown's grace period passed before in-flight calls finished")
            }
            ErrorKind::UnsupportedAgent => f.write_str(detail),
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
        Some(self.source.as_ref()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    /// Each constructor has its own kind, and only the bind and
    /// config-file errors carry a source.
    #[test]
    fn kinds_are_distinct() {
        let all = [
            (
                Error::bind(io::Error::from(io::ErrorKind::AddrInUse)),
                ErrorKind::Bind,
            ),
            (Error::no_runtime(), ErrorKind::NoRuntime),
            (Error::invalid_config("x"), ErrorKind::InvalidConfig),
            (Error::invalid_tool("y"), ErrorKind::InvalidTool),
            (Error::session_limit(), ErrorKind::SessionLimit),
            (Error::shut_down(), ErrorKind::ShutDown),
            (Error::shutdown_forced(), ErrorKind::ShutdownForced),
            (
                Error::unsupported_agent("the agent cannot".to_owned()),
                ErrorKind::UnsupportedAgent,
            ),
            (
                Error::config_file(io::Error::from(io::ErrorKind::AlreadyExists)),
                ErrorKind::ConfigFile,
            ),
        ];
        for (i, (e, kind)) in all.iter().enumerate() {
            assert_eq!(e.kind(), *kind, "error {i}");
            let others = all
                .iter()
                .filter(|(other, _)| other.kind() == *kind)
                .count();
            assert_eq!(others, 1, "{kind:?} is the kind of one error only");
            assert_eq!(e.source().is_some(), i == 0 || i == 8);
            let text = e.to_string();
            assert!(!text.ends_with('.'), "{text}");
            assert_eq!(text.chars().next().map(|c| c.is_lowercase()), Some(true));
        }
    }
}
