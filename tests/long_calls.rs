//! Long tool calls over real HTTP: progress on SSE, cancellation by
//! notification, by guard drop and by disconnect, deadlines, shutdown.

mod support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use embacle_tool_host::{CancelSignal, Tool, ToolCall, ToolHostConfig, ToolOutcome, ToolSurface};
use serde_json::{json, Value};
use support::*;

/// A surface of slow tools that use the call context.
#[derive(Default)]
struct Slow {
    started: tokio::sync::Notify,
    /// Raised when a `hang` call's future is dropped.
    dropped: AtomicBool,
    /// The last `hang` call's cancellation signal, for detached work.
    signal: Mutex<Option<CancelSignal>>,
    calls: AtomicUsize,
}

struct SetOnDrop<'a>(&'a AtomicBool);
impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl ToolSurface for Slow {
    async fn list_tools(&self) -> Arc<[Tool]> {
        ["count", "hang", "quiet"]
            .map(|n| Tool::new(n, "", json!({"type": "object"})).unwrap())
            .to_vec()
            .into()
    }

    async fn call(&self, _: &str, _: &Value) -> ToolOutcome {
        unreachable!("call_with is overridden")
    }

    async fn call_with(&self, call: ToolCall<'_>) -> ToolOutcome {
        self.calls.fetch_add(1, Ordering::SeqCst);
        match call.name() {
            // Three progress reports 60 ms apart (well above the 25 ms rate
            // limit), one that goes backwards (dropped), then the result.
            "count" => {
                for step in 1..=3 {
                    call.progress(f64::from(step), Some(3.0), Some(&format!("step {step}")));
                    if step == 2 {
                        call.progress(1.5, Some(3.0), None);
                    }
                    tokio::time::sleep(Duration::from_millis(60)).await;
                }
                ToolOutcome::text("counted")
            }
            "hang" => {
                let _guard = SetOnDrop(&self.dropped);
                *self.signal.lock().unwrap() = Some(call.cancellation());
                self.started.notify_one();
                std::future::pending::<()>().await;
                ToolOutcome::text("never")
            }
            // Silent for 350 ms: long enough for keep-alive comments.
            "quiet" => {
                tokio::time::sleep(Duration::from_millis(350)).await;
                ToolOutcome::text("done quietly")
            }
            _ => ToolOutcome::failed("unknown"),
        }
    }
}

fn call_with_token(id: i64, name: &str, token: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": {}, "_meta": {"progressToken": token}}})
    .to_string()
}

async fn setup(
    config: ToolHostConfig,
) -> (
    embacle_tool_host::ToolHost,
    embacle_tool_host::ToolSession,
    Arc<Slow>,
) {
    let host = host_with(config).await;
    let surface = Arc::new(Slow::default());
    let session = host.open_session(surface.clone()).unwrap();
    (host, session, surface)
}

/// With a progress token and SSE accepted, the response is an event stream:
/// three strictly increasing progress events carrying the token, then the
/// final response, then the end of the stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_streams_then_result() {
    let (host, session, _) = setup(ToolHostConfig::default()).await;
    let addr = host.local_addr();
    let mut conn = Conn::open(addr).await;
    let mut stream = conn
        .send_streaming(&post(
            addr,
            &bearer_of(&session),
            &call_with_token(7, "count", json!("tok-1")),
        ))
        .await;
    assert_eq!(stream.status, 200);
    assert_eq!(stream.header("content-type"), Some("text/event-stream"));
    assert_eq!(stream.header("x-accel-buffering"), Some("no"));
    let mut events = Vec::new();
    while let Some(event) = stream.next_event().await {
        events.push(event_json(&event));
    }
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
    assert_eq!(session.calls_served(), 1);
    // The connection stays usable after the stream.
    let r = conn
        .send(&post(
            addr,
            &bearer_of(&session),
            r#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#,
        ))
        .await;
    assert_eq!(r.status, 200);
}

