//! Soak and revocation under load, over real HTTP: sessions opened and
//! dropped under mixed traffic, and bearers revoked while many connections
//! hammer them.
//!
//! `cargo test --test soak` runs a small version. The full one —
//! 1,000 sessions, 64 connections, over 100,000 revocation attempts — runs
//! with `EMBACLE_SOAK=full cargo test --release --test soak -- --nocapture`
//! (`.ci/run` does), and prints its figures.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use embacle_tool_host::{Tool, ToolHostConfig, ToolOutcome, ToolSurface};
use serde_json::{json, Value};

mod support;
use support::counting_alloc;
use support::*;

/// Live heap bytes are counted, to show memory returns to where it started.
#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

fn full() -> bool {
    std::env::var("EMBACLE_SOAK").is_ok_and(|v| v == "full")
}

/// A small deterministic generator (xorshift), so runs are repeatable.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// This process's open file descriptors (Linux; 0 elsewhere, where the
/// soak says the check did not run).
fn open_fds() -> usize {
    #[cfg(target_os = "linux")]
    return std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count());
    #[cfg(not(target_os = "linux"))]
    return 0;
}

/// Open file descriptors of this process that are TCP sockets bound to or
/// connected to `port` (from `/proc/self/fd` and `/proc/net/tcp{,6}`).
#[cfg(target_os = "linux")]
fn fds_on_port(port: u16) -> usize {
    let mut inodes = std::collections::HashSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        for line in std::fs::read_to_string(table)
            .unwrap_or_default()
            .lines()
            .skip(1)
        {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let port_of = |addr: &str| {
                addr.rsplit(':')
                    .next()
                    .and_then(|p| u16::from_str_radix(p, 16).ok())
            };
            if fields.len() > 9
                && (port_of(fields[1]) == Some(port) || port_of(fields[2]) == Some(port))
            {
                inodes.insert(fields[9].to_owned());
            }
        }
    }
    std::fs::read_dir("/proc/self/fd")
        .map(|dir| {
            dir.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                .filter(|link| {
                    let link = link.to_string_lossy();
                    link.strip_prefix("socket:[")
                        .and_then(|rest| rest.strip_suffix(']'))
                        .is_some_and(|inode| inodes.contains(inode))
                })
                .count()
        })
        .unwrap_or(0)
}

#[cfg(not(target_os = "linux"))]
fn fds_on_port(_: u16) -> usize {
    0
}

/// Tools that succeed, refuse, fail, panic, or take a few milliseconds.
struct Mixed {
    tools: Arc<[Tool]>,
}

const MIXED: [&str; 5] = ["ok", "refuse", "fail", "boom", "slow"];

impl Mixed {
    fn new() -> Arc<Self> {
        let tools = MIXED
            .map(|n| Tool::new(n, "", json!({"type": "object"})).unwrap())
            .to_vec();
        Arc::new(Self {
            tools: tools.into(),
        })
    }
}

impl ToolSurface for Mixed {
    async fn list_tools(&self) -> Arc<[Tool]> {
        Arc::clone(&self.tools)
    }
    async fn call(&self, name: &str, _: &Value) -> ToolOutcome {
        match name {
            "ok" => ToolOutcome::text("ok"),
            "refuse" => ToolOutcome::refused("no"),
            "fail" => ToolOutcome::failed("broken"),
            "boom" => panic!("soak panic"),
            _ => {
                tokio::time::sleep(Duration::from_millis(3)).await;
                ToolOutcome::text("slow")
            }
        }
    }
}

/// A pool slot: the session index and bearer clients may use, if any.
type Offer = Mutex<Option<(usize, String)>>;

/// What the clients saw for one session.
#[derive(Default)]
struct Seen {
    served: AtomicU64,
    errors: AtomicU64,
    unauthorized: AtomicU64,
    cancelled: AtomicU64,
}

/// Runs one test of this file on its own two-worker runtime, while no
/// other test of the file runs: the soak measures process-wide figures
/// (file descriptors, heap), which a test running beside it would disturb.
/// The runtime is gone, and its sockets with it, before the next test.
fn alone(test: impl std::future::Future<Output = ()>) {
    static ALONE: Mutex<()> = Mutex::new(());
    let _alone = ALONE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(test);
}

/// Both soaks, one after the other in one test.
#[test]
fn soak() {
    alone(async {
        soak_sessions_and_connections().await;
        revocation_under_fire().await;
    });
}

