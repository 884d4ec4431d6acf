//! Telling a session's listening clients that its tool list changed.
//!
//! Each session has one [`ListChanges`]: a generation counter that every
//! signal bumps, and the wake-up its notification streams wait on. Every
//! stream belongs to an [`Audience`]: the streams one client reads, which
//! share one record of the newest generation announced to that client, so
//! each change reaches each audience once, on one of its streams. A legacy
//! client's `GET /mcp` streams are one audience per MCP session
//! (`Mcp-Session-Id`), plus one for the streams opened without an id; each
//! 2026-07-28 subscription is an audience of its own.
//!
//! **Announced at once.** A stream that sees a change after a quiet period
//! announces it on its next poll; changes that follow within [`COALESCE`]
//! of an announcement are folded into one more announcement at the end of
//! that window (leading-edge coalescing). An agent re-lists just before its
//! next model request, so a notice held back by a trailing window arrives
//! after the request that should have seen the new tool.
//!
//! **Before the result.** A call whose tool signalled a change waits, before
//! its result is released, until every audience with a stream open has had
//! the change written to one of its streams' sockets
//! ([`ListChanges::delivered`]), at most [`DELIVERY_WAIT`]: so a client that
//! reads its streams as they come sees the notice before the result and
//! re-lists in the same turn, and a stalled stream delays such a call by at
//! most that wait.
//!
//! **After the re-listing.** Once the notice is out, the call waits a little
//! longer, at most [`RELIST_WAIT`], for the session to answer a `tools/list`
//! (`listings.rs`), then [`APPLY_WAIT`] for the client to take the new list
//! in. Some agents re-list on the notice on their own time, and would
//! otherwise send their next model request, still built from the old list,
//! before that listing lands (Gemini CLI: its re-list went out 17–40 ms
//! after the notice, after the next request; held this way, it offers the
//! new tool in the same turn). An agent that never re-lists (Claude Code
//! headless, Codex) pays [`RELIST_WAIT`], only on the calls that changed
//! the list while it listened.
//!
//! A signal with no stream open costs three atomic operations (the
//! revocation flag, the add, the count of open streams); through a
//! [`ListChangedNotifier`], two more to upgrade and release its weak
//! reference. With a stream open, it also wakes the streams.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use tokio::sync::Notify;

/// After an announcement, how long further changes are gathered into the
/// next one, so that a burst of signals costs the client two listings at
/// most.
pub(crate) const COALESCE: Duration = Duration::from_millis(20);

/// Longest a call whose tool changed the list waits for the change to be
/// handed to the session's open streams before its result is released.
/// Longer than [`COALESCE`], so a change that falls in a coalescing window
/// is still announced first.
pub(crate) const DELIVERY_WAIT: Duration = Duration::from_millis(100);

/// Longest such a call then waits for a client to re-list, once the notice
/// is out. Gemini CLI re-lists about 5 ms after the notice.
pub(crate) const RELIST_WAIT: Duration = Duration::from_millis(100);

/// How long such a call waits after the re-listing is answered, for the
/// client to apply it. Gemini CLI rebuilds its tool declarations after the
/// listing's answer arrives: released right after the answer, its next
/// model request still had the old list; 5 ms later, the new one (8 of 8
/// runs at 5 and 10 ms). Four times that, for a loaded machine.
pub(crate) const APPLY_WAIT: Duration = Duration::from_millis(20);

/// One client's streams: what they have announced, so that each change
/// reaches the client once, on one of them.
#[derive(Debug, Default)]
pub(crate) struct Audience {
    /// The newest generation claimed by one of its streams for announcing.
    announced: AtomicU64,
    /// The newest generation one of its streams has written to its socket:
    /// what a call that changed the list waits for.
    delivered: AtomicU64,
    /// Its streams open now; changed only under `ListChanges::listening`.
    open: AtomicUsize,
    /// Raised when its MCP session ends: its streams end too.
    ended: AtomicBool,
}

impl Audience {
    /// An audience to which every generation up to `announced` counts as
    /// told.
    pub(crate) fn starting_at(announced: u64) -> Arc<Self> {
        Arc::new(Self {
            announced: AtomicU64::new(announced),
            delivered: AtomicU64::new(announced),
            ..Self::default()
        })
    }

    /// The newest generation announced: where a new stream of the audience
    /// starts, so that a change whose stream closed before announcing it is
    /// announced on the next one.
    pub(crate) fn announced(&self) -> u64 {
        self.announced.load(Ordering::SeqCst)
    }

