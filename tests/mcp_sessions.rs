//! MCP sessions (`Mcp-Session-Id`, legacy era) over real HTTP: minting,
//! ids that are unknown, foreign, deleted or displaced (404 `-32001`),
//! the per-bearer cap, revocation, the version a header-less request is
//! answered in, each change reaching each MCP session once, and a change
//! that a tool makes reaching the streams before the tool's result.

mod support;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use embacle_tool_host::{ListChangedNotifier, Tool, ToolHostConfig, ToolOutcome, ToolSurface};
use serde_json::{json, Value};
use support::*;

const LIST_CHANGED: &str = "notifications/tools/list_changed";

/// A surface with `unlock`, which reveals `secret_echo` and signals the
/// change before it returns, and `add`, which declares an `outputSchema`.
struct Gate {
    unlocked: AtomicBool,
    notifier: OnceLock<ListChangedNotifier>,
    unlock: Tool,
    secret_echo: Tool,
    add: Tool,
}

impl Gate {
    fn new() -> Arc<Self> {
        let object = json!({"type": "object"});
        let sum = json!({"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]});
        Arc::new(Self {
            unlocked: AtomicBool::new(false),
            notifier: OnceLock::new(),
            unlock: Tool::new("unlock", "Reveals secret_echo.", object.clone()).unwrap(),
            secret_echo: Tool::new("secret_echo", "Echoes text.", object.clone()).unwrap(),
            add: Tool::new("add", "Adds a and b.", object)
                .unwrap()
                .with_output_schema(sum)
                .unwrap(),
        })
    }
}

impl ToolSurface for Gate {
    async fn list_tools(&self) -> Arc<[Tool]> {
        let mut tools = vec![self.unlock.clone(), self.add.clone()];
        if self.unlocked.load(Ordering::SeqCst) {
            tools.push(self.secret_echo.clone());
        }
        tools.into()
    }

    async fn call(&self, name: &str, arguments: &Value) -> ToolOutcome {
        match name {
            "unlock" => {
                self.unlocked.store(true, Ordering::SeqCst);
                self.notifier.get().expect("a notifier").notify();
                ToolOutcome::text("unlocked")
            }
            "secret_echo" if self.unlocked.load(Ordering::SeqCst) => {
                ToolOutcome::text(arguments["text"].as_str().unwrap_or_default())
            }
            "add" => {
                let sum =
                    arguments["a"].as_f64().unwrap_or(0.0) + arguments["b"].as_f64().unwrap_or(0.0);
                ToolOutcome::json(json!({"sum": sum}))
            }
            _ => ToolOutcome::failed("no such tool"),
        }
    }
}

/// A host with the gate, its notifier in place, and `config`.
async fn gated(config: ToolHostConfig) -> Fixture<Gate> {
    let fx = Fixture::serving(config, Gate::new()).await;
    let notifier = fx.session().list_changed_notifier();
    assert!(fx.surface.notifier.set(notifier).is_ok());
    fx
}

fn initialize(version: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}})
}

/// Initializes at `version` with `bearer`; the minted id.
async fn open_mcp_session(addr: SocketAddr, bearer: &str, version: &str) -> String {
    let r = rpc(addr, bearer, initialize(version)).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["result"]["protocolVersion"], version);
    let id = r.header("mcp-session-id").expect("initialize mints an id");
    assert_eq!(id.len(), 32);
    assert!(
        id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
        "{id}"
    );
    id.to_owned()
}

/// A POST of `body` with `bearer`, the session `id` and no version header.
async fn post_in(addr: SocketAddr, bearer: &str, id: &str, body: &Value) -> RawResponse {
    let auth = format!("Bearer {bearer}");
    let headers = [("Authorization", auth.as_str()), ("Mcp-Session-Id", id)];
    send_once(addr, &post_with(addr, &headers, &body.to_string())).await
}

/// A bodiless request (`GET` or `DELETE`) with `bearer` and session `id`.
fn bodiless(method: &str, addr: SocketAddr, bearer: &str, id: Option<&str>) -> Vec<u8> {
    let (host, auth) = (addr.to_string(), format!("Bearer {bearer}"));
    let mut headers = vec![
        ("Host", host.as_str()),
        ("Authorization", auth.as_str()),
        ("Accept", "text/event-stream"),
    ];
    headers.extend(id.map(|id| ("Mcp-Session-Id", id)));
    request(&format!("{method} /mcp HTTP/1.1"), &headers, None)
}

