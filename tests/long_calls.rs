//! Long tool calls over real HTTP: progress on SSE, keep-alive comments,
//! cancellation by notification, by guard drop and by disconnect (in both
//! eras), and the call deadline. (A shutdown during a streaming call is in
//! `shutdown.rs`.)

mod support;

use std::sync::Arc;
use std::time::Duration;

use embacle_tool_host::{StaticSurface, Tool, ToolHostConfig};
use serde_json::{json, Value};
use support::*;

/// With a progress token and SSE accepted, the response is an event stream:
/// three strictly increasing progress events carrying the token, then the
/// final response, then the end of the stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_streams_then_result() {
    let fx = Fixture::new().await;
    let mut conn = fx.conn().await;
    let mut stream = conn
        .send_streaming(&fx.post(&call_with_token(7, "count", json!("tok-1")).to_string()))
        .await;
    assert_eq!(stream.status, 200);
    assert_eq!(stream.header("content-type"), Some("text/event-stream"));
    assert_eq!(stream.header("x-accel-buffering"), Some("no"));
    let events: Vec<Value> = stream.rest().await.iter().map(|e| event_json(e)).collect();
    assert_eq!(events.len(), 4, "{events:?}");
    let mut last = 0.0;
    for (i, event) in events[..3].iter().enumerate() {
        assert_eq!(event["method"], "notifications/progress");
        assert!(event.get("id").is_none());
        let params = &event["params"];
        assert_eq!(params["progressToken"], "tok-1");
        let progress = params["progress"].as_f64().unwrap();
        assert!(progress > last, "strictly increasing: {events:?}");
        last = progress;
        assert_eq!(params["total"], 3.0);
        assert_eq!(params["message"], format!("step {}", i + 1));
    }
    assert_eq!(
        events[3],
        json!({"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "counted"}]}})
    );
    assert_eq!(fx.session().calls_served(), 1);
    // The connection stays usable after the stream.
    let r = conn
        .send(&fx.post(r#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#))
        .await;
    assert_eq!(r.status, 200);
}

/// Without a token, or without SSE in Accept, progress is a no-op and the
/// response stays plain JSON.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_token_or_no_sse_means_plain_json() {
    let fx = Fixture::new().await;
    let r = fx.call(1, "count", json!({})).await;
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.first_text(), "counted");
    let body = call_with_token(2, "count", json!(5)).to_string();
    let (host, auth) = (fx.addr.to_string(), fx.auth());
    let headers = [
        ("Host", host.as_str()),
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
        ("Accept", "application/json"),
    ];
    let r = fx
        .send(&request("POST /mcp HTTP/1.1", &headers, Some(&body)))
        .await;
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.first_text(), "counted");
    assert_eq!(fx.session().calls_served(), 2);
}

/// Long silences on a stream get `:` keep-alive comments: one every
/// `sse_keep_alive` of silence, exactly.
// Paused clock: the `quiet` tool sleeps and the client only reads, so the
// comments fall at exactly 100, 200 and 300 ms of the tool's 350.
#[tokio::test(start_paused = true)]
async fn keep_alive_comments_on_silence() {
    let fx = Fixture::with(ToolHostConfig {
        sse_keep_alive: Duration::from_millis(100),
        ..ToolHostConfig::default()
    })
    .await;
    let mut conn = fx.conn().await;
    let mut stream = conn
        .send_streaming(&fx.post(&call_with_token(1, "quiet", json!(1)).to_string()))
        .await;
    let events = stream.rest().await;
    let comments = events.iter().filter(|e| e.starts_with(':')).count();
    assert_eq!(comments, 3, "one per 100 ms of the 350 ms silence");
    let last = events.iter().rfind(|e| !e.starts_with(':')).unwrap();
    assert_eq!(
        event_json(last)["result"]["content"][0]["text"],
        "done quietly"
    );
}

/// notifications/cancelled with the call's request id (same bearer) drops
/// the call's future within a bounded time, raises its signal, and the POST
/// is answered 202; so is the call itself, with no JSON-RPC response.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_by_notification() {
    let fx = Fixture::new().await;
    let started = fx.surface.hang_started.notified();
    let call = fx.spawn_call(41, "hang", json!({}));
    within(started).await;
    // Ignored: wrong id type, unknown id, malformed params.
    for params in [
        json!({"requestId": "41"}),
        json!({"requestId": 999}),
        json!({"requestId": null}),
        json!([]),
    ] {
        assert_eq!(fx.rpc(cancelled(params)).await.status, 202);
    }
    assert!(!fx.surface.hang_was_dropped());
    assert_eq!(fx.host.calls_in_flight(), 1);
    let r = fx
        .rpc(cancelled(
            json!({"requestId": 41, "reason": "user aborted"}),
        ))
        .await;
    assert_eq!((r.status, r.body.len()), (202, 0));
    let r = within(call).await.unwrap();
    assert_eq!(
        (r.status, r.body.len()),
        (202, 0),
        "a cancelled request gets no response"
    );
    assert!(
        fx.surface.hang_was_dropped(),
        "the surface's future was dropped"
    );
    assert!(fx.surface.hang_was_cancelled());
    assert_eq!(fx.host.calls_in_flight(), 0);
    assert_eq!(fx.session().calls_served(), 0);
    // A cancellation for a finished call is ignored.
    let r = fx.rpc(cancelled(json!({"requestId": 41}))).await;
    assert_eq!(r.status, 202);
}

