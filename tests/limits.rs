//! Each ToolHostConfig limit, enforced over real sockets.

mod support;

use std::time::Duration;

use embacle_tool_host::{ToolHost, ToolHostConfig};
use serde_json::json;
use support::*;

/// A body over `max_body_bytes` is 413 — declared by Content-Length (refused
/// before it is read) or sent chunked (refused when it overflows) — and the
/// surface is never reached. A body at the limit is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn body_limit() {
    let host = host_with(ToolHostConfig {
        max_body_bytes: 1024,
        ..ToolHostConfig::default()
    })
    .await;
    let surface = RecordingSurface::new();
    let session = host.open_session(surface.clone()).unwrap();
    let addr = host.local_addr();
    let bearer = bearer_of(&session);
    let body_of_len = |len: usize| {
        let skeleton = call_body(1, "echo", json!({"text": ""})).to_string();
        let text = "a".repeat(len - skeleton.len());
        call_body(1, "echo", json!({"text": text})).to_string()
    };
    let at_limit = body_of_len(1024);
    assert_eq!(at_limit.len(), 1024);
    let r = send_once(addr, &post(addr, &bearer, &at_limit)).await;
    assert_eq!(r.status, 200);
    assert_eq!(surface.calls(), 1);

    let over = body_of_len(1025);
    let r = send_once(addr, &post(addr, &bearer, &over)).await;
    assert_eq!((r.status, r.error_code()), (413, -32600));

    // Chunked, with no Content-Length: the limit applies as it streams.
    let mut conn = Conn::open(addr).await;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {bearer}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    );
    conn.write(head.as_bytes()).await;
    for chunk in over.as_bytes().chunks(300) {
        conn.write(format!("{:x}\r\n", chunk.len()).as_bytes())
            .await;
        conn.write(chunk).await;
        conn.write(b"\r\n").await;
    }
    conn.write(b"0\r\n\r\n").await;
    let r = conn.read_response().await;
    assert_eq!(r.status, 413);
    assert_eq!(
        surface.calls(),
        1,
        "oversized bodies never reach the surface"
    );
}

/// `Expect: 100-continue` with an oversized declared body gets 413 and no
/// `100 Continue`: the client never has to send the body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expect_continue_oversized() {
    let host = host_with(ToolHostConfig {
        max_body_bytes: 1024,
        ..ToolHostConfig::default()
    })
    .await;
    let session = host.open_session(RecordingSurface::new()).unwrap();
    let addr = host.local_addr();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: 100000\r\n\r\n",
        bearer_of(&session)
    );
    let r = send_once(addr, request.as_bytes()).await;
    assert_eq!(r.status, 413);
}

/// A client that trickles its headers slower than `header_read_timeout` is
/// disconnected without a request ever being served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn header_read_timeout_closes_slow_clients() {
    let host = host_with(ToolHostConfig {
        header_read_timeout: Duration::from_millis(300),
        ..ToolHostConfig::default()
    })
    .await;
    let addr = host.local_addr();
    let mut conn = Conn::open(addr).await;
    conn.write(b"POST /mcp HTTP/1.1\r\nHo").await;
    let started = std::time::Instant::now();
    let closed = tokio::time::timeout(Duration::from_secs(5), conn.read_response_unbounded()).await;
    // hyper closes the connection without a response.
    let r = closed.expect("the slow client was not disconnected");
    assert!(r.is_none(), "closed without serving anything");
    assert!(started.elapsed() >= Duration::from_millis(250));
}

/// A request head larger than `max_header_bytes` is refused with 431 and
/// nothing is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_headers() {
    let host = host_with(ToolHostConfig {
        max_header_bytes: 8192,
        ..ToolHostConfig::default()
    })
    .await;
    let surface = RecordingSurface::new();
    let session = host.open_session(surface.clone()).unwrap();
    let addr = host.local_addr();
    let padding = "x".repeat(20_000);
    let request = post_with(
        addr,
        &[
            ("Authorization", &format!("Bearer {}", bearer_of(&session))),
            ("X-Padding", &padding),
        ],
        &call_body(1, "echo", json!({"text": "x"})).to_string(),
    );
    let mut conn = Conn::open(addr).await;
    conn.write(&request).await;
    let r = tokio::time::timeout(STEP, conn.read_response_unbounded())
        .await
        .expect("answered");
    assert_eq!(r.expect("a response, not a silent close").status, 431);
    assert_eq!(surface.calls(), 0);
}