    /// Claims `generation` for the one stream that announces it: true for
    /// the first stream of the audience to claim it (or a newer one).
    pub(crate) fn claim(&self, generation: u64) -> bool {
        self.announced.fetch_max(generation, Ordering::AcqRel) < generation
    }

    pub(crate) fn is_ended(&self) -> bool {
        self.ended.load(Ordering::SeqCst)
    }
}

/// One session's tool-list changes, shared by its guard, its notifiers and
/// its open streams.
#[derive(Debug, Default)]
pub(crate) struct ListChanges {
    /// Bumped by every signal.
    generation: AtomicU64,
    /// Streams open now, of every audience (for the per-session limit).
    open_streams: AtomicUsize,
    /// Raised when the session's guard is dropped: streams end, signals do
    /// nothing.
    revoked: AtomicBool,
    /// Wakes the streams, on a signal, at revocation, or when an audience
    /// ends.
    wake: Arc<Notify>,
    /// The audience of legacy streams opened without an `Mcp-Session-Id`.
    stateless: Arc<Audience>,
    /// The audiences with a stream open now: those a call that changed the
    /// list waits for. Locked when a stream opens or closes, and by such a
    /// call; never on a signal.
    listening: Mutex<Vec<Arc<Audience>>>,
    /// Notified when a stream announces or closes, an audience ends, or the
    /// session is revoked: what [`delivered`](Self::delivered) waits on.
    progressed: Notify,
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
        self.progressed.notify_waiters();
    }

    pub(crate) fn is_revoked(&self) -> bool {
        self.revoked.load(Ordering::SeqCst)
    }

    /// The changes signalled so far.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Whether any stream is open, of any audience.
    pub(crate) fn has_streams(&self) -> bool {
        self.open_streams.load(Ordering::SeqCst) > 0
    }

    /// The audience of legacy streams opened without a session id.
    pub(crate) fn stateless(&self) -> &Arc<Audience> {
        &self.stateless
    }

    /// What a stream waits on to hear of a signal, the revocation, or the
    /// end of its audience.
    pub(crate) fn wake(&self) -> &Arc<Notify> {
        &self.wake
    }

    /// Ends `audience` (its MCP session was deleted or displaced): its
    /// streams end on their next poll, which this wakes.
    pub(crate) fn end_audience(&self, audience: &Audience) {
        audience.ended.store(true, Ordering::SeqCst);
        self.wake.notify_waiters();
        self.progressed.notify_waiters();
    }

    /// Says that a stream of `audience` has written the announcement of
    /// `generation` to its socket: wakes the calls waiting in
    /// [`delivered`](Self::delivered).
    pub(crate) fn delivered_to(&self, audience: &Audience, generation: u64) {
        audience.delivered.fetch_max(generation, Ordering::AcqRel);
        self.progressed.notify_waiters();
    }

    /// Takes one of the session's `limit` stream places for a stream of
    /// `audience`; `None` when all are taken (or the session is revoked).
    pub(crate) fn open_stream(
        self: &Arc<Self>,
        limit: usize,
        audience: Arc<Audience>,
    ) -> Option<StreamSlot> {
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
                Ok(_) => break,
                // Another stream opened or closed meanwhile: re-check.
                Err(now) => open = now,
            }
        }
        let mut listening = self.listening();
        if audience.open.fetch_add(1, Ordering::SeqCst) == 0 {
            listening.push(Arc::clone(&audience));
        }
        drop(listening);
        Some(StreamSlot {
            changes: Arc::clone(self),
            audience,
        })
    }

    fn listening(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Audience>>> {
        // Nothing panics while holding it; a poisoned lock's data is whole.
        self.listening
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether every audience with a stream open has been told of
    /// `generation` (or has ended).
    fn told_everyone(&self, generation: u64) -> bool {
        self.listening().iter().all(|audience| {
            audience.is_ended() || audience.delivered.load(Ordering::Acquire) >= generation
        })
    }

    /// Waits, at most `within`, until every audience with a stream open has
    /// had `generation` written to one of its streams' sockets, or the
    /// session is revoked. Returns at once when no stream is open; true
    /// when everyone was told, false on the timeout or a revocation.
    pub(crate) async fn delivered(&self, generation: u64, within: Duration) -> bool {
        let everyone_told = async {
            loop {
                let progressed = self.progressed.notified();
                let mut progressed = std::pin::pin!(progressed);
                // Registered before the check, so progress made after the
                // check wakes this task.
                progressed.as_mut().enable();
                if self.is_revoked() {
                    return false;
                }
                if self.told_everyone(generation) {
                    return true;
                }
                progressed.await;
            }
        };
        crate::util::waiting_at_most(within, everyone_told)
            .await
            .unwrap_or(false)
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

/// An open stream's place among its session's streams and in its
/// audience, given back when the stream's body is dropped.
#[derive(Debug)]
pub(crate) struct StreamSlot {
    changes: Arc<ListChanges>,
    audience: Arc<Audience>,
}

impl StreamSlot {
    pub(crate) fn changes(&self) -> &ListChanges {
        &self.changes
    }

    pub(crate) fn audience(&self) -> &Audience {
        &self.audience
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut listening = self.changes.listening();
        if self.audience.open.fetch_sub(1, Ordering::SeqCst) == 1 {
            listening.retain(|a| !Arc::ptr_eq(a, &self.audience));
        }
        drop(listening);
        self.changes.open_streams.fetch_sub(1, Ordering::SeqCst);
        // A call waiting for this stream to announce waits no more.
        self.changes.progressed.notify_waiters();
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Signals count; a generation is claimed once per audience; the
    /// stream limit holds and frees; revocation stops signals and streams.
    #[test]
    fn signals_claims_limits_and_revocation() {
        let changes = Arc::new(ListChanges::default());
        changes.signal();
        changes.signal();
        assert_eq!(changes.generation(), 2);
        let audience = changes.stateless();
        assert!(audience.claim(2));
        assert!(!audience.claim(2), "a generation is announced once");
        assert!(!audience.claim(1));
        let stateless = || Arc::clone(changes.stateless());
        let first = changes.open_stream(2, stateless()).expect("a place");
        let second = changes.open_stream(2, stateless()).expect("a place");
        assert!(
            changes.open_stream(2, stateless()).is_none(),
            "the limit holds"
        );
        drop(first);
        let third = changes.open_stream(2, stateless()).expect("a freed place");
        let notifier = ListChangedNotifier::new(&changes);
        assert!(notifier.is_live());
        changes.revoke();
        notifier.notify();
        assert_eq!(changes.generation(), 2, "no signal after revocation");
        assert!(!notifier.is_live());
        assert!(changes.open_stream(4, stateless()).is_none());
        drop((second, third));
        drop(changes);
        assert!(!notifier.is_live(), "the notifier holds no session alive");
    }

    /// `delivered` returns once every audience with a stream open has
    /// announced the generation, ignores audiences whose streams all
    /// closed or that ended, and gives up after its wait.
    #[tokio::test(start_paused = true)]
    async fn delivery_waits_for_every_listening_audience() {
        let changes = Arc::new(ListChanges::default());
        let quick = Duration::from_secs(1);
        changes.signal();
        let claimed = Audience::starting_at(0);
        let slot = changes.open_stream(4, Arc::clone(&claimed)).unwrap();
        assert!(claimed.claim(1));
        let started = tokio::time::Instant::now();
        changes.delivered(1, quick).await;
        assert_eq!(started.elapsed(), quick, "claimed is not delivered");
        drop(slot);
        let changes = Arc::new(ListChanges::default());
        changes.delivered(1, quick).await; // no stream: nothing to wait for
        let a = Audience::starting_at(0);
        let b = Audience::starting_at(0);
        let slot_a = changes.open_stream(4, Arc::clone(&a)).unwrap();
        let slot_b = changes.open_stream(4, Arc::clone(&b)).unwrap();
        let _second_of_b = changes.open_stream(4, Arc::clone(&b)).unwrap();
        changes.signal();
        let started = tokio::time::Instant::now();
        changes.delivered(1, quick).await;
        assert_eq!(
            started.elapsed(),
            quick,
            "nobody announced: the wait runs out"
        );

        let waiter = {
            let changes = Arc::clone(&changes);
            tokio::spawn(async move { changes.delivered(1, Duration::from_secs(60)).await })
        };
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert!(a.claim(1));
        changes.delivered_to(&a, 1);
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert!(!waiter.is_finished(), "b has not announced");
        drop(slot_b); // b still has a stream open
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert!(!waiter.is_finished(), "b still listens");
        changes.end_audience(&b);
        waiter.await.unwrap();
        assert_eq!(started.elapsed(), quick + Duration::from_millis(15));
        drop(slot_a);
        changes.signal();
        changes.delivered(2, quick).await;
        assert_eq!(
            started.elapsed(),
            quick + Duration::from_millis(15),
            "b ended, a closed"
        );
    }
}
