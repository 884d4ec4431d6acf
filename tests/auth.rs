//! Bearer authentication and revocation over real HTTP.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::json;
use support::*;

/// Every way of not presenting a live bearer gets byte-identical 401s with
/// `WWW-Authenticate: Bearer error="invalid_token"`, and none reaches the
/// surface or echoes the presented token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_bad_bearers_get_the_same_401() {
    let host = host().await;
    let surface = RecordingSurface::new();
    let live = host.open_session(surface.clone()).unwrap();
    let revoked = host.open_session(surface.clone()).unwrap();
    let revoked_bearer = bearer_of(&revoked);
    drop(revoked);
    let addr = host.local_addr();
    let good = bearer_of(&live);
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
        let text = String::from_utf8_lossy(&r.body).into_owned();
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
    assert_eq!(surface.calls(), 0);
    // The scheme itself is case-insensitive (RFC 9110), and whitespace around
    // a header value is not part of it (HTTP strips it before we look).
    let r = send_once(
        addr,
        &post_with(addr, &[("Authorization", &format!("bEaReR {good}"))], &body),
    )
    .await;
    assert_eq!(r.status, 200);
    let r = send_once(
        addr,
        &post_with(
            addr,
            &[("Authorization", &format!("Bearer {good}  "))],
            &body,
        ),
    )
    .await;
    assert_eq!(r.status, 200);
}

/// Authentication happens before the body is read: an unauthenticated
/// request with a malformed or oversized body still gets 401, not 400/413.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_before_body() {
    let host = host().await;
    let addr = host.local_addr();
    let r = send_once(addr, &post_with(addr, &[], "{not json")).await;
    assert_eq!(r.status, 401);
    let huge = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: 999999999\r\n\r\n"
    );
    let r = send_once(addr, huge.as_bytes()).await;
    assert_eq!(r.status, 401);
}

/// Dropping the guard revokes at once: a call succeeds (200), the guard is
/// dropped, the next call with the same bearer — even on the same
/// keep-alive connection — gets 401, and the surface is not reached again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drop_revokes_immediately() {
    let host = host().await;
    let surface = RecordingSurface::new();
    let session = host.open_session(surface.clone()).unwrap();
    let addr = host.local_addr();
    let bearer = bearer_of(&session);
    let mut conn = Conn::open(addr).await;
    let call = post(
        addr,
        &bearer,
        &call_body(1, "echo", json!({"text": "before"})).to_string(),
    );
    let r = conn.send(&call).await;
    assert_eq!(r.status, 200);
    assert_eq!(surface.calls(), 1);
    assert_eq!(host.open_sessions(), 1);
    drop(session);
    assert_eq!(host.open_sessions(), 0);
    let r = conn.send(&call).await;
    assert_eq!(r.status, 401);
    for method in ["tools/list", "ping", "initialize"] {
        let body = json!({"jsonrpc":"2.0","id":2,"method":method,"params":{"protocolVersion":"2025-11-25"}});
        let r = rpc(addr, &bearer, body).await;
        assert_eq!(r.status, 401, "{method}");
    }
    assert_eq!(
        surface.calls(),
        1,
        "nothing reached the surface after the drop"
    );
}

/// The guard drops its hold on the surface: once the session is dropped the
/// host no longer keeps the user's surface alive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drop_releases_surface() {
    let host = host().await;
    let surface = RecordingSurface::new();
    let session = host.open_session(surface.clone()).unwrap();
    assert!(Arc::strong_count(&surface) > 1);
    drop(session);
    assert_eq!(Arc::strong_count(&surface), 1);
}

