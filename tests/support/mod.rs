//! Shared test support: [`Fixture`], a host on port 0 with one session on
//! the standard [`RecordingSurface`], and helpers for the common request
//! shapes; a small raw HTTP/1.1 client ([`Conn`]) so tests can send exactly
//! the malformed requests they mean to; hostile traffic; a counting
//! allocator.
#![allow(dead_code, unreachable_pub)] // each test binary uses a different part

pub mod agents;
pub mod counting_alloc;
pub mod deadlines;
pub mod hostile;
mod http;
pub mod mcp_proxy;
pub mod processes;
pub mod scripted_model;
pub mod stubs;
mod surface;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use embacle_tool_host::{ToolHost, ToolHostConfig, ToolSession, ToolSurface};
use serde_json::{json, Value};

#[allow(unused_imports)] // each test binary uses a different part
pub use http::{event_json, Conn, EventStream, RawResponse};
#[allow(unused_imports)]
pub use surface::{refusal_payload, RecordingSurface, REFUSAL, TOOL_NAMES};

/// Says that a test's case did not run, and why, past the harness's
/// capture (so a skip does not look like a pass); where the environment
/// sets `EMBACLE_NO_SKIP` (CI does), fails the test instead.
pub fn skipped(why: &str) {
    assert!(
        std::env::var_os("EMBACLE_NO_SKIP").is_none(),
        "{why}, and EMBACLE_NO_SKIP is set: this case must run"
    );
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "SKIPPED: {why}");
}

/// Whether this test runs under Wine (a Windows build on Linux), told by
/// a program only Wine's `system32` holds. Some cases skip there, each
/// naming the Wine limitation that stops it (`scripts/windows-tests`).
pub fn under_wine() -> bool {
    cfg!(windows)
        && std::env::var_os("SystemRoot").is_some_and(|root| {
            std::path::Path::new(&root)
                .join("system32")
                .join("wineboot.exe")
                .is_file()
        })
}

/// Every await in a test runs under this bound, so a hang fails the test.
pub const STEP: Duration = Duration::from_secs(10);

/// Awaits `future`, failing the test if it takes longer than [`STEP`].
pub async fn within<F: Future>(future: F) -> F::Output {
    tokio::time::timeout(STEP, future)
        .await
        .expect("step timed out")
}

