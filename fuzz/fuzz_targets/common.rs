// One host and one live session, shared by every input of a fuzz run. The
// session's surface answers `echo` (and refuses everything else), so
// dispatch reaches the tool path.
use std::sync::{Arc, OnceLock};

use embacle_tool_host::{Tool, ToolHost, ToolHostConfig, ToolOutcome, ToolSession, ToolSurface};
use serde_json::{json, Value};

pub struct Fixture {
    pub runtime: tokio::runtime::Runtime,
    pub host: ToolHost,
    /// Held so the bearer stays live for the whole run.
    #[allow(dead_code)]
    pub session: ToolSession,
    /// The session's whole `Authorization` value.
    pub authorization: String,
}

struct Echo(Arc<[Tool]>);

impl ToolSurface for Echo {
    async fn list_tools(&self) -> Arc<[Tool]> {
        Arc::clone(&self.0)
    }
    async fn call(&self, name: &str, arguments: &Value) -> ToolOutcome {
        match (name, arguments.get("text")) {
            ("echo", Some(Value::String(text))) => ToolOutcome::text(text.as_str()),
            _ => ToolOutcome::refused("no"),
        }
    }
}

pub fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let host = runtime.block_on(ToolHost::bind(ToolHostConfig::default())).unwrap();
        let tool = Tool::new("echo", "echo", json!({"type": "object"})).unwrap();
        let session = host.open_session(Arc::new(Echo(vec![tool].into()))).unwrap();
        let authorization = session.mcp_servers().entries()[0].headers()[0].value().to_owned();
        Fixture { runtime, host, session, authorization }
    })
}
