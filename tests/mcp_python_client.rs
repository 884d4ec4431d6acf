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
//! Needs Python 3 with `venv`. `.ci/run` creates `tests/python-client/.venv`;
//! when it is missing this test creates it, so `cargo test` works on a fresh
//! machine that has Python and PyPI.

#![cfg(unix)] // the example is stopped with SIGTERM; the venv layout is Unix's

mod support;

use serde_json::json;
use support::processes::{next_step, python_client, python_venv, RunningExample};

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
