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

/// A head not complete `header_read_timeout` after the connection opened is
/// cut off, without a request being served, whether the client stalls
/// half-way (closed exactly at the timeout) or trickles it one byte every
/// 20 ms, each byte well inside any per-read timeout (closed at the
/// timeout, seen by the next write or the one after: a write into a
/// just-closed socket can still succeed).
// Paused clock: the client's pauses and the host's timer run on virtual
// time.
#[tokio::test(start_paused = true)]
async fn a_head_unfinished_at_the_header_timeout_is_cut_off() {
    let fx = Fixture::with(ToolHostConfig {
        header_read_timeout: Duration::from_millis(400),
        ..ToolHostConfig::default()
    })
    .await;

    // Half a head, then nothing: hyper closes without a response.
    let mut stalled = fx.conn().await;
    let started = Instant::now();
    stalled.write(b"POST /mcp HTTP/1.1\r\nHo").await;
    assert!(within(stalled.read_response_unbounded()).await.is_none());
    assert_eq!(started.elapsed(), Duration::from_millis(400));

    // Slowloris: the whole request, one byte every 20 ms.
    let request = fx.post(PING);
    let mut trickle = fx.conn().await;
    let started = Instant::now();
    let mut sent = 0;
    while sent < request.len() && started.elapsed() < Duration::from_secs(3) {
        if trickle.try_write(&request[sent..=sent]).await.is_err() {
            break;
        }
        sent += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let closed_after = started.elapsed();
    assert!(
        (Duration::from_millis(400)..=Duration::from_millis(440)).contains(&closed_after),
        "closed at {closed_after:?} after {sent} of {} bytes, not at the 400 ms timeout",
        request.len()
    );
    assert!(within(trickle.read_response_unbounded()).await.is_none());
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
