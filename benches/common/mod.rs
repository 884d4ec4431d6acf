//! What the benches share: a trivial surface, request bytes, runtimes and
//! hosts, a keep-alive HTTP/1.1 client on hyper, and the bare-hyper floor
//! server.
#![allow(dead_code, unreachable_pub)] // each bench uses a different part

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use embacle_tool_host::{
    StaticSurface, Tool, ToolHost, ToolHostConfig, ToolOutcome, ToolSession, ToolSurface,
};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use serde_json::{json, Value};
use tokio::net::{TcpListener, TcpStream};

/// The trivial tool surface the benches call: `tool0` … `tool{n-1}`, each
/// answering its `text` argument back. It implements `ToolSurface` directly,
/// borrowing the arguments, as a surface tuned for speed would.
pub struct Bench {
    tools: Arc<[Tool]>,
}

impl ToolSurface for Bench {
    async fn list_tools(&self) -> Arc<[Tool]> {
        Arc::clone(&self.tools)
    }

    async fn call(&self, _name: &str, arguments: &Value) -> ToolOutcome {
        match arguments.get("text") {
            Some(Value::String(text)) => ToolOutcome::text(text.as_str()),
            _ => ToolOutcome::refused("`text` must be a string"),
        }
    }
}

fn tools(n: usize) -> Arc<[Tool]> {
    (0..n)
        .map(|i| {
            Tool::new(
                format!("tool{i}"),
                "A benchmark tool.",
                json!({"type": "object", "properties": {"text": {"type": "string"}}}),
            )
            .unwrap()
        })
        .collect()
}

/// A [`Bench`] surface with `n` tools.
pub fn surface(n: usize) -> Arc<Bench> {
    Arc::new(Bench { tools: tools(n) })
}

pub type Executor = fn(String, Value) -> std::future::Ready<Result<Value, String>>;

/// The same tools behind a `StaticSurface` with a closure executor, which
/// receives owned copies of the name and arguments (the convenience's cost).
pub fn static_surface(n: usize) -> Arc<StaticSurface<Executor>> {
    let run: Executor =
        |_, args| std::future::ready(Ok(args.get("text").cloned().unwrap_or(Value::Null)));
    Arc::new(StaticSurface::new(tools(n).to_vec(), run).unwrap())
}

/// The host config of the round-trip benches: defaults, except that an idle
/// keep-alive connection is not closed while other benches run.
pub fn bench_config() -> ToolHostConfig {
    ToolHostConfig {
        header_read_timeout: std::time::Duration::from_secs(3600),
        ..ToolHostConfig::default()
    }
}

/// The `Authorization` header value of a session.
pub fn authorization(session: &ToolSession) -> String {
    session.mcp_servers().entries()[0].headers()[0]
        .value()
        .to_owned()
}

/// The JSON-RPC body every round-trip bench sends.
pub const CALL: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tool0","arguments":{"text":"hi"}}}"#;

/// What the floor server answers: the response the host gives to `CALL`.
pub const FLOOR_RESPONSE: &str =
    r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}"#;

/// A bare hyper `service_fn` answering every request with `FLOOR_RESPONSE`:
/// the floor the host's per-call cost is compared with. It reads the body,
/// as the host must, and checks nothing.
pub async fn spawn_floor() -> SocketAddr {
    spawn_floor_with(false).await
}

