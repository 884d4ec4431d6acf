//! Shared test support: a host on port 0, a surface that records what
//! reaches it, and a small HTTP/1.1 client that writes raw bytes, so tests
//! can send exactly the malformed requests they mean to.
#![allow(dead_code, unreachable_pub)] // each test binary uses a different part

pub mod hostile;

use std::collections::BTreeSet;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use embacle_tool_host::{Tool, ToolHost, ToolHostConfig, ToolOutcome, ToolSession, ToolSurface};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

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

/// The tools the recording surface offers, in listing order.
pub const TOOL_NAMES: [&str; 8] = [
    "echo",
    "refuse",
    "fail",
    "panic",
    "slow",
    "withdrawable",
    "count",
    "hang",
];

/// A surface that counts what reaches `call` and can withdraw tools.
pub struct RecordingSurface {
    tools: Vec<Tool>,
    hidden: Mutex<BTreeSet<String>>,
    /// Calls that reached `call`, by any tool.
    pub calls: AtomicUsize,
    /// Names passed to `call`, in order.
    pub seen: Mutex<Vec<String>>,
    /// Set by the test to learn when `slow` has started.
    pub slow_started: tokio::sync::Notify,
    /// Held by `slow` until the test releases it.
    pub slow_release: tokio::sync::Semaphore,
    /// Raised when a `hang` call's future is dropped (it never finishes).
    pub hang_dropped: std::sync::atomic::AtomicBool,
}

