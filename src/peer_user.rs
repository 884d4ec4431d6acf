//! Which local user a loopback connection comes from (Linux), so that a
//! bearer read from another user's process list is useless to them.
//!
//! Agents do not keep the bearer to themselves: Claude's ACP adapter passes
//! the MCP config, bearer included, to its CLI on the command line, which
//! every local user can read in the process list. On Linux the kernel
//! lists every TCP socket of the network namespace in `/proc/net/tcp` (and
//! `tcp6`) with the uid that created it; the client's end of a loopback
//! connection is there, its local address being the connection's peer
//! address. The host compares that uid with its own listener's.
//!
//! - **When**: once per connection, on its first request that presents a
//!   live bearer (later requests ride on the connection's authentication),
//!   so connections without a bearer — a flood — cost nothing more.
//! - **Cost**: one read of `/proc/net/tcp` (or `tcp6`), which the kernel
//!   writes on demand: a line per socket of the namespace, so its cost
//!   grows with the machine's socket count (`benches/server_cpu.rs`
//!   measures it per connection). It is read on the request's task, as the
//!   kernel answers from memory without blocking on a device.
//! - **Failing closed**: once the host found its own listener there at
//!   bind, a connection whose peer socket cannot be found is refused too.
//!   Where the listener is not found at bind (no `/proc` mounted, another
//!   platform), the check is off: `ToolHost::checks_peer_user` says which.
//! - **What it does not defend**: a process of the same user can read the
//!   caller's memory, and its agent's command line and environment, anyway;
//!   and `root` may do anything. It stops other users' processes, which
//!   can see the bearer but not take over the user's own.

use std::net::SocketAddr;

/// The uid that owns the listening socket bound at `local`, if the kernel
/// lists it.
pub(crate) fn listener_uid(local: SocketAddr) -> Option<u32> {
    sockets(local).find_map(|socket| {
        (socket.local == hex_address(local) && socket.listening).then_some(socket.uid)
    })
}

/// The uid that owns the client's end of the connection from `peer` to
/// `local`, if the kernel lists it.
pub(crate) fn peer_uid(local: SocketAddr, peer: SocketAddr) -> Option<u32> {
    let (ours, theirs) = (hex_address(local), hex_address(peer));
    sockets(local)
        .find_map(|socket| (socket.local == theirs && socket.remote == ours).then_some(socket.uid))
}

/// One line of `/proc/net/tcp`: the addresses as the kernel writes them,
/// whether it listens, and the owner's uid.
struct Socket {
    local: String,
    remote: String,
    listening: bool,
    uid: u32,
}

/// The sockets of `local`'s address family, as the kernel lists them.
fn sockets(local: SocketAddr) -> impl Iterator<Item = Socket> {
    let table = match local {
        SocketAddr::V4(_) => "/proc/net/tcp",
        SocketAddr::V6(_) => "/proc/net/tcp6",
    };
    let text = if cfg!(target_os = "linux") {
        std::fs::read_to_string(table).unwrap_or_default()
    } else {
        String::new()
    };
    let sockets: Vec<Socket> = text.lines().skip(1).filter_map(parse_line).collect();
    sockets.into_iter()
}

/// `sl local rem st tx:rx tr:when retrnsmt uid …`
fn parse_line(line: &str) -> Option<Socket> {
    let mut fields = line.split_whitespace();
    let _slot = fields.next()?;
    let local = fields.next()?.to_owned();
    let remote = fields.next()?.to_owned();
    let state = fields.next()?;
    let uid = fields.nth(3)?.parse().ok()?;
    Some(Socket {
        local,
        remote,
        // TCP_LISTEN
        listening: state == "0A",
        uid,
    })
}

/// An address as `/proc/net/tcp` writes it: each 32-bit word of the
/// address in the kernel's (little-endian) byte order as 8 upper-case hex
/// digits, a colon, the port as 4.
fn hex_address(address: SocketAddr) -> String {
    let octets: Vec<u8> = match address {
        SocketAddr::V4(v4) => v4.ip().octets().to_vec(),
        SocketAddr::V6(v6) => v6.ip().octets().to_vec(),
    };
    let mut text = String::with_capacity(38);
    for word in octets.chunks_exact(4) {
        let word = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
        text.push_str(&format!("{word:08X}"));
    }
    text.push_str(&format!(":{:04X}", address.port()));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_as_the_kernel_writes_them() {
        assert_eq!(
            hex_address("127.0.0.1:8080".parse().unwrap()),
            "0100007F:1F90"
        );
        assert_eq!(
            hex_address("[::1]:443".parse().unwrap()),
            "00000000000000000000000001000000:01BB"
        );
    }

    #[test]
    fn a_line_of_the_table() {
        let line = "   3: 0100007F:1F90 0100007F:D2A4 01 00000000:00000000 00:00000000 00000000  1000        0 81234 1 0000000000000000 20 4 30 10 -1";
        let socket = parse_line(line).unwrap();
        assert_eq!(
            (socket.local.as_str(), socket.remote.as_str()),
            ("0100007F:1F90", "0100007F:D2A4")
        );
        assert_eq!((socket.listening, socket.uid), (false, 1000));
    }

    /// Both ends of a real loopback connection, and the listener, are found
    /// with this process's uid.
    #[cfg(target_os = "linux")]
    #[test]
    fn finds_both_ends_of_a_loopback_connection() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let local = listener.local_addr().unwrap();
        let client = std::net::TcpStream::connect(local).unwrap();
        let (_server, peer) = listener.accept().unwrap();
        assert_eq!(peer, client.local_addr().unwrap());
        let uid = listener_uid(local).expect("the listener is listed");
        assert_eq!(peer_uid(local, peer), Some(uid));
        let stranger: SocketAddr = "127.0.0.1:1".parse().unwrap();
        assert_eq!(peer_uid(local, stranger), None);
    }
}
