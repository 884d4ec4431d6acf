//! Telling a session's listening clients that its tool list changed.
//!
//! Each session has one [`ListChanges`]: a generation counter that every
//! signal bumps, and the wake-up its notification streams wait on. A
//! stream remembers the generation it last announced; when the counter has
//! moved it waits [`COALESCE`] (so a burst of signals becomes one
//! notification), then sends one `notifications/tools/list_changed` and
//! catches up to the counter. A signal with no stream open is three atomic
//! operations (two loads and an add).
//!
//! Legacy streams (`GET /mcp`) are one client's, so a change goes out on
//! exactly one of them: the first to claim its generation. Each 2026-07-28
//! subscription is its own, and gets every change.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::Notify;

/// How long a stream waits after it first sees a change before it announces
/// it, so that every signal of a burst is covered by one notification.
pub(crate) const COALESCE: Duration = Duration::from_millis(20);

/// One session's tool-list changes, shared by its guard, its notifiers and
/// its open streams.
#[derive(Debug, Default)]
pub(crate) struct ListChanges {
    /// Bumped by every signal.
    generation: AtomicU64,
    /// The newest generation a legacy stream has announced.
    legacy_announced: AtomicU64,
    /// Streams open now, of both kinds (for the per-session limit).
    open_streams: AtomicUsize,
    /// Raised when the session's guard is dropped: streams end, signals do
    /// nothing.
    revoked: AtomicBool,
    /// Wakes the streams, on a signal or at revocation.
    wake: Arc<Notify>,
}

impl ListChanges {
    /// Records a change and wakes the streams, if any is open.
    pub(crate) fn signal(&self) {
        if self.revoked.load(Ordering::Acquire) {
            return;
        }
        // SeqCst on both sides (here, and `open_stream` then `generation`
        // in the stream): a stream opened concurrently either is counted
        // here and woken, or reads the new generation on its first poll.
        self.generation.fetch_add(1, Ordering::SeqCst);
        if self.open_streams.load(Ordering::SeqCst) > 0 {
            self.wake.notify_waiters();
        }
    }

    /// Ends the session's streams; later signals do nothing.
    pub(crate) fn revoke(&self) {
        self.revoked.store(true, Ordering::SeqCst);
        self.wake.notify_waiters();
    }

    pub(crate) fn is_revoked(&self) -> bool {
        self.revoked.load(Ordering::SeqCst)
    }

    /// The changes signalled so far.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// The newest generation a legacy stream has announced: where a new
    /// legacy stream starts, so that a change whose only stream closed
    /// before announcing it is announced on the next one.
    pub(crate) fn legacy_announced(&self) -> u64 {
        self.legacy_announced.load(Ordering::SeqCst)
    }

    /// Claims `generation` for the one legacy stream that announces it:
    /// true for the first stream to claim it (or a newer one).
    pub(crate) fn claim_legacy(&self, generation: u64) -> bool {
        self.legacy_announced
            .fetch_max(generation, Ordering::AcqRel)
            < generation
    }

    /// What a stream waits on to hear of a signal or the revocation.
    pub(crate) fn wake(&self) -> &Arc<Notify> {
        &self.wake
    }

    /// Takes one of the session's `limit` stream places; `None` when all
    /// are taken (or the session is revoked).
    pub(crate) fn open_stream(self: &Arc<Self>, limit: usize) -> Option<StreamSlot> {
        let mut open = self.open_streams.load(Ordering::SeqCst);
        loop {
            if open >= limit || self.is_revoked() {
                return None;
            }
            match self.open_streams.compare_exchange_weak(
                open,
                open + 1,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => return Some(StreamSlot(Arc::clone(self))),
                // Another stream opened or closed meanwhile: re-check.
                Err(now) => open = now,
            }
        }
    }
}

/// A flag raised once, waking the streams that wait on it: the host's
/// "end every stream now" at shutdown.
#[derive(Debug, Default)]
pub(crate) struct Latch {
    raised: AtomicBool,
    wake: Arc<Notify>,
}

impl Latch {
    pub(crate) fn raise(&self) {
        self.raised.store(true, Ordering::SeqCst);
        self.wake.notify_waiters();
    }

    pub(crate) fn is_raised(&self) -> bool {
        self.raised.load(Ordering::SeqCst)
    }

    pub(crate) fn wake(&self) -> &Arc<Notify> {
        &self.wake
    }
}

/// An open stream's place among its session's streams, given back when the
/// stream's body is dropped.
#[derive(Debug)]
pub(crate) struct StreamSlot(Arc<ListChanges>);

impl StreamSlot {
    pub(crate) fn changes(&self) -> &ListChanges {
        &self.0
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.0.open_streams.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Tells the agents listening on one session that its tool list changed,
/// so they ask `tools/list` again.
///
/// Take it from
/// [`ToolSession::list_changed_notifier`](crate::ToolSession::list_changed_notifier)
/// and keep it wherever the
/// state behind the surface changes: it is cheap to clone (one reference
/// count), `Send` and `Sync`, and needs no guard. Every client that opened
/// a stream on the session — the legacy `GET /mcp` stream, or a 2026-07-28
/// `subscriptions/listen` — gets one `notifications/tools/list_changed`
/// per burst of signals (signals within 20 ms of the first are one).
///
/// It never keeps the session alive: once the session's guard is dropped,
/// [`notify`](Self::notify) does nothing and [`is_live`](Self::is_live) is
/// false. With no client listening, a signal costs three atomic operations.
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Signals count; a legacy generation is claimed once; the stream
    /// limit holds and frees; revocation stops signals and streams.
    #[test]
    fn signals_claims_limits_and_revocation() {
        let changes = Arc::new(ListChanges::default());
        changes.signal();
        changes.signal();
        assert_eq!(changes.generation(), 2);
        assert!(changes.claim_legacy(2));
        assert!(!changes.claim_legacy(2), "a generation is announced once");
        assert!(!changes.claim_legacy(1));
        let first = changes.open_stream(2).expect("a place");
        let second = changes.open_stream(2).expect("a place");
        assert!(changes.open_stream(2).is_none(), "the limit holds");
        drop(first);
        let third = changes.open_stream(2).expect("a freed place");
        let notifier = ListChangedNotifier::new(&changes);
        assert!(notifier.is_live());
        changes.revoke();
        notifier.notify();
        assert_eq!(changes.generation(), 2, "no signal after revocation");
        assert!(!notifier.is_live());
        assert!(changes.open_stream(4).is_none());
        drop((second, third));
        drop(changes);
        assert!(!notifier.is_live(), "the notifier holds no session alive");
    }
}
