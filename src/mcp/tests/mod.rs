//! The dispatcher driven without a socket: a `Shared` made from a config, a
//! session on a test surface, and bodies handed straight to [`dispatch`].
//! Each table row is one method, era and error code; what HTTP makes of a
//! reply class is `http/transport.rs`'s table, tested there
//! (`reply_status_table`).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::*;

mod subscriptions;
use crate::auth::SlotRef;
use crate::config::ToolHostConfig;
use crate::jsonrpc::code;
use crate::protocol::{EnvelopeHeaders, Header};
use crate::state::{SessionState, Shared};
use crate::surface::{ToolCall, ToolSurface};
use crate::tool::{Tool, ToolOutcome};

const MODERN: &str = "2026-07-28";

/// Tools for every branch of `tools/call`. `unlisted` is visible but never
/// listed; `visibility_panics` panics in `is_visible`.
struct TestSurface {
    tools: Arc<[Tool]>,
}

impl TestSurface {
    fn new() -> Self {
        let object = json!({"type": "object"});
        let tenant = json!({"type": "object", "properties": {
            "tenant": {"type": "string", "x-mcp-header": "Tenant"}}});
        let tool = |name: &str, schema: &Value| Tool::new(name, "A test tool.", schema.clone());
        let tools = [
            tool("echo", &object),
            tool("list", &object),
            tool("refuse", &object),
            tool("fail", &object),
            tool("panic", &object),
            tool("pending", &object),
            tool("progress", &object),
            tool("tenant", &tenant),
        ];
        Self {
            tools: tools.into_iter().map(Result::unwrap).collect(),
        }
    }
}

impl ToolSurface for TestSurface {
    async fn list_tools(&self) -> Arc<[Tool]> {
        Arc::clone(&self.tools)
    }

    async fn call(&self, name: &str, arguments: &Value) -> ToolOutcome {
        match name {
            "echo" | "tenant" | "unlisted" => ToolOutcome::json(arguments.clone()),
            "list" => ToolOutcome::json(json!([1, 2])),
            "refuse" => ToolOutcome::refused("not today"),
            "fail" => ToolOutcome::failed("the index is gone"),
            "panic" => panic!("tool exploded"),
            "pending" => std::future::pending().await,
            other => ToolOutcome::failed(format!("no tool {other}")),
        }
    }

    async fn call_with(&self, call: ToolCall<'_>) -> ToolOutcome {
        if call.name() != "progress" {
            return self.call(call.name(), call.arguments()).await;
        }
        call.progress(1.0, Some(2.0), Some("half"));
        tokio::task::yield_now().await;
        let enabled = call.reporter().progress_enabled();
        ToolOutcome::text(format!("progress enabled: {enabled}"))
    }

    async fn is_visible(&self, name: &str) -> bool {
        match name {
            "unlisted" => true,
            "visibility_panics" => panic!("is_visible exploded"),
            _ => self.tools.iter().any(|t| t.name() == name),
        }
    }
}

/// A host's state with one session on the test surface; no listener.
struct Fixture {
    shared: Arc<Shared>,
    session: Arc<SessionState>,
    lease: Lease,
    at: SlotRef,
}

fn fixture_with(config: ToolHostConfig) -> Fixture {
    let shared = Arc::new(Shared::new(config, "127.0.0.1:4321".parse().unwrap()));
    let (session, bearer) = shared.open_session(Arc::new(TestSurface::new())).unwrap();
    let lease = Lease::acquire(&shared, &bearer).expect("a fresh bearer is live");
    Fixture {
        shared,
        session,
        lease,
        at: bearer.at,
    }
}

fn fixture() -> Fixture {
    fixture_with(ToolHostConfig {
        server_name: "dravr".to_owned(),
        instructions: Some("Use echo.".to_owned()),
        ..ToolHostConfig::default()
    })
}

/// Headers of a legacy request at `version` (`None`: no header).
fn legacy(version: Option<&'static str>) -> EnvelopeHeaders<'static> {
    EnvelopeHeaders {
        protocol_version: version.map_or(Header::Absent, |v| Header::One(v.as_bytes())),
        ..EnvelopeHeaders::default()
    }
}

/// Headers of a modern request that mirror its method and tool name.
fn modern(method: &'static str, name: Option<&'static str>) -> EnvelopeHeaders<'static> {
    EnvelopeHeaders {
        protocol_version: Header::One(MODERN.as_bytes()),
        method: Header::One(method.as_bytes()),
        name: name.map_or(Header::Absent, |n| Header::One(n.as_bytes())),
        params: &[],
    }
}

