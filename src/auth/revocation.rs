//! The revocation slab: where live bearers are checked and revoked.
//!
//! Every request presents a bearer naming a slot and a generation (see
//! [`bearer`](crate::auth::bearer)). The slab answers "is this bearer live?" by
//! looking at that one slot — O(1) in the number of live sessions, with no
//! lock — and revokes a bearer with one atomic read-modify-write that never
//! waits for anybody.
//!
//! # Design
//!
//! Slots live in pages that double in size (64, 128, 256, ... slots), each
//! allocated once, on first use, behind a [`OnceLock`]. A slot index maps to
//! its page and offset by arithmetic, so a slot never moves and a lookup
//! never locks. Each slot holds:
//!
//! | field       | type              | written by            | read by              |
//! |-------------|-------------------|-----------------------|----------------------|
//! | `state`     | `AtomicU64`       | `open`, `revoke`      | `validate`, `admit`  |
//! | `secret`    | `[AtomicU64; 4]`  | `open`                | `validate`           |
//! | `payload`   | `Mutex<Option<Arc<T>>>` | `open`, `revoke` | `validate` (after the checks) |
//! | `next_free` | `AtomicU32`       | `revoke` (push)       | `open` (pop)         |
//!
//! The state word is the slot's **generation**: odd means live, even means
//! vacant. `open` moves it from even `g` to odd `g + 1`; `revoke` from odd
//! `g` to even `g + 1`. A bearer carries the odd generation it was minted
//! with. The counter is 64 bits wide, so it never wraps in practice (at a
//! billion reopenings of one slot per second it would take 292 years).
//!
//! ## Invariants
//!
//! - **I1 (admission).** A bearer is admitted only if its slot's state word
//!   equals the bearer's generation — which implies the live bit — and its
//!   secret equals the slot's in constant time, and the state word reads the
//!   same after the secret was read.
//! - **I2 (revocation).** Revoking is one compare-and-swap on the state word
//!   (from the bearer's generation to the next, so a second revoke is a
//!   no-op). It never spins, never locks, and never waits for calls in
//!   flight. Once it
//!   has happened, the state word can never again hold the revoked
//!   generation (it only grows), so the bearer is dead for good — a reused
//!   slot runs at a later generation and never accepts an old bearer.
//! - **I3 (linearization).** A check takes effect at its load of the state
//!   word. A check whose load is ordered after the revoking CAS fails. A
//!   check whose load came first was admitted *before* the revocation, even
//!   if the revoker returns a moment later: on its own, the slab cannot stop
//!   such a call from entering the surface after `revoke` returns. The host
//!   closes that window above the slab: the last check before the surface
//!   runs is made inside the session's entry gate, and the guard's drop waits
//!   for calls caught there to finish their first poll (see `state/entry.rs`).
//!   `revoke` itself still never waits.
//! - **I4 (what gives security).** Only the secret (256 random bits) makes a
//!   bearer unforgeable. The slot and generation are addresses: they give
//!   liveness and O(1) lookup, not secrecy. A well-formed bearer naming an
//!   allocated slot is checked in time independent of which part is wrong.
//! - **I5 (consistent secret).** The secret is stored in atomics so the crate
//!   can forbid `unsafe`. A reader must know the four words it read belong to
//!   the generation it checked; it does, because it re-reads the state word
//!   after them (a seqlock). The secret is written only while the slot is
//!   vacant, with `Release` stores after the slot was popped from the free
//!   list, itself after the revoking CAS; a reader that loads
//!   (`Acquire`) any word of a new secret therefore sees the state word past
//!   its own generation on the re-read, and refuses.
//! - **I6 (free list).** Revoked slots go onto a Treiber stack. Pushes (from
//!   `revoke`) are lock-free CAS loops. Pops happen only in `open`, which is
//!   serialized by `open_lock`, so there is a single popper; with one popper
//!   a node cannot be popped and pushed back while another pop is reading it,
//!   which is the ABA case, so the head needs no tag.
//!
//! `open` takes a `Mutex` (the slab's only lock besides the per-slot payload
//! lock): opening a session is rare next to checking bearers, and the lock is
//! never held across an `.await` or while calling user code.
//!
//! The per-slot `payload` lock guards the session's shared state (its
//! surface). It is taken only *after* a bearer passed I1, so a stranger cannot
//! contend for it, and only to clone or take one `Arc`. `revoke` takes it
//! *after* its one revoking step, to release the surface promptly; by then
//! nobody can be admitted any more, so the wait (at most one `Arc` clone by
//! a request of the same session) no longer matters to revocation.
//!
//! ## Testing
//!
//! Unit tests below cover each transition and the reuse rule, and a
//! deterministic multi-threaded stress test checks I3 with a happens-before
//! marker while other threads churn the free list. Loom is not used: every
//! state change is a single-word transition, the free list has one popper,
//! and the model-checking build would add about two dozen crates to the
//! lockfile that `cargo deny` audits. Revisit that if the state machine
//! grows multi-word transitions (issue: in-flight call counting).

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use subtle::ConstantTimeEq;