/// Without a token, or without SSE in Accept, progress is a no-op and the
/// response stays plain JSON.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_token_or_no_sse_means_plain_json() {
    let (host, session, _) = setup(ToolHostConfig::default()).await;
    let addr = host.local_addr();
    let bearer = bearer_of(&session);
    let r = rpc(addr, &bearer, call_body(1, "count", json!({}))).await;
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.json()["result"]["content"][0]["text"], "counted");
    let body = call_with_token(2, "count", json!(5));
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {bearer}\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let r = send_once(addr, request.as_bytes()).await;
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.json()["result"]["content"][0]["text"], "counted");
    assert_eq!(session.calls_served(), 2);
}

/// Long silences on a stream get `:` keep-alive comments.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_comments_on_silence() {
    let (host, session, _) = setup(ToolHostConfig {
        sse_keep_alive: Duration::from_millis(100),
        ..ToolHostConfig::default()
    })
    .await;
    let addr = host.local_addr();
    let mut conn = Conn::open(addr).await;
    let mut stream = conn
        .send_streaming(&post(
            addr,
            &bearer_of(&session),
            &call_with_token(1, "quiet", json!(1)),
        ))
        .await;
    let mut comments = 0;
    let mut last = None;
    while let Some(event) = stream.next_event().await {
        if event.starts_with(':') {
            comments += 1;
        } else {
            last = Some(event_json(&event));
        }
    }
    assert!(
        comments >= 2,
        "{comments} keep-alive comments in 350 ms at 100 ms"
    );
    assert_eq!(
        last.unwrap()["result"]["content"][0]["text"],
        "done quietly"
    );
}

/// notifications/cancelled with the call's request id (same bearer) drops
/// the call's future within a bounded time, raises its signal, and the POST
/// is answered 202; so is the call itself, with no JSON-RPC response.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_by_notification() {
    let (host, session, surface) = setup(ToolHostConfig::default()).await;
    let addr = host.local_addr();
    let bearer = bearer_of(&session);
    let started = surface.started.notified();
    let call = {
        let bearer = bearer.clone();
        tokio::spawn(async move { rpc(addr, &bearer, call_body(41, "hang", json!({}))).await })
    };
    within(started).await;
    // Ignored: wrong id type, unknown id, malformed params.
    for params in [
        json!({"requestId": "41"}),
        json!({"requestId": 999}),
        json!({"requestId": null}),
        json!([]),
    ] {
        let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params});
        assert_eq!(rpc(addr, &bearer, note).await.status, 202);
    }
    assert!(!surface.dropped.load(Ordering::SeqCst));
    assert_eq!(host.calls_in_flight(), 1);
    let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 41, "reason": "user aborted"}});
    let r = rpc(addr, &bearer, note).await;
    assert_eq!((r.status, r.body.len()), (202, 0));
    let r = within(call).await.unwrap();
    assert_eq!(
        (r.status, r.body.len()),
        (202, 0),
        "a cancelled request gets no response"
    );
    assert!(
        surface.dropped.load(Ordering::SeqCst),
        "the surface's future was dropped"
    );
    assert!(surface
        .signal
        .lock()
        .unwrap()
        .as_ref()
        .unwrap()
        .is_cancelled());
    assert_eq!(host.calls_in_flight(), 0);
    assert_eq!(session.calls_served(), 0);
    // A cancellation for a finished call is ignored.
    let note =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 41}});
    assert_eq!(rpc(addr, &bearer, note).await.status, 202);
}

/// Another session's bearer cannot cancel this session's call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_is_per_session() {
    let (host, session, surface) = setup(ToolHostConfig::default()).await;
    let other = host.open_session(Arc::new(Slow::default())).unwrap();
    let addr = host.local_addr();
    let started = surface.started.notified();
    let bearer = bearer_of(&session);
    let call =
        tokio::spawn(async move { rpc(addr, &bearer, call_body(5, "hang", json!({}))).await });
    within(started).await;
    let note =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}});
    assert_eq!(rpc(addr, &bearer_of(&other), note).await.status, 202);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !surface.dropped.load(Ordering::SeqCst),
        "not cancelled by another session"
    );
    drop(session); // cancels it
    assert_eq!(within(call).await.unwrap().status, 202);
    assert!(surface.dropped.load(Ordering::SeqCst));
}

