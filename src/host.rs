//! `ToolHost` and its config: the listener, the accept loop, shutdown.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::admission::{Admission, Connection};
use crate::entry::EntryGate;
use crate::in_flight::InFlightCalls;
use crate::mcp::ServerInfo;
use crate::race::{race, First};
use crate::revocation::RevocationSlab;
use crate::session::{SessionId, SessionState, ToolSession};
use crate::surface::DynSurface;
use crate::write_stall::WriteStallGuard;
use crate::{transport, Error, ToolSurface};

/// Upper bound on `max_connections`: far above any file-descriptor limit.
const MAX_CONNECTIONS_CEILING: usize = 1_000_000;

/// How a [`ToolHost`] is bound and what it allows.
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
/// ```
///
/// With the defaults that is about 76 MiB per connection plus 32 × S, and
/// `max_connections` connections at most; lower `max_body_bytes` and
/// `max_parsed_bytes` together to shrink it. A response that its client
/// does not read is released after `write_stall_timeout`.
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
    /// Largest accepted request body, in bytes; larger bodies get 413 before
    /// they are read. Default 4 MiB.
    pub max_body_bytes: usize,
    /// Largest request head (request line plus headers, as sent), in
    /// bytes; a larger head gets 431, however its bytes arrive — one byte
    /// over is refused. At least 8192 (hyper's floor). Default 64 KiB.
    pub max_header_bytes: usize,
    /// How long a client may take to send a request's headers. A connection
    /// that is slower (or idle between keep-alive requests for longer) is
    /// closed. Default 10 seconds.
    pub header_read_timeout: Duration,
    /// How long a client may take to send a request's body once its headers
    /// are in. A slower body gets 408 and the connection is closed. Default
    /// 10 seconds.
    pub body_read_timeout: Duration,
    /// Most connections held at once. When all are taken, a new connection
    /// takes the slot of the oldest one that has not yet presented a live
    /// bearer (which is closed); connections that have are never displaced,
    /// and when every slot is theirs the newcomer is closed at once. So a
    /// flood by a process without a bearer cannot lock the agent out (see
    /// README.md, "Security model"): a new connection may be displaced only
    /// by `max_connections` newer ones, far longer than a client takes to
    /// send its request. Default 256.
    pub max_connections: usize,
    /// Most sessions open at once; [`ToolHost::open_session`] fails beyond
    /// it. Slots are allocated as sessions open, so a high limit costs
    /// nothing until used. Default 1,048,576.
    pub max_sessions: u32,
    /// Longest a tool call may run. A call past it is cancelled (its future
    /// dropped, its [`CancelSignal`](crate::CancelSignal) raised) and
    /// answered with JSON-RPC `-32603` naming the limit. `None` disables
    /// the limit. Default 5 minutes.
    pub call_timeout: Option<Duration>,
    /// On an SSE response, the silence after which a `:` keep-alive comment
    /// is sent, so proxies and clients do not give up on a slow tool.
    /// Must be positive. Default 15 seconds.
    pub sse_keep_alive: Duration,
    /// Most messages in one JSON-RPC batch (MCP 2025-03-26 only). A longer
    /// batch is refused as a whole — one `-32600` error, HTTP 400 — and none
    /// of it runs. At least 1. Default 32.
    pub max_batch_len: usize,
    /// Most memory the parsed JSON of one request body may take. The host
    /// bounds it from the body's bytes before parsing (conservatively: see
    /// `json_scan.rs`), and refuses a body past it with 413. Needed because
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
            max_sessions: 1 << 20,
            call_timeout: Some(Duration::from_secs(300)),
            sse_keep_alive: Duration::from_secs(15),
            max_batch_len: 32,
            max_parsed_bytes: 64 * 1024 * 1024,
            write_stall_timeout: Duration::from_secs(10),
        }
    }
}

