//! One `echo` tool hosted by embacle-tool-host; prints the `mcpServers`
//! entry and serves until killed.
use std::sync::Arc;

use embacle_tool_host::{StaticSurface, Tool, ToolHost, ToolHostConfig};
use serde_json::{json, Value};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let host = ToolHost::bind(ToolHostConfig::default()).await?;
    let echo = Tool::new(
        "echo",
        "Returns the text it is given.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
    )?;
    let surface = StaticSurface::new(vec![echo], |_name: String, args: Value| async move {
        match args.get("text") {
            Some(Value::String(text)) => Ok(Value::String(text.clone())),
            _ => Err("`text` must be a string".to_owned()),
        }
    })?;
    let session = host.open_session(Arc::new(surface))?;
    println!("{}", session.mcp_servers().to_value());
    std::future::pending::<()>().await;
    Ok(())
}
