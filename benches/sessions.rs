//! The round trip with 1, 10,000 and 100,000 live sessions (each with its own
//! surface), side by side: three hosts in one process, called in turn, so the
//! ratio to the 1-session host is measured under the same conditions.
//!
//! `cargo bench --bench sessions`

mod common;

use criterion::{criterion_group, criterion_main, Criterion};
use embacle_tool_host::ToolHost;

use common::*;

const COUNTS: [usize; 3] = [1, 10_000, 100_000];

fn benches(c: &mut Criterion) {
    // For each host: its address and the authorization of a session opened
    // in the middle of the others.
    let targets: Vec<(std::net::SocketAddr, String)> = server_thread(|| async {
        let mut keep: Vec<Box<dyn std::any::Any>> = Vec::new();
        let mut targets = Vec::new();
        for count in COUNTS {
            let host = ToolHost::bind(bench_config()).await.unwrap();
            let mut sessions = Vec::with_capacity(count);
            for _ in 0..count {
                sessions.push(host.open_session(surface(1)).unwrap());
            }
            assert_eq!(host.live_sessions(), count);
            targets.push((host.local_addr(), authorization(&sessions[count / 2])));
            keep.push(Box::new((host, sessions)));
        }
        (targets, Box::new(keep) as Box<dyn std::any::Any>)
    });
    let runtime = client_runtime();
    let mut clients: Vec<Client> = runtime.block_on(async {
        let mut clients = Vec::new();
        for (addr, auth) in &targets {
            clients.push(Client::connect(*addr, auth).await);
        }
        clients
    });

    let mut group = c.benchmark_group("sessions");
    for (count, client) in COUNTS.iter().zip(clients.iter_mut()) {
        group.bench_function(format!("round_trip_{count}"), |b| {
            b.iter(|| runtime.block_on(client.call()))
        });
    }
    group.finish();

    let medians = runtime.block_on(interleaved_medians(&mut clients, 20_000));
    for (count, median) in COUNTS.iter().zip(&medians) {
        report(
            &format!("sessions.{count}_p50_us"),
            format!("{:.1}", *median as f64 / 1e3),
        );
        report(
            &format!("sessions.{count}_ratio"),
            format!("{:.3}", *median as f64 / medians[0] as f64),
        );
    }
}

criterion_group!(sessions, benches);
criterion_main!(sessions);
