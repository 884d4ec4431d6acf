//! A long-running tool that reports progress while it works.
//!
//! ```text
//! cargo run --example long_call
//! ```
//!
//! The first stdout line is the session's `mcpServers` JSON. Call the
//! `crawl` tool with a progress token and SSE accepted, and watch the events
//! arrive before the result:
//!
//! ```text
//! curl -N $URL -H "$AUTH" -H 'Content-Type: application/json' \
//!   -H 'Accept: application/json, text/event-stream' \
//!   -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"crawl",
//!        "arguments":{"pages":5},"_meta":{"progressToken":"crawl-1"}}}'
//! ```
//!
//! Without the token (or without `text/event-stream` in `Accept`) the same
//! call answers plain JSON when it is done. Cancel it with
//! `notifications/cancelled`, by closing the connection, or with Ctrl-C on
//! the example, which drains in-flight calls for two seconds.
#![deny(warnings)]

use std::sync::Arc;
use std::time::Duration;

use embacle_tool_host::{Tool, ToolCall, ToolHost, ToolHostConfig, ToolOutcome, ToolSurface};
use serde_json::{json, Value};

/// One tool, `crawl`, that "fetches" `pages` pages, one every 400 ms.
struct Crawler {
    tools: Arc<[Tool]>,
}

impl ToolSurface for Crawler {
    async fn list_tools(&self) -> Arc<[Tool]> {
        Arc::clone(&self.tools)
    }

    async fn call_with(&self, call: ToolCall<'_>) -> ToolOutcome {
        let pages = match call.arguments().get("pages").and_then(Value::as_u64) {
            Some(pages @ 1..=50) => pages,
            _ => return ToolOutcome::refused("`pages` must be an integer from 1 to 50"),
        };
        for page in 1..=pages {
            // Dropped at this await if the call is cancelled.
            tokio::time::sleep(Duration::from_millis(400)).await;
            let note = format!("fetched page {page} of {pages}");
            call.progress(page as f64, Some(pages as f64), Some(&note));
            eprintln!("{note}");
        }
        ToolOutcome::json(json!({"pages": pages, "status": "crawled"}))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let host = ToolHost::bind(ToolHostConfig {
        server_name: "crawler".to_owned(),
        call_timeout: Some(Duration::from_secs(60)),
        ..ToolHostConfig::default()
    })
    .await?;
    let crawl = Tool::new(
        "crawl",
        "Crawls a number of pages, reporting progress as it goes.",
        json!({"type": "object", "properties": {"pages": {"type": "integer", "minimum": 1, "maximum": 50}}, "required": ["pages"]}),
    )?;
    let session = host.open_session(Arc::new(Crawler {
        tools: vec![crawl].into(),
    }))?;
    println!("{}", session.mcp_servers().to_value());
    eprintln!(
        "serving crawl on http://{}/mcp; Ctrl-C to stop",
        host.local_addr()
    );
    tokio::signal::ctrl_c().await?;
    if let Err(err) = host.shutdown_within(Duration::from_secs(2)).await {
        eprintln!("{err}");
    }
    eprintln!("served {} calls", session.calls_served());
    Ok(())
}
