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
//! `O_NOFOLLOW | O_DIRECTORY` (so a FIFO or a device on the path fails at
//! once instead of waiting for a writer), and checked from its descriptor
//! (`fstat`); only then is the file created, in the last one, `O_CREAT |
//! O_EXCL | O_NOFOLLOW`, mode 0600, so it never exists, even for a moment,
//! in a directory that fails the rules. A component swapped for a symlink while this
//! runs fails the walk (`ELOOP`) instead of redirecting it, and a swapped
//! directory is checked as the one actually opened, so another user who
//! owns a directory on the way never wins a race: they get a refusal
//! (`tests/agent_config_race.rs` races one, as another uid, 0 wins). On
//! the architectures whose `O_NOFOLLOW` and `O_DIRECTORY` this file knows
//! (x86, x86-64, ARM, AArch64, PowerPC, RISC-V, s390x, LoongArch). Without
//! `/proc` the walk cannot be made, and the error says so.
//!
//! **Elsewhere** (other Unix: macOS, the BSDs; an architecture above does
//! not list), the same rules are checked by name: the path canonicalized,
//! then each directory's metadata. That leaves a window between the checks
//! and the write, which a user who owns a directory above could race; the
//! file is still created new, mode 0600, never through a symlink, and no
//! open waits on a FIFO (only the file itself is opened, `O_CREAT |
//! O_EXCL`). Linux's tests take this path too (`write_by_name`). On
//! Windows the file is created with a protected access list that lets its
//! owner alone open it (`owner_only_file.rs`; the directory's own rules
//! are not checked), and the path returned is the plain one (`C:\…`), not
//! `canonicalize`'s verbatim `\\?\C:\…`, where both name the same file.

