//! Graceful shutdown: every connection finishes the request it is serving,
//! then closes; the host waits until all have.
//!
//! hyper-util's `GracefulShutdown` does this by polling a `watch` change
//! future on every poll of every connection, which takes the watch's waiter
//! lock each time: several times per request, for a signal sent once in a
//! host's life. Here each connection registers its task's waker with the
//! watch once (again only if its task's waker changes), and otherwise reads
//! one atomic flag per poll (benches/JOURNAL.md, "Fast paths re-judged", has
//! what that is worth).

use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::Waker;

use tokio::sync::watch;

/// The host's side: starts a drain and waits for its end.
#[derive(Debug, Default)]
pub(crate) struct Drain {
    draining: Arc<AtomicBool>,
    /// Sent once, to wake every connection; each holds a receiver, so
    /// `closed` resolves once all of them have ended.
    wake: watch::Sender<()>,
}

impl Drain {
    /// Serves `connection` so that, once the drain starts, it is asked
    /// (with `graceful_shutdown`, once) to finish what it is serving and
    /// close.
    pub(crate) fn watch<C: Future, F: Fn(Pin<&mut C>)>(
        &self,
        connection: C,
        graceful_shutdown: F,
    ) -> impl Future<Output = C::Output> + use<C, F> {
        let draining = Arc::clone(&self.draining);
        let mut wake = self.wake.subscribe();
        async move {
            let mut connection = pin!(connection);
            let mut woken = pin!(wake.changed());
            // The waker `woken` was last polled with: it stays registered
            // until the drain wakes it. `woken` is polled no more once it is
            // ready (the drain began, or the host dropped its side).
            let mut registered: Option<Waker> = None;
            let mut woken_ready = false;
            let mut asked = false;
            poll_fn(|cx| {
                if !asked {
                    if !woken_ready && !registered.as_ref().is_some_and(|w| w.will_wake(cx.waker()))
                    {
                        // Registered before the flag is read, so a drain that
                        // starts in between still wakes this task.
                        // Outside tokio's task budget: a poll cut short by a
                        // spent budget returns `Pending` without registering
                        // the waker, and the skip above would then never poll
                        // again.
                        let mut full = tokio::task::unconstrained(woken.as_mut());
                        woken_ready = Pin::new(&mut full).poll(cx).is_ready();
                        registered = Some(cx.waker().clone());
                    }
                    if draining.load(Ordering::Acquire) {
                        asked = true;
                        graceful_shutdown(connection.as_mut());
                    }
                }
                connection.as_mut().poll(cx)
            })
            .await
        }
    }

    /// Asks every connection to finish, and resolves once all have ended.
    pub(crate) async fn drain(self) {
        // The flag before the wake: a connection woken, or polled for any
        // other reason, from now on sees it.
        self.draining.store(true, Ordering::Release);
        let _ = self.wake.send(());
        self.wake.closed().await;
    }
}