fn list_body() -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"})
}

/// 404 with JSON-RPC `-32001`, the answer clients re-initialize on.
fn assert_session_not_found(r: &RawResponse, what: &str) {
    assert_eq!(r.status, 404, "{what}");
    assert_eq!(r.error_code(), -32001, "{what}");
    assert!(r.error_message().contains("initialize again"), "{what}");
}

/// Each `initialize` mints a fresh id, which is then served (alongside
/// requests that carry none); a made-up id, and one minted under another
/// bearer, are 404 `-32001` for POST, GET and DELETE alike, and a
/// notification naming one is refused too. `initialize` itself mints a new
/// id whatever it names.
#[tokio::test]
async fn ids_are_minted_and_bound_to_their_bearer() {
    let fx = gated(ToolHostConfig::default()).await;
    let (addr, bearer) = (fx.addr, fx.bearer.as_str());
    let first = open_mcp_session(addr, bearer, "2025-11-25").await;
    let second = open_mcp_session(addr, bearer, "2025-11-25").await;
    assert_ne!(first, second);
    assert_eq!(
        post_in(addr, bearer, &first, &list_body()).await.status,
        200
    );
    assert_eq!(fx.list().await.status, 200, "no id: served as before");

    let other = fx.host.open_session(Gate::new()).unwrap();
    let other_bearer = bearer_of(&other);
    let made_up = "0123456789abcdef0123456789abcdef";
    for (who, id) in [(other_bearer.as_str(), first.as_str()), (bearer, made_up)] {
        let r = post_in(addr, who, id, &list_body()).await;
        assert_session_not_found(&r, "POST");
        assert_eq!(r.json()["id"], 7, "the request's id is kept");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_session_not_found(&post_in(addr, who, id, &initialized).await, "notification");
        for method in ["GET", "DELETE"] {
            let r = send_once(addr, &bodiless(method, addr, who, Some(id))).await;
            assert_session_not_found(&r, method);
        }
    }
    let r = post_in(addr, bearer, made_up, &initialize("2025-06-18")).await;
    assert_eq!(r.status, 200, "initialize mints whatever it names");
    assert!(r.header("mcp-session-id").is_some_and(|id| id != made_up));
    // The id is a handle only: a foreign id under no bearer is a 401.
    let auth_free = [("Mcp-Session-Id", first.as_str())];
    let r = send_once(
        addr,
        &post_as(&addr.to_string(), &auth_free, &list_body().to_string()),
    )
    .await;
    assert_eq!(r.status, 401);
}

/// `DELETE` ends an MCP session and its stream (200, then 404 on reuse);
/// a DELETE without an id, or in the 2026-07-28 era, is 405; two ids are
/// a 400.
#[tokio::test]
async fn delete_ends_a_session_and_its_streams() {
    let fx = gated(ToolHostConfig::default()).await;
    let (addr, bearer) = (fx.addr, fx.bearer.as_str());
    let id = open_mcp_session(addr, bearer, "2025-06-18").await;
    let mut stream = Conn::open(addr).await;
    let mut events = stream
        .send_streaming(&bodiless("GET", addr, bearer, Some(&id)))
        .await;
    assert_eq!(events.status, 200);
    assert_eq!(
        send_once(addr, &bodiless("DELETE", addr, bearer, Some(&id)))
            .await
            .status,
        200
    );
    assert_eq!(
        events.rest().await,
        Vec::<String>::new(),
        "the stream ended, silent"
    );
    assert_session_not_found(&post_in(addr, bearer, &id, &list_body()).await, "reuse");
    let r = send_once(addr, &bodiless("DELETE", addr, bearer, Some(&id))).await;
    assert_session_not_found(&r, "a second DELETE");

    let r = send_once(addr, &bodiless("DELETE", addr, bearer, None)).await;
    assert_eq!(
        (r.status, r.header("allow")),
        (405, Some("GET, POST, DELETE"))
    );
    let live = open_mcp_session(addr, bearer, "2025-06-18").await;
    let mut modern = String::from_utf8(bodiless("DELETE", addr, bearer, Some(&live))).unwrap();
    modern = modern.replace("\r\n\r\n", "\r\nMCP-Protocol-Version: 2026-07-28\r\n\r\n");
    assert_eq!(send_once(addr, modern.as_bytes()).await.status, 405);
    assert_eq!(
        post_in(addr, bearer, &live, &list_body()).await.status,
        200,
        "still open"
    );
    let twice = [
        ("Mcp-Session-Id", live.as_str()),
        ("Mcp-Session-Id", live.as_str()),
    ];
    let r = send_once(addr, &fx.post_with(&twice, &list_body().to_string())).await;
    assert_eq!(r.status, 400);
}

