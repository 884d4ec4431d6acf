//! Stopping the host: immediately, gracefully (with calls in flight, plain
//! or streaming), and by dropping it.

mod support;

use std::time::Duration;

use embacle_tool_host::{ErrorKind, ToolHost};
use serde_json::json;
use support::*;

/// The drain deadline of the graceful shutdowns that a stuck call outlives.
const DRAIN: Duration = Duration::from_millis(200);

/// Shuts `host` down gracefully while a call is stuck: a timeout, reported
/// at the deadline exactly (the tests that use it pause the clock).
async fn drain_past_the_deadline(host: &ToolHost) {
    let began = tokio::time::Instant::now();
    let err = within(host.shutdown_within(DRAIN)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ShutdownForced);
    assert_eq!(began.elapsed(), DRAIN);
}

/// Polls until connecting to `addr` is refused, for up to a second; true
/// once it is.
async fn listener_gone(addr: std::net::SocketAddr) -> bool {
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(addr).await.is_err() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

/// `shutdown` stops accepting and closes connections; it is idempotent and
/// can be called from any clone; opening a session afterwards fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_is_idempotent() {
    let mut fx = Fixture::new().await;
    let mut idle = fx.conn().await;
    assert_eq!(idle.send(&fx.post(PING)).await.status, 200);
    let clone = fx.host.clone();
    within(fx.host.shutdown()).await;
    within(clone.shutdown()).await;
    within(fx.host.shutdown()).await;
    assert!(
        within(idle.closed_by_server()).await,
        "idle keep-alive connection closed"
    );
    assert!(
        tokio::net::TcpStream::connect(fx.addr).await.is_err(),
        "listener is gone"
    );
    assert_eq!(
        fx.host
            .open_session(RecordingSurface::new())
            .unwrap_err()
            .kind(),
        ErrorKind::ShutDown
    );
    // The guard still revokes cleanly after the host stopped.
    assert_eq!(fx.host.live_sessions(), 1);
    fx.revoke();
    assert_eq!(fx.host.live_sessions(), 0);
}

/// A graceful shutdown lets an in-flight call finish and be answered, then
/// returns Ok; no new connection is accepted meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_drains_in_flight_calls() {
    let fx = Fixture::new().await;
    let started = fx.surface.slow_started.notified();
    let call = fx.spawn_call(1, "slow", json!({}));
    within(started).await;
    let drain = {
        let host = fx.host.clone();
        tokio::spawn(async move { host.shutdown_within(Duration::from_secs(5)).await })
    };
    // Wait until the listener is closed, then let the call finish.
    assert!(
        listener_gone(fx.addr).await,
        "draining host accepts nothing new"
    );
    fx.surface.slow_release.add_permits(1);
    let r = within(call).await.unwrap();
    assert_eq!(r.first_text(), "slow done");
    within(drain).await.unwrap().expect("drained in time");
    assert_eq!(fx.session().calls_served(), 1);
}

/// Idle keep-alive connections — served before, waiting for their next
/// request — are closed at once by a graceful shutdown, which then returns
/// Ok well before its deadline and before any header timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_closes_idle_connections_at_once() {
    let fx = Fixture::new().await;
    let mut idle = Vec::new();
    for id in 0..3 {
        let mut conn = fx.conn().await;
        let r = conn
            .send(&fx.post(&call_body(id, "echo", json!({"text": "x"})).to_string()))
            .await;
        assert_eq!(r.status, 200);
        idle.push(conn);
    }
    let started = std::time::Instant::now();
    within(fx.host.shutdown_within(Duration::from_secs(20)))
        .await
        .expect("drained in time");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    for mut conn in idle {
        assert!(
            within(conn.closed_by_server()).await,
            "an idle connection stays open"
        );
    }
    assert_eq!(fx.session().calls_served(), 3);
}

/// A graceful shutdown whose deadline passes closes the stuck call's
/// connection (the call's future is dropped) and reports a timeout — at
/// the deadline exactly.
// Paused clock: the stuck call and its client send nothing more, so Tokio
// jumps straight to the drain deadline and the elapsed time is exact.
#[tokio::test(start_paused = true)]
async fn graceful_shutdown_deadline() {
    let fx = Fixture::new().await;
    let started = fx.surface.slow_started.notified();
    let mut conn = fx.conn().await;
    conn.write(&fx.post(&call_body(1, "slow", json!({})).to_string()))
        .await;
    within(started).await;
    drain_past_the_deadline(&fx.host).await;
    assert!(
        within(conn.read_response_unbounded()).await.is_none(),
        "closed without an answer"
    );
    // The stuck call never completed, so it was not served.
    assert_eq!(fx.session().calls_served(), 0);
}

/// A graceful shutdown during a streaming call gives it the drain deadline,
/// then cancels it; nothing leaks: calls in flight back to zero, and the
/// session count back to zero once the guard goes.
// Paused clock: the hanging tool and its client are silent, so the drain
// deadline passes exactly.
#[tokio::test(start_paused = true)]
async fn shutdown_during_a_streaming_call() {
    let mut fx = Fixture::new().await;
    let mut conn = fx.conn().await;
    let started = fx.surface.hang_started.notified();
    let mut stream = conn
        .send_streaming(&fx.post(&call_with_token(1, "hang", json!("t")).to_string()))
        .await;
    within(started).await;
    assert_eq!(fx.host.calls_in_flight(), 1);
    drain_past_the_deadline(&fx.host).await;
    assert_eq!(stream.next_event().await, None);
    assert!(fx.surface.hang_was_dropped());
    assert!(fx.surface.hang_was_cancelled());
    assert_eq!(fx.host.calls_in_flight(), 0);
    fx.revoke();
    assert_eq!(fx.host.live_sessions(), 0);
}

/// Dropping every ToolHost clone stops the listener.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_host_stops_it() {
    let host = host().await;
    let addr = host.local_addr();
    drop(host);
    assert!(
        listener_gone(addr).await,
        "the listener closed after the last clone dropped"
    );
}
