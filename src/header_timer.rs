//! hyper's header read timeout, on one tokio timer per connection.
//!
//! hyper asks its timer for a new sleep each time it starts reading a
//! request head, polls it while the head is incomplete, and drops it once
//! the head is in. With hyper-util's `TokioTimer`, every keep-alive request
//! therefore makes a boxed tokio `Sleep`, registers it in tokio's timer
//! wheel while it waits for the next head, and takes it out again. This
//! module saves about 580 of the server's instructions per keep-alive call
//! (callgrind, `benches/server_cpu.rs`), 2% of the host's cost per call.
//!
//! [`ConnectionTimer`] keeps one tokio `Sleep` per connection that stays
//! registered. A head's [`HeadSleep`] only records its deadline; when the
//! shared timer fires before that deadline (it was armed for an earlier
//! head), it is re-armed for it then. A connection's deadlines only grow —
//! each is the moment its head began plus the same timeout — so the shared
//! timer is never armed later than the deadline being waited for: the
//! timeout fires exactly when `TokioTimer`'s would, and the timer is reset
//! at most once per timeout period instead of once per request.
//!
//! One connection's sleeps are polled from its one task (hyper's HTTP/1
//! dispatcher), so the shared `Sleep` always wakes the task that waits.
//! Each connection needs its own timer: see `transport::connection_builder`.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{ready, Context, Poll, Waker};
use std::time::Duration;

use hyper::rt::{Sleep, Timer};
use tokio::time::Instant;

/// One connection's timer (see the module doc).
#[derive(Debug, Default)]
pub(crate) struct ConnectionTimer {
    shared: Arc<Mutex<Shared>>,
}

/// The state a connection's sleeps share.
#[derive(Debug, Default)]
struct Shared {
    /// The registered tokio timer, made on the first head that has to wait.
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
    /// The waker the timer was last polled with: while it is the waiting
    /// task's and the timer has not fired, polling the timer again would
    /// only register the same waker once more, so it is skipped.
    registered: Option<Waker>,
}

impl Timer for ConnectionTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Sleep>> {
        let deadline = Instant::now()
            .checked_add(duration)
            .unwrap_or_else(far_future);
        self.sleep_at(deadline)
    }

    fn sleep_until(&self, deadline: std::time::Instant) -> Pin<Box<dyn Sleep>> {
        self.sleep_at(Instant::from_std(deadline))
    }

    fn now(&self) -> std::time::Instant {
        // tokio's clock, which tests can pause, as `TokioTimer`'s is.
        Instant::now().into_std()
    }

    fn reset(&self, sleep: &mut Pin<Box<dyn Sleep>>, new_deadline: std::time::Instant) {
        *sleep = self.sleep_until(new_deadline);
    }
}

impl ConnectionTimer {
    fn sleep_at(&self, deadline: Instant) -> Pin<Box<dyn Sleep>> {
        Box::pin(HeadSleep {
            shared: Arc::clone(&self.shared),
            deadline,
        })
    }
}

/// What tokio's own `timeout` uses for a deadline past its clock's range:
/// about 30 years from now.
fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86_400 * 365 * 30)
}

/// One head's wait: its deadline, on the connection's shared timer.
#[derive(Debug)]
struct HeadSleep {
    shared: Arc<Mutex<Shared>>,
    deadline: Instant,
}

impl Future for HeadSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let deadline = self.deadline;
        // Only this connection's task ever takes the lock.
        let mut shared = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        let Shared { timer, registered } = &mut *shared;
        let timer = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        // Armed for a later deadline (never in hyper's use, where they only
        // grow): pull it in, so this wait cannot end late.
        if timer.deadline() > deadline {
            timer.as_mut().reset(deadline);
        } else if !timer.is_elapsed()
            && registered.as_ref().is_some_and(|w| w.will_wake(cx.waker()))
        {
            // Armed no later than this deadline, for this task, and not
            // fired: it will wake this task in time.
            return Poll::Pending;
        }
        // Registered by the poll below, which is always a full one.
        *registered = Some(cx.waker().clone());
        loop {
            // Outside tokio's task budget: a budget-limited poll may return
            // `Pending` without registering the waker, and the skip above
            // would then never poll again.
            ready!(Pin::new(&mut tokio::task::unconstrained(timer.as_mut())).poll(cx));
            if timer.deadline() >= deadline {
                return Poll::Ready(());
            }
            // It fired for an earlier head: wait on for this one.
            timer.as_mut().reset(deadline);
        }
    }
}

