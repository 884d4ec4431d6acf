//! `ToolSession`: the guard whose drop revokes a session's bearer.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use super::mcp_servers::McpServers;
use crate::auth::Bearer;
use crate::observer::SessionId;
use crate::state::{ListChangedNotifier, SessionState, Shared};

/// One ACP session's hold on the host: a bearer, and the surface it reaches.
///
/// Made by [`ToolHost::open_session`](crate::ToolHost::open_session). Hand
/// [`mcp_servers`](Self::mcp_servers) to the agent in ACP `session/new`; keep
/// the guard for as long as the agent may call tools, and drop it when the
/// turn or the session ends.
///
/// **Dropping the guard revokes the bearer at that instant**, in one atomic
/// step that never waits: once `drop` has returned, every request with the
/// bearer gets 401 and no new call reaches the surface. To make that exact,
/// the drop lets a call caught between its last check and the surface
/// finish its *first poll* (the tool's code up to its first `.await`)
/// before it returns; it never waits for a call's whole run. So do not drop
/// a guard while holding a lock that the surface's `call` takes before its
/// first `.await`: the two would wait for each other.
///
/// **It also cancels the session's calls in flight**: their futures are
/// dropped and their [`CancelSignal`](crate::call::CancelSignal)s raised, and none
/// gets a JSON-RPC response (the POST is answered 202; an SSE stream just
/// ends).
/// That is what "no live credential for an orphaned agent" means for work
/// already started. The drop does not wait for them to stop: a call admitted
/// an instant before the drop may still be inside the surface when `drop`
/// returns, and stops at its next `.await`. The surface itself is released
/// once those calls have let go of it.
///
/// It also removes the config files written for the session
/// ([`write_mcp_config`](Self::write_mcp_config)), which hold the bearer.
///
/// `ToolSession` is deliberately not `Clone`: dropping it *is* the
/// revocation, so there must be exactly one. Its `Debug` never prints the
/// bearer.
///
/// The compiler helps keep it alive: `ToolSession` is `#[must_use]`, and
/// [`McpServers`] borrows it, so the two easy ways to hand an agent a
/// bearer that is already dead do not compile:
///
/// ```compile_fail,E0716
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), embacle_tool_host::Error> {
/// # use std::sync::Arc;
/// # use embacle_tool_host::{StaticSurface, ToolHost, ToolHostConfig};
/// # use serde_json::Value;
/// # let host = ToolHost::bind(ToolHostConfig::default()).await?;
/// # let surface = Arc::new(StaticSurface::new(vec![], |_: String, _: Value| async { Ok::<_, String>(Value::Null) })?);
/// // error[E0716]: temporary value dropped while borrowed
/// let servers = host.open_session(surface)?.mcp_servers();
/// println!("{}", servers.to_value());
/// # Ok(()) }
/// ```
///
/// ```compile_fail
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), embacle_tool_host::Error> {
/// # use std::sync::Arc;
/// # use embacle_tool_host::{StaticSurface, ToolHost, ToolHostConfig};
/// # use serde_json::Value;
/// # let host = ToolHost::bind(ToolHostConfig::default()).await?;
/// # let surface = Arc::new(StaticSurface::new(vec![], |_: String, _: Value| async { Ok::<_, String>(Value::Null) })?);
/// // error: unused `ToolSession` that must be used (a warning, denied in
/// // this doctest)
/// host.open_session(surface)?;
/// # Ok(()) }
/// ```
///
/// The same code, keeping the guard, compiles (and runs):
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), embacle_tool_host::Error> {
/// # use std::sync::Arc;
/// # use embacle_tool_host::{StaticSurface, ToolHost, ToolHostConfig};
/// # use serde_json::Value;
/// # let host = ToolHost::bind(ToolHostConfig::default()).await?;
/// # let surface = Arc::new(StaticSurface::new(vec![], |_: String, _: Value| async { Ok::<_, String>(Value::Null) })?);
/// let session = host.open_session(surface)?;
/// let servers = session.mcp_servers();
/// println!("{}", servers.to_value());
/// # Ok(()) }
/// ```
///
#[must_use = "dropping a ToolSession revokes its bearer at once: keep it for as long as the agent may call tools"]
pub struct ToolSession {
    state: Arc<SessionState>,
    shared: Arc<Shared>,
    bearer: Bearer,
    /// Config files written for this session (they hold the bearer), which
    /// the drop removes.
    pub(crate) config_files: std::sync::Mutex<Vec<PathBuf>>,
}

impl ToolSession {
    pub(crate) fn new(state: Arc<SessionState>, shared: Arc<Shared>, bearer: Bearer) -> Self {
        Self {
            state,
            shared,
            bearer,
            config_files: std::sync::Mutex::default(),
        }
    }

    /// The ACP `mcpServers` entries that point an agent at this session.
    ///
    /// One `http` entry: the server name from
    /// [`ToolHostConfig::server_name`](crate::ToolHostConfig::server_name),
    /// the endpoint URL, and the `Authorization: Bearer …` header. This is
    /// the only way to get the bearer text; treat the value as a secret.
    ///
    /// The entries borrow the session, so they cannot outlive the bearer
    /// they carry by accident. To keep the JSON past that borrow (to send
    /// it from another task, say), take it out explicitly with
    /// [`McpServers::for_acp_agent`] or [`McpServers::to_value`]: the bearer
    /// in it still dies when this guard drops.
    pub fn mcp_servers(&self) -> McpServers<'_> {
        McpServers::one(
            self.shared.info.name.clone(),
            format!("http://{}/mcp", self.shared.url_authority),
            format!("Bearer {}", self.bearer.to_text()),
        )
    }

    /// The one way to tell the agents listening on this session that its
    /// tool list changed, so they list it again: a handle that signals it
    /// from anywhere, without the guard (see [`ListChangedNotifier`]).
    pub fn list_changed_notifier(&self) -> ListChangedNotifier {
        ListChangedNotifier::new(self.state.list_changes())
    }

    /// This session's identifier, safe to log.
    pub fn session_id(&self) -> SessionId {
        self.state.id()
    }

    /// Tool calls this session's surface has served: calls that passed every
    /// check, were dispatched to [`ToolSurface::call`](crate::ToolSurface::call),
    /// and ended in a success or a refusal. Failed and panicked calls are not
    /// counted, nor are calls refused by the host (unknown tool, revoked
    /// bearer).
    ///
    /// Zero after a turn whose reply claims the agent consulted your tools is
    /// the signal that it did not.
    pub fn calls_served(&self) -> u64 {
        self.state.calls_served()
    }

    /// `tools/list` requests this session has answered with its surface's
    /// tools (in either era, on any of its connections).
    pub fn listings_served(&self) -> u64 {
        self.state.list_changes().listings()
    }

    /// Resolves once an agent has listed this session's tools: at once if
    /// one already has. Never resolves if none does, so bound it with a
    /// timeout of your own.
    ///
    /// An ACP agent may answer `session/new` before its MCP client has
    /// listed the tools, and one that drops the server (an untrusted
    /// workspace, a refused bearer) says nothing. Awaited between
    /// `session/new` and `session/prompt`, this tells the caller that the
    /// agent took its tools before the turn begins, or, on the timeout,
    /// that it did not (yet). Agents that list only once prompted (none
    /// of those tested does) would hit the timeout every turn.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), embacle_tool_host::Error> {
    /// use std::{sync::Arc, time::Duration};
    /// use embacle_tool_host::{StaticSurface, ToolHost, ToolHostConfig};
    /// use serde_json::Value;
    ///
    /// let host = ToolHost::bind(ToolHostConfig::default()).await?;
    /// let surface = StaticSurface::new(vec![], |_: String, _: Value| async { Ok::<_, String>(Value::Null) })?;
    /// let session = host.open_session(Arc::new(surface))?;
    /// // … `session/new` with `session.mcp_servers()` …
    /// let listed = tokio::time::timeout(Duration::from_millis(50), session.first_listing()).await;
    /// if listed.is_err() {
    ///     eprintln!("the agent has not listed the tools: it may run this turn without them");
    /// }
    /// assert_eq!(session.listings_served(), 0);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn first_listing(&self) {
        self.state.list_changes().listed_more_than(0).await;
    }

    /// Revokes the session like `drop`, then waits until the calls it
    /// cancelled have let go, and returns the final [`calls_served`].
    ///
    /// After `drop`, a call that was finishing at that very moment may still
    /// be counted an instant later; after `close` the count is final. Use
    /// it at the end of a turn to log exactly what the surface served.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), embacle_tool_host::Error> {
    /// use std::sync::Arc;
    /// use embacle_tool_host::{StaticSurface, ToolHost, ToolHostConfig};
    /// use serde_json::Value;
    ///
    /// let host = ToolHost::bind(ToolHostConfig::default()).await?;
    /// let surface = StaticSurface::new(vec![], |_: String, _: Value| async { Ok::<_, String>(Value::Null) })?;
    /// let session = host.open_session(Arc::new(surface))?;
    /// assert_eq!(session.close().await, 0);
    /// assert_eq!(host.live_sessions(), 0);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// [`calls_served`]: Self::calls_served
    pub async fn close(self) -> u64 {
        let state = Arc::clone(&self.state);
        drop(self);
        // Every call admitted before the revocation registered itself
        // before its last liveness check (see `mcp/tools_call.rs`), so once the
        // list is empty no call can still be counted.
        state.drained().await;
        state.calls_served()
    }
}

impl Drop for ToolSession {
    fn drop(&mut self) {
        // First the revocation, one atomic step: from here on no request is
        // admitted. Then the calls already running are told to stop, and a
        // call caught between its last check and its first poll is let
        // through that poll, so none starts after this returns. The
        // session's notification streams end at their next poll, which the
        // revocation wakes; its connections give their slots up (pending
        // again, first to be shed): a dead session holds no place in any
        // share.
        self.shared.slab.revoke(self.bearer.at);
        self.state.revoke();
        // The bearer in them is dead now; the files go too. A file someone
        // already removed is no error.
        let files = self.config_files.get_mut();
        for path in std::mem::take(files.unwrap_or_else(std::sync::PoisonError::into_inner)) {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl fmt::Debug for ToolSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolSession")
            .field("id", &self.state.id())
            .field("calls_served", &self.calls_served())
            .field("bearer", &"<redacted>")
            .finish()
    }
}
