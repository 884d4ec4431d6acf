//! A bearer that leaks to another local user is useless to them: on Linux
//! the host refuses (403, and closes) a connection whose client end another
//! user owns, on its first request that carries `Authorization`, whether
//! the bearer is live or not. The other user is played by `curl` and
//! `perl` started as `nobody` (uid 65534), which needs the tests to run as
//! root; elsewhere those cases say they were skipped, and under
//! `EMBACLE_NO_SKIP` (CI) they fail instead.
//!
//! The host's own user is served over every socket a loopback client may
//! open: IPv4, IPv6, and a dual-stack `AF_INET6` socket to an IPv4 address
//! (v4-mapped), which is what the JDK's `HttpClient` opens by default.
#![cfg(target_os = "linux")]

mod support;

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::os::unix::process::CommandExt as _;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use embacle_tool_host::ToolHostConfig;
use support::hostile::{flood, FloodStats};
use support::*;
use tokio::net::TcpStream;

const NOBODY: u32 = 65534;

/// The HTTP status `curl`, as `uid` (or as this process's user), gets for
/// a ping with `bearer`; `None` when curl cannot run.
fn curl_status(addr: SocketAddr, bearer: &str, uid: Option<u32>) -> Option<u16> {
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

fn running_as_root() -> bool {
    let me = std::fs::metadata("/proc/self").map(|m| std::os::unix::fs::MetadataExt::uid(&m));
    me.ok() == Some(0)
}

async fn curl(addr: SocketAddr, bearer: &str, uid: Option<u32>) -> Option<u16> {
    let bearer = bearer.to_owned();
    tokio::task::spawn_blocking(move || curl_status(addr, &bearer, uid))
        .await
        .unwrap()
}

/// Another user is refused with a live bearer and with a dead one alike
/// (403 both: the answer says nothing of the bearer); the host's user is
/// served; with the check off, the other user is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_users_connection_is_refused() {
    // The default config: the check is on by default.
    let fx = Fixture::with(ToolHostConfig::default()).await;
    assert!(
        fx.host.checks_peer_user(),
        "Linux answers NETLINK_SOCK_DIAG: the check is on"
    );
    let Some(me) = curl(fx.addr, &fx.bearer, None).await else {
        return skipped("curl is not installed: the other-user case did not run");
    };
    assert_eq!(me, 200, "this process's own user is served");
    if !running_as_root() {
        return skipped("not root, so no process of another user can be started: the other-user case did not run");
    }
    let live = curl(fx.addr, &fx.bearer, Some(NOBODY)).await;
    assert_eq!(live, Some(403), "another user's connection is refused");
    let dead = {
        let session = fx.host.open_session(RecordingSurface::new()).unwrap();
        bearer_of(&session)
    };
    let dead = curl(fx.addr, &dead, Some(NOBODY)).await;
    assert_eq!(
        dead, live,
        "the same answer for a dead bearer as a live one"
    );
    assert_eq!(fx.surface.calls(), 0);

    // The check off: the other user is served.
    let open = Fixture::with(ToolHostConfig {
        refuse_other_users: false,
        ..ToolHostConfig::default()
    })
    .await;
    assert!(!open.host.checks_peer_user());
    let other = curl(open.addr, &open.bearer, Some(NOBODY)).await;
    assert_eq!(other, Some(200));
}

/// The host's own user is served from a socket of each kind: `AF_INET`,
/// and a dual-stack `AF_INET6` socket connected to `::ffff:127.0.0.1`, to
/// an IPv4 listener; `AF_INET6` to an IPv6 listener.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn own_user_is_served_over_every_socket_kind() {
    let v4 = Fixture::with(ToolHostConfig::default()).await;
    assert!(v4.host.checks_peer_user());
    let port = v4.addr.port();
    let mapped = SocketAddr::new(
        IpAddr::V6(Ipv6Addr::from([0, 0, 0, 0, 0, 0xffff, 0x7f00, 1])),
        port,
    );
    for to in [v4.addr, mapped] {
        let stream = within(TcpStream::connect(to)).await.unwrap();
        assert_eq!(stream.local_addr().unwrap().is_ipv6(), to.is_ipv6());
        let r = Conn::from_stream(stream).send(&v4.post(PING)).await;
        assert_eq!(r.status, 200, "an IPv4 listener, a client socket to {to}");
    }
    let v6 = Fixture::with(ToolHostConfig {
        bind_addr: IpAddr::V6(Ipv6Addr::LOCALHOST),
        ..ToolHostConfig::default()
    })
    .await;
    assert!(v6.host.checks_peer_user());
    let r = Conn::open(v6.addr).await.send(&v6.post(PING)).await;
    assert_eq!(r.status, 200, "an IPv6 listener, an IPv6 client socket");
    assert_eq!((v4.surface.calls(), v6.surface.calls()), (0, 0));
}

