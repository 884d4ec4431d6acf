//! What the agent sends with a call reaches the tool (`ToolCall::request`)
//! and the observer, over real HTTP, in both eras: the request id, the
//! client (from `initialize` before 2026-07-28, from every request's
//! `_meta` in it), the W3C trace context, the session, the agent's own
//! `_meta` keys, and whether progress can reach the client; and what is
//! malformed or past W3C's limits is dropped, in both places alike.

mod support;

use std::sync::{Arc, Mutex};

use embacle_tool_host::observe::{Observer, Outcome};
use embacle_tool_host::{SessionId, Tool, ToolCall, ToolHostConfig, ToolOutcome, ToolSurface};
use serde_json::{json, Value};
use support::*;

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// One call or observation, as plain text, so the two can be compared.
#[derive(Debug, Clone, PartialEq, Default)]
struct Seen {
    session: Option<SessionId>,
    client: Option<(String, Option<String>)>,
    trace: [Option<String>; 3],
    /// The tool's: its `_meta["sessionID"]`, and whether progress reaches
    /// the client. The observer's: the request id.
    extra: (Option<Value>, bool, Option<String>),
}

/// A surface of one tool, `whoami`, that records what its calls carried.
struct Whoami {
    tools: Arc<[Tool]>,
    seen: Mutex<Vec<Seen>>,
}

impl ToolSurface for Whoami {
    async fn list_tools(&self) -> Arc<[Tool]> {
        Arc::clone(&self.tools)
    }

    async fn call_with(&self, call: ToolCall<'_>) -> ToolOutcome {
        let request = call.request();
        let owned = |text: Option<&str>| text.map(str::to_owned);
        self.seen.lock().unwrap().push(Seen {
            session: Some(request.session),
            client: request
                .client
                .map(|c| (c.name.to_owned(), owned(c.version))),
            trace: [
                owned(request.trace.traceparent),
                owned(request.trace.tracestate),
                owned(request.trace.baggage),
            ],
            extra: (
                request.meta.and_then(|m| m.get("sessionID")).cloned(),
                request.progress_reaches_client,
                None,
            ),
        });
        ToolOutcome::text("seen")
    }
}

/// A host serving [`Whoami`], whose observer records each `tools/call`.
async fn host() -> (Fixture<Whoami>, Arc<Mutex<Vec<Seen>>>) {
    let observed = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&observed);
    let observer = Observer::new(move |o| {
        if o.method != Some("tools/call") {
            return;
        }
        assert_eq!(o.outcome, Outcome::Success);
        let owned = |text: Option<&str>| text.map(str::to_owned);
        sink.lock().unwrap().push(Seen {
            session: o.session,
            client: o.client.map(|c| (c.name.to_owned(), owned(c.version))),
            trace: [owned(o.traceparent), owned(o.tracestate), owned(o.baggage)],
            extra: (None, false, owned(o.request_id)),
        });
    });
    let surface = Arc::new(Whoami {
        tools: vec![Tool::new(
            "whoami",
            "Says what it was sent.",
            json!({"type": "object"}),
        )
        .unwrap()]
        .into(),
        seen: Mutex::default(),
    });
    let config = ToolHostConfig {
        observer: Some(observer),
        ..ToolHostConfig::default()
    };
    (Fixture::serving(config, surface).await, observed)
}

/// The last call the tool saw and the last the observer saw.
fn last(fx: &Fixture<Whoami>, observed: &Mutex<Vec<Seen>>) -> (Seen, Seen) {
    let tool = fx.surface.seen.lock().unwrap().pop().expect("the tool ran");
    let observer = observed
        .lock()
        .unwrap()
        .pop()
        .expect("the call was observed");
    (tool, observer)
}

