//! What an attacker on the same machine can do to the host, measured: the
//! legitimate agent's success rate and latency while a process without a
//! bearer floods the port, and the peak memory eight unread worst-case
//! requests from a bearer holder make the host hold. Not a criterion bench
//! (there is nothing to iterate): it runs each scenario once, bounded, and
//! prints `FIGURE` lines for `scripts/perf-report`.
//!
//! `cargo bench --bench flood` (about 15 s; `EMBACLE_FLOOD_SECS` sets the
//! flood's length, default 10)

mod common;

#[path = "../tests/support/mod.rs"]
#[allow(dead_code, unreachable_pub, clippy::all)]
mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::report;
use embacle_tool_host::ToolHostConfig;
use support::hostile::{
    agent_on_fresh_connections, flood, peak_rss, reset_peak_rss, rss, worst_echo_body, FloodStats,
};
use support::Fixture;
use tokio::io::AsyncWriteExt;

/// The default host (256 slots) under a flood of 1,000 connections per
/// second without a bearer, while the agent calls on fresh connections.
async fn under_flood(seconds: u64) {
    let fx = Fixture::new().await;
    let addr = fx.addr;
    let stop = Arc::new(AtomicBool::new(false));
    let stats = Arc::new(FloodStats::default());
    let flooder = tokio::spawn(flood(addr, Arc::clone(&stop), Arc::clone(&stats)));
    let agent = tokio::spawn(agent_on_fresh_connections(
        addr,
        fx.bearer.clone(),
        Arc::clone(&stop),
        Arc::default(),
    ));
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let agent = agent.await.unwrap();
    flooder.await.unwrap();
    let opened = stats.opened.load(Ordering::Relaxed);
    println!(
        "flood: {opened} connections without a bearer in {seconds} s; the agent's calls on fresh \
         connections: {}/{} answered within 1 s",
        agent.answered.len(),
        agent.calls
    );
    report("flood.connections_per_s", opened as u64 / seconds);
    report(
        "flood.agent_answered_pct",
        format!("{:.2}", agent.rate() * 100.0),
    );
    report(
        "flood.agent_p50_ms",
        format!("{:.2}", agent.quantile(0.5).as_secs_f64() * 1e3),
    );
    report(
        "flood.agent_p99_ms",
        format!("{:.2}", agent.quantile(0.99).as_secs_f64() * 1e3),
    );
    report(
        "flood.agent_max_ms",
        format!("{:.2}", agent.quantile(1.0).as_secs_f64() * 1e3),
    );
}

/// Eight connections each send the costliest request the default limits
/// allow and never read the answer.
async fn unread_worst_case() {
    let config = ToolHostConfig::default();
    let (body_limit, parsed_limit) = (config.max_body_bytes, config.max_parsed_bytes);
    if !cfg!(target_os = "linux") {
        println!("8 unread worst-case requests: the RSS is read from /proc, Linux only: skipped");
        return;
    }
    let fx = Fixture::with(config).await;
    let addr = fx.addr;
    let request = fx.post(&worst_echo_body(body_limit, parsed_limit));
    assert_eq!(fx.send(&request).await.status, 200);
    let baseline = rss();
    reset_peak_rss();
    let mut sockets = Vec::new();
    for _ in 0..8 {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let mut stream = socket.connect(addr).await.unwrap();
        stream.write_all(&request).await.unwrap();
        sockets.push(stream);
    }
    while fx.session().calls_served() < 9 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let grew = peak_rss().saturating_sub(baseline) as f64 / 1048576.0;
    let requests = (8 * request.len()) as f64 / 1048576.0;
    println!(
        "8 unread worst-case requests ({:.1} MiB each): peak RSS grew {grew:.1} MiB, \
         {requests:.1} MiB of it the requests this process sent",
        request.len() as f64 / 1048576.0
    );
    report("memory.unread_worst_8_peak_mib", format!("{grew:.1}"));
    drop(sockets);
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing
    // and only wants to know the bench builds and starts.
    if !std::env::args().any(|arg| arg == "--bench") {
        return;
    }
    let seconds = std::env::var("EMBACLE_FLOOD_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(under_flood(seconds));
    runtime.block_on(unread_worst_case());
}
