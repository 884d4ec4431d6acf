//! Each ToolHostConfig size limit, enforced over real sockets: body, head,
//! sessions, batch length, parsed size. (Connections are in
//! `src/conn/admission.rs`, timeouts in `timeouts.rs`, refused configs in
//! `config.rs`.)

mod support;

use embacle_tool_host::{ErrorKind, ToolHostConfig};
use serde_json::json;
use support::*;

/// A body over `max_body_bytes` is 413 — declared by Content-Length (refused
/// before it is read) or sent chunked (refused when it overflows) — and the
/// surface is never reached. A body at the limit is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn body_limit() {
    let fx = Fixture::with(ToolHostConfig {
        max_body_bytes: 1024,
        ..ToolHostConfig::default()
    })
    .await;
    let at_limit = echo_body_of_len(1024, 'a');
    assert_eq!(at_limit.len(), 1024);
    let r = fx.rpc_text(&at_limit).await;
    assert_eq!(r.status, 200);
    assert_eq!(fx.surface.calls(), 1);

    let over = echo_body_of_len(1025, 'a');
    let r = fx.rpc_text(&over).await;
    assert_eq!((r.status, r.error_code()), (413, -32600));

    // Chunked, with no Content-Length: the limit applies as it streams. The
    // request goes in one write: the host answers 413 and closes as soon as
    // the limit is crossed, and a client still writing then would be reset.
    let mut conn = fx.conn().await;
    conn.write(&chunked_post(&fx, &over, 300, "")).await;
    let r = conn.read_response().await;
    assert_eq!(r.status, 413);
    assert_eq!(
        fx.surface.calls(),
        1,
        "oversized bodies never reach the surface"
    );
}

/// A chunked body in many chunks, with trailers, is served whole: exactly at
/// the limit it is one call, one byte over it is 413 with the surface
/// untouched, however the bytes are split.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunked_bodies_are_gathered_up_to_the_limit() {
    let fx = Fixture::with(ToolHostConfig {
        max_body_bytes: 1024,
        ..ToolHostConfig::default()
    })
    .await;
    let chunked = |body: &str, size: usize| chunked_post(&fx, body, size, "X-Trailer: ignored\r\n");
    // Two-byte characters, so small chunks split them.
    let at_limit = echo_body_of_len(1024, 'é');
    assert_eq!(at_limit.len(), 1024);
    for (size, served) in [(1, 1), (7, 2), (500, 3), (1024, 4)] {
        let mut conn = fx.conn().await;
        let r = conn.send(&chunked(&at_limit, size)).await;
        assert_eq!(r.status, 200, "chunks of {size}");
        assert_eq!(r.first_text(), json!(at_limit_text(&at_limit)));
        assert_eq!(fx.surface.calls(), served);
    }
    let over = echo_body_of_len(1025, 'é');
    let mut conn = fx.conn().await;
    let r = conn.send(&chunked(&over, 100)).await;
    assert_eq!((r.status, r.error_code()), (413, -32600));
    assert_eq!(fx.surface.calls(), 4);
}

/// An `echo` call's body of exactly `len` bytes, its text `fill` repeated
/// (and `a` where a `fill` would not fit).
fn echo_body_of_len(len: usize, fill: char) -> String {
    let skeleton = call_body(1, "echo", json!({"text": ""})).to_string();
    let room = len - skeleton.len();
    let mut text = fill.to_string().repeat(room / fill.len_utf8());
    text += &"a".repeat(room % fill.len_utf8());
    call_body(1, "echo", json!({"text": text})).to_string()
}

/// A chunked POST of `body` in chunks of `size` bytes, ending with
/// `trailers` (each line ending in CRLF): the whole request, to be sent in
/// one write.
fn chunked_post(fx: &Fixture, body: &str, size: usize, trailers: &str) -> Vec<u8> {
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
        fx.addr,
        fx.auth()
    )
    .into_bytes();
    for chunk in body.as_bytes().chunks(size) {
        request.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        request.extend_from_slice(chunk);
        request.extend_from_slice(b"\r\n");
    }
    request.extend_from_slice(format!("0\r\n{trailers}\r\n").as_bytes());
    request
}

