//! Hosts a few demo tools for one session and serves until Ctrl-C or SIGTERM.
//!
//! ```text
//! cargo run --example host_tools
//! ```
//!
//! The first line on stdout is the session's ACP `mcpServers` JSON: pass it
//! in `session/new`, or point any MCP client at its `url` with its
//! `Authorization` header. Everything else goes to stderr, among it one
//! line per request the host answers, from its observer
//! (`ToolHostConfig::observer`): the session, the method and tool, the
//! revision, the outcome and the time taken, and a client's `traceparent`;
//! and, once a second at most, the requests refused before authentication,
//! counted:
//!
//! ```text
//! [request] session-1 tools/call echo (2025-11-25): success in 161µs
//! [request] session-1 tools/call delete_everything (2025-11-25): refused in 88µs
//! [request] no session: 1 rejected with 401
//! ```
//!
//! The observer runs inline on the connection's task, so it never writes
//! itself: it hands each line to a writer thread through a bounded
//! channel, and drops (and counts) a line that does not fit. A stderr that
//! nobody reads then costs lines, never the host's answers.
//!
//! Tools: `echo` (returns `text`), `add` (sums `a` and `b`, a JSON result),
//! `unix_time` (no arguments), `tenant_info`, whose `tenant` argument is
//! also sent as an `Mcp-Param-Tenant` header by 2026-07-28 clients (so a
//! gateway could route on it; the host checks the two agree), and
//! `delete_everything`, which always refuses — what a policy guard looks
//! like to the model.
#![deny(warnings)]

use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{SystemTime, UNIX_EPOCH};

use embacle_tool_host::content::ToolAnnotations;
use embacle_tool_host::observe::{Observation, Observer, Outcome};
use embacle_tool_host::{StaticSurface, Tool, ToolHost, ToolHostConfig};
use serde_json::{json, Value};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 1. Bind the host on 127.0.0.1 with a kernel-chosen port, with an
    //    observer that hands a line per request to a writer thread.
    let (observer, writer) = observer_writing_to_stderr();
    let host = ToolHost::bind(ToolHostConfig {
        server_name: "demo".to_owned(),
        instructions: Some("Demo tools from the embacle-tool-host example.".to_owned()),
        observer: Some(observer),
        ..ToolHostConfig::default()
    })
    .await?;

    // 2. Describe the tools and the one executor that runs them.
    let read_only = ToolAnnotations {
        read_only_hint: Some(true),
        ..ToolAnnotations::default()
    };
    let tools = vec![
        Tool::new(
            "echo",
            "Returns the text it is given.",
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        )?
        .with_annotations(read_only.clone()),
        Tool::new(
            "add",
            "Adds two numbers.",
            json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}),
        )?
        .with_output_schema(json!({"type": "object", "properties": {"sum": {"type": "number"}}}))?
        .with_annotations(read_only.clone()),
        Tool::new(
            "unix_time",
            "The current time in seconds since 1970-01-01 UTC.",
            json!({"type": "object", "additionalProperties": false}),
        )?
        .with_annotations(read_only.clone()),
        Tool::new(
            "tenant_info",
            "Describes a tenant of the demo.",
            json!({
                "type": "object",
                "properties": {"tenant": {"type": "string", "x-mcp-header": "Tenant"}},
                "required": ["tenant"],
            }),
        )?
        .with_annotations(read_only),
        Tool::new(
            "delete_everything",
            "Deletes all the user's data. Always refused in this demo.",
            json!({"type": "object", "additionalProperties": false}),
        )?
        .with_annotations(ToolAnnotations {
            destructive_hint: Some(true),
            ..ToolAnnotations::default()
        }),
    ];
    let surface = StaticSurface::new(tools, |name: String, args: Value| async move {
        match name.as_str() {
            "echo" => match args.get("text") {
                Some(Value::String(text)) => Ok(Value::String(text.clone())),
                _ => Err("`text` must be a string".to_owned()),
            },
            "add" => match (
                args.get("a").and_then(Value::as_f64),
                args.get("b").and_then(Value::as_f64),
            ) {
                (Some(a), Some(b)) => Ok(json!({"sum": a + b})),
                _ => Err("`a` and `b` must be numbers".to_owned()),
            },
            "unix_time" => {
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default();
                Ok(json!({"unixTime": now.as_secs()}))
            }
            "tenant_info" => match args.get("tenant") {
                Some(Value::String(tenant)) => Ok(json!({"tenant": tenant, "plan": "demo"})),
                _ => Err("`tenant` must be a string".to_owned()),
            },
            "delete_everything" => {
                Err("refused: deleting everything needs the user's confirmation".to_owned())
            }
            other => Err(format!("no tool named {other}")),
        }
    })?;

    // 3. Open one session. Its mcpServers JSON is the first stdout line.
    let session = host.open_session(Arc::new(surface))?;
    println!("{}", session.mcp_servers().to_value());
    eprintln!(
        "serving {} on http://{}/mcp (bearer in the mcpServers line above); Ctrl-C to stop",
        session.session_id(),
        host.local_addr(),
    );

    // 4. Serve until Ctrl-C or SIGTERM, then drain for up to 5 seconds.
    wait_for_stop_signal().await?;
    eprintln!("stopping after {} tool calls", session.calls_served());
    drop(session); // revoke the bearer before draining
    if let Err(err) = host
        .shutdown_within(std::time::Duration::from_secs(5))
        .await
    {
        eprintln!("{err}");
    }
    // The last observer goes with the host; the writer then writes what is
    // left, and ends.
    drop(host);
    let _ = tokio::task::spawn_blocking(move || writer.join()).await?;
    Ok(())
}

