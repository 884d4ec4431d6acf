//! What the host and its sessions hold while they run:
//!
//! - `shared.rs`: `Shared`, the host's limits and revocation slab that every
//!   connection and guard share; each session's `SessionState` (which holds
//!   its surface, so this folder sits above `surface/`); and the `Lease` a
//!   request holds on its session;
//! - `in_flight.rs`: a session's calls in flight, for cancellation, each
//!   held by a `Registration`;
//! - `output_schemas.rs`: which tools a session's latest listing declared
//!   an `outputSchema` for;
//! - `entry.rs`: the gate that makes "no call starts after the guard's
//!   drop returns" exact;
//! - `list_changed/`: the one owner of a session's list changes — the
//!   signal ([`ListChangedNotifier`]), the streams and audiences that
//!   deliver it, the count of listings, and the hold on a call's result
//!   until its change is delivered and re-listed;
//! - `mcp_session.rs`: the `Mcp-Session-Id`s that legacy `initialize`s
//!   mint inside a bearer's session, and the per-bearer cap.
//!
//! Every lock above is taken through `util::lock`, poisoned or not.

mod entry;
mod in_flight;
mod list_changed;
mod mcp_session;
mod output_schemas;
mod shared;

pub use list_changed::ListChangedNotifier;

pub(crate) use entry::FirstPoll;
#[cfg(test)]
pub(crate) use list_changed::COALESCE;
pub(crate) use list_changed::{AnnouncementWindow, Audience, StreamRefused, StreamSlot};
pub(crate) use mcp_session::{McpSession, McpSessionHeader};
pub(crate) use shared::{Lease, SessionState, Shared};
