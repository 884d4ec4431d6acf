//! Which tests need a platform, and why: every test compiled only on Unix
//! or only on Linux (a `#![cfg]` on its file, or a `#[cfg]` on the test)
//! is listed in [`NEEDS`] with the reason, and this binary, built
//! everywhere, says on the terminal which of them did not run here. On
//! macOS the Linux-only ones are listed; on Windows the Unix-only ones
//! too; on Linux none.
//!
//! The list is checked against the sources: a gated test whose file has
//! no reason here, a reason for a file with no gated test, or a gate other
//! than these two fails the test. Tests that need a program (Node.js,
//! Python, a JDK, an agent) or a root user compile everywhere and skip at
//! run time instead, each saying what is missing.

mod support;

use std::path::Path;

use support::skipped;

/// A platform a test may need.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Platform {
    /// `#[cfg(unix)]`: Linux, macOS, the BSDs.
    Unix,
    /// `#[cfg(target_os = "linux")]`.
    Linux,
}

impl Platform {
    /// The gate as written in the source, `cfg(…)`'s inside.
    fn from_cfg(cfg: &str) -> Option<Self> {
        match cfg {
            "unix" => Some(Self::Unix),
            "target_os = \"linux\"" => Some(Self::Linux),
            _ => None,
        }
    }

    /// Whether this build is on it.
    fn is_here(self) -> bool {
        match self {
            Self::Unix => cfg!(unix),
            Self::Linux => cfg!(target_os = "linux"),
        }
    }
}

/// Each test file with gated tests, and why they need their platform.
const NEEDS: &[(&str, &str)] = &[
    ("agent_claude", "the turn's processes are searched for the bearer in /proc, and the agents start through their Unix launchers (node_modules/.bin, a venv's bin/; Kilo's package is built for Linux)"),
    ("agent_codex", "the turn's processes are searched for the bearer in /proc, and the agents start through their Unix launchers (node_modules/.bin, a venv's bin/; Kilo's package is built for Linux)"),
    ("agent_config", "a private directory is told by its Unix mode and owner"),
    ("agent_config_race", "the race is run as another user (setpriv, chown) against the descriptor walk, which is Linux's"),
    ("agent_copilot", "the turn's processes are searched for the bearer in /proc, and the agents start through their Unix launchers (node_modules/.bin, a venv's bin/; Kilo's package is built for Linux)"),
    ("agent_fast_agent", "the turn's processes are searched for the bearer in /proc, and the agents start through their Unix launchers (node_modules/.bin, a venv's bin/; Kilo's package is built for Linux)"),
    ("agent_gemini", "the turn's processes are searched for the bearer in /proc, and the agents start through their Unix launchers (node_modules/.bin, a venv's bin/; Kilo's package is built for Linux)"),
    ("agent_kilo", "the turn's processes are searched for the bearer in /proc, and the agents start through their Unix launchers (node_modules/.bin, a venv's bin/; Kilo's package is built for Linux)"),
    ("agent_vibe", "the turn's processes are searched for the bearer in /proc, and the agents start through their Unix launchers (node_modules/.bin, a venv's bin/; Kilo's package is built for Linux)"),
    ("config", "the open-file limit is read from /proc/self/limits"),
    ("example_host_tools", "the example is stopped with SIGTERM"),
    ("mcp_python_client", "the example is stopped with SIGTERM, and the venv's layout is Unix's"),
    ("mcp_sdk_client", "the example is stopped with SIGTERM"),
    ("memory", "the RSS is read from /proc/self/status"),
    ("peer_user", "the peer-user check asks Linux's sock_diag, and the other user is started with setpriv"),
    ("streams", "the host's sockets are counted in /proc/self/net/tcp"),
];

/// One gated test: its file's stem, its name, the platform it needs.
#[derive(Debug)]
struct Gated {
    file: String,
    test: String,
    needs: Platform,
}

/// The gate in `#[cfg(…)]` or `#![cfg(…)]` on this line, if any.
fn gate(line: &str) -> Option<&str> {
    let line = line.trim();
    let inner = line
        .strip_prefix("#![cfg(")
        .or_else(|| line.strip_prefix("#[cfg("))?;
    Some(inner.split_once(")]")?.0)
}