impl RecordingSurface {
    pub fn new() -> Arc<Self> {
        let text_schema = json!({
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        });
        let no_args = json!({"type": "object", "additionalProperties": false});
        let tools = TOOL_NAMES
            .iter()
            .map(|name| {
                let schema = if *name == "echo" {
                    &text_schema
                } else {
                    &no_args
                };
                Tool::new(*name, format!("test tool {name}"), schema.clone()).unwrap()
            })
            .collect();
        Arc::new(Self {
            tools,
            hidden: Mutex::new(BTreeSet::new()),
            calls: AtomicUsize::new(0),
            seen: Mutex::new(Vec::new()),
            slow_started: tokio::sync::Notify::new(),
            slow_release: tokio::sync::Semaphore::new(0),
            hang_dropped: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Withdraws a tool: it leaves the list and stops being callable.
    pub fn withdraw(&self, name: &str) {
        self.hidden.lock().unwrap().insert(name.to_owned());
    }

    /// Puts a withdrawn tool back.
    pub fn restore(&self, name: &str) {
        self.hidden.lock().unwrap().remove(name);
    }

    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl ToolSurface for RecordingSurface {
    /// `count` reports progress 1, 2, 3 of 3, 50 ms apart; every other tool
    /// goes through `call`.
    async fn call_with(&self, call: embacle_tool_host::ToolCall<'_>) -> ToolOutcome {
        if call.name() != "count" {
            return self.call(call.name(), call.arguments()).await;
        }
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.seen.lock().unwrap().push("count".to_owned());
        for step in 1..=3 {
            call.progress(f64::from(step), Some(3.0), Some(&format!("step {step}")));
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        ToolOutcome::text("counted")
    }

    async fn list_tools(&self) -> Arc<[Tool]> {
        let hidden = self.hidden.lock().unwrap().clone();
        self.tools
            .iter()
            .filter(|t| !hidden.contains(t.name()))
            .cloned()
            .collect()
    }

    async fn call(&self, name: &str, arguments: &Value) -> ToolOutcome {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.seen.lock().unwrap().push(name.to_owned());
        match name {
            "echo" => match arguments.get("text") {
                Some(Value::String(text)) => ToolOutcome::text(text.clone()),
                _ => ToolOutcome::refused("`text` must be a string"),
            },
            "refuse" => ToolOutcome::refused_with(
                "daily quota reached",
                json!({"quota": 10, "resetsInSeconds": 3600}),
            ),
            "fail" => ToolOutcome::failed("backend unavailable"),
            "panic" => panic!("the panic tool panics"),
            "slow" => {
                self.slow_started.notify_one();
                let _permit = self.slow_release.acquire().await.unwrap();
                ToolOutcome::text("slow done")
            }
            "withdrawable" => ToolOutcome::json(json!({"ok": true})),
            "hang" => {
                struct Dropped<'a>(&'a std::sync::atomic::AtomicBool);
                impl Drop for Dropped<'_> {
                    fn drop(&mut self) {
                        self.0.store(true, Ordering::SeqCst);
                    }
                }
                let _dropped = Dropped(&self.hang_dropped);
                std::future::pending::<()>().await;
                ToolOutcome::text("never")
            }
            other => ToolOutcome::failed(format!("unexpected tool {other}")),
        }
    }
}

/// The session's bearer text (what follows `Bearer `).
pub fn bearer_of(session: &ToolSession) -> String {
    let servers = session.mcp_servers();
    let value = servers.entries()[0].headers()[0].value().to_owned();
    value.strip_prefix("Bearer ").unwrap().to_owned()
}

/// One parsed HTTP response.
#[derive(Debug, Clone)]
pub struct RawResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RawResponse {
    /// The first value of a header, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {:?}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// The JSON-RPC error code in the body.
    pub fn error_code(&self) -> i64 {
        let body = self.json();
        body["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("no error code in {body}"))
    }
}

/// A keep-alive connection that sends raw request bytes.
pub struct Conn {
    stream: TcpStream,
    buffer: Vec<u8>,
}

impl Conn {
    pub async fn open(addr: SocketAddr) -> Self {
        let stream = within(TcpStream::connect(addr)).await.expect("connect");
        stream.set_nodelay(true).unwrap();
        Self {
            stream,
            buffer: Vec::new(),
        }
    }

    /// Wraps a stream the test connected itself.
    pub fn from_stream(stream: TcpStream) -> Self {
        stream.set_nodelay(true).unwrap();
        Self {
            stream,
            buffer: Vec::new(),
        }
    }

    pub async fn send(&mut self, request: &[u8]) -> RawResponse {
        within(self.stream.write_all(request)).await.expect("write");
        self.read_response().await
    }

    pub async fn write(&mut self, bytes: &[u8]) {
        within(self.stream.write_all(bytes)).await.expect("write");
    }

    /// Writes, reporting a failure (the server closed) instead of panicking.
    pub async fn try_write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        within(self.stream.write_all(bytes)).await
    }

    /// Reads one response, using its Content-Length.
    pub async fn read_response(&mut self) -> RawResponse {
        within(self.read_response_unbounded())
            .await
            .expect("connection closed before a response")
    }

    /// Reads one response, or `None` if the server closed the connection
    /// first. Not bounded: wrap it in a timeout.
    pub async fn read_response_unbounded(&mut self) -> Option<RawResponse> {
        let head_end = loop {
            if let Some(end) = find(&self.buffer, b"\r\n\r\n") {
                break end;
            }
            if !self.fill().await {
                return None;
            }
        };
        let head = String::from_utf8(self.buffer[..head_end].to_vec()).expect("ASCII head");
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap();
        let status: u16 = status_line.split(' ').nth(1).unwrap().parse().unwrap();
        let headers: Vec<(String, String)> = lines
            .map(|l| {
                let (k, v) = l.split_once(':').unwrap();
                (k.trim().to_owned(), v.trim().to_owned())
            })
            .collect();
        let length: usize = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            .map_or(0, |(_, v)| v.parse().unwrap());
        let body_start = head_end + 4;
        while self.buffer.len() < body_start + length {
            if !self.fill().await {
                return None;
            }
        }
        let body = self.buffer[body_start..body_start + length].to_vec();
        self.buffer.drain(..body_start + length);
        Some(RawResponse {
            status,
            headers,
            body,
        })
    }

    /// True once the server has closed the connection (reads EOF or reset).
    pub async fn closed_by_server(&mut self) -> bool {
        let mut byte = [0u8; 1];
        matches!(self.stream.read(&mut byte).await, Ok(0) | Err(_))
    }

    async fn fill(&mut self) -> bool {
        let mut chunk = [0u8; 8192];
        match self.stream.read(&mut chunk).await {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                self.buffer.extend_from_slice(&chunk[..n]);
                true
            }
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

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
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in extra {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
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

/// The head of a streamed (chunked) response, and a reader for its events.
pub struct EventStream<'a> {
    conn: &'a mut Conn,
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// Decoded body bytes not yet split into events.
    pending: Vec<u8>,
    ended: bool,
}

impl EventStream<'_> {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The next SSE event (its text without the blank line), or `None` at
    /// the end of the stream. Comments (`: …`) are events too, so tests can
    /// see keep-alives.
    pub async fn next_event(&mut self) -> Option<String> {
        within(self.next_event_unbounded()).await
    }

    async fn next_event_unbounded(&mut self) -> Option<String> {
        loop {
            if let Some(end) = find(&self.pending, b"\n\n") {
                let event = String::from_utf8(self.pending[..end].to_vec()).unwrap();
                self.pending.drain(..end + 2);
                return Some(event);
            }
            if self.ended || !self.read_chunk().await {
                assert!(
                    self.pending.is_empty(),
                    "stream ended mid-event: {:?}",
                    self.pending
                );
                return None;
            }
        }
    }

    /// Reads one chunk of the chunked body; false at the last chunk or EOF.
    async fn read_chunk(&mut self) -> bool {
        let conn = &mut *self.conn;
        let line_end = loop {
            if let Some(end) = find(&conn.buffer, b"\r\n") {
                break end;
            }
            if !conn.fill().await {
                return false;
            }
        };
        let size_text = String::from_utf8(conn.buffer[..line_end].to_vec()).unwrap();
        let size = usize::from_str_radix(size_text.trim(), 16).unwrap();
        while conn.buffer.len() < line_end + 2 + size + 2 {
            if !conn.fill().await {
                return false;
            }
        }
        let data = conn.buffer[line_end + 2..line_end + 2 + size].to_vec();
        conn.buffer.drain(..line_end + 2 + size + 2);
        if size == 0 {
            self.ended = true;
            return false;
        }
        self.pending.extend_from_slice(&data);
        true
    }
}

impl Conn {
    /// Sends a request and reads the head of a streamed response.
    pub async fn send_streaming(&mut self, request: &[u8]) -> EventStream<'_> {
        self.write(request).await;
        let head_end = loop {
            if let Some(end) = find(&self.buffer, b"\r\n\r\n") {
                break end;
            }
            assert!(within(self.fill()).await, "closed before a response head");
        };
        let head = String::from_utf8(self.buffer[..head_end].to_vec()).unwrap();
        self.buffer.drain(..head_end + 4);
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .unwrap()
            .split(' ')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let headers = lines
            .map(|l| {
                let (k, v) = l.split_once(':').unwrap();
                (k.trim().to_owned(), v.trim().to_owned())
            })
            .collect();
        EventStream {
            conn: self,
            status,
            headers,
            pending: Vec::new(),
            ended: false,
        }
    }
}

/// The JSON of an SSE `data:` event.
pub fn event_json(event: &str) -> Value {
    let data = event
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap_or_else(|| panic!("no data line in {event:?}"));
    serde_json::from_str(data).unwrap()
}
