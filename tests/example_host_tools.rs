//! The README's main job, `cargo run --example host_tools`, works end to end:
//! its first stdout line is the mcpServers JSON, its `echo` tool answers over
//! that URL and bearer, and SIGTERM stops it cleanly.
#![cfg(unix)]

mod support;

use std::process::Stdio;

use serde_json::{json, Value};
use support::*;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

/// The example's executable, built by asking cargo for it.
///
/// Plain `cargo test` leaves `target/debug/examples/host_tools` behind, but
/// `cargo test --all-targets` builds examples only in test mode, under a
/// hashed name; so the test builds the example itself (a no-op when it is
/// fresh) and takes the path cargo reports.
fn example_path() -> std::path::PathBuf {
    let output = std::process::Command::new(env!("CARGO"))
        .args(["build", "--example", "host_tools", "--message-format=json"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stderr(Stdio::inherit())
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo build --example host_tools failed"
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|message| message["target"]["name"] == "host_tools")
        .find_map(|message| message["executable"].as_str().map(Into::into))
        .expect("cargo reports the example's executable")
}

/// First line, a call through it, then a clean stop on SIGTERM.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_tools_example_serves_echo() {
    let mut child = Command::new(example_path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the host_tools example starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = within(lines.next_line())
        .await
        .unwrap()
        .expect("a first line");
    let servers: Value = serde_json::from_str(&first).expect("first line is JSON");
    let entry = &servers[0];
    assert_eq!(entry["type"], "http");
    assert_eq!(entry["name"], "demo");
    let url = entry["url"].as_str().unwrap();
    let addr: std::net::SocketAddr = url
        .strip_prefix("http://")
        .and_then(|rest| rest.strip_suffix("/mcp"))
        .unwrap()
        .parse()
        .unwrap();
    let auth = entry["headers"][0]["value"].as_str().unwrap();
    let bearer = auth.strip_prefix("Bearer ").unwrap();

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
    let r = rpc(addr, bearer, call_body(3, "add", json!({"a": 2, "b": 40}))).await;
    assert_eq!(
        r.json()["result"]["structuredContent"],
        json!({"sum": 42.0})
    );

    let pid = child.id().unwrap().to_string();
    let killed = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await
        .unwrap();
    assert!(killed.success());
    let status = within(child.wait()).await.unwrap();
    assert!(
        status.success(),
        "the example exits cleanly on SIGTERM: {status}"
    );
}