/// Legacy era: the client named at `initialize`, the trace context and the
/// agent's own `_meta` (OpenCode's `sessionID`) with every call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_call_carries_its_client_trace_and_meta() {
    let (fx, observed) = host().await;
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "opencode", "version": "1.0.150"}}});
    let initialized = fx.rpc(init).await;
    let mcp_session = initialized.header("mcp-session-id").unwrap().to_owned();
    let meta = json!({"traceparent": TRACEPARENT, "tracestate": "rojo=00f067aa0ba902b7",
        "baggage": "userId=alice", "sessionID": "ses_7", "progressToken": 3});
    let body = json!({"jsonrpc": "2.0", "id": "call-5", "method": "tools/call",
        "params": {"name": "whoami", "arguments": {}, "_meta": meta}});
    let headers = [("Mcp-Session-Id", mcp_session.as_str())];
    let answered = fx.send(&fx.post_with(&headers, &body.to_string())).await;
    assert_eq!(answered.status, 200, "{}", answered.text());
    let (tool, observer) = last(&fx, &observed);
    let session = Some(fx.session().session_id());
    let client = Some(("opencode".to_owned(), Some("1.0.150".to_owned())));
    let trace = [
        Some(TRACEPARENT.to_owned()),
        Some("rojo=00f067aa0ba902b7".to_owned()),
        Some("userId=alice".to_owned()),
    ];
    assert_eq!(
        (&tool.session, &tool.client, &tool.trace),
        (&session, &client, &trace)
    );
    assert_eq!(
        (&observer.session, &observer.client, &observer.trace),
        (&session, &client, &trace)
    );
    // The agent's own key reaches the tool as sent; with a token, on a
    // request that accepts SSE, progress can reach the client.
    assert_eq!(tool.extra.0, Some(json!("ses_7")));
    assert!(tool.extra.1, "a token and a stream");
    assert_eq!(observer.extra.2.as_deref(), Some("call-5"));

    // Without a token the call runs inline: the same client, borrowed.
    let inline = json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
        "params": {"name": "whoami", "arguments": {}}});
    let answered = fx.send(&fx.post_with(&headers, &inline.to_string())).await;
    assert_eq!(answered.status, 200, "{}", answered.text());
    let (tool, observer) = last(&fx, &observed);
    assert_eq!((&tool.client, &observer.client), (&client, &client));
    assert!(!tool.extra.1, "no token: no progress reaches it");
}

/// 2026-07-28: the client in every request's `_meta`; a numeric id as its
/// digits; progress reaches the client only on a stream it asked for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modern_call_names_its_client_in_meta() {
    let (fx, observed) = host().await;
    let mut body = modern_call(41, "whoami", json!({}));
    body["params"]["_meta"]["io.modelcontextprotocol/clientInfo"] =
        json!({"name": "copilot", "version": "1.0.3"});
    assert_eq!(fx.send(&fx.modern_request(&body)).await.status, 200);
    let (tool, observer) = last(&fx, &observed);
    let client = Some(("copilot".to_owned(), Some("1.0.3".to_owned())));
    assert_eq!((&tool.client, &observer.client), (&client, &client));
    assert_eq!(observer.extra.2.as_deref(), Some("41"));
    assert!(!tool.extra.1, "no progress token: no progress reaches it");

    // With a token, on a stream the request accepts: progress can reach.
    let streamed = call_with_token(2, "whoami", json!("t"));
    let mut conn = fx.conn().await;
    let mut events = conn.send_streaming(&fx.post(&streamed.to_string())).await;
    assert_eq!(events.status, 200);
    events.rest().await;
    let (tool, _) = last(&fx, &observed);
    assert!(
        tool.extra.1,
        "a token and a stream: progress reaches the client"
    );
}

/// What is malformed or past W3C's limits is dropped, for the tool and the
/// observer alike: an oversized `tracestate`, a malformed `baggage`, an
/// all-zero `traceparent` (and the `tracestate` beside it), a
/// `clientInfo` that is not an object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_is_malformed_is_dropped_for_both() {
    let (fx, observed) = host().await;
    let oversized = (0..3)
        .map(|n| format!("k{n}={}", "v".repeat(200)))
        .collect::<Vec<_>>()
        .join(",");
    let cases = [
        json!({"traceparent": TRACEPARENT, "tracestate": oversized, "baggage": "a b=1",
               "io.modelcontextprotocol/clientInfo": "copilot"}),
        json!({"traceparent": "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
               "tracestate": "rojo=1", "baggage": "k=\"quoted\"",
               "io.modelcontextprotocol/clientInfo": {"name": "a\nb"}}),
    ];
    for (n, meta) in cases.into_iter().enumerate() {
        let mut body = modern_call(n as i64, "whoami", json!({}));
        for (key, value) in meta.as_object().unwrap() {
            body["params"]["_meta"][key] = value.clone();
        }
        assert_eq!(fx.send(&fx.modern_request(&body)).await.status, 200);
        let (tool, observer) = last(&fx, &observed);
        let kept_parent = (n == 0).then(|| TRACEPARENT.to_owned());
        assert_eq!(tool.trace, [kept_parent.clone(), None, None], "case {n}");
        assert_eq!(observer.trace, tool.trace, "case {n}");
        assert_eq!((tool.client, observer.client), (None, None), "case {n}");
    }
}