use std::fs;
use std::io::{self, Write};
#[cfg(unix)]
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Writes `bytes` to a new file `name` in `dir`, mode 0600 on Unix, after
/// the checks above; returns its path, canonical (it names no symlink).
/// On any failure after the file was created, the file is removed; a
/// failure to create it leaves the path alone (it is not ours).
pub(crate) fn write(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<PathBuf> {
    let dir = canonical(dir)?;
    #[cfg(target_os = "linux")]
    if let Some(flags) = walk::FLAGS {
        walk::write(&dir, name, bytes, flags)?;
        return Ok(dir.join(name));
    }
    write_by_name(&dir, name, bytes)
}

/// `dir` canonical: no symlink, no `.` or `..`; on Windows in its plain
/// form where that names the same directory ([`plain_form`]).
fn canonical(dir: &Path) -> io::Result<PathBuf> {
    let dir = fs::canonicalize(dir)?;
    #[cfg(windows)]
    let dir = plain_form(&dir).map_or(dir, PathBuf::from);
    Ok(dir)
}

/// The write where the walk is not made: `dir` (canonical) checked by
/// name, then the file created in it. Linux's tests take this path too, so
/// the one macOS and the BSDs take is tested, not only compiled.
fn write_by_name(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<PathBuf> {
    let path = dir.join(name);
    let mut file = create_new(&path)?;
    let written = check_by_name(dir, &file)
        .and_then(|()| file.write_all(bytes))
        .and_then(|()| file.sync_all());
    if written.is_err() {
        let _ = fs::remove_file(&path);
    }
    written.map(|()| path)
}

/// The plain form of a verbatim Windows path, as the caller would have
/// written it: `\\?\C:\dir` as `C:\dir`, `\\?\UNC\server\share\dir` as
/// `\\server\share\dir`. `canonicalize` returns the verbatim form on
/// Windows, which the caller never gave (so the path returned would not
/// start with the directory they passed) and which programs handed the
/// path may not take. `None` (keep it verbatim) where the plain form could
/// name another file: 260 characters or more (`MAX_PATH`), or a component
/// Win32 would rewrite or read as a device (one ending in a dot or a space,
/// holding a character Win32 forbids, or named `CON`, `NUL`, `COM1` …).
#[cfg(any(windows, test))]
fn plain_form(path: &Path) -> Option<String> {
    let path = path.to_str()?;
    let rest = path.strip_prefix(r"\\?\")?;
    let (plain, components) = match rest.strip_prefix(r"UNC\") {
        Some(unc) => (format!(r"\\{unc}"), unc),
        None => {
            let bytes = rest.as_bytes();
            let drive =
                bytes.len() >= 3 && bytes[0].is_ascii_alphabetic() && &bytes[1..3] == b":\\";
            (drive.then(|| rest.to_owned())?, &rest[3..])
        }
    };
    let reserved = |stem: &str| {
        let stem = stem.to_ascii_uppercase();
        ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"].contains(&stem.as_str())
            || (stem.len() == 4
                && (stem.starts_with("COM") || stem.starts_with("LPT"))
                && stem.as_bytes()[3].is_ascii_digit())
    };
    let rewritten = |c: &str| {
        c.is_empty()
            || c.ends_with(['.', ' '])
            || c.contains(|ch: char| ch < ' ' || "/:*?\"<>|".contains(ch))
            || reserved(c.split('.').next().unwrap_or(c).trim_end())
    };
    let components = components.trim_end_matches('\\');
    (plain.len() < 260 && (components.is_empty() || !components.split('\\').any(rewritten)))
        .then_some(plain)
}

/// Creates `path` new, for writing: mode 0600 on Unix; on Windows with a
/// protected access list that lets its owner alone open it
/// (`owner_only_file.rs`).
fn create_new(path: &Path) -> io::Result<fs::File> {
    #[cfg(windows)]
    return super::owner_only_file::create(path);
    #[cfg(not(windows))]
    return new_file(0).open(path);
}

/// Options that create a file new, for writing, mode 0600 on Unix, with
/// `flags` added (Unix). Not on Windows, where `create_new` sets the
/// access list itself.
#[cfg(not(windows))]
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

/// The rules, checked on `dir` (canonical) and every directory above it,
/// nearest first, each one's metadata from `metas` in that order; the
/// error says why `dir` may not hold the file. (`dyn`: one copy of it
/// serves the walk and the check by name.)
#[cfg(unix)]
fn check_rules(
    dir: &Path,
    uid: u32,
    metas: &mut dyn Iterator<Item = io::Result<fs::Metadata>>,
) -> io::Result<()> {
    for (at, meta) in dir.ancestors().zip(metas) {
        let meta = meta?;
        let (owner, mode) = (meta.uid(), meta.mode() & 0o7777);
        // The directory itself, then each one above it.
        let why = match at == dir {
            true if owner != uid => {
                format!("it belongs to uid {owner}, not to this process's uid {uid}")
            }
            true if mode & 0o022 != 0 => format!("others may write to it (mode {mode:o})"),
            false if owner != uid && owner != 0 => {
                format!("{} above it belongs to uid {owner}", at.display())
            }
            false if mode & 0o022 != 0 && mode & 0o1000 == 0 => format!(
                "others may write to {} above it (mode {mode:o}, not sticky), so they may rename it away",
                at.display()
            ),
            _ => continue,
        };
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} may not hold a file with a bearer: {why}, so another user could replace the file before the agent reads it; use a private directory (mode 0700), such as $XDG_RUNTIME_DIR",
                dir.display()
            ),
        ));
    }
    Ok(())
}

/// The walk by descriptor (Linux).
#[cfg(target_os = "linux")]
mod walk {
    use std::fs::{self, File, Metadata};
    use std::io::{self, Write};
    use std::os::fd::AsRawFd;
    use std::path::{Component, Path, PathBuf};

    use super::{check_rules, new_file};

    /// `O_NOFOLLOW` and `O_DIRECTORY` on this architecture, where this
    /// file knows them: 0o400000 and 0o200000 in the generic layout,
    /// 0o100000 and 0o40000 on ARM, AArch64 and PowerPC (each kernel's
    /// `asm/fcntl.h`). The walk adds them: never through a symlink, and,
    /// for a directory on the way, only a directory. Without
    /// `O_DIRECTORY`, a FIFO named by the path would be opened for reading,
    /// and the open would wait for a writer: for ever, or until another
    /// user chose.
    pub(super) const FLAGS: Option<(i32, i32)> = match std::env::consts::ARCH.as_bytes() {
        b"x86_64" | b"x86" | b"riscv64" | b"s390x" | b"loongarch64" => Some((0o400_000, 0o200_000)),
        b"aarch64" | b"arm" | b"powerpc" | b"powerpc64" => Some((0o100_000, 0o40_000)),
        _ => None,
    };

