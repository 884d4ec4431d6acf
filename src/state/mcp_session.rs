//! MCP sessions (`Mcp-Session-Id`, legacy era): the handles `initialize`
//! mints inside one bearer's session.
//!
//! A bearer is the session as far as authentication goes; an MCP session is
//! one client's conversation under it. Clients need the handle: the rmcp
//! client (Copilot, Codex) and the Python SDK open the `GET` stream of list
//! changes only when `initialize` minted one, and a client that sends no
//! `MCP-Protocol-Version` header (Gemini CLI) is answered in the version it
//! negotiated only if the host can tell its requests apart.
//!
//! - **Minted by every legacy `initialize`**: 128 bits from the operating
//!   system's generator, written as 32 lower-case hex digits (visible
//!   ASCII, as MCP requires), bound to the negotiated version and to an
//!   [`Audience`] for its `GET` streams.
//! - **Only a handle.** The bearer is checked first, and ids are looked up
//!   only among the bearer's own session's, so an id minted under another
//!   bearer is as unknown as a made-up one (404, `-32001`). Every id dies
//!   with its guard: the table lives in the session's state, which no
//!   request reaches once the bearer is revoked.
//! - **Bounded**: at most `max_mcp_sessions_per_session` per bearer; minting
//!   one more ends the oldest (its streams end, its id is 404 from then on),
//!   so a client that re-initializes in a loop holds a fixed amount:
//!   each is a small record, and the `clientInfo` its client gave, kept as
//!   a JSON object of its name and version only, each at most 128
//!   characters.
//! - `DELETE` with an id ends that MCP session and its streams.
//!
//! Ids are compared in constant time anyway: cheap, and it keeps one
//! client's handle from being learnt a byte at a time by another that holds
//! the same bearer. Each comparison ORs together the XOR of every pair of
//! bytes, with no branch, and asks `subtle` once whether anything differs,
//! rather than comparing 32 bytes one by one, each behind `subtle`'s fence.

use std::collections::VecDeque;
use std::fmt;
use std::io::Write as _;
use std::sync::{Arc, Mutex};

use subtle::ConstantTimeEq;

use crate::state::list_changed::{Audience, ListChanges};
use crate::util::lock;

/// Length of an id's text: 16 random bytes in hex.
const ID_LEN: usize = 32;

/// One MCP session: its id, the version its `initialize` negotiated, and
/// the audience its `GET` streams announce to.
pub(crate) struct McpSession {
    id: [u8; ID_LEN],
    version: &'static str,
    audience: Arc<Audience>,
    /// The client's `clientInfo` from `initialize`, when fit to log: only
    /// its name and version, each at most 128 characters. Shared, so each
    /// call of the MCP session takes it without a copy.
    client_info: Option<Arc<serde_json::Value>>,
}

impl McpSession {
    /// The id, as sent in `Mcp-Session-Id`.
    pub(crate) fn id(&self) -> &[u8] {
        &self.id
    }

    /// The legacy version `initialize` negotiated: the version of every
    /// request of this MCP session that names none in its header.
    pub(crate) fn version(&self) -> &'static str {
        self.version
    }

    /// Its `GET` streams' audience: each change reaches the session once.
    pub(crate) fn audience(&self) -> &Arc<Audience> {
        &self.audience
    }

    /// The `clientInfo` its `initialize` gave, name and version only.
    pub(crate) fn client_info(&self) -> Option<&Arc<serde_json::Value>> {
        self.client_info.as_ref()
    }
}

impl fmt::Debug for McpSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The id is not a secret, but it is a client's handle: keep it out
        // of logs all the same.
        f.debug_struct("McpSession")
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

/// What a request's `Mcp-Session-Id` header named.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) enum McpSessionHeader<'a> {
    /// No header: a stateless client (or a modern one), served as such.
    #[default]
    Absent,
    /// An open MCP session of the bearer's session.
    Known(&'a McpSession),
    /// An id that names no open MCP session of this bearer: never minted,
    /// ended, displaced, or minted under another bearer. A legacy request
    /// with it is 404 `-32001`, on which clients initialize again.
    Unknown,
}

impl McpSessionHeader<'_> {
    /// The version its MCP session negotiated, if it names one.
    pub(crate) fn version(self) -> Option<&'static str> {
        match self {
            Self::Known(session) => Some(session.version()),
            Self::Absent | Self::Unknown => None,
        }
    }
}

