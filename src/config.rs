//! `ToolHostConfig`: how a host is bound, and every limit it enforces.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use crate::error::{Error, ErrorKind};
use crate::observer::Observer;

/// Upper bound on `max_connections`: far above any file-descriptor limit.
const MAX_CONNECTIONS_CEILING: usize = 1_000_000;

/// How a [`ToolHost`](crate::ToolHost) is bound and what it allows.
///
/// `Default` is a safe loopback host: 127.0.0.1 on a kernel-chosen port, no
/// browser origins, bounded bodies, headers, connections and sessions.
///
/// # Memory
///
/// What one connection can make the host hold at once, whoever sends it
/// (bearer or not; without a live bearer nothing past the head is read):
///
/// ```text
///   2 × max_header_bytes          the read buffer and the parsed headers
/// + 2 × max_body_bytes            the body's chunks while they are joined
/// + max_parsed_bytes              the body's parsed JSON
/// + max_body_bytes                the response's echoes of the request
/// + max_batch_len × 1 KiB           (ids, quoted names) and its own text
/// + max_batch_len × S             what the surface returns: S is the
///                                   largest of its tool list and one
///                                   call's result
/// + 1 MiB                         a streamed call's log messages waiting
///                                   to be sent (surfaces that log only)
/// ```
///
/// With the defaults that is about 77.2 MiB per connection plus 32 × S,
/// and `max_connections` connections at most; lower `max_body_bytes` and
/// `max_parsed_bytes` together to shrink it. A notification stream holds
/// its state and pre-rendered messages besides its connection: under
/// 4 KiB, as a `subscriptions/listen` id longer than 256 bytes once
/// written as JSON (escapes included) is refused (400;
/// `tests/stream_memory.rs` counts the costliest id allowed). A
/// response that its client does not read is released after
/// `write_stall_timeout`. Besides its connections, each open session holds
/// at most `max_mcp_sessions_per_session` MCP sessions, each a small
/// record and its client's name and version (each at most 128
/// characters), whatever its clients send.
/// `tests/memory.rs` checks the bound with eight connections that each
/// send the costliest request they can and never read.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use embacle_tool_host::ToolHostConfig;
///
/// let config = ToolHostConfig {
///     server_name: "notes".to_owned(),
///     instructions: Some("Search the user's notes before answering.".to_owned()),
///     header_read_timeout: Duration::from_secs(5),
///     ..ToolHostConfig::default()
/// };
/// assert_eq!(config.port, 0);
/// ```
#[derive(Debug, Clone)]
pub struct ToolHostConfig {
    /// The server's name: `mcpServers[].name` and `serverInfo.name`. Agents
    /// prefix the tool names the model sees with it, so keep it short.
    /// 1–64 characters of `[A-Za-z0-9_-]`. Default `"tools"`.
    pub server_name: String,
    /// The address to bind. Must be a loopback address (127.0.0.0/8 or
    /// `::1`): this host serves the caller's own agents, never a network.
    /// Default `127.0.0.1`.
    pub bind_addr: IpAddr,
    /// The port; 0 (the default) lets the kernel choose.
    pub port: u16,
    /// Served to the client at `initialize`, as a hint for the model.
    /// Default `None`.
    pub instructions: Option<String>,
    /// `Origin` values a request may carry besides the listener's own
    /// (exact, ASCII case-insensitive match, e.g. `"http://localhost:3000"`).
    /// A request with any other `Origin` gets 403 before authentication —
    /// the defence against DNS rebinding by browser pages. Agents send no
    /// `Origin`.
    ///
    /// The listener's own origins — `http://127.0.0.1:PORT`,
    /// `http://localhost:PORT` and `http://[::1]:PORT` at the bound port —
    /// are always allowed: only a page served by this very listener could
    /// carry them, and it serves none. (The official MCP conformance suite
    /// requires that request to succeed.) Default: empty, so every other
    /// browser origin is refused.
    pub allowed_origins: Vec<String>,
    /// Largest accepted request body, in bytes; a larger body gets 413:
    /// before it is read when its `Content-Length` says so, as soon as it
    /// crosses the limit when it is sent chunked. This is the first check
    /// on a body, so a body over it is 413 whatever it holds (a batch too
    /// long included). Default 4 MiB.
    pub max_body_bytes: usize,
    /// Largest request head (request line plus headers, as sent), in
    /// bytes; a larger head gets 431, however its bytes arrive — one byte
    /// over is refused. At least 8192 (hyper's floor). Default 64 KiB.
    pub max_header_bytes: usize,
    /// How long a connection may go without a request in service: from its
    /// accept, or from the moment its last response was handed over (for a
    /// streamed response, its end), until the head of its next request is
    /// complete. A connection past it is closed without an answer: a head
    /// sent too slowly, or trickled, or an idle keep-alive connection. A
    /// request in service does not time out by it: its body has
    /// `body_read_timeout`, its call `call_timeout` (when set), and a
    /// streamed answer counts as in service to its end. A complete answer
    /// is handed over at once, so the clock starts while hyper may still
    /// be writing it: an answer larger than the socket's buffers, read
    /// more slowly than this timeout allows, is cut off (hyper's own header
    /// timer did the same). Default 10 seconds.
    pub header_read_timeout: Duration,
    /// How long a client may take to send a request's body once its headers
    /// are in (counted from the first moment the host finds the body
    /// incomplete, right after the headers; a body that came with them
    /// never starts the clock). A slower body gets 408 and the connection
    /// is closed. Default 10 seconds.
    pub body_read_timeout: Duration,
    /// Most connections held at once. When all are taken, a new connection
    /// takes the slot of the oldest one that has not yet presented a live
    /// bearer (which is closed); connections that have are never displaced,
    /// and when every slot is theirs the newcomer is closed at once. So a
    /// flood by a process without a bearer cannot lock the agent out (see
    /// README.md, "Security model"): a new connection may be displaced only
    /// by `max_connections` newer ones, far longer than a client takes to
    /// send its request. Each connection is a file descriptor of your
    /// process: on Linux, [`ToolHost::bind`](crate::ToolHost::bind)
    /// refuses a value that the soft `RLIMIT_NOFILE`, less the descriptors
    /// already open, cannot hold with 64 to spare. Default 256.
    pub max_connections: usize,
    /// Most of those slots one session's connections may hold. A request
    /// that presents the bearer of a session already holding that many is
    /// refused with 429 (`-32600`) and its connection closed, unheld: so
    /// one session — a client that streams a call on every connection it
    /// can open, or a leaked bearer — cannot take the slots another live
    /// session needs. Every request counts against the session whose
    /// bearer it presents: a connection is charged to one session at a
    /// time, and moves to another session's share (room permitting; else
    /// 429) when a request on it presents that session's bearer, as an
    /// agent's HTTP pool does when its next ACP session reuses the last
    /// one's connections. When a session's guard drops, the connections
    /// charged to it are charged to none and give their slots up to the
    /// first newcomers that need them (they are pending again, shed
    /// first); they are not closed at once, since the agent's pool may be
    /// reusing one for another session at that moment. `None` (the
    /// default) is half of
    /// `max_connections`, rounded up; at most `max_connections`. With many
    /// sessions busy at once, lower it so that their shares fit.
    pub max_connections_per_session: Option<usize>,
    /// Refuse (403, and close) a connection that another local user's
    /// process opened, on its first request that carries `Authorization`,
    /// before the bearer is looked at: a bearer that leaks to another user
    /// (Claude's ACP adapter puts it on a command line every user can
    /// read) is then useless to them, and they get the same 403 for a live
    /// bearer and a dead one. Only a client socket that a process still
    /// holds counts (one its client closed is reported by the kernel
    /// without an owner, as uid 0, and is no one, even to a root host);
    /// dual-stack clients (`AF_INET6` to `::ffff:127.0.0.1`, the JDK's and
    /// .NET's default) are found as such. On
    /// Linux, where the kernel says which user owns the client's end of a
    /// loopback connection (one `NETLINK_SOCK_DIAG` lookup of that socket,
    /// as `ss` does); elsewhere there is no check
    /// ([`ToolHost::checks_peer_user`](crate::ToolHost::checks_peer_user)
    /// says whether there is). It costs one kernel lookup per connection
    /// that sends `Authorization`, O(1) in the machine's socket count
    /// (`benches/peer_lookup.rs`), and nothing for connections that send
    /// none. It does not defend against processes of the same user, which
    /// can read the caller's memory anyway, nor against root. Default true.
    pub refuse_other_users: bool,
    /// Most sessions open at once; [`ToolHost::open_session`](crate::ToolHost::open_session) fails beyond
    /// it. Slots are allocated as sessions open, so a high limit costs
    /// nothing until used. Default 1,048,576.
    pub max_sessions: u32,
    /// Longest a tool call may run. A call past it is cancelled (its future
    /// dropped, its [`CancelSignal`](crate::call::CancelSignal) raised) and
    /// answered with JSON-RPC `-32603` naming the limit. `None` disables
    /// the limit. Default 5 minutes.
    pub call_timeout: Option<Duration>,
    /// On an SSE response, the silence after which a `:` keep-alive comment
    /// is sent, so proxies and clients do not give up on a slow tool.
    /// Must be positive. Default 15 seconds.
    pub sse_keep_alive: Duration,
    /// Most notification streams one session may hold open at once:
    /// legacy `GET /mcp` streams and 2026-07-28 `subscriptions/listen`
    /// streams together. One more is refused with 409 Conflict. Streams
    /// live as long as their session, and their connections hold the
    /// host's slots as authenticated ones, so this is also what keeps one
    /// session from taking every slot with streams. At least 1. Default 4.
    pub max_streams_per_session: usize,
    /// Most MCP sessions (`Mcp-Session-Id`, minted by each legacy-era
    /// `initialize`) one session's bearer may hold at once. Minting one
    /// more ends the oldest: its id is answered 404 (`-32001`, on which
    /// clients initialize again) and its streams end. Each is under 200
    /// bytes, so this bounds what a client that re-initializes in a loop
    /// can make the host keep. At least 1. Default 16.
    pub max_mcp_sessions_per_session: usize,
    /// Most messages in one JSON-RPC batch (MCP 2025-03-26 only). A longer
    /// batch is refused as a whole — one `-32600` error, HTTP 400 — and none
    /// of it runs. The length is counted after the body's limits are asked
    /// (a body past `max_body_bytes` or `max_parsed_bytes` is 413 first),
    /// when the batch's messages are read, before any of them is
    /// dispatched. At least 1. Default 32.
    pub max_batch_len: usize,
    /// Most memory the parsed JSON of one request body may take. The host
    /// bounds it from the body's bytes before parsing (conservatively: see
    /// `jsonrpc/json_scan.rs`), and refuses a body past it with 413. Needed because
    /// parsed JSON can take far more memory than its text: a body of small
    /// objects takes about 80 times its size. Ordinary bodies, mostly
    /// strings, are charged about their own size. At least 1. Default
    /// 64 MiB (16 times the default `max_body_bytes`).
    pub max_parsed_bytes: usize,
    /// How long a response may wait on a client that has stopped reading
    /// it. A write that makes no progress for this long closes the
    /// connection, dropping its response (and cancelling a streamed call).
    /// Must be positive. Default 10 seconds.
    pub write_stall_timeout: Duration,
    /// Told of every request the host answers or refuses (see
    /// [`observe`](crate::observe)). Default `None`: nothing is measured.
    pub observer: Option<Observer>,
}