fn request(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
}

/// A modern request: `params` plus the `_meta` envelope at `version`.
fn modern_request(method: &str, mut params: Value, version: &str) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    request(method, params)
}

fn call(name: &str, arguments: Value) -> Value {
    request("tools/call", json!({"name": name, "arguments": arguments}))
}

fn modern_call(name: &str, arguments: Value) -> Value {
    modern_request(
        "tools/call",
        json!({"name": name, "arguments": arguments}),
        MODERN,
    )
}

/// A reply's class as the tables compare it: a complete reply's, or one
/// that wrote nothing (`Accepted`, a 202) or met a revocation (`Revoked`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Of(ReplyClass),
    Accepted,
    Revoked,
}

impl From<ReplyClass> for Class {
    fn from(class: ReplyClass) -> Self {
        Self::Of(class)
    }
}

/// Dispatches one body with JSON responses only; the class and the body
/// (`null` when empty).
async fn post(lease: &Lease, headers: EnvelopeHeaders<'_>, body: &[u8]) -> (Class, Value) {
    let context = RequestContext {
        headers,
        may_stream: false,
        session: crate::state::McpSessionHeader::Absent,
        since: None,
        request_bytes: 0,
        in_batch: false,
    };
    let (handled, body) = dispatch(lease, &context, body).await;
    let class = match handled {
        Handled::Erred(class, _) => Class::Of(class),
        Handled::Wrote | Handled::Initialized(_) => Class::Of(ReplyClass::Answer),
        Handled::Silent => return (Class::Accepted, Value::Null),
        Handled::Revoked => return (Class::Revoked, Value::Null),
        Handled::Stream(_) | Handled::Listen(_) => panic!("a JSON-only request streamed"),
    };
    match body.is_empty() {
        true => (class, Value::Null),
        false => (class, serde_json::from_slice(&body).unwrap()),
    }
}

