//! A stream's audience: the client it announces to, and what that client
//! has been told.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// One client's streams: what they have announced, so that each change
/// reaches the client once, on one of them.
#[derive(Debug, Default)]
pub(crate) struct Audience {
    /// The newest generation claimed by one of its streams for announcing.
    pub(super) announced: AtomicU64,
    /// The newest generation one of its streams has written to its socket:
    /// what a call that changed the list waits for.
    pub(super) delivered: AtomicU64,
    /// Its streams open now; changed only under `ListChanges::listening`.
    pub(super) open: AtomicUsize,
    /// Raised when its MCP session ends: its streams end too.
    pub(super) ended: AtomicBool,
}

impl Audience {
    /// An audience to which every generation up to `announced` counts as
    /// told.
    pub(crate) fn starting_at(announced: u64) -> Arc<Self> {
        Arc::new(Self {
            announced: AtomicU64::new(announced),
            delivered: AtomicU64::new(announced),
            ..Self::default()
        })
    }

    /// The newest generation announced: where a new stream of the audience
    /// starts, so that a change whose stream closed before announcing it is
    /// announced on the next one.
    pub(crate) fn announced(&self) -> u64 {
        self.announced.load(Ordering::SeqCst)
    }

    /// Claims `generation` for the one stream that announces it: true for
    /// the first stream of the audience to claim it (or a newer one).
    pub(crate) fn claim(&self, generation: u64) -> bool {
        self.announced.fetch_max(generation, Ordering::AcqRel) < generation
    }

    pub(crate) fn is_ended(&self) -> bool {
        self.ended.load(Ordering::SeqCst)
    }
}
