//! A connection's supervision, below everything that reads a request:
//!
//! - `admission.rs`: which connections hold the host's `max_connections`
//!   slots — authenticated ones always win, each session within its share,
//!   and a pending one gives its slot up under a flood;
//! - `session_share.rs`: the connections charged to each session — the
//!   session whose bearer a request presents — and, when it is revoked,
//!   giving their slots up (pending again, the first to be shed);
//! - `peer_user.rs`: which local user opened a connection (Linux, one
//!   `NETLINK_SOCK_DIAG` lookup), so a leaked bearer is useless to others;
//! - `idle_deadline.rs`: the header read timeout, kept off the request path
//!   (two stores and a clock read per request; the timer runs in each
//!   connection's supervisor);
//! - `write_stall.rs`: closing a connection whose client stopped reading;
//! - `file_limit.rs`: whether the process's open-file limit can hold
//!   `max_connections`, checked at bind;
//! - `drain.rs`: graceful shutdown at the cost of one atomic load per poll.
//!
//! Knows nothing of HTTP requests, bearers or MCP: `http/transport.rs`
//! and `host.rs` wire these to each connection.

mod admission;
mod drain;
pub(crate) mod file_limit;
mod idle_deadline;
mod peer_user;
mod session_share;
mod write_stall;

pub(crate) use admission::{Admission, Connection, InService};
pub(crate) use drain::Drain;
pub(crate) use peer_user::listener_uid;
#[cfg(feature = "bench-internals")]
pub(crate) use peer_user::peer_uid;
pub(crate) use session_share::SessionShare;
pub(crate) use write_stall::WriteStallGuard;
