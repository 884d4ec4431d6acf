//! Hosts the tools the official MCP conformance suite calls by name in its
//! *fixture* scenarios, and serves until Ctrl-C or SIGTERM.
//!
//! ```text
//! cargo run --example conformance_fixture
//! ```
//!
//! As with `host_tools`, the first line on stdout is the session's ACP
//! `mcpServers` JSON; `scripts/conformance` puts a bearer-adding forwarder
//! in front of it and runs the suite. Each tool answers as the suite's
//! scenario (github `modelcontextprotocol/conformance`,
//! `src/scenarios/server/`) specifies:
//!
//! | tool | scenario | answer |
//! |---|---|---|
//! | `test_simple_text` | `tools-call-simple-text` | one text block |
//! | `test_image_content` | `tools-call-image` | a 1×1 PNG |
//! | `test_audio_content` | `tools-call-audio` | a WAV (`audio/wav`) |
//! | `test_embedded_resource` | `tools-call-embedded-resource` | a text resource |
//! | `test_multiple_content_types` | `tools-call-mixed-content` | text, image, resource |
//! | `test_error_handling` | `tools-call-error` | a refusal (`isError: true`) |
//! | `test_tool_with_progress` | `tools-call-with-progress` | progress 0, 50, 100 of 100, 50 ms apart |
//! | `test_tool_with_logging` | `tools-call-with-logging` | three info messages, 50 ms apart |
//! | `test_logging_tool` | `server-stateless` | one info message (sent only when asked) |
//! | `test_trigger_tool_change` | `server-stateless` | adds or withdraws `test_dynamic_tool`, and says so |
//! | `json_schema_2020_12_tool` | `json-schema-2020-12` | listed, never called: its schema keeps every 2020-12 keyword |
//! | `test_custom_headers`, `test_custom_headers_null` | `http-custom-header-server-validation` | their `x-mcp-header` arguments, echoed |
//!
//! The header scenario takes the first tool with an `x-mcp-header`
//! argument, so `test_custom_headers` gives this example's run one (the
//! README's row for it comes from `host_tools`'s run). The suite uses both
//! names in its *client* scenario `http-custom-headers`, where a `null`
//! argument must have no header; the host accepts exactly that, and both
//! are offered here so a client under test can be pointed at this example.
//!
//! The surface logs (`may_log`), so the host advertises `logging` and serves
//! `logging/setLevel`; its list can change, so `listChanged` is advertised
//! and `test_trigger_tool_change` reaches every listening client.
#![deny(warnings)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use embacle_tool_host::call::LogLevel;
use embacle_tool_host::content::{ContentBlock, EmbeddedResource};
use embacle_tool_host::{
    ListChangedNotifier, Tool, ToolCall, ToolHost, ToolHostConfig, ToolOutcome, ToolSurface,
};
use serde_json::{json, Value};

/// A 1×1 red PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0xfc, 0xcf, 0xc0, 0xf0,
    0x1f, 0x00, 0x05, 0x05, 0x02, 0x00, 0x5f, 0xc8, 0xf1, 0xd2, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// A WAV header with two bytes of 8 kHz mono 16-bit silence.
const WAV: &[u8] = &[
    b'R', b'I', b'F', b'F', 0x26, 0x00, 0x00, 0x00, b'W', b'A', b'V', b'E', b'f', b'm', b't', b' ',
    0x10, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x40, 0x1f, 0x00, 0x00, 0x80, 0x3e, 0x00, 0x00,
    0x02, 0x00, 0x10, 0x00, b'd', b'a', b't', b'a', 0x02, 0x00, 0x00, 0x00, 0x00, 0x00,
];

/// The fixture tools, and the one `test_trigger_tool_change` toggles.
struct Fixture {
    tools: Vec<Tool>,
    dynamic: Tool,
    dynamic_listed: AtomicBool,
    /// Filled once the session is open (the surface exists before it).
    notifier: OnceLock<ListChangedNotifier>,
}

fn no_arguments() -> Value {
    json!({"type": "object", "properties": {}})
}

fn fixture_tools() -> Result<Vec<Tool>, embacle_tool_host::Error> {
    let plain = [
        ("test_simple_text", "Returns one text block."),
        ("test_image_content", "Returns an image (a 1x1 PNG)."),
        ("test_audio_content", "Returns audio (a short WAV)."),
        (
            "test_embedded_resource",
            "Returns an embedded text resource.",
        ),
        (
            "test_multiple_content_types",
            "Returns text, an image and a resource.",
        ),
        (
            "test_error_handling",
            "Always declines, as an isError result.",
        ),
        (
            "test_tool_with_progress",
            "Reports progress three times, then answers.",
        ),
        (
            "test_tool_with_logging",
            "Logs three messages, then answers.",
        ),
        ("test_logging_tool", "Diagnostic logging validator tool."),
        (
            "test_trigger_tool_change",
            "Adds or withdraws test_dynamic_tool.",
        ),
    ];
    let mut tools = plain
        .into_iter()
        .map(|(name, description)| Tool::new(name, description, no_arguments()))
        .collect::<Result<Vec<_>, _>>()?;
    tools.push(json_schema_2020_12_tool()?);
    tools.push(custom_headers_tool("test_custom_headers")?);
    tools.push(custom_headers_tool("test_custom_headers_null")?);
    Ok(tools)
}