use crate::auth::bearer::{Bearer, Secret, SlotRef};
use crate::util::lock;

/// Slots in the first page; page `k` holds `FIRST_PAGE << k` slots.
const FIRST_PAGE: usize = 64;
/// Number of pages. With 27 pages the slab can address `64 * (2^27 - 1)`
/// slots, more than `u32::MAX`, so every `u32` slot index has a page.
const PAGES: usize = 27;
/// The empty free-list marker.
const NO_SLOT: u32 = u32::MAX;

/// A slab of revocable bearers, each carrying an `Arc<T>` payload.
pub(crate) struct RevocationSlab<T> {
    pages: [OnceLock<Box<[Slot<T>]>>; PAGES],
    /// Slots ever handed out; the next fresh slot index.
    high_water: AtomicU32,
    /// Top of the free-list stack (I6), or `NO_SLOT`.
    free_head: AtomicU32,
    /// Live bearers.
    live: AtomicUsize,
    /// Most slots the slab will ever hand out.
    capacity: u32,
    /// Serializes `open` (the single popper of I6).
    open_lock: Mutex<()>,
}

struct Slot<T> {
    /// The generation: odd = live, even = vacant.
    state: AtomicU64,
    secret: [AtomicU64; 4],
    payload: Mutex<Option<Arc<T>>>,
    next_free: AtomicU32,
}

// === impl RevocationSlab ===

impl<T> RevocationSlab<T> {
    /// An empty slab that hands out at most `capacity` slots (at least one).
    pub(crate) fn new(capacity: u32) -> Self {
        Self {
            pages: std::array::from_fn(|_| OnceLock::new()),
            high_water: AtomicU32::new(0),
            free_head: AtomicU32::new(NO_SLOT),
            live: AtomicUsize::new(0),
            capacity: capacity.clamp(1, NO_SLOT - 1),
            open_lock: Mutex::new(()),
        }
    }

    /// Mints a bearer for `payload`: a fresh secret in a vacant slot.
    ///
    /// Returns `None` when `capacity` slots are live.
    pub(crate) fn open(&self, payload: Arc<T>) -> Option<Bearer> {
        let _serialized = lock(&self.open_lock);
        let index = self.pop_free().or_else(|| {
            // Relaxed: only `open` writes `high_water`, under `open_lock`.
            let fresh = self.high_water.load(Ordering::Relaxed);
            (fresh < self.capacity).then(|| {
                self.high_water.store(fresh + 1, Ordering::Relaxed);
                fresh
            })
        })?;
        let slot = self.slot_or_allocate(index);
        // Relaxed: the slot is vacant and we are its only writer (it was
        // popped from the free list, or is fresh, under `open_lock`).
        let vacant = slot.state.load(Ordering::Relaxed);
        debug_assert!(vacant % 2 == 0, "a free slot must be vacant");
        let secret = Secret::generate();
        for (stored, word) in slot.secret.iter().zip(secret.to_words()) {
            // Release: pairs with the Acquire loads in `validate` (I5).
            stored.store(word, Ordering::Release);
        }
        *lock(&slot.payload) = Some(payload);
        let at = SlotRef {
            slot: index,
            generation: vacant + 1,
        };
        // Release: publishes the secret and payload to any `validate` whose
        // Acquire load sees this generation.
        slot.state.store(at.generation, Ordering::Release);
        self.live.fetch_add(1, Ordering::Relaxed);
        Some(Bearer { at, secret })
    }

