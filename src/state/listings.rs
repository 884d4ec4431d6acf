//! What a session's listings told its agents: how many were answered (and
//! a wait for the first), and which tools the latest one declared an
//! `outputSchema` for.
//!
//! An ACP agent may answer `session/new` before its MCP client has
//! connected (seen: listings 1–3 s after `session/new`), and an agent that
//! drops the server (an untrusted workspace, a refused bearer) says
//! nothing at all. A prompt sent before the first listing may run without
//! the caller's tools; [`ToolSession::first_listing`] lets the caller wait
//! for it, with a timeout of its choosing, and tell the two apart.
//!
//! The count costs each listing one atomic add and a wake of the waiters
//! (`Notify`'s lock): the caller's first-listing wait, and a call that
//! changed the list and waits for its client to re-list (see
//! `list_changed.rs`, "After the re-listing").
//!
//! A client that listed a tool with an `outputSchema` checks each of that
//! tool's results against it, and treats a result without
//! `structuredContent` as an error (the TypeScript SDK's `callTool`, so
//! Claude and Gemini CLI). What it checks against is the schema *it
//! listed*, so the host keeps the names from the latest listing: a call's
//! result is judged by the listing the client holds, not by the live list.
//! Surfaces that declare no `outputSchema` never take the lock.
//!
//! [`ToolSession::first_listing`]: crate::ToolSession::first_listing

use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use tokio::sync::Notify;

use crate::protocol::Era;
use crate::tool::Tool;

/// One session's listings.
#[derive(Debug, Default)]
pub(crate) struct Listings {
    served: AtomicU64,
    listed: Notify,
    /// Whether `with_output_schema` may be non-empty; read without the lock.
    any_output_schema: AtomicBool,
    /// The tools the latest listing showed with an `outputSchema`.
    with_output_schema: Mutex<Vec<Box<str>>>,
}

impl Listings {
    /// A `tools/list` in revision `era` was answered with `tools`.
    pub(crate) fn record(&self, tools: &[Tool], era: Era) {
        let declaring =
            |tool: &&Tool| era.has_structured_content() && tool.output_schema().is_some();
        let any = tools.iter().any(|tool| declaring(&tool));
        if any || self.any_output_schema.load(Ordering::Acquire) {
            let names = tools
                .iter()
                .filter(declaring)
                .map(|t| t.name().into())
                .collect();
            *self
                .with_output_schema
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = names;
            self.any_output_schema.store(any, Ordering::Release);
        }
        self.served.fetch_add(1, Ordering::AcqRel);
        self.listed.notify_waiters();
    }

    /// Whether the latest listing showed `name` with an `outputSchema`.
    pub(crate) fn declared_output_schema(&self, name: &str) -> bool {
        self.any_output_schema.load(Ordering::Acquire)
            && self
                .with_output_schema
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .any(|declared| &**declared == name)
    }

    /// Listings answered so far.
    pub(crate) fn served(&self) -> u64 {
        self.served.load(Ordering::Acquire)
    }

    /// Resolves once at least one listing was answered.
    pub(crate) async fn first(&self) {
        self.more_than(0).await;
    }

    /// Resolves once more than `count` listings were answered.
    pub(crate) async fn more_than(&self, count: u64) {
        loop {
            let mut notified = pin!(self.listed.notified());
            // Registered before the count is read, so a listing between the
            // read and the await still wakes this waiter.
            notified.as_mut().enable();
            if self.served() > count {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use serde_json::json;

    use super::*;

    const MODERN: Era = Era::Modern("2026-07-28");

    #[tokio::test]
    async fn the_first_listing_wakes_a_waiter_and_later_ones_resolve_at_once() {
        let listings = Arc::new(Listings::default());
        let waiter = tokio::spawn({
            let listings = Arc::clone(&listings);
            async move { listings.first().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "nothing listed yet");
        listings.record(&[], MODERN);
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("woken by the first listing")
            .unwrap();
        listings.record(&[], MODERN);
        assert_eq!(listings.served(), 2);
        tokio::time::timeout(Duration::from_secs(5), listings.first())
            .await
            .expect("already listed: at once");
    }

    #[test]
    fn the_latest_listing_decides_which_tools_declared_an_output_schema() {
        let schema = json!({"type": "object"});
        let typed = Tool::new("typed", "", schema.clone())
            .unwrap()
            .with_output_schema(schema.clone())
            .unwrap();
        let plain = Tool::new("plain", "", schema).unwrap();
        let listings = Listings::default();
        assert!(!listings.declared_output_schema("typed"), "nothing listed");
        listings.record(&[typed.clone(), plain.clone()], MODERN);
        assert!(listings.declared_output_schema("typed"));
        assert!(!listings.declared_output_schema("plain"));
        // 2025-03-26 has no outputSchema: that listing declared none.
        listings.record(&[typed.clone(), plain.clone()], Era::Legacy("2025-03-26"));
        assert!(!listings.declared_output_schema("typed"));
        listings.record(&[typed], Era::Legacy("2025-06-18"));
        assert!(listings.declared_output_schema("typed"));
        listings.record(&[plain], MODERN);
        assert!(!listings.declared_output_schema("typed"), "withdrawn");
    }
}
