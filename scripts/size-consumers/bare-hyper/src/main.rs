//! The same `echo` tool served by hand on hyper and serde_json: a bearer
//! checked, JSON-RPC `initialize`, `tools/list` and `tools/call`; prints
//! the `mcpServers` entry and serves until killed.
use std::convert::Infallible;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use serde_json::{json, Value};

const BEARER: &str = "Bearer not-a-secret-only-a-shape";

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    println!(
        "{}",
        json!({"type": "http", "name": "tools", "url": url,
               "headers": [{"name": "Authorization", "value": BEARER}]})
    );
    loop {
        let (stream, _) = listener.accept().await?;
        tokio::spawn(async move {
            let service = hyper::service::service_fn(answer);
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn answer(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    if request.headers().get("authorization").map(|v| v.as_bytes()) != Some(BEARER.as_bytes()) {
        return Ok(status(StatusCode::UNAUTHORIZED));
    }
    let Ok(body) = request.into_body().collect().await else {
        return Ok(status(StatusCode::BAD_REQUEST));
    };
    let Ok(message) = serde_json::from_slice::<Value>(&body.to_bytes()) else {
        return Ok(reply(json!({"jsonrpc": "2.0", "id": null,
                               "error": {"code": -32700, "message": "parse error"}})));
    };
    let Some(id) = message.get("id").cloned() else {
        return Ok(status(StatusCode::ACCEPTED)); // a notification
    };
    let result = match message["method"].as_str() {
        Some("initialize") => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {"listChanged": true}},
            "serverInfo": {"name": "tools", "version": "0.0.0"},
        }),
        Some("tools/list") => json!({"tools": [{
            "name": "echo",
            "description": "Returns the text it is given.",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        }]}),
        Some("tools/call") => match message["params"]["arguments"]["text"].as_str() {
            Some(text) => json!({"content": [{"type": "text", "text": text}], "isError": false}),
            None => {
                json!({"content": [{"type": "text", "text": "`text` must be a string"}], "isError": true})
            }
        },
        _ => {
            return Ok(reply(json!({"jsonrpc": "2.0", "id": id,
                                   "error": {"code": -32601, "message": "method not found"}})))
        }
    };
    Ok(reply(json!({"jsonrpc": "2.0", "id": id, "result": result})))
}

fn reply(message: Value) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(message.to_string())));
    response.headers_mut().insert(
        "content-type",
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

fn status(code: StatusCode) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = code;
    response
}
