//! Telling a session's listening clients that its tool list changed.
//!
//! Each session has one [`ListChanges`], the one owner of the feature: the
//! dispatcher and the transport call its methods to signal, to open a
//! stream, to hold a result and to count a listing. It keeps a generation
//! counter that every signal bumps, and the wake-up its notification
//! streams wait on. The folder's files import one way: `audience.rs`, what
//! a stream's client shares, imports none of them; `changes.rs`, the owner
//! and the slot a stream holds in it, builds on `audience.rs`; `notifier.rs`,
//! the public handle that signals, on `changes.rs`; `window.rs`, when a
//! stream may announce (the coalescing window below), imports none; this
//! map only re-exports (the SSE body that writes the notices, and asks the
//! window, is `http/notification_stream.rs`).
//!
//! Every stream belongs to an [`Audience`]: the streams one client reads,
//! which share one record of the newest generation announced to that
//! client, so each change reaches each audience once, on one of its
//! streams. A legacy client's `GET /mcp` streams are one audience per MCP
//! session (`Mcp-Session-Id`), plus one for the streams opened without an
//! id; each 2026-07-28 subscription is an audience of its own.
//!
//! **Announced at once.** A stream that sees a change after a quiet period
//! announces it on its next poll; changes that follow within [`COALESCE`]
//! of an announcement are folded into one more announcement at the end of
//! that window (leading-edge coalescing). An agent re-lists just before its
//! next model request, so a notice held back by a trailing window arrives
//! after the request that should have seen the new tool.
//!
//! **Before the result.** A call whose tool signalled a change waits, before
//! its result is released, until every audience with a stream open has had
//! the change written to one of its streams' sockets
//! ([`ListChanges::delivered`]), at most [`DELIVERY_WAIT`]: so a client that
//! reads its streams as they come sees the notice before the result and
//! re-lists in the same turn, and a stalled stream delays such a call by at
//! most that wait.
//!
//! **After the re-listing.** Once the notice is out, the call waits a little
//! longer, at most [`RELIST_WAIT`], for the session to answer a `tools/list`
//! (counted below), then [`APPLY_WAIT`] for the client to take the new list
//! in. Some agents re-list on the notice on their own time, and would
//! otherwise send their next model request, still built from the old list,
//! before that listing lands (Gemini CLI: its re-list went out 17–40 ms
//! after the notice, after the next request; held this way, it offers the
//! new tool in the same turn). An agent that never re-lists (Claude Code
//! headless, Codex) pays [`RELIST_WAIT`], only on the calls that changed
//! the list while it listened.
//!
//! **Not past the guard.** A revocation (the guard's drop) ends every step
//! of the hold at once, and the dispatcher then sends nothing of the held
//! result (a 401, or on a stream the revocation's error): the drop ends the
//! session's responses as it ends its streams. The call did run, and counts
//! as served. (Before, such a result still went out, up to
//! [`RELIST_WAIT`] after the drop.)
//!
//! **The listings it waits for.** The same type counts the session's
//! answered `tools/list`s (one atomic add and a wake per listing): the
//! re-listing above waits on that count, and so does
//! [`ToolSession::first_listing`]. An ACP agent may answer `session/new`
//! before its MCP client has connected (seen: listings 1–3 s after
//! `session/new`), and an agent that drops the server (an untrusted
//! workspace, a refused bearer) says nothing at all; the caller waits for
//! the first listing with a timeout of its choosing and tells the two
//! apart.
//!
//! A signal with no stream open costs three atomic operations (the
//! revocation flag, the add, the count of open streams); through a
//! [`ListChangedNotifier`], two more to upgrade and release its weak
//! reference. With a stream open, it also wakes the streams.
//!
//! [`ToolSession::first_listing`]: crate::ToolSession::first_listing

mod audience;
mod changes;
mod notifier;
mod window;

pub(crate) use audience::Audience;
pub(crate) use changes::{ListChanges, StreamRefused, StreamSlot};
pub use notifier::ListChangedNotifier;
pub(crate) use window::AnnouncementWindow;
#[cfg(test)]
pub(crate) use window::COALESCE;