/// An observer that never waits, and the thread that writes its lines: at
/// most 1,024 lines queued, the rest dropped and counted, and the count
/// written before the next line that gets through.
fn observer_writing_to_stderr() -> (Observer, JoinHandle<()>) {
    let (lines, to_write) = mpsc::sync_channel::<String>(1024);
    let dropped = Arc::new(AtomicU64::new(0));
    let lost = Arc::clone(&dropped);
    let writer = std::thread::spawn(move || {
        let mut stderr = std::io::stderr();
        for line in to_write {
            let missed = lost.swap(0, Ordering::Relaxed);
            if missed > 0 {
                let _ = writeln!(stderr, "[request] {missed} lines dropped: stderr was slow");
            }
            let _ = writeln!(stderr, "[request] {line}");
        }
    });
    let observer = Observer::new(move |seen| {
        if lines.try_send(describe(seen)).is_err() {
            dropped.fetch_add(1, Ordering::Relaxed);
        }
    });
    (observer, writer)
}

/// One observation as a line.
fn describe(seen: &Observation<'_>) -> String {
    let mut line = match seen.session {
        Some(session) => session.to_string(),
        None => "no session".to_owned(),
    };
    for part in [seen.method, seen.tool].into_iter().flatten() {
        line.push(' ');
        line.push_str(part);
    }
    if let Some(version) = seen.protocol_version {
        line.push_str(&format!(" ({version})"));
    }
    if let (None, Outcome::Rejected { status }) = (seen.session, seen.outcome) {
        // Refusals before authentication come counted, not timed.
        return format!("{line}: {} rejected with {status}", seen.requests);
    }
    let outcome = match seen.outcome {
        Outcome::Success => "success".to_owned(),
        Outcome::Refused => "refused".to_owned(),
        Outcome::Failed { code } => format!("failed with {code}"),
        Outcome::Cancelled => "cancelled".to_owned(),
        Outcome::Rejected { status } => format!("rejected with {status}"),
        other => format!("{other:?}"),
    };
    line.push_str(&format!(": {outcome} in {:?}", seen.elapsed));
    if let Some(trace) = seen.traceparent {
        line.push_str(&format!(", traceparent {trace}"));
    }
    line
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