/// The MCP sessions open under one bearer, oldest first.
#[derive(Debug, Default)]
pub(crate) struct McpSessions {
    open: Mutex<VecDeque<Arc<McpSession>>>,
}

impl McpSessions {
    /// Mints an MCP session at `version`, ending the oldest when `limit`
    /// are open already. Its streams will announce changes after the
    /// current one: the client lists its tools after `initialize` anyway.
    ///
    /// # Panics
    ///
    /// When the operating system's random generator fails, as minting a
    /// bearer does: a guessable handle is worse than no answer.
    pub(crate) fn mint(
        &self,
        version: &'static str,
        client_info: Option<&serde_json::Value>,
        changes: &ListChanges,
        limit: usize,
    ) -> Arc<McpSession> {
        let mut random = [0u8; 16];
        getrandom::fill(&mut random).expect("the operating system's random generator failed");
        let mut id = [0u8; ID_LEN];
        // Lower-case hex: 32 digits, which fill `id` exactly.
        write!(&mut id[..], "{:032x}", u128::from_le_bytes(random)).expect("32 digits fit");
        let client_info = client_info
            .and_then(crate::observer::ClientInfo::from_value)
            .map(|info| Arc::new(serde_json::json!({"name": info.name, "version": info.version})));
        let session = Arc::new(McpSession {
            id,
            version,
            audience: Audience::starting_at(changes.generation()),
            client_info,
        });
        let mut open = lock(&self.open);
        let excess = (open.len() + 1).saturating_sub(limit).min(open.len());
        for oldest in open.drain(..excess) {
            changes.end_audience(&oldest.audience);
        }
        open.push_back(Arc::clone(&session));
        session
    }

    /// The open MCP session with this id, if any.
    pub(crate) fn find(&self, id: &[u8]) -> Option<Arc<McpSession>> {
        let presented: &[u8; ID_LEN] = id.try_into().ok()?;
        lock(&self.open)
            .iter()
            .find(|session| {
                let pairs = session.id.iter().zip(presented);
                let differ = pairs.fold(0, |differ, (a, b)| differ | (a ^ b));
                bool::from(differ.ct_eq(&0))
            })
            .cloned()
    }

    /// Ends `session` (`DELETE`): its id is unknown from now on and its
    /// streams end. Nothing when it had ended already.
    pub(crate) fn end(&self, session: &McpSession, changes: &ListChanges) {
        let mut open = lock(&self.open);
        let at = open.iter().position(|s| std::ptr::eq(&**s, session));
        let ended = at.and_then(|at| open.remove(at));
        drop(open);
        if let Some(ended) = ended {
            changes.end_audience(&ended.audience);
        }
    }

    /// How many are open.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        lock(&self.open).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Minted ids are distinct visible ASCII of the stated length, found
    /// again by their text only; the oldest is ended past the limit, and
    /// an ended session is unknown.
    #[test]
    fn mint_find_limit_and_end() {
        let changes = ListChanges::default();
        let sessions = McpSessions::default();
        let first = sessions.mint("2025-06-18", None, &changes, 2);
        let second = sessions.mint("2025-11-25", None, &changes, 2);
        assert_ne!(first.id(), second.id());
        assert!(first
            .id()
            .iter()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
        assert_eq!(first.id().len(), ID_LEN);
        let found = sessions.find(first.id()).expect("known");
        assert_eq!(found.version(), "2025-06-18");
        assert!(
            sessions.find(&first.id()[1..]).is_none(),
            "a prefix is unknown"
        );
        let mut altered = first.id().to_vec();
        altered[0] = if altered[0] == b'0' { b'1' } else { b'0' };
        assert!(sessions.find(&altered).is_none());

        let third = sessions.mint("2025-03-26", None, &changes, 2);
        assert_eq!(sessions.len(), 2);
        assert!(sessions.find(first.id()).is_none(), "the oldest was ended");
        assert!(first.audience().is_ended(), "and its streams with it");
        assert!(!second.audience().is_ended());

        sessions.end(&second, &changes);
        sessions.end(&second, &changes); // ended once: nothing more
        assert_eq!(sessions.len(), 1);
        assert!(second.audience().is_ended());
        assert!(sessions.find(second.id()).is_none());
        assert!(sessions.find(third.id()).is_some());
    }
}
