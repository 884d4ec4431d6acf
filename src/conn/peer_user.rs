//! Which local user a loopback connection comes from (Linux), so that a
//! bearer read from another user's process list is useless to them.
//!
//! Agents do not keep the bearer to themselves: Claude's ACP adapter passes
//! the MCP config, bearer included, to its CLI on the command line, which
//! every local user can read in the process list. The client's end of a
//! loopback connection is a socket of the same kernel, and the kernel
//! records which user created it. The host asks the kernel for that socket
//! by its exact four-tuple (its local address is the connection's peer
//! address) and compares the owner with its own listener's.
//!
//! - **How**: one `SOCK_DIAG_BY_FAMILY` request on a fresh
//!   `NETLINK_SOCK_DIAG` socket — what `ss` uses. The request names one
//!   socket, so the kernel answers from its connection hash table in O(1),
//!   whatever the number of sockets on the machine. (The other source,
//!   `/proc/net/tcp`, lists every socket of the namespace, so reading it
//!   costs more the more connections a flood leaves behind: benches/JOURNAL.md,
//!   "The peer-user check".) The socket is
//!   non-blocking; the kernel queues its answer before the request's
//!   `write` returns, so the `read` after it never waits.
//! - **When**: once per connection, on its first request that carries
//!   `Authorization`, before the bearer is looked at (a yes is kept for
//!   the connection's later requests): another user then gets the same
//!   403 for a live bearer and a dead one, and learns nothing of it.
//!   Connections that send no `Authorization` cost nothing more.
//!   `benches/server_cpu.rs` measures the per-connection cost.
//! - **Who counts**: only a socket a process still holds (an inode, and a
//!   state a connected socket has). A client that closes right after its
//!   request leaves a remnant the kernel reports as uid 0, which a root
//!   host would otherwise take for its own user.
//! - **Dual stack**: an `AF_INET6` client connected to `::ffff:127.0.0.1`
//!   (the JDK's and .NET's default) is looked up in its own family.
//! - **Failing closed**: once the host found its own listener at bind, a
//!   connection whose peer socket cannot be found is refused too. Where the
//!   listener is not found at bind (another platform, a kernel without
//!   `inet_diag`), the check is off: `ToolHost::checks_peer_user` says
//!   which.
//! - **`unsafe`**: the only `unsafe` in the crate outside Windows is here
//!   (on Windows, `session/owner_only_file.rs`'s Win32 calls), two calls: the C
//!   library's `socket(2)` (std has no way to open a netlink socket, and the
//!   crate takes no `libc` dependency; std already links the C library) and
//!   taking ownership of the descriptor it returns. Everything after is
//!   std's safe `read`/`write` on that descriptor.
//! - **What it does not defend**: a process of the same user can read the
//!   caller's memory, and its agent's command line and environment, anyway;
//!   and `root` may do anything. It stops other users' processes, which
//!   can see the bearer but not take over the user's own.

use std::io::{Read as _, Write as _};
use std::net::{IpAddr, SocketAddr};

/// The uid that owns the listening socket bound at `local`, if the kernel
/// says so. Also the probe that tells whether the check works here.
pub(crate) fn listener_uid(local: SocketAddr) -> Option<u32> {
    // The kernel's exact lookup finds a socket as an arriving packet would:
    // no connection has remote port 0, so the lookup falls through to the
    // listener on `local`.
    let nowhere = SocketAddr::new(local.ip(), 0);
    let socket = diag_socket(local, nowhere)?;
    (socket.state == TCP_LISTEN).then_some(socket.uid)
}

/// The uid that owns the client's end of the connection from `peer` to
/// `local`, if the kernel names a live socket with an owner there.
///
/// The client's socket may be of the other family than the host's end: a
/// dual-stack `AF_INET6` socket connected to `::ffff:127.0.0.1` (Java's
/// and .NET's default) reaches an IPv4 listener, whose end sees an IPv4
/// peer. So an IPv4 connection is looked up as IPv4, then as v4-mapped
/// IPv6. Both lookups name the same four addresses, which one TCP
/// connection at most can hold.
pub(crate) fn peer_uid(local: SocketAddr, peer: SocketAddr) -> Option<u32> {
    // The two ends as accepted, then, when both are IPv4 (or v4-mapped), in
    // the other family.
    let swapped = other_family(local).zip(other_family(peer));
    let ends = [Some((local, peer)), swapped];
    ends.into_iter().flatten().find_map(|(local, peer)| {
        let socket = diag_socket(peer, local)?;
        (socket.remote == Some(local) && socket.has_a_live_owner()).then_some(socket.uid)
    })
}