impl Sleep for HeadSleep {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each sleep ends at its own deadline, on one shared timer that
    /// earlier, finished heads armed.
    #[tokio::test(start_paused = true)]
    async fn each_sleep_ends_at_its_deadline() {
        let timer = ConnectionTimer::default();
        let start = Instant::now();
        let limit = Duration::from_secs(30);
        // The first head waits a little, then arrives: its sleep is
        // dropped unfinished, leaving the shared timer armed at 30 s.
        let mut first = timer.sleep(limit);
        assert!(futures_poll(&mut first).is_pending());
        drop(first);
        // The next head begins 10 s later and never arrives.
        tokio::time::advance(Duration::from_secs(10)).await;
        let second = timer.sleep_until((Instant::now() + limit).into_std());
        second.await;
        assert_eq!(start.elapsed(), Duration::from_secs(40));
        // An earlier deadline than the armed one is honoured too.
        let late = timer.sleep(Duration::from_secs(100));
        let mut late = late;
        assert!(futures_poll(&mut late).is_pending());
        timer.sleep(Duration::from_secs(1)).await;
        assert_eq!(start.elapsed(), Duration::from_secs(41));
        // A deadline past the clock's range is far, not a panic.
        let mut never = timer.sleep(Duration::MAX);
        assert!(futures_poll(&mut never).is_pending());
    }

    /// A sleep polled again by the same task, which skips the shared
    /// timer, still wakes that task at its deadline.
    #[tokio::test(start_paused = true)]
    async fn a_skipped_poll_still_wakes_the_task() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::task::Wake;

        struct Count(AtomicUsize);
        impl Wake for Count {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(Arc::clone(&count));
        let mut cx = Context::from_waker(&waker);
        let timer = ConnectionTimer::default();
        let mut sleep = timer.sleep(Duration::from_secs(5));
        assert!(sleep.as_mut().poll(&mut cx).is_pending());
        assert!(sleep.as_mut().poll(&mut cx).is_pending());
        tokio::time::advance(Duration::from_secs(4)).await;
        assert!(sleep.as_mut().poll(&mut cx).is_pending());
        assert_eq!(count.0.load(Ordering::SeqCst), 0);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert!(sleep.as_mut().poll(&mut cx).is_ready());
    }

    /// A sleep first polled when its task's budget is spent (hyper reads
    /// the next head in the same poll as a busy call's answer) still ends
    /// at its deadline: the shared timer is registered regardless.
    #[tokio::test(start_paused = true)]
    async fn a_poll_on_a_spent_budget_still_registers() {
        let timer = ConnectionTimer::default();
        let mut sleep = timer.sleep(Duration::from_secs(5));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for _ in 0..1_000 {
            tx.send(()).unwrap();
        }
        std::future::poll_fn(|cx| {
            // Each ready receive spends a unit of the task's budget.
            while let Poll::Ready(Some(())) = rx.poll_recv(cx) {}
            assert!(sleep.as_mut().poll(cx).is_pending());
            Poll::Ready(())
        })
        .await;
        let start = Instant::now();
        tokio::time::timeout(Duration::from_secs(60), sleep)
            .await
            .expect("the sleep ended at its deadline");
        assert!(start.elapsed() <= Duration::from_secs(5));
    }

    fn futures_poll(sleep: &mut Pin<Box<dyn Sleep>>) -> Poll<()> {
        let waker = std::task::Waker::noop();
        sleep.as_mut().poll(&mut Context::from_waker(waker))
    }
}
