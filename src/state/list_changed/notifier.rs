//! The public handle that signals a session's list change.

use std::fmt;
use std::sync::{Arc, Weak};

use super::changes::ListChanges;

/// Tells the agents listening on one session that its tool list changed,
/// so they ask `tools/list` again.
///
/// Take it from
/// [`ToolSession::list_changed_notifier`](crate::ToolSession::list_changed_notifier)
/// and keep it wherever the
/// state behind the surface changes: it is cheap to clone (one reference
/// count), `Send` and `Sync`, and needs no guard. Every client that opened
/// a stream on the session — the legacy `GET /mcp` stream, or a 2026-07-28
/// `subscriptions/listen` — is sent `notifications/tools/list_changed` at
/// once; signals within 20 ms of that notice are folded into one more at
/// the end of those 20 ms. When a tool signals before its call returns,
/// the notice is handed to every open stream before the call's result is
/// released (waiting at most 100 ms for a stream that does not take it),
/// so an agent that reads the notice and re-lists before its next model
/// request offers the new tool in the same turn.
///
/// It never keeps the session alive: once the session's guard is dropped,
/// [`notify`](Self::notify) does nothing and [`is_live`](Self::is_live) is
/// false. With no client listening, a signal costs a handful of atomic
/// operations.
///
/// A surface is built before its session opens, so it cannot be handed a
/// notifier at construction. Give it a place to receive one instead (a
/// `OnceLock<ListChangedNotifier>`, say), keep an `Arc` of the surface,
/// and fill the place after
/// [`ToolHost::open_session`](crate::ToolHost::open_session) returns; `examples/gated_tools.rs`
/// does this.
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
/// let notifier = session.list_changed_notifier();
/// std::thread::spawn(move || notifier.notify()).join().unwrap(); // from any thread
/// assert!(session.list_changed_notifier().is_live());
/// let notifier = session.list_changed_notifier();
/// drop(session);
/// assert!(!notifier.is_live());
/// notifier.notify(); // a no-op now
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct ListChangedNotifier {
    changes: Weak<ListChanges>,
}

impl ListChangedNotifier {
    pub(crate) fn new(changes: &Arc<ListChanges>) -> Self {
        Self {
            changes: Arc::downgrade(changes),
        }
    }

    /// Says that the session's tool list changed. Callable from any thread
    /// or task; never blocks; a no-op once the session is revoked.
    pub fn notify(&self) {
        if let Some(changes) = self.changes.upgrade() {
            changes.signal();
        }
    }

    /// Whether the session is still open, so that a signal can reach it.
    pub fn is_live(&self) -> bool {
        self.changes
            .upgrade()
            .is_some_and(|changes| !changes.is_revoked())
    }
}

impl fmt::Debug for ListChangedNotifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListChangedNotifier")
            .field("live", &self.is_live())
            .finish()
    }
}