/// Another session's bearer cannot cancel this session's call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_is_per_session() {
    let mut fx = Fixture::new().await;
    let other = fx.host.open_session(RecordingSurface::new()).unwrap();
    let started = fx.surface.hang_started.notified();
    let call = fx.spawn_call(5, "hang", json!({}));
    within(started).await;
    let note = cancelled(json!({"requestId": 5}));
    assert_eq!(rpc(fx.addr, &bearer_of(&other), note).await.status, 202);
    // A cancellation is applied while its notification is dispatched,
    // before the 202 is written: had it reached this call, the call's
    // signal would be raised by now.
    assert!(
        !fx.surface.hang_was_cancelled(),
        "not cancelled by another session"
    );
    fx.revoke(); // cancels it
    assert!(fx.surface.hang_was_cancelled());
    assert_eq!(within(call).await.unwrap().status, 202);
    assert!(fx.surface.hang_was_dropped());
}

/// Dropping the guard ends a streaming call's stream without a response.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guard_drop_ends_a_stream() {
    let mut fx = Fixture::new().await;
    let mut conn = fx.conn().await;
    let started = fx.surface.hang_started.notified();
    let request = fx.post(&call_with_token(1, "hang", json!("t")).to_string());
    let mut stream = conn.send_streaming(&request).await;
    within(started).await;
    fx.revoke();
    assert_eq!(stream.next_event().await, None, "nothing more is sent");
    assert!(fx.surface.hang_was_dropped());
    assert_eq!(fx.host.calls_in_flight(), 0);
}

/// A client that disconnects mid-call (legacy era) has its tool's future
/// dropped: nobody is left to answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disconnect_mid_call_drops_the_tool() {
    let fx = Fixture::new().await;
    let mut conn = fx.conn().await;
    conn.write(&fx.post(&call_body(1, "hang", json!({})).to_string()))
        .await;
    wait_until("the call starts", || fx.surface.calls() > 0).await;
    drop(conn);
    wait_until("the tool future is dropped with its connection", || {
        fx.surface.hang_was_dropped()
    })
    .await;
    assert_eq!(fx.host.calls_in_flight(), 0);
}

/// Closing the connection cancels the call (2026-07-28 era): the tool's
/// future is dropped promptly, and nothing more is sent for that request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disconnect_drops_the_tool_future() {
    let fx = Fixture::new().await;
    let body = modern_body(1, "tools/call", json!({"name": "hang"}));
    let mut conn = fx.conn().await;
    let started = fx.surface.hang_started.notified();
    conn.write(&fx.modern_request(&body)).await;
    within(started).await;
    assert!(!fx.surface.hang_was_dropped());
    drop(conn);
    wait_until("the tool future is dropped after the disconnect", || {
        fx.surface.hang_was_dropped()
    })
    .await;
    assert_eq!(
        fx.session().calls_served(),
        0,
        "a cancelled call is not served"
    );
}

/// A call past `call_timeout` is cancelled and answered -32603 naming the
/// limit, at the limit exactly.
// Paused clock: the `hang` tool never finishes and the client waits, so
// the deadline fires after exactly 200 ms of virtual time.
#[tokio::test(start_paused = true)]
async fn deadline_expiry() {
    let fx = Fixture::with(ToolHostConfig {
        call_timeout: Some(Duration::from_millis(200)),
        ..ToolHostConfig::default()
    })
    .await;
    let began = tokio::time::Instant::now();
    let r = fx.call(3, "hang", json!({})).await;
    assert_eq!(began.elapsed(), Duration::from_millis(200));
    assert_eq!((r.status, r.error_code()), (200, -32603));
    let error = &r.json()["error"];
    assert_eq!(
        error["message"],
        "tool hang exceeded the call time limit of 200ms"
    );
    assert_eq!(error["data"]["timeLimitMs"], 200);
    assert!(fx.surface.hang_was_dropped());
    assert!(fx.surface.hang_was_cancelled());
    assert_eq!(fx.host.calls_in_flight(), 0);
}

/// Plain surfaces (only `call`) still work through the default `call_with`,
/// with and without progress tokens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_surfaces_unchanged() {
    // StaticSurface implements only `call`: the trait's default `call_with`
    // serves it.
    let echo = Tool::new("echo", "", json!({"type": "object"})).unwrap();
    let plain = StaticSurface::new(vec![echo], |_: String, args: Value| async move {
        Ok::<_, String>(args["text"].clone())
    })
    .unwrap();
    let fx = Fixture::serving(ToolHostConfig::default(), Arc::new(plain)).await;
    // Without a token: plain JSON.
    let r = fx.call(1, "echo", json!({"text": "plain"})).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.first_text(), "plain");
    // With one: an event stream whose only event is the result.
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "echo", "arguments": {"text": "plain"}, "_meta": {"progressToken": "p"}}});
    let mut conn = fx.conn().await;
    let mut stream = conn.send_streaming(&fx.post(&body.to_string())).await;
    assert_eq!(stream.header("content-type"), Some("text/event-stream"));
    let event = stream.next_event().await.unwrap();
    assert_eq!(event_json(&event)["result"]["content"][0]["text"], "plain");
    assert_eq!(stream.next_event().await, None);
    assert_eq!(fx.session().calls_served(), 2);
}
