//! The per-call cost of a session that has a client listening for list
//! changes: one `tools/call` against a session with an idle legacy GET
//! stream open, next to the same call against a session without one, on
//! two hosts in the same process, with interleaved samples. A stream waits
//! on a `Notify` and never runs while nothing changes, so the ratio should
//! be 1 within noise.
//!
//! `cargo bench --bench idle_listener`

mod common;

use std::net::SocketAddr;

use criterion::{criterion_group, criterion_main, Criterion};
use embacle_tool_host::ToolHost;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use common::*;

struct Hosts {
    listened: (SocketAddr, String),
    plain: (SocketAddr, String),
}

fn hosts() -> Hosts {
    server_thread(|| async {
        let listened = ToolHost::bind(bench_config()).await.unwrap();
        let listened_session = listened.open_session(surface(1)).unwrap();
        let plain = ToolHost::bind(bench_config()).await.unwrap();
        let plain_session = plain.open_session(surface(1)).unwrap();
        let hosts = Hosts {
            listened: (listened.local_addr(), authorization(&listened_session)),
            plain: (plain.local_addr(), authorization(&plain_session)),
        };
        let keep = (listened, listened_session, plain, plain_session);
        (hosts, Box::new(keep) as Box<dyn std::any::Any>)
    })
}

/// Opens the legacy GET stream and reads its response head; the stream
/// then stays open, idle, for as long as the returned socket lives.
async fn open_idle_stream(addr: SocketAddr, authorization: &str) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {authorization}\r\nAccept: text/event-stream\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte).await.unwrap();
        head.push(byte[0]);
    }
    assert!(head.starts_with(b"HTTP/1.1 200"), "the GET stream opened");
    stream
}

fn benches(c: &mut Criterion) {
    let hosts = hosts();
    let runtime = client_runtime();
    let (_stream, mut listened, mut plain) = runtime.block_on(async {
        let stream = open_idle_stream(hosts.listened.0, &hosts.listened.1).await;
        (
            stream,
            Client::connect(hosts.listened.0, &hosts.listened.1).await,
            Client::connect(hosts.plain.0, &hosts.plain.1).await,
        )
    });

    let mut group = c.benchmark_group("idle_listener");
    group.bench_function("with_stream", |b| {
        b.iter(|| runtime.block_on(listened.call()))
    });
    group.bench_function("without", |b| b.iter(|| runtime.block_on(plain.call())));
    group.finish();

    report_pair(
        &runtime,
        "idle_listener",
        [("with_stream", listened), ("without", plain)],
    );
}

criterion_group!(idle_listener, benches);
criterion_main!(idle_listener);