/// Connections beyond `max_connections` are closed at once; the connections
/// already open keep being served, and capacity returns when they close.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_limit() {
    let host = host_with(ToolHostConfig {
        max_connections: 2,
        ..ToolHostConfig::default()
    })
    .await;
    let session = host.open_session(RecordingSurface::new()).unwrap();
    let addr = host.local_addr();
    let bearer = bearer_of(&session);
    let ping = post(addr, &bearer, r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    let mut a = Conn::open(addr).await;
    let mut b = Conn::open(addr).await;
    assert_eq!(a.send(&ping).await.status, 200);
    assert_eq!(b.send(&ping).await.status, 200);
    let mut excess = Conn::open(addr).await;
    excess.write(&ping).await;
    assert!(
        tokio::time::timeout(STEP, excess.read_response_unbounded())
            .await
            .expect("closed promptly")
            .is_none(),
        "the excess connection is closed without a response"
    );
    assert_eq!(
        a.send(&ping).await.status,
        200,
        "open connections are still served"
    );
    drop(a);
    // The freed permit comes back once the server sees the close.
    let mut served = false;
    for _ in 0..50 {
        let mut c = Conn::open(addr).await;
        c.write(&ping).await;
        if let Ok(Some(r)) = tokio::time::timeout(STEP, c.read_response_unbounded()).await {
            assert_eq!(r.status, 200);
            served = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(served, "capacity returned after a connection closed");
}

/// The session limit is an error from open_session, not a panic, and frees
/// up as guards drop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_limit() {
    let host = host_with(ToolHostConfig {
        max_sessions: 2,
        ..ToolHostConfig::default()
    })
    .await;
    let a = host.open_session(RecordingSurface::new()).unwrap();
    let _b = host.open_session(RecordingSurface::new()).unwrap();
    let err = host.open_session(RecordingSurface::new()).unwrap_err();
    assert!(err.is_session_limit());
    drop(a);
    let c = host.open_session(RecordingSurface::new()).unwrap();
    let r = rpc(
        host.local_addr(),
        &bearer_of(&c),
        json!({"jsonrpc":"2.0","id":1,"method":"ping"}),
    )
    .await;
    assert_eq!(r.status, 200);
}

/// Config values the host refuses are errors from bind, each naming the
/// field it refuses; zero durations among them (a zero body timeout would
/// refuse every body, a zero call limit every call, a zero keep-alive spin).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_configs() {
    let d = ToolHostConfig::default;
    let bad: Vec<(ToolHostConfig, &str)> = vec![
        (
            ToolHostConfig {
                server_name: String::new(),
                ..d()
            },
            "server_name",
        ),
        (
            ToolHostConfig {
                server_name: "has space".into(),
                ..d()
            },
            "server_name",
        ),
        (
            ToolHostConfig {
                bind_addr: "0.0.0.0".parse().unwrap(),
                ..d()
            },
            "bind_addr",
        ),
        (
            ToolHostConfig {
                bind_addr: "192.168.1.1".parse().unwrap(),
                ..d()
            },
            "bind_addr",
        ),
        (
            ToolHostConfig {
                max_body_bytes: 0,
                ..d()
            },
            "max_body_bytes",
        ),
        (
            ToolHostConfig {
                max_connections: 0,
                ..d()
            },
            "max_connections",
        ),
        (
            ToolHostConfig {
                max_sessions: 0,
                ..d()
            },
            "max_sessions",
        ),
        (
            ToolHostConfig {
                max_header_bytes: 100,
                ..d()
            },
            "max_header_bytes",
        ),
        (
            ToolHostConfig {
                max_batch_len: 0,
                ..d()
            },
            "max_batch_len",
        ),
        (
            ToolHostConfig {
                max_parsed_bytes: 0,
                ..d()
            },
            "max_parsed_bytes",
        ),
        (
            ToolHostConfig {
                header_read_timeout: Duration::ZERO,
                ..d()
            },
            "header_read_timeout",
        ),
        (
            ToolHostConfig {
                body_read_timeout: Duration::ZERO,
                ..d()
            },
            "body_read_timeout",
        ),
        (
            ToolHostConfig {
                call_timeout: Some(Duration::ZERO),
                ..d()
            },
            "call_timeout",
        ),
        (
            ToolHostConfig {
                sse_keep_alive: Duration::ZERO,
                ..d()
            },
            "sse_keep_alive",
        ),
        (
            ToolHostConfig {
                write_stall_timeout: Duration::ZERO,
                ..d()
            },
            "write_stall_timeout",
        ),
    ];
    for (config, field) in bad {
        let err = within(ToolHost::bind(config.clone())).await.unwrap_err();
        assert!(err.is_invalid_config(), "{config:?}");
        assert!(
            err.to_string().contains(field),
            "{err} does not name {field}"
        );
    }
    // `None` disables the call limit; it is not a zero.
    let host = within(ToolHost::bind(ToolHostConfig {
        call_timeout: None,
        ..d()
    }))
    .await;
    assert!(host.is_ok());
}