/// `address` in the other family: IPv4 as v4-mapped IPv6, v4-mapped IPv6
/// as IPv4; `None` for any other IPv6 address.
fn other_family(address: SocketAddr) -> Option<SocketAddr> {
    let ip = match address.ip() {
        IpAddr::V4(v4) => IpAddr::V6(v4.to_ipv6_mapped()),
        IpAddr::V6(v6) => IpAddr::V4(v6.to_ipv4_mapped()?),
    };
    Some(SocketAddr::new(ip, address.port()))
}

/// What the kernel answered about one TCP socket.
#[derive(Debug, PartialEq)]
struct DiagSocket {
    state: u8,
    /// Its remote end; `None` when it has none (a listener).
    remote: Option<SocketAddr>,
    uid: u32,
    /// The socket's inode: 0 once no process holds it.
    inode: u32,
}

impl DiagSocket {
    /// Whether a process still holds this socket, so that its uid names
    /// someone. A client that closed its end leaves a socket the kernel
    /// still reports for a while: orphaned (inode 0) or a `TIME_WAIT`
    /// remnant, which the kernel reports as owned by uid 0 — root's uid. A
    /// host running as root would take that for its own user, and serve a
    /// request another user sent just before closing. Only a socket with
    /// an inode, in a state a process's connected socket has, counts.
    fn has_a_live_owner(&self) -> bool {
        self.inode != 0 && LIVE_CLIENT_STATES.contains(&self.state)
    }
}

// From <linux/netlink.h>, <linux/sock_diag.h>, <linux/inet_diag.h>.
const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLM_F_REQUEST: u16 = 1;
const IPPROTO_TCP: u8 = 6;
const AF_INET: u8 = 2;
const AF_INET6: u8 = 10;
/// `INET_DIAG_NOCOOKIE`: match whatever the socket's cookie is.
const NO_COOKIE: [u8; 8] = [0xff; 8];
/// `TCP_LISTEN` in `include/net/tcp_states.h`.
const TCP_LISTEN: u8 = 10;
/// The states of a connected socket a process may still hold, from the same
/// header: `ESTABLISHED`, `FIN_WAIT1` and `FIN_WAIT2` (it shut down its
/// sending side), `CLOSE_WAIT`, `LAST_ACK`, `CLOSING`. Not `TIME_WAIT` or
/// `CLOSE`, which no held socket is in.
const LIVE_CLIENT_STATES: [u8; 6] = [1, 4, 5, 8, 9, 11];

/// `struct nlmsghdr` (16 bytes) + `struct inet_diag_req_v2` (56).
const REQUEST_LEN: usize = 72;
/// `struct nlmsghdr` + `struct inet_diag_msg` (72).
const ANSWER_LEN: usize = 88;

/// Asks the kernel for the TCP socket whose own end is `own` and whose
/// other end is `other`.
fn diag_socket(own: SocketAddr, other: SocketAddr) -> Option<DiagSocket> {
    let mut socket = netlink::sock_diag_socket()?;
    socket.write_all(&request(own, other)).ok()?;
    // Room for an error answer that quotes the request, and then some.
    let mut answer = [0u8; 256];
    let len = socket.read(&mut answer).ok()?;
    parse_answer(&answer[..len], own)
}

