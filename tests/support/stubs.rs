//! Stand-ins the tests put where the network would be: the reader of the
//! one POST a scripted model endpoint answers, and a proxy that refuses
//! every request and records it. Self-contained (std, tokio and serde_json
//! only), so `tests/embacle-loop` includes this same file (`#[path]`).
#![allow(dead_code)] // each includer uses a different part

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// Reads one POST; its path (with any query) and JSON body, or why it is
/// not one this endpoint serves.
pub async fn read_post(stream: &mut TcpStream) -> Result<(String, Value), String> {
    let mut buffer = Vec::new();
    let head_end = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        let mut chunk = [0u8; 8192];
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return Err("the connection closed mid-head".into()),
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let request_line = head.lines().next().unwrap_or("").to_owned();
    let mut parts = request_line.split(' ');
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if method != "POST" {
        return Err(format!("not a POST: {request_line}"));
    }
    let lower = head.to_ascii_lowercase();
    if lower.contains("\r\ncontent-encoding:") {
        return Err("a compressed request body".into());
    }
    let length: usize = lower
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|value| value.trim().parse().ok())
        .ok_or("the request has no Content-Length")?;
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        let mut chunk = [0u8; 65536];
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return Err("the connection closed mid-body".into()),
            Ok(n) => body.extend_from_slice(&chunk[..n]),
        }
    }
    let body = serde_json::from_slice(&body[..length])
        .map_err(|e| format!("the body is not JSON: {e}"))?;
    Ok((path.to_owned(), body))
}

/// An HTTP proxy that refuses everything (403) and records each request
/// line (`CONNECT host:443 HTTP/1.1`, or an absolute-form `GET`).
pub struct ProxySink {
    addr: SocketAddr,
    attempts: Arc<Mutex<Vec<String>>>,
}

impl ProxySink {
    pub async fn start() -> Self {
        Self::serve(TcpListener::bind("127.0.0.1:0").await.unwrap())
    }

    /// The same on `listener`, bound before the runtime started (its
    /// address already in the environment a child process copies).
    pub fn start_on(listener: std::net::TcpListener) -> Self {
        listener.set_nonblocking(true).unwrap();
        Self::serve(TcpListener::from_std(listener).unwrap())
    }

    fn serve(listener: TcpListener) -> Self {
        let addr = listener.local_addr().unwrap();
        let attempts = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&attempts);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let record = Arc::clone(&record);
                tokio::spawn(async move {
                    let mut stream = BufReader::new(stream);
                    let mut line = String::new();
                    let _ = stream.read_line(&mut line).await;
                    record.lock().unwrap().push(line.trim_end().to_owned());
                    let refusal =
                        "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
                    let _ = stream.get_mut().write_all(refusal.as_bytes()).await;
                });
            }
        });
        Self { addr, attempts }
    }

    /// The proxy variables, in both cases, and `NO_PROXY` for loopback.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let url = format!("http://{}", self.addr);
        let mut env: Vec<(&'static str, String)> = [
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "http_proxy",
            "https_proxy",
            "all_proxy",
        ]
        .into_iter()
        .map(|name| (name, url.clone()))
        .collect();
        for name in ["NO_PROXY", "no_proxy"] {
            env.push((name, "127.0.0.1,localhost,::1".to_owned()));
        }
        env
    }

    pub fn attempts(&self) -> Vec<String> {
        self.attempts.lock().unwrap().clone()
    }
}
