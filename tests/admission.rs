//! Admission under a flood: a process with no bearer cannot lock the agent
//! out. While connections that hold no live bearer pour in — idle ones,
//! ones trickling their headers, ones sending wrong bearers, at up to 1,000
//! new connections per second — a client with a live bearer making calls on
//! fresh connections gets at least 99% of them answered, each within 1 s;
//! and an authenticated keep-alive connection that idles between calls is
//! never shed. Bounded: the flood stops itself after a few seconds.

mod support;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use embacle_tool_host::ToolHostConfig;
use serde_json::json;
use support::*;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// How long the flood and the legitimate client run.
const FLOOD_FOR: Duration = Duration::from_secs(3);
/// New flood connections per second, at most.
const FLOOD_RATE: u32 = 1_000;
/// The most flood sockets the flooder keeps open itself (each also holds
/// one of the host's slots until the host sheds it).
const FLOOD_HELD: usize = 600;

#[derive(Default)]
struct FloodStats {
    opened: AtomicUsize,
    wrong_bearer_401s: AtomicUsize,
}

/// Opens connections at `FLOOD_RATE` until `stop`: a third idle, a third
/// trickling a request head a byte at a time, a third sending a wrong
/// bearer (and expecting its 401 and the close).
async fn flood(addr: SocketAddr, stop: Arc<AtomicBool>, stats: Arc<FloodStats>) {
    let mut held: VecDeque<TcpStream> = VecDeque::new();
    let mut trickling: Vec<(TcpStream, usize)> = Vec::new();
    let head = format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer eth_");
    let wrong = post(
        addr,
        &format!("eth_{}", "0".repeat(88)),
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
    );
    let mut tick = tokio::time::interval(Duration::from_secs(1) / FLOOD_RATE);
    let mut n = 0usize;
    while !stop.load(Ordering::Relaxed) {
        tick.tick().await;
        n += 1;
        let Ok(mut stream) = TcpStream::connect(addr).await else {
            continue;
        };
        stats.opened.fetch_add(1, Ordering::Relaxed);
        match n % 3 {
            0 => held.push_back(stream),
            1 => trickling.push((stream, 0)),
            _ => {
                let stats = Arc::clone(&stats);
                let wrong = wrong.clone();
                tokio::spawn(async move {
                    let _ = stream.write_all(&wrong).await;
                    let mut conn_bytes = Vec::new();
                    let read = tokio::time::timeout(
                        Duration::from_secs(2),
                        tokio::io::AsyncReadExt::read_to_end(&mut stream, &mut conn_bytes),
                    )
                    .await;
                    if read.is_ok() && conn_bytes.starts_with(b"HTTP/1.1 401") {
                        stats.wrong_bearer_401s.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
        }
        // One more byte of every trickling head, every 10th tick.
        if n % 10 == 0 {
            for (stream, sent) in &mut trickling {
                if *sent < head.len()
                    && stream
                        .write_all(&head.as_bytes()[*sent..=*sent])
                        .await
                        .is_ok()
                {
                    *sent += 1;
                }
            }
        }
        while held.len() + trickling.len() > FLOOD_HELD {
            if trickling.len() > held.len() {
                trickling.remove(0);
            } else {
                held.pop_front();
            }
        }
    }
}

/// The legitimate client: a call on a fresh connection every 20 ms; returns
/// (calls, answered within 1 s, slowest answer).
async fn agent_on_fresh_connections(
    addr: SocketAddr,
    bearer: String,
    stop: Arc<AtomicBool>,
) -> (usize, usize, Duration) {
    let (mut calls, mut answered, mut slowest) = (0, 0, Duration::ZERO);
    while !stop.load(Ordering::Relaxed) {
        calls += 1;
        let body = call_body(calls as i64, "echo", json!({"text": "still here"})).to_string();
        let request = post(addr, &bearer, &body);
        let started = Instant::now();
        let attempt = tokio::time::timeout(Duration::from_secs(1), async {
            let mut conn = TcpStream::connect(addr).await.ok()?;
            conn.write_all(&request).await.ok()?;
            let mut conn = Conn::from_stream(conn);
            conn.read_response_unbounded().await
        })
        .await;
        if let Ok(Some(response)) = attempt {
            assert_eq!(response.status, 200);
            answered += 1;
            slowest = slowest.max(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (calls, answered, slowest)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authenticated_clients_win_against_a_flood() {
    let host = host_with(ToolHostConfig {
        max_connections: 64,
        ..ToolHostConfig::default()
    })
    .await;
    let session = host.open_session(RecordingSurface::new()).unwrap();
    let addr = host.local_addr();
    let bearer = bearer_of(&session);

    // A keep-alive connection that authenticates before the flood and then
    // idles for a second between calls.
    let mut keep_alive = Conn::open(addr).await;
    let ping = post(addr, &bearer, r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    assert_eq!(keep_alive.send(&ping).await.status, 200);

    let stop = Arc::new(AtomicBool::new(false));
    let stats = Arc::new(FloodStats::default());
    let flooder = tokio::spawn(flood(addr, Arc::clone(&stop), Arc::clone(&stats)));
    let agent = tokio::spawn(agent_on_fresh_connections(
        addr,
        bearer.clone(),
        Arc::clone(&stop),
    ));
    let started = Instant::now();
    let mut idle_calls = 0;
    while started.elapsed() < FLOOD_FOR {
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(
            keep_alive.send(&ping).await.status,
            200,
            "the idle authenticated connection was shed"
        );
        idle_calls += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let (calls, answered, slowest) = within(agent).await.unwrap();
    within(flooder).await.unwrap();

    let opened = stats.opened.load(Ordering::Relaxed);
    let rate = answered as f64 / calls as f64;
    println!(
        "flood: {opened} connections in {FLOOD_FOR:?}; agent: {answered}/{calls} calls answered \
         within 1 s ({:.1}%), slowest {slowest:?}; idle keep-alive served {idle_calls}/{idle_calls}; \
         wrong bearers answered 401 and closed: {}",
        rate * 100.0,
        stats.wrong_bearer_401s.load(Ordering::Relaxed),
    );
    assert!(
        opened as u32 > FLOOD_RATE,
        "the flood ran: {opened} connections"
    );
    assert!(calls >= 50, "the agent made {calls} calls");
    assert!(
        rate >= 0.99,
        "only {answered} of {calls} calls were answered within 1 s"
    );
    assert!(
        stats.wrong_bearer_401s.load(Ordering::Relaxed) > 0,
        "wrong bearers get a 401 and a close"
    );
}
