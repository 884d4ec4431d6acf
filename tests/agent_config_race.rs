//! `write_mcp_config` against an attacker who owns a directory on the way
//! and swaps it for a symlink, over and over, while the host writes: the
//! config file (bearer and all) must never land in the attacker's
//! directory. The attacker is `perl` running as `nobody` (uid 65534), in a
//! sticky, world-writable directory as `/tmp` is; the host runs as root,
//! which may write anywhere, so only its checks stand in the way.
//!
//! Checked by name, the host lost this race 2 to 21 times in 3,000 tries:
//! `canonicalize` and each directory's metadata followed the symlink to a
//! directory of root's, then the file went into the attacker's. Walked by
//! descriptor with `O_NOFOLLOW` (`src/session/private_file.rs`), what is
//! checked is what is written: 0 wins. Needs root and perl; elsewhere the
//! test says it was skipped, and under `EMBACLE_NO_SKIP` (CI) it fails.
#![cfg(target_os = "linux")]

mod support;

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};

use embacle_tool_host::agent::Runner;
use support::*;

const NOBODY: u32 = 65534;
const TRIES: usize = 3_000;

fn mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// `/tmp/…/shared` (root's, 1777, as `/tmp`), holding the attacker's `a`
/// with a `b` that root may write into; and root's `real/b` (0700), where
/// `a` points while it is a symlink.
struct Stage {
    root: std::path::PathBuf,
}

impl Stage {
    fn new() -> Self {
        let root = std::env::temp_dir().join(format!("embacle-race-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for dir in ["shared", "real/b"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        mode(&root, 0o755);
        mode(&root.join("shared"), 0o1777);
        mode(&root.join("real"), 0o755);
        mode(&root.join("real/b"), 0o700);
        let theirs = root.join("shared/a");
        std::fs::create_dir_all(theirs.join("b")).unwrap();
        mode(&theirs.join("b"), 0o777);
        for dir in [&theirs, &theirs.join("b")] {
            std::os::unix::fs::chown(dir, Some(NOBODY), Some(NOBODY)).unwrap();
        }
        Self { root }
    }

    /// Config files that landed in the attacker's directory (wherever it
    /// was parked when the test stopped it).
    fn stolen(&self) -> usize {
        ["shared/a/b", "shared/parked/b"]
            .iter()
            .flat_map(|dir| std::fs::read_dir(self.root.join(dir)).into_iter().flatten())
            .flatten()
            .filter(|entry| {
                entry
                    .file_name()
                    .to_string_lossy()
                    .starts_with("embacle-mcp-")
            })
            .count()
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swapping_attacker_never_gets_the_config_file() {
    let me = std::fs::metadata("/proc/self").unwrap().uid();
    if me != 0 {
        return skipped(
            "not root: the attacker cannot run as another user, so the race did not run",
        );
    }
    let stage = Stage::new();
    let shared = stage.root.join("shared");
    // Parks its directory, puts a symlink to root's in its place, then
    // puts its directory back, until told to stop.
    let swap = format!(
        "chdir {shared:?} or die; my $real = {real:?};
         until (-e 'stop') {{ rename 'a', 'parked'; symlink $real, 'a'; unlink 'a'; rename 'parked', 'a'; }}",
        real = stage.root.join("real"),
    );
    let attacker = Command::new("perl")
        .args(["-e", &swap])
        .uid(NOBODY)
        .gid(NOBODY)
        .stdin(Stdio::null())
        .spawn();
    let mut attacker = match attacker {
        Ok(child) => child,
        Err(_) => return skipped("perl is not installed: the config-file race did not run"),
    };
    let fx = Fixture::new().await;
    let target = shared.join("a").join("b");
    let (mut written, mut refused) = (0, 0);
    for _ in 0..TRIES {
        match fx.session().write_mcp_config(Runner::ClaudeCode, &target) {
            Ok(path) => {
                written += 1;
                // Legitimately written only where `a` pointed to root's own.
                assert!(
                    path.starts_with(stage.root.join("real")),
                    "{}",
                    path.display()
                );
            }
            Err(_) => refused += 1,
        }
    }
    std::fs::write(shared.join("stop"), b"").unwrap();
    let _ = attacker.wait();
    let stolen = stage.stolen();
    println!("{TRIES} tries: {written} written in root's directory, {refused} refused, {stolen} in the attacker's");
    assert_eq!(stolen, 0, "the attacker got the config file {stolen} times");
    assert!(refused > 0, "the attacker's directory was seen and refused");
}