/// A surface that wraps the standard one and counts the calls that reach
/// it after `dropped` was raised (right after the guard's drop returned).
struct Marked {
    inner: Arc<RecordingSurface>,
    dropped: Arc<AtomicBool>,
    late: Arc<AtomicUsize>,
}

impl ToolSurface for Marked {
    async fn list_tools(&self) -> Arc<[Tool]> {
        self.inner.list_tools().await
    }

    async fn call(&self, name: &str, arguments: &Value) -> ToolOutcome {
        // Acquire: pairs with the Release store made after `drop` returned.
        if self.dropped.load(Ordering::Acquire) {
            self.late.fetch_add(1, Ordering::SeqCst);
        }
        self.inner.call(name, arguments).await
    }
}

impl Marked {
    fn new(late: &Arc<AtomicUsize>) -> (Arc<Self>, Arc<AtomicBool>) {
        let dropped = Arc::new(AtomicBool::new(false));
        let marked = Arc::new(Self {
            inner: RecordingSurface::new(),
            dropped: Arc::clone(&dropped),
            late: Arc::clone(late),
        });
        (marked, dropped)
    }
}

/// Many connections hammer one bearer while the guard is dropped. Every
/// call that reached the surface started before `drop` returned (the
/// surface checks a flag raised right after the drop), and after the flag
/// every request is a 401.
#[test]
fn revocation_under_concurrent_calls() {
    alone(async {
        let late = Arc::new(AtomicUsize::new(0));
        let (surface, dropped) = Marked::new(&late);
        let mut fx = Fixture::serving(ToolHostConfig::default(), surface).await;
        let (addr, bearer) = (fx.addr, fx.bearer.clone());
        let mut workers = Vec::new();
        for w in 0..8 {
            let (bearer, dropped) = (bearer.clone(), dropped.clone());
            workers.push(tokio::spawn(async move {
                let mut conn = Conn::open(addr).await;
                let (mut ok, mut refused_after) = (0u32, 0u32);
                for i in 0..200 {
                    let was_dropped = dropped.load(Ordering::Acquire);
                    let body =
                        call_body(i, "echo", json!({"text": format!("{w}-{i}")})).to_string();
                    let r = conn.send(&post(addr, &bearer, &body)).await;
                    match r.status {
                        200 => {
                            assert!(!was_dropped, "a call sent after the drop succeeded");
                            ok += 1;
                        }
                        401 => {
                            refused_after += 1;
                            // A 401 closes its connection (src/conn/admission.rs): the
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
        while fx.surface.inner.calls() < 100 {
            tokio::task::yield_now().await;
        }
        fx.revoke();
        dropped.store(true, Ordering::Release);
        let mut total_ok = 0;
        for worker in workers {
            let (ok, refused) = within(worker).await.unwrap();
            assert!(refused > 0, "every worker ends refused");
            total_ok += ok;
        }
        assert_eq!(
            late.load(Ordering::SeqCst),
            0,
            "a call reached the surface after drop returned"
        );
        assert_eq!(
            fx.surface.inner.calls() as u32,
            total_ok,
            "every call that reached the surface was answered 200"
        );
    });
}

/// Sessions opened and dropped concurrently with calls from many
/// connections, some tools panicking, some slow, some refusing. At the end
/// every count is exact (each session's final `calls_served` equals the
/// successes and refusals its clients saw), no session or call is left, no
/// file descriptor leaked, and live heap memory is back near its start.
async fn soak_sessions_and_connections() {
    // The expected panics of the `boom` tool would print thousands of
    // backtraces; keep the default hook for every other panic.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if info.payload().downcast_ref::<&str>() != Some(&"soak panic") {
            default_hook(info);
        }
    }));
    let (sessions, connections, pool) = if full() {
        (1_000, 64, 64)
    } else {
        (120, 16, 16)
    };
    let fds_before = open_fds();
    let bytes_before = counting_alloc::live_bytes();
    let started = Instant::now();
    let host = host_with(ToolHostConfig {
        max_connections: 256,
        ..ToolHostConfig::default()
    })
    .await;
    let addr = host.local_addr();
    let surface = Mixed::new();
    // The bearers currently offered to clients: slot -> (session index, bearer).
    let offered: Arc<Vec<Offer>> = Arc::new((0..pool).map(|_| Mutex::new(None)).collect());
    let seen: Arc<Vec<Seen>> = Arc::new((0..sessions).map(|_| Seen::default()).collect());
    let done = Arc::new(AtomicBool::new(false));

    let mut workers = Vec::new();
    for w in 0..connections {
        let (offered, seen, done) = (offered.clone(), seen.clone(), done.clone());
        workers.push(tokio::spawn(async move {
            let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (w as u64 + 1));
            let mut conn = Conn::open(addr).await;
            let mut calls = 0u64;
            while !done.load(Ordering::Acquire) {
                let Some((index, bearer)) =
                    offered[rng.below(offered.len())].lock().unwrap().clone()
                else {
                    tokio::task::yield_now().await;
                    continue;
                };
                let tool = MIXED[rng.below(MIXED.len())];
                let r = conn
                    .send(&post(
                        addr,
                        &bearer,
                        &call_body(calls as i64, tool, json!({})).to_string(),
                    ))
                    .await;
                calls += 1;
                let counters = &seen[index];
                match (r.status, tool) {
                    (200, "ok" | "refuse" | "slow") => {
                        assert!(r.json()["result"].is_object(), "{tool}: {:?}", r.json());
                        counters.served.fetch_add(1, Ordering::Relaxed);
                    }
                    (200, "fail" | "boom") => {
                        assert_eq!(r.error_code(), -32603);
                        counters.errors.fetch_add(1, Ordering::Relaxed);
                    }
                    (401, _) => {
                        counters.unauthorized.fetch_add(1, Ordering::Relaxed);
                        // A 401 closes its connection (src/conn/admission.rs).
                        conn = Conn::open(addr).await;
                    }
                    (202, "slow") => {
                        counters.cancelled.fetch_add(1, Ordering::Relaxed);
                    }
                    (status, tool) => panic!("unexpected {status} for {tool}"),
                }
            }
            calls
        }));
    }

    // The manager opens sessions into random pool slots; the session it
    // displaces is closed right away, with calls in flight.
    let mut rng = Rng(42);
    let mut live: HashMap<usize, embacle_tool_host::ToolSession> = HashMap::new();
    let mut finals = vec![None; sessions];
    for index in 0..sessions {
        let session = host.open_session(surface.clone()).unwrap();
        let slot = rng.below(pool);
        let displaced = offered[slot]
            .lock()
            .unwrap()
            .replace((index, bearer_of(&session)));
        live.insert(index, session);
        if let Some((old, _)) = displaced {
            let guard = live.remove(&old).unwrap();
            finals[old] = Some(within(guard.close()).await);
        }
        // Let traffic reach each session before it may be displaced.
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    for slot in offered.iter() {
        let taken = slot.lock().unwrap().take();
        if let Some((index, _)) = taken {
            let guard = live.remove(&index).unwrap();
            finals[index] = Some(within(guard.close()).await);
        }
    }
    assert!(live.is_empty());
    done.store(true, Ordering::Release);
    let mut total_calls = 0;
    for worker in workers {
        total_calls += within(worker).await.unwrap();
    }

    let mut totals = [0u64; 4];
    for (index, (final_count, counters)) in finals.iter().zip(seen.iter()).enumerate() {
        let served = counters.served.load(Ordering::Relaxed);
        assert_eq!(
            *final_count,
            Some(served),
            "session {index}: calls_served vs what clients saw"
        );
        totals[0] += served;
        totals[1] += counters.errors.load(Ordering::Relaxed);
        totals[2] += counters.unauthorized.load(Ordering::Relaxed);
        totals[3] += counters.cancelled.load(Ordering::Relaxed);
    }
    assert_eq!(totals.iter().sum::<u64>(), total_calls);
    assert!(
        totals[0] > 0 && totals[1] > 0 && totals[2] > 0,
        "{totals:?}"
    );
    assert_eq!(host.live_sessions(), 0);
    assert_eq!(host.calls_in_flight(), 0);

    // Descriptors are counted from /proc: Linux only.
    let count_descriptors = cfg!(target_os = "linux");
    if count_descriptors {
        assert!(
            fds_on_port(addr.port()) > 0,
            "the listener itself is counted"
        );
    } else {
        skipped("the soak's descriptor-leak check needs Linux (/proc/self/fd, /proc/net/tcp); the rest of the soak ran");
    }
    within(host.shutdown()).await;
    drop(host);
    drop(surface);
    // Every socket of the host closed, and the process holds no more file
    // descriptors than before.
    let mut fds_after = open_fds();
    for _ in 0..100 {
        if !count_descriptors || fds_after <= fds_before && fds_on_port(addr.port()) == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        fds_after = open_fds();
    }
    if count_descriptors {
        assert_eq!(fds_on_port(addr.port()), 0, "sockets of the host leaked");
        assert!(
            fds_after <= fds_before,
            "file descriptors leaked: {fds_before} -> {fds_after}"
        );
    }
    let bytes_after = counting_alloc::live_bytes();
    let grown = bytes_after - bytes_before;
    println!(
        "soak: {sessions} sessions, {connections} connections, {total_calls} calls in {:.1}s: \
         served {}, errors {}, 401 {}, cancelled {}; fds {fds_before} -> {fds_after}; \
         live heap +{grown} bytes; max RSS {}",
        started.elapsed().as_secs_f64(),
        totals[0],
        totals[1],
        totals[2],
        totals[3],
        if count_descriptors {
            format!("{} KiB", support::hostile::peak_rss() / 1024)
        } else {
            "not read (Linux only)".to_owned()
        }
    );
    assert!(grown < 256 * 1024, "live heap grew by {grown} bytes");
}

/// Many connections hammer one bearer while the guard is dropped at a
/// random moment. The surface checks a flag raised right after `drop`
/// returns: no call may reach it later. Every call either succeeded before
/// the drop or was refused after (401, or 202 when cancelled).
async fn revocation_under_fire() {
    // Full size: at least 800 rounds and 100,000 attempts. A loaded machine
    // makes fewer attempts per round, so rounds go on (up to 4,000) until
    // both are reached, rather than the figure depending on the machine.
    let (min_rounds, max_rounds, target, workers_per_round) = if full() {
        (800, 4_000, 100_000, 16)
    } else {
        (30, 30, 0, 8)
    };
    let host = host().await;
    let addr = host.local_addr();
    let late = Arc::new(AtomicUsize::new(0));
    let mut rng = Rng(7);
    let (mut attempts, mut before, mut after) = (0u64, 0u64, 0u64);
    let mut rounds = 0;
    while rounds < max_rounds && (rounds < min_rounds || attempts < target) {
        rounds += 1;
        let (surface, dropped) = Marked::new(&late);
        let session = host.open_session(surface).unwrap();
        let bearer = bearer_of(&session);
        let stop = Arc::new(AtomicBool::new(false));
        let mut workers = Vec::new();
        for w in 0..workers_per_round {
            let (bearer, dropped, stop) = (bearer.clone(), dropped.clone(), stop.clone());
            workers.push(tokio::spawn(async move {
                let mut conn = Conn::open(addr).await;
                let (mut n, mut ok, mut refused) = (0u64, 0u64, 0u64);
                while !stop.load(Ordering::Acquire) {
                    let sent_after_drop = dropped.load(Ordering::Acquire);
                    let r = conn
                        .send(&post(
                            addr,
                            &bearer,
                            &call_body(w, "echo", json!({"text": "ok"})).to_string(),
                        ))
                        .await;
                    n += 1;
                    match r.status {
                        200 => {
                            assert!(!sent_after_drop, "a call sent after the drop succeeded");
                            ok += 1;
                        }
                        401 => {
                            refused += 1;
                            // A 401 closes its connection (src/conn/admission.rs).
                            conn = Conn::open(addr).await;
                        }
                        202 => refused += 1,
                        other => panic!("unexpected status {other}"),
                    }
                }
                (n, ok, refused)
            }));
        }
        // Drop at a random moment: after 0..2 ms of traffic.
        tokio::time::sleep(Duration::from_micros(rng.below(2_000) as u64)).await;
        drop(session);
        dropped.store(true, Ordering::Release);
        tokio::time::sleep(Duration::from_millis(2)).await;
        stop.store(true, Ordering::Release);
        for worker in workers {
            let (n, ok, refused) = within(worker).await.unwrap();
            attempts += n;
            before += ok;
            after += refused;
        }
    }
    println!("revocation under fire: {rounds} rounds, {attempts} attempts, {before} before the drop, {after} refused after");
    assert_eq!(attempts, before + after);
    assert_eq!(
        late.load(Ordering::SeqCst),
        0,
        "a call reached the surface after drop returned"
    );
    assert!(
        attempts >= target,
        "only {attempts} attempts in {rounds} rounds"
    );
}
