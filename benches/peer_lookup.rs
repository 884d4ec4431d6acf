//! The peer-user check's lookup as the machine's socket count grows: one
//! `NETLINK_SOCK_DIAG` request that names the client's socket (what the
//! check does), next to one read of `/proc/net/tcp` (the table of every
//! socket, what it did first), both timed on the same connection, before
//! and after `GROWN` more sockets are added to the kernel's table. Those
//! are `TIME_WAIT` sockets, as a flood of connections leaves behind, so
//! they need no file descriptors. The claim under test: the lookup's cost
//! does not grow with the table (`lookup_grown_over_lookup_base` ≈ 1).
//!
//! `cargo bench --bench peer_lookup` (Linux; elsewhere it says so, and
//! the rest of this file is not compiled: it reads `/proc/net/tcp`).

#[cfg(not(target_os = "linux"))]
fn main() {
    println!("peer_lookup: Linux only, skipped");
}

#[cfg(target_os = "linux")]
mod common;

#[cfg(target_os = "linux")]
use std::net::{SocketAddr, TcpListener, TcpStream};
#[cfg(target_os = "linux")]
use std::time::Instant;

#[cfg(target_os = "linux")]
use common::report;
#[cfg(target_os = "linux")]
use embacle_tool_host::bench_support::peer_uid;

/// Sockets added between the two measurements.
#[cfg(target_os = "linux")]
const GROWN: usize = 10_000;
/// Lookups per sample, and samples per size.
#[cfg(target_os = "linux")]
const LOOKUPS: u32 = 200;
#[cfg(target_os = "linux")]
const SAMPLES: usize = 15;

#[cfg(target_os = "linux")]
fn main() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let local = listener.local_addr().unwrap();
    let _client = TcpStream::connect(local).unwrap();
    let (_server, peer) = listener.accept().unwrap();
    assert!(peer_uid(local, peer).is_some(), "the kernel answers");

    let base = measure(local, peer);
    for _ in 0..GROWN {
        // The client closes first, so its end lingers in TIME_WAIT.
        let client = TcpStream::connect(local).unwrap();
        let (server, _) = listener.accept().unwrap();
        drop(client);
        drop(server);
    }
    let grown = measure(local, peer);
    for (label, (sockets, lookup, table)) in [("base", base), ("grown", grown)] {
        report(&format!("peer_lookup.{label}.sockets"), sockets);
        report(&format!("peer_lookup.{label}.lookup_ns"), lookup);
        report(&format!("peer_lookup.{label}.proc_read_ns"), table);
        report(
            &format!("peer_lookup.{label}.proc_read_over_lookup"),
            format!("{:.0}", table as f64 / lookup as f64),
        );
    }
    report(
        "peer_lookup.lookup_grown_over_lookup_base",
        format!("{:.3}", grown.1 as f64 / base.1 as f64),
    );
}

/// The socket count, and the median lookup and table read in nanoseconds,
/// sampled alternately.
#[cfg(target_os = "linux")]
fn measure(local: SocketAddr, peer: SocketAddr) -> (usize, u128, u128) {
    let (mut lookups, mut reads) = (Vec::new(), Vec::new());
    let mut sockets = 0;
    for _ in 0..SAMPLES {
        let start = Instant::now();
        for _ in 0..LOOKUPS {
            assert!(peer_uid(local, peer).is_some());
        }
        lookups.push(start.elapsed().as_nanos() / u128::from(LOOKUPS));
        let start = Instant::now();
        let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
        reads.push(start.elapsed().as_nanos());
        sockets = table.lines().count() - 1;
    }
    (
        sockets,
        common::median_ns(&mut lookups),
        common::median_ns(&mut reads),
    )
}
