//! Notification streams over real HTTP: the legacy `GET /mcp` stream and
//! 2026-07-28 `subscriptions/listen`, what they carry, how bursts coalesce,
//! who gets each change, their limits, and how they end.

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use embacle_tool_host::{StaticSurface, ToolHostConfig, ToolSession};
use serde_json::{json, Value};
use support::*;

const LIST_CHANGED: &str = "notifications/tools/list_changed";
const KEEP_ALIVE: &str = ": keep-alive";

/// A host whose silent streams send a keep-alive every 300 ms (the marker
/// the tests use to show that nothing else came first), with one session.
async fn streaming(max_streams_per_session: usize) -> Fixture {
    Fixture::with(ToolHostConfig {
        sse_keep_alive: Duration::from_millis(300),
        max_streams_per_session,
        ..ToolHostConfig::default()
    })
    .await
}

/// A legacy `GET /mcp` stream request with `bearer`.
fn get_stream(addr: SocketAddr, bearer: &str) -> Vec<u8> {
    let (host, auth) = (addr.to_string(), format!("Bearer {bearer}"));
    let headers = [
        ("Host", host.as_str()),
        ("Authorization", auth.as_str()),
        ("Accept", "text/event-stream"),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    request("GET /mcp HTTP/1.1", &headers, None)
}

/// A `subscriptions/listen` POST with `bearer`, its modern envelope and
/// the headers that mirror it. `id` may be a string or a number.
fn listen(addr: SocketAddr, bearer: &str, id: Value, notifications: Value) -> Vec<u8> {
    let mut body = modern_body(
        0,
        "subscriptions/listen",
        json!({"notifications": notifications}),
    );
    body["id"] = id;
    let auth = format!("Bearer {bearer}");
    let headers = [
        ("Authorization", auth.as_str()),
        ("MCP-Protocol-Version", MODERN),
        ("Mcp-Method", "subscriptions/listen"),
    ];
    post_with(addr, &headers, &body.to_string())
}

/// Subscribes to tool-list changes on `conn` with listen id `id`, and
/// reads the acknowledgement.
async fn subscribe<'a>(
    conn: &'a mut Conn,
    addr: SocketAddr,
    bearer: &str,
    id: Value,
) -> EventStream<'a> {
    let filter = json!({"toolsListChanged": true});
    let mut events = conn.send_streaming(&listen(addr, bearer, id, filter)).await;
    assert_eq!(events.status, 200);
    assert_eq!(
        next_kind(&mut events).await,
        "notifications/subscriptions/acknowledged"
    );
    events
}

/// The method of an SSE event's message, or the comment itself.
fn kind(event: &str) -> String {
    if event.starts_with(':') {
        return event.to_owned();
    }
    event_json(event)["method"]
        .as_str()
        .unwrap_or("a response")
        .to_owned()
}

async fn next_kind(events: &mut EventStream<'_>) -> String {
    kind(&events.next_event().await.expect("the stream ended"))
}

/// A second session on the fixture's host, and its bearer.
fn another_session(fx: &Fixture) -> (ToolSession, String) {
    let session = fx.host.open_session(RecordingSurface::new()).unwrap();
    let bearer = bearer_of(&session);
    (session, bearer)
}

/// A legacy GET stream is an SSE response that stays open; a signal sends
/// exactly `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`;
/// silence sends keep-alive comments.
#[tokio::test]
async fn legacy_stream_carries_list_changed() {
    let fx = streaming(4).await;
    let (addr, bearer) = (fx.addr, fx.bearer.clone());
    let session = fx.session();
    let mut conn = Conn::open(addr).await;
    let mut events = conn.send_streaming(&get_stream(addr, &bearer)).await;
    assert_eq!(events.status, 200);
    assert_eq!(events.header("content-type"), Some("text/event-stream"));
    assert_eq!(events.header("cache-control"), Some("no-cache"));
    assert_eq!(events.header("x-accel-buffering"), Some("no"));
    assert_eq!(next_kind(&mut events).await, KEEP_ALIVE);
    session.list_changed_notifier().notify();
    let event = events.next_event().await.unwrap();
    assert_eq!(
        event_json(&event),
        json!({"jsonrpc": "2.0", "method": LIST_CHANGED})
    );
    assert!(event.starts_with("event: message\n"));
}

/// A host whose `header_read_timeout` is 100 ms.
async fn with_header_timeout_100ms() -> Fixture {
    Fixture::with(ToolHostConfig {
        header_read_timeout: Duration::from_millis(100),
        ..ToolHostConfig::default()
    })
    .await
}

