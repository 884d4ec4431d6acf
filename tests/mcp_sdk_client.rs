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
//! With their list-changed handling on, both clients also follow the
//! `gated_tools` example's surface as it changes mid-session: told by
//! `notifications/tools/list_changed` (v1 on the GET stream, v2 on
//! `subscriptions/listen`), they re-list on their own and call the tool
//! that appeared.
//!
//! Against the `conformance_fixture` example, both clients read an image,
//! an audio block and an embedded resource (their bytes decoded by Node),
//! and receive a tool's log messages: v1 after `logging/setLevel`, v2 when
//! its call's `_meta` asks for them, and none when it does not.
//!
//! Needs Node.js. `.ci/run` installs the pinned packages with `npm ci`; when
//! they are missing this test runs `npm ci` itself, so `cargo test` works on
//! a fresh machine that has Node and the npm registry.

mod support;

use embacle_tool_host::ToolHostConfig;
use serde_json::json;
#[cfg(unix)]
use serde_json::Value;
#[cfg(unix)]
use support::processes::RunningExample;
use support::processes::{client_dir, ensure_installed, has_node_and_npm, next_step, node_client};
use support::*;
use tokio::io::AsyncWriteExt;

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
    if !has_node_and_npm(&format!("the {package} client cannot run; this test")).await {
        return;
    }
    let dir = client_dir(client);
    ensure_installed(&dir, package).await;
    let mut fx = Fixture::with(ToolHostConfig {
        server_name: "dravr".to_owned(),
        ..ToolHostConfig::default()
    })
    .await;
    let url = fx.session().mcp_servers().entries()[0].url().to_owned();
    let env: Vec<(&str, &str)> = mode.iter().map(|mode| ("MCP_MODE", *mode)).collect();
    let (mut child, mut lines) = node_client(&dir, "client.mjs", &url, &fx.bearer, &env);
    let mut stdin = child.stdin.take().unwrap();

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

/// The v1 SDK client with its list-changed handling on, against the
/// `gated_tools` example (legacy era: the GET stream).
#[cfg(unix)] // the example is stopped with SIGTERM
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_v1_client_follows_list_changes() {
    follow_list_changes("sdk-client", "@modelcontextprotocol/sdk", None).await;
}

/// The v2 SDK client pinned to 2026-07-28, with its list-changed handling
/// on, against the `gated_tools` example (`subscriptions/listen`).
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_v2_client_follows_list_changes() {
    follow_list_changes(
        "sdk-client-v2",
        "@modelcontextprotocol/client",
        Some("modern"),
    )
    .await;
}

/// The client sees `end_interview` only; calling it withdraws it and adds
/// `submit_verdict`, and the client, told of the change, re-lists on its
/// own and calls the new tool.
#[cfg(unix)]
async fn follow_list_changes(client: &str, package: &str, era: Option<&str>) {
    if !has_node_and_npm(&format!("the {package} client cannot run; this test")).await {
        return;
    }
    let dir = client_dir(client);
    ensure_installed(&dir, package).await;
    let example = RunningExample::start("gated_tools").await;
    let (_child, mut lines) =
        node_client(&dir, "list_changed.mjs", &example.url, &example.bearer, &[]);
    let connected = next_step(&mut lines).await;
    assert_eq!(
        connected["capabilities"],
        json!({"tools": {"listChanged": true}})
    );
    if let Some(era) = era {
        assert_eq!(connected["era"], era);
    }
    assert_eq!(
        next_step(&mut lines).await["names"],
        json!(["end_interview"])
    );
    let ended = next_step(&mut lines).await;
    assert_eq!(
        (ended["step"].clone(), ended["isError"].clone()),
        (json!("end_interview"), json!(false))
    );
    let relisted = next_step(&mut lines).await;
    assert_eq!(relisted["step"], "relisted");
    assert_eq!(
        relisted["names"],
        json!(["submit_verdict"]),
        "withdrawn and added"
    );
    let verdict = next_step(&mut lines).await;
    assert_eq!(verdict["step"], "submit_verdict");
    assert_eq!(verdict["structuredContent"], json!({"recorded": "hire"}));
    assert_eq!(next_step(&mut lines).await["step"], "done");
    example.stop().await;
}

