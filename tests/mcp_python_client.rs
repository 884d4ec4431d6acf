//! The official MCP Python SDK client (`mcp` 2.3.0 from PyPI, pinned in
//! `tests/python-client/requirements.txt`) follows the `gated_tools`
//! example's surface as it changes mid-session.
//!
//! This client opens its standalone `GET` stream only when `initialize`
//! minted an `Mcp-Session-Id`, so the legacy case is the proof that the host
//! mints one and delivers the notice on that session's stream; the modern
//! case receives it on `subscriptions/listen` after settling on 2026-07-28
//! by `server/discover`.
//!
//! With the OpenTelemetry SDK active, the same client injects its span's
//! W3C trace context into each request by itself: the tool and the
//! observer see the trace id of the span the client made its call in.
//!
//! Needs Python 3 with `venv`. `.ci/run` creates `tests/python-client/.venv`;
//! when it is missing this test creates it, so `cargo test` works on a fresh
//! machine that has Python and PyPI.

#![cfg(unix)] // the example is stopped with SIGTERM; the venv layout is Unix's

mod support;

use std::sync::{Arc, Mutex};

use embacle_tool_host::observe::Observer;
use embacle_tool_host::{Tool, ToolCall, ToolHostConfig, ToolOutcome, ToolSurface};
use serde_json::json;
use support::processes::{next_step, python_client, python_venv, RunningExample};
use support::Fixture;

/// 2025 era: `initialize`, the notice on the session's `GET` stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_client_follows_list_changes_on_its_get_stream() {
    follow_list_changes("legacy", "2025-11-25").await;
}

/// 2026-07-28: `server/discover`, the notice on `subscriptions/listen`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_client_follows_list_changes_on_listen() {
    follow_list_changes("modern", "2026-07-28").await;
}

/// The client sees `end_interview` only; calling it withdraws it and adds
/// `submit_verdict`; told of the change, the client re-lists and calls the
/// new tool.
async fn follow_list_changes(era: &str, version: &str) {
    let python = python_venv().await;
    let example = RunningExample::start("gated_tools").await;
    let (_child, mut lines) = python_client(
        &python,
        "list_changed.py",
        &[era],
        &example.url,
        &example.bearer,
    );
    assert_eq!(next_step(&mut lines).await["era"], version);
    assert_eq!(
        next_step(&mut lines).await["names"],
        json!(["end_interview"])
    );
    let ended = next_step(&mut lines).await;
    assert_eq!(
        (ended["step"].clone(), ended["isError"].clone()),
        (json!("end_interview"), json!(false))
    );
    let mut relisted = next_step(&mut lines).await;
    if era == "modern" {
        assert_eq!(relisted["kind"], "ToolsListChanged", "{relisted}");
        relisted = next_step(&mut lines).await;
    }
    assert_eq!(relisted["step"], "relisted");
    assert_eq!(relisted["names"], json!(["submit_verdict"]));
    let verdict = next_step(&mut lines).await;
    assert_eq!(verdict["step"], "submit_verdict");
    assert_eq!(verdict["structuredContent"], json!({"recorded": "hire"}));
    assert_eq!(next_step(&mut lines).await["step"], "done");
    example.stop().await;
}

/// One tool, `traced`, that answers with the `traceparent` its call
/// carried (`ToolCall::request`), or `none`.
struct Traced(Arc<[Tool]>);

impl ToolSurface for Traced {
    async fn list_tools(&self) -> Arc<[Tool]> {
        Arc::clone(&self.0)
    }

    async fn call_with(&self, call: ToolCall<'_>) -> ToolOutcome {
        ToolOutcome::text(call.request().trace.traceparent.unwrap_or("none"))
    }
}

/// The client's span, the tool's `traceparent` and the observer's are one
/// trace, in both eras (the legacy client puts it in `_meta` too).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_client_trace_reaches_the_tool_and_the_observer() {
    let python = python_venv().await;
    for mode in ["legacy", "auto"] {
        let observed = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&observed);
        let observer = Observer::new(move |o| {
            if o.method == Some("tools/call") {
                sink.lock().unwrap().push(o.traceparent.map(str::to_owned));
            }
        });
        let tool = Tool::new(
            "traced",
            "Answers with its trace context.",
            json!({"type": "object"}),
        );
        let surface = Arc::new(Traced(vec![tool.unwrap()].into()));
        let config = ToolHostConfig {
            observer: Some(observer),
            ..ToolHostConfig::default()
        };
        let fx = Fixture::serving(config, surface).await;
        let url = fx.session().mcp_servers().entries()[0].url().to_owned();
        let (_child, mut lines) = python_client(
            &python,
            "traced_call.py",
            &[mode, "traced"],
            &url,
            &fx.bearer,
        );
        let span = next_step(&mut lines).await;
        let trace_id = span["traceId"].as_str().unwrap().to_owned();
        assert_eq!(trace_id.len(), 32, "{span}");
        let called = next_step(&mut lines).await;
        assert_eq!(called["isError"], false, "{called}");
        let seen_by_tool = called["text"].as_str().unwrap().to_owned();
        assert_eq!(
            seen_by_tool.get(3..35),
            Some(trace_id.as_str()),
            "{mode}: the tool saw {seen_by_tool}"
        );
        let seen_by_observer = observed.lock().unwrap().clone();
        assert_eq!(seen_by_observer, [Some(seen_by_tool)], "{mode}");
        println!("{mode}: trace {trace_id} reached the tool and the observer");
    }
}
