//! Odd and hostile traffic on one connection, each with its defined
//! outcome: HTTP/1.0, pipelining, header bytes that are not UTF-8.
//! (Timeouts are in `timeouts.rs`, floods in `admission.rs`, a disconnect
//! mid-call in `long_calls.rs`.)

mod support;

use serde_json::json;
use support::*;

/// HTTP/1.0: served (with a Host header), then the connection closes, as
/// 1.0 has no keep-alive by default; without Host it is 403 like any other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_1_0() {
    let fx = Fixture::new().await;
    let (host, auth) = (fx.addr.to_string(), fx.auth());
    let http_1_0 = |with_host: bool| {
        let mut headers = vec![];
        headers.extend(with_host.then_some(("Host", host.as_str())));
        headers.extend([
            ("Authorization", auth.as_str()),
            ("Content-Type", "application/json"),
        ]);
        request("POST /mcp HTTP/1.0", &headers, Some(PING))
    };
    let mut conn = fx.conn().await;
    let r = conn.send(&http_1_0(true)).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["result"], json!({}));
    assert!(
        within(conn.closed_by_server()).await,
        "HTTP/1.0 closes after the response"
    );
    assert_eq!(fx.send(&http_1_0(false)).await.status, 403);
}

/// Pipelined requests (several in one write) are answered in order; one
/// that fails authentication is answered 401 and closes the connection
/// (`Connection: close`), so what was pipelined behind it is not served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_requests_answer_in_order() {
    let fx = Fixture::new().await;
    let mut burst = Vec::new();
    for i in 0..5 {
        burst.extend(fx.post(&call_body(i, "echo", json!({"text": format!("p{i}")})).to_string()));
    }
    // One that fails auth ends the exchange.
    burst.extend(post(
        fx.addr,
        "wrong",
        r#"{"jsonrpc":"2.0","id":99,"method":"ping"}"#,
    ));
    burst.extend(fx.post(r#"{"jsonrpc":"2.0","id":100,"method":"ping"}"#));
    let mut conn = fx.conn().await;
    conn.write(&burst).await;
    for i in 0..5 {
        let r = conn.read_response().await;
        assert_eq!(r.json()["id"], i);
        assert_eq!(r.first_text(), format!("p{i}"));
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
    let fx = Fixture::new().await;
    let body = PING.as_bytes();
    let build = |host_value: &[u8], extra: &[u8]| {
        let mut r = b"POST /mcp HTTP/1.1\r\nHost: ".to_vec();
        r.extend_from_slice(host_value);
        r.extend_from_slice(b"\r\nContent-Type: application/json\r\n");
        r.extend_from_slice(extra);
        r.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
        r.extend_from_slice(body);
        r
    };
    let auth = format!("Authorization: {}\r\n", fx.auth()).into_bytes();
    let good_host = fx.addr.to_string().into_bytes();
    let mut bad_host = good_host.clone();
    bad_host.push(0xff);
    assert_eq!(fx.send(&build(&good_host, &auth)).await.status, 200);
    assert_eq!(fx.send(&build(&bad_host, &auth)).await.status, 403);
    let origin = [b"Origin: http://\xff\xfe\r\n".as_slice(), &auth].concat();
    assert_eq!(fx.send(&build(&good_host, &origin)).await.status, 403);
    let mut bad_auth = format!("Authorization: {}", fx.auth()).into_bytes();
    let at = bad_auth.len() - 3;
    bad_auth[at] = 0xc3;
    bad_auth.extend_from_slice(b"\r\n");
    assert_eq!(fx.send(&build(&good_host, &bad_auth)).await.status, 401);
    assert_eq!(fx.surface.calls(), 0);
}
