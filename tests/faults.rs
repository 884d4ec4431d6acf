//! Network faults and hostile headers, each with its defined outcome.

mod support;

use std::sync::atomic::Ordering;
use std::time::Duration;

use embacle_tool_host::ToolHostConfig;
use serde_json::json;
use support::*;

/// A body that never finishes gets 408 after `body_read_timeout`, and the
/// connection is closed; the surface is never reached.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfinished_body_times_out() {
    let host = host_with(ToolHostConfig {
        body_read_timeout: Duration::from_millis(300),
        ..ToolHostConfig::default()
    })
    .await;
    let surface = RecordingSurface::new();
    let session = host.open_session(surface.clone()).unwrap();
    let addr = host.local_addr();
    let mut conn = Conn::open(addr).await;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{{\"jsonrpc\":",
        bearer_of(&session)
    );
    conn.write(head.as_bytes()).await;
    let r = conn.read_response().await;
    assert_eq!((r.status, r.error_code()), (408, -32600));
    assert!(within(conn.closed_by_server()).await);
    assert_eq!(surface.calls(), 0);
}

/// A client that disconnects mid-call (legacy era) has its tool's future
/// dropped: nobody is left to answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disconnect_mid_call_drops_the_tool() {
    let host = host().await;
    let surface = RecordingSurface::new();
    let session = host.open_session(surface.clone()).unwrap();
    let addr = host.local_addr();
    let mut conn = Conn::open(addr).await;
    conn.write(&post(
        addr,
        &bearer_of(&session),
        &call_body(1, "hang", json!({})).to_string(),
    ))
    .await;
    wait_until("the call starts", || surface.calls() > 0).await;
    drop(conn);
    wait_until("the tool future is dropped with its connection", || {
        surface.hang_dropped.load(Ordering::SeqCst)
    })
    .await;
    assert_eq!(host.calls_in_flight(), 0);
}

/// HTTP/1.0: served (with a Host header), then the connection closes, as
/// 1.0 has no keep-alive by default; without Host it is 403 like any other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_1_0() {
    let host = host().await;
    let session = host.open_session(RecordingSurface::new()).unwrap();
    let addr = host.local_addr();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let bearer = bearer_of(&session);
    let request = format!(
        "POST /mcp HTTP/1.0\r\nHost: {addr}\r\nAuthorization: Bearer {bearer}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut conn = Conn::open(addr).await;
    let r = conn.send(request.as_bytes()).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["result"], json!({}));
    assert!(
        within(conn.closed_by_server()).await,
        "HTTP/1.0 closes after the response"
    );
    let no_host = format!(
        "POST /mcp HTTP/1.0\r\nAuthorization: Bearer {bearer}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    assert_eq!(send_once(addr, no_host.as_bytes()).await.status, 403);
}

/// Pipelined requests (several in one write) are answered in order; one
/// that fails authentication is answered 401 and closes the connection
/// (`Connection: close`), so what was pipelined behind it is not served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_requests_answer_in_order() {
    let host = host().await;
    let session = host.open_session(RecordingSurface::new()).unwrap();
    let addr = host.local_addr();
    let bearer = bearer_of(&session);
    let mut burst = Vec::new();
    for i in 0..5 {
        burst.extend(post(
            addr,
            &bearer,
            &call_body(i, "echo", json!({"text": format!("p{i}")})).to_string(),
        ));
    }
    // One that fails auth ends the exchange.
    burst.extend(post(
        addr,
        "wrong",
        r#"{"jsonrpc":"2.0","id":99,"method":"ping"}"#,
    ));
    burst.extend(post(
        addr,
        &bearer,
        r#"{"jsonrpc":"2.0","id":100,"method":"ping"}"#,
    ));
    let mut conn = Conn::open(addr).await;
    conn.write(&burst).await;
    for i in 0..5 {
        let r = conn.read_response().await;
        assert_eq!(r.json()["id"], i);
        assert_eq!(r.json()["result"]["content"][0]["text"], format!("p{i}"));
    }
    let refused = conn.read_response().await;
    assert_eq!(refused.status, 401);
    assert_eq!(refused.header("connection"), Some("close"));
    assert!(
        within(conn.closed_by_server()).await,
        "the connection closes after the 401"
    );
}

