//! How the caller learns that an agent took its tools: a count of the
//! `tools/list` requests a session answered, and a wait for the first.
//!
//! An ACP agent may answer `session/new` before its MCP client has
//! connected (seen: listings 1–3 s after `session/new`), and an agent that
//! drops the server (an untrusted workspace, a refused bearer) says
//! nothing at all. A prompt sent before the first listing may run without
//! the caller's tools; [`ToolSession::first_listing`] lets the caller wait
//! for it, with a timeout of its choosing, and tell the two apart.
//!
//! The count costs each listing one atomic add; only the first wakes
//! waiters (and takes `Notify`'s lock), so a busy agent's re-listings cost
//! no more than the add.
//!
//! [`ToolSession::first_listing`]: crate::ToolSession::first_listing

use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::Notify;

/// One session's listings.
#[derive(Debug, Default)]
pub(crate) struct Listings {
    served: AtomicU64,
    first: Notify,
}

impl Listings {
    /// A `tools/list` was answered with the surface's tools.
    pub(crate) fn record(&self) {
        if self.served.fetch_add(1, Ordering::AcqRel) == 0 {
            self.first.notify_waiters();
        }
    }

    /// Listings answered so far.
    pub(crate) fn served(&self) -> u64 {
        self.served.load(Ordering::Acquire)
    }

    /// Resolves once at least one listing was answered.
    pub(crate) async fn first(&self) {
        let mut notified = pin!(self.first.notified());
        // Registered before the count is read, so a first listing between
        // the read and the await still wakes this waiter.
        notified.as_mut().enable();
        if self.served() > 0 {
            return;
        }
        notified.await;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn the_first_listing_wakes_a_waiter_and_later_ones_resolve_at_once() {
        let listings = Arc::new(Listings::default());
        let waiter = tokio::spawn({
            let listings = Arc::clone(&listings);
            async move { listings.first().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "nothing listed yet");
        listings.record();
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("woken by the first listing")
            .unwrap();
        listings.record();
        assert_eq!(listings.served(), 2);
        tokio::time::timeout(Duration::from_secs(5), listings.first())
            .await
            .expect("already listed: at once");
    }
}
