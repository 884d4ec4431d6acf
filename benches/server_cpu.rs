//! The server's own CPU time per call: the host next to two bare-hyper
//! floors, each server alone on a thread of its own, measured by that
//! thread's CPU clock — so the client's cost, which dilutes a round-trip
//! ratio, is not in the figure.
//!
//! - floor (a): bare hyper that collects the body and answers fixed bytes;
//! - floor (b): the same, parsing the body into a `serde_json::Value`
//!   first — the least any JSON-RPC server must do.
//!
//! Figures (each a ratio within one run; median, quartiles and range over
//! rounds in
//! which every server is measured once, in rotating order):
//!
//! - sequential: one keep-alive connection, `CALLS` calls per server per
//!   round; the host with 1 and with 100,000 live sessions, with a stream
//!   of list changes open on its session (`host_listening`), and with every
//!   call naming an MCP session (`Mcp-Session-Id`, `host_session_id`), and
//!   with the same `MCP-Protocol-Version` header but no id
//!   (`host_versioned`), and with an observer that counts every request
//!   (`host_observed`: what a cheap observer costs; the others have none,
//!   the default); each of the last four also as a ratio to
//!   `host_1`, and `host_session_id` to `host_versioned` (the id's own
//!   cost: its header, its lookup);
//! - 32 connections: the same, 32 keep-alive connections at once;
//! - a wrong bearer next to a right one, each on a fresh connection per
//!   request (the host closes a connection it refused, so that is what an
//!   unauthenticated peer gets);
//! - a right bearer on fresh connections with the peer-user check on (the
//!   default) and off (`refuse_other_users: false`): the check's cost per
//!   connection (one read of `/proc/net/tcp`).
//!
//! A thread's CPU time is read from Linux's `/proc/self/task/TID/schedstat`
//! (nanoseconds on a CPU, user and system), so this bench needs Linux. Pin
//! the whole process to one CPU for the sequential figures, as
//! `scripts/perf-report` does: `taskset -c 0 cargo bench --bench server_cpu`.
//!
//! For callgrind, `server_cpu serve host|host_observed|floor_a|floor_b` runs one server
//! until its stdin closes, printing `ADDR AUTHORIZATION` first, and
//! `server_cpu drive ADDR AUTHORIZATION N [versioned|session]` makes N
//! sequential calls from another process (with `MCP-Protocol-Version`, or
//! with that and an `Mcp-Session-Id` it mints first); `scripts/perf-report` runs the first under valgrind at
//! two values of N, which gives the server's own instructions per call.

mod common;

use std::net::SocketAddr;
use std::path::PathBuf;

use embacle_tool_host::ToolHost;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use common::*;

/// Calls per server per round.
const CALLS: usize = 4_000;
const ROUNDS: usize = 25;
/// Under `cargo test --benches` (no `--bench` argument): one short round,
/// which only shows that every server answers and the figures come out.
const SMOKE_CALLS: usize = 64;

