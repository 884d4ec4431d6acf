//! The one way this crate takes its locks.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`. Nothing panics while holding any of the locks this is
/// used on (each guards a short list or a slot of the revocation slab,
/// touched without calling user code), so a poisoned lock's data is whole:
/// its guard is taken all the same.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
