//! [`ListChanges`]: one session's list changes — the signal, the streams
//! that deliver it ([`StreamSlot`]), the count of listings, and the hold on
//! a result (see the folder's map, `mod.rs`, for the policy and its
//! waits). It builds on `audience.rs`; `notifier.rs` builds on it.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

use crate::util::{lock, wait_for, waiting_at_most, Latch};

use super::audience::Audience;

/// Longest a call whose tool changed the list waits for the change to be
/// handed to the session's open streams before its result is released.
/// Longer than [`COALESCE`](super::window::COALESCE), so a change that falls in a coalescing window
/// is still announced first.
pub(super) const DELIVERY_WAIT: Duration = Duration::from_millis(100);

/// Longest such a call then waits for a client to re-list, once the notice
/// is out. Gemini CLI re-lists about 5 ms after the notice.
pub(super) const RELIST_WAIT: Duration = Duration::from_millis(100);

/// How long such a call waits after the re-listing is answered, for the
/// client to apply it. Gemini CLI rebuilds its tool declarations after the
/// listing's answer arrives: released right after the answer, its next
/// model request still had the old list; 5 ms later, the new one (8 of 8
/// runs at 5 and 10 ms). Four times that, for a loaded machine.
pub(super) const APPLY_WAIT: Duration = Duration::from_millis(20);

/// One session's tool-list changes, shared by its guard, its notifiers and
/// its open streams: the signal, the streams that deliver it, and the hold
/// on a result until its change is delivered and re-listed.
#[derive(Debug, Default)]
pub(crate) struct ListChanges {
    /// Whether the surface's list can change, asked once at open: then
    /// `listChanged` is advertised and notification streams are served.
    offered: bool,
    /// Bumped by every signal.
    generation: AtomicU64,
    /// Streams open now, of every audience (for the per-session limit).
    open_streams: AtomicUsize,
    /// Raised when the session's guard is dropped: streams end, signals do
    /// nothing. Its wake-up is the streams': on a signal, at revocation, or
    /// when an audience ends.
    revoked: Latch,
    /// The audience of legacy streams opened without an `Mcp-Session-Id`.
    stateless: Arc<Audience>,
    /// The audiences with a stream open now: those a call that changed the
    /// list waits for. Locked when a stream opens or closes, and by such a
    /// call; never on a signal.
    listening: Mutex<Vec<Arc<Audience>>>,
    /// Notified when a stream announces or closes, an audience ends, or the
    /// session is revoked: what [`delivered`](Self::delivered) waits on.
    progressed: Notify,
    /// The `tools/list` requests answered.
    listings: AtomicU64,
    /// Notified at each listing.
    listed: Notify,
}

/// Why a stream did not open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamRefused {
    /// The session's surface never changes: there is nothing to stream.
    NotOffered,
    /// The session has `max_streams_per_session` open already.
    TooMany,
    /// The session's bearer was revoked while the request was in flight.
    Revoked,
}

impl ListChanges {
    /// The changes of a session whose list can change (`offered`) or never
    /// does.
    pub(crate) fn new(offered: bool) -> Self {
        Self {
            offered,
            ..Self::default()
        }
    }

    /// Whether the list can change: `listChanged` is advertised and
    /// streams are served.
    pub(crate) fn offered(&self) -> bool {
        self.offered
    }

    /// Records a change and wakes the streams, if any is open.
    pub(crate) fn signal(&self) {
        if self.is_revoked() {
            return;
        }
        // SeqCst on both sides (here, and `open_stream` then `generation`
        // in the stream): a stream opened concurrently either is counted
        // here and woken, or reads the new generation on its first poll.
        self.generation.fetch_add(1, Ordering::SeqCst);
        if self.open_streams.load(Ordering::SeqCst) > 0 {
            self.revoked.wake().notify_waiters();
        }
    }

    /// Ends the session's streams and any hold on a result; later signals
    /// do nothing.
    pub(crate) fn revoke(&self) {
        self.revoked.raise();
        self.progressed.notify_waiters();
        self.listed.notify_waiters();
    }

    pub(crate) fn is_revoked(&self) -> bool {
        self.revoked.is_raised()
    }

    /// The changes signalled so far.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// The audience of legacy streams opened without a session id.
    pub(crate) fn stateless(&self) -> &Arc<Audience> {
        &self.stateless
    }