    /// Checks a bearer (I1) and returns its payload when it is live.
    pub(crate) fn validate(&self, bearer: &Bearer) -> Option<Arc<T>> {
        let slot = self.slot(bearer.at.slot)?;
        // Acquire: pairs with the Release store in `open`, so the secret and
        // payload written for this generation are visible.
        let before = slot.state.load(Ordering::Acquire);
        // Acquire: pairs with the Release stores in `open` (I5); also keeps
        // the re-read of `state` below after these loads.
        let stored = slot.secret.each_ref().map(|w| w.load(Ordering::Acquire));
        let after = slot.state.load(Ordering::Acquire);
        // Every part is combined in constant time (I4); `bool` only at the end.
        let admitted = before.ct_eq(&bearer.at.generation)
            & after.ct_eq(&before)
            & bearer.secret.ct_eq_words(&stored);
        if !bool::from(admitted) {
            return None;
        }
        let payload = lock(&slot.payload).clone()?;
        // The slot may have been revoked and reopened while we took the
        // payload; then it belongs to somebody else.
        self.admit(bearer.at).then_some(payload)
    }

    /// The liveness re-check made right before a tool call runs (I3).
    ///
    /// True while the bearer at `at` has not been revoked. A `false` is
    /// final: a revoked generation never comes back (I2).
    pub(crate) fn admit(&self, at: SlotRef) -> bool {
        // Acquire: pairs with the AcqRel CAS in `revoke`, so a check
        // that sees the revocation also sees everything before it.
        self.slot(at.slot)
            .is_some_and(|slot| slot.state.load(Ordering::Acquire) == at.generation)
    }

    /// Revokes the bearer at `at` (I2), releases its payload, and puts the
    /// slot on the free list. The revocation is the first statement; what
    /// follows is cleanup that no longer affects who is admitted.
    ///
    /// Revoking twice, or a slot that holds another generation, does nothing.
    pub(crate) fn revoke(&self, at: SlotRef) {
        let Some(slot) = self.slot(at.slot) else {
            return;
        };
        // AcqRel, one step: Release so that a check which sees the revoked
        // state sees what the owner did before dropping; Acquire so that the
        // cleanup below is ordered after it. The CAS keeps revoke idempotent.
        let Ok(_) = slot.state.compare_exchange(
            at.generation,
            at.generation + 1,
            Ordering::AcqRel,
            Ordering::Relaxed,
        ) else {
            return;
        };
        self.live.fetch_sub(1, Ordering::Relaxed);
        // Dropped outside the lock: the payload's destructor is user code.
        let payload = lock(&slot.payload).take();
        self.push_free(at.slot, slot);
        drop(payload);
    }

    /// Live bearers right now.
    pub(crate) fn live(&self) -> usize {
        self.live.load(Ordering::Relaxed)
    }

    /// Slots allocated so far (live or vacant), for memory accounting.
    #[cfg(test)]
    pub(crate) fn allocated_slots(&self) -> usize {
        self.pages
            .iter()
            .take_while(|p| p.get().is_some())
            .map(|p| p.get().map_or(0, |s| s.len()))
            .sum()
    }

    fn slot(&self, index: u32) -> Option<&Slot<T>> {
        let (page, offset) = locate(index);
        self.pages.get(page)?.get()?.get(offset)
    }

    fn slot_or_allocate(&self, index: u32) -> &Slot<T> {
        let (page, offset) = locate(index);
        let slots = self.pages[page].get_or_init(|| {
            (0..FIRST_PAGE << page)
                .map(|_| Slot {
                    state: AtomicU64::new(0),
                    secret: Default::default(),
                    payload: Mutex::new(None),
                    next_free: AtomicU32::new(NO_SLOT),
                })
                .collect()
        });
        &slots[offset]
    }

