//! Admission under a flood: a process with no bearer cannot lock the agent
//! out. While connections that hold no live bearer pour in — idle ones,
//! ones trickling their headers, ones sending wrong bearers, at up to 1,000
//! new connections per second — a client with a live bearer making calls on
//! fresh connections gets at least 99% of them answered, each within 1 s;
//! and an authenticated keep-alive connection that idles between calls is
//! never shed. Bounded: the flood stops itself after a few seconds.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use embacle_tool_host::ToolHostConfig;
use support::hostile::{agent_on_fresh_connections, flood, FloodStats, FLOOD_RATE};
use support::*;

/// How long the flood and the legitimate client run.
const FLOOD_FOR: Duration = Duration::from_secs(3);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authenticated_clients_win_against_a_flood() {
    let host = host_with(ToolHostConfig {
        // A window of 128 accepts: ~128 ms at the flood's rate, far above
        // the ~1 ms a client needs, even on a loaded machine.
        max_connections: 128,
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
    let agent = within(agent).await.unwrap();
    within(flooder).await.unwrap();

    let opened = stats.opened.load(Ordering::Relaxed);
    let (calls, answered) = (agent.calls, agent.answered.len());
    println!(
        "flood: {opened} connections in {FLOOD_FOR:?}; agent: {answered}/{calls} calls answered \
         within 1 s ({:.1}%), p50 {:?}, slowest {:?}; idle keep-alive served \
         {idle_calls}/{idle_calls}; wrong bearers answered 401 and closed: {}",
        agent.rate() * 100.0,
        agent.quantile(0.5),
        agent.quantile(1.0),
        stats.wrong_bearer_401s.load(Ordering::Relaxed),
    );
    assert!(
        opened as u32 > FLOOD_RATE,
        "the flood ran: {opened} connections"
    );
    assert!(calls >= 50, "the agent made {calls} calls");
    assert!(
        agent.rate() >= 0.99,
        "only {answered} of {calls} calls were answered within 1 s"
    );
    assert!(
        stats.wrong_bearer_401s.load(Ordering::Relaxed) > 0,
        "wrong bearers get a 401 and a close"
    );
}