/// One server on its own thread: where it listens, what authorizes a call,
/// and the file its thread's CPU time is read from.
#[derive(Clone)]
struct Server {
    label: &'static str,
    addr: SocketAddr,
    authorization: String,
    /// Headers its calls add: an MCP session's id, a protocol version.
    headers: Vec<(&'static str, String)>,
    schedstat: PathBuf,
}

impl Server {
    /// Nanoseconds the server's thread has spent on a CPU.
    fn cpu_ns(&self) -> u64 {
        let text = std::fs::read_to_string(&self.schedstat).expect("Linux schedstat");
        text.split_whitespace().next().unwrap().parse().unwrap()
    }
}

/// The schedstat file of the calling thread (Linux; `main` runs nothing
/// elsewhere).
#[cfg(target_os = "linux")]
fn own_schedstat() -> PathBuf {
    let link = std::fs::read_link("/proc/thread-self").expect("Linux /proc/thread-self");
    PathBuf::from("/proc").join(link).join("schedstat")
}

#[cfg(not(target_os = "linux"))]
fn own_schedstat() -> PathBuf {
    unreachable!("main runs nothing off Linux")
}

fn host_server(label: &'static str, sessions: usize) -> Server {
    host_server_with(label, sessions, bench_config())
}

/// The bench's host config with an observer that counts requests: the
/// least an observer does.
fn observed_config() -> embacle_tool_host::ToolHostConfig {
    use std::sync::atomic::{AtomicU64, Ordering};
    let seen = std::sync::Arc::new(AtomicU64::new(0));
    let observer = embacle_tool_host::observe::Observer::new(move |_| {
        seen.fetch_add(1, Ordering::Relaxed);
    });
    embacle_tool_host::ToolHostConfig {
        observer: Some(observer),
        ..bench_config()
    }
}

fn host_server_with(
    label: &'static str,
    sessions: usize,
    config: embacle_tool_host::ToolHostConfig,
) -> Server {
    server_thread(move || async move {
        let host = ToolHost::bind(config).await.unwrap();
        let mut open = Vec::with_capacity(sessions);
        for _ in 0..sessions {
            open.push(host.open_session(surface(1)).unwrap());
        }
        let server = Server {
            label,
            addr: host.local_addr(),
            authorization: authorization(&open[sessions / 2]),
            headers: Vec::new(),
            schedstat: own_schedstat(),
        };
        (server, Box::new((host, open)) as Box<dyn std::any::Any>)
    })
}

fn floor_server(label: &'static str, parse: bool) -> Server {
    server_thread(move || async move {
        let addr = spawn_floor_with(parse).await;
        let server = Server {
            label,
            addr,
            authorization: String::new(),
            headers: Vec::new(),
            schedstat: own_schedstat(),
        };
        (server, Box::new(()) as Box<dyn std::any::Any>)
    })
}

/// Server CPU per call, in ns, over `calls` calls on each of `connections`
/// keep-alive connections.
fn measure(
    runtime: &tokio::runtime::Runtime,
    server: &Server,
    connections: usize,
    calls: usize,
) -> f64 {
    runtime.block_on(async {
        let mut clients = Vec::with_capacity(connections);
        for _ in 0..connections {
            let client = Client::connect(server.addr, &server.authorization).await;
            clients.push(client.with_headers(&server.headers));
        }
        // One call each first, so connection set-up is not counted.
        for client in &mut clients {
            client.call().await;
        }
        let before = server.cpu_ns();
        run_concurrently(clients, calls).await;
        (server.cpu_ns() - before) as f64 / (connections * calls) as f64
    })
}

/// Server CPU per request, in ns, over `requests` requests each on a fresh
/// connection (`Connection: close`), with `authorization`; returns the
/// status seen.
fn measure_fresh(
    runtime: &tokio::runtime::Runtime,
    server: &Server,
    authorization: &str,
    requests: usize,
) -> (f64, u16) {
    let request = raw_call(server.addr, authorization);
    runtime.block_on(async {
        let mut status = 0;
        let before = server.cpu_ns();
        for _ in 0..requests {
            status = one_shot(server.addr, &request).await;
        }
        ((server.cpu_ns() - before) as f64 / requests as f64, status)
    })
}

/// The bytes of one `CALL` POST that asks the server to close afterwards.
fn raw_call(addr: SocketAddr, authorization: &str) -> Vec<u8> {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {authorization}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{CALL}",
        CALL.len()
    )
    .into_bytes()
}

/// Sends `request` on a new connection and reads to its end; the status.
async fn one_shot(addr: SocketAddr, request: &[u8]) -> u16 {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    std::str::from_utf8(&response[9..12])
        .unwrap()
        .parse()
        .unwrap()
}

/// Median, quartiles and range of `values`.
fn summary(values: &mut [f64]) -> String {
    values.sort_by(f64::total_cmp);
    let at = |q: usize| values[(values.len() - 1) * q / 4];
    format!(
        "{:.3} (quartiles {:.3}–{:.3}, range {:.3}–{:.3}, {} rounds)",
        at(2),
        at(1),
        at(3),
        values[0],
        values[values.len() - 1],
        values.len()
    )
}