/// What a row expects of the reply body.
enum Expect {
    /// A JSON-RPC error with this code.
    Error(i32),
    /// This value at this JSON pointer.
    At(&'static str, Value),
    /// Nothing at this JSON pointer.
    Absent(&'static str),
    /// No body.
    Empty,
}

struct Row {
    what: &'static str,
    headers: EnvelopeHeaders<'static>,
    body: String,
    class: Class,
    expect: Expect,
}

fn row(
    what: &'static str,
    headers: EnvelopeHeaders<'static>,
    body: impl ToString,
    class: impl Into<Class>,
    expect: Expect,
) -> Row {
    Row {
        what,
        headers,
        body: body.to_string(),
        class: class.into(),
        expect,
    }
}

async fn run_rows(rows: Vec<Row>) {
    let fixture = fixture();
    for Row {
        what,
        headers,
        body,
        class,
        expect,
    } in rows
    {
        let (got_class, reply) = post(&fixture.lease, headers, body.as_bytes()).await;
        assert_eq!(got_class, class, "{what}: {reply}");
        match expect {
            Expect::Error(code) => assert_eq!(reply["error"]["code"], code, "{what}: {reply}"),
            Expect::At(pointer, value) => {
                assert_eq!(reply.pointer(pointer), Some(&value), "{what}: {reply}")
            }
            Expect::Absent(pointer) => assert_eq!(reply.pointer(pointer), None, "{what}: {reply}"),
            Expect::Empty => assert_eq!(reply, Value::Null, "{what}"),
        }
    }
}

/// Every legacy-era method, and the error codes of each.
#[rustfmt::skip] // one row per line: the table is the test
#[tokio::test]
async fn legacy_methods() {
    use Expect::*;
    use ReplyClass::*;
    let v = legacy(Some("2025-06-18"));
    let init = |version: &str| request("initialize", json!({"protocolVersion": version}));
    run_rows(vec![
        row("initialize, known version", legacy(None), init("2025-06-18"), Answer, At("/result/protocolVersion", json!("2025-06-18"))),
        row("initialize, unknown version", legacy(None), init("1999-01-01"), Answer, At("/result/protocolVersion", json!("2025-11-25"))),
        row("initialize, tools only", legacy(None), init("2025-06-18"), Answer, At("/result/capabilities", json!({"tools": {"listChanged": true}}))),
        row("initialize, server name", legacy(None), init("2025-06-18"), Answer, At("/result/serverInfo/name", json!("dravr"))),
        row("initialize, instructions", legacy(None), init("2025-06-18"), Answer, At("/result/instructions", json!("Use echo."))),
        row("initialize, no version", legacy(None), request("initialize", json!({})), Answer, Error(code::INVALID_PARAMS)),
        row("ping", v, request("ping", json!({})), Answer, At("/result", json!({}))),
        row("tools/list", v, request("tools/list", json!({})), Answer, At("/result/tools/0/name", json!("echo"))),
        row("tools/list, no modern envelope", v, request("tools/list", json!({})), Answer, Absent("/result/resultType")),
        row("tools/list, null cursor", v, request("tools/list", json!({"cursor": null})), Answer, At("/result/tools/7/name", json!("tenant"))),
        row("tools/list, a cursor", v, request("tools/list", json!({"cursor": "x"})), Answer, Error(code::INVALID_PARAMS)),
        row("call echo", v, call("echo", json!({"q": 1})), Answer, At("/result/structuredContent", json!({"q": 1}))),
        row("call, array result", v, call("list", json!({})), Answer, Absent("/result/structuredContent")),
        row("call refused", v, call("refuse", json!({})), Answer, At("/result/isError", json!(true))),
        row("call failed", v, call("fail", json!({})), Answer, Error(code::INTERNAL_ERROR)),
        row("call panicked", v, call("panic", json!({})), Answer, Error(code::INTERNAL_ERROR)),
        row("call unknown", v, call("nope", json!({})), Answer, At("/error/message", json!("Unknown tool: nope"))),
        row("call, invalid name", v, call("no such!", json!({})), Answer, At("/error/message", json!("Unknown tool"))),
        row("call, visibility panics", v, call("visibility_panics", json!({})), Answer, At("/error/message", json!("the tool surface panicked"))),
        row("call, no name", v, request("tools/call", json!({})), Answer, Error(code::INVALID_PARAMS)),
        row("call, arguments not an object", v, call("echo", json!([1])), Answer, Error(code::INVALID_PARAMS)),
        row("call, null arguments", v, call("echo", Value::Null), Answer, At("/result/structuredContent", json!({}))),
        row("unknown method", v, request("resources/list", json!({})), Answer, Error(code::METHOD_NOT_FOUND)),
        row("server/discover is modern only", v, request("server/discover", json!({})), Answer, Error(code::METHOD_NOT_FOUND)),
    ])
    .await;
}

/// Every modern-era method, its envelope, and the era's own error codes.
#[rustfmt::skip] // one row per line: the table is the test
#[tokio::test]
async fn modern_methods() {
    use Expect::*;
    use ReplyClass::*;
    let discover = modern_request("server/discover", json!({}), MODERN);
    let list = modern_request("tools/list", json!({}), MODERN);
    let server_info = "/result/_meta/io.modelcontextprotocol~1serverInfo/name";
    let tenant = EnvelopeHeaders {
        params: &[("tenant", b"acme")],
        ..modern("tools/call", Some("tenant"))
    };
    run_rows(vec![
        row("discover", modern("server/discover", None), &discover, Answer, At("/result/supportedVersions/0", json!(MODERN))),
        row("discover, capabilities", modern("server/discover", None), &discover, Answer, At("/result/capabilities", json!({"tools": {"listChanged": true}}))),
        row("discover, ttl", modern("server/discover", None), &discover, Answer, At("/result/ttlMs", json!(0))),
        row("tools/list, scope", modern("tools/list", None), &list, Answer, At("/result/cacheScope", json!("private"))),
        row("tools/list, server info", modern("tools/list", None), &list, Answer, At(server_info, json!("dravr"))),
        row("call echo", modern("tools/call", Some("echo")), modern_call("echo", json!({"q": 1})), Answer, At("/result/resultType", json!("complete"))),
        row("call, no ttl", modern("tools/call", Some("echo")), modern_call("echo", json!({})), Answer, Absent("/result/ttlMs")),
        row("call, array result", modern("tools/call", Some("list")), modern_call("list", json!({})), Answer, At("/result/structuredContent", json!([1, 2]))),
        row("call, param header", tenant, modern_call("tenant", json!({"tenant": "acme"})), Answer, At("/result/structuredContent/tenant", json!("acme"))),
        row("call, param header missing", modern("tools/call", Some("tenant")), modern_call("tenant", json!({"tenant": "acme"})), Malformed, Error(code::HEADER_MISMATCH)),
        row("call, visible but unlisted", modern("tools/call", Some("unlisted")), modern_call("unlisted", json!({})), Answer, Error(code::INVALID_PARAMS)),
        row("call, Mcp-Name differs", modern("tools/call", Some("fail")), modern_call("echo", json!({})), Malformed, Error(code::HEADER_MISMATCH)),
        row("Mcp-Method differs", modern("tools/call", None), &list, Malformed, Error(code::HEADER_MISMATCH)),
        row("unsupported version", EnvelopeHeaders { protocol_version: Header::One(b"2099-01-01"), ..modern("tools/list", None) }, modern_request("tools/list", json!({}), "2099-01-01"), Malformed, Error(code::UNSUPPORTED_PROTOCOL_VERSION)),
        row("no client capabilities", modern("tools/list", None), request("tools/list", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}})), Malformed, Error(code::INVALID_PARAMS)),
        row("ping is legacy only", modern("ping", None), modern_request("ping", json!({}), MODERN), NotFound, Error(code::METHOD_NOT_FOUND)),
        row("initialize is legacy only", modern("initialize", None), modern_request("initialize", json!({}), MODERN), NotFound, Error(code::METHOD_NOT_FOUND)),
        row("listen without SSE", modern("subscriptions/listen", None), modern_request("subscriptions/listen", json!({"notifications": {"toolsListChanged": true}}), MODERN), Malformed, Error(code::INVALID_REQUEST)),
        row("envelope lost", legacy(Some(MODERN)), request("tools/list", json!({})), Malformed, Error(code::INVALID_PARAMS)),
    ])
    .await;
}

