//! Stopping the host: immediately, gracefully, and by dropping it.

mod support;

use std::time::Duration;

use serde_json::json;
use support::*;

/// `shutdown` stops accepting and closes connections; it is idempotent and
/// can be called from any clone; opening a session afterwards fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_is_idempotent() {
    let host = host().await;
    let session = host.open_session(RecordingSurface::new()).unwrap();
    let addr = host.local_addr();
    let mut idle = Conn::open(addr).await;
    let ping = post(
        addr,
        &bearer_of(&session),
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
    );
    assert_eq!(idle.send(&ping).await.status, 200);
    let clone = host.clone();
    within(host.shutdown()).await;
    within(clone.shutdown()).await;
    within(host.shutdown()).await;
    assert!(
        within(idle.closed_by_server()).await,
        "idle keep-alive connection closed"
    );
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "listener is gone"
    );
    assert!(host
        .open_session(RecordingSurface::new())
        .unwrap_err()
        .is_shut_down());
    // The guard still revokes cleanly after the host stopped.
    assert_eq!(host.open_sessions(), 1);
    drop(session);
    assert_eq!(host.open_sessions(), 0);
}

/// A graceful shutdown lets an in-flight call finish and be answered, then
/// returns Ok; no new connection is accepted meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_drains_in_flight_calls() {
    let host = host().await;
    let surface = RecordingSurface::new();
    let session = host.open_session(surface.clone()).unwrap();
    let addr = host.local_addr();
    let bearer = bearer_of(&session);
    let started = surface.slow_started.notified();
    let call =
        tokio::spawn(async move { rpc(addr, &bearer, call_body(1, "slow", json!({}))).await });
    within(started).await;
    let drain = {
        let host = host.clone();
        tokio::spawn(async move { host.shutdown_graceful(Duration::from_secs(5)).await })
    };
    // Wait until the listener is closed, then let the call finish.
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(addr).await.is_err() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "draining host accepts nothing new"
    );
    surface.slow_release.add_permits(1);
    let r = within(call).await.unwrap();
    assert_eq!(r.json()["result"]["content"][0]["text"], "slow done");
    within(drain).await.unwrap().expect("drained in time");
    assert_eq!(session.calls_served(), 1);
}

/// A graceful shutdown whose deadline passes closes the stuck call's
/// connection (the call's future is dropped) and reports a timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_deadline() {
    let host = host().await;
    let surface = RecordingSurface::new();
    let session = host.open_session(surface.clone()).unwrap();
    let addr = host.local_addr();
    let bearer = bearer_of(&session);
    let started = surface.slow_started.notified();
    let mut conn = Conn::open(addr).await;
    conn.write(&post(
        addr,
        &bearer,
        &call_body(1, "slow", json!({})).to_string(),
    ))
    .await;
    within(started).await;
    let err = within(host.shutdown_graceful(Duration::from_millis(200)))
        .await
        .unwrap_err();
    assert!(err.is_timeout());
    assert!(
        within(conn.read_response_unbounded()).await.is_none(),
        "closed without an answer"
    );
    // The stuck call never completed, so it was not served.
    assert_eq!(session.calls_served(), 0);
}

/// Dropping every ToolHost clone stops the listener.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_host_stops_it() {
    let host = host().await;
    let addr = host.local_addr();
    drop(host);
    let mut refused = false;
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(addr).await.is_err() {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(refused, "the listener closed after the last clone dropped");
}