/// A batch longer than `max_batch_len` is refused whole — one 400 `-32600`
/// naming the limit — and none of it runs; a batch at the limit is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_length_limit() {
    let host = host_with(ToolHostConfig {
        max_batch_len: 4,
        ..ToolHostConfig::default()
    })
    .await;
    let surface = RecordingSurface::new();
    let session = host.open_session(surface.clone()).unwrap();
    let addr = host.local_addr();
    let bearer = bearer_of(&session);
    let batch = |n: i64| {
        let calls: Vec<_> = (0..n)
            .map(|i| call_body(i, "echo", json!({"text": "b"})))
            .collect();
        serde_json::Value::from(calls)
    };
    let r = rpc(addr, &bearer, batch(4)).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json().as_array().unwrap().len(), 4);
    assert_eq!(surface.calls(), 4);
    for n in [5, 1000] {
        let r = rpc(addr, &bearer, batch(n)).await;
        assert_eq!((r.status, r.error_code()), (400, -32600), "{n}");
        assert_eq!(r.json()["error"]["data"]["maxBatchLength"], 4);
        assert!(r.json().is_object(), "one error object, not an array");
    }
    assert_eq!(
        surface.calls(),
        4,
        "none of the 5- and 1,000-call batches ran"
    );
    // 2 million one-byte entries: refused by its length before it is
    // parsed (the parse budget, raised here, would refuse it too).
    let tiny = format!("[{}1]", "1,".repeat(2_000_000));
    let host = host_with(ToolHostConfig {
        max_body_bytes: 8 << 20,
        max_parsed_bytes: 1 << 30,
        ..ToolHostConfig::default()
    })
    .await;
    let session = host.open_session(RecordingSurface::new()).unwrap();
    let r = send_once(
        host.local_addr(),
        &post(host.local_addr(), &bearer_of(&session), &tiny),
    )
    .await;
    assert_eq!((r.status, r.error_code()), (400, -32600));
    assert!(r.body.len() < 512, "a short answer: {} bytes", r.body.len());
}

/// A body whose JSON would take more than `max_parsed_bytes` to hold is 413
/// before it is parsed, though it fits `max_body_bytes`; the same bytes as
/// one string are served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parsed_size_limit() {
    let host = host_with(ToolHostConfig {
        max_parsed_bytes: 1 << 20,
        ..ToolHostConfig::default()
    })
    .await;
    let surface = RecordingSurface::new();
    let session = host.open_session(surface.clone()).unwrap();
    let addr = host.local_addr();
    let bearer = bearer_of(&session);
    // 64 KiB of small objects: about 5 MB once parsed.
    let objects = vec![json!({"a": []}); 64 * 1024 / 9];
    let r = rpc(
        addr,
        &bearer,
        call_body(1, "echo", json!({"text": "x", "pad": objects})),
    )
    .await;
    assert_eq!((r.status, r.error_code()), (413, -32600));
    assert!(String::from_utf8_lossy(&r.body).contains("memory"));
    assert_eq!(surface.calls(), 0);
    let text = "a".repeat(512 * 1024);
    let r = rpc(addr, &bearer, call_body(2, "echo", json!({"text": text}))).await;
    assert_eq!(r.status, 200);
    assert_eq!(surface.calls(), 1);
}

/// `max_header_bytes` is exact however the head arrives: a head of exactly
/// the limit is served, one byte more is 431 — sent in one write, and
/// sent in many small writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn header_limit_is_exact() {
    let limit = 16 * 1024;
    let host = host_with(ToolHostConfig {
        max_header_bytes: limit,
        ..ToolHostConfig::default()
    })
    .await;
    let session = host.open_session(RecordingSurface::new()).unwrap();
    let addr = host.local_addr();
    let auth = format!("Bearer {}", bearer_of(&session));
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let request_with_head = |head_len: usize| {
        let bare = post_with(addr, &[("Authorization", &auth), ("X-Pad", "")], body);
        let bare_head = bare.len() - body.len();
        let pad = "p".repeat(head_len - bare_head);
        let request = post_with(addr, &[("Authorization", &auth), ("X-Pad", &pad)], body);
        assert_eq!(request.len() - body.len(), head_len);
        request
    };
    for (head_len, status) in [(limit, 200), (limit + 1, 431)] {
        let request = request_with_head(head_len);
        let r = send_once(addr, &request).await;
        assert_eq!(r.status, status, "{head_len} bytes in one write");
        let mut conn = Conn::open(addr).await;
        for chunk in request.chunks(997) {
            if conn.try_write(chunk).await.is_err() {
                break;
            }
        }
        let r = within(conn.read_response_unbounded())
            .await
            .expect("answered");
        assert_eq!(r.status, status, "{head_len} bytes in many writes");
    }
}

/// Binding a taken port is a bind error carrying the I/O cause.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn port_in_use() {
    let first = host().await;
    let err = within(ToolHost::bind(ToolHostConfig {
        port: first.local_addr().port(),
        ..ToolHostConfig::default()
    }))
    .await
    .unwrap_err();
    assert!(err.is_bind());
    assert!(std::error::Error::source(&err).is_some());
}

/// Binding outside a Tokio runtime is an error, not a panic.
#[test]
fn bind_outside_runtime() {
    let err = block_on_without_runtime(ToolHost::bind(ToolHostConfig::default())).unwrap_err();
    assert!(err.is_no_runtime());
}

/// A minimal executor, so the bind future runs with no Tokio runtime around.
fn block_on_without_runtime<F: std::future::Future>(future: F) -> F::Output {
    use std::task::{Context, Poll, Wake, Waker};
    struct Noop;
    impl Wake for Noop {
        fn wake(self: std::sync::Arc<Self>) {}
    }
    let waker = Waker::from(std::sync::Arc::new(Noop));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
    }
}