impl ToolHostConfig {
    fn validate(&self) -> Result<(), Error> {
        let name_ok = (1..=64).contains(&self.server_name.len())
            && self
                .server_name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !name_ok {
            return Err(Error::invalid_config(
                "server_name must be 1-64 characters of [A-Za-z0-9_-]",
            ));
        }
        if !self.bind_addr.is_loopback() {
            return Err(Error::invalid_config(
                "bind_addr must be a loopback address",
            ));
        }
        let positive = [
            (self.max_body_bytes == 0, "max_body_bytes must be positive"),
            (self.max_sessions == 0, "max_sessions must be positive"),
            (self.max_batch_len == 0, "max_batch_len must be positive"),
            (
                self.max_parsed_bytes == 0,
                "max_parsed_bytes must be positive",
            ),
            (
                self.header_read_timeout.is_zero(),
                "header_read_timeout must be positive",
            ),
            (
                self.body_read_timeout.is_zero(),
                "body_read_timeout must be positive",
            ),
            (
                self.call_timeout == Some(Duration::ZERO),
                "call_timeout must be positive (or None for no limit)",
            ),
            (
                self.sse_keep_alive.is_zero(),
                "sse_keep_alive must be positive",
            ),
            (
                self.write_stall_timeout.is_zero(),
                "write_stall_timeout must be positive",
            ),
        ];
        if let Some((_, why)) = positive.into_iter().find(|(zero, _)| *zero) {
            return Err(Error::invalid_config(why));
        }
        if !(1..=MAX_CONNECTIONS_CEILING).contains(&self.max_connections) {
            return Err(Error::invalid_config(
                "max_connections must be between 1 and 1,000,000",
            ));
        }
        if self.max_header_bytes < 8192 {
            return Err(Error::invalid_config(
                "max_header_bytes must be at least 8192",
            ));
        }
        Ok(())
    }
}

/// State shared by the accept loop, every connection, every request and
/// every session guard. Sessions keep it alive, so a guard outliving its
/// host still revokes cleanly.
pub(crate) struct Shared {
    pub(crate) slab: RevocationSlab<SessionState>,
    pub(crate) info: ServerInfo,
    /// `127.0.0.1:PORT` (or `[::1]:PORT`): the URL's authority.
    pub(crate) url_authority: String,
    /// Accepted `Host` values, lower case.
    allowed_hosts: Vec<String>,
    /// Accepted `Origin` values, lower case: the listener's own and the
    /// config's.
    allowed_origins: Vec<String>,
    pub(crate) max_body_bytes: usize,
    pub(crate) max_batch_len: usize,
    pub(crate) max_parsed_bytes: usize,
    pub(crate) body_read_timeout: Duration,
    pub(crate) call_timeout: Option<Duration>,
    pub(crate) sse_keep_alive: Duration,
    /// Tool calls running right now, across sessions.
    pub(crate) in_flight: AtomicUsize,
    next_session_id: AtomicU64,
}

impl Shared {
    /// Step 1 of the transport: `Host` (or an absolute-form target's
    /// authority) must name this listener by one of its loopback names and
    /// its port.
    pub(crate) fn host_allowed(&self, host: &[u8]) -> bool {
        self.allowed_hosts
            .iter()
            .any(|ok| ok.as_bytes().eq_ignore_ascii_case(host))
    }

    /// An `Origin` must be one of the listener's own or one the config
    /// allows.
    pub(crate) fn origin_allowed(&self, origin: &[u8]) -> bool {
        self.allowed_origins
            .iter()
            .any(|ok| ok.as_bytes().eq_ignore_ascii_case(origin))
    }
}

/// What the accept loop is asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Running,
    /// Stop accepting; let connections finish until the instant; then close.
    Drain(Instant),
    /// Stop accepting and close every connection now.
    Now,
}

/// A loopback MCP server for tools, embedded in the caller's process.
///
/// [`bind`](Self::bind) it once; open one [`ToolSession`] per ACP session
/// with [`open_session`](Self::open_session). Every session has its own
/// bearer and its own [`ToolSurface`]; they share the one listener.
///
/// `ToolHost` is cheap to clone (one reference count); all clones control the
/// same host. When the last clone is dropped the host stops accepting and
/// closes its connections, as [`shutdown`](Self::shutdown) would.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), embacle_tool_host::Error> {
/// use std::sync::Arc;
/// use embacle_tool_host::{StaticSurface, Tool, ToolHost, ToolHostConfig};
/// use serde_json::{json, Value};
///
/// let host = ToolHost::bind(ToolHostConfig {
///     server_name: "dravr".to_owned(),
///     ..ToolHostConfig::default()
/// })
/// .await?;
/// let echo = Tool::new("echo", "Returns its text.", json!({"type": "object"}))?;
/// let surface = StaticSurface::new(vec![echo], |_: String, args: Value| async move {
///     Ok::<_, String>(args["text"].clone())
/// })?;
/// let session = host.open_session(Arc::new(surface))?;
/// let servers = session.mcp_servers(); // goes into ACP session/new
/// assert_eq!(servers.entries()[0].name(), "dravr");
/// drop(session); // the bearer is revoked here
/// host.shutdown().await;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
#[must_use = "dropping the last ToolHost stops the host and closes its connections"]
pub struct ToolHost {
    inner: Arc<HostHandle>,
}