/// Dropping the guard cancels the session's call in flight: the call blocked
/// inside the surface gets no JSON-RPC response (202, not its result, even
/// once the surface would have finished), the host's in-flight
/// count returns to zero, and a call arriving after the drop gets 401.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drop_cancels_in_flight_calls() {
    let host = host().await;
    let surface = RecordingSurface::new();
    let session = host.open_session(surface.clone()).unwrap();
    let addr = host.local_addr();
    let bearer = bearer_of(&session);
    let started = surface.slow_started.notified();
    let slow = {
        let bearer = bearer.clone();
        tokio::spawn(async move { rpc(addr, &bearer, call_body(1, "slow", json!({}))).await })
    };
    within(started).await;
    assert_eq!(host.calls_in_flight(), 1);
    drop(session);
    let r = within(slow).await.unwrap();
    assert_eq!(
        (r.status, r.body.len()),
        (202, 0),
        "no JSON-RPC response for a cancelled call"
    );
    assert_eq!(host.calls_in_flight(), 0);
    surface.slow_release.add_permits(1);
    let r = rpc(addr, &bearer, call_body(2, "echo", json!({"text": "late"}))).await;
    assert_eq!(r.status, 401);
    assert_eq!(surface.seen.lock().unwrap().as_slice(), ["slow"]);
}

/// Many connections hammer one bearer while the guard is dropped. Every
/// call that reached the surface started before `drop` returned (the
/// surface checks a flag raised right after the drop), and after the flag
/// every request is a 401.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revocation_under_concurrent_calls() {
    struct Marked {
        inner: Arc<RecordingSurface>,
        dropped: Arc<AtomicBool>,
        late: Arc<AtomicBool>,
    }
    impl embacle_tool_host::ToolSurface for Marked {
        async fn list_tools(&self) -> Arc<[embacle_tool_host::Tool]> {
            self.inner.list_tools().await
        }
        async fn call(
            &self,
            name: &str,
            args: &serde_json::Value,
        ) -> embacle_tool_host::ToolOutcome {
            if self.dropped.load(Ordering::Acquire) {
                self.late.store(true, Ordering::SeqCst);
            }
            self.inner.call(name, args).await
        }
    }
    let host = host().await;
    let dropped = Arc::new(AtomicBool::new(false));
    let late = Arc::new(AtomicBool::new(false));
    let inner = RecordingSurface::new();
    let session = host
        .open_session(Arc::new(Marked {
            inner: inner.clone(),
            dropped: dropped.clone(),
            late: late.clone(),
        }))
        .unwrap();
    let addr = host.local_addr();
    let bearer = bearer_of(&session);
    let mut workers = Vec::new();
    for w in 0..8 {
        let (bearer, dropped) = (bearer.clone(), dropped.clone());
        workers.push(tokio::spawn(async move {
            let mut conn = Conn::open(addr).await;
            let (mut ok, mut refused_after) = (0u32, 0u32);
            for i in 0..200 {
                let was_dropped = dropped.load(Ordering::Acquire);
                let body = call_body(i, "echo", json!({"text": format!("{w}-{i}")})).to_string();
                let r = conn.send(&post(addr, &bearer, &body)).await;
                match r.status {
                    200 => {
                        assert!(!was_dropped, "a call sent after the drop succeeded");
                        ok += 1;
                    }
                    401 => {
                        refused_after += 1;
                        // A 401 closes its connection (admission.rs): the
                        // next attempt needs a fresh one.
                        assert_eq!(r.header("connection"), Some("close"));
                        conn = Conn::open(addr).await;
                    }
                    other => panic!("unexpected status {other}"),
                }
                if refused_after > 20 {
                    break;
                }
            }
            (ok, refused_after)
        }));
    }
    // Let some calls through, then revoke in the middle of the traffic.
    while inner.calls() < 100 {
        tokio::task::yield_now().await;
    }
    drop(session);
    dropped.store(true, Ordering::Release);
    let mut total_ok = 0;
    for worker in workers {
        let (ok, refused) = within(worker).await.unwrap();
        assert!(refused > 0, "every worker ends refused");
        total_ok += ok;
    }
    assert!(
        !late.load(Ordering::SeqCst),
        "a call reached the surface after drop returned"
    );
    assert_eq!(
        inner.calls() as u32,
        total_ok,
        "every call that reached the surface was answered 200"
    );
}