/// Rounds of every server measured once, in rotating order; the ratios of
/// each host to each floor, per round.
fn rounds(
    runtime: &tokio::runtime::Runtime,
    servers: &[Server],
    connections: usize,
    (rounds, calls): (usize, usize),
    prefix: &str,
) {
    let mut per_call: Vec<Vec<f64>> = vec![Vec::new(); servers.len()];
    for round in 0..rounds {
        for k in 0..servers.len() {
            let i = (k + round) % servers.len();
            per_call[i].push(measure(runtime, &servers[i], connections, calls));
        }
    }
    for (server, values) in servers.iter().zip(&per_call) {
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        report(
            &format!("{prefix}.{}_ns_per_call", server.label),
            format!("{:.0}", sorted[sorted.len() / 2]),
        );
    }
    let index = |label: &str| servers.iter().position(|s| s.label == label).unwrap();
    for host in servers.iter().filter(|s| s.label.starts_with("host")) {
        let against: &[&str] = match host.label {
            "host_listening" | "host_versioned" | "host_observed" => {
                &["floor_a", "floor_b", "host_1"]
            }
            "host_session_id" => &["floor_a", "floor_b", "host_1", "host_versioned"],
            _ => &["floor_a", "floor_b"],
        };
        for &floor in against {
            let (h, f) = (index(host.label), index(floor));
            let mut ratios: Vec<f64> = per_call[h]
                .iter()
                .zip(&per_call[f])
                .map(|(a, b)| a / b)
                .collect();
            report(
                &format!("{prefix}.{}_over_{floor}", host.label),
                summary(&mut ratios),
            );
        }
    }
}

fn main() {
    if !cfg!(target_os = "linux") {
        println!("server_cpu: Linux only (a thread's CPU time from /proc/thread-self/schedstat), skipped");
        return;
    }
    let bench = std::env::args().any(|a| a == "--bench");
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    match args.first().map(String::as_str) {
        Some("serve") => return serve(args.get(1).map(String::as_str).unwrap_or("host")),
        Some("drive") => {
            let headers = args.get(4).map(String::as_str);
            return drive(&args[1], &args[2], args[3].parse().unwrap(), headers);
        }
        _ => {}
    }
    let mut servers = [
        host_server("host_1", 1),
        host_server("host_100000", 100_000),
        host_server("host_listening", 1),
        host_server("host_session_id", 1),
        host_server("host_versioned", 1),
        host_server_with("host_observed", 1, observed_config()),
        floor_server("floor_a", false),
        floor_server("floor_b", true),
    ];
    let runtime = client_runtime();
    // `host_listening`'s session has a stream open (kept, never read);
    // `host_session_id`'s calls name the MCP session `initialize` minted.
    let _listener = runtime.block_on(async {
        let listening = &servers[2];
        let id = mint_mcp_session(listening.addr, &listening.authorization).await;
        open_listener(listening.addr, &listening.authorization, &id).await
    });
    // `host_versioned`'s calls carry the same `MCP-Protocol-Version`
    // without an id: what the id's lookup adds is the ratio of the two.
    let naming = &servers[3];
    let id = runtime.block_on(mint_mcp_session(naming.addr, &naming.authorization));
    let version = ("mcp-protocol-version", MCP_SESSION_VERSION.to_owned());
    servers[3].headers = vec![("mcp-session-id", id), version.clone()];
    servers[4].headers = vec![version];
    let (rounds_run, calls) = if bench {
        (ROUNDS, CALLS)
    } else {
        (1, SMOKE_CALLS)
    };
    rounds(
        &runtime,
        &servers,
        1,
        (rounds_run, calls),
        "server_cpu.sequential",
    );
    let per_connection = (rounds_run, calls / 32);
    rounds(&runtime, &servers, 32, per_connection, "server_cpu.conns32");

    // A wrong bearer against a right one, both on fresh connections.
    let host = &servers[0];
    let wrong = format!(
        "Bearer {}",
        "A".repeat(host.authorization.len() - "Bearer ".len())
    );
    let mut ratios = Vec::new();
    let fresh = calls.min(500);
    for _ in 0..rounds_run {
        let (right, ok) = measure_fresh(&runtime, host, &host.authorization, fresh);
        let (refused, status) = measure_fresh(&runtime, host, &wrong, fresh);
        assert_eq!((ok, status), (200, 401));
        ratios.push(refused / right);
    }
    report(
        "server_cpu.fresh_connection.wrong_over_right_bearer",
        summary(&mut ratios),
    );

    // The peer-user check's cost: a right bearer on fresh connections, the
    // check on (every host above) and off.
    let unchecked = host_server_with(
        "host_unchecked",
        1,
        embacle_tool_host::ToolHostConfig {
            refuse_other_users: false,
            ..bench_config()
        },
    );
    let (mut ratios, mut checked_ns, mut unchecked_ns) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds_run {
        let (on, a) = measure_fresh(&runtime, host, &host.authorization, fresh);
        let (off, b) = measure_fresh(&runtime, &unchecked, &unchecked.authorization, fresh);
        assert_eq!((a, b), (200, 200));
        ratios.push(on / off);
        checked_ns.push(on);
        unchecked_ns.push(off);
    }
    for (label, mut values) in [("peer_checked", checked_ns), ("unchecked", unchecked_ns)] {
        values.sort_by(f64::total_cmp);
        report(
            &format!("server_cpu.fresh_connection.{label}_ns_per_connection"),
            format!("{:.0}", values[values.len() / 2]),
        );
    }
    report(
        "server_cpu.fresh_connection.peer_checked_over_unchecked",
        summary(&mut ratios),
    );
}

