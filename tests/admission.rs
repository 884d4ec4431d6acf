//! Connection admission: `max_connections`, and who keeps a slot.
//!
//! Connections past the limit are closed at once while open ones are
//! served. Under a flood a process with no bearer cannot lock the agent
//! out: while connections that hold no live bearer pour in — idle ones,
//! ones trickling their headers, ones sending wrong bearers, at up to 1,000
//! new connections per second — a client with a live bearer making calls on
//! fresh connections gets at least 99% of them answered, each within 1 s;
//! and an authenticated keep-alive connection that idles between calls is
//! never shed. Bounded: the flood stops once the client has made its
//! calls, and every wait fails the test after `STEP`.

mod support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use embacle_tool_host::ToolHostConfig;
use serde_json::json;
use support::hostile::{agent_on_fresh_connections, flood, FloodStats};
use support::*;

/// Calls the legitimate client makes under the flood.
const AGENT_CALLS: usize = 50;
/// The host's connection slots under the flood.
const SLOTS: usize = 128;

/// While connections without a live bearer flood in, a client with one
/// gets 99% of its calls on fresh connections answered within 1 s, and an
/// idle authenticated keep-alive connection is never shed. Paced by what
/// happened, not by the clock: each of the keep-alive's idle stretches
/// lasts until the flood has filled every slot twice over (so a pending
/// connection would have been shed), and the flood runs until the client
/// has made its calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authenticated_clients_win_against_a_flood() {
    if under_wine() {
        // Not the host's doing: each of Wine's socket calls goes through
        // its server, and every socket event walks every poll pending on
        // any socket (tokio keeps one per socket), so the flood's 600 held
        // sockets slow each call further and the flood never reaches its
        // rate. scripts/wine/poll_scaling.c shows it without this crate.
        return skipped(
            "under Wine, whose socket calls slow down with every poll pending on another socket (scripts/wine/poll_scaling.c), the flood cannot reach 1,000 connections a second; the flood case did not run",
        );
    }
    let fx = Fixture::with(ToolHostConfig {
        // A window of 128 accepts: ~128 ms at the flood's rate, far above
        // the ~1 ms a client needs, even on a loaded machine.
        max_connections: SLOTS,
        ..ToolHostConfig::default()
    })
    .await;
    let (addr, bearer) = (fx.addr, fx.bearer.clone());

    // A keep-alive connection that authenticates before the flood and then
    // idles between calls.
    let mut keep_alive = fx.conn().await;
    let ping = fx.post(PING);
    assert_eq!(keep_alive.send(&ping).await.status, 200);

    let stop = Arc::new(AtomicBool::new(false));
    let stats = Arc::new(FloodStats::default());
    let flooder = tokio::spawn(flood(addr, Arc::clone(&stop), Arc::clone(&stats)));
    let made = Arc::new(AtomicUsize::new(0));
    let agent = tokio::spawn(agent_on_fresh_connections(
        addr,
        bearer.clone(),
        Arc::clone(&stop),
        Arc::clone(&made),
    ));
    let started = Instant::now();
    let opened = || stats.opened.load(Ordering::Relaxed);
    let idle_calls = 3;
    for _ in 0..idle_calls {
        let from = opened();
        wait_until("the flood filled every slot twice", || {
            opened() >= from + 2 * SLOTS
        })
        .await;
        assert_eq!(
            keep_alive.send(&ping).await.status,
            200,
            "the idle authenticated connection was shed"
        );
    }
    wait_until("the client made its calls", || {
        made.load(Ordering::Relaxed) >= AGENT_CALLS
    })
    .await;
    stop.store(true, Ordering::Relaxed);
    let flooded_for = started.elapsed();
    let agent = within(agent).await.unwrap();
    within(flooder).await.unwrap();

    let opened = stats.opened.load(Ordering::Relaxed);
    let (calls, answered) = (agent.calls, agent.answered.len());
    println!(
        "flood: {opened} connections in {flooded_for:?}; agent: {answered}/{calls} calls answered \
         within 1 s ({:.1}%), p50 {:?}, slowest {:?}; idle keep-alive served \
         {idle_calls}/{idle_calls}; wrong bearers answered 401 and closed: {}",
        agent.rate() * 100.0,
        agent.quantile(0.5),
        agent.quantile(1.0),
        stats.wrong_bearer_401s.load(Ordering::Relaxed),
    );
    assert!(
        opened >= idle_calls * 2 * SLOTS,
        "the flood ran: {opened} connections"
    );
    assert!(calls >= AGENT_CALLS, "the agent made {calls} calls");
    assert!(
        agent.rate() >= 0.99,
        "only {answered} of {calls} calls were answered within 1 s"
    );
    assert!(
        stats.wrong_bearer_401s.load(Ordering::Relaxed) > 0,
        "wrong bearers get a 401 and a close"
    );
}

