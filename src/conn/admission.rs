//! Admission: which connections get one of the host's `max_connections`
//! slots, and which one gives its slot up when they are all taken.
//!
//! Any local process can find the port, and connecting costs it nothing. So
//! a slot cannot be first come, first served: a flood of connections that
//! never send a request would hold every slot, and the agent — which opens
//! new connections and idles between calls all the time — would be locked
//! out. The policy instead is that **authenticated clients always win**:
//!
//! - A connection is **pending** from accept until one of its requests
//!   presents a live bearer; from then on it is **authenticated**, until
//!   the session it is charged to is revoked: then it is pending again,
//!   first in line to be shed (`session_share.rs`).
//! - When every slot is taken, a new connection takes the slot of the
//!   **oldest pending** connection, which is closed. A pending connection
//!   that sends a valid request does so within a millisecond of connecting,
//!   so it is the newest, not the oldest, and a flood of `n` connections
//!   per second gives each pending connection about `max_connections / n`
//!   seconds to authenticate before it can be shed.
//! - Authenticated connections are never shed for anyone. When every slot
//!   is authenticated, the newcomer is refused (closed at once). An
//!   authenticated connection still ends the usual ways: its client closes
//!   it, or it idles past `header_read_timeout` between requests
//!   (`idle_deadline.rs`); the client's next connection starts pending again.
//!
//! The window a pending connection has is counted in accepts, not time: it
//! is shed after `max_connections` newer connections. A client that sends
//! its request as it connects needs well under a millisecond on loopback,
//! and under `n` connections per second it has about `max_connections / n`
//! seconds (`benches/flood.rs`); a flooder able to connect `max_connections`
//! times within that first millisecond could still shed it. Raise
//! `max_connections` to widen the window.
//! - Requests that fail before authentication (403, 404, 401, and the 400s
//!   of step 1) are answered with `Connection: close` (see `http/transport.rs`),
//!   so a probe holds no slot past its answer; and a pending connection
//!   that sends nothing is closed at `header_read_timeout` anyway.
//!
//! The table is a `Mutex` touched at accept and when a connection ends,
//! never per request: the per-request step, marking a connection
//! authenticated, is one compare-and-swap on the connection's own state.
//! Shedding scans pending connections in accept order from a queue whose
//! stale entries (authenticated or ended since) are skipped as they are met,
//! and compacted when the queue grows past twice the slot count, so each
//! accept costs amortized O(1).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use tokio::sync::{watch, Notify};

use crate::conn::idle_deadline::Activity;
use crate::conn::peer_user::peer_uid;
use crate::conn::session_share::{SessionShare, ShareMember};

/// No request has presented a live bearer yet.
const PENDING: u8 = 0;
/// A request presented a live bearer: never shed.
const AUTHENTICATED: u8 = 1;
/// Chosen to give its slot to a newer connection; closing.
const SHED: u8 = 2;
/// Its task has ended and its slot is released (unless it was shed).
const ENDED: u8 = 3;

/// One connection's admission state, shared by the table, the connection's
/// task and its requests. Its default is a connection accepted now, pending
/// (`PENDING` is 0), charged to no session, outside any table.
#[derive(Debug, Default)]
pub(crate) struct Connection {
    state: AtomicU8,
    /// Raised when the connection is shed; its task closes it.
    shed: Notify,
    /// The table it holds a slot in, to queue it as pending again when the
    /// session it is charged to is revoked (none in the harnesses).
    admission: Weak<Admission>,
    /// Whether a request is in service, for the header read timeout.
    activity: Activity,
    /// The share of the session it is charged to (see `session_share.rs`),
    /// given back when it moves or ends. Holding it here keeps the address
    /// in `charged_to` valid.
    charge: Mutex<Option<Arc<SessionShare>>>,
    /// The address of `charge`'s share, or null: the per-request check is
    /// one load of this.
    charged_to: AtomicPtr<SessionShare>,
    /// Whether the kernel said the host's own user opened it.
    peer_verified: AtomicBool,
    /// The listener's address and the client's, when accepted from a
    /// socket (not in the fuzz and bench harnesses).
    addresses: Option<(SocketAddr, SocketAddr)>,
}

impl Connection {
    /// A connection outside any table (the fuzz and bench harnesses).
    #[cfg(feature = "bench-internals")]
    pub(crate) fn detached() -> Arc<Self> {
        Arc::default()
    }

    /// When a request was last in service on this connection.
    pub(crate) fn activity(&self) -> &Activity {
        &self.activity
    }