/// The request for the socket `own` ↔ `other`, in every TCP state.
fn request(own: SocketAddr, other: SocketAddr) -> [u8; REQUEST_LEN] {
    let mut message = [0u8; REQUEST_LEN];
    // nlmsghdr, host byte order; seq and pid 0 (the kernel answers us).
    message[0..4].copy_from_slice(&(REQUEST_LEN as u32).to_ne_bytes());
    message[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    message[6..8].copy_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    // inet_diag_req_v2: family, protocol, no extensions, padding, states.
    message[16] = family(own);
    message[17] = IPPROTO_TCP;
    message[20..24].copy_from_slice(&u32::MAX.to_ne_bytes());
    // inet_diag_sockid, network byte order: sport, dport, src, dst, the
    // interface (any), the cookie (any).
    message[24..26].copy_from_slice(&own.port().to_be_bytes());
    message[26..28].copy_from_slice(&other.port().to_be_bytes());
    write_ip(&mut message[28..44], own.ip());
    write_ip(&mut message[44..60], other.ip());
    message[64..72].copy_from_slice(&NO_COOKIE);
    message
}

/// The answer, if it describes a socket whose own end is `own`; `None` for
/// an error answer (`NLMSG_ERROR`: no such socket) or anything else.
fn parse_answer(answer: &[u8], own: SocketAddr) -> Option<DiagSocket> {
    let word = |at: usize| u32::from_ne_bytes(answer[at..at + 4].try_into().unwrap());
    if answer.len() < ANSWER_LEN
        || word(0) as usize > answer.len()
        || u16::from_ne_bytes([answer[4], answer[5]]) != SOCK_DIAG_BY_FAMILY
        || answer[16] != family(own)
    {
        return None;
    }
    // inet_diag_msg: family, state, timer, retrans, then the sockid.
    let sockid = &answer[20..68];
    let port = |at: usize| u16::from_be_bytes([sockid[at], sockid[at + 1]]);
    let own_ip = read_ip(&sockid[4..20], own);
    if SocketAddr::new(own_ip, port(0)) != own {
        return None;
    }
    let remote = SocketAddr::new(read_ip(&sockid[20..36], own), port(2));
    Some(DiagSocket {
        state: answer[17],
        remote: (remote.port() != 0).then_some(remote),
        // After the sockid: expires, rqueue, wqueue, uid, inode.
        uid: word(80),
        inode: word(84),
    })
}

fn family(address: SocketAddr) -> u8 {
    match address {
        SocketAddr::V4(_) => AF_INET,
        SocketAddr::V6(_) => AF_INET6,
    }
}

/// An address in a sockid's 16-byte field: IPv4 in its first four bytes.
fn write_ip(field: &mut [u8], ip: IpAddr) {
    match ip {
        IpAddr::V4(v4) => field[..4].copy_from_slice(&v4.octets()),
        IpAddr::V6(v6) => field.copy_from_slice(&v6.octets()),
    }
}

/// The address in a sockid's field, of `like`'s family.
fn read_ip(field: &[u8], like: SocketAddr) -> IpAddr {
    let octets: [u8; 16] = field.try_into().unwrap();
    match like {
        SocketAddr::V4(_) => IpAddr::from([octets[0], octets[1], octets[2], octets[3]]),
        SocketAddr::V6(_) => IpAddr::from(octets),
    }
}

/// Opening the netlink socket: the crate's one `unsafe`.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
mod netlink {
    use std::ffi::c_int;
    use std::fs::File;
    use std::os::fd::{FromRawFd as _, OwnedFd};

    /// Whether `SOCK_NONBLOCK` and `SOCK_CLOEXEC` have the generic values
    /// below on this architecture (alpha, mips, parisc and sparc differ):
    /// elsewhere no socket is opened, and the check is off.
    const GENERIC_FLAGS: bool = cfg!(any(
        target_arch = "x86_64",
        target_arch = "x86",
        target_arch = "aarch64",
        target_arch = "arm",
        target_arch = "riscv64",
        target_arch = "powerpc64",
        target_arch = "s390x",
        target_arch = "loongarch64"
    ));
    const AF_NETLINK: c_int = 16;
    const SOCK_DGRAM: c_int = 2;
    const SOCK_NONBLOCK: c_int = 0o4000;
    const SOCK_CLOEXEC: c_int = 0o2000000;
    const NETLINK_SOCK_DIAG: c_int = 4;

    extern "C" {
        /// socket(2), from the C library std links.
        fn socket(domain: c_int, kind: c_int, protocol: c_int) -> c_int;
    }

    /// A fresh, non-blocking `NETLINK_SOCK_DIAG` socket, closed on drop.
    /// `write` sends to the kernel (an unconnected netlink socket's default
    /// destination) and binds it; `read` takes one answer.
    pub(super) fn sock_diag_socket() -> Option<File> {
        if !GENERIC_FLAGS {
            return None;
        }
        // SAFETY: socket(2) takes plain integers and touches no memory of
        // ours; a failure is a negative return, handled below.
        let fd = unsafe {
            socket(
                AF_NETLINK,
                SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                NETLINK_SOCK_DIAG,
            )
        };
        if fd < 0 {
            return None;
        }
        // SAFETY: `fd` was just returned open by socket(2) and nothing
        // else owns it, so the OwnedFd is its only owner and closes it once.
        Some(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
    }
}

/// No netlink here: the check is off (`listener_uid` finds nothing).
#[cfg(not(target_os = "linux"))]
mod netlink {
    pub(super) fn sock_diag_socket() -> Option<std::fs::File> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_names_one_socket_in_network_byte_order() {
        let message = request(
            "127.0.0.1:8080".parse().unwrap(),
            "127.0.0.2:443".parse().unwrap(),
        );
        assert_eq!(message[16..18], [AF_INET, IPPROTO_TCP]);
        assert_eq!(message[24..28], [0x1f, 0x90, 0x01, 0xbb]);
        assert_eq!(message[28..32], [127, 0, 0, 1]);
        assert_eq!(message[44..48], [127, 0, 0, 2]);
        assert_eq!(message[64..72], NO_COOKIE);
    }

    #[test]
    fn an_answer_for_another_socket_or_an_error_is_none() {
        let own: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let mut answer = [0u8; ANSWER_LEN];
        answer[0..4].copy_from_slice(&(ANSWER_LEN as u32).to_ne_bytes());
        answer[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        answer[16] = AF_INET;
        answer[17] = 1;
        answer[20..22].copy_from_slice(&8080u16.to_be_bytes());
        answer[22..24].copy_from_slice(&443u16.to_be_bytes());
        answer[24..28].copy_from_slice(&[127, 0, 0, 1]);
        answer[40..44].copy_from_slice(&[127, 0, 0, 2]);
        answer[80..84].copy_from_slice(&1000u32.to_ne_bytes());
        answer[84..88].copy_from_slice(&4242u32.to_ne_bytes());
        assert_eq!(
            parse_answer(&answer, own),
            Some(DiagSocket {
                state: 1,
                remote: Some("127.0.0.2:443".parse().unwrap()),
                uid: 1000,
                inode: 4242,
            })
        );
        assert_eq!(
            parse_answer(&answer, "127.0.0.1:8081".parse().unwrap()),
            None
        );
        // NLMSG_ERROR (2): no such socket.
        answer[4..6].copy_from_slice(&2u16.to_ne_bytes());
        assert_eq!(parse_answer(&answer, own), None);
        assert_eq!(parse_answer(&answer[..40], own), None);
    }

    /// Both ends of a real loopback connection, and the listener, are found
    /// with this process's uid; a socket that does not exist is not.
    #[cfg(target_os = "linux")]
    #[test]
    fn finds_both_ends_of_a_loopback_connection() {
        use std::os::unix::fs::MetadataExt as _;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let local = listener.local_addr().unwrap();
        let client = std::net::TcpStream::connect(local).unwrap();
        let (_server, peer) = listener.accept().unwrap();
        assert_eq!(peer, client.local_addr().unwrap());
        let me = std::fs::metadata("/proc/self").unwrap().uid();
        assert_eq!(listener_uid(local), Some(me), "the listener is found");
        assert_eq!(peer_uid(local, peer), Some(me), "the client's end is found");
        let stranger: SocketAddr = "127.0.0.1:1".parse().unwrap();
        assert_eq!(peer_uid(local, stranger), None);
    }

    #[cfg(target_os = "linux")]
    fn my_uid() -> u32 {
        use std::os::unix::fs::MetadataExt as _;
        std::fs::metadata("/proc/self").unwrap().uid()
    }

    /// Every socket a loopback client may open is found: an `AF_INET6`
    /// client of an IPv4 listener (v4-mapped), an `AF_INET` client of a
    /// v4-mapped IPv6 listener, and plain IPv6.
    #[cfg(target_os = "linux")]
    #[test]
    fn finds_dual_stack_clients() {
        let cases = [
            ("127.0.0.1:0", "[::ffff:127.0.0.1]"),
            ("127.0.0.1:0", "127.0.0.1"),
            ("[::ffff:127.0.0.1]:0", "127.0.0.1"),
            ("[::ffff:127.0.0.1]:0", "[::ffff:127.0.0.1]"),
            ("[::1]:0", "[::1]"),
        ];
        for (listen, connect) in cases {
            let Ok(listener) = std::net::TcpListener::bind(listen) else {
                continue; // no IPv6 here
            };
            let port = listener.local_addr().unwrap().port();
            let to: SocketAddr = format!("{connect}:{port}").parse().unwrap();
            let _client = std::net::TcpStream::connect(to).unwrap();
            let (_server, peer) = listener.accept().unwrap();
            let local = listener.local_addr().unwrap();
            assert_eq!(
                peer_uid(local, peer),
                Some(my_uid()),
                "listening on {listen}, connected to {to}"
            );
        }
    }

    /// A client that closed its end is no one: the kernel still reports its
    /// socket for a while (orphaned, then `TIME_WAIT`, with uid 0 and inode
    /// 0), and a root host must not take that for its own user.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_closed_client_socket_has_no_owner() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let local = listener.local_addr().unwrap();
        let client = std::net::TcpStream::connect(local).unwrap();
        let (server, peer) = listener.accept().unwrap();
        assert_eq!(peer_uid(local, peer), Some(my_uid()));
        drop(client);
        // The kernel still reports the closed socket, without an inode.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let remnant = loop {
            match diag_socket(peer, local) {
                Some(socket) if socket.inode == 0 => break socket,
                _ if std::time::Instant::now() > deadline => {
                    panic!("the closed socket was not reported without an inode")
                }
                _ => std::thread::sleep(std::time::Duration::from_millis(1)),
            }
        };
        assert!(!remnant.has_a_live_owner(), "{remnant:?}");
        assert_eq!(peer_uid(local, peer), None);
        drop(server);
    }
}
