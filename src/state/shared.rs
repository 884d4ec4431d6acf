//! The state the accept loop, every connection, every request and every
//! session guard share, and what the host knows about each open session.
//!
//! It sits above `surface/` (a session's state holds its surface) and
//! below what serves requests (`session/`, `mcp/`, `http/`, `host.rs`),
//! which all build on it, so a [`Shared`] can be
//! made from a config alone — no listener, no socket — which is how the
//! dispatcher's unit tests drive it.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::Notify;

use crate::auth::{Bearer, RevocationSlab, SlotRef};
use crate::config::ToolHostConfig;
use crate::conn::SessionShare;
use crate::error::{Error, ErrorKind};
use crate::observer::SessionId;
use crate::protocol::ServerInfo;
use crate::state::entry::{Entry, EntryGate};
use crate::state::list_changed::ListChanges;
use crate::state::mcp_session::{McpSession, McpSessions};
use crate::surface::{AtomicLogLevel, CancelSignal, DynSurface, ToolSurface};
use crate::util::{lock, Latch};

/// State shared by the accept loop, every connection, every request and
/// every session guard. Sessions keep it alive, so a guard outliving its
/// host still revokes cleanly.
///
/// Unlike [`SessionState`], most of its fields are open to the crate: the
/// config, the server's rendered info, the URL's authority and the
/// listener's owner are fixed at bind and only read; what changes (the
/// slab, the count of running calls, the streams' end) changes only
/// through the methods of the type each field holds. The allowed names
/// and the next session id are private, reached through its methods.
pub(crate) struct Shared {
    /// Every open session's bearer, and its state.
    pub(crate) slab: RevocationSlab<SessionState>,
    pub(crate) info: ServerInfo,
    /// `127.0.0.1:PORT` (or `[::1]:PORT`): the URL's authority.
    pub(crate) url_authority: String,
    /// Accepted `Host` values, lower case.
    allowed_hosts: Vec<String>,
    /// Accepted `Origin` values, lower case: the listener's own and the
    /// config's.
    allowed_origins: Vec<String>,
    /// The config the host was bound with (validated); its limits are read
    /// from here, the one copy.
    pub(crate) config: ToolHostConfig,
    /// The uid of the host's listener, when connections of other users are
    /// refused (`conn/peer_user.rs`).
    pub(crate) peer_user: Option<u32>,
    /// Raised at shutdown: every notification stream ends.
    pub(crate) streams_end: Arc<Latch>,
    /// Tool calls running right now, across sessions (see `Registration`,
    /// in `in_flight.rs`).
    pub(crate) calls_running: AtomicUsize,
    next_session_id: AtomicU64,
}

impl Shared {
    /// The state of a host listening at `local_addr` with `config` (already
    /// validated).
    pub(crate) fn new(config: ToolHostConfig, local_addr: SocketAddr) -> Self {
        let (url_authority, allowed_hosts) = loopback_names(local_addr);
        let own = allowed_hosts.iter().map(|host| format!("http://{host}"));
        let configured = config
            .allowed_origins
            .iter()
            .map(|o| o.to_ascii_lowercase());
        let allowed_origins = own.chain(configured).collect();
        Self {
            slab: RevocationSlab::new(config.max_sessions),
            info: ServerInfo::new(config.server_name.clone(), config.instructions.clone()),
            url_authority,
            allowed_hosts,
            allowed_origins,
            peer_user: config
                .refuse_other_users
                .then(|| crate::conn::listener_uid(local_addr))
                .flatten(),
            config,
            streams_end: Arc::default(),
            calls_running: AtomicUsize::new(0),
            next_session_id: AtomicU64::new(1),
        }
    }

    /// Opens a session on `surface`: its state, and the fresh bearer that
    /// reaches it (live from here until revoked).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::SessionLimit`](crate::ErrorKind::SessionLimit) when every session slot is taken.
    pub(crate) fn open_session<S: ToolSurface>(
        &self,
        surface: Arc<S>,
    ) -> Result<(Arc<SessionState>, Bearer), Error> {
        let id = SessionId::next(&self.next_session_id);
        let asks = (surface.list_can_change(), surface.may_log());
        let state = Arc::new(SessionState::new(id, surface, asks));
        self.slab
            .open(Arc::clone(&state))
            .map(|bearer| (state, bearer))
            .ok_or_else(|| ErrorKind::SessionLimit.error(""))
    }