/// A client that re-initializes in a loop holds at most
/// `max_mcp_sessions_per_session` ids: each one past it ends the oldest.
#[tokio::test]
async fn sessions_per_bearer_are_capped_oldest_first() {
    let fx = gated(ToolHostConfig {
        max_mcp_sessions_per_session: 3,
        ..ToolHostConfig::default()
    })
    .await;
    let (addr, bearer) = (fx.addr, fx.bearer.as_str());
    let mut ids = Vec::new();
    for _ in 0..50 {
        ids.push(open_mcp_session(addr, bearer, "2025-11-25").await);
    }
    for (i, id) in ids.iter().enumerate() {
        let r = post_in(addr, bearer, id, &list_body()).await;
        match i >= ids.len() - 3 {
            true => assert_eq!(r.status, 200, "session {i} is among the newest"),
            false => assert_session_not_found(&r, "a displaced session"),
        }
    }
}

/// Dropping the guard ends every id and stream at once: the bearer is
/// checked first (401), and the stream ends with nothing more.
#[tokio::test]
async fn revocation_ends_ids_and_streams() {
    let mut fx = gated(ToolHostConfig::default()).await;
    let (addr, bearer) = (fx.addr, fx.bearer.clone());
    let id = open_mcp_session(addr, &bearer, "2025-11-25").await;
    let mut stream = Conn::open(addr).await;
    let mut events = stream
        .send_streaming(&bodiless("GET", addr, &bearer, Some(&id)))
        .await;
    assert_eq!(events.status, 200);
    let notifier = fx.session().list_changed_notifier();
    fx.revoke();
    notifier.notify();
    assert_eq!(events.rest().await, Vec::<String>::new());
    assert_eq!(post_in(addr, &bearer, &id, &list_body()).await.status, 401);
}

