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
    settle().await;

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
    settle().await;
    let kept = counting_alloc::live_bytes() - before;
    println!("four refused long-id listens keep {kept} bytes");
    assert!(
        kept < 1 << 20,
        "{kept} bytes kept after four refused 4 MiB ids"
    );
    drop(refused);
    settle().await;

    // What a keep-alive connection costs, then what a stream adds to it.
    let before = counting_alloc::live_bytes();
    let mut plain = Vec::new();
    for _ in 0..STREAMS {
        let mut conn = fx.conn().await;
        assert_eq!(conn.send(&fx.post(PING)).await.status, 200);
        plain.push(conn);
    }
    settle().await;
    let per_connection = (counting_alloc::live_bytes() - before) / STREAMS as isize;
    drop(plain);
    settle().await;

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
    settle().await;
    let before = counting_alloc::live_bytes();
    let mut conns: Vec<Conn> = Vec::new();
    for _ in 0..STREAMS {
        conns.push(fx.conn().await);
    }
    let mut streams = Vec::new();
    for conn in &mut conns {
        let events = conn.send_streaming(&fx.modern_request(&listen(&id))).await;
        assert_eq!(events.status, 200);
        streams.push(events);
    }
    settle().await;
    let per_stream = (counting_alloc::live_bytes() - before) / STREAMS as isize;
    println!("a keep-alive connection: {per_connection} bytes; a stream with the costliest id allowed: {per_stream} bytes");
    assert!(
        per_stream - per_connection < 4096,
        "a stream keeps {} bytes besides its connection",
        per_stream - per_connection
    );
}

/// Lets the host's tasks finish what the last request started.
async fn settle() {
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
}
