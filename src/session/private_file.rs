//! A file only this process's user can read, in a directory no one else
//! can change: where a session's MCP config, bearer and all, is written
//! for an agent that reads one (`ToolSession::write_mcp_config`).
//!
//! **The rules** (on Unix), as OpenSSH's `StrictModes` has them: the
//! directory belongs to this process's user and no one else may write it;
//! every directory above it belongs to that user or to root, and no one
//! else may write it unless it is sticky. Another user who could change
//! any of them could rename the directory away and put one of theirs, with
//! a file of theirs, at the path the agent is given.
//!
//! **What is checked is what is written.** On Linux the directory is
//! opened by walking its canonical path from `/`, one component at a time,
//! each opened relative to the directory opened before it (through
//! `/proc/self/fd`, which names that very directory, not a path to it) with
//! `O_NOFOLLOW`, and checked from its descriptor (`fstat`); only then is
//! the file created, in the last one, `O_CREAT | O_EXCL | O_NOFOLLOW`,
//! mode 0600, so it never exists, even for a moment, in a directory that
//! fails the rules. A component swapped for a symlink while this
//! runs fails the walk (`ELOOP`) instead of redirecting it, and a swapped
//! directory is checked as the one actually opened, so another user who
//! owns a directory on the way never wins a race: they get a refusal
//! (`tests/agent_config_race.rs` races one, as another uid, 0 wins). On
//! the architectures whose `O_NOFOLLOW` this file knows (x86, x86-64,
//! ARM, AArch64, PowerPC, RISC-V, s390x, LoongArch).
//!
//! **Elsewhere** (other Unix: macOS, the BSDs; an architecture above does
//! not list), the same rules are checked by name: the path canonicalized,
//! then each directory's metadata. That leaves a window between the checks
//! and the write, which a user who owns a directory above could race; the
//! file is still created new, mode 0600, never through a symlink. On
//! Windows the file takes the directory's access rules.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Writes `bytes` to a new file `name` in `dir`, mode 0600 on Unix, after
/// the checks above; returns its path, canonical (it names no symlink).
/// On any failure after the file was created, the file is removed; a
/// failure to create it leaves the path alone (it is not ours).
pub(crate) fn write(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<PathBuf> {
    let dir = fs::canonicalize(dir)?;
    let path = dir.join(name);
    #[cfg(target_os = "linux")]
    if let Some(nofollow) = walk::O_NOFOLLOW {
        walk::write(&dir, name, bytes, nofollow)?;
        return Ok(path);
    }
    let mut file = new_file(0).open(&path)?;
    let written = by_name::check_directory(&dir, &file)
        .and_then(|()| file.write_all(bytes))
        .and_then(|()| file.sync_all());
    if written.is_err() {
        let _ = fs::remove_file(&path);
    }
    written.map(|()| path)
}

/// Options that create a file new, for writing, mode 0600 on Unix, with
/// `flags` added (Unix).
fn new_file(flags: i32) -> fs::OpenOptions {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600).custom_flags(flags);
    }
    #[cfg(not(unix))]
    let _ = flags;
    options
}

/// Why `dir` may not hold the file.
#[cfg(unix)]
fn not_private(dir: &Path, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "{} may not hold a file with a bearer: {why}, so another user could replace the file before the agent reads it; use a private directory (mode 0700), such as $XDG_RUNTIME_DIR",
            dir.display()
        ),
    )
}

/// The rules, for one directory's owner and mode: `None` when `dir` (the
/// directory itself when `above` is `None`, else a directory `above` it)
/// passes, else why not.
#[cfg(unix)]
fn breaks_rules(uid: u32, owner: u32, mode: u32, above: Option<&Path>) -> Option<String> {
    let mode = mode & 0o7777;
    match above {
        None if owner != uid => Some(format!(
            "it belongs to uid {owner}, not to this process's uid {uid}"
        )),
        None if mode & 0o022 != 0 => Some(format!("others may write to it (mode {mode:o})")),
        None => None,
        Some(dir) if owner != uid && owner != 0 => Some(format!(
            "{} above it belongs to uid {owner}",
            dir.display()
        )),
        Some(dir) if mode & 0o022 != 0 && mode & 0o1000 == 0 => Some(format!(
            "others may write to {} above it (mode {mode:o}, not sticky), so they may rename it away",
            dir.display()
        )),
        Some(_) => None,
    }
}

