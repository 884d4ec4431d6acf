//! The observer (`ToolHostConfig::observer`), over real HTTP: it is told of
//! every request a session's clients make — each call with what it came
//! to (success, refusal, failure, cancellation), each other method, each
//! rejection before and after authentication — with the session's opaque
//! id, never its bearer; and a panicking observer costs nothing but its
//! own observation.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use embacle_tool_host::observe::{Observer, Outcome};
use embacle_tool_host::{SessionId, ToolHostConfig};
use serde_json::{json, Value};
use support::*;

/// An observation, copied out of the observer.
#[derive(Debug, Clone)]
struct Seen {
    session: Option<SessionId>,
    method: Option<String>,
    tool: Option<String>,
    version: Option<&'static str>,
    outcome: Outcome,
    traceparent: Option<String>,
    elapsed: Duration,
}

/// The observations not yet taken, and the `Debug` of every observation
/// ever made.
#[derive(Default)]
struct Log {
    pending: Mutex<Vec<Seen>>,
    every_debug: Mutex<Vec<String>>,
}

/// A config whose observer records every observation.
fn observed() -> (ToolHostConfig, Arc<Log>) {
    let log = Arc::new(Log::default());
    let sink = Arc::clone(&log);
    let observer = Observer::new(move |o| {
        sink.every_debug.lock().unwrap().push(format!("{o:?}"));
        sink.pending.lock().unwrap().push(Seen {
            session: o.session,
            method: o.method.map(str::to_owned),
            tool: o.tool.map(str::to_owned),
            version: o.protocol_version,
            outcome: o.outcome,
            traceparent: o.traceparent.map(str::to_owned),
            elapsed: o.elapsed,
        })
    });
    let config = ToolHostConfig {
        observer: Some(observer),
        max_connections_per_session: Some(1),
        ..ToolHostConfig::default()
    };
    (config, log)
}

/// The observations since the last take.
fn take(log: &Log) -> Vec<Seen> {
    std::mem::take(&mut *log.pending.lock().unwrap())
}

/// The one observation since the last take.
fn one(log: &Log) -> Seen {
    let seen = take(log);
    assert_eq!(seen.len(), 1, "{seen:#?}");
    seen.into_iter().next().unwrap()
}

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// Every call, refusal and failure of a session, its other methods, and
/// each rejection before and after authentication: one observation each,
/// in order, with what it came to; never the bearer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_observer_sees_every_request_of_a_session_and_never_its_bearer() {
    let (config, log) = observed();
    let mut fx = Fixture::with(config).await;
    let id = Some(fx.session().session_id());
    let bearer = fx.bearer.clone();

    // Every request of the session goes over one keep-alive connection, as
    // an agent's do. The share is one connection (for the 429 below): a
    // fresh connection per request would race the host noticing the last
    // one close, and be refused for it.
    let mut conn = fx.conn().await;
    let posted = |body: Value| fx.post(&body.to_string());

    // Answered requests: method, tool, revision, outcome.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    assert_eq!(conn.send(&posted(init)).await.status, 200);
    let calls: [(&str, Value, Outcome); 5] = [
        ("echo", json!({"text": "hi"}), Outcome::Success),
        ("refuse", json!({}), Outcome::Refused),
        ("fail", json!({}), Outcome::Failed { code: -32603 }),
        ("panic", json!({}), Outcome::Failed { code: -32603 }),
        ("nope", json!({}), Outcome::Failed { code: -32602 }),
    ];
    let mut expected = vec![(Some("initialize"), None, Outcome::Success)];
    for (n, (tool, arguments, outcome)) in calls.into_iter().enumerate() {
        let call = posted(call_body(n as i64, tool, arguments));
        assert_eq!(conn.send(&call).await.status, 200);
        expected.push((Some("tools/call"), Some(tool), outcome));
    }
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    assert_eq!(conn.send(&posted(list)).await.status, 200);
    expected.push((Some("tools/list"), None, Outcome::Success));
    let bad_level = json!({"jsonrpc": "2.0", "id": 9, "method": "no/such"});
    assert_eq!(conn.send(&posted(bad_level)).await.status, 200);
    expected.push((Some("no/such"), None, Outcome::Failed { code: -32601 }));
    // A notification is answered with nothing, and not observed.
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(conn.send(&posted(note)).await.status, 202);
    let seen = take(&log);
    let got: Vec<_> = seen
        .iter()
        .map(|s| (s.method.as_deref(), s.tool.as_deref(), s.outcome))
        .collect();
    assert_eq!(got, expected);
    for s in &seen {
        assert_eq!(s.session, id);
        assert!(s.version.is_some_and(|v| v.starts_with("2025-")), "{s:?}");
        assert!(s.elapsed < STEP, "{s:?}");
    }

    // A 2026-07-28 call with a trace context; a malformed one is dropped.
    let mut body = modern_call(20, "echo", json!({"text": "traced"}));
    body["params"]["_meta"]["traceparent"] = json!(TRACEPARENT);
    assert_eq!(conn.send(&fx.modern_request(&body)).await.status, 200);
    let traced = one(&log);
    assert_eq!(traced.version, Some(MODERN));
    assert_eq!(traced.traceparent.as_deref(), Some(TRACEPARENT));
    assert_eq!(traced.outcome, Outcome::Success);
    body["params"]["_meta"]["traceparent"] = json!(format!("{TRACEPARENT} Bearer {bearer}"));
    assert_eq!(conn.send(&fx.modern_request(&body)).await.status, 200);
    assert_eq!(one(&log).traceparent, None);

    // Rejections after authentication carry the session. A 415 keeps the
    // connection.
    let auth = fx.auth();
    let wrong_type = String::from_utf8(fx.post_with(&[], PING))
        .unwrap()
        .replace("application/json\r\n", "text/plain\r\n");
    assert_eq!(conn.send(wrong_type.as_bytes()).await.status, 415);
    let rejected = one(&log);
    assert_eq!(
        (rejected.session, rejected.outcome),
        (id, Outcome::Rejected { status: 415 })
    );
    assert_eq!(rejected.method, None);

    // 429: the session's one connection is still held open.
    assert_eq!(conn.send(&fx.post(PING)).await.status, 200);
    assert_eq!(one(&log).method.as_deref(), Some("ping"));
    assert_eq!(fx.rpc_text(PING).await.status, 429);
    let full = one(&log);
    assert_eq!(
        (full.session, full.outcome),
        (id, Outcome::Rejected { status: 429 })
    );
    drop(conn);

    // Rejections before authentication: no session, nothing of the bearer.
    let addr = fx.addr;
    // The same slot and generation, another secret.
    let last = if bearer.ends_with('0') { "1" } else { "0" };
    let wrong_bearer = format!("{}{last}", &bearer[..bearer.len() - 1]);
    let probes: [(Vec<u8>, u16); 4] = [
        (post_with(addr, &[], PING), 401),
        (post(addr, &wrong_bearer, PING), 401),
        (
            post_with(
                addr,
                &[("Authorization", &auth), ("Origin", "http://evil.example")],
                PING,
            ),
            403,
        ),
        (
            post_as("rebound.example:80", &[("Authorization", &auth)], PING),
            403,
        ),
    ];
    for (request, status) in probes {
        assert_eq!(send_once(addr, &request).await.status, status);
        let probe = one(&log);
        assert_eq!(
            (probe.session, probe.outcome),
            (None, Outcome::Rejected { status })
        );
    }

    // After the guard drops, its bearer is a stranger's.
    fx.revoke();
    assert_eq!(
        send_once(addr, &post(addr, &bearer, PING)).await.status,
        401
    );
    assert_eq!(one(&log).session, None);

    assert!(take(&log).is_empty());
    let every = log.every_debug.lock().unwrap();
    assert_eq!(every.len(), 18, "one observation per request: {every:#?}");
    for debug in every.iter() {
        assert!(!debug.contains(&bearer[4..]), "the bearer in {debug}");
    }
}

