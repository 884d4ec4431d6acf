//! When a stream may announce a change: at once, or — within [`COALESCE`]
//! of its last announcement — at the end of that window, for every change
//! the window gathered (leading-edge coalescing; the folder's map says
//! why). The notification stream (`http/notification_stream.rs`) asks it
//! on each poll; the timing is the list changes' own.

use std::future::Future;
use std::pin::Pin;
use std::task::Context;
use std::time::Duration;

use tokio::time::{Instant, Sleep};

/// After an announcement, how long further changes are gathered into the
/// next one, so that a burst of signals costs the client two listings at
/// most.
pub(crate) const COALESCE: Duration = Duration::from_millis(20);

/// One stream's coalescing window.
#[derive(Debug, Default)]
pub(crate) struct AnnouncementWindow {
    /// The end of the window the last announcement opened: changes seen
    /// before it wait for it.
    quiet_until: Option<Instant>,
    /// Armed when a change is seen inside the window, to wake the stream
    /// when it closes.
    timer: Option<Pin<Box<Sleep>>>,
}

impl AnnouncementWindow {
    /// Whether a change may be announced now: no announcement is recent,
    /// or the window the last one opened has closed (else the task of `cx`
    /// is woken when it does).
    pub(crate) fn is_closed(&mut self, cx: &mut Context<'_>) -> bool {
        let Some(until) = self.quiet_until else {
            return true;
        };
        // The clock first: a window that has closed needs no timer.
        let closed = Instant::now() >= until || {
            let timer = self
                .timer
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(until)));
            timer.as_mut().poll(cx).is_ready()
        };
        if closed {
            self.timer = None;
        }
        closed
    }

    /// A change is being announced: the window opens now.
    pub(crate) fn open(&mut self) {
        self.quiet_until = Some(Instant::now() + COALESCE);
    }
}