/// Owned by the `ToolHost` clones only; dropping the last one stops the host.
struct HostHandle {
    shared: Arc<Shared>,
    #[cfg(feature = "bench-internals")]
    config: ToolHostConfig,
    local_addr: SocketAddr,
    stop: watch::Sender<Stop>,
    /// Becomes true when the accept loop and every connection have ended.
    stopped: watch::Receiver<bool>,
    /// Whether the last drain finished in time.
    drained: watch::Receiver<bool>,
}

impl Drop for HostHandle {
    fn drop(&mut self) {
        self.stop.send_if_modified(|stop| {
            let changed = *stop != Stop::Now;
            *stop = Stop::Now;
            changed
        });
    }
}

impl ToolHost {
    /// Binds the listener and starts serving. The listener is accepting when
    /// this returns.
    ///
    /// # Errors
    ///
    /// - [`Error::is_invalid_config`]: a config field was refused (see
    ///   [`ToolHostConfig`]);
    /// - [`Error::is_no_runtime`]: not called inside a Tokio runtime;
    /// - [`Error::is_bind`]: the address could not be bound.
    pub async fn bind(config: ToolHostConfig) -> Result<Self, Error> {
        config.validate()?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| Error::no_runtime())?;
        let listener = TcpListener::bind(SocketAddr::new(config.bind_addr, config.port))
            .await
            .map_err(Error::bind)?;
        let local_addr = listener.local_addr().map_err(Error::bind)?;
        let port = local_addr.port();
        let url_authority = match local_addr.ip() {
            IpAddr::V4(ip) => format!("{ip}:{port}"),
            IpAddr::V6(ip) => format!("[{ip}]:{port}"),
        };
        let mut allowed_hosts = vec![
            url_authority.clone(),
            format!("127.0.0.1:{port}"),
            format!("localhost:{port}"),
            format!("[::1]:{port}"),
        ];
        if port == 80 {
            allowed_hosts.extend(["127.0.0.1", "localhost", "[::1]"].map(str::to_owned));
        }
        allowed_hosts.sort();
        allowed_hosts.dedup();
        let mut allowed_origins: Vec<String> = allowed_hosts
            .iter()
            .map(|host| format!("http://{host}"))
            .chain(
                config
                    .allowed_origins
                    .iter()
                    .map(|o| o.to_ascii_lowercase()),
            )
            .collect();
        allowed_origins.sort();
        allowed_origins.dedup();
        let shared = Arc::new(Shared {
            slab: RevocationSlab::new(config.max_sessions),
            info: ServerInfo::new(config.server_name.clone(), config.instructions.clone()),
            url_authority,
            allowed_hosts,
            allowed_origins,
            max_body_bytes: config.max_body_bytes,
            max_batch_len: config.max_batch_len,
            max_parsed_bytes: config.max_parsed_bytes,
            body_read_timeout: config.body_read_timeout,
            call_timeout: config.call_timeout,
            sse_keep_alive: config.sse_keep_alive,
            in_flight: AtomicUsize::new(0),
            next_session_id: AtomicU64::new(1),
        });
        let (stop_tx, stop_rx) = watch::channel(Stop::Running);
        let (stopped_tx, stopped_rx) = watch::channel(false);
        let (drained_tx, drained_rx) = watch::channel(true);
        #[cfg(feature = "bench-internals")]
        let accept_config = config.clone();
        let accept = AcceptLoop {
            listener,
            shared: Arc::clone(&shared),
            config,
            stop: stop_rx,
            stopped: stopped_tx,
            drained: drained_tx,
        };
        runtime.spawn(accept.run());
        Ok(Self {
            inner: Arc::new(HostHandle {
                shared,
                #[cfg(feature = "bench-internals")]
                config: accept_config,
                local_addr,
                stop: stop_tx,
                stopped: stopped_rx,
                drained: drained_rx,
            }),
        })
    }

    /// The address the listener is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.inner.local_addr
    }

    /// Opens a session on `surface`: mints a fresh 256-bit bearer and
    /// returns the guard that owns it.
    ///
    /// The bearer is live when this returns; it dies when the guard is
    /// dropped. The host keeps `surface` until then.
    ///
    /// # Errors
    ///
    /// - [`Error::is_session_limit`]: as many sessions are open as
    ///   [`ToolHostConfig::max_sessions`] allows;
    /// - [`Error::is_shut_down`]: the host was shut down.
    pub fn open_session<S: ToolSurface>(&self, surface: Arc<S>) -> Result<ToolSession, Error> {
        if *self.inner.stop.borrow() != Stop::Running {
            return Err(Error::shut_down());
        }
        let shared = &self.inner.shared;
        let surface: Arc<dyn DynSurface> = surface;
        let state = Arc::new(SessionState {
            surface,
            calls_served: AtomicU64::new(0),
            id: SessionId(shared.next_session_id.fetch_add(1, Ordering::Relaxed)),
            in_flight: InFlightCalls::default(),
            entry: EntryGate::default(),
        });
        let bearer = shared
            .slab
            .open(Arc::clone(&state))
            .ok_or_else(Error::session_limit)?;
        Ok(ToolSession::new(state, Arc::clone(shared), bearer))
    }

    /// Sessions whose guard is alive. A floor that keeps rising across turns
    /// is a leaked guard.
    pub fn open_sessions(&self) -> usize {
        self.inner.shared.slab.live()
    }

    /// Tool calls running right now, across all sessions: dispatched to a
    /// surface and neither answered nor cancelled yet. Zero when the host is
    /// idle; a count that stays up after shutdown would be a leak.
    pub fn calls_in_flight(&self) -> usize {
        self.inner.shared.in_flight.load(Ordering::Relaxed)
    }

    /// Stops the host now: stops accepting, closes every connection
    /// (dropping calls in flight), and returns when all of that is done.
    ///
    /// Idempotent, and safe to call from any clone. Open sessions stay open
    /// (their guards still revoke on drop), but nothing serves them.
    pub async fn shutdown(&self) {
        self.request_stop(Stop::Now);
        self.wait_stopped().await;
    }

    /// Stops the host gracefully: stops accepting, lets requests in flight
    /// finish, closes idle keep-alive connections, and after `deadline`
    /// closes whatever is left.
    ///
    /// # Errors
    ///
    /// [`Error::is_timeout`] when the deadline passed and connections had to
    /// be closed with work in flight. The host is stopped either way.
    pub async fn shutdown_graceful(&self, deadline: Duration) -> Result<(), Error> {
        self.request_stop(Stop::Drain(Instant::now() + deadline));
        self.wait_stopped().await;
        if *self.inner.drained.borrow() {
            Ok(())
        } else {
            Err(Error::drain_timeout())
        }
    }

    /// The state every request shares (for `bench_support`).
    #[cfg(feature = "bench-internals")]
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.inner.shared
    }

    /// The config the host was bound with (for `bench_support`).
    #[cfg(feature = "bench-internals")]
    pub(crate) fn config(&self) -> &ToolHostConfig {
        &self.inner.config
    }

    /// Asks the accept loop to stop; an earlier or harder request wins.
    fn request_stop(&self, wanted: Stop) {
        self.inner
            .stop
            .send_if_modified(|stop| match (*stop, wanted) {
                (Stop::Running, _) | (Stop::Drain(_), Stop::Now) => {
                    *stop = wanted;
                    true
                }
                _ => false,
            });
    }

    async fn wait_stopped(&self) {
        let mut stopped = self.inner.stopped.clone();
        // An error means the accept loop is gone, which is stopped too.
        let _ = stopped.wait_for(|done| *done).await;
    }
}

