//! The README's main job, `cargo run --example host_tools`, works end to end:
//! its first stdout line is the mcpServers JSON, its `echo` tool answers over
//! that URL and bearer, its observer prints a line per request, and
//! SIGTERM stops it cleanly; and a stderr that nobody reads never stops it
//! answering.
#![cfg(unix)]

mod support;

use serde_json::json;
use support::processes::RunningExample;
use support::*;

/// First line, calls through it, a line for each on stderr (and for a
/// probe without a bearer, which names no session and shows no bearer),
/// then a clean stop on SIGTERM.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_tools_example_serves_echo() {
    let example = RunningExample::start("host_tools").await;
    assert_eq!(example.entry["type"], "http");
    assert_eq!(example.entry["name"], "demo");
    let example_bearer = example.bearer.clone();
    let (addr, bearer) = (example.addr(), example.bearer.as_str());

    let r = rpc(
        addr,
        bearer,
        call_body(1, "echo", json!({"text": "through the example"})),
    )
    .await;
    assert_eq!(
        r.json()["result"]["content"],
        json!([{"type": "text", "text": "through the example"}])
    );
    let r = rpc(addr, bearer, call_body(2, "delete_everything", json!({}))).await;
    assert_eq!(r.json()["result"]["isError"], true);
    let add = post_with(
        addr,
        &[
            ("Authorization", &format!("Bearer {bearer}")),
            ("MCP-Protocol-Version", "2025-11-25"),
        ],
        &call_body(3, "add", json!({"a": 2, "b": 40})).to_string(),
    );
    let r = send_once(addr, &add).await;
    assert_eq!(
        r.json()["result"]["structuredContent"],
        json!({"sum": 42.0})
    );
    let probe = send_once(addr, &post_with(addr, &[], PING)).await;
    assert_eq!(probe.status, 401);
    let stderr = example.stop().await;
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("[request] "))
        .collect();
    let expected = [
        "[request] session-1 tools/call echo (2025-03-26): success in ",
        "[request] session-1 tools/call delete_everything (2025-03-26): refused in ",
        "[request] session-1 tools/call add (2025-11-25): success in ",
        "[request] no session: 1 rejected with 401",
    ];
    assert_eq!(lines.len(), expected.len(), "{stderr}");
    for (line, start) in lines.iter().zip(expected) {
        assert!(line.starts_with(start), "{line:?} is not {start:?}…");
    }
    assert!(!stderr.contains(&example_bearer), "the bearer on stderr");
}

/// The example's observer never waits on stderr: with stderr a pipe that
/// nobody reads, 3,000 requests without a bearer and 3,000 of the
/// session's own (a line each, far more than a pipe holds) are all
/// answered, and so are the session's calls after them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_stderr_never_stops_the_host() {
    let example = RunningExample::start_unread("host_tools").await;
    let (addr, bearer) = (example.addr(), example.bearer.clone());
    let stranger = post_with(addr, &[], PING);
    for _ in 0..3_000 {
        assert_eq!(within(send_once(addr, &stranger)).await.status, 401);
    }
    let mut conn = Conn::open(addr).await;
    let ping = post(addr, &bearer, PING);
    for _ in 0..3_000 {
        assert_eq!(within(conn.send(&ping)).await.status, 200);
    }
    for id in 0..2 {
        let echoed = rpc(
            addr,
            &bearer,
            call_body(id, "echo", json!({"text": "still here"})),
        );
        let echoed = within(echoed).await;
        assert_eq!(
            echoed.json()["result"]["content"][0]["text"],
            "still here",
            "call {id} after the flood"
        );
    }
}
