//! Bearers: the token format (`bearer.rs`) and the lock-free slab that
//! validates one in constant time and revokes it in one atomic step, O(1)
//! in the number of live sessions (`revocation.rs`, whose module doc
//! states its invariants). Imports nothing from the crate but itself and
//! `util/` (how a lock is taken).

mod bearer;
mod revocation;

pub(crate) use bearer::{Bearer, SlotRef};
pub(crate) use revocation::RevocationSlab;