/// The v1 SDK client reads every media block and a tool's log messages
/// from the `conformance_fixture` example (legacy era, `logging/setLevel`).
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_v1_client_reads_content_and_logs() {
    read_content_and_logs("sdk-client", "@modelcontextprotocol/sdk", None).await;
}

/// The v2 SDK client pinned to 2026-07-28 does the same, asking for logs
/// in the call's `_meta`.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_v2_client_reads_content_and_logs() {
    read_content_and_logs(
        "sdk-client-v2",
        "@modelcontextprotocol/client",
        Some("modern"),
    )
    .await;
}

/// Checks the bytes Node decoded (a 1×1 PNG, a RIFF/WAVE file whose size
/// field matches its length), the resource, the block types of a mixed
/// result, three log messages in order, and none from a call that did not
/// ask for logs (2026-07-28) or was filtered by nothing new (legacy).
#[cfg(unix)]
async fn read_content_and_logs(client: &str, package: &str, era: Option<&str>) {
    let dir = client_dir(client);
    ensure_installed(&dir, package).await;
    let example = RunningExample::start("conformance_fixture").await;
    let (_child, mut lines) = node_client(&dir, "content.mjs", &example.url, &example.bearer, &[]);
    let connected = next_step(&mut lines).await;
    assert_eq!(connected["capabilities"]["logging"], json!({}));
    if let Some(era) = era {
        assert_eq!(connected["era"], era);
    }
    check_media(&mut lines).await;
    let resource = next_step(&mut lines).await;
    assert_eq!(
        resource["content"],
        json!([{"type": "resource", "resource": {"uri": "test://embedded-resource",
                "mimeType": "text/plain", "text": "This is an embedded resource content."}}])
    );
    assert_eq!(
        next_step(&mut lines).await["types"],
        json!(["text", "image", "resource"])
    );
    check_logs(&mut lines, era == Some("modern")).await;
    assert_eq!(next_step(&mut lines).await["step"], "done");
    example.stop().await;
}

/// The image and audio steps: the bytes as Node decoded them.
#[cfg(unix)]
async fn check_media(lines: &mut support::processes::Steps) {
    let image = next_step(lines).await;
    assert_eq!(
        image["blocks"],
        json!([{"type": "image", "mimeType": "image/png", "length": 70, "canonicalBase64": true,
                "signature": "89504e470d0a1a0a", "width": 1, "height": 1}])
    );
    let audio = next_step(lines).await;
    let wav = &audio["blocks"][0];
    let facts = ["type", "mimeType", "riff", "wave", "canonicalBase64"].map(|k| wav[k].clone());
    assert_eq!(
        facts,
        [
            json!("audio"),
            json!("audio/wav"),
            json!("RIFF"),
            json!("WAVE"),
            json!(true)
        ]
    );
    assert_eq!(wav["riffSize"], wav["length"].as_u64().unwrap() - 8);
}

/// The logging steps: three info messages in order before the result, then
/// a call that did not ask for logs — in 2026-07-28 it gets none; in the
/// legacy era the session's level (info) admits its one message.
#[cfg(unix)]
async fn check_logs(lines: &mut support::processes::Steps, modern: bool) {
    let logged = next_step(lines).await;
    assert_eq!(
        logged["content"][0]["text"],
        "Tool with logging executed successfully"
    );
    let logs = logged["logs"].as_array().unwrap();
    let data: Vec<&Value> = logs.iter().map(|l| &l["data"]).collect();
    let expected = [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ]
    .map(Value::from);
    assert_eq!(data, expected.iter().collect::<Vec<_>>());
    assert!(logs.iter().all(|l| l["level"] == "info"));
    let quiet = next_step(lines).await;
    assert_eq!(quiet["content"][0]["text"], "Logging evaluated");
    assert_eq!(quiet["logs"], if modern { 3 } else { 4 });
}
