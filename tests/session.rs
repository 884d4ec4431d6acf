//! The session guard's public face: the ACP entry, ids, counts, redaction,
//! and StaticSurface's mapping of executor answers, over real HTTP.

mod support;

use std::sync::Arc;
use std::time::Duration;

use embacle_tool_host::{StaticSurface, Tool, ToolHostConfig};
use serde_json::{json, Value};
use support::*;

/// mcp_servers() serializes to exactly the ACP http entry, with `headers`
/// always present, and its URL and bearer work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_servers_is_the_exact_acp_entry() {
    let fx = Fixture::with(ToolHostConfig {
        server_name: "dravr".to_owned(),
        ..ToolHostConfig::default()
    })
    .await;
    let bearer = &fx.bearer;
    let port = fx.addr.port();
    let expected = format!(
        r#"[{{"type":"http","name":"dravr","url":"http://127.0.0.1:{port}/mcp","headers":[{{"name":"Authorization","value":"Bearer {bearer}"}}]}}]"#
    );
    let servers = fx.session().mcp_servers();
    assert_eq!(
        servers.to_value(),
        serde_json::from_str::<Value>(&expected).unwrap()
    );
    let entry = &servers.entries()[0];
    assert_eq!((entry.name(), entry.headers().len()), ("dravr", 1));
    assert_eq!(entry.headers()[0].name(), "Authorization");
    // 256 secret bits: 64 hex digits after the prefix, slot and generation.
    assert_eq!(bearer.len(), 4 + 8 + 16 + 64);
    assert!(bearer.starts_with("eth_"));
    assert_eq!(fx.ping().await.status, 200);
}

/// No Debug form shows the bearer or its secret part.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debug_never_prints_the_bearer() {
    let fx = Fixture::new().await;
    let (host, session, bearer) = (&fx.host, fx.session(), &fx.bearer);
    let secret = &bearer[bearer.len() - 64..];
    let servers = session.mcp_servers();
    for text in [
        format!("{session:?}"),
        format!("{session:#?}"),
        format!("{servers:?}"),
        format!("{:?}", servers.entries()[0]),
        format!("{:?}", servers.entries()[0].headers()[0]),
        format!("{host:?}"),
    ] {
        assert!(!text.contains(secret), "leaked in {text}");
        assert!(!text.contains(bearer.as_str()), "leaked in {text}");
    }
    assert!(format!("{session:?}").contains("<redacted>"));
}

/// Session ids are distinct and printable; live_sessions tracks live guards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_and_counts() {
    let host = host().await;
    let sessions: Vec<_> = (0..5)
        .map(|_| host.open_session(RecordingSurface::new()).unwrap())
        .collect();
    let mut ids: Vec<_> = sessions.iter().map(|s| s.session_id()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 5);
    assert!(sessions[0].session_id().to_string().starts_with("session-"));
    assert_eq!(host.live_sessions(), 5);
    drop(sessions);
    assert_eq!(host.live_sessions(), 0);
}

/// `first_listing` waits for an agent's first `tools/list` (legacy or
/// modern), not for other requests or another session's listing;
/// `listings_served` counts the listings of this session only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_listing_waits_for_this_sessions_tools_list() {
    let fx = Fixture::new().await;
    let other = fx.host.open_session(RecordingSurface::new()).unwrap();
    let waiter = async {
        fx.session().first_listing().await;
        fx.session().listings_served()
    };
    let agent = async {
        assert_eq!(fx.ping().await.status, 200);
        assert_eq!(fx.call(1, "echo", json!({"text": "hi"})).await.status, 200);
        let other_listing = rpc(
            fx.addr,
            &bearer_of(&other),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        )
        .await;
        assert_eq!(other_listing.status, 200);
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(fx.session().listings_served(), 0, "not yet listed");
        assert_eq!(other.listings_served(), 1);
        assert_eq!(fx.list().await.status, 200);
    };
    let (seen, ()) = within(async { tokio::join!(waiter, agent) }).await;
    assert_eq!(seen, 1);
    let modern = fx.modern(&modern_body(3, "tools/list", json!({}))).await;
    assert_eq!(modern.status, 200);
    assert_eq!(fx.session().listings_served(), 2);
    within(fx.session().first_listing()).await; // at once, now
}

/// A slot reused by a new session never accepts the old session's bearer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reused_slot_rejects_old_bearer() {
    let mut old = Fixture::with(ToolHostConfig {
        max_sessions: 1,
        ..ToolHostConfig::default()
    })
    .await;
    old.revoke();
    let new_surface = RecordingSurface::new();
    let new = old.host.open_session(new_surface.clone()).unwrap();
    let r = old.call(1, "echo", json!({"text": "x"})).await;
    assert_eq!(r.status, 401);
    assert_eq!(new_surface.calls(), 0);
    let r = rpc(
        old.addr,
        &bearer_of(&new),
        call_body(2, "echo", json!({"text": "x"})),
    )
    .await;
    assert_eq!(r.status, 200);
}

/// StaticSurface maps executor answers: a string is text, other JSON is
/// mirrored JSON, `Err` is a refusal with the error's text; tools outside
/// its list never reach the executor.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn static_surface_mapping() {
    let schema = json!({"type": "object"});
    let tools = ["text", "object", "error"]
        .map(|n| Tool::new(n, "", schema.clone()).unwrap())
        .to_vec();
    let executed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = executed.clone();
    let surface = StaticSurface::new(tools, move |name: String, args: Value| {
        counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async move {
            match name.as_str() {
                "text" => Ok(Value::String(format!("got {}", args["n"]))),
                "object" => Ok(json!({"n": args["n"]})),
                _ => Err(format!("cannot do {name}")),
            }
        }
    })
    .unwrap();
    let fx = Fixture::serving(ToolHostConfig::default(), Arc::new(surface)).await;
    let r = fx.call(1, "text", json!({"n": 1})).await;
    assert_eq!(
        r.json()["result"],
        json!({"content":[{"type":"text","text":"got 1"}]})
    );
    let r = fx
        .with_version("2025-06-18", call_body(2, "object", json!({"n": 2})))
        .await;
    assert_eq!(r.json()["result"]["structuredContent"], json!({"n": 2}));
    // Without a version header the call is 2025-03-26's, which has no
    // structuredContent: the value is in the text block alone.
    let r = fx.call(2, "object", json!({"n": 2})).await;
    assert_eq!(
        r.json()["result"],
        json!({"content":[{"type":"text","text":"{\"n\":2}"}]})
    );
    let r = fx.call(3, "error", json!({})).await;
    assert_eq!(
        r.json()["result"],
        json!({"content":[{"type":"text","text":"cannot do error"}],"isError":true})
    );
    let r = fx.call(4, "missing", json!({})).await;
    assert_eq!(r.error_code(), -32602);
    assert_eq!(executed.load(std::sync::atomic::Ordering::SeqCst), 4);
    assert_eq!(fx.session().calls_served(), 4);
}
