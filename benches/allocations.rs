//! Allocations per `tools/call` and bytes per live idle session, counted by
//! a global allocator that wraps the system one. A bench, not a test: the
//! figures are reported, not asserted.
//!
//! `cargo bench --bench allocations`

mod common;

use embacle_tool_host::bench_support;
use embacle_tool_host::ToolSession;

use common::*;

#[path = "../tests/support/counting_alloc.rs"]
mod counting_alloc;

use counting_alloc::{allocations, live_bytes, Counting};

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Average allocations of `f` over `n` runs, after a warm-up.
fn per_run(n: usize, mut f: impl FnMut()) -> f64 {
    for _ in 0..100 {
        f();
    }
    let before = allocations();
    for _ in 0..n {
        f();
    }
    (allocations() - before) as f64 / n as f64
}

fn main() {
    // Everything on one current-thread runtime, so no other thread allocates
    // while we count (the accept loop is idle: no connections).
    let runtime = current_thread_runtime();
    let host = default_host(&runtime);
    let session = host.open_session(surface(1)).unwrap();
    let auth = authorization(&session);
    let auth = auth.as_bytes();

    let validate = per_run(10_000, || assert!(bench_support::validate(&host, auth)));
    let read = per_run(10_000, || {
        assert!(bench_support::read_request(CALL.as_bytes()));
    });
    // For comparison: the same body read whole into one `Value`.
    let parse = per_run(10_000, || {
        std::hint::black_box(serde_json::from_slice::<serde_json::Value>(CALL.as_bytes()).unwrap());
    });
    let ping = per_run(10_000, || {
        std::hint::black_box(runtime.block_on(bench_support::dispatch(
            &host,
            auth,
            br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
        )));
    });
    let call = per_run(10_000, || {
        let out = runtime.block_on(bench_support::dispatch(&host, auth, CALL.as_bytes()));
        assert_eq!(out, FLOOR_RESPONSE.as_bytes());
    });
    let static_session = host.open_session(static_surface(1)).unwrap();
    let static_auth = authorization(&static_session);
    let call_static = per_run(10_000, || {
        let out = runtime.block_on(bench_support::dispatch(
            &host,
            static_auth.as_bytes(),
            CALL.as_bytes(),
        ));
        assert_eq!(out, FLOOR_RESPONSE.as_bytes());
    });
    drop(static_session);
    report("allocations.validate", format!("{validate:.1}"));
    report(
        "allocations.dispatch_tools_call_static_surface",
        format!("{call_static:.1}"),
    );
    report("allocations.read_tools_call_body", format!("{read:.1}"));
    report(
        "allocations.tools_call_body_as_one_value",
        format!("{parse:.1}"),
    );
    report("allocations.dispatch_ping", format!("{ping:.1}"));
    report("allocations.dispatch_tools_call", format!("{call:.1}"));

    // Over HTTP: the same client against the host and the floor; the
    // difference is what the host adds per call.
    let floor_addr = runtime.block_on(spawn_floor());
    let (mut host_client, mut floor_client) = runtime.block_on(async {
        (
            Client::connect(host.local_addr(), &authorization(&session)).await,
            Client::connect(floor_addr, "").await,
        )
    });
    let http_host = per_run(5_000, || {
        runtime.block_on(host_client.call());
    });
    let http_floor = per_run(5_000, || {
        runtime.block_on(floor_client.call());
    });
    report(
        "allocations.http_round_trip_host",
        format!("{http_host:.1}"),
    );
    report(
        "allocations.http_round_trip_floor",
        format!("{http_floor:.1}"),
    );
    report(
        "allocations.http_host_minus_floor",
        format!("{:.1}", http_host - http_floor),
    );

    // Bytes per idle session, excluding the surface (all share one).
    let shared_surface = surface(1);
    const N: usize = 10_000;
    let mut guards: Vec<ToolSession> = Vec::with_capacity(N);
    let before = live_bytes();
    for _ in 0..N {
        guards.push(host.open_session(shared_surface.clone()).unwrap());
    }
    let host_side = (live_bytes() - before) as f64 / N as f64;
    report(
        "memory.host_bytes_per_idle_session",
        format!("{host_side:.0}"),
    );
    report("memory.guard_bytes", std::mem::size_of::<ToolSession>());
    drop(guards);
    drop(session);
}