/// [`spawn_floor`], and with `parse` it also parses the body into a
/// `serde_json::Value` before answering: the least a JSON-RPC server must
/// do.
pub async fn spawn_floor_with(parse: bool) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            stream.set_nodelay(true).unwrap();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    move |request: hyper::Request<hyper::body::Incoming>| async move {
                        let body = request.into_body().collect().await;
                        if parse {
                            let bytes = body.map(|b| b.to_bytes()).unwrap_or_default();
                            let value: Result<Value, _> = serde_json::from_slice(&bytes);
                            std::hint::black_box(value.ok());
                        }
                        let mut response = hyper::Response::new(Full::new(Bytes::from_static(
                            FLOOR_RESPONSE.as_bytes(),
                        )));
                        response.headers_mut().insert(
                            hyper::header::CONTENT_TYPE,
                            hyper::header::HeaderValue::from_static("application/json"),
                        );
                        Ok::<_, Infallible>(response)
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

/// One keep-alive client connection.
pub struct Client {
    sender: SendRequest<Full<Bytes>>,
    host: String,
    authorization: String,
    /// Headers every call adds (an MCP session's id, a protocol version).
    headers: Vec<(&'static str, String)>,
}

impl Client {
    pub async fn connect(addr: SocketAddr, authorization: &str) -> Self {
        let stream = TcpStream::connect(addr).await.unwrap();
        stream.set_nodelay(true).unwrap();
        let (sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .unwrap();
        tokio::spawn(connection);
        Self {
            sender,
            host: addr.to_string(),
            authorization: authorization.to_owned(),
            headers: Vec::new(),
        }
    }

    /// Adds `headers` to every call: `Mcp-Session-Id` and
    /// `MCP-Protocol-Version`, say, as a client of a minted session sends
    /// (Copilot, the SDKs).
    pub fn with_headers(mut self, headers: &[(&'static str, String)]) -> Self {
        self.headers = headers.to_vec();
        self
    }

    /// POSTs `CALL` and reads the whole response; returns its length.
    pub async fn call(&mut self) -> usize {
        let mut request = hyper::Request::post("/mcp")
            .header("host", &self.host)
            .header("authorization", &self.authorization)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        for (name, value) in &self.headers {
            request = request.header(*name, value);
        }
        let request = request
            .body(Full::new(Bytes::from_static(CALL.as_bytes())))
            .unwrap();
        self.sender.ready().await.unwrap();
        let response = self.sender.send_request(request).await.unwrap();
        assert_eq!(response.status(), 200);
        response
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .len()
    }
}

/// The version [`mint_mcp_session`] negotiates.
pub const MCP_SESSION_VERSION: &str = "2025-11-25";

/// Initializes an MCP session on the host at `addr`; the id it minted.
pub async fn mint_mcp_session(addr: SocketAddr, authorization: &str) -> String {
    let mut client = Client::connect(addr, authorization).await;
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{MCP_SESSION_VERSION}","capabilities":{{}},"clientInfo":{{"name":"bench","version":"1"}}}}}}"#
    );
    let request = hyper::Request::post("/mcp")
        .header("host", &client.host)
        .header("authorization", authorization)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    client.sender.ready().await.unwrap();
    let response = client.sender.send_request(request).await.unwrap();
    let id = response.headers()["mcp-session-id"].to_str().unwrap();
    id.to_owned()
}

/// Opens the legacy stream of list changes of MCP session `id` and
/// returns its connection, which the caller keeps and never reads.
pub async fn open_listener(addr: SocketAddr, authorization: &str, id: &str) -> TcpStream {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {authorization}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {id}\r\nMCP-Protocol-Version: {MCP_SESSION_VERSION}\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).await.unwrap();
    assert_eq!(&head[9..12], b"200", "the stream opened");
    stream
}

/// The median of some durations, in nanoseconds.
pub fn median_ns(samples: &mut [u128]) -> u128 {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

/// Runs `setup` on a dedicated server thread with its own current-thread
/// runtime (as hyper's own benches do), keeps what it returns alive there,
/// and hands back `T` (addresses, authorizations).
pub fn server_thread<T, F, Fut>(setup: F) -> T
where
    T: Send + 'static,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = (T, Box<dyn std::any::Any>)>,
{
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        current_thread_runtime().block_on(async move {
            let (value, keep) = setup().await;
            tx.send(value).unwrap();
            std::future::pending::<()>().await;
            drop(keep);
        });
    });
    rx.recv().unwrap()
}

/// A current-thread runtime with every driver enabled.
pub fn current_thread_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A current-thread runtime for the client side.
pub fn client_runtime() -> tokio::runtime::Runtime {
    current_thread_runtime()
}

/// A host with the default config, bound on `runtime` (which drives its
/// accept loop whenever it runs).
pub fn default_host(runtime: &tokio::runtime::Runtime) -> ToolHost {
    runtime
        .block_on(ToolHost::bind(ToolHostConfig::default()))
        .unwrap()
}

/// Times one call on each client in turn, `rounds` times, alternating which
/// goes first; returns each client's median in nanoseconds.
pub async fn interleaved_medians(clients: &mut [Client], rounds: usize) -> Vec<u128> {
    let mut samples = vec![Vec::with_capacity(rounds); clients.len()];
    for round in 0..rounds {
        for k in 0..clients.len() {
            let i = (k + round) % clients.len();
            let start = std::time::Instant::now();
            std::hint::black_box(clients[i].call().await);
            samples[i].push(start.elapsed().as_nanos());
        }
    }
    samples.iter_mut().map(|s| median_ns(s)).collect()
}

/// Calls per second with `connections` concurrent keep-alive connections,
/// each making `calls` calls.
pub async fn throughput(
    addr: SocketAddr,
    authorization: &str,
    connections: usize,
    calls: usize,
) -> f64 {
    let mut clients = Vec::with_capacity(connections);
    for _ in 0..connections {
        clients.push(Client::connect(addr, authorization).await);
    }
    let start = std::time::Instant::now();
    run_concurrently(clients, calls).await;
    (connections * calls) as f64 / start.elapsed().as_secs_f64()
}

/// Makes `calls` calls on each client, all clients at once.
pub async fn run_concurrently(clients: Vec<Client>, calls: usize) {
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|mut client| {
            tokio::spawn(async move {
                for _ in 0..calls {
                    client.call().await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
}

/// Prints one figure in the form `scripts/perf-page` collects for PERFORMANCE.md.
pub fn report(name: &str, value: impl std::fmt::Display) {
    println!("FIGURE {name} = {value}");
}

/// Interleaved medians of two clients' calls (see
/// [`interleaved_medians`]), reported as `PREFIX.A_p50_us`,
/// `PREFIX.B_p50_us` and their ratio `PREFIX.ratio_p50` (A over B).
pub fn report_pair(runtime: &tokio::runtime::Runtime, prefix: &str, [a, b]: [(&str, Client); 2]) {
    let mut clients = [a.1, b.1];
    let medians = runtime.block_on(interleaved_medians(&mut clients, 20_000));
    for (label, median) in [a.0, b.0].iter().zip(&medians) {
        report(
            &format!("{prefix}.{label}_p50_us"),
            format!("{:.1}", *median as f64 / 1e3),
        );
    }
    report(
        &format!("{prefix}.ratio_p50"),
        format!("{:.3}", medians[0] as f64 / medians[1] as f64),
    );
}