    /// Step 1 of the transport: `Host` (or an absolute-form target's
    /// authority) must name this listener by one of its loopback names and
    /// its port.
    pub(crate) fn host_allowed(&self, host: &[u8]) -> bool {
        // Clients send the URL's authority as given: exact first.
        let names = || self.allowed_hosts.iter().map(String::as_bytes);
        names().any(|ok| ok == host) || names().any(|ok| ok.eq_ignore_ascii_case(host))
    }

    /// An `Origin` must be one of the listener's own or one the config
    /// allows.
    pub(crate) fn origin_allowed(&self, origin: &[u8]) -> bool {
        self.allowed_origins
            .iter()
            .any(|ok| ok.as_bytes().eq_ignore_ascii_case(origin))
    }
}

/// The listener's URL authority, and every `Host` value that names it: the
/// bound address and each loopback name at its port (and without the port
/// at port 80), lower case, each once (the bound address may be one of the
/// names). The lists are a few names long and searched linearly.
fn loopback_names(local_addr: SocketAddr) -> (String, Vec<String>) {
    let port = local_addr.port();
    let url_authority = match local_addr.ip() {
        IpAddr::V4(ip) => format!("{ip}:{port}"),
        IpAddr::V6(ip) => format!("[{ip}]:{port}"),
    };
    let names = ["127.0.0.1", "localhost", "[::1]"];
    let with_port = names.map(|name| format!("{name}:{port}"));
    let with_port = with_port.into_iter().filter(|name| *name != url_authority);
    let bare = names.into_iter().filter(|_| port == 80).map(str::to_owned);
    let own = std::iter::once(url_authority.clone()).chain(with_port);
    let hosts = own.chain(bare).collect();
    (url_authority, hosts)
}

/// What the host knows about one open session; shared by the guard and by
/// the requests that presented its bearer. Reached only through its
/// methods, each of which says what it is for.
pub(crate) struct SessionState {
    id: SessionId,
    surface: Arc<dyn DynSurface>,
    calls_served: AtomicU64,
    /// The session's calls in flight, with their request ids, so they can
    /// be cancelled: by the client's `notifications/cancelled` (looked up
    /// by id), or all at once when the guard is dropped. A `Vec`, not a
    /// map: a session rarely has more than a few calls at once, and a scan
    /// of a few entries beats hashing a JSON id.
    pub(super) in_flight: Mutex<Vec<(Value, CancelSignal)>>,
    /// Woken whenever `in_flight` becomes empty.
    pub(super) drained: Notify,
    entry: EntryGate,
    /// The session's list changes, for its notifiers, streams and calls.
    pub(super) list_changes: Arc<ListChanges>,
    /// Whether `with_output_schema` may be non-empty; read without the
    /// lock, so surfaces that declare no `outputSchema` never take it.
    pub(super) any_output_schema: AtomicBool,
    /// The tools its latest listing showed with an `outputSchema` (see
    /// [`declared_output_schema`](Self::declared_output_schema)).
    pub(super) with_output_schema: Mutex<Vec<Box<str>>>,
    /// The level `logging/setLevel` set (MCP 2025-11-25 and earlier), when
    /// the surface logs (asked once at open: then `logging` is advertised
    /// and `logging/setLevel` served).
    log_level: Option<AtomicLogLevel>,
    /// Its authenticated connections, at most `connections_per_session`.
    connections: Arc<SessionShare>,
    /// The MCP sessions (`Mcp-Session-Id`) its clients' `initialize`s
    /// minted.
    mcp_sessions: McpSessions,
}

