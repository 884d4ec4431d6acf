//! The observer (`ToolHostConfig::observer`), over real HTTP: it is told of
//! every request a session's clients make — each call with what it came
//! to (success, refusal, failure, cancellation), each other method, each
//! rejection before and after authentication — with the session's opaque
//! id, never its bearer; refusals before authentication are counted and
//! told together, so a flood without a bearer cannot make the observer
//! run per request, nor slow the host's own client through it; and a
//! panicking observer costs nothing but its own observation.

mod support;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use embacle_tool_host::observe::{Observer, Outcome, INVALID_METHOD, REFUSALS_WINDOW};
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
    requests: u64,
    request_bytes: u64,
    response_bytes: u64,
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
            requests: o.requests,
            request_bytes: o.request_bytes,
            response_bytes: o.response_bytes,
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
        ("panic", json!({}), Outcome::Panicked),
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
    let started = Instant::now();
    for (request, status) in probes {
        assert_eq!(send_once(addr, &request).await.status, status);
    }
    // After the guard drops, its bearer is a stranger's.
    fx.revoke();
    assert_eq!(
        send_once(addr, &post(addr, &bearer, PING)).await.status,
        401
    );
    // Told together, once the window has passed: counted by status.
    let counted = |log: &Log| {
        let seen = log.pending.lock().unwrap();
        let of = |status| {
            seen.iter()
                .filter(|s| s.outcome == Outcome::Rejected { status })
                .map(|s| s.requests)
                .sum::<u64>()
        };
        (of(401), of(403))
    };
    wait_until("the refusals are told", || counted(&log) == (3, 2)).await;
    assert!(
        started.elapsed() >= REFUSALS_WINDOW,
        "not before the window"
    );
    for refused in take(&log) {
        assert_eq!(refused.session, None);
        assert_eq!(refused.elapsed, Duration::ZERO);
        assert!(refused.method.is_none() && refused.traceparent.is_none());
    }

    assert!(take(&log).is_empty());
    let every = log.every_debug.lock().unwrap();
    for debug in every.iter() {
        assert!(!debug.contains(&bearer[4..]), "the bearer in {debug}");
    }
}

/// Each way a call can end is observed as what it was: a tool past its
/// time limit as `TimedOut` (not a failure), a call whose client went
/// away mid-call as `Disconnected` (before: not observed at all).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_end_of_a_call_is_observed_as_what_it_was() {
    let (config, log) = observed();
    let timed = Fixture::with(ToolHostConfig {
        call_timeout: Some(Duration::from_millis(100)),
        ..config.clone()
    })
    .await;
    let late = timed.call(1, "hang", json!({})).await;
    assert_eq!(late.json()["error"]["code"], -32603, "{}", late.text());
    let seen = one(&log);
    assert_eq!(
        (seen.tool.as_deref(), seen.outcome),
        (Some("hang"), Outcome::TimedOut)
    );

    let fx = Fixture::with(config).await;
    let mut conn = fx.conn().await;
    conn.write(&fx.post(&call_body(2, "hang", json!({})).to_string()))
        .await;
    within(fx.surface.hang_started.notified()).await;
    drop(conn);
    wait_until("the call is observed", || {
        !log.pending.lock().unwrap().is_empty()
    })
    .await;
    let seen = one(&log);
    assert_eq!(
        (seen.session, seen.tool.as_deref(), seen.outcome),
        (
            Some(fx.session().session_id()),
            Some("hang"),
            Outcome::Disconnected
        )
    );
    assert!(fx.surface.hang_was_dropped(), "the tool was stopped");
}