/// Header bytes that are not UTF-8 (obs-text) are refused where they
/// matter: Host and Origin → 403, Authorization → 401.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_utf8_header_bytes() {
    let host = host().await;
    let surface = RecordingSurface::new();
    let session = host.open_session(surface.clone()).unwrap();
    let addr = host.local_addr();
    let bearer = bearer_of(&session);
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let build = |host_value: &[u8], extra: &[u8]| {
        let mut r = b"POST /mcp HTTP/1.1\r\nHost: ".to_vec();
        r.extend_from_slice(host_value);
        r.extend_from_slice(b"\r\nContent-Type: application/json\r\n");
        r.extend_from_slice(extra);
        r.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
        r.extend_from_slice(body);
        r
    };
    let auth = format!("Authorization: Bearer {bearer}\r\n").into_bytes();
    let good_host = addr.to_string().into_bytes();
    let mut bad_host = good_host.clone();
    bad_host.push(0xff);
    assert_eq!(send_once(addr, &build(&good_host, &auth)).await.status, 200);
    assert_eq!(send_once(addr, &build(&bad_host, &auth)).await.status, 403);
    let origin = [b"Origin: http://\xff\xfe\r\n".as_slice(), &auth].concat();
    assert_eq!(
        send_once(addr, &build(&good_host, &origin)).await.status,
        403
    );
    let mut bad_auth = format!("Authorization: Bearer {bearer}").into_bytes();
    let at = bad_auth.len() - 3;
    bad_auth[at] = 0xc3;
    bad_auth.extend_from_slice(b"\r\n");
    assert_eq!(
        send_once(addr, &build(&good_host, &bad_auth)).await.status,
        401
    );
    assert_eq!(surface.calls(), 0);
}

/// Other spellings of the loopback address in Host are refused: only the
/// canonical `127.0.0.1`, `localhost` and `[::1]` (with the bound port) pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_spellings() {
    let host = host().await;
    let session = host.open_session(RecordingSurface::new()).unwrap();
    let addr = host.local_addr();
    let port = addr.port();
    let bearer = bearer_of(&session);
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    for (host_value, status) in [
        (format!("[::1]:{port}"), 200),
        (format!("[0:0:0:0:0:0:0:1]:{port}"), 403),
        ("[::1]".to_owned(), 403),
        (format!("::1:{port}"), 403),
        (format!("2130706433:{port}"), 403),
        (format!("0x7f.0.0.1:{port}"), 403),
        (format!("127.1:{port}"), 403),
        (format!("localhost:0{port}"), 403),
        (format!("localhost:{port} "), 200), // trailing whitespace is not part of a header value
        (format!("user@localhost:{port}"), 403),
    ] {
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {host_value}\r\nAuthorization: Bearer {bearer}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        assert_eq!(
            send_once(addr, request.as_bytes()).await.status,
            status,
            "{host_value:?}"
        );
    }
}

/// A bearer in the query string is not a credential: only the header counts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bearer_in_query_is_ignored() {
    let host = host().await;
    let session = host.open_session(RecordingSurface::new()).unwrap();
    let addr = host.local_addr();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let request = format!(
        "POST /mcp?access_token={} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        bearer_of(&session),
        body.len()
    );
    assert_eq!(send_once(addr, request.as_bytes()).await.status, 401);
}

/// A flood of idle connections past the limit is refused at accept, while
/// an existing keep-alive connection of a live session keeps being served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_flood_keeps_live_sessions_served() {
    let host = host_with(ToolHostConfig {
        max_connections: 8,
        ..ToolHostConfig::default()
    })
    .await;
    let session = host.open_session(RecordingSurface::new()).unwrap();
    let addr = host.local_addr();
    let bearer = bearer_of(&session);
    let mut live = Conn::open(addr).await;
    let ping = post(addr, &bearer, r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    assert_eq!(live.send(&ping).await.status, 200);
    let mut flood = Vec::new();
    for _ in 0..64 {
        flood.push(Conn::open(addr).await);
    }
    for _ in 0..5 {
        assert_eq!(live.send(&ping).await.status, 200);
    }
    // Most of the flood was closed at once (at most the 7 free slots hold).
    let mut closed = 0;
    for conn in &mut flood {
        if tokio::time::timeout(Duration::from_millis(200), conn.closed_by_server())
            .await
            .unwrap_or(false)
        {
            closed += 1;
        }
    }
    assert!(
        closed >= 64 - 7,
        "only {closed} of 64 excess connections were refused"
    );
}

/// Slowloris: headers trickled one byte at a time, each byte well inside
/// any per-read timeout, are still cut off once `header_read_timeout` has
/// passed in total, without a request being served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slowloris_is_cut_off_at_the_header_timeout() {
    let host = host_with(ToolHostConfig {
        header_read_timeout: Duration::from_millis(400),
        ..ToolHostConfig::default()
    })
    .await;
    let surface = RecordingSurface::new();
    let session = host.open_session(surface.clone()).unwrap();
    let addr = host.local_addr();
    let request = post(
        addr,
        &bearer_of(&session),
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
    );
    let mut conn = Conn::open(addr).await;
    let started = std::time::Instant::now();
    let mut sent = 0;
    for byte in &request {
        if conn.try_write(std::slice::from_ref(byte)).await.is_err() {
            break;
        }
        sent += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
        if started.elapsed() > Duration::from_secs(3) {
            break;
        }
    }
    assert!(
        sent < request.len(),
        "the whole trickled request was accepted"
    );
    let closed_after = started.elapsed();
    assert!(
        closed_after >= Duration::from_millis(350),
        "closed too early: {closed_after:?}"
    );
    assert!(
        closed_after < Duration::from_secs(3),
        "not closed at the header timeout"
    );
    assert!(tokio::time::timeout(STEP, conn.read_response_unbounded())
        .await
        .unwrap()
        .is_none());
    assert_eq!(surface.calls(), 0);
}
