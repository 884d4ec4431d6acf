//! A bearer that leaks to another local user is useless to them: on Linux
//! the host refuses (403, and closes) a connection whose client end another
//! user owns, on its first request with a live bearer. The other user is
//! played by `curl` started as `nobody` (uid 65534), which needs the test
//! to run as root; elsewhere that case says it was skipped. The same
//! `curl` as this process's user is served, and so is `nobody` when the
//! check is off.
#![cfg(target_os = "linux")]

mod support;

use std::io::Write as _;
use std::os::unix::process::CommandExt as _;
use std::process::{Command, Stdio};

use embacle_tool_host::ToolHostConfig;
use support::*;

const NOBODY: u32 = 65534;

/// The HTTP status `curl`, as `uid` (or as this process's user), gets for
/// a ping with `bearer`; `None` when curl cannot run.
fn curl_status(addr: std::net::SocketAddr, bearer: &str, uid: Option<u32>) -> Option<u16> {
    let mut command = Command::new("curl");
    command
        .env_clear()
        .args([
            "--silent",
            "--noproxy",
            "*",
            "--max-time",
            "10",
            "--output",
            "/dev/null",
        ])
        .args(["--write-out", "%{http_code}"])
        .args(["--header", &format!("Authorization: Bearer {bearer}")])
        .args(["--header", "Content-Type: application/json"])
        .args(["--header", "Accept: application/json, text/event-stream"])
        .args(["--data", PING])
        .arg(format!("http://{addr}/mcp"))
        .stdin(Stdio::null())
        .stderr(Stdio::inherit());
    if let Some(uid) = uid {
        command.uid(uid).gid(uid);
    }
    let output = command.output().ok()?;
    String::from_utf8(output.stdout).ok()?.trim().parse().ok()
}

fn skipped(why: &str) {
    // Past the harness's capture, so a skip does not look like a pass.
    let _ = writeln!(std::io::stderr(), "SKIPPED: {why}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_users_connection_is_refused() {
    // The default config: the check is on by default.
    let fx = Fixture::with(ToolHostConfig::default()).await;
    assert!(
        fx.host.checks_peer_user(),
        "Linux answers NETLINK_SOCK_DIAG: the check is on"
    );
    let (addr, bearer) = (fx.addr, fx.bearer.clone());
    let me = tokio::task::spawn_blocking(move || curl_status(addr, &bearer, None))
        .await
        .unwrap();
    let Some(me) = me else {
        return skipped("curl is not installed: the other-user case did not run");
    };
    assert_eq!(me, 200, "this process's own user is served");
    let root = std::fs::metadata("/proc/self").map(|m| std::os::unix::fs::MetadataExt::uid(&m));
    if root.ok() != Some(0) {
        return skipped("not root, so no process of another user can be started: the other-user case did not run");
    }
    let bearer = fx.bearer.clone();
    let other = tokio::task::spawn_blocking(move || curl_status(addr, &bearer, Some(NOBODY)))
        .await
        .unwrap();
    assert_eq!(other, Some(403), "another user's connection is refused");
    assert_eq!(fx.surface.calls(), 0);

    // The check off: the other user is served.
    let open = Fixture::with(ToolHostConfig {
        refuse_other_users: false,
        ..ToolHostConfig::default()
    })
    .await;
    assert!(!open.host.checks_peer_user());
    let (addr, bearer) = (open.addr, open.bearer.clone());
    let other = tokio::task::spawn_blocking(move || curl_status(addr, &bearer, Some(NOBODY)))
        .await
        .unwrap();
    assert_eq!(other, Some(200));
}