/// Connections beyond `max_connections` are closed at once; the connections
/// already open keep being served, and capacity returns when they close.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_limit() {
    let fx = Fixture::with(ToolHostConfig {
        max_connections: 2,
        max_connections_per_session: Some(2),
        ..ToolHostConfig::default()
    })
    .await;
    let ping = fx.post(PING);
    let mut a = fx.conn().await;
    let mut b = fx.conn().await;
    assert_eq!(a.send(&ping).await.status, 200);
    assert_eq!(b.send(&ping).await.status, 200);
    let mut excess = fx.conn().await;
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
        let mut c = fx.conn().await;
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

/// Pending connections (no live bearer yet) give their slots up oldest
/// first, and authenticated ones never: with `max_connections` 8, an
/// authenticated keep-alive connection and a notification stream, 64 idle
/// connections leave exactly the newest 6 open and the 58 before them
/// closed, while the keep-alive connection is served throughout and the
/// stream still delivers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_connections_give_their_slots_up_oldest_first() {
    let fx = Fixture::with(ToolHostConfig {
        max_connections: 8,
        ..ToolHostConfig::default()
    })
    .await;
    let mut live = fx.conn().await;
    let ping = fx.post(PING);
    assert_eq!(live.send(&ping).await.status, 200);
    let (host, auth) = (fx.addr.to_string(), fx.auth());
    let get = request(
        "GET /mcp HTTP/1.1",
        &[
            ("Host", host.as_str()),
            ("Authorization", auth.as_str()),
            ("Accept", "text/event-stream"),
            ("MCP-Protocol-Version", "2025-11-25"),
        ],
        None,
    );
    let mut listener = fx.conn().await;
    let mut stream = listener.send_streaming(&get).await;
    let mut idle = Vec::new();
    for _ in 0..64 {
        idle.push(fx.conn().await);
    }
    for _ in 0..5 {
        assert_eq!(live.send(&ping).await.status, 200);
    }
    // The 58th is shed when the 64th is accepted, so once they are all
    // closed, every connection has been accepted.
    let (shed, kept) = idle.split_at_mut(64 - 6);
    for conn in shed {
        assert!(
            within(conn.closed_by_server()).await,
            "an older pending connection is shed"
        );
    }
    for conn in kept {
        assert!(
            tokio::time::timeout(Duration::from_millis(100), conn.closed_by_server())
                .await
                .is_err(),
            "one of the 6 newest was closed"
        );
    }
    fx.session().list_changed_notifier().notify();
    let event = within(stream.next_event())
        .await
        .expect("the stream is open");
    assert!(
        event.contains("notifications/tools/list_changed"),
        "{event}"
    );
}

/// One session cannot take every slot: with `max_connections` 8 its share
/// is 4. Its connections past the share are refused with 429 and closed,
/// while its first four hold a hanging call each; another session then
/// gets its own four slots and is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_session_cannot_take_every_slot() {
    let fx = Fixture::with(ToolHostConfig {
        max_connections: 8,
        ..ToolHostConfig::default()
    })
    .await;
    let hang = fx.post(&call_body(1, "hang", json!({})).to_string());
    let mut hog = Vec::new();
    for _ in 0..4 {
        let mut conn = fx.conn().await;
        conn.write(&hang).await;
        hog.push(conn);
    }
    wait_until("four calls hang", || fx.surface.calls() == 4).await;
    for _ in 0..4 {
        let mut conn = fx.conn().await;
        let refused = conn.send(&hang).await;
        assert_eq!(refused.status, 429, "past its share");
        assert_eq!(refused.header("connection"), Some("close"));
        assert!(
            refused.error_message().contains("its share"),
            "{}",
            refused.error_message()
        );
        assert!(within(conn.closed_by_server()).await);
    }
    assert_eq!(
        fx.surface.calls(),
        4,
        "nothing past the share reached the surface"
    );
    let other = fx.host.open_session(RecordingSurface::new()).unwrap();
    let bearer = bearer_of(&other);
    let mut conns = Vec::new();
    for _ in 0..4 {
        let mut conn = fx.conn().await;
        let r = conn.send(&post(fx.addr, &bearer, PING)).await;
        assert_eq!(r.status, 200, "another session is served");
        conns.push(conn);
    }
    drop(hog);
}

