//! The read timeouts, over real sockets: `header_read_timeout` (a slow head,
//! a slowloris trickle, an idle keep-alive connection, and the requests in
//! service that hold it off) and `body_read_timeout`. (The call deadline is
//! in `long_calls.rs`, the write stall in `memory.rs`.)
//!
//! Each test pauses Tokio's clock: once the client has sent all it will
//! send, nothing is runnable but the host's timer, so Tokio jumps straight
//! to it and the elapsed (virtual) time is exact.

mod support;

use std::time::Duration;

use embacle_tool_host::ToolHostConfig;
use serde_json::json;
use support::*;
use tokio::time::Instant;

/// Asserts that the host closes `conn`, which sends nothing more, exactly
/// `timeout` after now.
async fn assert_closed_when_idle_for(conn: &mut Conn, timeout: Duration) {
    let idle_since = Instant::now();
    assert!(
        within(conn.closed_by_server()).await,
        "closed, not sent data"
    );
    assert_eq!(idle_since.elapsed(), timeout);
}

/// A client that trickles its headers slower than `header_read_timeout` is
/// disconnected without a request ever being served.
// Paused clock: the client sends half a head and then nothing.
#[tokio::test(start_paused = true)]
async fn header_read_timeout_closes_slow_clients() {
    let fx = Fixture::with(ToolHostConfig {
        header_read_timeout: Duration::from_millis(300),
        ..ToolHostConfig::default()
    })
    .await;
    let started = Instant::now();
    let mut conn = fx.conn().await;
    conn.write(b"POST /mcp HTTP/1.1\r\nHo").await;
    let closed = tokio::time::timeout(Duration::from_secs(5), conn.read_response_unbounded()).await;
    // hyper closes the connection without a response.
    let r = closed.expect("the slow client was not disconnected");
    assert!(r.is_none(), "closed without serving anything");
    assert!(started.elapsed() >= Duration::from_millis(250));
    assert_eq!(started.elapsed(), Duration::from_millis(300));
    assert_eq!(fx.surface.calls(), 0);
}

/// Slowloris: headers trickled one byte at a time, each byte well inside
/// any per-read timeout, are still cut off once `header_read_timeout` has
/// passed in total, without a request being served.
// Paused clock: the client's 20 ms pauses and the host's timer all run on
// virtual time, so the cut-off falls at 400 ms, seen by the next write or
// the one after (a write into a just-closed socket can still succeed).
#[tokio::test(start_paused = true)]
async fn slowloris_is_cut_off_at_the_header_timeout() {
    let fx = Fixture::with(ToolHostConfig {
        header_read_timeout: Duration::from_millis(400),
        ..ToolHostConfig::default()
    })
    .await;
    let request = fx.post(PING);
    let mut conn = fx.conn().await;
    let started = Instant::now();
    let mut sent = 0;
    for byte in &request {
        if conn.try_write(std::slice::from_ref(byte)).await.is_err() {
            break;
        }
        sent += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
        if started.elapsed() > Duration::from_secs(3) {
            break;
        }
    }
    assert!(
        sent < request.len(),
        "the whole trickled request was accepted"
    );
    let closed_after = started.elapsed();
    assert!(
        closed_after >= Duration::from_millis(350),
        "closed too early: {closed_after:?}"
    );
    assert!(
        closed_after < Duration::from_secs(3),
        "not closed at the header timeout"
    );
    assert!(
        (Duration::from_millis(400)..=Duration::from_millis(440)).contains(&closed_after),
        "closed at {closed_after:?}, not at the 400 ms timeout"
    );
    assert!(tokio::time::timeout(STEP, conn.read_response_unbounded())
        .await
        .unwrap()
        .is_none());
    assert_eq!(fx.surface.calls(), 0);
}

/// An idle keep-alive connection is closed once it has sent nothing for
/// `header_read_timeout`, so idle clients cannot hold connection slots.
// Paused clock: after its one request the client is silent.
#[tokio::test(start_paused = true)]
async fn idle_keep_alive_connection_times_out() {
    let fx = Fixture::with(ToolHostConfig {
        header_read_timeout: Duration::from_millis(300),
        ..ToolHostConfig::default()
    })
    .await;
    let mut conn = fx.conn().await;
    assert_eq!(conn.send(&fx.post(PING)).await.status, 200);
    assert_closed_when_idle_for(&mut conn, Duration::from_millis(300)).await;
}

/// A call in service longer than `header_read_timeout` is not cut off by
/// it: the connection has a request in service until the answer is handed
/// over, and times out exactly `header_read_timeout` after that.
// Paused clock: the `quiet` tool sleeps 350 ms, three timeouts' worth, and
// the host's checks of the idle connection fall on virtual time.
#[tokio::test(start_paused = true)]
async fn a_call_in_service_holds_the_header_timeout_off() {
    let fx = Fixture::with(ToolHostConfig {
        header_read_timeout: Duration::from_millis(100),
        ..ToolHostConfig::default()
    })
    .await;
    let mut conn = fx.conn().await;
    let started = Instant::now();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "quiet", "arguments": {}}});
    let r = conn.send(&fx.post(&body.to_string())).await;
    assert_eq!((r.status, r.first_text()), (200, json!("done quietly")));
    assert_eq!(started.elapsed(), Duration::from_millis(350));
    assert_closed_when_idle_for(&mut conn, Duration::from_millis(100)).await;
}

/// A streamed answer (SSE, with keep-alive comments) longer than
/// `header_read_timeout` is sent to its end, and the connection then
/// serves another request before timing out a whole timeout after it.
// Paused clock: as above; comments every 40 ms of the tool's 350.
#[tokio::test(start_paused = true)]
async fn a_stream_holds_the_header_timeout_off() {
    let fx = Fixture::with(ToolHostConfig {
        header_read_timeout: Duration::from_millis(100),
        sse_keep_alive: Duration::from_millis(40),
        ..ToolHostConfig::default()
    })
    .await;
    let mut conn = fx.conn().await;
    let started = Instant::now();
    let request = fx.post(&call_with_token(1, "quiet", json!("t")).to_string());
    let events = conn.send_streaming(&request).await.rest().await;
    assert_eq!(started.elapsed(), Duration::from_millis(350));
    let last = events.iter().rfind(|e| !e.starts_with(':')).unwrap();
    assert_eq!(
        event_json(last)["result"]["content"][0]["text"],
        "done quietly"
    );
    assert!(events.iter().filter(|e| e.starts_with(':')).count() >= 8);
    tokio::time::sleep(Duration::from_millis(90)).await;
    assert_eq!(conn.send(&fx.post(PING)).await.status, 200);
    assert_closed_when_idle_for(&mut conn, Duration::from_millis(100)).await;
}

/// A body that never finishes gets 408 after `body_read_timeout`, and the
/// connection is closed; the surface is never reached.
// Paused clock: the client sends a head and part of the body, then
// nothing.
#[tokio::test(start_paused = true)]
async fn unfinished_body_times_out() {
    let fx = Fixture::with(ToolHostConfig {
        body_read_timeout: Duration::from_millis(300),
        ..ToolHostConfig::default()
    })
    .await;
    let mut conn = fx.conn().await;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{{\"jsonrpc\":",
        fx.addr,
        fx.auth()
    );
    let started = Instant::now();
    conn.write(head.as_bytes()).await;
    let r = conn.read_response().await;
    assert_eq!((r.status, r.error_code()), (408, -32600));
    assert_eq!(started.elapsed(), Duration::from_millis(300));
    assert!(within(conn.closed_by_server()).await);
    assert_eq!(fx.surface.calls(), 0);
}
