//! A surface whose tools change mid-session, and the agent told at once.
//!
//! ```text
//! cargo run --example gated_tools
//! ```
//!
//! The scenario: an interview is running, so the model may not judge yet.
//! While it runs, the surface offers `end_interview` only; `submit_verdict`
//! is withheld. Calling `end_interview` ends the interview, and with it the
//! tool list changes: `end_interview` goes, `submit_verdict` appears. The
//! surface then signals the change with a [`ListChangedNotifier`], and every
//! client listening on the session (the legacy `GET /mcp` stream, or a
//! 2026-07-28 `subscriptions/listen`) gets `notifications/tools/list_changed`,
//! lists the tools again, and can call `submit_verdict` in the same turn.
//!
//! The first line on stdout is the session's ACP `mcpServers` JSON, as in
//! `host_tools`; everything else goes to stderr. Stops on Ctrl-C or SIGTERM.
#![deny(warnings)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use embacle_tool_host::{
    ListChangedNotifier, Tool, ToolHost, ToolHostConfig, ToolOutcome, ToolSurface,
};
use serde_json::{json, Value};

/// The interview's state, and the notifier it signals through once the
/// session is open (the surface exists before the session does, so the
/// notifier is handed over afterwards).
struct Interview {
    running: AtomicBool,
    notifier: OnceLock<ListChangedNotifier>,
    end_interview: Tool,
    submit_verdict: Tool,
}

impl ToolSurface for Interview {
    // Asked on every tools/list and before every call: the gate applies at
    // once, whatever the client still has in its copy of the list.
    async fn list_tools(&self) -> Arc<[Tool]> {
        if self.running.load(Ordering::SeqCst) {
            Arc::new([self.end_interview.clone()])
        } else {
            Arc::new([self.submit_verdict.clone()])
        }
    }

    async fn call(&self, name: &str, arguments: &Value) -> ToolOutcome {
        match name {
            "end_interview" => {
                if !self.running.swap(false, Ordering::SeqCst) {
                    return ToolOutcome::refused("the interview is already over");
                }
                // Tell every listening client that the list changed.
                if let Some(notifier) = self.notifier.get() {
                    notifier.notify();
                }
                eprintln!("interview ended; submit_verdict is now offered");
                ToolOutcome::text("The interview is over. submit_verdict is now available.")
            }
            "submit_verdict" => match arguments.get("verdict").and_then(Value::as_str) {
                Some(verdict) => {
                    eprintln!("verdict: {verdict}");
                    ToolOutcome::json(json!({"recorded": verdict}))
                }
                None => ToolOutcome::refused("`verdict` must be a string"),
            },
            other => ToolOutcome::failed(format!("no tool named {other}")),
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 1. Bind the host on 127.0.0.1 with a kernel-chosen port.
    let host = ToolHost::bind(ToolHostConfig {
        server_name: "interview".to_owned(),
        instructions: Some("End the interview before you submit a verdict.".to_owned()),
        ..ToolHostConfig::default()
    })
    .await?;

    // 2. The surface, with the interview running.
    let interview = Arc::new(Interview {
        running: AtomicBool::new(true),
        notifier: OnceLock::new(),
        end_interview: Tool::new(
            "end_interview",
            "Ends the interview with the candidate.",
            json!({"type": "object", "additionalProperties": false}),
        )?,
        submit_verdict: Tool::new(
            "submit_verdict",
            "Records the hiring verdict. Only offered once the interview is over.",
            json!({"type": "object", "properties": {"verdict": {"type": "string"}}, "required": ["verdict"]}),
        )?,
    });

    // 3. Open the session, then give the surface its notifier. The guard
    //    stays here: the notifier never keeps the session alive.
    let session = host.open_session(Arc::clone(&interview))?;
    let _ = interview.notifier.set(session.list_changed_notifier());
    println!("{}", session.mcp_servers().to_value());
    eprintln!(
        "serving {} on http://{}/mcp; Ctrl-C to stop",
        session.session_id(),
        host.local_addr()
    );

    // 4. Serve until Ctrl-C or SIGTERM; then revoke and drain.
    wait_for_stop_signal().await?;
    eprintln!("stopping after {} tool calls", session.calls_served());
    drop(session);
    host.shutdown_within(std::time::Duration::from_secs(5))
        .await?;
    Ok(())
}

#[cfg(unix)]
async fn wait_for_stop_signal() -> std::io::Result<()> {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        result = tokio::signal::ctrl_c() => result,
        _ = terminate.recv() => Ok(()),
    }
}

#[cfg(not(unix))]
async fn wait_for_stop_signal() -> std::io::Result<()> {
    tokio::signal::ctrl_c().await
}