/// The `text` argument of a body built by `call_body`.
fn at_limit_text(body: &str) -> String {
    let value: serde_json::Value = serde_json::from_str(body).unwrap();
    value["params"]["arguments"]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// `Expect: 100-continue` with an oversized declared body gets 413 and no
/// `100 Continue`: the client never has to send the body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expect_continue_oversized() {
    let fx = Fixture::with(ToolHostConfig {
        max_body_bytes: 1024,
        ..ToolHostConfig::default()
    })
    .await;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: 100000\r\n\r\n",
        fx.addr,
        fx.auth()
    );
    let r = fx.send(request.as_bytes()).await;
    assert_eq!(r.status, 413);
}

/// A request head larger than `max_header_bytes` is refused with 431 and
/// nothing is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_headers() {
    let fx = Fixture::with(ToolHostConfig {
        max_header_bytes: 8192,
        ..ToolHostConfig::default()
    })
    .await;
    let padding = "x".repeat(20_000);
    let request = fx.post_with(
        &[("X-Padding", &padding)],
        &call_body(1, "echo", json!({"text": "x"})).to_string(),
    );
    let mut conn = fx.conn().await;
    conn.write(&request).await;
    let r = tokio::time::timeout(STEP, conn.read_response_unbounded())
        .await
        .expect("answered");
    assert_eq!(r.expect("a response, not a silent close").status, 431);
    assert_eq!(fx.surface.calls(), 0);
}

/// `max_header_bytes` is exact however the head arrives: a head of exactly
/// the limit is served, one byte more is 431 — sent in one write, and
/// sent in many small writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn header_limit_is_exact() {
    let limit = 16 * 1024;
    let fx = Fixture::with(ToolHostConfig {
        max_header_bytes: limit,
        ..ToolHostConfig::default()
    })
    .await;
    let request_with_head = |head_len: usize| {
        let bare = fx.post_with(&[("X-Pad", "")], PING);
        let bare_head = bare.len() - PING.len();
        let pad = "p".repeat(head_len - bare_head);
        let request = fx.post_with(&[("X-Pad", &pad)], PING);
        assert_eq!(request.len() - PING.len(), head_len);
        request
    };
    for (head_len, status) in [(limit, 200), (limit + 1, 431)] {
        let request = request_with_head(head_len);
        let r = fx.send(&request).await;
        assert_eq!(r.status, status, "{head_len} bytes in one write");
        let mut conn = fx.conn().await;
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

/// The session limit is an error from open_session, not a panic, and frees
/// up as guards drop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_limit() {
    let mut fx = Fixture::with(ToolHostConfig {
        max_sessions: 2,
        ..ToolHostConfig::default()
    })
    .await;
    let _b = fx.host.open_session(RecordingSurface::new()).unwrap();
    let err = fx.host.open_session(RecordingSurface::new()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::SessionLimit);
    fx.revoke();
    let c = fx.host.open_session(RecordingSurface::new()).unwrap();
    let r = rpc(
        fx.addr,
        &bearer_of(&c),
        json!({"jsonrpc":"2.0","id":1,"method":"ping"}),
    )
    .await;
    assert_eq!(r.status, 200);
}

