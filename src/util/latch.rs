//! A flag raised once, which wakes whatever waits on it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// A flag raised once, waking the streams that wait on it: the host's
/// "end every stream now" at shutdown, and a session's revocation (whose
/// wake-up also carries its list changes).
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
