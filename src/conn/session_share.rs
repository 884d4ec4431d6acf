//! A session's share of the host's connection slots: which authenticated
//! connections are charged to it, at most `connections_per_session`.
//!
//! **Every request is charged to the session whose bearer it presents.** A
//! connection is charged to one session at a time: the session of the
//! first live bearer it presented. A later request on it that presents
//! another session's live bearer *moves* the connection to that session,
//! within that session's share (429 when it is full; the connection then
//! stays where it was). Moving rather than refusing is deliberate: an agent
//! process keeps one HTTP pool per origin, and when it opens a new ACP
//! session (a new bearer, the same URL) its pool reuses the keep-alive
//! connections of the last one, as Node's `fetch` does; refusing them
//! would fail that session's first calls. What moving does not allow is
//! the old hole, where a connection charged to one session served another
//! without counting against it.
//!
//! **A revoked session's connections give their slots up.** When its guard
//! drops, every connection still charged to it is charged to none and made
//! *pending* again (`admission.rs`), first in line to be shed: a dead
//! session holds no place in any share, and its connections yield their
//! slots to the first newcomers that need them. They are not closed at
//! once: an agent process keeps one HTTP pool for all its sessions, and
//! closing an idle keep-alive connection races the client picking it for
//! its next request — that request (another, live session's) would fail
//! with a reset connection instead of being served. (Closing them did just
//! that to the official TypeScript SDK client and to the soak test's
//! clients.) A request on one that presents the dead bearer gets 401 and
//! closes it; one that presents a live bearer moves it to that session;
//! one that sends nothing is closed at `header_read_timeout`.
//!
//! The hot path — a request on a connection already charged to its
//! bearer's session — is one atomic load and a pointer compare. Moving, and
//! the first charge, take the share's member list lock; revocation takes it
//! once, after the bearer's revocation, which stays one atomic step.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

/// What a share asks of a connection charged to it (`admission.rs`'s
/// `Connection`): a trait, so that the share names no type of the
/// admission's and the two files import one way only.
pub(super) trait ShareMember: Send + Sync {
    /// Whether it is charged to `share` now.
    fn is_charged_to(&self, share: &SessionShare) -> bool;

    /// `share`'s session was revoked: it is charged to none, and pending
    /// again (when it still was charged to `share`).
    fn give_slot_up(self: Arc<Self>, share: &SessionShare);
}

/// The connections charged to one session.
#[derive(Debug, Default)]
pub(crate) struct SessionShare {
    /// How many connections are charged here now.
    held: AtomicUsize,
    /// Set when the session is revoked, before its connections are demoted.
    revoked: AtomicBool,
    /// The connections charged here, and some since moved or ended (pruned
    /// as it grows), to demote when the session is revoked.
    members: Mutex<Vec<Weak<dyn ShareMember>>>,
}

impl SessionShare {
    /// Connections charged here now.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// The session's bearer was revoked: demotes every connection still
    /// charged to it, and any charged to it later (a request that took its
    /// lease just before the revocation).
    pub(crate) fn revoke(self: &Arc<Self>) {
        self.revoked.store(true, Ordering::SeqCst);
        let members = std::mem::take(&mut *self.lock());
        for connection in members.iter().filter_map(Weak::upgrade) {
            connection.give_slot_up(self);
        }
    }

    /// Takes a place for one more connection, unless `limit` are held.
    pub(super) fn take_place(&self, limit: usize) -> bool {
        // Counted first, so two connections racing for the last place
        // cannot both take it.
        if self.held.fetch_add(1, Ordering::AcqRel) >= limit {
            self.held.fetch_sub(1, Ordering::AcqRel);
            return false;
        }
        true
    }

    /// Gives back a place taken with `take_place`.
    pub(super) fn give_back(&self) {
        self.held.fetch_sub(1, Ordering::AcqRel);
    }

    /// Records `connection`, just charged here, so that revocation finds
    /// it; demotes it at once when the session was revoked meanwhile.
    pub(super) fn enlist<M: ShareMember + 'static>(
        self: &Arc<Self>,
        connection: &Arc<M>,
        limit: usize,
    ) {
        {
            let mut members = self.lock();
            // Moved away or ended: prune, so moving back and forth keeps
            // the list within about twice the share.
            if members.len() >= 2 * limit.clamp(4, 1 << 16) {
                members.retain(|m| m.upgrade().is_some_and(|c| c.is_charged_to(self)));
            }
            members.push(Arc::downgrade(connection) as Weak<dyn ShareMember>);
        }
        // `revoke` sets the flag before it takes the list: either it saw
        // this connection, or this load sees the flag.
        if self.revoked.load(Ordering::SeqCst) {
            Arc::clone(connection).give_slot_up(self);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Weak<dyn ShareMember>>> {
        self.members.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
