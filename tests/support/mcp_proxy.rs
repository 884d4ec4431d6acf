//! A forwarder in front of the host that records what an agent's MCP
//! client sends — each request's method and `MCP-Protocol-Version` — and,
//! in its legacy-only form, makes the host look like a 2025-only MCP
//! server: it refuses `server/discover` as such a server does. Every other
//! request (POST, the `GET` stream, DELETE) goes through to the host
//! unchanged, its answer streamed back as it comes. The host's address may
//! be given after the forwarder starts (the host may be bound by another
//! process that needs the forwarder's address first): requests wait for
//! it.
//!
//! Dual-era clients (Copilot's rmcp among them) probe `server/discover`
//! first and fall back to `initialize` on a refusal, so an agent pointed at
//! the legacy-only form takes its 2025 path against the very same host.
//! What the forwarder saw is kept, in order, for the test to check which
//! path the client took.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use http_body_util::{BodyExt, Either, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

type Body = Either<Incoming, Full<Bytes>>;

/// One request the forwarder saw.
#[derive(Clone, Debug)]
pub struct Seen {
    /// The JSON-RPC method of a POST; the HTTP method of anything else
    /// (`GET`, `DELETE`).
    pub method: String,
    /// Its `MCP-Protocol-Version` header, if any.
    pub version: Option<String>,
    /// Its `User-Agent` header, if any.
    pub user_agent: Option<String>,
}

/// A running forwarder.
pub struct McpProxy {
    /// Where clients connect.
    pub addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    upstream: watch::Sender<Option<SocketAddr>>,
}

impl McpProxy {
    /// A forwarder that refuses `server/discover`; requests wait for
    /// [`Self::forward_to`].
    pub async fn legacy_only() -> Self {
        Self::start(true).await
    }

    /// A forwarder that passes everything; requests wait for
    /// [`Self::forward_to`].
    pub async fn recording() -> Self {
        Self::start(false).await
    }

    async fn start(refuse_discover: bool) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&seen);
        let (upstream, known) = watch::channel(None);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (record, known) = (Arc::clone(&record), known.clone());
                let service = hyper::service::service_fn(move |request| {
                    let (record, mut known) = (Arc::clone(&record), known.clone());
                    async move {
                        let upstream = *known.wait_for(Option::is_some).await.unwrap();
                        forward(request, upstream.unwrap(), record, refuse_discover).await
                    }
                });
                tokio::spawn(
                    hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service),
                );
            }
        });
        Self {
            addr,
            seen,
            upstream,
        }
    }

    /// Where requests go from now on.
    pub fn forward_to(&self, upstream: SocketAddr) {
        self.upstream.send_replace(Some(upstream));
    }

    /// Follows `acp_turn`'s output: the line that names the host behind
    /// the forwarder (`[host] the agent is given URL, a forwarder to
    /// http://HOST:PORT/mcp`) says where requests go. For `run_turn`'s
    /// `on_line`.
    pub fn follow(&self, line: &str) {
        let Some(rest) = line.strip_prefix("[host] the agent is given ") else {
            return;
        };
        let upstream = rest.rsplit(' ').next().unwrap();
        let addr = upstream
            .trim_start_matches("http://")
            .trim_end_matches("/mcp");
        self.forward_to(addr.parse().expect("the host's address"));
    }

    /// The methods the forwarder saw so far, in order.
    pub fn seen(&self) -> Vec<String> {
        self.requests().into_iter().map(|s| s.method).collect()
    }

    /// The requests the forwarder saw so far, in order.
    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// Refuses `server/discover` when asked to; sends anything else to
/// `upstream` on a connection of its own.
async fn forward(
    request: Request<Incoming>,
    upstream: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    refuse_discover: bool,
) -> Result<Response<Body>, Infallible> {
    let (mut parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let method = match message["method"].as_str() {
        Some(method) => method.to_owned(),
        None => parts.method.to_string(),
    };
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    seen.lock().unwrap().push(Seen {
        method: method.clone(),
        version: header("mcp-protocol-version"),
        user_agent: header("user-agent"),
    });
    if refuse_discover && method == "server/discover" {
        // What a stateful 2025 server answers to a first request that is
        // not `initialize`: 400, "not initialized".
        let refusal = json!({"jsonrpc": "2.0", "id": message["id"],
            "error": {"code": -32000, "message": "Bad Request: Server not initialized"}});
        let response = Response::builder()
            .status(StatusCode::BAD_REQUEST)
            .header("content-type", "application/json")
            .body(Either::Right(Full::new(Bytes::from(refusal.to_string()))))
            .unwrap();
        return Ok(response);
    }
    // The host checks Host against its own address (DNS rebinding).
    parts
        .headers
        .insert("host", upstream.to_string().parse().unwrap());
    let request = Request::from_parts(parts, Full::new(body));
    let answer = async {
        let stream = TcpStream::connect(upstream).await.ok()?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .ok()?;
        tokio::spawn(connection);
        sender.send_request(request).await.ok()
    };
    Ok(match answer.await {
        Some(response) => response.map(Either::Left),
        None => Response::builder()
            .status(StatusCode::BAD_GATEWAY)
            .body(Either::Right(Full::new(Bytes::new())))
            .unwrap(),
    })
}
