//! A small HTTP/1.1 client that writes raw bytes, so tests can send exactly
//! the malformed requests they mean to, and reads plain and streamed (SSE)
//! responses.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::within;

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
        header_in(&self.headers, name)
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

    /// The body as (lossy) text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The JSON-RPC error code in the body.
    pub fn error_code(&self) -> i64 {
        let body = self.json();
        body["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("no error code in {body}"))
    }

    /// The JSON-RPC error message in the body.
    pub fn error_message(&self) -> String {
        let body = self.json();
        body["error"]["message"]
            .as_str()
            .unwrap_or_else(|| panic!("no error message in {body}"))
            .to_owned()
    }

    /// The text of the result's first content item.
    pub fn first_text(&self) -> Value {
        self.json()["result"]["content"][0]["text"].clone()
    }

    /// The names in a `tools/list` result, in order.
    pub fn tool_names(&self) -> Vec<String> {
        self.json()["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("no tool list in {}", self.json()))
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    }
}

fn header_in<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// A response head's status and headers.
fn parse_head(head: &[u8]) -> (u16, Vec<(String, String)>) {
    let head = std::str::from_utf8(head).expect("ASCII head");
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
    (status, headers)
}

/// A keep-alive connection that sends raw request bytes.
pub struct Conn {
    stream: TcpStream,
    buffer: Vec<u8>,
}

impl Conn {
    pub async fn open(addr: SocketAddr) -> Self {
        Self::from_stream(within(TcpStream::connect(addr)).await.expect("connect"))
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
        self.write(request).await;
        self.read_response().await
    }

    pub async fn write(&mut self, bytes: &[u8]) {
        self.try_write(bytes).await.expect("write");
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
        let head_end = self.read_head().await?;
        let (status, headers) = parse_head(&self.buffer[..head_end]);
        let length: usize = header_in(&headers, "content-length").map_or(0, |v| v.parse().unwrap());
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

    /// Sends a request and reads the head of a streamed response.
    pub async fn send_streaming(&mut self, request: &[u8]) -> EventStream<'_> {
        self.write(request).await;
        let head_end = within(self.read_head())
            .await
            .expect("closed before a response head");
        let (status, headers) = parse_head(&self.buffer[..head_end]);
        self.buffer.drain(..head_end + 4);
        EventStream {
            conn: self,
            status,
            headers,
            pending: Vec::new(),
            ended: false,
        }
    }

    /// True once the server has closed the connection (reads EOF or reset).
    pub async fn closed_by_server(&mut self) -> bool {
        let mut byte = [0u8; 1];
        matches!(self.stream.read(&mut byte).await, Ok(0) | Err(_))
    }

    /// Reads until a whole head is buffered; its length, or `None` at EOF.
    async fn read_head(&mut self) -> Option<usize> {
        loop {
            if let Some(end) = find(&self.buffer, b"\r\n\r\n") {
                return Some(end);
            }
            if !self.fill().await {
                return None;
            }
        }
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
        header_in(&self.headers, name)
    }

    /// The next SSE event (its text without the blank line), or `None` at
    /// the end of the stream. Comments (`: …`) are events too, so tests can
    /// see keep-alives.
    pub async fn next_event(&mut self) -> Option<String> {
        within(self.next_event_unbounded()).await
    }

    /// The next event if it arrives within `limit`: `None` when it did not
    /// (the stream may still be open), `Some(None)` at the stream's end.
    pub async fn next_event_within(&mut self, limit: Duration) -> Option<Option<String>> {
        tokio::time::timeout(limit, self.next_event_unbounded())
            .await
            .ok()
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

    /// Every remaining event, to the end of the stream.
    pub async fn rest(&mut self) -> Vec<String> {
        let mut events = Vec::new();
        while let Some(event) = self.next_event().await {
            events.push(event);
        }
        events
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

/// The JSON of an SSE `data:` event.
pub fn event_json(event: &str) -> Value {
    let data = event
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap_or_else(|| panic!("no data line in {event:?}"));
    serde_json::from_str(data).unwrap()
}