/// What a client sends cannot forge a line: a method with a newline, an
/// escape or a space, or past 64 characters, reaches the observer as
/// `(invalid)`; a `traceparent` of all-zero ids (invalid, says W3C) is
/// dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_cannot_forge_what_the_observer_logs() {
    let (config, log) = observed();
    let fx = Fixture::with(config).await;
    for forged in [
        "no/such\n[request] session-9 tools/call delete_everything: success".to_owned(),
        "\u{1b}[2Jcleared".to_owned(),
        "m".repeat(100_000),
    ] {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": forged});
        assert_eq!(fx.rpc(body).await.status, 200);
        let seen = one(&log);
        assert_eq!(seen.method.as_deref(), Some(INVALID_METHOD));
        assert_eq!(seen.outcome, Outcome::Failed { code: -32601 });
    }
    let zero = "00-00000000000000000000000000000000-00f067aa0ba902b7-01";
    let mut body = modern_call(2, "echo", json!({"text": "zero"}));
    body["params"]["_meta"]["traceparent"] = json!(zero);
    assert_eq!(fx.send(&fx.modern_request(&body)).await.status, 200);
    let seen = one(&log);
    assert_eq!((seen.traceparent, seen.outcome), (None, Outcome::Success));
}

/// A flood without a bearer reaches a slow observer (5 ms an
/// observation) a few times a second, not once per request: it is
/// counted, every request of it, and the host's own client keeps its
/// median within twice what it is without the flood.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_without_a_bearer_cannot_slow_the_host_through_its_observer() {
    #[derive(Default)]
    struct Counts {
        refusal_observations: AtomicU64,
        refused_requests: AtomicU64,
    }
    let counts = Arc::new(Counts::default());
    let seen = Arc::clone(&counts);
    let fx = Fixture::with(ToolHostConfig {
        observer: Some(Observer::new(move |o| {
            if o.session.is_none() {
                seen.refusal_observations.fetch_add(1, Ordering::Relaxed);
                seen.refused_requests
                    .fetch_add(o.requests, Ordering::Relaxed);
            }
            std::thread::sleep(Duration::from_millis(5));
        })),
        ..ToolHostConfig::default()
    })
    .await;
    let quiet = median_of_pings(&fx, Duration::ZERO).await;

    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let flooders: Vec<_> = (0..4)
        .map(|n| {
            let (stop, sent, addr) = (Arc::clone(&stop), Arc::clone(&sent), fx.addr);
            // Two statuses: 401 (no bearer) and 403 (a foreign Host).
            let probe = if n % 2 == 0 {
                post_with(addr, &[], PING)
            } else {
                post_as("rebound.example:80", &[], PING)
            };
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let status = send_once(addr, &probe).await.status;
                    assert!(status == 401 || status == 403, "{status}");
                    sent.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    wait_until("the flood is under way", || {
        sent.load(Ordering::Relaxed) >= 200
    })
    .await;
    let flood_started = Instant::now();
    // Past two windows, so refusals are told while the client is timed.
    let flooded = median_of_pings(&fx, REFUSALS_WINDOW * 5 / 2).await;
    stop.store(true, Ordering::Relaxed);
    for flooder in flooders {
        within(flooder).await.unwrap();
    }
    let flooded_for = flood_started.elapsed();
    let told = counts.refusal_observations.load(Ordering::Relaxed);
    within(fx.host.shutdown()).await;
    let sent = sent.load(Ordering::Relaxed);
    println!(
        "a flood of {sent} requests without a bearer over {flooded_for:?}: told in {told} \
         observations; the client's median {quiet:?} quiet, {flooded:?} flooded"
    );
    assert_eq!(
        counts.refused_requests.load(Ordering::Relaxed),
        sent,
        "every refusal counted, the last when the host stopped"
    );
    let windows = (flooded_for.as_millis() / REFUSALS_WINDOW.as_millis()) as u64 + 2;
    assert!(
        (1..=2 * windows).contains(&told),
        "{told} observations for {windows} windows of two statuses"
    );
    if under_wine() {
        // The flood's sockets slow Wine's own socket calls, whatever the
        // observer does (scripts/wine/poll_scaling.c): seen there, 6.1 ms
        // quiet and 12.2 ms flooded. The counts above hold under Wine too.
        return skipped(
            "under Wine, whose socket calls slow down with every poll pending on another socket (scripts/wine/poll_scaling.c), the client's median under the flood is Wine's, not the observer's; the latency comparison did not run",
        );
    }
    assert!(
        flooded <= quiet * 2,
        "the client's median went from {quiet:?} to {flooded:?}"
    );
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

/// Each observation gives the bytes of the body that carried its request
/// and of what answered it, as they crossed the wire: a call answered in
/// JSON, a refusal after authentication, a batch's members (each its own
/// part of the array), a body that is not JSON, a streamed call (every
/// byte of its stream), and a streamed call cut off (what was sent).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_and_response_bytes_are_those_on_the_wire() {
    let (config, log) = observed();
    let fx = Fixture::with(ToolHostConfig {
        max_connections_per_session: None,
        sse_keep_alive: Duration::from_millis(30),
        ..config
    })
    .await;
    let sizes = |seen: &Seen| (seen.request_bytes as usize, seen.response_bytes as usize);

    let body = call_body(1, "echo", json!({"text": "hello"})).to_string();
    let answered = fx.send(&fx.post(&body)).await;
    assert_eq!(answered.status, 200);
    assert_eq!(sizes(&one(&log)), (body.len(), answered.body.len()));

    // A second `Content-Type`: refused before the body is read.
    let wrong_type = fx.post_with(&[("Content-Type", "text/plain")], &body);
    let refused = fx.send(&wrong_type).await;
    assert_eq!(refused.status, 400);
    let seen = one(&log);
    assert_eq!(seen.outcome, Outcome::Rejected { status: 400 });
    assert!(!refused.body.is_empty(), "a refusal says why");
    assert_eq!(sizes(&seen), (0, refused.body.len()), "its body unread");

    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "refuse"}},
    ]);
    let batch_len = batch.to_string().len();
    let answered = fx.with_version("2025-03-26", batch).await;
    let members: Vec<_> = answered.json().as_array().unwrap().clone();
    let seen = take(&log);
    assert_eq!(seen.len(), 2, "{seen:#?}");
    for (seen, member) in seen.iter().zip(&members) {
        assert_eq!(sizes(seen), (batch_len, member.to_string().len()));
    }
    // `[`, `,` and `]` are the batch's, not a member's.
    let members_bytes: u64 = seen.iter().map(|s| s.response_bytes).sum();
    assert_eq!(members_bytes as usize + 3, answered.body.len());

    let garbage = fx.rpc_text("{not json").await;
    assert_eq!(sizes(&one(&log)), (9, garbage.body.len()));

    let mut conn = Conn::open(fx.addr).await;
    let body = call_with_token(3, "count", json!("t")).to_string();
    let mut events = conn.send_streaming(&fx.post(&body)).await;
    let stream_bytes: usize = events.rest().await.iter().map(|e| e.len() + 2).sum();
    let seen = one(&log);
    assert_eq!(seen.outcome, Outcome::Success);
    assert_eq!(sizes(&seen), (body.len(), stream_bytes));

    let mut conn = Conn::open(fx.addr).await;
    let body = call_with_token(4, "quiet", json!("t")).to_string();
    let mut events = conn.send_streaming(&fx.post(&body)).await;
    let mut read = 0;
    for _ in 0..2 {
        let comment = events.next_event().await.unwrap();
        assert_eq!(comment, ": keep-alive", "only keep-alives while quiet");
        read += comment.len() + 2;
    }
    drop(conn);
    wait_until("the cut-off call is observed", || {
        !log.pending.lock().unwrap().is_empty()
    })
    .await;
    let seen = one(&log);
    assert_eq!(seen.outcome, Outcome::Disconnected);
    let sent = seen.response_bytes as usize;
    // What was read, and perhaps a comment sent meanwhile: comments only.
    assert!(
        sent >= read && sent % read.div_euclid(2) == 0,
        "{sent} {read}"
    );
}

/// The median time of pings on one keep-alive connection: 40 at least,
/// and for `at_least`.
async fn median_of_pings(fx: &Fixture, at_least: Duration) -> Duration {
    let mut conn = fx.conn().await;
    let ping = fx.post(PING);
    let mut times = Vec::new();
    let started = Instant::now();
    while times.len() < 40 || started.elapsed() < at_least {
        let started = Instant::now();
        assert_eq!(conn.send(&ping).await.status, 200);
        times.push(started.elapsed());
    }
    times.sort();
    times[times.len() / 2]
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
