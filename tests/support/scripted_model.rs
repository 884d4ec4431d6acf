//! A scripted OpenAI-compatible model endpoint, for running a real agent
//! offline: `POST …/chat/completions`, answered as a stream of
//! `chat.completion.chunk` events.
//!
//! The script: for a prompt that contains a step's trigger, the model makes
//! that step's calls one after the other, one per request (the offered tool
//! whose name ends in `-TOOL`: agents prefix the MCP server's name), each
//! as soon as the previous one's result is in the conversation; once all
//! are made, the answer is text that quotes the last tool result (`The
//! tool said: …`). A call whose tool is not offered in that request ends
//! the turn with text that says so. Every request body is kept, for the
//! test to look at.
//!
//! HTTP/1.1 over a plain socket, one request per connection
//! (`Connection: close`), bodies with `Content-Length`: what the agent's
//! OpenAI client sends. Anything else fails the request loudly (a 400 the
//! test will see as a failed turn), never silently.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the model does for a prompt that contains `trigger`: call each
/// `(tool, arguments)` of `calls` in turn.
#[derive(Clone)]
pub struct ToolCallScript {
    pub trigger: &'static str,
    pub calls: Vec<(&'static str, Value)>,
}

/// A running scripted endpoint.
pub struct ScriptedModel {
    pub addr: SocketAddr,
    /// Every request body received, in order.
    pub requests: Arc<Mutex<Vec<Value>>>,
}

impl ScriptedModel {
    pub async fn start(script: Vec<ToolCallScript>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        let script = Arc::new(script);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (seen, script) = (Arc::clone(&seen), Arc::clone(&script));
                tokio::spawn(async move { serve(stream, &seen, &script).await });
            }
        });
        Self { addr, requests }
    }

    /// The base URL an OpenAI client takes (`…/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }
}

async fn serve(mut stream: TcpStream, seen: &Mutex<Vec<Value>>, script: &[ToolCallScript]) {
    let (status, events) = match read_request(&mut stream).await {
        Ok(body) => {
            let events = answer(&body, script);
            seen.lock().unwrap().push(body);
            (200, events)
        }
        Err(why) => (400, vec![json!({"error": {"message": why}})]),
    };
    let mut payload = String::new();
    for event in &events {
        payload.push_str(&format!("data: {event}\n\n"));
    }
    if status == 200 {
        payload.push_str("data: [DONE]\n\n");
    }
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        if status == 200 { "OK" } else { "Bad Request" },
        payload.len()
    );
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(payload.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// Reads one request; its JSON body, or why it is not one this endpoint
/// serves.
async fn read_request(stream: &mut TcpStream) -> Result<Value, String> {
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
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_ascii_lowercase();
    if !head.starts_with("post ")
        || !head
            .lines()
            .next()
            .unwrap_or("")
            .contains("/chat/completions")
    {
        return Err(format!(
            "not a chat completion request: {}",
            head.lines().next().unwrap_or("")
        ));
    }
    let length: usize = head
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
    serde_json::from_slice(&body[..length]).map_err(|e| format!("the body is not JSON: {e}"))
}

/// The chunks that answer one request, per the script.
fn answer(body: &Value, script: &[ToolCallScript]) -> Vec<Value> {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let model = body["model"].clone();
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 0, "model": model,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let since_prompt = messages
        .iter()
        .rposition(|m| m["role"] == "user")
        .map_or(&messages[..], |at| &messages[at..]);
    let prompt = since_prompt
        .first()
        .and_then(|m| m["content"].as_str())
        .unwrap_or("");
    let results = since_prompt.iter().filter(|m| m["role"] == "tool").count();
    let calls = script
        .iter()
        .find(|s| prompt.contains(s.trigger))
        .map_or(&[][..], |s| &s.calls[..]);
    let text = |text: String| {
        vec![
            chunk(json!({"role": "assistant", "content": ""}), Value::Null),
            chunk(json!({"content": text}), Value::Null),
            chunk(json!({}), json!("stop")),
        ]
    };
    let Some((tool, arguments)) = calls.get(results) else {
        return match since_prompt.last().filter(|m| m["role"] == "tool") {
            Some(last) => text(format!(
                "The tool said: {}",
                last["content"].as_str().unwrap_or("")
            )),
            None => text("No scripted tool was offered.".to_owned()),
        };
    };
    let offered = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|t| {
            let name = t["function"]["name"].as_str()?;
            name.ends_with(&format!("-{tool}")).then(|| name.to_owned())
        });
    match offered {
        Some(name) => vec![
            chunk(
                json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": format!("call_{}", results + 1), "type": "function",
                        "function": {"name": name, "arguments": arguments.to_string()}}]}),
                Value::Null,
            ),
            chunk(json!({}), json!("tool_calls")),
        ],
        // Not offered: say so, so the test's failure shows it.
        None => text(format!("The scripted tool {tool} was not offered.")),
    }
}
