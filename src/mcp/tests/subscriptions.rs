//! Notification streams as the dispatcher opens them: what a
//! `subscriptions/listen` renders, the per-session limit, revoked sessions,
//! and surfaces that never change.

use super::*;
use crate::state::StreamRefused;

/// Dispatches a `subscriptions/listen` that may stream.
async fn listen(lease: &Lease, notifications: Value) -> Reply {
    let body = modern_request(
        "subscriptions/listen",
        json!({"notifications": notifications}),
        MODERN,
    );
    let context = RequestContext {
        headers: modern("subscriptions/listen", None),
        may_stream: true,
        session: crate::state::McpSessionHeader::Absent,
        since: None,
        request_bytes: 0,
        in_batch: false,
    };
    dispatch(lease, &context, body.to_string().as_bytes()).await
}

fn parse(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap()
}

/// `subscriptions/listen` renders the acknowledgement (the honoured filter
/// only, under the listen id), the change notification and the graceful
/// result; a filter without `toolsListChanged` listens for nothing.
#[tokio::test]
async fn listen_renders_its_messages() {
    let fixture = fixture_with(ToolHostConfig::default());
    let (Handled::Listen(subscription), _) = listen(
        &fixture.lease,
        json!({"toolsListChanged": true, "promptsListChanged": true}),
    )
    .await
    else {
        panic!("listen did not stream");
    };
    let meta = json!({"io.modelcontextprotocol/subscriptionId": 7});
    assert_eq!(
        parse(subscription.opening.as_deref().unwrap()),
        json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
               "params": {"_meta": meta, "notifications": {"toolsListChanged": true}}})
    );
    let listening = subscription
        .listening
        .as_ref()
        .expect("tools are listened for");
    assert_eq!(
        listening.slot.audience().announced(),
        fixture.session.list_changes().generation(),
        "a subscription hears of changes from its start"
    );
    assert_eq!(
        parse(&listening.change),
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
               "params": {"_meta": meta}})
    );
    let server = json!({"name": "tools", "version": env!("CARGO_PKG_VERSION")});
    assert_eq!(
        parse(subscription.closing.as_deref().unwrap()),
        json!({"jsonrpc": "2.0", "id": 7, "result": {"resultType": "complete", "_meta": {
            "io.modelcontextprotocol/subscriptionId": 7,
            "io.modelcontextprotocol/serverInfo": server}}})
    );
    let (Handled::Listen(nothing), _) =
        listen(&fixture.lease, json!({"promptsListChanged": true})).await
    else {
        panic!("listen did not stream");
    };
    assert!(nothing.listening.is_none());
    assert_eq!(
        parse(nothing.opening.as_deref().unwrap())["params"]["notifications"],
        json!({})
    );
}

/// One stream past `max_streams_per_session` is a 409-class refusal with
/// the limit in its data; a closed stream gives its place back.
#[tokio::test]
async fn listen_holds_the_stream_limit() {
    let fixture = fixture_with(ToolHostConfig {
        max_streams_per_session: 2,
        ..ToolHostConfig::default()
    });
    let first = listen(&fixture.lease, json!({"toolsListChanged": true})).await;
    let second = listen(&fixture.lease, json!({"toolsListChanged": true})).await;
    let (Handled::Erred(class, _), body) =
        listen(&fixture.lease, json!({"toolsListChanged": true})).await
    else {
        panic!("a third stream opened past the limit of 2");
    };
    assert_eq!(class, ReplyClass::TooManyStreams);
    assert_eq!(
        parse(&body)["error"]["data"],
        json!({"maxStreamsPerSession": 2})
    );
    drop((first, second));
    assert!(matches!(
        listen(&fixture.lease, json!({"toolsListChanged": true})).await,
        (Handled::Listen(_), _)
    ));
}

/// A stream asked for on a lease whose bearer was revoked meanwhile is
/// refused as revoked (401), never as a full session.
#[tokio::test]
async fn streams_of_a_revoked_session_are_refused_as_revoked() {
    let fixture = fixture();
    fixture.shared.slab.revoke(fixture.at);
    assert!(matches!(
        legacy_stream(
            &fixture.lease,
            Arc::clone(fixture.lease.session.list_changes().stateless())
        ),
        Err(StreamRefused::Revoked)
    ));
    let reply = listen(&fixture.lease, json!({"toolsListChanged": true})).await;
    assert!(matches!(reply, (Handled::Revoked, _)));
    let fresh = fixture_with(ToolHostConfig::default());
    fresh.session.list_changes().revoke(); // the guard's drop, before the slab
    assert!(matches!(
        legacy_stream(
            &fresh.lease,
            Arc::clone(fresh.lease.session.list_changes().stateless())
        ),
        Err(StreamRefused::Revoked)
    ));
}

/// A surface whose list cannot change advertises no `listChanged` and
/// serves no streams: a legacy GET is refused as not offered, and a listen
/// is acknowledged with nothing honoured.
#[tokio::test]
async fn a_fixed_surface_offers_no_list_changes() {
    let config = ToolHostConfig::default();
    let shared = Arc::new(Shared::new(config, "127.0.0.1:4321".parse().unwrap()));
    let surface = crate::surface::StaticSurface::new(vec![], |_: String, _: Value| async {
        Ok::<_, String>(Value::Null)
    })
    .unwrap();
    let (_, bearer) = shared.open_session(Arc::new(surface)).unwrap();
    let lease = Lease::acquire(&shared, &bearer).unwrap();
    let init = request("initialize", json!({"protocolVersion": "2025-06-18"}));
    let (_, reply) = post(&lease, legacy(None), init.to_string().as_bytes()).await;
    assert_eq!(
        reply["result"]["capabilities"],
        json!({"tools": {"listChanged": false}})
    );
    let discover = modern_request("server/discover", json!({}), MODERN);
    let (_, reply) = post(
        &lease,
        modern("server/discover", None),
        discover.to_string().as_bytes(),
    )
    .await;
    assert_eq!(reply["result"]["capabilities"], json!({"tools": {}}));
    assert!(matches!(
        legacy_stream(&lease, Arc::clone(lease.session.list_changes().stateless())),
        Err(StreamRefused::NotOffered)
    ));
    let (Handled::Listen(subscription), _) =
        listen(&lease, json!({"toolsListChanged": true})).await
    else {
        panic!("listen did not stream");
    };
    assert!(subscription.listening.is_none());
}