/// Bodies that are not one request: bad JSON, bad envelopes, notifications,
/// responses, and batches with every rule they are held to.
#[rustfmt::skip] // one row per line: the table is the test
#[tokio::test]
async fn bodies_and_batches() {
    use Class::Accepted;
    use Expect::*;
    use ReplyClass::*;
    let ping = request("ping", json!({}));
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let too_long = Value::Array(vec![ping.clone(); 33]);
    let init = request("initialize", json!({"protocolVersion": "2025-03-26"}));
    run_rows(vec![
        row("not JSON", legacy(None), "{", Malformed, Error(code::PARSE_ERROR)),
        row("bad envelope", legacy(None), json!({"jsonrpc": "1.0", "id": 1, "method": "ping"}), Malformed, Error(code::INVALID_REQUEST)),
        row("unknown legacy version", legacy(Some("1999-01-01")), &ping, Malformed, Error(code::INVALID_REQUEST)),
        row("a notification", legacy(None), &note, Accepted, Empty),
        row("a client response", legacy(None), json!({"jsonrpc": "2.0", "id": 1, "result": {}}), Accepted, Empty),
        row("a batch", legacy(None), json!([ping, note, request("tools/list", json!({}))]), Answer, At("/1/result/tools/0/name", json!("echo"))),
        row("a batch skips notifications", legacy(None), json!([note, ping]), Answer, Absent("/1")),
        row("a batch of notifications", legacy(None), json!([note, note]), Accepted, Empty),
        row("a batch in 2025-06-18", legacy(Some("2025-06-18")), json!([ping]), Malformed, Error(code::INVALID_REQUEST)),
        row("an empty batch", legacy(None), "[]", Malformed, Error(code::INVALID_REQUEST)),
        row("a batch over the limit", legacy(None), &too_long, Malformed, At("/error/data/maxBatchLength", json!(32))),
        row("initialize in a batch", legacy(None), json!([init]), Answer, At("/0/error/code", json!(code::INVALID_REQUEST))),
    ])
    .await;
}

/// A served call is counted; a failed one is not; the count is the
/// session's own.
#[tokio::test]
async fn calls_served_counts_successes_and_refusals() {
    let fixture = fixture();
    for name in ["echo", "refuse", "fail", "panic", "nope"] {
        post(
            &fixture.lease,
            legacy(None),
            call(name, json!({})).to_string().as_bytes(),
        )
        .await;
    }
    assert_eq!(fixture.session.calls_served(), 2);
    assert_eq!(fixture.shared.calls_running.load(Ordering::Relaxed), 0);
}

/// A lease taken before the bearer was revoked still reads the list, but
/// its call is refused before the surface runs: the reply is `Revoked`.
#[tokio::test]
async fn revoked_mid_request_never_reaches_the_surface() {
    let fixture = fixture();
    fixture.shared.slab.revoke(fixture.at);
    let body = call("echo", json!({})).to_string();
    let (class, reply) = post(&fixture.lease, legacy(None), body.as_bytes()).await;
    assert_eq!((class, reply), (Class::Revoked, Value::Null));
    assert_eq!(fixture.session.calls_served(), 0);
}