/// A request without `MCP-Protocol-Version` is answered in its MCP
/// session's negotiated version, so the listing and the call agree: at
/// 2025-06-18 `add` lists its `outputSchema` and its result carries
/// `structuredContent`; with no session (2025-03-26) neither appears. A
/// batch is 2025-03-26 only, so a header-less batch in a 2025-06-18
/// session is refused.
#[tokio::test]
async fn header_less_requests_use_the_negotiated_version() {
    let fx = gated(ToolHostConfig::default()).await;
    let (addr, bearer) = (fx.addr, fx.bearer.as_str());
    let id = open_mcp_session(addr, bearer, "2025-06-18").await;
    let add = call_body(8, "add", json!({"a": 2, "b": 3}));
    let listed = post_in(addr, bearer, &id, &list_body()).await.json();
    let schema = &listed["result"]["tools"][1]["outputSchema"];
    assert_eq!(schema["required"], json!(["sum"]));
    let called = post_in(addr, bearer, &id, &add).await.json();
    assert_eq!(called["result"]["structuredContent"], json!({"sum": 5.0}));

    let listed = fx.list().await.json();
    assert_eq!(listed["result"]["tools"][1]["name"], "add");
    assert!(listed["result"]["tools"][1].get("outputSchema").is_none());
    let called = fx.rpc(add.clone()).await.json();
    assert!(called["result"].get("structuredContent").is_none());
    assert_eq!(called["result"]["content"][0]["text"], r#"{"sum":5.0}"#);

    let batch = json!([list_body()]);
    let r = post_in(addr, bearer, &id, &batch).await;
    assert_eq!((r.status, r.error_code()), (400, -32600));
    let legacy = open_mcp_session(addr, bearer, "2025-03-26").await;
    let r = post_in(addr, bearer, &legacy, &batch).await;
    assert_eq!(r.status, 200, "a 2025-03-26 session may batch");
}

/// Reads the next event within `limit`: the message's method, `None` when
/// nothing came.
async fn event_within(events: &mut EventStream<'_>, limit: Duration) -> Option<String> {
    let event = events
        .next_event_within(limit)
        .await?
        .expect("the stream ended");
    Some(
        event_json(&event)["method"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

/// A change reaches each MCP session once, on one of its GET streams, and
/// the clients that sent no id once too: two MCP sessions with two streams
/// each and one id-less stream make three notices, never four or more.
#[tokio::test]
async fn each_change_reaches_each_mcp_session_once() {
    let fx = gated(ToolHostConfig {
        max_streams_per_session: 8,
        ..ToolHostConfig::default()
    })
    .await;
    let (addr, bearer) = (fx.addr, fx.bearer.as_str());
    let a = open_mcp_session(addr, bearer, "2025-11-25").await;
    let b = open_mcp_session(addr, bearer, "2025-11-25").await;
    let mut conns = Vec::new();
    for _ in 0..5 {
        conns.push(Conn::open(addr).await);
    }
    let ids = [Some(&a), Some(&a), Some(&b), Some(&b), None];
    let mut streams = Vec::new();
    for (conn, id) in conns.iter_mut().zip(ids) {
        let events = conn
            .send_streaming(&bodiless("GET", addr, bearer, id.map(String::as_str)))
            .await;
        assert_eq!(events.status, 200);
        streams.push(events);
    }
    fx.session().list_changed_notifier().notify();
    let mut heard = Vec::new();
    for events in &mut streams {
        heard.push(event_within(events, Duration::from_millis(300)).await);
    }
    let told = |range: std::ops::Range<usize>| {
        heard[range]
            .iter()
            .filter(|m| m.as_deref() == Some(LIST_CHANGED))
            .count()
    };
    assert_eq!((told(0..2), told(2..4), told(4..5)), (1, 1, 1), "{heard:?}");
}

/// The ordering guarantee, legacy era: when a tool signals a change before
/// it returns, the notice is on the stream's socket before the result is
/// on the call's, so a client that has read the result finds the notice
/// already waiting (read here with a few milliseconds of grace, far less
/// than the 20 ms a trailing coalescing window would take).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_notice_precedes_the_result_of_the_call_that_caused_it() {
    let fx = gated(ToolHostConfig::default()).await;
    let (addr, bearer) = (fx.addr, fx.bearer.as_str());
    let id = open_mcp_session(addr, bearer, "2025-11-25").await;
    let mut stream = Conn::open(addr).await;
    let mut events = stream
        .send_streaming(&bodiless("GET", addr, bearer, Some(&id)))
        .await;
    assert_eq!(events.status, 200);
    let r = post_in(addr, bearer, &id, &call_body(1, "unlock", json!({}))).await;
    assert_eq!(r.first_text(), "unlocked");
    let heard = event_within(&mut events, Duration::from_millis(5)).await;
    assert_eq!(
        heard.as_deref(),
        Some(LIST_CHANGED),
        "the notice came first"
    );
    let relisted = post_in(addr, bearer, &id, &list_body()).await;
    assert!(relisted.tool_names().contains(&"secret_echo".to_owned()));
}

/// The same guarantee on a 2026-07-28 `subscriptions/listen` stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_notice_precedes_the_result_on_a_subscription() {
    let fx = gated(ToolHostConfig::default()).await;
    let mut body = modern_body(
        0,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    body["id"] = json!("sub");
    let mut stream = fx.conn().await;
    let mut events = stream.send_streaming(&fx.modern_request(&body)).await;
    assert_eq!(events.status, 200);
    let ack = event_within(&mut events, STEP).await;
    assert_eq!(
        ack.as_deref(),
        Some("notifications/subscriptions/acknowledged")
    );
    let r = fx.modern(&modern_call(1, "unlock", json!({}))).await;
    assert_eq!(r.first_text(), "unlocked");
    let heard = event_within(&mut events, Duration::from_millis(5)).await;
    assert_eq!(
        heard.as_deref(),
        Some(LIST_CHANGED),
        "the notice came first"
    );
}

/// After the notice, the result waits for the client's re-listing (and a
/// moment for the client to apply it): a client that never re-lists gets
/// its result after the whole wait of 100 ms, never sooner; one that
/// re-lists on the notice finds the result still held when it does, and
/// gets it after its listing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_result_waits_for_the_re_listing_the_notice_asks_for() {
    // Nobody re-lists: held the whole wait.
    let fx = gated(ToolHostConfig::default()).await;
    let (addr, bearer) = (fx.addr, fx.bearer.clone());
    let id = open_mcp_session(addr, &bearer, "2025-11-25").await;
    let mut stream = Conn::open(addr).await;
    let events = stream
        .send_streaming(&bodiless("GET", addr, &bearer, Some(&id)))
        .await;
    assert_eq!(events.status, 200);
    let started = std::time::Instant::now();
    let r = post_in(addr, &bearer, &id, &call_body(1, "unlock", json!({}))).await;
    assert_eq!(r.first_text(), "unlocked");
    assert!(
        started.elapsed() >= Duration::from_millis(100),
        "{:?}",
        started.elapsed()
    );
    drop(events);

    // The client re-lists on the notice: the result is still held then.
    let fx = gated(ToolHostConfig::default()).await;
    let (addr, bearer) = (fx.addr, fx.bearer.clone());
    let id = open_mcp_session(addr, &bearer, "2025-11-25").await;
    let mut stream = Conn::open(addr).await;
    let mut events = stream
        .send_streaming(&bodiless("GET", addr, &bearer, Some(&id)))
        .await;
    let call = tokio::spawn({
        let (bearer, id) = (bearer.clone(), id.clone());
        async move { post_in(addr, &bearer, &id, &call_body(1, "unlock", json!({}))).await }
    });
    let heard = event_within(&mut events, STEP).await;
    assert_eq!(heard.as_deref(), Some(LIST_CHANGED));
    assert!(!call.is_finished(), "the result waits for the re-listing");
    let relisted = post_in(addr, &bearer, &id, &list_body()).await;
    assert!(relisted.tool_names().contains(&"secret_echo".to_owned()));
    assert_eq!(within(call).await.unwrap().first_text(), "unlocked");
    assert_eq!(fx.session().listings_served(), 1);
}

/// A result held for the re-listing ends with its guard: dropped while
/// the result waits, the guard's revocation ends the hold, and the call
/// is answered 401, never with the result of a session that is over. The
/// observer is told the call ran and its result was withheld (not a 401
/// refusal: the tool ran).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_result_ends_with_its_guard() {
    let outcomes = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&outcomes);
    let observer = embacle_tool_host::observe::Observer::new(move |o| {
        if o.method == Some("tools/call") {
            seen.lock().unwrap().push(o.outcome);
        }
    });
    let mut fx = gated(ToolHostConfig {
        observer: Some(observer),
        ..ToolHostConfig::default()
    })
    .await;
    let (addr, bearer) = (fx.addr, fx.bearer.clone());
    let id = open_mcp_session(addr, &bearer, "2025-11-25").await;
    let mut stream = Conn::open(addr).await;
    let mut events = stream
        .send_streaming(&bodiless("GET", addr, &bearer, Some(&id)))
        .await;
    let call = tokio::spawn({
        let (bearer, id) = (bearer.clone(), id.clone());
        async move { post_in(addr, &bearer, &id, &call_body(1, "unlock", json!({}))).await }
    });
    let heard = event_within(&mut events, STEP).await;
    assert_eq!(heard.as_deref(), Some(LIST_CHANGED));
    assert!(!call.is_finished(), "the result is held for the re-listing");
    fx.revoke();
    let answered = within(call).await.unwrap();
    assert_eq!(answered.status, 401, "{}", answered.text());
    assert_eq!(
        *outcomes.lock().unwrap(),
        [embacle_tool_host::observe::Outcome::Withheld]
    );
}