/// A batch longer than `max_batch_len` is refused whole — one 400 `-32600`
/// naming the limit — and none of it runs; a batch at the limit is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_length_limit() {
    let fx = Fixture::with(ToolHostConfig {
        max_batch_len: 4,
        ..ToolHostConfig::default()
    })
    .await;
    let batch = |n: i64| {
        let calls: Vec<_> = (0..n)
            .map(|i| call_body(i, "echo", json!({"text": "b"})))
            .collect();
        serde_json::Value::from(calls)
    };
    let r = fx.rpc(batch(4)).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json().as_array().unwrap().len(), 4);
    assert_eq!(fx.surface.calls(), 4);
    for n in [5, 1000] {
        let r = fx.rpc(batch(n)).await;
        assert_eq!((r.status, r.error_code()), (400, -32600), "{n}");
        assert_eq!(r.json()["error"]["data"]["maxBatchLength"], 4);
        assert!(r.json().is_object(), "one error object, not an array");
    }
    assert_eq!(
        fx.surface.calls(),
        4,
        "none of the 5- and 1,000-call batches ran"
    );
    // 2 million one-byte entries: refused by its length before it is
    // parsed (the parse budget, raised here, would refuse it too).
    let tiny = format!("[{}1]", "1,".repeat(2_000_000));
    let big = Fixture::with(ToolHostConfig {
        max_body_bytes: 8 << 20,
        max_parsed_bytes: 1 << 30,
        ..ToolHostConfig::default()
    })
    .await;
    let r = big.rpc_text(&tiny).await;
    assert_eq!((r.status, r.error_code()), (400, -32600));
    assert!(r.body.len() < 512, "a short answer: {} bytes", r.body.len());
}

/// A body whose JSON would take more than `max_parsed_bytes` to hold is 413
/// before it is parsed, though it fits `max_body_bytes`; the same bytes as
/// one string are served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parsed_size_limit() {
    let fx = Fixture::with(ToolHostConfig {
        max_parsed_bytes: 1 << 20,
        ..ToolHostConfig::default()
    })
    .await;
    // 64 KiB of small objects: about 5 MB once parsed.
    let objects = vec![json!({"a": []}); 64 * 1024 / 9];
    let r = fx
        .call(1, "echo", json!({"text": "x", "pad": objects}))
        .await;
    assert_eq!((r.status, r.error_code()), (413, -32600));
    assert!(r.text().contains("memory"));
    assert_eq!(fx.surface.calls(), 0);
    let text = "a".repeat(512 * 1024);
    let r = fx.call(2, "echo", json!({"text": text})).await;
    assert_eq!(r.status, 200);
    assert_eq!(fx.surface.calls(), 1);
}

/// A batch too long and too big at once: the size is checked first. A
/// 33-call batch that fits `max_body_bytes` is 400 for its length, however
/// much text it carries; one a byte over is 413, as any body that size is,
/// whatever it holds (the size is known before the body is read).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_batch_is_refused_by_size_first_then_by_length() {
    // A small limit, so the over-limit body fits the socket's buffers and
    // the answer can be read whole.
    let max_body = 64 * 1024;
    let fx = Fixture::with(ToolHostConfig {
        max_body_bytes: max_body,
        ..ToolHostConfig::default()
    })
    .await;
    let batch_of = |total: usize| {
        let skeleton = |text: &str| {
            let calls: Vec<_> = (0..33)
                .map(|i| call_body(i, "echo", json!({"text": text})))
                .collect();
            serde_json::Value::from(calls).to_string()
        };
        let per_call = (total - skeleton("").len()) / 33;
        let mut body = skeleton(&"t".repeat(per_call));
        // Pad the last text to hit `total` exactly.
        let short = total - body.len();
        let last = body.rfind('t').unwrap();
        body.insert_str(last, &"t".repeat(short));
        assert_eq!(body.len(), total);
        body
    };
    let r = fx.rpc_text(&batch_of(max_body)).await;
    assert_eq!(
        (r.status, r.error_code()),
        (400, -32600),
        "fits: refused for its length"
    );
    assert_eq!(r.json()["error"]["data"]["maxBatchLength"], 32);
    let r = fx.rpc_text(&batch_of(max_body + 1)).await;
    assert_eq!(r.status, 413, "a byte over: refused for its size");
    assert_eq!(fx.surface.calls(), 0);
}
