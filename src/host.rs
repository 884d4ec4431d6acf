//! `ToolHost`: the listener, the accept loop, shutdown.

use std::fmt;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::config::ToolHostConfig;
use crate::conn::{Admission, Drain};
use crate::error::{Error, ErrorKind};
use crate::http::serve_connection;
use crate::session::ToolSession;
use crate::state::Shared;
use crate::surface::ToolSurface;
use crate::util::{race, BoxFuture, First};

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
    local_addr: SocketAddr,
    stop: watch::Sender<Stop>,
    /// `Some` once the accept loop and every connection have ended: whether
    /// the last drain finished in time.
    stopped: watch::Receiver<Option<bool>>,
}

impl HostHandle {
    /// Asks the accept loop to stop; an earlier or harder request wins.
    fn request_stop(&self, wanted: Stop) {
        self.stop.send_if_modified(|stop| match (*stop, wanted) {
            (Stop::Running, _) | (Stop::Drain(_), Stop::Now) => {
                *stop = wanted;
                true
            }
            _ => false,
        });
    }

    /// Tells the observer the refusals it has counted and not yet told: a
    /// stopped host refuses no more, so none waits out its window.
    fn tell_refusals(&self) {
        if let Some(observer) = &self.shared.config.observer {
            observer.tell_refusals();
        }
    }
}

impl Drop for HostHandle {
    fn drop(&mut self) {
        self.request_stop(Stop::Now);
        self.tell_refusals();
    }
}

impl ToolHost {
    /// Binds the listener and starts serving. The listener is accepting when
    /// this returns.
    ///
    /// # Errors
    ///
    /// - [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig): a config field was refused (see
    ///   [`ToolHostConfig`]), or the process's open-file limit cannot hold
    ///   [`max_connections`](ToolHostConfig::max_connections) (on Linux:
    ///   the soft `RLIMIT_NOFILE`, less the descriptors already open, must
    ///   leave `max_connections` + 64 free; the message gives the figures);
    /// - [`ErrorKind::NoRuntime`](crate::ErrorKind::NoRuntime): not called inside a Tokio runtime;
    /// - [`ErrorKind::Bind`](crate::ErrorKind::Bind): the address could not be bound.
    pub async fn bind(config: ToolHostConfig) -> Result<Self, Error> {
        config.validate()?;
        crate::conn::file_limit::check(config.max_connections)
            .map_err(|why| ErrorKind::InvalidConfig.error(why))?;
        let runtime =
            tokio::runtime::Handle::try_current().map_err(|_| ErrorKind::NoRuntime.error(""))?;
        let address = SocketAddr::new(config.bind_addr, config.port);
        let bind = |e| ErrorKind::Bind.io_error(e);
        let listener = TcpListener::bind(address).await.map_err(bind)?;
        let local_addr = listener.local_addr().map_err(bind)?;
        let shared = Arc::new(Shared::new(config, local_addr));
        let (stop_tx, stop_rx) = watch::channel(Stop::Running);
        let (stopped_tx, stopped_rx) = watch::channel(None);
        let accept = accept_loop(listener, Arc::clone(&shared), stop_rx, stopped_tx);
        // Boxed, as each connection's task is (see `serve` below): the
        // harness's functions then share one copy of the loop's drop glue.
        let run: BoxFuture<'static, ()> = Box::pin(accept);
        runtime.spawn(run);
        Ok(Self {
            inner: Arc::new(HostHandle {
                shared,
                local_addr,
                stop: stop_tx,
                stopped: stopped_rx,
            }),
        })
    }