impl fmt::Debug for ToolHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolHost")
            .field("local_addr", &self.inner.local_addr)
            .field("open_sessions", &self.open_sessions())
            .finish_non_exhaustive()
    }
}

/// The HTTP/1.1 settings every connection is served with. The timer must be
/// set, or hyper silently ignores the header read timeout. `max_header_size`
/// counts the head's bytes exactly, as they arrive (one write or many);
/// `max_buf_size` alone only bounds the read buffer, which a head arriving
/// in one large write can overrun.
pub(crate) fn connection_builder(config: &ToolHostConfig) -> http1::Builder {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(config.header_read_timeout)
        .max_header_size(config.max_header_bytes)
        .max_buf_size(config.max_header_bytes)
        .keep_alive(true);
    builder
}

/// A socket as every connection is served: writes that stall past
/// `write_stall_timeout` fail (see `write_stall.rs`).
pub(crate) fn guarded_io<S>(socket: S, config: &ToolHostConfig) -> TokioIo<WriteStallGuard<S>> {
    TokioIo::new(WriteStallGuard::new(socket, config.write_stall_timeout))
}

/// The service every connection runs: the transport, with the connection's
/// admission state.
pub(crate) fn connection_service(
    shared: Arc<Shared>,
    connection: Arc<Connection>,
) -> impl hyper::service::Service<
    hyper::Request<hyper::body::Incoming>,
    Response = hyper::Response<transport::Body>,
    Error = std::convert::Infallible,
    Future = impl std::future::Future<
        Output = Result<hyper::Response<transport::Body>, std::convert::Infallible>,
    > + Send,