    /// Lock-free push (I6).
    fn push_free(&self, index: u32, slot: &Slot<T>) {
        // Release: publishes `next_free` and the revocation to the popper.
        // Never refused: the `Err` it cannot return is ignored.
        let _ = self
            .free_head
            .fetch_update(Ordering::Release, Ordering::Relaxed, |head| {
                slot.next_free.store(head, Ordering::Relaxed);
                Some(index)
            });
    }

    /// Pop, called only under `open_lock` (I6).
    fn pop_free(&self) -> Option<u32> {
        // Acquire: pairs with the Release CAS in `push_free`. A failed CAS
        // means a push moved the head; `head`'s own link cannot change
        // while it is on the stack, so the update just runs again.
        self.free_head
            .fetch_update(Ordering::Acquire, Ordering::Acquire, |head| match head {
                NO_SLOT => None,
                _ => Some(self.slot(head)?.next_free.load(Ordering::Relaxed)),
            })
            .ok()
    }
}

/// Page and offset of a slot index: page `k` starts at `FIRST_PAGE * (2^k - 1)`.
fn locate(index: u32) -> (usize, usize) {
    let scaled = index as usize / FIRST_PAGE + 1;
    let page = (usize::BITS - 1 - scaled.leading_zeros()) as usize;
    let offset = index as usize - FIRST_PAGE * ((1 << page) - 1);
    (page, offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Barrier;

    fn at(bearer: &Bearer) -> SlotRef {
        bearer.at
    }

    /// Slot indices map onto pages without gaps or overlaps.
    #[test]
    fn locate_covers_every_index_once() {
        let mut expected = (0usize, 0usize);
        for index in 0..(FIRST_PAGE as u32 * 40) {
            assert_eq!(locate(index), expected, "index {index}");
            expected.1 += 1;
            if expected.1 == FIRST_PAGE << expected.0 {
                expected = (expected.0 + 1, 0);
            }
        }
        let (page, offset) = locate(u32::MAX - 1);
        assert!(page < PAGES && offset < FIRST_PAGE << page);
    }

    /// A live bearer validates; after revoke it never does again.
    #[test]
    fn revoke_then_validate() {
        let slab = RevocationSlab::new(8);
        let bearer = slab.open(Arc::new("a")).unwrap();
        assert_eq!(slab.validate(&bearer).as_deref(), Some(&"a"));
        assert!(slab.admit(at(&bearer)));
        assert_eq!(slab.live(), 1);
        slab.revoke(at(&bearer));
        assert!(slab.validate(&bearer).is_none());
        assert!(!slab.admit(at(&bearer)));
        assert_eq!(slab.live(), 0);
        // idempotent
        slab.revoke(at(&bearer));
        assert_eq!(slab.live(), 0);
    }

    /// A reused slot runs at a later generation and refuses the old bearer,
    /// even one carrying the new secret.
    #[test]
    fn reused_slot_refuses_old_bearer() {
        let slab = RevocationSlab::new(1);
        let old = slab.open(Arc::new(1)).unwrap();
        slab.revoke(at(&old));
        let new = slab.open(Arc::new(2)).unwrap();
        assert_eq!(new.at.slot, old.at.slot);
        assert!(new.at.generation > old.at.generation);
        assert!(slab.validate(&old).is_none());
        let forged = Bearer {
            secret: new.secret.clone(),
            ..old.clone()
        };
        assert!(slab.validate(&forged).is_none());
        assert_eq!(slab.validate(&new).as_deref(), Some(&2));
    }

    /// A wrong secret, an unallocated slot and a wrong generation all fail.
    #[test]
    fn wrong_parts_fail() {
        let slab = RevocationSlab::new(4);
        let bearer = slab.open(Arc::new(())).unwrap();
        let wrong_secret = Bearer {
            secret: Secret::generate(),
            ..bearer.clone()
        };
        let wrong_slot = Bearer {
            at: SlotRef {
                slot: 1_000_000,
                ..bearer.at
            },
            ..bearer.clone()
        };
        let wrong_generation = Bearer {
            at: SlotRef {
                generation: bearer.at.generation + 2,
                ..bearer.at
            },
            ..bearer.clone()
        };
        for b in [wrong_secret, wrong_slot, wrong_generation] {
            assert!(slab.validate(&b).is_none(), "{b:?}");
        }
        assert!(slab.validate(&bearer).is_some());
    }

    /// A full slab says so instead of panicking, and frees up on revoke.
    #[test]
    fn full_slab_refuses_then_recovers() {
        let slab = RevocationSlab::new(3);
        let bearers: Vec<_> = (0..3).map(|i| slab.open(Arc::new(i)).unwrap()).collect();
        assert!(slab.open(Arc::new(9)).is_none());
        slab.revoke(at(&bearers[1]));
        let again = slab.open(Arc::new(10)).unwrap();
        assert_eq!(again.at.slot, bearers[1].at.slot);
        assert_eq!(slab.allocated_slots(), FIRST_PAGE);
    }

    /// Revoking releases the payload at once, not at slot reuse.
    #[test]
    fn revoke_drops_payload() {
        let slab = RevocationSlab::new(2);
        let payload = Arc::new(5);
        let bearer = slab.open(Arc::clone(&payload)).unwrap();
        assert_eq!(Arc::strong_count(&payload), 2);
        slab.revoke(at(&bearer));
        assert_eq!(Arc::strong_count(&payload), 1);
    }

    /// Deterministic stress: checker threads validate a bearer while another
    /// thread revokes it. After `revoke` returns, the revoker raises a flag
    /// (Release); a checker that saw the flag (Acquire) *before* validating
    /// must be refused. Meanwhile openers churn other slots so reuse and the
    /// free list are exercised. Fixed counts, a barrier, no sleeps.
    #[test]
    fn stress_no_admission_after_revoke_returns() {
        const ROUNDS: usize = 200;
        const CHECKERS: usize = 3;
        const CHECKS: usize = 300;
        let slab = Arc::new(RevocationSlab::<usize>::new(64));
        for round in 0..ROUNDS {
            let bearer = slab.open(Arc::new(round)).unwrap();
            let revoked = Arc::new(AtomicBool::new(false));
            let barrier = Arc::new(Barrier::new(CHECKERS + 2));
            let mut threads = Vec::new();
            for _ in 0..CHECKERS {
                let (slab, bearer, revoked, barrier) = (
                    Arc::clone(&slab),
                    bearer.clone(),
                    Arc::clone(&revoked),
                    Arc::clone(&barrier),
                );
                threads.push(std::thread::spawn(move || {
                    barrier.wait();
                    let mut admitted_after = 0;
                    for _ in 0..CHECKS {
                        let seen_revoked = revoked.load(Ordering::Acquire);
                        let ok = slab.validate(&bearer).is_some();
                        if seen_revoked && ok {
                            admitted_after += 1;
                        }
                        if let Some(payload) = slab.validate(&bearer) {
                            // never somebody else's payload
                            assert_eq!(*payload, round);
                        }
                    }
                    admitted_after
                }));
            }
            let churn = {
                let (slab, barrier) = (Arc::clone(&slab), Arc::clone(&barrier));
                std::thread::spawn(move || {
                    barrier.wait();
                    for i in 0..CHECKS / 10 {
                        let b = slab.open(Arc::new(usize::MAX - i)).unwrap();
                        assert_eq!(slab.validate(&b).as_deref(), Some(&(usize::MAX - i)));
                        slab.revoke(at(&b));
                    }
                    0
                })
            };
            barrier.wait();
            // Let the checkers get going, then revoke in the middle of them.
            std::thread::yield_now();
            slab.revoke(at(&bearer));
            revoked.store(true, Ordering::Release);
            assert!(slab.validate(&bearer).is_none());
            for t in threads.into_iter().chain([churn]) {
                assert_eq!(t.join().unwrap(), 0, "admitted after revoke, round {round}");
            }
        }
        assert_eq!(slab.live(), 0);
    }
}