    /// A request on this connection presented the live bearer of the
    /// session whose share is `share`: the connection authenticates, and is
    /// charged to that session — moved there if it was charged to another —
    /// unless that session already holds `limit()` (false: the request is
    /// refused, and the connection stays as it was). One shed or ended a
    /// moment earlier stays so: it is closing, and the request goes down
    /// with it.
    pub(crate) fn authenticate(
        self: &Arc<Self>,
        share: &Arc<SessionShare>,
        limit: impl FnOnce() -> usize,
    ) -> bool {
        // The hot path, every request after the first: one load (and the
        // limit is not even computed).
        if self.is_charged_to(share) {
            return true;
        }
        let limit = limit();
        let mut charge = self.lock_charge();
        if self.is_charged_to(share) || self.state.load(Ordering::Relaxed) >= SHED {
            return true;
        }
        if !share.take_place(limit) {
            return false;
        }
        // The CAS alone decides between this and a concurrent `try_shed`.
        if self.is_pending() && !self.advance(PENDING, AUTHENTICATED) {
            // Shed meanwhile: it is closing and holds no place.
            share.give_back();
            return true;
        }
        self.charge_to(&mut charge, Some(share));
        drop(charge);
        share.enlist(self, limit);
        true
    }

    /// Charges it to `share` (`None`: to no session), giving its place back
    /// to the share it was charged to; `charge` is its locked charge.
    fn charge_to(&self, charge: &mut Option<Arc<SessionShare>>, share: Option<&Arc<SessionShare>>) {
        let address = share.map_or(std::ptr::null(), Arc::as_ptr);
        self.charged_to.store(address.cast_mut(), Ordering::Release);
        if let Some(old) = std::mem::replace(charge, share.cloned()) {
            old.give_back();
        }
    }

    /// Whether the kernel says user `uid` owns the client's end (see
    /// `peer_user.rs`); true for a connection without addresses. Asked of
    /// the kernel once: a yes is kept for the connection's later requests.
    pub(crate) fn comes_from(&self, uid: u32) -> bool {
        if self.peer_verified.load(Ordering::Relaxed) {
            return true;
        }
        let verified = self
            .addresses
            .is_none_or(|(local, peer)| peer_uid(local, peer) == Some(uid));
        self.peer_verified.fetch_or(verified, Ordering::Relaxed);
        verified
    }

    /// Resolves when the connection has been shed.
    pub(crate) async fn shed(&self) {
        self.shed.notified().await;
    }

    /// Moves a pending connection to shed; false if it authenticated or
    /// ended first. Called under the table lock.
    fn try_shed(&self) -> bool {
        let shed = self.advance(PENDING, SHED);
        if shed {
            // `notify_one` keeps a permit when the task is not waiting yet.
            self.shed.notify_one();
        }
        shed
    }

    /// Its charge, locked.
    fn lock_charge(&self) -> MutexGuard<'_, Option<Arc<SessionShare>>> {
        self.charge.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Moves the state from `from` to `to`; false if it was not `from`.
    fn advance(&self, from: u8, to: u8) -> bool {
        let relaxed = Ordering::Relaxed;
        self.state.compare_exchange(from, to, relaxed, relaxed) == Ok(from)
    }

    fn is_pending(&self) -> bool {
        self.state.load(Ordering::Relaxed) == PENDING
    }

    #[cfg(test)]
    fn is_shed(&self) -> bool {
        self.state.load(Ordering::Relaxed) == SHED
    }
}

/// A streamed response still being sent: its connection stays in service
/// (see `idle_deadline.rs`) until the stream's body is dropped, at its end
/// or with the connection. HTTP/1 serves one request at a time, so no later
/// request on the connection can be in service when it drops.
#[derive(Debug)]
pub(crate) struct InService(Arc<Connection>);

impl InService {
    /// `connection`, in service until this is dropped.
    pub(crate) fn new(connection: Arc<Connection>) -> Self {
        Self(connection)
    }
}

impl Drop for InService {
    fn drop(&mut self) {
        self.0.activity.finish();
    }
}

/// The host's connection slots.
#[derive(Debug)]
pub(crate) struct Admission {
    table: Mutex<Table>,
    capacity: usize,
    /// A receiver for each connection task still running, shed ones
    /// included (held by its [`Admitted`]): closed when the last one ends.
    tasks: watch::Sender<()>,
}

#[derive(Debug, Default)]
struct Table {
    /// Slots held: admitted connections, minus shed ones.
    held: usize,
    /// Connections that were pending when admitted, oldest first, after
    /// those demoted by a revocation (first to be shed); some have
    /// authenticated, been shed or ended since.
    pending: VecDeque<Arc<Connection>>,
}

/// A connection's hold on its slot; released when dropped (the task ends).
#[derive(Debug)]
pub(crate) struct Admitted {
    admission: Arc<Admission>,
    connection: Arc<Connection>,
    /// Its task's place in `Admission::tasks`.
    _task: watch::Receiver<()>,
}