    /// The address the listener is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.inner.local_addr
    }

    /// Whether connections of other local users are refused
    /// ([`ToolHostConfig::refuse_other_users`]): true when it was asked for
    /// and the platform tells the host who owns a connection's client end
    /// (Linux, whose `NETLINK_SOCK_DIAG` found the listener at bind).
    pub fn checks_peer_user(&self) -> bool {
        self.inner.shared.peer_user.is_some()
    }

    /// Opens a session on `surface`: mints a fresh 256-bit bearer and
    /// returns the guard that owns it.
    ///
    /// The bearer is live when this returns; it dies when the guard is
    /// dropped. The host keeps `surface` until then.
    ///
    /// # Errors
    ///
    /// - [`ErrorKind::SessionLimit`](crate::ErrorKind::SessionLimit): as many sessions are open as
    ///   [`ToolHostConfig::max_sessions`] allows;
    /// - [`ErrorKind::ShutDown`](crate::ErrorKind::ShutDown): the host was shut down.
    pub fn open_session<S: ToolSurface>(&self, surface: Arc<S>) -> Result<ToolSession, Error> {
        if *self.inner.stop.borrow() != Stop::Running {
            return Err(ErrorKind::ShutDown.error(""));
        }
        let shared = &self.inner.shared;
        let (state, bearer) = shared.open_session(surface)?;
        Ok(ToolSession::new(state, Arc::clone(shared), bearer))
    }

    /// Sessions whose guard is alive. A floor that keeps rising across turns
    /// is a leaked guard.
    pub fn live_sessions(&self) -> usize {
        self.inner.shared.slab.live()
    }

    /// Tool calls running right now, across all sessions: dispatched to a
    /// surface and neither answered nor cancelled yet. Zero when the host is
    /// idle; a count that stays up after shutdown would be a leak.
    pub fn calls_in_flight(&self) -> usize {
        self.inner.shared.calls_running.load(Ordering::Relaxed)
    }

    /// Stops the host now: stops accepting, closes every connection
    /// (dropping calls in flight), and returns when all of that is done.
    ///
    /// Idempotent, and safe to call from any clone. Open sessions stay open
    /// (their guards still revoke on drop), but nothing serves them.
    pub async fn shutdown(&self) {
        self.stop(Stop::Now).await;
    }

    /// Stops the host gracefully: stops accepting, lets requests in flight
    /// finish, closes idle keep-alive connections, and once `grace` has
    /// passed closes whatever is left.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::ShutdownForced`](crate::ErrorKind::ShutdownForced) when `grace` passed and connections had
    /// to be closed with work in flight. The host is stopped either way.
    pub async fn shutdown_within(&self, grace: Duration) -> Result<(), Error> {
        let drained = self.stop(Stop::Drain(Instant::now() + grace)).await;
        drained
            .then_some(())
            .ok_or_else(|| ErrorKind::ShutdownForced.error(""))
    }

    /// The state every request shares (for `bench_support`).
    #[cfg(feature = "bench-internals")]
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.inner.shared
    }

    /// Asks the accept loop to stop as `wanted` says, waits until it and
    /// every connection have, and returns whether the drain, if any,
    /// finished in time.
    async fn stop(&self, wanted: Stop) -> bool {
        self.inner.request_stop(wanted);
        let mut stopped = self.inner.stopped.clone();
        // An error means the accept loop is gone, which is stopped too.
        let _ = stopped.wait_for(Option::is_some).await;
        self.inner.tell_refusals();
        // The loop gone without a word stopped at once: nothing to drain.
        self.inner.stopped.borrow().unwrap_or(true)
    }
}

impl fmt::Debug for ToolHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolHost")
            .field("local_addr", &self.inner.local_addr)
            .field("live_sessions", &self.live_sessions())
            .finish_non_exhaustive()
    }
}

