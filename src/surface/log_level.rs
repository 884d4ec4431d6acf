//! The log levels MCP defines, and a session's chosen level.

use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};

/// A log message's severity: the eight syslog levels (RFC 5424) that MCP
/// uses, least severe first, so `a < b` means `a` is less severe.
///
/// # Examples
///
/// ```
/// use embacle_tool_host::call::LogLevel;
///
/// assert!(LogLevel::Debug < LogLevel::Error);
/// assert_eq!(LogLevel::Warning.to_string(), "warning"); // its name on the wire
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// Detailed debugging information.
    Debug,
    /// General information.
    Info,
    /// A normal but significant event.
    Notice,
    /// A warning.
    Warning,
    /// An error.
    Error,
    /// A critical condition.
    Critical,
    /// Action must be taken at once.
    Alert,
    /// The system is unusable.
    Emergency,
}

/// The level names, least severe first, for error messages.
pub(crate) const LEVEL_NAMES: &str =
    "debug, info, notice, warning, error, critical, alert, emergency";

impl LogLevel {
    /// Every level, least severe first.
    pub const ALL: [Self; 8] = [
        Self::Debug,
        Self::Info,
        Self::Notice,
        Self::Warning,
        Self::Error,
        Self::Critical,
        Self::Alert,
        Self::Emergency,
    ];

    /// The level's name on the wire (its `Display`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Notice => "notice",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
            Self::Alert => "alert",
            Self::Emergency => "emergency",
        }
    }

    /// The level named `name` (exactly, in lower case, as on the wire).
    pub(crate) fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|level| level.as_str() == name)
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A legacy-era session's log level, as `logging/setLevel` last set it:
/// one atomic byte, so setting it never blocks a call that reads it.
/// Until a client sets it, every level is sent (MCP leaves the default to
/// the server; the TypeScript SDK's server does the same).
#[derive(Debug, Default)]
pub(crate) struct AtomicLogLevel(AtomicU8);

impl AtomicLogLevel {
    pub(crate) fn get(&self) -> LogLevel {
        // Relaxed: the level is a lone value; a call racing a setLevel may
        // see either, as it may on any server.
        LogLevel::ALL[usize::from(self.0.load(Ordering::Relaxed)) % LogLevel::ALL.len()]
    }

    pub(crate) fn set(&self, level: LogLevel) {
        self.0.store(level as u8, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names round-trip, nothing else parses, and the order is severity.
    #[test]
    fn levels() {
        for level in LogLevel::ALL {
            assert_eq!(LogLevel::parse(level.as_str()), Some(level));
            assert_eq!(level.to_string(), level.as_str());
        }
        for bad in ["", "Info", "INFO", "warn", "fatal", "info "] {
            assert_eq!(LogLevel::parse(bad), None, "{bad:?}");
        }
        assert!(LogLevel::ALL.windows(2).all(|w| w[0] < w[1]));
        let names: Vec<&str> = LogLevel::ALL.iter().map(|l| l.as_str()).collect();
        assert_eq!(names.join(", "), LEVEL_NAMES);
    }

    /// A session sends every level until a client sets one.
    #[test]
    fn session_level() {
        let level = AtomicLogLevel::default();
        assert_eq!(level.get(), LogLevel::Debug);
        for each in LogLevel::ALL {
            level.set(each);
            assert_eq!(level.get(), each);
        }
    }
}
