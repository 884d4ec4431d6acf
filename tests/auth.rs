//! Bearer authentication and revocation over real HTTP. (Revocation under
//! concurrent load is in `soak.rs`.)

mod support;

use std::sync::Arc;

use serde_json::json;
use support::*;

/// Every way of not presenting a live bearer gets byte-identical 401s with
/// `WWW-Authenticate: Bearer error="invalid_token"`, and none reaches the
/// surface or echoes the presented token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_bad_bearers_get_the_same_401() {
    let fx = Fixture::new().await;
    let revoked = fx.host.open_session(fx.surface.clone()).unwrap();
    let revoked_bearer = bearer_of(&revoked);
    drop(revoked);
    let (addr, good) = (fx.addr, fx.bearer.clone());
    let body = call_body(1, "echo", json!({"text": "x"})).to_string();
    // An unknown bearer: right shape, wrong secret.
    let mut unknown = good.clone().into_bytes();
    let last = unknown.len() - 1;
    unknown[last] = if unknown[last] == b'0' { b'1' } else { b'0' };
    let unknown = String::from_utf8(unknown).unwrap();
    let auth = |v: String| vec![("Authorization".to_owned(), v)];
    let cases: Vec<(&str, Vec<(String, String)>)> = vec![
        ("missing", vec![]),
        ("empty", auth(String::new())),
        ("basic scheme", auth(format!("Basic {good}"))),
        ("no token", auth("Bearer ".to_owned())),
        ("garbage", auth("Bearer not-a-token".to_owned())),
        (
            "upper-case token",
            auth(format!("Bearer {}", good.to_uppercase())),
        ),
        ("two spaces", auth(format!("Bearer  {good}"))),
        ("tab separator", auth(format!("Bearer\t{good}"))),
        ("token with suffix", auth(format!("Bearer {good}x"))),
        ("unknown", auth(format!("Bearer {unknown}"))),
        ("revoked", auth(format!("Bearer {revoked_bearer}"))),
        (
            "duplicate headers",
            vec![
                ("Authorization".to_owned(), format!("Bearer {good}")),
                ("Authorization".to_owned(), format!("Bearer {good}")),
            ],
        ),
    ];
    let mut first: Option<RawResponse> = None;
    for (what, headers) in cases {
        let extra: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let r = send_once(addr, &post_with(addr, &extra, &body)).await;
        assert_eq!(r.status, 401, "{what}");
        assert_eq!(
            r.header("www-authenticate"),
            Some("Bearer error=\"invalid_token\""),
            "{what}"
        );
        let text = r.text();
        assert!(
            !text.contains(&good[4..]) && !text.contains(&revoked_bearer[4..]),
            "{what} leaked"
        );
        match &first {
            None => first = Some(r),
            Some(f) => assert_eq!(
                (&f.body, f.header("content-length")),
                (&r.body, r.header("content-length")),
                "{what}"
            ),
        }
    }
    assert_eq!(fx.surface.calls(), 0);
    // The scheme itself is case-insensitive (RFC 9110), and whitespace around
    // a header value is not part of it (HTTP strips it before we look).
    for value in [format!("bEaReR {good}"), format!("Bearer {good}  ")] {
        let r = send_once(addr, &post_with(addr, &[("Authorization", &value)], &body)).await;
        assert_eq!(r.status, 200, "{value:?}");
    }
}

/// Authentication happens before the body is read: an unauthenticated
/// request with a malformed or oversized body still gets 401, not 400/413.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_before_body() {
    let fx = Fixture::new().await;
    let r = fx.send(&post_with(fx.addr, &[], "{not json")).await;
    assert_eq!(r.status, 401);
    let huge = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: 999999999\r\n\r\n",
        fx.addr
    );
    let r = fx.send(huge.as_bytes()).await;
    assert_eq!(r.status, 401);
}

/// A bearer in the query string is not a credential: only the header counts.
/// The same request (the query included) is served once the live bearer
/// is in the header, and refused with it only in the query, and with a
/// dead bearer in the header and the live one in the query.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bearer_in_query_is_ignored() {
    let fx = Fixture::new().await;
    let dead = {
        let session = fx.host.open_session(RecordingSurface::new()).unwrap();
        bearer_of(&session)
    };
    let line = format!("POST /mcp?access_token={} HTTP/1.1", fx.bearer);
    let host = fx.addr.to_string();
    let send = |authorization: Option<String>| {
        let mut headers = vec![
            ("Host", host.clone()),
            ("Content-Type", "application/json".to_owned()),
        ];
        headers.extend(authorization.map(|value| ("Authorization", value)));
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        request(&line, &headers, Some(PING))
    };
    let served = fx.send(&send(Some(fx.auth()))).await;
    assert_eq!(served.status, 200, "the header's bearer is served");
    let only_query = fx.send(&send(None)).await;
    assert_eq!(only_query.status, 401, "the query's bearer is not");
    let dead_header = fx.send(&send(Some(format!("Bearer {dead}")))).await;
    assert_eq!(dead_header.status, 401, "nor does it rescue a dead header");
}

/// Dropping the guard revokes at once: a call succeeds (200), the guard is
/// dropped, the next call with the same bearer — even on the same
/// keep-alive connection — gets 401, and the surface is not reached again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drop_revokes_immediately() {
    let mut fx = Fixture::new().await;
    let mut conn = fx.conn().await;
    let call = fx.post(&call_body(1, "echo", json!({"text": "before"})).to_string());
    let r = conn.send(&call).await;
    assert_eq!(r.status, 200);
    assert_eq!(fx.surface.calls(), 1);
    assert_eq!(fx.host.live_sessions(), 1);
    fx.revoke();
    assert_eq!(fx.host.live_sessions(), 0);
    let r = conn.send(&call).await;
    assert_eq!(r.status, 401);
    for method in ["tools/list", "ping", "initialize"] {
        let body = json!({"jsonrpc":"2.0","id":2,"method":method,"params":{"protocolVersion":"2025-11-25"}});
        let r = fx.rpc(body).await;
        assert_eq!(r.status, 401, "{method}");
    }
    assert_eq!(
        fx.surface.calls(),
        1,
        "nothing reached the surface after the drop"
    );
}

/// The guard drops its hold on the surface: once the session is dropped the
/// host no longer keeps the user's surface alive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drop_releases_surface() {
    let mut fx = Fixture::new().await;
    assert!(Arc::strong_count(&fx.surface) > 1);
    fx.revoke();
    assert_eq!(Arc::strong_count(&fx.surface), 1);
}

/// Dropping the guard cancels the session's call in flight: the call blocked
/// inside the surface gets no JSON-RPC response (202, not its result, even
/// once the surface would have finished), the host's in-flight
/// count returns to zero, and a call arriving after the drop gets 401.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drop_cancels_in_flight_calls() {
    let mut fx = Fixture::new().await;
    let started = fx.surface.slow_started.notified();
    let slow = fx.spawn_call(1, "slow", json!({}));
    within(started).await;
    assert_eq!(fx.host.calls_in_flight(), 1);
    fx.revoke();
    let r = within(slow).await.unwrap();
    assert_eq!(
        (r.status, r.body.len()),
        (202, 0),
        "no JSON-RPC response for a cancelled call"
    );
    assert_eq!(fx.host.calls_in_flight(), 0);
    fx.surface.slow_release.add_permits(1);
    let r = fx.call(2, "echo", json!({"text": "late"})).await;
    assert_eq!(r.status, 401);
    assert_eq!(fx.surface.seen.lock().unwrap().as_slice(), ["slow"]);
}
