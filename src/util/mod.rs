//! Tools the crate writes itself rather than take a dependency for: a boxed
//! future type, a two-way select, a bounded wait and a wait on a `Notify`
//! (`future.rs`, so that neither `futures` nor tokio's `macros` enters the
//! tree), a flag that wakes its waiters once raised (`latch.rs`), the
//! one way a lock is taken, poisoned or not (`lock.rs`), panic
//! containment for user futures (`unwind.rs`), standard base64
//! (`base64.rs`), and the SSE frame of one message (`sse_event.rs`).
//! Imports nothing from the crate.
//!
//! Other folders use `base64` as a namespace (`base64::decode`,
//! `base64::encode_into`) and the items re-exported below.

pub(crate) mod base64;
mod future;
mod latch;
mod lock;
mod sse_event;
mod unwind;

pub(crate) use future::{race, wait_for, waiting_at_most, BoxFuture, First};
pub(crate) use latch::Latch;
pub(crate) use lock::lock;
pub(crate) use sse_event::sse_event;
pub(crate) use unwind::{CatchUnwind, Panicked};
