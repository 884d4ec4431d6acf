//! What a notification stream makes the host keep, counted by the global
//! allocator: a `subscriptions/listen` with a long id is refused (before,
//! four listens with 4 MiB ids held 66 MB for as long as their client
//! idled), and a stream with the longest id allowed keeps less than the
//! 4 KiB that `ToolHostConfig`'s memory formula allows it besides its
//! connection. One test in its own binary, so nothing else moves the count.

mod support;

use embacle_tool_host::ToolHostConfig;
use serde_json::{json, Value};
use support::counting_alloc;
use support::*;

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

const STREAMS: usize = 4;

fn listen(id: &str) -> Value {
    let mut body = modern_body(
        0,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    body["id"] = json!(id);
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_keep_what_the_formula_says() {
    let fx = Fixture::with(ToolHostConfig::default()).await;
    let idle = host_tasks();
    // Warm-up: one connection of each kind, so lazily built state is in
    // the baseline.
    {
        let mut conn = fx.conn().await;
        assert_eq!(conn.send(&fx.post(PING)).await.status, 200);
        let mut conn = fx.conn().await;
        let events = conn
            .send_streaming(&fx.modern_request(&listen("warm")))
            .await;
        assert_eq!(events.status, 200);
    }
    connections_closed(idle).await;

    // Four long ids: refused, with a null id (echoing it would write the
    // 4 MiB back), and nothing kept once the requests are answered.
    let long = "x".repeat((4 << 20) - 4096); // the body just fits max_body_bytes
    let before = counting_alloc::live_bytes();
    let mut refused = Vec::new();
    for _ in 0..STREAMS {
        let mut conn = fx.conn().await;
        let r = conn.send(&fx.modern_request(&listen(&long))).await;
        assert_eq!(r.status, 400);
        assert_eq!(r.error_code(), -32600);
        assert!(r.json()["id"].is_null());
        assert!(
            r.error_message().contains("at most 256 bytes"),
            "{}",
            r.error_message()
        );
        refused.push(conn);
    }
    let kept = counting_alloc::live_bytes() - before;
    println!("four refused long-id listens keep {kept} bytes");
    assert!(
        kept < 1 << 20,
        "{kept} bytes kept after four refused 4 MiB ids"
    );
    drop(refused);
    connections_closed(idle).await;

    // What a keep-alive connection costs, then what a stream adds to it.
    let before = counting_alloc::live_bytes();
    let mut plain = Vec::new();
    for _ in 0..STREAMS {
        let mut conn = fx.conn().await;
        assert_eq!(conn.send(&fx.post(PING)).await.status, 200);
        plain.push(conn);
    }
    let per_connection = (counting_alloc::live_bytes() - before) / STREAMS as isize;
    drop(plain);
    connections_closed(idle).await;

    // The costliest id allowed: 42 control characters, written as 254
    // bytes of `\u0001` escapes (256 with the quotes); 256 of them are
    // refused.
    let id = "\u{1}".repeat(42);
    let mut conn = fx.conn().await;
    let refused = conn
        .send(&fx.modern_request(&listen(&"\u{1}".repeat(256))))
        .await;
    assert_eq!(refused.status, 400, "an id written as 1.5 KB is refused");
    drop(conn);
    connections_closed(idle).await;
    let before = counting_alloc::live_bytes();
    let mut conns: Vec<Conn> = Vec::new();
    for _ in 0..STREAMS {
        conns.push(fx.conn().await);
    }
    let mut streams = Vec::new();
    for conn in &mut conns {
        let mut events = conn.send_streaming(&fx.modern_request(&listen(&id))).await;
        assert_eq!(events.status, 200);
        let acknowledged = events.next_event().await.expect("the acknowledgement");
        assert!(acknowledged.contains("acknowledged"), "{acknowledged}");
        streams.push(events);
    }
    let per_stream = (counting_alloc::live_bytes() - before) / STREAMS as isize;
    println!("a keep-alive connection: {per_connection} bytes; a stream with the costliest id allowed: {per_stream} bytes");
    assert!(
        per_stream - per_connection < 4096,
        "a stream keeps {} bytes besides its connection",
        per_stream - per_connection
    );
}

/// The tasks alive on the runtime: the host's accept loop, one per open
/// connection, and the test's own.
fn host_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

/// Waits until the connections the test dropped are gone from the host:
/// their tasks have ended (freeing all they held), leaving `idle` alive.
/// A barrier on the host's own state, not a guess at how long that takes.
async fn connections_closed(idle: usize) {
    wait_until("the host let the closed connections go", || {
        host_tasks() == idle
    })
    .await;
}