/// The walk by descriptor (Linux).
#[cfg(target_os = "linux")]
mod walk {
    use std::fs::{self, File, Metadata};
    use std::io::{self, Write};
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::MetadataExt;
    use std::path::{Component, Path, PathBuf};

    use super::{breaks_rules, new_file, not_private};

    /// `O_NOFOLLOW` on this architecture, where this file knows it:
    /// 0o400000 in the generic layout, 0o100000 on ARM, AArch64 and
    /// PowerPC (each kernel's `asm/fcntl.h`).
    pub(super) const O_NOFOLLOW: Option<i32> = if cfg!(any(
        target_arch = "x86_64",
        target_arch = "x86",
        target_arch = "riscv64",
        target_arch = "s390x",
        target_arch = "loongarch64"
    )) {
        Some(0o400_000)
    } else if cfg!(any(
        target_arch = "aarch64",
        target_arch = "arm",
        target_arch = "powerpc",
        target_arch = "powerpc64"
    )) {
        Some(0o100_000)
    } else {
        None
    };

    /// `name` in the directory open as `dir`, as a path the kernel
    /// resolves from that directory itself.
    fn within(dir: &File, name: &std::ffi::OsStr) -> PathBuf {
        Path::new("/proc/self/fd")
            .join(dir.as_raw_fd().to_string())
            .join(name)
    }

    /// Opens `dir` (canonical) from `/` by descriptor, each component
    /// without following a symlink; returns the last directory and each
    /// one's path and metadata, from `/` down.
    fn open(dir: &Path, nofollow: i32) -> io::Result<(File, Vec<(PathBuf, Metadata)>)> {
        use std::os::unix::fs::OpenOptionsExt;
        let mut at = File::open("/")?;
        let mut seen = vec![(PathBuf::from("/"), at.metadata()?)];
        for component in dir.components().skip(1) {
            let Component::Normal(name) = component else {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "not a canonical path",
                ));
            };
            let next = fs::OpenOptions::new()
                .read(true)
                .custom_flags(nofollow)
                .open(within(&at, name))?;
            let meta = next.metadata()?;
            if !meta.is_dir() {
                return Err(io::Error::new(
                    io::ErrorKind::NotADirectory,
                    "not a directory",
                ));
            }
            let path = seen[seen.len() - 1].0.join(name);
            seen.push((path, meta));
            at = next;
        }
        Ok((at, seen))
    }

    /// The uid files this process creates are given: its file-system uid,
    /// the fourth of `/proc/self/status`'s `Uid:` line.
    fn file_uid() -> io::Result<u32> {
        let status = fs::read_to_string("/proc/self/status")?;
        let uid = status
            .lines()
            .find_map(|line| line.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().nth(3)?.parse().ok());
        uid.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "no Uid line in /proc/self/status",
            )
        })
    }

    /// The walk, its directories checked against the rules (the directory
    /// itself first, then those above it, nearest first), and only then
    /// the file, created in the last directory opened.
    pub(super) fn write(dir: &Path, name: &str, bytes: &[u8], nofollow: i32) -> io::Result<()> {
        let uid = file_uid()?;
        let (at, seen) = open(dir, nofollow)?;
        let (last, above) = seen.split_last().expect("the walk saw / at least");
        let why = std::iter::once(breaks_rules(uid, last.1.uid(), last.1.mode(), None))
            .chain(
                above
                    .iter()
                    .rev()
                    .map(|(path, meta)| breaks_rules(uid, meta.uid(), meta.mode(), Some(path))),
            )
            .flatten()
            .next();
        if let Some(why) = why {
            return Err(not_private(dir, &why));
        }
        let path = within(&at, name.as_ref());
        let mut file = new_file(nofollow).open(&path)?;
        let written = file.write_all(bytes).and_then(|()| file.sync_all());
        if written.is_err() {
            let _ = fs::remove_file(&path);
        }
        written
    }
}

