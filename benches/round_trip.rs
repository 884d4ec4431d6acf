//! One `tools/call` over a keep-alive loopback connection against the host,
//! and — in the same group, in the same process — the same request against a
//! bare hyper `service_fn` that returns the same fixed JSON-RPC result (the
//! floor). Prints the host/floor ratio, sequentially and at 32 connections.
//!
//! `cargo bench --bench round_trip`

mod common;

use criterion::{criterion_group, criterion_main, Criterion};
use embacle_tool_host::ToolHost;

use common::*;

struct Servers {
    host: std::net::SocketAddr,
    authorization: String,
    floor: std::net::SocketAddr,
}

fn servers() -> Servers {
    server_thread(|| async {
        let host = ToolHost::bind(bench_config()).await.unwrap();
        let session = host.open_session(surface(1)).unwrap();
        let servers = Servers {
            host: host.local_addr(),
            authorization: authorization(&session),
            floor: spawn_floor().await,
        };
        (servers, Box::new((host, session)) as Box<dyn std::any::Any>)
    })
}

/// Instruction counts are steadier than time on a shared machine. With
/// `EMBACLE_CALLGRIND=host` (or `floor`) and `EMBACLE_CALLS=N`, the bench
/// only makes N sequential calls to that server, so that two runs under
/// `valgrind --tool=callgrind` at two values of N give the instructions one
/// call costs, client and server together (`scripts/perf-report` does this).
fn callgrind_mode() -> bool {
    let Ok(target) = std::env::var("EMBACLE_CALLGRIND") else {
        return false;
    };
    let calls: usize = std::env::var("EMBACLE_CALLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);
    let servers = servers();
    let runtime = client_runtime();
    runtime.block_on(async {
        let mut client = match target.as_str() {
            "host" => Client::connect(servers.host, &servers.authorization).await,
            _ => Client::connect(servers.floor, "").await,
        };
        for _ in 0..calls {
            client.call().await;
        }
    });
    true
}

fn benches(c: &mut Criterion) {
    if callgrind_mode() {
        return;
    }
    let servers = servers();
    let runtime = client_runtime();
    let (mut host, mut floor) = runtime.block_on(async {
        (
            Client::connect(servers.host, &servers.authorization).await,
            Client::connect(servers.floor, "").await,
        )
    });

    let mut group = c.benchmark_group("round_trip");
    group.bench_function("host", |b| b.iter(|| runtime.block_on(host.call())));
    group.bench_function("floor", |b| b.iter(|| runtime.block_on(floor.call())));
    group.finish();

    // The ratio, from interleaved samples so both see the same noise.
    report_pair(&runtime, "round_trip", [("host", host), ("floor", floor)]);

    // Throughput at 32 connections: pairs of runs, host and floor
    // back to back (in alternating order), so each pair sees the same
    // machine; the median of the pairs' ratios is reported.
    let (mut host_rates, mut floor_rates, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for pair in 0..15 {
        let run = |addr, auth: &str| runtime.block_on(throughput(addr, auth, 32, 500));
        let (h, f) = if pair % 2 == 0 {
            let h = run(servers.host, &servers.authorization);
            (h, run(servers.floor, ""))
        } else {
            let f = run(servers.floor, "");
            (run(servers.host, &servers.authorization), f)
        };
        host_rates.push(h);
        floor_rates.push(f);
        ratios.push(h / f);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    report(
        "throughput32.host_calls_per_s",
        format!("{:.0}", median(&mut host_rates)),
    );
    report(
        "throughput32.floor_calls_per_s",
        format!("{:.0}", median(&mut floor_rates)),
    );
    report(
        "throughput32.ratio_median_of_pairs",
        format!("{:.3}", median(&mut ratios)),
    );
}

criterion_group!(round_trip, benches);
criterion_main!(round_trip);
