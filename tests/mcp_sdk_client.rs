//! The official MCP TypeScript SDK clients drive the host: connect, list
//! tools, a call, a refusal, and a call after the guard was dropped, which
//! must fail with 401.
//!
//! - `tests/sdk-client`: `@modelcontextprotocol/sdk` 1.x, the legacy era
//!   (initialize, initialized, the GET probe; 2025-11-25).
//! - `tests/sdk-client-v2`: `@modelcontextprotocol/client` 2.x, which can
//!   speak 2026-07-28: once pinned to it (`modern`), and once in its
//!   automatic mode (`auto`: server/discover first, `initialize` if refused;
//!   this host answers discover, so auto settles on 2026-07-28).
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

fn client_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(name)
}

/// Installs the pinned SDK when `node_modules` is absent.
async fn ensure_installed(dir: &Path, package: &str) {
    let installed = dir.join("node_modules").join(package).join("package.json");
    if installed.exists() {
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

/// The v1 SDK client, legacy era.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_v1_client() {
    converse(
        "sdk-client",
        "@modelcontextprotocol/sdk",
        None,
        "2025-11-25",
    )
    .await;
}

/// The v2 SDK client pinned to 2026-07-28.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_v2_client_modern() {
    converse(
        "sdk-client-v2",
        "@modelcontextprotocol/client",
        Some("modern"),
        "2026-07-28",
    )
    .await;
}

/// The v2 SDK client in its automatic mode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_v2_client_auto() {
    converse(
        "sdk-client-v2",
        "@modelcontextprotocol/client",
        Some("auto"),
        "2026-07-28",
    )
    .await;
}

/// The whole conversation, with host-side counts checked.
async fn converse(client: &str, package: &str, mode: Option<&str>, version: &str) {
    let dir = client_dir(client);
    // Two tests may install the same directory at once; serialize them.
    static INSTALL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let installing = INSTALL.lock().await;
    tokio::time::timeout(
        std::time::Duration::from_secs(300),
        ensure_installed(&dir, package),
    )
    .await
    .expect("npm ci took over 5 minutes");
    drop(installing);
    let mut fx = Fixture::with(ToolHostConfig {
        server_name: "dravr".to_owned(),
        ..ToolHostConfig::default()
    })
    .await;
    let servers = fx.session().mcp_servers();
    let entry = &servers.entries()[0];
    let mut command = Command::new("node");
    if let Some(mode) = mode {
        command.env("MCP_MODE", mode);
    }
    let mut child = command
        .arg("client.mjs")
        .current_dir(&dir)
        .env("MCP_URL", entry.url())
        .env("MCP_BEARER", &fx.bearer)
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
    assert_eq!(connected["protocolVersion"], version);
    if mode.is_some() {
        assert_eq!(connected["era"], "modern");
    }
    assert_eq!(connected["serverName"], "dravr");
    let capabilities = &connected["capabilities"];
    assert!(capabilities["tools"].is_object(), "{capabilities}");
    assert_eq!(
        capabilities.as_object().unwrap().len(),
        1,
        "tools only: {capabilities}"
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
        json!({"type": "text", "text": REFUSAL})
    );
    assert_eq!(refuse["structuredContent"], refusal_payload());
    assert_eq!(fx.session().calls_served(), 2);

    if client == "sdk-client" {
        // Progress reached onprogress, in order, before the result.
        let progress = next_step(&mut lines).await;
        assert_eq!(progress["step"], "progress");
        let events = progress["events"].as_array().unwrap();
        let values: Vec<f64> = events
            .iter()
            .map(|e| e["progress"].as_f64().unwrap())
            .collect();
        assert_eq!(values, [1.0, 2.0, 3.0], "{progress}");
        assert!(events.iter().all(|e| e["total"] == 3.0));
        assert_eq!(
            progress["content"],
            json!([{"type": "text", "text": "counted"}])
        );
        // The aborted call: the host saw notifications/cancelled and dropped
        // the tool's future.
        let aborted = next_step(&mut lines).await;
        assert_eq!(
            (aborted["step"].clone(), aborted["rejected"].clone()),
            (json!("aborted"), json!(true))
        );
        wait_until("the host cancels the aborted call", || {
            fx.surface.hang_was_dropped()
        })
        .await;
        assert_eq!(fx.host.calls_in_flight(), 0);
        assert_eq!(fx.session().calls_served(), 3);
    }

    let ready = next_step(&mut lines).await;
    assert_eq!(ready["step"], "ready_to_revoke");
    fx.revoke();
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
    let expected: &[&str] = if client == "sdk-client" {
        &["echo", "refuse", "count", "hang"]
    } else {
        &["echo", "refuse"]
    };
    assert_eq!(fx.surface.seen.lock().unwrap().as_slice(), expected);
}