/// The rules checked by name, where the walk is not made.
mod by_name {
    use std::fs;
    use std::path::Path;

    /// `dir` (canonical) and every directory above it, by name; the new
    /// file, still empty, says who this process's user is.
    #[cfg(unix)]
    pub(super) fn check_directory(dir: &Path, file: &fs::File) -> std::io::Result<()> {
        use std::os::unix::fs::MetadataExt;
        let uid = file.metadata()?.uid();
        let meta = fs::metadata(dir)?;
        if let Some(why) = super::breaks_rules(uid, meta.uid(), meta.mode(), None) {
            return Err(super::not_private(dir, &why));
        }
        for ancestor in dir.ancestors().skip(1) {
            let meta = fs::metadata(ancestor)?;
            if let Some(why) = super::breaks_rules(uid, meta.uid(), meta.mode(), Some(ancestor)) {
                return Err(super::not_private(dir, &why));
            }
        }
        Ok(())
    }

    #[cfg(not(unix))]
    pub(super) fn check_directory(_: &Path, _: &fs::File) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn private_dir(what: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("embacle-private-{what}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
        }
        dir
    }

    /// An existing file, or a symlink planted at the name, is refused and
    /// left as it was; a fresh name is written, owner-only.
    #[test]
    fn never_over_an_existing_path() {
        let dir = private_dir("existing");
        fs::write(dir.join("existing.json"), b"theirs").unwrap();
        let err = write(&dir, "existing.json", b"ours").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(dir.join("existing.json")).unwrap(), b"theirs");
        #[cfg(unix)]
        {
            let target = dir.join("target.json");
            std::os::unix::fs::symlink(&target, dir.join("link.json")).unwrap();
            assert!(write(&dir, "link.json", b"ours").is_err());
            assert!(!target.exists(), "nothing written through the link");
        }
        let path = write(&dir, "fresh.json", b"ours").unwrap();
        assert_eq!(path, fs::canonicalize(&dir).unwrap().join("fresh.json"));
        assert_eq!(fs::read(&path).unwrap(), b"ours");
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        }
        fs::remove_dir_all(&dir).unwrap();
    }

    /// The walk's `O_NOFOLLOW` is this kernel's: a symlink to a directory
    /// is refused with `ELOOP` (40), where following it would have opened
    /// the directory.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_walk_never_follows_a_symlink() {
        let Some(nofollow) = walk::O_NOFOLLOW else {
            return;
        };
        use std::os::unix::fs::OpenOptionsExt;
        let dir = private_dir("nofollow");
        fs::create_dir(dir.join("real")).unwrap();
        std::os::unix::fs::symlink(dir.join("real"), dir.join("link")).unwrap();
        let open = |name: &str| {
            fs::OpenOptions::new()
                .read(true)
                .custom_flags(nofollow)
                .open(dir.join(name))
        };
        assert!(open("real").is_ok());
        assert_eq!(open("link").unwrap_err().raw_os_error(), Some(40));
        let through = dir.join("link").join("sub");
        fs::create_dir(dir.join("real").join("sub")).unwrap();
        let err = write(&through, "x.json", b"ours").map(|_| ());
        // Canonicalized first, the path names no link: written in real/sub.
        assert!(err.is_ok(), "{err:?}");
        assert!(dir.join("real").join("sub").join("x.json").exists());
        fs::remove_dir_all(&dir).unwrap();
    }
}
