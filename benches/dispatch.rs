//! The JSON-RPC path without a socket: a POST body's bytes in, the response
//! bytes out (authentication, parsing, dispatch, the tool, rendering). Each
//! iteration includes one `block_on` of a current-thread runtime.
//!
//! `cargo bench --bench dispatch`

mod common;

use criterion::{criterion_group, criterion_main, Criterion};
use embacle_tool_host::bench_support;

fn benches(c: &mut Criterion) {
    let runtime = common::current_thread_runtime();
    let host = common::default_host(&runtime);
    let mut group = c.benchmark_group("dispatch");

    let one = host.open_session(common::surface(1)).unwrap();
    let one_auth = common::authorization(&one);
    let response = runtime.block_on(bench_support::dispatch(
        &host,
        one_auth.as_bytes(),
        common::CALL.as_bytes(),
    ));
    assert_eq!(response, common::FLOOR_RESPONSE.as_bytes());
    group.bench_function("tools_call", |b| {
        b.iter(|| {
            runtime.block_on(bench_support::dispatch(
                &host,
                one_auth.as_bytes(),
                common::CALL.as_bytes(),
            ))
        })
    });

    let list = br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    group.bench_function("tools_list_1", |b| {
        b.iter(|| runtime.block_on(bench_support::dispatch(&host, one_auth.as_bytes(), list)))
    });
    let hundred = host.open_session(common::surface(100)).unwrap();
    let hundred_auth = common::authorization(&hundred);
    group.bench_function("tools_list_100", |b| {
        b.iter(|| {
            runtime.block_on(bench_support::dispatch(
                &host,
                hundred_auth.as_bytes(),
                list,
            ))
        })
    });
    group.finish();
}

criterion_group!(dispatch, benches);
criterion_main!(dispatch);
