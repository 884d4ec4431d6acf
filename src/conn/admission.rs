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
//!   presents a live bearer; from then on it is **authenticated** for good.
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
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use tokio::sync::Notify;

use crate::conn::idle_deadline::Activity;

/// No request has presented a live bearer yet.
const PENDING: u8 = 0;
/// A request presented a live bearer: never shed.
const AUTHENTICATED: u8 = 1;
/// Chosen to give its slot to a newer connection; closing.
const SHED: u8 = 2;
/// Its task has ended and its slot is released (unless it was shed).
const ENDED: u8 = 3;

/// One connection's admission state, shared by the table, the connection's
/// task and its requests.
#[derive(Debug)]
pub(crate) struct Connection {
    state: AtomicU8,
    /// Raised when the connection is shed; its task closes it.
    shed: Notify,
    /// Whether a request is in service, for the header read timeout.
    activity: Activity,
    /// The count of authenticated connections of the session this one
    /// authenticated for, given back when it ends.
    share: OnceLock<Arc<AtomicUsize>>,
    /// The listener's address and the client's, when accepted from a
    /// socket (not in the fuzz and bench harnesses).
    addresses: Option<(SocketAddr, SocketAddr)>,
}

impl Connection {
    /// A connection outside any table (the fuzz and bench harnesses).
    #[cfg(feature = "bench-internals")]
    pub(crate) fn detached() -> Arc<Self> {
        Arc::new(Self::new(None))
    }

    fn new(addresses: Option<(SocketAddr, SocketAddr)>) -> Self {
        Self {
            addresses,
            state: AtomicU8::new(PENDING),
            shed: Notify::new(),
            activity: Activity::new(),
            share: OnceLock::new(),
        }
    }

    /// When a request was last in service on this connection.
    pub(crate) fn activity(&self) -> &Activity {
        &self.activity
    }