/// `json-schema-2020-12`'s tool: listed, never called; its schema keeps
/// every 2020-12 keyword the scenario looks for.
fn json_schema_2020_12_tool() -> Result<Tool, embacle_tool_host::Error> {
    Tool::new(
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features",
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "$anchor": "addressDef",
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                },
            },
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"},
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": false,
        }),
    )
}

/// A tool whose arguments 2026-07-28 clients mirror into headers, under
/// `name`.
fn custom_headers_tool(name: &str) -> Result<Tool, embacle_tool_host::Error> {
    Tool::new(
        name,
        "Echoes its x-mcp-header arguments, which 2026-07-28 clients mirror into Mcp-Param-* headers (and leave out when null).",
        json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "priority": {"type": "integer", "x-mcp-header": "Priority"},
                "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
                "query": {"type": "string"},
            },
            "required": ["region", "priority", "query"],
        }),
    )
}

impl ToolSurface for Fixture {
    async fn list_tools(&self) -> Arc<[Tool]> {
        let mut tools = self.tools.clone();
        if self.dynamic_listed.load(Ordering::Relaxed) {
            tools.push(self.dynamic.clone());
        }
        tools.into()
    }

    async fn call(&self, name: &str, arguments: &Value) -> ToolOutcome {
        match name {
            "test_simple_text" => ToolOutcome::text("This is a simple text response for testing."),
            "test_image_content" => ToolOutcome::image(PNG, "image/png"),
            "test_audio_content" => ToolOutcome::audio(WAV, "audio/wav"),
            "test_embedded_resource" => ToolOutcome::builder()
                .block(ContentBlock::resource(
                    EmbeddedResource::text(
                        "test://embedded-resource",
                        "This is an embedded resource content.",
                    )
                    .mime_type("text/plain"),
                ))
                .build(),
            "test_multiple_content_types" => ToolOutcome::builder()
                .text("Multiple content types test:")
                .block(ContentBlock::image(PNG, "image/png"))
                .block(ContentBlock::resource(
                    EmbeddedResource::text(
                        "test://mixed-content-resource",
                        r#"{"test":"data","value":123}"#,
                    )
                    .mime_type("application/json"),
                ))
                .build(),
            "test_error_handling" => {
                ToolOutcome::refused("This tool intentionally returns an error for testing")
            }
            "test_trigger_tool_change" => {
                let listed = !self.dynamic_listed.fetch_xor(true, Ordering::Relaxed);
                if let Some(notifier) = self.notifier.get() {
                    notifier.notify();
                }
                ToolOutcome::text(if listed {
                    "Mutation triggered: test_dynamic_tool added"
                } else {
                    "Mutation triggered: test_dynamic_tool withdrawn"
                })
            }
            "test_dynamic_tool" => ToolOutcome::text("The dynamic tool ran."),
            "test_custom_headers" | "test_custom_headers_null" => ToolOutcome::json(json!({
                "region": arguments.get("region"),
                "priority": arguments.get("priority"),
                "verbose": arguments.get("verbose"),
            })),
            other => ToolOutcome::failed(format!("{other} is listed but never called")),
        }
    }

    async fn call_with(&self, call: ToolCall<'_>) -> ToolOutcome {
        match call.name() {
            "test_tool_with_progress" => {
                for (step, progress) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if step > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    let message = format!("Completed step {progress} of 100");
                    call.progress(progress, Some(100.0), Some(&message));
                }
                ToolOutcome::text("Progress tool completed")
            }
            "test_tool_with_logging" => {
                let messages = [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ];
                for (i, message) in messages.into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    call.log(LogLevel::Info, message);
                }
                ToolOutcome::text("Tool with logging executed successfully")
            }
            "test_logging_tool" => {
                call.log(LogLevel::Info, "Logging evaluated");
                ToolOutcome::text("Logging evaluated")
            }
            _ => self.call(call.name(), call.arguments()).await,
        }
    }

    fn may_log(&self) -> bool {
        true
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let host = ToolHost::bind(ToolHostConfig {
        server_name: "conformance-fixture".to_owned(),
        ..ToolHostConfig::default()
    })
    .await?;
    let surface = Arc::new(Fixture {
        tools: fixture_tools()?,
        dynamic: Tool::new(
            "test_dynamic_tool",
            "Appears and disappears with test_trigger_tool_change.",
            no_arguments(),
        )?,
        dynamic_listed: AtomicBool::new(false),
        notifier: OnceLock::new(),
    });
    let session = host.open_session(Arc::clone(&surface))?;
    let _ = surface.notifier.set(session.list_changed_notifier());
    println!("{}", session.mcp_servers().to_value());
    eprintln!(
        "conformance fixture on {}; Ctrl-C or SIGTERM to stop",
        host.local_addr()
    );

    wait_for_stop_signal().await?;
    eprintln!("stopping after {} tool calls", session.calls_served());
    drop(session);
    if let Err(err) = host.shutdown_within(Duration::from_secs(2)).await {
        eprintln!("{err}");
    }
    Ok(())
}

#[cfg(unix)]
async fn wait_for_stop_signal() -> std::io::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut terminate = signal(SignalKind::terminate())?;
    tokio::select! {
        result = tokio::signal::ctrl_c() => result,
        _ = terminate.recv() => Ok(()),
    }
}

#[cfg(not(unix))]
async fn wait_for_stop_signal() -> std::io::Result<()> {
    tokio::signal::ctrl_c().await
}