impl SessionState {
    /// `asks` are what the surface answered, once, at open: whether its
    /// list can change, and whether it logs.
    fn new(id: SessionId, surface: Arc<dyn DynSurface>, asks: (bool, bool)) -> Self {
        let (list_can_change, may_log) = asks;
        Self {
            id,
            list_changes: Arc::new(ListChanges::new(list_can_change)),
            log_level: may_log.then(AtomicLogLevel::default),
            surface,
            calls_served: AtomicU64::new(0),
            in_flight: Mutex::default(),
            drained: Notify::new(),
            entry: EntryGate::default(),
            any_output_schema: AtomicBool::new(false),
            with_output_schema: Mutex::default(),
            connections: Arc::default(),
            mcp_sessions: McpSessions::default(),
        }
    }

    /// The session's non-secret id, for the observer and the guard.
    pub(crate) fn id(&self) -> SessionId {
        self.id
    }

    /// What lists and calls the session's tools.
    pub(crate) fn surface(&self) -> &dyn DynSurface {
        &*self.surface
    }

    /// Everything about its list changing: the signal, the streams that
    /// deliver it, the hold on a result until it is re-listed, the count of
    /// listings.
    pub(crate) fn list_changes(&self) -> &Arc<ListChanges> {
        &self.list_changes
    }

    /// The level `logging/setLevel` set; `None` when the surface never
    /// logs.
    pub(crate) fn log_level(&self) -> Option<&AtomicLogLevel> {
        self.log_level.as_ref()
    }

    /// Its share of the host's connections.
    pub(crate) fn connections(&self) -> &Arc<SessionShare> {
        &self.connections
    }

    /// The MCP sessions its bearer's clients opened (`initialize`).
    pub(crate) fn mcp_sessions(&self) -> &McpSessions {
        &self.mcp_sessions
    }

    /// Ends one of its MCP sessions, and that session's streams.
    pub(crate) fn end_mcp_session(&self, known: &McpSession) {
        self.mcp_sessions.end(known, &self.list_changes);
    }

    /// The last check before a call enters the surface, made inside the
    /// session's entry gate (see `entry.rs`).
    pub(crate) fn enter(&self, live: impl FnOnce() -> bool) -> Option<Entry<'_>> {
        self.entry.enter(live)
    }

    /// Counts a call the surface served (a success or a refusal).
    pub(crate) fn served_one(&self) {
        self.calls_served.fetch_add(1, Ordering::Relaxed);
    }

    /// The calls its surface served: successes and refusals.
    pub(crate) fn calls_served(&self) -> u64 {
        self.calls_served.load(Ordering::Relaxed)
    }

    /// After its bearer's revocation: cancels its calls, ends its streams,
    /// waits out calls caught entering the surface, and gives its
    /// connections' slots up (pending again, first to be shed).
    pub(crate) fn revoke(&self) {
        lock(&self.in_flight).iter().for_each(|(_, s)| s.cancel());
        self.list_changes.revoke();
        self.entry.close();
        self.connections.revoke();
    }
}

/// A request's hold on a session: its state, and the means to re-check
/// that its bearer is still live. The dispatcher sees sessions only
/// through this, never a bearer.
#[derive(Clone)]
pub(crate) struct Lease {
    pub(crate) session: Arc<SessionState>,
    pub(crate) shared: Arc<Shared>,
    at: SlotRef,
}

impl Lease {
    /// Checks `bearer` against the slab and, when it is live, takes a lease
    /// on its session.
    pub(crate) fn acquire(shared: &Arc<Shared>, bearer: &Bearer) -> Option<Self> {
        let session = shared.slab.validate(bearer)?;
        Some(Self {
            session,
            shared: Arc::clone(shared),
            at: bearer.at,
        })
    }

    /// The re-check made immediately before a tool call runs.
    pub(crate) fn is_live(&self) -> bool {
        self.shared.slab.admit(self.at)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::surface::StaticSurface;

    /// A session whose surface has no tools, for the state's unit tests.
    pub(crate) fn session() -> SessionState {
        let executor = |_: String, _: Value| async { Ok::<_, String>(Value::Null) };
        let surface = Arc::new(StaticSurface::new(vec![], executor).unwrap());
        SessionState::new(SessionId::next(&AtomicU64::new(1)), surface, (false, false))
    }
}