/// A streamed call is observed when its final response is ready; a call
/// cancelled by its client, as cancelled; each member of a batch on its
/// own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_cancelled_and_batched_requests_are_each_observed() {
    let (config, log) = observed();
    // The default share: this test opens a connection per request, and
    // the host may not have seen the last ones close.
    let fx = Fixture::with(ToolHostConfig {
        max_connections_per_session: None,
        ..config
    })
    .await;

    let mut conn = Conn::open(fx.addr).await;
    let body = call_with_token(1, "count", json!("t")).to_string();
    let mut events = conn.send_streaming(&fx.post(&body)).await;
    assert_eq!(events.status, 200);
    let rest = events.rest().await;
    assert!(rest.last().unwrap().contains("counted"), "{rest:?}");
    let streamed = one(&log);
    assert_eq!(
        (streamed.tool.as_deref(), streamed.outcome),
        (Some("count"), Outcome::Success)
    );
    assert!(
        streamed.elapsed >= Duration::from_millis(150),
        "observed when it ended: {streamed:?}"
    );

    let hung = fx.spawn_call(7, "hang", json!({}));
    within(fx.surface.hang_started.notified()).await;
    assert_eq!(fx.rpc(cancelled(json!({"requestId": 7}))).await.status, 202);
    assert_eq!(within(hung).await.unwrap().status, 202);
    let cancel = one(&log);
    assert_eq!(
        (cancel.tool.as_deref(), cancel.outcome),
        (Some("hang"), Outcome::Cancelled)
    );

    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "refuse"}},
    ]);
    let answered = fx.with_version("2025-03-26", batch).await;
    assert_eq!(answered.status, 200);
    let members: Vec<_> = take(&log)
        .into_iter()
        .map(|s| (s.method, s.outcome, s.version))
        .collect();
    let version = Some("2025-03-26");
    assert_eq!(
        members,
        [
            (Some("ping".to_owned()), Outcome::Success, version),
            (Some("tools/call".to_owned()), Outcome::Refused, version),
        ]
    );

    assert_eq!(fx.rpc_text("{not json").await.status, 400);
    let garbage = one(&log);
    assert_eq!(
        (garbage.method, garbage.outcome),
        (None, Outcome::Failed { code: -32700 })
    );
}

/// An observer that panics loses its own observation: every request is
/// still answered, and the host keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_observer_costs_only_its_observation() {
    let fx = Fixture::with(ToolHostConfig {
        observer: Some(Observer::new(|_| panic!("a broken observer"))),
        ..ToolHostConfig::default()
    })
    .await;
    for n in 0..3 {
        let echoed = fx.call(n, "echo", json!({"text": "still here"})).await;
        assert_eq!(echoed.first_text(), json!("still here"));
    }
    assert_eq!(
        send_once(fx.addr, &post_with(fx.addr, &[], PING))
            .await
            .status,
        401
    );
    assert_eq!(fx.ping().await.status, 200);
}