/// A legacy stream stays open past `header_read_timeout`: it is a response
/// being sent, so its connection has a request in service.
// Paused clock: the stream idles ten timeouts' worth of virtual time.
#[tokio::test(start_paused = true)]
async fn legacy_stream_outlives_the_header_timeout() {
    let fx = with_header_timeout_100ms().await;
    let (addr, bearer) = (fx.addr, fx.bearer.clone());
    let mut conn = Conn::open(addr).await;
    let mut events = conn.send_streaming(&get_stream(addr, &bearer)).await;
    assert_eq!(events.status, 200);
    tokio::time::sleep(Duration::from_secs(1)).await;
    fx.session().list_changed_notifier().notify();
    assert_eq!(next_kind(&mut events).await, LIST_CHANGED);
}

/// So does a `subscriptions/listen` stream.
// Paused clock, as above.
#[tokio::test(start_paused = true)]
async fn listen_stream_outlives_the_header_timeout() {
    let fx = with_header_timeout_100ms().await;
    let (addr, bearer) = (fx.addr, fx.bearer.clone());
    let mut conn = Conn::open(addr).await;
    let mut events = subscribe(&mut conn, addr, &bearer, json!(1)).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    fx.session().list_changed_notifier().notify();
    assert_eq!(next_kind(&mut events).await, LIST_CHANGED);
}

/// A hundred signals in a burst, from another thread through a notifier,
/// are one notification: the next event after it is a keep-alive.
#[tokio::test]
async fn bursts_coalesce_into_one_notification() {
    let fx = streaming(4).await;
    let (addr, bearer) = (fx.addr, fx.bearer.clone());
    let session = fx.session();
    let mut conn = Conn::open(addr).await;
    let mut events = conn.send_streaming(&get_stream(addr, &bearer)).await;
    let notifier = session.list_changed_notifier();
    std::thread::spawn(move || (0..100).for_each(|_| notifier.notify()))
        .join()
        .unwrap();
    assert_eq!(next_kind(&mut events).await, LIST_CHANGED);
    assert_eq!(next_kind(&mut events).await, KEEP_ALIVE);
}

/// The other path of the coalescing: a burst that comes just after a
/// notice is folded into one more notice at the end of the notice's
/// 20 ms window, not sent at once. Two notices in all, the second one
/// at least the window after the first; then nothing but a keep-alive.
#[tokio::test]
async fn a_burst_after_a_notice_is_one_more_at_the_end_of_the_window() {
    let fx = streaming(4).await;
    let (addr, bearer) = (fx.addr, fx.bearer.clone());
    let mut conn = Conn::open(addr).await;
    let mut events = conn.send_streaming(&get_stream(addr, &bearer)).await;
    let notifier = fx.session().list_changed_notifier();
    notifier.notify();
    assert_eq!(next_kind(&mut events).await, LIST_CHANGED);
    let first = std::time::Instant::now();
    std::thread::spawn(move || (0..100).for_each(|_| notifier.notify()))
        .join()
        .unwrap();
    assert_eq!(next_kind(&mut events).await, LIST_CHANGED);
    let gap = first.elapsed();
    assert!(
        gap >= Duration::from_millis(15),
        "the second notice waited for the window's end: {gap:?}"
    );
    assert_eq!(next_kind(&mut events).await, KEEP_ALIVE);
}

/// One client's legacy streams share each change: it goes out on exactly
/// one of them, and the other's next event is a keep-alive.
#[tokio::test]
async fn a_change_goes_on_one_legacy_stream() {
    let fx = streaming(4).await;
    let (addr, bearer) = (fx.addr, fx.bearer.clone());
    let session = fx.session();
    let (mut a, mut b) = (Conn::open(addr).await, Conn::open(addr).await);
    let mut first = a.send_streaming(&get_stream(addr, &bearer)).await;
    let mut second = b.send_streaming(&get_stream(addr, &bearer)).await;
    session.list_changed_notifier().notify();
    let (x, y) = tokio::join!(next_kind(&mut first), next_kind(&mut second));
    let mut kinds = [x, y];
    kinds.sort();
    assert_eq!(kinds, [KEEP_ALIVE.to_owned(), LIST_CHANGED.to_owned()]);
}

/// `subscriptions/listen`: the acknowledgement comes first, with the
/// listen id and only the honoured filter; each change carries the id; two
/// subscriptions of one session each get every change.
#[tokio::test]
async fn subscriptions_acknowledge_then_carry_their_id() {
    let fx = streaming(4).await;
    let (addr, bearer) = (fx.addr, fx.bearer.clone());
    let session = fx.session();
    let (mut a, mut b) = (Conn::open(addr).await, Conn::open(addr).await);
    let filter = json!({"toolsListChanged": true, "resourcesListChanged": true});
    let mut first = a
        .send_streaming(&listen(addr, &bearer, json!("listen:0"), filter.clone()))
        .await;
    let mut second = b
        .send_streaming(&listen(addr, &bearer, json!(9), filter))
        .await;
    assert_eq!(first.status, 200);
    assert_eq!(first.header("x-accel-buffering"), Some("no"));
    for (events, id) in [(&mut first, json!("listen:0")), (&mut second, json!(9))] {
        let ack = event_json(&events.next_event().await.unwrap());
        assert_eq!(
            ack,
            json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                   "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": id},
                              "notifications": {"toolsListChanged": true}}})
        );
    }
    session.list_changed_notifier().notify();
    for (events, id) in [(&mut first, json!("listen:0")), (&mut second, json!(9))] {
        let change = event_json(&events.next_event().await.unwrap());
        assert_eq!(change["method"], LIST_CHANGED);
        assert_eq!(
            change["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            id
        );
    }
}