/// `serve LABEL`: one server on this thread until stdin closes (`host`,
/// `host_observed`, `floor_a`, `floor_b`).
fn serve(label: &str) {
    std::thread::spawn(|| {
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
        std::process::exit(0);
    });
    let runtime = current_thread_runtime();
    runtime.block_on(async {
        let keep: Box<dyn std::any::Any>;
        let (addr, authorization) = match label {
            "floor_a" | "floor_b" => {
                keep = Box::new(());
                (spawn_floor_with(label == "floor_b").await, String::new())
            }
            _ => {
                let config = match label {
                    "host_observed" => observed_config(),
                    _ => bench_config(),
                };
                let host = ToolHost::bind(config).await.unwrap();
                let session = host.open_session(surface(1)).unwrap();
                let addr = host.local_addr();
                let authorization = authorization(&session);
                keep = Box::new((host, session));
                (addr, authorization)
            }
        };
        println!(
            "{addr} {}",
            if authorization.is_empty() {
                "-"
            } else {
                &authorization
            }
        );
        std::future::pending::<()>().await;
        drop(keep);
    });
}

/// `drive ADDR AUTHORIZATION N`: N sequential calls.
fn drive(addr: &str, authorization: &str, calls: usize, headers: Option<&str>) {
    let authorization = if authorization == "-" {
        ""
    } else {
        authorization
    };
    let runtime = client_runtime();
    runtime.block_on(async {
        let addr = addr.parse().unwrap();
        let version = ("mcp-protocol-version", MCP_SESSION_VERSION.to_owned());
        let headers = match headers {
            None => vec![],
            Some("versioned") => vec![version],
            Some("session") => {
                let id = mint_mcp_session(addr, authorization).await;
                vec![("mcp-session-id", id), version]
            }
            Some(other) => panic!("drive takes versioned or session, not {other}"),
        };
        let mut client = Client::connect(addr, authorization)
            .await
            .with_headers(&headers);
        for _ in 0..calls {
            client.call().await;
        }
    });
}