/// Sends `ping` on 100 fresh connections, kept open (each holds its slot):
/// how many were served, and the connections.
async fn served_on_fresh_connections(fx: &Fixture, ping: &[u8]) -> (usize, Vec<Conn>) {
    let mut served = 0;
    let mut held = Vec::new();
    for _ in 0..100 {
        let mut conn = fx.conn().await;
        if conn.send(ping).await.status == 200 {
            served += 1;
        }
        held.push(conn);
    }
    (served, held)
}

/// Every request is charged to the session whose bearer it presents. The
/// attack: session B reuses all of session A's keep-alive connections
/// (default config: 256 slots, a share of 128) and opens 128 of its own,
/// then A is revoked. A connection moves to B when B's bearer arrives on
/// it, so B's own 128 are past its share (429, closed); A's revocation
/// closes nothing B now holds; and a third session is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bearer_cannot_ride_on_another_sessions_connections() {
    let mut fx = Fixture::with(ToolHostConfig {
        // The reused connections idle while 128 more are opened and
        // refused: under Wine on a slow machine that took past the default
        // 10 s, and the host closed them for idling, which is not what
        // this test is about (2026-12-07, `3059eef`).
        header_read_timeout: Duration::from_secs(120),
        ..ToolHostConfig::default()
    })
    .await;
    let share = ToolHostConfig::default().max_connections / 2;
    let b = fx.host.open_session(RecordingSurface::new()).unwrap();
    let b_ping = post(fx.addr, &bearer_of(&b), PING);
    let mut reused = Vec::new();
    for _ in 0..share {
        let mut conn = fx.conn().await;
        assert_eq!(conn.send(&fx.post(PING)).await.status, 200);
        assert_eq!(conn.send(&b_ping).await.status, 200, "moved to B");
        reused.push(conn);
    }
    let mut refused = 0;
    for _ in 0..share {
        let mut conn = fx.conn().await;
        if conn.send(&b_ping).await.status == 429 {
            refused += 1;
        }
    }
    assert_eq!(refused, share, "B's own connections are past its share");
    fx.revoke();
    for conn in &mut reused {
        assert_eq!(
            conn.send(&b_ping).await.status,
            200,
            "B keeps what it holds"
        );
    }
    let c = fx.host.open_session(RecordingSurface::new()).unwrap();
    let c_ping = post(fx.addr, &bearer_of(&c), PING);
    let (served, _held) = served_on_fresh_connections(&fx, &c_ping).await;
    assert!(served >= 95, "a third session got {served} of 100");
    println!("the reuse attack: a third session got {served} of 100");
}

/// A revoked session's connections give their slots up: sessions A and B
/// hold every slot (default config: 256, a share of 128 each), so a third
/// session is refused; A's guard drops, its idle connections become
/// pending, first to be shed, and the third session is served on fresh
/// connections. One of A's, reused with A's dead bearer, gets 401.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_sessions_connections_give_their_slots_up() {
    let mut fx = Fixture::new().await;
    let share = ToolHostConfig::default().max_connections / 2;
    let b = fx.host.open_session(RecordingSurface::new()).unwrap();
    let b_ping = post(fx.addr, &bearer_of(&b), PING);
    let mut held = Vec::new();
    for ping in [fx.post(PING), b_ping] {
        for _ in 0..share {
            let mut conn = fx.conn().await;
            assert_eq!(conn.send(&ping).await.status, 200);
            held.push(conn);
        }
    }
    let c = fx.host.open_session(RecordingSurface::new()).unwrap();
    let c_ping = post(fx.addr, &bearer_of(&c), PING);
    let mut refused = fx.conn().await;
    assert!(
        within(refused.closed_by_server()).await,
        "every slot is authenticated: refused"
    );
    fx.revoke();
    let (served, _kept) = served_on_fresh_connections(&fx, &c_ping).await;
    assert!(served >= 95, "the third session got {served} of 100");
    println!("after a full share's revocation: the third session got {served} of 100");
    // A's connections: shed for C's, or still pending; on those, A's dead
    // bearer is a 401.
    let (mut shed, mut unauthorized) = (0, 0);
    for conn in &mut held[..share] {
        let _ = conn.try_write(&fx.post(PING)).await;
        match within(conn.read_response_unbounded()).await {
            None => shed += 1,
            Some(r) => {
                assert_eq!(r.status, 401, "A's connection, A's dead bearer");
                unauthorized += 1;
            }
        }
    }
    assert!(
        shed >= served && unauthorized > 0,
        "{shed} shed, {unauthorized} 401"
    );
}
