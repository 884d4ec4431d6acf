//! Hostile and legitimate traffic for the admission and memory tests and
//! the flood bench: a connection flood by a process without a bearer, an
//! agent making calls on fresh connections meanwhile, and the costliest
//! request a bearer holder can send.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::{call_body, post, Conn};

/// New flood connections per second, at most.
pub const FLOOD_RATE: u32 = 1_000;
/// The most flood sockets the flooder keeps open itself (each also holds
/// one of the host's slots until the host sheds it).
pub const FLOOD_HELD: usize = 600;

/// What the flood did.
#[derive(Default)]
pub struct FloodStats {
    pub opened: AtomicUsize,
    pub wrong_bearer_401s: AtomicUsize,
}

/// Opens connections at `FLOOD_RATE` until `stop`: a third idle, a third
/// trickling a request head a byte at a time, a third sending a wrong
/// bearer (and expecting its 401 and the close).
pub async fn flood(addr: SocketAddr, stop: Arc<AtomicBool>, stats: Arc<FloodStats>) {
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

/// What the legitimate client saw.
#[derive(Debug, Default)]
pub struct AgentStats {
    pub calls: usize,
    /// Latencies of the calls answered within 1 s.
    pub answered: Vec<Duration>,
}

impl AgentStats {
    /// The share of calls answered within 1 s.
    pub fn rate(&self) -> f64 {
        self.answered.len() as f64 / self.calls.max(1) as f64
    }

    /// The latency at quantile `q` (0..=1) of the answered calls.
    pub fn quantile(&self, q: f64) -> Duration {
        let mut sorted = self.answered.clone();
        sorted.sort();
        let at = ((sorted.len().max(1) - 1) as f64 * q).round() as usize;
        sorted.get(at).copied().unwrap_or_default()
    }
}

/// The legitimate client: a call on a fresh connection every 20 ms until
/// `stop`, each given 1 s to be answered; `made` counts the calls begun, for
/// a test to wait on.
pub async fn agent_on_fresh_connections(
    addr: SocketAddr,
    bearer: String,
    stop: Arc<AtomicBool>,
    made: Arc<AtomicUsize>,
) -> AgentStats {
    let mut stats = AgentStats::default();
    while !stop.load(Ordering::Relaxed) {
        stats.calls += 1;
        made.fetch_add(1, Ordering::Relaxed);
        let body = call_body(stats.calls as i64, "echo", json!({"text": "still here"})).to_string();
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
            stats.answered.push(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stats
}

/// The costliest body for `echo` under these limits: as long as
/// `max_body` allows, mostly a text the tool echoes back (three quarters:
/// larger than the kernel's socket buffers, so an unread answer backs up
/// into the host), the rest small objects whose parsed size the host
/// bounds just under `max_parsed`.
pub fn worst_echo_body(max_body: usize, max_parsed: usize) -> String {
    let text = "t".repeat(max_body * 3 / 4);
    let body_with = |n: usize| {
        let objects = vec![json!({"a": []}); n];
        call_body(1, "echo", json!({"text": text, "pad": objects})).to_string()
    };
    let bound = |body: &str| embacle_tool_host::bench_support::parsed_size_bound(body.as_bytes());
    // Each `{"a":[]},` is 9 bytes of body and costs the same in the bound,
    // so the first guess is close; shrink until both limits fit.
    let (empty, one) = (body_with(0), body_with(1));
    let per_object = bound(&one) - bound(&empty);
    let mut n = (max_parsed.saturating_sub(bound(&empty)) / per_object)
        .min(max_body.saturating_sub(empty.len()) / 9);
    loop {
        let body = body_with(n);
        if body.len() <= max_body && bound(&body) <= max_parsed {
            return body;
        }
        n = n * 99 / 100;
    }
}

/// This process's resident set size (`VmRSS`) or its peak since the last
/// [`reset_peak_rss`] (`VmHWM`), in bytes (Linux; elsewhere no caller
/// reads it: the memory test is Linux's, the soak and the flood bench ask
/// only there).
#[cfg(target_os = "linux")]
fn rss_field(field: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kib: usize = status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    kib * 1024
}

#[cfg(not(target_os = "linux"))]
fn rss_field(field: &str) -> usize {
    panic!("{field} is read from /proc/self/status, which only Linux has")
}

pub fn rss() -> usize {
    rss_field("VmRSS:")
}

pub fn peak_rss() -> usize {
    rss_field("VmHWM:")
}

/// Starts a new `VmHWM` peak at the current RSS (Linux 4.0+).
pub fn reset_peak_rss() {
    #[cfg(target_os = "linux")]
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    #[cfg(not(target_os = "linux"))]
    panic!("the RSS peak is reset through /proc/self/clear_refs, which only Linux has");
}