/// Dropping the guard ends a streaming call's stream without a response.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guard_drop_ends_a_stream() {
    let (host, session, surface) = setup(ToolHostConfig::default()).await;
    let addr = host.local_addr();
    let mut conn = Conn::open(addr).await;
    let started = surface.started.notified();
    let mut stream = conn
        .send_streaming(&post(
            addr,
            &bearer_of(&session),
            &call_with_token(1, "hang", json!("t")),
        ))
        .await;
    within(started).await;
    drop(session);
    assert_eq!(stream.next_event().await, None, "nothing more is sent");
    assert!(surface.dropped.load(Ordering::SeqCst));
    assert_eq!(host.calls_in_flight(), 0);
}

/// A call past `call_timeout` is cancelled and answered -32603 naming the
/// limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadline_expiry() {
    let (host, session, surface) = setup(ToolHostConfig {
        call_timeout: Some(Duration::from_millis(200)),
        ..ToolHostConfig::default()
    })
    .await;
    let r = rpc(
        host.local_addr(),
        &bearer_of(&session),
        call_body(3, "hang", json!({})),
    )
    .await;
    assert_eq!((r.status, r.error_code()), (200, -32603));
    let error = &r.json()["error"];
    assert_eq!(
        error["message"],
        "tool hang exceeded the call time limit of 200ms"
    );
    assert_eq!(error["data"]["timeLimitMs"], 200);
    assert!(surface.dropped.load(Ordering::SeqCst));
    assert!(surface
        .signal
        .lock()
        .unwrap()
        .as_ref()
        .unwrap()
        .is_cancelled());
    assert_eq!(host.calls_in_flight(), 0);
}

/// A graceful shutdown during a streaming call gives it the drain deadline,
/// then cancels it; nothing leaks: calls in flight back to zero, and the
/// session count back to zero once the guard goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_during_a_streaming_call() {
    let (host, session, surface) = setup(ToolHostConfig::default()).await;
    let addr = host.local_addr();
    let mut conn = Conn::open(addr).await;
    let started = surface.started.notified();
    let mut stream = conn
        .send_streaming(&post(
            addr,
            &bearer_of(&session),
            &call_with_token(1, "hang", json!("t")),
        ))
        .await;
    within(started).await;
    assert_eq!(host.calls_in_flight(), 1);
    let err = within(host.shutdown_graceful(Duration::from_millis(200)))
        .await
        .unwrap_err();
    assert!(err.is_timeout());
    assert_eq!(stream.next_event().await, None);
    assert!(surface.dropped.load(Ordering::SeqCst));
    assert!(surface
        .signal
        .lock()
        .unwrap()
        .as_ref()
        .unwrap()
        .is_cancelled());
    assert_eq!(host.calls_in_flight(), 0);
    drop(session);
    assert_eq!(host.open_sessions(), 0);
}

/// Plain surfaces (only `call`) still work through the default `call_with`,
/// with and without progress tokens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_surfaces_unchanged() {
    let host = host().await;
    let session = host.open_session(RecordingSurface::new()).unwrap();
    let addr = host.local_addr();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "echo", "arguments": {"text": "plain"}, "_meta": {"progressToken": "p"}}});
    let mut conn = Conn::open(addr).await;
    let mut stream = conn
        .send_streaming(&post(addr, &bearer_of(&session), &body.to_string()))
        .await;
    let event = stream.next_event().await.unwrap();
    assert_eq!(event_json(&event)["result"]["content"][0]["text"], "plain");
    assert_eq!(stream.next_event().await, None);
}