/// A filter without `toolsListChanged` is acknowledged with nothing
/// honoured, and the subscription then ends gracefully at once.
#[tokio::test]
async fn a_subscription_with_nothing_to_deliver_ends() {
    let fx = streaming(4).await;
    let (addr, bearer) = (fx.addr, fx.bearer.clone());
    let mut conn = Conn::open(addr).await;
    let request = listen(addr, &bearer, json!(3), json!({"promptsListChanged": true}));
    let mut events = conn.send_streaming(&request).await;
    let ack = event_json(&events.next_event().await.unwrap());
    assert_eq!(ack["params"]["notifications"], json!({}));
    let end = event_json(&events.next_event().await.unwrap());
    assert_eq!(end["id"], 3);
    assert_eq!(end["result"]["resultType"], "complete");
    assert_eq!(events.next_event().await, None);
}

/// A signal on one session never reaches another session's stream.
#[tokio::test]
async fn sessions_are_isolated() {
    let fx = streaming(4).await;
    let (addr, one, one_bearer) = (fx.addr, fx.session(), fx.bearer.clone());
    let (_two, two_bearer) = another_session(&fx);
    let (mut a, mut b) = (Conn::open(addr).await, Conn::open(addr).await);
    let mut first = a.send_streaming(&get_stream(addr, &one_bearer)).await;
    let mut second = subscribe(&mut b, addr, &two_bearer, json!(1)).await;
    one.list_changed_notifier().notify();
    assert_eq!(next_kind(&mut first).await, LIST_CHANGED);
    assert_eq!(next_kind(&mut second).await, KEEP_ALIVE);
}