    /// A request on this connection presented the live bearer of a session
    /// whose authenticated connections are counted in `share`: the
    /// connection authenticates and counts against that session, unless
    /// the session already holds `limit` (false: the request is refused,
    /// and the connection stays pending). A connection already
    /// authenticated stays so, whatever bearer its later requests present;
    /// one shed a moment earlier stays shed: it is closing, and the request
    /// goes down with it.
    pub(crate) fn authenticate(&self, share: &Arc<AtomicUsize>, limit: usize) -> bool {
        // The load keeps the hot path (every request after the first) to a
        // read. Relaxed: the state word orders nothing else; the CAS alone
        // decides between this and a concurrent `try_shed`.
        if self.state.load(Ordering::Relaxed) != PENDING {
            return true;
        }
        // A place in the share first, so two connections racing for the
        // last place cannot both take it.
        if share.fetch_add(1, Ordering::AcqRel) >= limit {
            share.fetch_sub(1, Ordering::AcqRel);
            return false;
        }
        let authenticated = self
            .state
            .compare_exchange(PENDING, AUTHENTICATED, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok();
        if authenticated && self.share.set(Arc::clone(share)).is_ok() {
            return true;
        }
        // Shed meanwhile: it is closing and holds no place.
        share.fetch_sub(1, Ordering::AcqRel);
        true
    }

    /// Whether no request has authenticated it yet.
    pub(crate) fn is_unauthenticated(&self) -> bool {
        self.is_pending()
    }

    /// Whether the kernel says user `uid` owns the client's end (see
    /// `peer_user.rs`); true for a connection without addresses.
    pub(crate) fn comes_from(&self, uid: u32) -> bool {
        match self.addresses {
            Some((local, peer)) => crate::conn::peer_user::peer_uid(local, peer) == Some(uid),
            None => true,
        }
    }

    /// Resolves when the connection has been shed.
    pub(crate) async fn shed(&self) {
        self.shed.notified().await;
    }

    /// Moves a pending connection to shed; false if it authenticated or
    /// ended first. Called under the table lock.
    fn try_shed(&self) -> bool {
        let shed = self
            .state
            .compare_exchange(PENDING, SHED, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok();
        if shed {
            // `notify_one` keeps a permit when the task is not waiting yet.
            self.shed.notify_one();
        }
        shed
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
    /// Woken when the last connection task ends.
    all_ended: Notify,
}

#[derive(Debug, Default)]
struct Table {
    /// Slots held: admitted connections, minus shed ones.
    held: usize,
    /// Connection tasks still running, shed ones included.
    tasks: usize,
    /// Connections that were pending when admitted, oldest first; some have
    /// authenticated, been shed or ended since.
    pending: VecDeque<Arc<Connection>>,
}

/// A connection's hold on its slot; released when dropped (the task ends).
#[derive(Debug)]
pub(crate) struct Admitted {
    admission: Arc<Admission>,
    connection: Arc<Connection>,
}

impl Admission {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            table: Mutex::new(Table::default()),
            capacity,
            all_ended: Notify::new(),
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
        if table.held == self.capacity && !table.shed_oldest_pending() {
            return None;
        }
        if table.held < self.capacity {
            table.held += 1;
        }
        table.tasks += 1;
        let connection = Arc::new(Connection::new(addresses));
        table.pending.push_back(Arc::clone(&connection));
        if table.pending.len() > 2 * self.capacity.max(8) {
            table.pending.retain(|c| c.is_pending());
        }
        Some(Admitted {
            admission: Arc::clone(self),
            connection,
        })
    }

    /// Resolves once every admitted connection's task has ended.
    pub(crate) async fn all_ended(&self) {
        loop {
            let mut ended = std::pin::pin!(self.all_ended.notified());
            // Registered before the check, so an ending in between wakes us.
            ended.as_mut().enable();
            if self.lock().tasks == 0 {
                return;
            }
            ended.await;
        }
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

impl Table {
    /// Sheds the oldest connection still pending, handing its slot over.
    fn shed_oldest_pending(&mut self) -> bool {
        while let Some(oldest) = self.pending.pop_front() {
            if oldest.try_shed() {
                return true;
            }
        }
        false
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
        if let Some(share) = self.connection.share.get() {
            share.fetch_sub(1, Ordering::AcqRel);
        }
        table.tasks -= 1;
        let idle = table.tasks == 0;
        drop(table);
        if idle {
            self.admission.all_ended.notify_waiters();
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
        let share = Arc::new(AtomicUsize::new(0));
        let admission = Arc::new(Admission::new(3));
        let a = admission.admit(None).unwrap();
        let b = admission.admit(None).unwrap();
        let c = admission.admit(None).unwrap();
        a.connection().authenticate(&share, usize::MAX);
        let d = admission
            .admit(None)
            .expect("b, the oldest pending, is shed");
        assert!(b.connection().is_shed() && !c.connection().is_shed());
        b.connection().authenticate(&share, usize::MAX);
        assert!(b.connection().is_shed(), "a shed connection stays shed");
        assert_eq!(admission.held(), 3);
        c.connection().authenticate(&share, usize::MAX);
        d.connection().authenticate(&share, usize::MAX);
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
        d.connection().authenticate(&share, usize::MAX);
        drop(c);
        assert_eq!(admission.held(), 2);
        let e = admission.admit(None).expect("a free slot");
        assert!(!e.connection().is_shed());
        drop((a, d, e));
        assert_eq!(admission.held(), 0);
        assert_eq!(share.load(Ordering::Relaxed), 0, "every place given back");
    }

    /// A session holds at most its share of authenticated connections; the
    /// one refused stays pending (sheddable), and an ending one gives its
    /// place back.
    #[test]
    fn a_session_holds_at_most_its_share() {
        let (hog, other) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let admission = Arc::new(Admission::new(4));
        let a = admission.admit(None).unwrap();
        let b = admission.admit(None).unwrap();
        let c = admission.admit(None).unwrap();
        assert!(a.connection().authenticate(&hog, 2));
        assert!(b.connection().authenticate(&hog, 2));
        assert!(!c.connection().authenticate(&hog, 2), "past its share");
        assert!(c.connection().is_pending());
        assert!(a.connection().authenticate(&other, 2), "already in");
        let d = admission.admit(None).unwrap();
        assert!(d.connection().authenticate(&other, 2));
        let e = admission.admit(None).expect("c, refused, is shed for it");
        assert!(c.connection().is_shed());
        assert_eq!(
            (hog.load(Ordering::Relaxed), other.load(Ordering::Relaxed)),
            (2, 1)
        );
        drop(a);
        assert!(
            e.connection().authenticate(&hog, 2),
            "a place was given back"
        );
        drop((b, c, d, e));
        assert_eq!(
            (hog.load(Ordering::Relaxed), other.load(Ordering::Relaxed)),
            (0, 0)
        );
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