    /// What a stream waits on to hear of a signal, the revocation, or the
    /// end of its audience.
    pub(crate) fn wake(&self) -> &Arc<Notify> {
        self.revoked.wake()
    }

    /// Ends `audience` (its MCP session was deleted or displaced): its
    /// streams end on their next poll, which this wakes.
    pub(crate) fn end_audience(&self, audience: &Audience) {
        audience.ended.store(true, Ordering::SeqCst);
        self.revoked.wake().notify_waiters();
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
    /// `audience`.
    pub(crate) fn open_stream(
        self: &Arc<Self>,
        limit: usize,
        audience: Arc<Audience>,
    ) -> Result<StreamSlot, StreamRefused> {
        if !self.offered {
            return Err(StreamRefused::NotOffered);
        }
        let mut refused = StreamRefused::TooMany;
        self.open_streams
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |open| {
                // Run again whenever another stream opened or closed
                // meanwhile: everything is re-checked.
                if self.is_revoked() {
                    refused = StreamRefused::Revoked;
                    return None;
                }
                (open < limit).then_some(open + 1)
            })
            .map_err(|_| refused)?;
        let mut listening = lock(&self.listening);
        if audience.open.fetch_add(1, Ordering::SeqCst) == 0 {
            listening.push(Arc::clone(&audience));
        }
        drop(listening);
        Ok(StreamSlot {
            changes: Arc::clone(self),
            audience,
        })
    }

    /// Waits on `notify`, at most `within`, until `done` says so (true) or
    /// the session is revoked (false); false on the timeout too.
    async fn wait_until(
        &self,
        notify: &Notify,
        within: Duration,
        mut done: impl FnMut() -> bool,
    ) -> bool {
        let finished = wait_for(notify, || match self.is_revoked() {
            true => Some(false),
            false => done().then_some(true),
        });
        waiting_at_most(within, finished).await.unwrap_or(false)
    }

    /// Waits, at most `within`, until every audience with a stream open has
    /// had `generation` written to one of its streams' sockets (or has
    /// ended), or the session is revoked. Returns at once when no stream is
    /// open; true when everyone was told, false on the timeout or a
    /// revocation.
    pub(crate) async fn delivered(&self, generation: u64, within: Duration) -> bool {
        self.wait_until(&self.progressed, within, || {
            lock(&self.listening).iter().all(|audience| {
                audience.is_ended() || audience.delivered.load(Ordering::Acquire) >= generation
            })
        })
        .await
    }

    /// Holds the result of a call that began at generation `before`: when
    /// its tool signalled a change and a stream is open, until the notice
    /// is out on every open stream, then until the client re-lists, then a
    /// moment for it to apply the new list (see the module's docs); each
    /// step bounded, skipped when the one before it did not finish, and
    /// ended by a revocation. True when it held the result at all.
    pub(crate) async fn hold_result(&self, before: u64) -> bool {
        let generation = self.generation();
        if generation == before || self.open_streams.load(Ordering::SeqCst) == 0 {
            return false;
        }
        let listed = self.listings();
        if self.delivered(generation, DELIVERY_WAIT).await
            && self
                .wait_until(&self.listed, RELIST_WAIT, || self.listings() > listed)
                .await
        {
            // Only a revocation ends this wait early.
            self.wait_until(&self.progressed, APPLY_WAIT, || false)
                .await;
        }
        true
    }

    /// A `tools/list` was answered: wakes what waits for a listing.
    pub(crate) fn listed(&self) {
        self.listings.fetch_add(1, Ordering::AcqRel);
        self.listed.notify_waiters();
    }

    /// Listings answered so far.
    pub(crate) fn listings(&self) -> u64 {
        self.listings.load(Ordering::Acquire)
    }

    /// Resolves once more than `count` listings were answered.
    pub(crate) async fn listed_more_than(&self, count: u64) {
        wait_for(&self.listed, || (self.listings() > count).then_some(())).await;
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
        let mut listening = lock(&self.changes.listening);
        if self.audience.open.fetch_sub(1, Ordering::SeqCst) == 1 {
            listening.retain(|a| !Arc::ptr_eq(a, &self.audience));
        }
        drop(listening);
        self.changes.open_streams.fetch_sub(1, Ordering::SeqCst);
        // A call waiting for this stream to announce waits no more.
        self.changes.progressed.notify_waiters();
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