impl Default for ToolHostConfig {
    fn default() -> Self {
        Self {
            server_name: "tools".to_owned(),
            bind_addr: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 0,
            instructions: None,
            allowed_origins: Vec::new(),
            max_body_bytes: 4 * 1024 * 1024,
            max_header_bytes: 64 * 1024,
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(10),
            max_connections: 256,
            max_connections_per_session: None,
            refuse_other_users: true,
            max_sessions: 1 << 20,
            call_timeout: Some(Duration::from_secs(300)),
            sse_keep_alive: Duration::from_secs(15),
            max_streams_per_session: 4,
            max_mcp_sessions_per_session: 16,
            max_batch_len: 32,
            max_parsed_bytes: 64 * 1024 * 1024,
            write_stall_timeout: Duration::from_secs(10),
            observer: None,
        }
    }
}

impl ToolHostConfig {
    /// [`max_connections_per_session`](Self::max_connections_per_session)
    /// with its default applied.
    pub(crate) fn connections_per_session(&self) -> usize {
        self.max_connections_per_session
            .unwrap_or(self.max_connections.div_ceil(2))
    }

    /// Refuses a config the host cannot honour, naming the field: the name
    /// and the address, then every size, count and duration (positive),
    /// then the limits bounded on both sides.
    pub(crate) fn validate(&self) -> Result<(), Error> {
        let refuse = |why: &'static str| Err(ErrorKind::InvalidConfig.error(why));
        let name_ok = (1..=64).contains(&self.server_name.len())
            && self
                .server_name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !name_ok {
            return refuse("server_name must be 1-64 characters of [A-Za-z0-9_-]");
        }
        if !self.bind_addr.is_loopback() {
            return refuse("bind_addr must be a loopback address");
        }
        // Each field that must be positive, and whether it is zero: the
        // counts, then the durations.
        let zero = [
            ("max_body_bytes", self.max_body_bytes == 0),
            ("max_sessions", self.max_sessions == 0),
            ("max_batch_len", self.max_batch_len == 0),
            ("max_streams_per_session", self.max_streams_per_session == 0),
            (
                "max_mcp_sessions_per_session",
                self.max_mcp_sessions_per_session == 0,
            ),
            ("max_parsed_bytes", self.max_parsed_bytes == 0),
            ("header_read_timeout", self.header_read_timeout.is_zero()),
            ("body_read_timeout", self.body_read_timeout.is_zero()),
            ("call_timeout", self.call_timeout == Some(Duration::ZERO)),
            ("sse_keep_alive", self.sse_keep_alive.is_zero()),
            ("write_stall_timeout", self.write_stall_timeout.is_zero()),
        ];
        if let Some(&(field, _)) = zero.iter().find(|(_, zero)| *zero) {
            // `call_timeout` alone may be None, and the message says so.
            let also = (field == "call_timeout").then_some(" (or None for no limit)");
            let also = also.unwrap_or_default();
            return Err(ErrorKind::InvalidConfig.error(format!("{field} must be positive{also}")));
        }
        if !(1..=MAX_CONNECTIONS_CEILING).contains(&self.max_connections) {
            return refuse("max_connections must be between 1 and 1,000,000");
        }
        if self
            .max_connections_per_session
            .is_some_and(|n| !(1..=self.max_connections).contains(&n))
        {
            return refuse("max_connections_per_session must be between 1 and max_connections");
        }
        if self.max_header_bytes < 8192 {
            return refuse("max_header_bytes must be at least 8192");
        }
        Ok(())
    }
}
