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

impl ErrorKind {
    /// An error of this kind; `detail` is what its message says beyond the
    /// kind (the refused field or tool and why, or why an agent cannot be
    /// served), empty for the kinds whose message is fixed.
    pub(crate) fn error(self, detail: impl Into<Cow<'static, str>>) -> Error {
        Error {
            kind: self,
            detail: detail.into(),
            source: None,
        }
    }

    /// An error of this kind (`Bind`, `ConfigFile`) caused by `source`,
    /// which [`source`](std::error::Error::source) yields.
    pub(crate) fn io_error(self, source: io::Error) -> Error {
        Error {
            source: Some(source),
            ..self.error("")
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The fixed kinds' detail is empty; the others' follows its prefix.
        let prefix = match self.kind {
            ErrorKind::Bind => "could not bind the tool host listener",
            ErrorKind::NoRuntime => "the tool host must be bound inside a tokio runtime",
            ErrorKind::InvalidConfig => "invalid tool host config: ",
            ErrorKind::InvalidTool => "invalid tool: ",
            ErrorKind::SessionLimit => "the tool host's session limit is reached",
            ErrorKind::ShutDown => "the tool host is shut down",
            ErrorKind::ShutdownForced => {
                "the shutdown's grace period passed before in-flight calls finished"
            }
            ErrorKind::UnsupportedAgent => "",
            ErrorKind::ConfigFile => "could not write the agent's MCP config file",
        };
        write!(f, "{prefix}{}", self.detail)
    }
}

/// `Debug` is the same one line as `Display`, plus the I/O cause when there
/// is one, so `unwrap()` failures read well.
impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)?;
        self.source
            .as_ref()
            .map_or(Ok(()), |source| write!(f, " ({source})"))
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

    /// Every kind reads as one lowercase line without a final period,
    /// with or without a detail, and only the I/O errors carry a source.
    #[test]
    fn messages_are_lines_and_io_errors_have_a_source() {
        let all = [
            ErrorKind::Bind.io_error(io::ErrorKind::AddrInUse.into()),
            ErrorKind::NoRuntime.error(""),
            ErrorKind::InvalidConfig.error("x"),
            ErrorKind::InvalidTool.error(format!("y{}", 1)),
            ErrorKind::SessionLimit.error(""),
            ErrorKind::ShutDown.error(""),
            ErrorKind::ShutdownForced.error(""),
            ErrorKind::UnsupportedAgent.error("the agent cannot"),
            ErrorKind::ConfigFile.io_error(io::ErrorKind::AlreadyExists.into()),
        ];
        for (i, e) in all.iter().enumerate() {
            assert_eq!(e.source().is_some(), i == 0 || i == 8);
            let text = e.to_string();
            assert!(!text.ends_with('.') && !text.contains('\n'), "{text}");
            assert_eq!(text.chars().next().map(|c| c.is_lowercase()), Some(true));
        }
        assert_eq!(
            ErrorKind::InvalidTool.error("y").to_string(),
            "invalid tool: y"
        );
    }
}
