//! The official MCP TypeScript SDK (`@modelcontextprotocol/sdk`, pinned in
//! `tests/sdk-client/package.json`) drives the host: connect (initialize,
//! initialized, the GET probe), listTools, a call, a refusal, and a call
//! after the guard was dropped, which must fail with 401.
//!
//! Needs Node.js. `.ci/run` installs the pinned packages with `npm ci`; when
//! they are missing this test runs `npm ci` itself, so `cargo test` works on
//! a fresh machine that has Node and the npm registry.

mod support;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use embacle_tool_host::ToolHostConfig;
use serde_json::{json, Value};
use support::*;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

fn client_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sdk-client")
}

/// Installs the pinned SDK when `node_modules` is absent.
async fn ensure_installed(dir: &Path) {
    if dir
        .join("node_modules/@modelcontextprotocol/sdk/package.json")
        .exists()
    {
        return;
    }
    let status = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
        .current_dir(dir)
        .status()
        .await
        .expect("npm must be installed to run the TypeScript SDK test");
    assert!(status.success(), "npm ci failed in {}", dir.display());
}

/// Reads the next JSON line the client prints, failing on its error step.
async fn next_step(lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>) -> Value {
    let line = within(lines.next_line())
        .await
        .expect("read client stdout")
        .expect("client exited early");
    let value: Value = serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line}"));
    assert_ne!(value["step"], "error", "client failed: {value}");
    value
}

/// The whole TypeScript SDK conversation, with host-side counts checked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_client() {
    let dir = client_dir();
    tokio::time::timeout(std::time::Duration::from_secs(300), ensure_installed(&dir))
        .await
        .expect("npm ci took over 5 minutes");
    let host = host_with(ToolHostConfig {
        server_name: "dravr".to_owned(),
        ..ToolHostConfig::default()
    })
    .await;
    let surface = RecordingSurface::new();
    let session = host.open_session(surface.clone()).unwrap();
    let servers = session.mcp_servers();
    let entry = &servers.entries()[0];
    let mut child = Command::new("node")
        .arg("client.mjs")
        .current_dir(&dir)
        .env("MCP_URL", entry.url())
        .env("MCP_BEARER", bearer_of(&session))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("node must be installed to run the TypeScript SDK test");
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();

    let connected = next_step(&mut lines).await;
    assert_eq!(connected["step"], "connected");
    assert_eq!(connected["protocolVersion"], "2025-11-25");
    assert_eq!(connected["serverName"], "dravr");
    assert_eq!(
        connected["capabilities"],
        json!({"tools": {"listChanged": false}})
    );

    let tools = next_step(&mut lines).await;
    assert_eq!(tools["names"], json!(TOOL_NAMES));

    let echo = next_step(&mut lines).await;
    assert_eq!(echo["step"], "echo");
    assert_eq!(echo["isError"], false);
    assert_eq!(
        echo["content"],
        json!([{"type": "text", "text": "hello from the ts sdk"}])
    );

    let refuse = next_step(&mut lines).await;
    assert_eq!(refuse["step"], "refuse");
    assert_eq!(refuse["isError"], true);
    assert_eq!(
        refuse["content"][0],
        json!({"type": "text", "text": "daily quota reached"})
    );
    assert_eq!(
        refuse["structuredContent"],
        json!({"quota": 10, "resetsInSeconds": 3600})
    );
    assert_eq!(session.calls_served(), 2);

    let ready = next_step(&mut lines).await;
    assert_eq!(ready["step"], "ready_to_revoke");
    drop(session);
    within(stdin.write_all(b"revoked\n")).await.unwrap();

    let after = next_step(&mut lines).await;
    assert_eq!(after["step"], "after_revoke");
    assert_eq!(
        after["failed"], true,
        "a call after revocation must fail: {after}"
    );
    assert_eq!(after["code"], 401);
    assert_eq!(next_step(&mut lines).await["step"], "done");
    let status = within(child.wait()).await.unwrap();
    assert!(status.success());
    assert_eq!(surface.seen.lock().unwrap().as_slice(), ["echo", "refuse"]);
}