    /// `name` in the directory open as `dir`, as a path the kernel
    /// resolves from that directory itself.
    fn within(dir: &File, name: &std::ffi::OsStr) -> PathBuf {
        Path::new("/proc/self/fd")
            .join(dir.as_raw_fd().to_string())
            .join(name)
    }

    /// Opens `dir` (canonical) from `/` by descriptor, each component
    /// with `flags`: without following a symlink and only if it is a
    /// directory (anything else fails at once, `ENOTDIR`, never waits);
    /// returns the last directory and each one's metadata, from `/` down.
    fn open(dir: &Path, flags: i32) -> io::Result<(File, Vec<Metadata>)> {
        use std::os::unix::fs::OpenOptionsExt;
        let mut at = File::open("/")?;
        let mut seen = vec![at.metadata()?];
        for component in dir.components().skip(1) {
            let Component::Normal(name) = component else {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "not a canonical path",
                ));
            };
            let next = fs::OpenOptions::new()
                .read(true)
                .custom_flags(flags)
                .open(within(&at, name))?;
            let meta = next.metadata()?;
            if !meta.is_dir() {
                return Err(io::Error::new(
                    io::ErrorKind::NotADirectory,
                    "not a directory",
                ));
            }
            seen.push(meta);
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
    pub(super) fn write(
        dir: &Path,
        name: &str,
        bytes: &[u8],
        (nofollow, directory): (i32, i32),
    ) -> io::Result<()> {
        if !Path::new("/proc/self/fd").is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "/proc is not mounted (no /proc/self/fd): on Linux the config file's directory is walked by descriptor through it; mount /proc",
            ));
        }
        let uid = file_uid()?;
        let (at, seen) = open(dir, nofollow | directory)?;
        check_rules(dir, uid, &mut seen.into_iter().rev().map(Ok))?;
        let path = within(&at, name.as_ref());
        let mut file = new_file(nofollow).open(&path)?;
        let written = file.write_all(bytes).and_then(|()| file.sync_all());
        if written.is_err() {
            let _ = fs::remove_file(&path);
        }
        written
    }
}

/// The rules checked by name, where the walk is not made: `dir`
/// (canonical) and every directory above it; the new file, still empty,
/// says who this process's user is.
#[cfg(unix)]
fn check_by_name(dir: &Path, file: &fs::File) -> io::Result<()> {
    let uid = file.metadata()?.uid();
    check_rules(dir, uid, &mut dir.ancestors().map(fs::metadata))
}