/// With a progress token but no SSE (or SSE but no token), the call is
/// answered inline and its reporter is disabled: the tool itself sees
/// `is_enabled() == false`, and the reply is one JSON response.
#[tokio::test]
async fn progress_without_a_stream_is_disabled() {
    let fixture = fixture();
    let with_token = request(
        "tools/call",
        json!({"name": "progress", "_meta": {"progressToken": "p"}}),
    );
    for (may_stream, body) in [(false, with_token), (true, call("progress", json!({})))] {
        let context = RequestContext {
            headers: legacy(None),
            may_stream,
            session: crate::state::McpSessionHeader::Absent,
            since: None,
            request_bytes: 0,
            in_batch: false,
        };
        let (Handled::Wrote, body) =
            dispatch(&fixture.lease, &context, body.to_string().as_bytes()).await
        else {
            panic!("a call without both a token and SSE was not answered inline");
        };
        let reply: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            reply["result"]["content"][0]["text"],
            "progress enabled: false"
        );
    }
}

/// With a token and SSE, the reply is a stream: its future runs the call
/// (which sees progress enabled) and yields the final response, and the
/// report it made waits in the stream's progress state.
#[tokio::test]
async fn progress_with_a_stream_streams() {
    let fixture = fixture();
    let body = request(
        "tools/call",
        json!({"name": "progress", "_meta": {"progressToken": "p"}}),
    );
    let context = RequestContext {
        headers: legacy(None),
        may_stream: true,
        session: crate::state::McpSessionHeader::Absent,
        since: None,
        request_bytes: 0,
        in_batch: false,
    };
    let (Handled::Stream(streamed), _) =
        dispatch(&fixture.lease, &context, body.to_string().as_bytes()).await
    else {
        panic!("a call with a token and SSE did not stream");
    };
    let StreamedCall { call, events } = *streamed;
    let last = call.await;
    let frames: Vec<Value> = last
        .iter()
        .map(|frame| {
            let frame = std::str::from_utf8(frame).unwrap();
            let data = frame.strip_prefix("event: message\ndata: ").unwrap();
            serde_json::from_str(data.trim_end()).unwrap()
        })
        .collect();
    assert_eq!(frames.len(), 2, "the waiting report, then the result");
    assert_eq!(
        frames[1]["result"]["content"][0]["text"],
        "progress enabled: true"
    );
    assert!(events.close().is_empty(), "the call closed its events");
    assert_eq!(
        frames[0],
        json!({"jsonrpc": "2.0", "method": "notifications/progress",
               "params": {"progressToken": "p", "progress": 1.0, "total": 2.0, "message": "half"}})
    );
}

/// `notifications/cancelled` for a call in flight ends it without a
/// response (202), and the call leaves the in-flight list.
#[tokio::test]
async fn cancelled_call_gets_no_response() {
    let fixture = fixture();
    let lease = fixture.lease.clone();
    let pending = tokio::spawn(async move {
        let body = call("pending", json!({})).to_string();
        post(&lease, legacy(None), body.as_bytes()).await
    });
    while fixture.shared.calls_running.load(Ordering::Relaxed) == 0 {
        tokio::task::yield_now().await;
    }
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 7}});
    let (class, _) = post(&fixture.lease, legacy(None), cancel.to_string().as_bytes()).await;
    assert_eq!(class, Class::Accepted);
    assert_eq!(pending.await.unwrap(), (Class::Accepted, Value::Null));
    assert_eq!(fixture.shared.calls_running.load(Ordering::Relaxed), 0);
}

/// A call past `call_timeout` is answered `-32603` naming the limit, at the
/// limit exactly (the clock is paused, so Tokio jumps straight to it).
#[tokio::test(start_paused = true)]
async fn call_timeout_is_exact() {
    let fixture = fixture_with(ToolHostConfig {
        call_timeout: Some(Duration::from_secs(30)),
        ..ToolHostConfig::default()
    });
    let started = tokio::time::Instant::now();
    let body = call("pending", json!({})).to_string();
    let (class, reply) = post(&fixture.lease, legacy(None), body.as_bytes()).await;
    assert_eq!(started.elapsed(), Duration::from_secs(30));
    assert_eq!(class, Class::Of(ReplyClass::Answer));
    assert_eq!(reply["error"]["code"], code::INTERNAL_ERROR);
    assert_eq!(reply["error"]["data"], json!({"timeLimitMs": 30_000}));
    assert_eq!(fixture.shared.calls_running.load(Ordering::Relaxed), 0);
}