/// The accept loop task: accepts until `stop` changes, then stops as it
/// asks, and sends `stopped` whether the drain, if any, finished in time.
async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<Stop>,
    stopped: watch::Sender<Option<bool>>,
) {
    // Every connection holds a slot (see `conn/admission.rs`); when every
    // connection task has ended, so has the host.
    let admission = Arc::new(Admission::new(shared.config.max_connections));
    let drain = Drain::default();
    // Raised to close every connection at once (Stop::Now, or a drain
    // past its deadline).
    let (close_tx, close_rx) = watch::channel(false);
    let mut backoff = Duration::from_millis(5);
    let local_addr = listener.local_addr().ok();
    loop {
        match race(pin!(listener.accept()), pin!(stop.changed())).await {
            First::Left(Ok((stream, peer))) => {
                backoff = Duration::from_millis(5);
                let addresses = local_addr.map(|local| (local, peer));
                serve(&shared, stream, addresses, &admission, &drain, &close_rx);
            }
            First::Left(Err(_)) => {
                // Out of file descriptors, or a connection reset before
                // accept: wait a little, longer each time, and go on.
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
            }
            First::Right(_) => break,
        }
    }
    drop(listener);
    // Notification streams never finish on their own: end them now, so
    // a drain does not wait on them (a subscription is answered, which
    // is its graceful end).
    shared.streams_end.raise();
    let stop = *stop.borrow();
    let drained = match stop {
        Stop::Drain(deadline) => tokio::time::timeout_at(deadline, drain.drain())
            .await
            .is_ok(),
        Stop::Now | Stop::Running => {
            drop(drain);
            true
        }
    };
    let _ = close_tx.send(true);
    admission.all_ended().await;
    let _ = stopped.send(Some(drained));
}

/// Admits one accepted connection and spawns its task, which ends when
/// the connection does, when every connection is closed at once
/// (`close`), when admission sheds it, or when it goes
/// `header_read_timeout` without a request in service
/// (`conn/idle_deadline.rs`).
fn serve(
    shared: &Arc<Shared>,
    stream: TcpStream,
    addresses: Option<(SocketAddr, SocketAddr)>,
    admission: &Arc<Admission>,
    drain: &Drain,
    close: &watch::Receiver<bool>,
) {
    let Some(admitted) = admission.admit(addresses) else {
        return; // every slot is authenticated: refuse (drop the stream)
    };
    // Tool calls are small request/response exchanges: send each
    // response as soon as it is written.
    let _ = stream.set_nodelay(true);
    let connection = serve_connection(shared, stream, Arc::clone(admitted.connection()));
    // Boxed (once per connection, not per request): tokio's task
    // harness, several functions each dropping the task's future, then
    // holds a pointer, so hyper's connection and the request's state
    // machine inside it are compiled, with their drop glue, once.
    let connection: BoxFuture<'static, _> =
        Box::pin(drain.watch(connection, http1::Connection::graceful_shutdown));
    // The connection runs in a task of its own, and a second task waits
    // for its end or for a reason to stop it (all connections closed,
    // this one shed, or timed out waiting for a head). Racing the two
    // in one task would poll the stop signals on every wake of the
    // connection — several times a request; apart, they are polled only
    // when one of them fires (the timeout at most once per timeout).
    let mut served = tokio::spawn(connection);
    let header_read_timeout = shared.config.header_read_timeout;
    let mut close = close.clone();
    let supervise: BoxFuture<'static, ()> = Box::pin(async move {
        // Only which side won is kept, and the stop futures end
        // with the race: the watch's guard is not `Send`, and must
        // not live across the await below.
        let stopped = {
            let closed = pin!(close.wait_for(|closed| *closed));
            let connection = admitted.connection();
            let shed = pin!(connection.shed());
            let timed_out = pin!(connection.activity().timed_out(header_read_timeout));
            let shed_or_closed = pin!(race(closed, shed));
            let stop = pin!(race(shed_or_closed, timed_out));
            matches!(race(pin!(&mut served), stop).await, First::Right(_))
        };
        if stopped {
            served.abort();
            // Wait until the connection is dropped (its socket
            // closed) before its slot is given back.
            let _ = (&mut served).await;
        }
        drop(admitted);
    });
    // Boxed like the accept loop, so the two share one task harness.
    tokio::spawn(supervise);
}