impl Admission {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            table: Mutex::new(Table::default()),
            capacity,
            tasks: watch::Sender::new(()),
        }
    }

    /// Admits a new connection into a free slot, or into the slot of the
    /// oldest pending connection (which is shed). `None` when every slot is
    /// held by an authenticated connection.
    pub(crate) fn admit(
        self: &Arc<Self>,
        addresses: Option<(SocketAddr, SocketAddr)>,
    ) -> Option<Admitted> {
        let mut table = self.lock();
        // Full: the oldest connection still pending hands its slot over.
        if table.held == self.capacity
            && !std::iter::from_fn(|| table.pending.pop_front()).any(|oldest| oldest.try_shed())
        {
            return None;
        }
        if table.held < self.capacity {
            table.held += 1;
        }
        let connection = Arc::new(Connection {
            addresses,
            admission: Arc::downgrade(self),
            ..Connection::default()
        });
        table.pending.push_back(Arc::clone(&connection));
        if table.pending.len() > 2 * self.capacity.max(8) {
            table.pending.retain(|c| c.is_pending());
        }
        Some(Admitted {
            admission: Arc::clone(self),
            connection,
            _task: self.tasks.subscribe(),
        })
    }

    /// Resolves once every admitted connection's task has ended.
    pub(crate) async fn all_ended(&self) {
        self.tasks.closed().await;
    }

    /// Slots held right now (for tests).
    #[cfg(test)]
    fn held(&self) -> usize {
        self.lock().held
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Admitted {
    /// The connection's state, for its requests and its task.
    pub(crate) fn connection(&self) -> &Arc<Connection> {
        &self.connection
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut table = self.admission.lock();
        // Under the table lock, like `try_shed`: a connection that ends
        // can no longer be chosen, and one that was chosen has already
        // handed its slot to its successor.
        if self.connection.state.swap(ENDED, Ordering::Relaxed) != SHED {
            table.held -= 1;
        }
        self.connection
            .charge_to(&mut self.connection.lock_charge(), None);
        // `_task` drops after this, with the table unlocked: the last one
        // wakes `all_ended`.
    }
}

impl ShareMember for Connection {
    fn is_charged_to(&self, share: &SessionShare) -> bool {
        std::ptr::eq(self.charged_to.load(Ordering::Acquire), share)
    }

    /// The session it is charged to, `share`, was revoked: it is charged to
    /// none and pending again — sheddable, oldest first, for any newcomer
    /// that needs its slot — until a request presents a live bearer on it.
    /// It is not closed here: an agent's HTTP pool may be handing it to
    /// another of its sessions at this very moment (see
    /// `session_share.rs`).
    fn give_slot_up(self: Arc<Self>, share: &SessionShare) {
        let mut charge = self.lock_charge();
        if !self.is_charged_to(share) {
            return; // moved to another session meanwhile
        }
        self.charge_to(&mut charge, None);
        let demoted = self.advance(AUTHENTICATED, PENDING);
        // Not under the charge lock: `Admitted::drop` takes the table lock,
        // then this one.
        drop(charge);
        if let Some(admission) = self.admission.upgrade().filter(|_| demoted) {
            admission.lock().pending.push_front(self);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// At capacity the oldest pending connection is shed for the newcomer;
    /// authenticated connections never are; with every slot authenticated
    /// the newcomer is refused; ending connections free their slots.
    #[test]
    fn authenticated_connections_always_win() {
        let share = Arc::new(SessionShare::default());
        let admission = Arc::new(Admission::new(3));
        let a = admission.admit(None).unwrap();
        let b = admission.admit(None).unwrap();
        let c = admission.admit(None).unwrap();
        a.connection().authenticate(&share, || usize::MAX);
        let d = admission
            .admit(None)
            .expect("b, the oldest pending, is shed");
        assert!(b.connection().is_shed() && !c.connection().is_shed());
        b.connection().authenticate(&share, || usize::MAX);
        assert!(b.connection().is_shed(), "a shed connection stays shed");
        assert_eq!(admission.held(), 3);
        c.connection().authenticate(&share, || usize::MAX);
        d.connection().authenticate(&share, || usize::MAX);
        assert!(
            admission.admit(None).is_none(),
            "every slot is authenticated"
        );
        drop(b); // the shed connection's task ends: no slot to give back
        assert_eq!(admission.held(), 3);
        // A pending connection that ends is never chosen afterwards.
        drop(d);
        assert_eq!(admission.held(), 2);
        let d = admission.admit(None).unwrap();
        d.connection().authenticate(&share, || usize::MAX);
        drop(c);
        assert_eq!(admission.held(), 2);
        let e = admission.admit(None).expect("a free slot");
        assert!(!e.connection().is_shed());
        drop((a, d, e));
        assert_eq!(admission.held(), 0);
        assert_eq!(share.held(), 0, "every place given back");
    }

    /// A session holds at most its share of authenticated connections; the
    /// one refused stays pending (sheddable), and an ending one gives its
    /// place back.
    #[test]
    fn a_session_holds_at_most_its_share() {
        let (hog, other) = (
            Arc::<SessionShare>::default(),
            Arc::<SessionShare>::default(),
        );
        let admission = Arc::new(Admission::new(4));
        let a = admission.admit(None).unwrap();
        let b = admission.admit(None).unwrap();
        let c = admission.admit(None).unwrap();
        assert!(a.connection().authenticate(&hog, || 2));
        assert!(b.connection().authenticate(&hog, || 2));
        assert!(!c.connection().authenticate(&hog, || 2), "past its share");
        assert!(c.connection().is_pending());
        let d = admission.admit(None).unwrap();
        assert!(d.connection().authenticate(&other, || 2));
        let e = admission.admit(None).expect("c, refused, is shed for it");
        assert!(c.connection().is_shed());
        assert_eq!((hog.held(), other.held()), (2, 1));
        drop(a);
        assert!(
            e.connection().authenticate(&hog, || 2),
            "a place was given back"
        );
        drop((b, c, d, e));
        assert_eq!((hog.held(), other.held()), (0, 0));
    }

    /// A request with another session's bearer moves its connection to
    /// that session, within that session's share; a full one refuses it
    /// and the connection stays where it was.
    #[test]
    fn a_connection_is_charged_to_the_bearer_it_presents() {
        let (first, second) = (
            Arc::<SessionShare>::default(),
            Arc::<SessionShare>::default(),
        );
        let admission = Arc::new(Admission::new(4));
        let a = admission.admit(None).unwrap();
        let b = admission.admit(None).unwrap();
        assert!(a.connection().authenticate(&first, || 1));
        assert!(b.connection().authenticate(&second, || 1));
        assert!(
            !a.connection().authenticate(&second, || 1),
            "the second session's share is full"
        );
        assert!(a.connection().is_charged_to(&first));
        drop(b);
        assert!(a.connection().authenticate(&second, || 1), "moved");
        assert!(a.connection().is_charged_to(&second));
        assert_eq!((first.held(), second.held()), (0, 1));
        assert!(a.connection().authenticate(&first, || 1), "and back");
        assert_eq!((first.held(), second.held()), (1, 0));
        drop(a);
        assert_eq!((first.held(), second.held()), (0, 0));
    }

    /// Revoking a session makes the connections charged to it pending
    /// again, first in line to be shed, and gives their places back; not
    /// those moved away, and also one charged to it afterwards.
    #[test]
    fn revocation_demotes_the_sessions_connections() {
        let (revoked, kept) = (
            Arc::<SessionShare>::default(),
            Arc::<SessionShare>::default(),
        );
        let admission = Arc::new(Admission::new(3));
        let (a, b) = (
            admission.admit(None).unwrap(),
            admission.admit(None).unwrap(),
        );
        let c = admission.admit(None).unwrap();
        assert!(c.connection().authenticate(&kept, || 4));
        assert!(a.connection().authenticate(&revoked, || 4));
        assert!(b.connection().authenticate(&revoked, || 4));
        assert!(b.connection().authenticate(&kept, || 4));
        revoked.revoke();
        assert!(a.connection().is_pending(), "charged to it: pending again");
        assert!(!b.connection().is_pending(), "moved away before: kept");
        assert_eq!((revoked.held(), kept.held()), (0, 2));
        let d = admission.admit(None).expect("a's slot is handed over");
        assert!(a.connection().is_shed());
        assert!(d.connection().authenticate(&revoked, || 4));
        assert!(d.connection().is_pending(), "charged after the revocation");
        assert!(
            a.connection().authenticate(&kept, || 4),
            "a shed one stays shed"
        );
        assert_eq!(revoked.held(), 0);
    }

    /// A flood of pending connections keeps the queue bounded, and the
    /// newest pending connections are the ones that keep their slots.
    #[test]
    fn flood_sheds_oldest_and_stays_bounded() {
        let admission = Arc::new(Admission::new(4));
        let mut live = VecDeque::new();
        for _ in 0..1000 {
            live.push_back(admission.admit(None).unwrap());
            live.retain(|admitted: &Admitted| !admitted.connection().is_shed());
            assert!(admission.lock().pending.len() <= 2 * 8 + 1);
        }
        assert_eq!(live.len(), 4);
        assert_eq!(admission.held(), 4);
    }

    /// `all_ended` resolves once the last task's hold is dropped.
    #[tokio::test]
    async fn all_ended_waits_for_every_task() {
        let admission = Arc::new(Admission::new(2));
        admission.all_ended().await;
        let admitted = admission.admit(None).unwrap();
        let waiter = {
            let admission = Arc::clone(&admission);
            tokio::spawn(async move { admission.all_ended().await })
        };
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        drop(admitted);
        waiter.await.unwrap();
    }
}