> {
    service_fn(move |request| {
        transport::serve(Arc::clone(&shared), Arc::clone(&connection), request)
    })
}

/// The accept loop task and what it owns.
struct AcceptLoop {
    listener: TcpListener,
    shared: Arc<Shared>,
    config: ToolHostConfig,
    stop: watch::Receiver<Stop>,
    stopped: watch::Sender<bool>,
    drained: watch::Sender<bool>,
}

impl AcceptLoop {
    async fn run(mut self) {
        // Every connection holds a slot (see `admission.rs`); when every
        // connection task has ended, so has the host.
        let admission = Arc::new(Admission::new(self.config.max_connections));
        let graceful = GracefulShutdown::new();
        // Raised to close every connection at once (Stop::Now, or a drain
        // past its deadline).
        let (close_tx, close_rx) = watch::channel(false);
        let builder = connection_builder(&self.config);
        let mut backoff = Duration::from_millis(5);
        loop {
            let accepted = match race(self.listener.accept(), self.stop.changed()).await {
                First::Left(accepted) => accepted,
                First::Right(_) => break,
            };
            let stream = match accepted {
                Ok((stream, _peer)) => {
                    backoff = Duration::from_millis(5);
                    stream
                }
                Err(_) => {
                    // Out of file descriptors, or a connection reset before
                    // accept: wait a little, longer each time, and go on.
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                    continue;
                }
            };
            let Some(admitted) = admission.admit() else {
                drop(stream); // every slot is authenticated: refuse
                continue;
            };
            // Tool calls are small request/response exchanges: send each
            // response as soon as it is written.
            let _ = stream.set_nodelay(true);
            let connection = builder.serve_connection(
                guarded_io(stream, &self.config),
                connection_service(Arc::clone(&self.shared), Arc::clone(admitted.connection())),
            );
            let connection = graceful.watch(connection);
            let mut close = close_rx.clone();
            tokio::spawn(async move {
                {
                    let stop = race(
                        close.wait_for(|closed| *closed),
                        admitted.connection().shed(),
                    );
                    let _ = race(connection, stop).await;
                }
                drop(admitted);
            });
        }
        drop(self.listener);
        let stop = *self.stop.borrow();
        let drained = match stop {
            Stop::Drain(deadline) => tokio::time::timeout_at(deadline, graceful.shutdown())
                .await
                .is_ok(),
            Stop::Now | Stop::Running => {
                drop(graceful);
                true
            }
        };
        let _ = close_tx.send(true);
        admission.all_ended().await;
        let _ = self.drained.send(drained);
        let _ = self.stopped.send(true);
    }
}
