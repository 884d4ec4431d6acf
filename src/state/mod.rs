//! What the host and its sessions hold while they run:
//!
//! - `shared.rs`: `Shared`, the host's limits and revocation slab that every
//!   connection and guard share; each session's `SessionState` (which holds
//!   its surface, so this folder sits above `surface/`); [`SessionId`]; and
//!   the `Lease` a request holds on its session;
//! - `in_flight.rs`, `entry.rs`: a session's calls in flight, for
//!   cancellation; the gate that makes "no call starts after the guard's
//!   drop returns" exact;
//! - `list_changed.rs`: [`ListChangedNotifier`], each session's record of
//!   its list changes, the audiences each has reached, and the waits that
//!   hold a call's result until its change is delivered and re-listed;
//! - `listings.rs`: what a session's listings told its agents (a count, the
//!   wait for the first, which tools declared an `outputSchema`);
//! - `mcp_session.rs`: the `Mcp-Session-Id`s that legacy `initialize`s
//!   mint inside a bearer's session, and the per-bearer cap.

mod entry;
mod in_flight;
mod list_changed;
mod listings;
mod mcp_session;
mod shared;

pub use list_changed::ListChangedNotifier;
pub use shared::SessionId;

pub(crate) use entry::FirstPoll;
pub(crate) use list_changed::{
    Audience, Latch, StreamSlot, APPLY_WAIT, COALESCE, DELIVERY_WAIT, RELIST_WAIT,
};
pub(crate) use mcp_session::{McpSession, SessionHandle};
pub(crate) use shared::{Lease, SessionState, Shared};