/// A real JVM client, the JDK's `HttpClient` in its default configuration
/// (a dual-stack socket to 127.0.0.1), is served with the check on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jvm_http_client_is_served() {
    let fx = Fixture::with(ToolHostConfig::default()).await;
    assert!(fx.host.checks_peer_user());
    let source =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/jvm-client/McpPing.java");
    let url = format!("http://{}/mcp", fx.addr);
    let run = tokio::process::Command::new("java")
        .arg(source)
        .args([url.as_str(), fx.bearer.as_str()])
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = match tokio::time::timeout(std::time::Duration::from_secs(60), run).await {
        Ok(Ok(output)) => output,
        Ok(Err(_)) => return skipped("java is not installed: the JVM client case did not run"),
        Err(_) => panic!("the JVM client took over 60 s"),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut lines = stdout.lines();
    assert_eq!(lines.next(), Some("200"), "{stdout}");
    assert_eq!(
        lines.next(),
        Some(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#)
    );
}

/// Tries of the closed-socket race below; the issue that found it saw a
/// call get through about once in 150 tries.
const RACE_TRIES: u32 = 10_000;

/// Another user sends a `tools/call` with a leaked bearer (and one byte
/// more) and closes at once, over and over, while a flood keeps the host
/// busy, so that the host often looks the client's socket up after it
/// closed. The kernel then reports a closed remnant with uid 0 — a root
/// host's own uid. Run with the host as root: no call reaches the surface.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_socket_of_another_user_is_no_one() {
    if !running_as_root() {
        return skipped("not root: the closed-socket race did not run");
    }
    let fx = Fixture::with(ToolHostConfig::default()).await;
    assert!(fx.host.checks_peer_user());
    let stop = Arc::new(AtomicBool::new(false));
    let flooding = tokio::spawn(flood(
        fx.addr,
        Arc::clone(&stop),
        Arc::new(FloodStats::default()),
    ));
    let call = fx.post(&call_body(1, "echo", serde_json::json!({"text": "blind"})).to_string());
    let mut request = String::from_utf8(call).unwrap();
    request.push('x');
    // The loop ends after RACE_TRIES or 120 s, whichever comes first.
    let script = r#"
        use IO::Socket::INET;
        my ($port, $request, $tries) = @ARGV;
        my ($n, $end) = (0, time + 120);
        while ($n < $tries && time < $end) {
            my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Proto => 'tcp') or next;
            syswrite($s, $request);
            close($s);
            $n++;
        }
        print "$n\n";
    "#;
    let attacker = tokio::process::Command::new("perl")
        .env_clear()
        .args(["-e", script])
        .args([fx.addr.port().to_string(), request, RACE_TRIES.to_string()])
        .uid(NOBODY)
        .gid(NOBODY)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(std::time::Duration::from_secs(150), attacker).await;
    stop.store(true, Ordering::Relaxed);
    flooding.await.unwrap();
    let output = match output {
        Ok(Ok(output)) => output,
        Ok(Err(_)) => return skipped("perl is not installed: the closed-socket race did not run"),
        Err(_) => panic!("the attacker ran past its own time limit"),
    };
    let tries: u32 = String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .unwrap();
    assert_eq!(
        tries,
        RACE_TRIES,
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        fx.surface.calls(),
        0,
        "calls of another user in {tries} tries"
    );
    // The host is still the host's: its own user is served.
    assert_eq!(fx.ping().await.status, 200);
    println!("closed-socket race: {tries} tries, 0 calls");
}
