//! The memory a bearer holder can make the host hold, against the formula
//! in `ToolHostConfig`'s docs ("Memory"): eight connections each send the
//! costliest request they can — a body at `max_body_bytes`, mostly a text
//! the tool echoes back, the rest small objects just inside
//! `max_parsed_bytes` — and never read the answer. The process's peak RSS
//! must stay under eight times the per-connection bound (plus the test's
//! own copies of the requests), and every connection must be closed, its
//! response cut off and released, once `write_stall_timeout` has passed.
//! One test in its own binary, so nothing else moves the RSS. Linux only:
//! the RSS is read from `/proc/self/status` (tests/platform_needs.rs).
#![cfg(target_os = "linux")]

mod support;

use std::time::Duration;

use embacle_tool_host::ToolHostConfig;
use support::hostile::{peak_rss, reset_peak_rss, rss, worst_echo_body};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;

const CONNECTIONS: usize = 8;
const MAX_BODY: usize = 8 << 20;
const MAX_PARSED: usize = 16 << 20;
const MAX_HEADER: usize = 64 * 1024;
const MAX_BATCH: usize = 32;
const STALL: Duration = Duration::from_secs(1);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unread_worst_case_responses_stay_within_the_bound() {
    let fx = Fixture::with(ToolHostConfig {
        max_body_bytes: MAX_BODY,
        max_parsed_bytes: MAX_PARSED,
        max_header_bytes: MAX_HEADER,
        max_batch_len: MAX_BATCH,
        write_stall_timeout: STALL,
        ..ToolHostConfig::default()
    })
    .await;
    let addr = fx.addr;
    let request = fx.post(&worst_echo_body(MAX_BODY, MAX_PARSED));
    // Warm up once (reading the answer), so lazily built state is counted
    // in the baseline rather than in the peak.
    let answer = fx.send(&request).await;
    assert_eq!(answer.status, 200);
    let full_answer = answer.body.len();
    let baseline = rss();
    reset_peak_rss();

    let mut sockets = Vec::new();
    for _ in 0..CONNECTIONS {
        let socket = TcpSocket::new_v4().unwrap();
        // A small window, so the answer backs up into the host's memory.
        socket.set_recv_buffer_size(4096).unwrap();
        let mut stream = within(socket.connect(addr)).await.unwrap();
        stream.write_all(&request).await.unwrap();
        sockets.push(stream);
    }
    // Every call ran; their answers are stuck behind unread sockets.
    wait_until("all eight calls were served", || {
        fx.session().calls_served() == 1 + CONNECTIONS as u64
    })
    .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let peak = peak_rss();
    let per_connection = 2 * MAX_HEADER + 3 * MAX_BODY + MAX_PARSED + MAX_BATCH * 1024 + MAX_BODY;
    let test_side = CONNECTIONS * request.len();
    let grew = peak.saturating_sub(baseline);
    println!(
        "peak RSS grew {:.1} MiB for {CONNECTIONS} unread worst-case requests; bound {:.1} MiB \
         ({:.1} MiB per connection, plus {:.1} MiB the test holds)",
        grew as f64 / 1048576.0,
        (CONNECTIONS * per_connection + test_side) as f64 / 1048576.0,
        per_connection as f64 / 1048576.0,
        test_side as f64 / 1048576.0,
    );
    assert!(
        grew <= CONNECTIONS * per_connection + test_side,
        "RSS grew by {grew} bytes, over the bound"
    );

    // After the stall timeout the host gives up on each reader: reading
    // now finds the end of the stream after whatever had been sent.
    // Three times the timeout, so a loaded machine's late timer cannot
    // let a read count as progress first.
    tokio::time::sleep(3 * STALL).await;
    for mut stream in sockets {
        let mut sink = Vec::new();
        let read = within(stream.read_to_end(&mut sink)).await;
        assert!(
            read.is_ok() || read.is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset),
            "the host closed the connection"
        );
        assert!(
            sink.len() < full_answer,
            "the stalled answer was cut off: {} of {full_answer} bytes",
            sink.len()
        );
    }
    wait_until("no call in flight", || fx.host.calls_in_flight() == 0).await;
}
