//! Whether the process's open-file limit can hold `max_connections`.
//!
//! Every connection is a file descriptor of the embedding process. When
//! the process runs out, `accept` fails, the accept loop backs off, and
//! the agent's new connections wait in the kernel's backlog behind a
//! flood's: with a soft limit of 1,024 and a held flood, legitimate calls
//! were delayed by 2.3 s and some timed out. Admission (`admission.rs`)
//! can only shed a pending connection for a newcomer it has accepted, so
//! the slots must fit in the descriptors the process has left.
//!
//! So `ToolHost::bind` refuses a config whose `max_connections`, plus
//! [`HEADROOM`], does not fit in the soft `RLIMIT_NOFILE` less the
//! descriptors already open, and says by how much. It reads both from
//! `/proc/self` (Linux; elsewhere there is no check): no `unsafe`, no
//! `libc`.

/// Descriptors kept free besides `max_connections`: the listener, the
/// connection accepted in order to shed an older one, the peer lookup's
/// netlink socket, and room for what the embedding process opens next
/// (an agent's three pipes per process, files, its own sockets).
const HEADROOM: u64 = 64;

/// The process's soft open-file limit and the descriptors open now, when
/// the platform says (`None`: unlimited, or unknown). Elsewhere than Linux
/// nothing says: no check (`check` passes every config). Linux's tests take
/// that path too (`check_against`), so it is tested there.
fn descriptors() -> Option<(u64, u64)> {
    if cfg!(target_os = "linux") {
        let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
        let open = std::fs::read_dir("/proc/self/fd").ok()?.count() as u64;
        return Some((soft_limit(&limits)?, open));
    }
    None
}

/// The soft limit on the `Max open files` line of `/proc/self/limits`;
/// `None` for `unlimited` or a line not found.
fn soft_limit(limits: &str) -> Option<u64> {
    let line = limits
        .lines()
        .find_map(|l| l.strip_prefix("Max open files"))?;
    line.split_whitespace().next()?.parse().ok()
}

/// Refuses `max_connections` when the descriptors left cannot hold it;
/// the message gives the figures and both ways out.
pub(crate) fn check(max_connections: usize) -> Result<(), String> {
    check_against(descriptors(), max_connections)
}

/// [`check`] against `descriptors` as the platform gave them.
fn check_against(descriptors: Option<(u64, u64)>, max_connections: usize) -> Result<(), String> {
    let Some((soft, open)) = descriptors else {
        return Ok(());
    };
    let needed = max_connections as u64 + HEADROOM;
    let free = soft.saturating_sub(open);
    if needed <= free {
        return Ok(());
    }
    Err(format!(
        "max_connections is {max_connections}, but the process may open {soft} files (RLIMIT_NOFILE, soft) and has {open} open: the host needs max_connections + {HEADROOM} free, {needed}, and {free} are; raise the limit (`ulimit -n`, or setrlimit) to at least {} or lower max_connections to at most {}",
        open + needed,
        free.saturating_sub(HEADROOM),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_soft_limit() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max processes             127431               127431               processes \n\
                      Max open files            1024                 524288               files     \n";
        assert_eq!(soft_limit(limits), Some(1024));
        let unlimited =
            "Max open files            unlimited            unlimited            files     \n";
        assert_eq!(soft_limit(unlimited), None);
        assert_eq!(soft_limit(""), None);
    }

    /// Where the platform says nothing (macOS, Windows, the BSDs, or an
    /// unlimited soft limit), every config passes; where it does, the
    /// figures decide, to the descriptor.
    #[test]
    fn the_check_without_figures_passes_and_with_them_counts() {
        assert!(check_against(None, usize::MAX).is_ok());
        assert!(check_against(Some((1024, 60)), 1024 - 60 - HEADROOM as usize).is_ok());
        let err = check_against(Some((1024, 60)), 1024 - 60 - HEADROOM as usize + 1).unwrap_err();
        assert!(
            err.contains("may open 1024 files") && err.contains("has 60 open"),
            "{err}"
        );
    }

    /// On Linux, the real figures: a config within them passes, one past
    /// them is refused with the figures.
    #[cfg(target_os = "linux")]
    #[test]
    fn refuses_what_the_limit_cannot_hold() {
        let (soft, open) = descriptors().expect("Linux has /proc/self/limits");
        assert!(open > 0 && soft >= open);
        assert!(check(1).is_ok() || soft < open + HEADROOM + 1);
        let err = check(soft as usize).unwrap_err();
        assert!(err.contains(&format!("may open {soft} files")), "{err}");
    }
}