/// Polls `condition` every 5 ms until it holds, failing the test with
/// `what` if it does not within [`STEP`].
pub async fn wait_until(what: &str, condition: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + STEP;
    while !condition() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting: {what}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A host with the default config (port 0).
pub async fn host() -> ToolHost {
    host_with(ToolHostConfig::default()).await
}

pub async fn host_with(config: ToolHostConfig) -> ToolHost {
    within(ToolHost::bind(config)).await.expect("bind")
}

/// The config of the lifecycle tests: server name `dravr` and instructions.
pub fn dravr() -> ToolHostConfig {
    ToolHostConfig {
        server_name: "dravr".to_owned(),
        instructions: Some("Use the echo tool.".to_owned()),
        ..ToolHostConfig::default()
    }
}

/// The session's bearer text (what follows `Bearer `).
pub fn bearer_of(session: &ToolSession) -> String {
    let servers = session.mcp_servers();
    let value = servers.entries()[0].headers()[0].value().to_owned();
    value.strip_prefix("Bearer ").unwrap().to_owned()
}

/// A bound host with one open session, and what tests need of them.
pub struct Fixture<S: ToolSurface = RecordingSurface> {
    pub host: ToolHost,
    session: Option<ToolSession>,
    pub surface: Arc<S>,
    pub addr: SocketAddr,
    /// The session's bearer (what follows `Bearer `).
    pub bearer: String,
}

impl Fixture {
    /// A default host serving a fresh [`RecordingSurface`].
    pub async fn new() -> Self {
        Self::with(ToolHostConfig::default()).await
    }

    /// A host with `config` serving a fresh [`RecordingSurface`].
    pub async fn with(config: ToolHostConfig) -> Self {
        Fixture::serving(config, RecordingSurface::new()).await
    }
}

impl<S: ToolSurface> Fixture<S> {
    /// A host with `config` serving `surface`.
    pub async fn serving(config: ToolHostConfig, surface: Arc<S>) -> Self {
        let host = host_with(config).await;
        let session = host.open_session(Arc::clone(&surface)).unwrap();
        Self {
            addr: host.local_addr(),
            bearer: bearer_of(&session),
            session: Some(session),
            surface,
            host,
        }
    }

    /// The session guard (until [`revoke`](Self::revoke)).
    pub fn session(&self) -> &ToolSession {
        self.session.as_ref().expect("the session was revoked")
    }

    /// Drops the session guard: the bearer stops working at once.
    pub fn revoke(&mut self) {
        self.session = None;
    }

    /// The `Authorization` value: `Bearer …`.
    pub fn auth(&self) -> String {
        format!("Bearer {}", self.bearer)
    }

    /// A well-formed POST of `body` with this session's bearer.
    pub fn post(&self, body: &str) -> Vec<u8> {
        post(self.addr, &self.bearer, body)
    }

    /// A POST of `body` with this session's bearer and the extra headers.
    pub fn post_with(&self, extra: &[(&str, &str)], body: &str) -> Vec<u8> {
        let auth = self.auth();
        let mut headers = vec![("Authorization", auth.as_str())];
        headers.extend_from_slice(extra);
        post_with(self.addr, &headers, body)
    }

    /// One request on a fresh connection.
    pub async fn send(&self, request: &[u8]) -> RawResponse {
        send_once(self.addr, request).await
    }

    /// POSTs a body given as text, exactly as written.
    pub async fn rpc_text(&self, body: &str) -> RawResponse {
        self.send(&self.post(body)).await
    }

    /// POSTs a JSON-RPC body.
    pub async fn rpc(&self, body: Value) -> RawResponse {
        rpc(self.addr, &self.bearer, body).await
    }

    /// A `tools/call` of `name` with `arguments`.
    pub async fn call(&self, id: i64, name: &str, arguments: Value) -> RawResponse {
        self.rpc(call_body(id, name, arguments)).await
    }

    /// Starts a `tools/call` on its own connection, in a background task.
    pub fn spawn_call(
        &self,
        id: i64,
        name: &str,
        arguments: Value,
    ) -> tokio::task::JoinHandle<RawResponse> {
        let (addr, bearer) = (self.addr, self.bearer.clone());
        let body = call_body(id, name, arguments);
        tokio::spawn(async move { rpc(addr, &bearer, body).await })
    }

    /// A `tools/list` (id 1).
    pub async fn list(&self) -> RawResponse {
        self.rpc(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
            .await
    }

    /// A `ping` (id 1).
    pub async fn ping(&self) -> RawResponse {
        self.rpc_text(PING).await
    }

    /// POSTs `body` with an `MCP-Protocol-Version` header.
    pub async fn with_version(&self, version: &str, body: Value) -> RawResponse {
        let request = self.post_with(&[("MCP-Protocol-Version", version)], &body.to_string());
        self.send(&request).await
    }

    /// POSTs a 2026-07-28 request with the headers that mirror it.
    pub async fn modern(&self, body: &Value) -> RawResponse {
        self.send(&self.modern_request(body)).await
    }

    /// The bytes of [`modern`](Self::modern)'s request.
    pub fn modern_request(&self, body: &Value) -> Vec<u8> {
        let (method, name) = mirrored(body);
        let mut headers = vec![("MCP-Protocol-Version", MODERN), ("Mcp-Method", &method)];
        headers.extend(name.as_deref().map(|name| ("Mcp-Name", name)));
        self.post_with(&headers, &body.to_string())
    }

    /// A new keep-alive connection to the host.
    pub async fn conn(&self) -> Conn {
        Conn::open(self.addr).await
    }
}

/// A `ping` request body (id 1).
pub const PING: &str = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;

/// A well-formed MCP POST with the given bearer and body.
pub fn post(addr: SocketAddr, bearer: &str, body: &str) -> Vec<u8> {
    post_with(
        addr,
        &[("Authorization", &format!("Bearer {bearer}"))],
        body,
    )
}

/// A POST to /mcp with Host, Content-Type, Accept and the extra headers.
pub fn post_with(addr: SocketAddr, extra: &[(&str, &str)], body: &str) -> Vec<u8> {
    post_as(&addr.to_string(), extra, body)
}

/// [`post_with`], with exactly this `Host` value.
pub fn post_as(authority: &str, extra: &[(&str, &str)], body: &str) -> Vec<u8> {
    let mut headers = vec![
        ("Host", authority),
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    headers.extend_from_slice(extra);
    request("POST /mcp HTTP/1.1", &headers, Some(body))
}

/// A request exactly as given: the request line, every header in order (no
/// defaults, so a test can repeat or omit any of them), and with a body,
/// its `Content-Length` last.
pub fn request(line: &str, headers: &[(&str, &str)], body: Option<&str>) -> Vec<u8> {
    let mut request = format!("{line}\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(body) = body {
        request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    } else {
        request.push_str("\r\n");
    }
    request.into_bytes()
}

/// One request on a fresh connection.
pub async fn send_once(addr: SocketAddr, request: &[u8]) -> RawResponse {
    Conn::open(addr).await.send(request).await
}

/// POSTs a JSON-RPC body with the bearer and returns the response.
pub async fn rpc(addr: SocketAddr, bearer: &str, body: Value) -> RawResponse {
    send_once(addr, &post(addr, bearer, &body.to_string())).await
}

/// A `tools/call` request body.
pub fn call_body(id: i64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": arguments}})
}

/// A `tools/call` body asking for progress with `token`.
pub fn call_with_token(id: i64, name: &str, token: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": {}, "_meta": {"progressToken": token}}})
}

/// A `notifications/cancelled` body with these params.
pub fn cancelled(params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params})
}

/// The stateless revision.
pub const MODERN: &str = "2026-07-28";

/// Every version the host speaks, newest first.
pub const ALL_VERSIONS: [&str; 4] = [MODERN, "2025-11-25", "2025-06-18", "2025-03-26"];

/// The `_meta` envelope a 2026-07-28 request carries.
pub fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    })
}

/// A 2026-07-28 request body: `params` plus the `_meta` envelope.
pub fn modern_body(id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = modern_meta();
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A 2026-07-28 `tools/call` body.
pub fn modern_call(id: i64, name: &str, arguments: Value) -> Value {
    modern_body(
        id,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    )
}

/// What a modern request's headers mirror: its method, and `params.name`
/// when there is one.
fn mirrored(body: &Value) -> (String, Option<String>) {
    let method = body["method"].as_str().unwrap().to_owned();
    let name = body["params"]["name"].as_str().map(str::to_owned);
    (method, name)
}