/// Every gated test in `source` (the file `stem`); `Err` for a gate that
/// is neither Unix nor Linux.
fn gated_tests(stem: &str, source: &str) -> Result<Vec<Gated>, String> {
    let lines: Vec<&str> = source.lines().collect();
    let file_gate = lines
        .iter()
        .take_while(|line| !line.starts_with("mod ") && !line.starts_with("use "))
        .find(|line| line.starts_with("#![cfg("))
        .and_then(|line| gate(line));
    let mut found = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        let line = line.trim();
        if !(line == "#[test]" || line.starts_with("#[tokio::test")) {
            continue;
        }
        // The test's own attributes and docs above it, and its name below.
        let above = lines[..at]
            .iter()
            .rev()
            .take_while(|l| l.trim().starts_with("#[") || l.trim().starts_with("///"));
        let own_gate = above.filter_map(|l| gate(l)).next();
        let Some(cfg) = own_gate.or(file_gate) else {
            continue;
        };
        let needs = Platform::from_cfg(cfg)
            .ok_or_else(|| format!("{stem}.rs: a test gated on `{cfg}`, neither unix nor linux"))?;
        let name = lines[at..]
            .iter()
            .find_map(|l| {
                let l = l.trim().strip_prefix("async ").unwrap_or(l.trim());
                l.strip_prefix("fn ")?.split('(').next()
            })
            .ok_or_else(|| format!("{stem}.rs: a test attribute with no fn below it"))?;
        found.push(Gated {
            file: stem.to_owned(),
            test: name.to_owned(),
            needs,
        });
    }
    Ok(found)
}

/// Every gated test under `tests/`, read from the sources.
fn every_gated_test(tests: &Path) -> Result<Vec<Gated>, String> {
    let mut files: Vec<_> = std::fs::read_dir(tests)
        .map_err(|e| e.to_string())?
        .filter_map(|entry| entry.ok()?.path().to_str().map(str::to_owned))
        .filter(|path| path.ends_with(".rs"))
        .collect();
    files.sort();
    let mut all = Vec::new();
    for path in files {
        let path = Path::new(&path);
        let stem = path.file_stem().unwrap().to_str().unwrap();
        let source = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
        all.extend(gated_tests(stem, &source)?);
    }
    Ok(all)
}

/// The list above is the sources' list, and each test this platform
/// cannot build is named on the terminal with what it needs and why.
#[test]
fn every_test_that_needs_a_platform_says_which_and_why() {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    if !tests.join("platform_needs.rs").is_file() {
        return skipped(&format!(
            "the sources are not at {} (this binary was moved): the platform list was not checked",
            tests.display()
        ));
    }
    let gated = every_gated_test(&tests).unwrap();
    let reason = |file: &str| NEEDS.iter().find(|(f, _)| *f == file).map(|(_, why)| *why);
    for test in &gated {
        let why = reason(&test.file);
        assert!(
            why.is_some_and(|why| !why.is_empty()),
            "{}::{} needs {:?}: say why in NEEDS",
            test.file,
            test.test,
            test.needs
        );
    }
    for (file, _) in NEEDS {
        assert!(
            gated.iter().any(|test| test.file == *file),
            "NEEDS names {file}, which has no gated test"
        );
    }
    assert!(gated.len() >= 50, "only {} gated tests found", gated.len());
    for test in gated.iter().filter(|test| !test.needs.is_here()) {
        skipped(&format!(
            "{}::{} needs {:?}: {}",
            test.file,
            test.test,
            test.needs,
            reason(&test.file).unwrap()
        ));
    }
}

/// The scan reads gates as written: on the file, on the test, or none.
#[test]
fn the_scan_reads_each_kind_of_gate() {
    let file_gated = "//! doc\n#![cfg(unix)]\n\nmod support;\n\n#[tokio::test(flavor = \"multi_thread\")]\nasync fn a() {}\n#[test]\nfn b() {}\n";
    let found = gated_tests("f", file_gated).unwrap();
    let names: Vec<_> = found.iter().map(|t| (t.test.as_str(), t.needs)).collect();
    assert_eq!(names, [("a", Platform::Unix), ("b", Platform::Unix)]);
    let test_gated = "mod support;\n\n/// doc\n#[cfg(target_os = \"linux\")]\n#[tokio::test]\nasync fn c() {}\n\n#[test]\nfn d() {}\n";
    let found = gated_tests("g", test_gated).unwrap();
    let names: Vec<_> = found.iter().map(|t| (t.test.as_str(), t.needs)).collect();
    assert_eq!(names, [("c", Platform::Linux)]);
    let odd = "#[cfg(windows)]\n#[test]\nfn e() {}\n";
    assert!(gated_tests("h", odd)
        .unwrap_err()
        .contains("neither unix nor linux"));
}