#[cfg(not(unix))]
fn check_by_name(_: &Path, _: &fs::File) -> io::Result<()> {
    Ok(())
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

    /// Both ways to write: the one this platform takes, and the checks by
    /// name that macOS and the BSDs take (on Linux too, so they are tested
    /// where CI runs). Each takes the directory canonical.
    type Writer = fn(&Path, &str, &[u8]) -> io::Result<PathBuf>;
    const WRITERS: [(&str, Writer); 2] = [
        ("this platform's", write),
        ("by name", |dir, name, bytes| {
            write_by_name(&canonical(dir)?, name, bytes)
        }),
    ];

    /// An existing file, or a symlink planted at the name, is refused and
    /// left as it was; a fresh name is written, owner-only: both ways.
    #[test]
    fn never_over_an_existing_path() {
        for (at, (how, write)) in WRITERS.into_iter().enumerate() {
            never_over_an_existing_path_by(at, how, write);
        }
    }

    fn never_over_an_existing_path_by(at: usize, how: &str, write: Writer) {
        let dir = private_dir(&format!("existing-{at}"));
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
        let canonical = fs::canonicalize(&dir).unwrap().join("fresh.json");
        assert_eq!(fs::canonicalize(&path).unwrap(), canonical, "{how}");
        assert!(
            !path.to_string_lossy().starts_with(r"\\?\"),
            "{how}: {path:?}"
        );
        assert_eq!(fs::read(&path).unwrap(), b"ours");
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        }
        fs::remove_dir_all(&dir).unwrap();
    }

    /// A verbatim path is given back plain where the plain form names the
    /// same file, and kept where it may not.
    #[test]
    fn verbatim_paths_are_given_back_plain_where_that_is_the_same_path() {
        let plain = |p: &str| plain_form(Path::new(p));
        assert_eq!(
            plain(r"\\?\C:\Users\me\run").as_deref(),
            Some(r"C:\Users\me\run")
        );
        assert_eq!(plain(r"\\?\Z:\").as_deref(), Some(r"Z:\"));
        assert_eq!(
            plain(r"\\?\UNC\host\share\dir").as_deref(),
            Some(r"\\host\share\dir")
        );
        for kept in [
            r"C:\Users\me",
            r"\\?\GLOBALROOT\Device\x",
            r"\\?\C:\dir.",
            r"\\?\C:\dir \x",
            r"\\?\C:\a\nul",
            r"\\?\C:\a\Com1.txt",
            r"\\?\C:\a\b:c",
            r"\\?\C:\a\\b",
        ] {
            assert_eq!(plain(kept), None, "{kept}");
        }
        // MAX_PATH (260) counts the closing NUL: 259 characters at most.
        let long = format!(r"\\?\C:\{}", "d".repeat(257));
        assert_eq!(plain(&long), None);
        let short = format!(r"\\?\C:\{}", "d".repeat(256));
        assert_eq!(plain(&short).map(|p| p.len()), Some(259));
        assert_eq!(plain(r"\\?\C:\a\COM10").as_deref(), Some(r"C:\a\COM10"));
    }

    /// The rules, both ways: a directory others may write is refused, and
    /// one under a parent others may write (not sticky); a private one
    /// under a sticky parent is used.
    #[cfg(unix)]
    #[test]
    fn the_rules_hold_both_ways() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |dir: &Path, mode: u32| {
            fs::set_permissions(dir, fs::Permissions::from_mode(mode)).unwrap();
        };
        for (at, (how, write)) in WRITERS.into_iter().enumerate() {
            let root = private_dir(&format!("rules-{at}"));
            let open = root.join("open");
            fs::create_dir(&open).unwrap();
            mode(&open, 0o777);
            let err = write(&open, "x.json", b"ours").unwrap_err();
            assert!(
                err.to_string().contains("others may write to it"),
                "{how}: {err}"
            );
            let private = open.join("private");
            fs::create_dir(&private).unwrap();
            mode(&private, 0o700);
            let err = write(&private, "x.json", b"ours").unwrap_err();
            assert!(err.to_string().contains("above it"), "{how}: {err}");
            assert_eq!(fs::read_dir(&private).unwrap().count(), 0, "{how}");
            mode(&open, 0o1777);
            assert!(write(&private, "x.json", b"ours").is_ok(), "{how}");
            fs::remove_dir_all(&root).unwrap();
        }
    }

    /// A path that names a FIFO (directly or through a symlink) or a
    /// device, not a directory, is refused at once, both ways: opening a
    /// FIFO for reading would wait for a writer, and hold the caller's
    /// thread until another user chose to release it.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_fifo_or_a_device_is_refused_at_once() {
        let dir = private_dir("fifo");
        let fifo = dir.join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo runs");
        std::os::unix::fs::symlink(&fifo, dir.join("link")).unwrap();
        for (how, write) in WRITERS {
            for not_a_dir in [fifo.clone(), dir.join("link"), PathBuf::from("/dev/null")] {
                let (sent, answer) = std::sync::mpsc::channel();
                let path = not_a_dir.clone();
                std::thread::spawn(move || {
                    let _ = sent.send(write(&path, "x.json", b"ours").map(|_| ()));
                });
                let result = answer
                    .recv_timeout(std::time::Duration::from_secs(5))
                    .unwrap_or_else(|_| panic!("{how}: blocked on {}", not_a_dir.display()));
                let err = result.expect_err("not a directory");
                assert_eq!(err.raw_os_error(), Some(20), "{how}: ENOTDIR: {err}");
            }
        }
        fs::remove_dir_all(&dir).unwrap();
    }

    /// The walk's `O_NOFOLLOW` is this kernel's: a symlink to a directory
    /// is refused with `ELOOP` (40), where following it would have opened
    /// the directory.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_walk_never_follows_a_symlink() {
        let Some((nofollow, _)) = walk::FLAGS else {
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