/// `max_streams_per_session` counts both kinds; one more is 409, for GET
/// and for listen; a closed stream gives its place back.
#[tokio::test]
async fn streams_per_session_are_limited() {
    let fx = streaming(2).await;
    let (addr, bearer) = (fx.addr, fx.bearer.clone());
    let mut a = Conn::open(addr).await;
    let first = a.send_streaming(&get_stream(addr, &bearer)).await;
    assert_eq!(first.status, 200);
    let mut b = Conn::open(addr).await;
    let filter = json!({"toolsListChanged": true});
    let second = b
        .send_streaming(&listen(addr, &bearer, json!(1), filter.clone()))
        .await;
    assert_eq!(second.status, 200);
    let refused = send_once(addr, &get_stream(addr, &bearer)).await;
    assert_eq!(refused.status, 409);
    assert_eq!(
        refused.json()["error"]["data"],
        json!({"maxStreamsPerSession": 2})
    );
    let refused = send_once(addr, &listen(addr, &bearer, json!(2), filter.clone())).await;
    assert_eq!(refused.status, 409);
    assert_eq!(
        refused.json()["error"]["data"],
        json!({"maxStreamsPerSession": 2})
    );
    drop(a);
    // The host notices the closed stream at its next write (a keep-alive).
    let mut reopened = None;
    for _ in 0..40 {
        let mut conn = Conn::open(addr).await;
        if conn.send_streaming(&get_stream(addr, &bearer)).await.status == 200 {
            reopened = Some(conn);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(reopened.is_some(), "the closed stream's place came back");
}

/// Dropping the guard ends the session's streams at once, with nothing
/// more sent (no final response, no notification); the notifier is dead.
#[tokio::test]
async fn revocation_ends_streams() {
    let mut fx = streaming(4).await;
    let (addr, bearer) = (fx.addr, fx.bearer.clone());
    let (mut a, mut b) = (Conn::open(addr).await, Conn::open(addr).await);
    let mut legacy = a.send_streaming(&get_stream(addr, &bearer)).await;
    let mut modern = subscribe(&mut b, addr, &bearer, json!(1)).await;
    let notifier = fx.session().list_changed_notifier();
    fx.revoke();
    notifier.notify();
    assert_eq!(legacy.next_event().await, None);
    assert_eq!(modern.next_event().await, None);
    assert!(!notifier.is_live());
    assert_eq!(fx.host.live_sessions(), 0);
}

/// A graceful shutdown answers each subscription (its listen request's
/// result, with the subscription id) and closes legacy streams, without
/// waiting for the deadline.
#[tokio::test]
async fn graceful_shutdown_ends_streams() {
    let fx = streaming(4).await;
    let (addr, bearer) = (fx.addr, fx.bearer.clone());
    let (mut a, mut b) = (Conn::open(addr).await, Conn::open(addr).await);
    let mut legacy = a.send_streaming(&get_stream(addr, &bearer)).await;
    let mut modern = subscribe(&mut b, addr, &bearer, json!("s")).await;
    let started = std::time::Instant::now();
    let shutdown = tokio::spawn({
        let host = fx.host.clone();
        async move { host.shutdown_within(Duration::from_secs(30)).await }
    });
    let end = event_json(&modern.next_event().await.unwrap());
    let server = json!({"name": "tools", "version": env!("CARGO_PKG_VERSION")});
    assert_eq!(
        end,
        json!({"jsonrpc": "2.0", "id": "s", "result": {"resultType": "complete",
               "_meta": {"io.modelcontextprotocol/subscriptionId": "s",
                         "io.modelcontextprotocol/serverInfo": server}}})
    );
    assert_eq!(modern.next_event().await, None);
    assert_eq!(legacy.next_event().await, None);
    within(shutdown).await.unwrap().expect("drained in time");
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// GET takes every check POST does (Host, Origin, bearer) and is 405
/// without `text/event-stream`, or when the surface cannot change.
#[tokio::test]
async fn get_keeps_every_http_check() {
    let fx = streaming(4).await;
    let (addr, bearer) = (fx.addr, fx.bearer.clone());
    let request = |host_header: &str, extra: &str, accept: &str| {
        format!("GET /mcp HTTP/1.1\r\nHost: {host_header}\r\n{extra}Accept: {accept}\r\n\r\n")
    };
    let auth = format!("Authorization: Bearer {bearer}\r\n");
    let sse = "text/event-stream";
    for (request, status) in [
        (request("evil.example:80", &auth, sse), 403),
        (
            request(
                &addr.to_string(),
                &format!("{auth}Origin: http://evil.example\r\n"),
                sse,
            ),
            403,
        ),
        (request(&addr.to_string(), "", sse), 401),
        (
            request(&addr.to_string(), "Authorization: Bearer eth_nope\r\n", sse),
            401,
        ),
        (request(&addr.to_string(), &auth, "application/json"), 405),
    ] {
        let r = send_once(addr, request.as_bytes()).await;
        assert_eq!(r.status, status, "{request}");
    }
    let fixed = StaticSurface::new(vec![], |_: String, _: Value| async {
        Ok::<_, String>(Value::Null)
    })
    .unwrap();
    let fixed = fx.host.open_session(Arc::new(fixed)).unwrap();
    let r = send_once(addr, &get_stream(addr, &bearer_of(&fixed))).await;
    assert_eq!((r.status, r.header("allow")), (405, Some("POST, DELETE")));
}

/// Sockets the host at `port` holds open: its side of each connection,
/// established or half-closed by the client (`/proc/net/tcp` states 01 and
/// 08). Counted by the host's port, so tests running alongside, each with
/// its own host, do not disturb the count.
#[cfg(target_os = "linux")]
fn host_sockets(port: u16) -> usize {
    let local = format!("0100007F:{port:04X}");
    std::fs::read_to_string("/proc/self/net/tcp")
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            fields.len() > 3 && fields[1] == local && matches!(fields[3], "01" | "08")
        })
        .count()
}

/// After streams of both kinds, a change, the guard's drop and the clients
/// leaving, the host is back where it started: no session, no call in
/// flight, no socket (so no file descriptor) still held.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn streams_leave_nothing_behind() {
    let mut fx = streaming(4).await;
    let (addr, bearer) = (fx.addr, fx.bearer.clone());
    // Another test's host may have had this port before, and its last
    // sockets may still be closing: count from what is there now.
    let before = host_sockets(addr.port());
    let mut conns = Vec::new();
    for i in 0..4 {
        let mut conn = Conn::open(addr).await;
        if i % 2 == 0 {
            assert_eq!(
                conn.send_streaming(&get_stream(addr, &bearer)).await.status,
                200
            );
        } else {
            subscribe(&mut conn, addr, &bearer, json!(i)).await;
        }
        conns.push(conn);
    }
    assert!(host_sockets(addr.port()) >= 4, "the count sees the streams");
    fx.session().list_changed_notifier().notify();
    fx.revoke();
    drop(conns);
    wait_until("the host closes every stream's connection", || {
        host_sockets(addr.port()) <= before
    })
    .await;
    assert_eq!(fx.host.live_sessions(), 0);
    assert_eq!(fx.host.calls_in_flight(), 0);
}
