//! Other processes the tests drive: the crate's examples (built by asking
//! cargo for them), the Node.js clients of the official TypeScript SDK, and
//! the official Python SDK's client.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

use super::within;

/// An example's executable, built by asking cargo for it.
///
/// Plain `cargo test` leaves `target/debug/examples/NAME` behind, but
/// `cargo test --all-targets` builds examples only in test mode, under a
/// hashed name; so the test builds the example itself (a no-op when it is
/// fresh) and takes the path cargo reports.
///
/// Where `EMBACLE_EXAMPLES_DIR` is set, the example is taken from there
/// as built: `scripts/windows-tests` builds the examples for Windows and
/// runs the tests under Wine, where the cargo this test was built by (a
/// Linux program) cannot be started.
pub fn example_path(name: &str) -> PathBuf {
    if let Some(dir) = std::env::var_os("EMBACLE_EXAMPLES_DIR") {
        let path = Path::new(&dir).join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
        assert!(
            path.is_file(),
            "EMBACLE_EXAMPLES_DIR has no {}",
            path.display()
        );
        return path;
    }
    let output = std::process::Command::new(env!("CARGO"))
        .args(["build", "--example", name, "--message-format=json"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stderr(Stdio::inherit())
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo build --example {name} failed"
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|message| message["target"]["name"] == name)
        .find_map(|message| message["executable"].as_str().map(Into::into))
        .expect("cargo reports the example's executable")
}

/// A running example that hosts tools: its process, and the one
/// `mcpServers` entry it printed as its first stdout line.
pub struct RunningExample {
    pub child: Child,
    /// The entry: `{"type":"http","name":…,"url":…,"headers":[…]}`.
    pub entry: Value,
    pub url: String,
    /// The bearer text (what follows `Bearer `).
    pub bearer: String,
    /// Everything it writes to stderr, once it has exited.
    stderr: tokio::task::JoinHandle<String>,
    /// Its stderr, held open and never read (`start_unread`).
    _unread: Option<tokio::process::ChildStderr>,
}

impl RunningExample {
    /// Starts the example `name` and reads its first line.
    pub async fn start(name: &str) -> Self {
        Self::started(name, true).await
    }

    /// Starts the example `name` with its stderr a pipe that nobody
    /// reads, as a service whose log reader has stalled: once the pipe is
    /// full, every write to stderr waits.
    pub async fn start_unread(name: &str) -> Self {
        Self::started(name, false).await
    }

    async fn started(name: &str, read_stderr: bool) -> Self {
        let mut child = Command::new(example_path(name))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("the {name} example starts: {e}"));
        let mut errors = child.stderr.take().unwrap();
        let (stderr, unread) = if read_stderr {
            let read = tokio::spawn(async move {
                let mut text = String::new();
                let _ = tokio::io::AsyncReadExt::read_to_string(&mut errors, &mut text).await;
                text
            });
            (read, None)
        } else {
            (tokio::spawn(async { String::new() }), Some(errors))
        };
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = within(lines.next_line())
            .await
            .unwrap()
            .expect("a first line");
        let servers: Value = serde_json::from_str(&first).expect("first line is JSON");
        let entry = servers[0].clone();
        let url = entry["url"].as_str().unwrap().to_owned();
        let auth = entry["headers"][0]["value"].as_str().unwrap();
        let bearer = auth.strip_prefix("Bearer ").unwrap().to_owned();
        Self {
            child,
            entry,
            url,
            bearer,
            stderr,
            _unread: unread,
        }
    }

    /// The listener's address, from the URL.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.url
            .strip_prefix("http://")
            .and_then(|rest| rest.strip_suffix("/mcp"))
            .unwrap()
            .parse()
            .unwrap()
    }

    /// Sends SIGTERM, checks that the example exits cleanly, and returns
    /// what it wrote to stderr.
    pub async fn stop(mut self) -> String {
        let pid = self.child.id().unwrap().to_string();
        let killed = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .await
            .unwrap();
        assert!(killed.success());
        let status = within(self.child.wait()).await.unwrap();
        let stderr = within(self.stderr).await.unwrap();
        assert!(
            status.success(),
            "the example exits cleanly on SIGTERM: {status}\n{stderr}"
        );
        stderr
    }
}

/// `tests/NAME`, a directory of a Node.js client.
pub fn client_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(name)
}

/// Whether `node` and `npm` run; when one does not, says so (failing
/// under `EMBACLE_NO_SKIP`) with what therefore did not run: `lost`, as
/// in "the ACP agents cannot run; this agent test".
pub async fn has_node_and_npm(lost: &str) -> bool {
    for tool in ["node", "npm"] {
        let found = Command::new(tool)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .await;
        if !found.is_ok_and(|status| status.success()) {
            super::skipped(&format!("{tool} is not installed, so {lost} did not run"));
            return false;
        }
    }
    true
}

/// Installs the pinned packages of the client in `dir` when `package` is
/// absent from its `node_modules` (`.ci/run` installs them beforehand).
/// Two tests may install the same directory at once: they take turns.
pub async fn ensure_installed(dir: &Path, package: &str) {
    static INSTALL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _turn = INSTALL.lock().await;
    let installed = dir.join("node_modules").join(package).join("package.json");
    if installed.exists() {
        return;
    }
    let install = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
        .current_dir(dir)
        .status();
    let status = tokio::time::timeout(std::time::Duration::from_secs(300), install)
        .await
        .expect("npm ci took over 5 minutes")
        .expect("npm must be installed to run the TypeScript SDK tests");
    assert!(status.success(), "npm ci failed in {}", dir.display());
}

/// A Node.js client's stdout: one JSON object per line, tagged `step`.
pub type Steps = Lines<BufReader<ChildStdout>>;

/// Starts `script` in the client directory `dir`, pointed at `url` with
/// `bearer`, plus `env`.
pub fn node_client(
    dir: &Path,
    script: &str,
    url: &str,
    bearer: &str,
    env: &[(&str, &str)],
) -> (Child, Steps) {
    let mut command = Command::new("node");
    command
        .arg(script)
        .current_dir(dir)
        .envs(env.iter().copied());
    client_process(
        command,
        url,
        bearer,
        "node must be installed to run the TypeScript SDK tests",
    )
}

/// Starts a client `command` pointed at `url` with `bearer`, its stdout
/// read line by line.
fn client_process(mut command: Command, url: &str, bearer: &str, missing: &str) -> (Child, Steps) {
    command
        .env("MCP_URL", url)
        .env("MCP_BEARER", bearer)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    let mut child = command.spawn().expect(missing);
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    (child, lines)
}

/// `tests/python-client`, the Python SDK client's directory.
pub fn python_client_dir() -> PathBuf {
    client_dir("python-client")
}

/// The Python of `tests/python-client/.venv`, created with the pinned
/// `requirements.txt` when absent (`.ci/run` creates it beforehand).
pub async fn python_venv() -> PathBuf {
    static INSTALL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _turn = INSTALL.lock().await;
    let dir = python_client_dir();
    let python = dir.join(".venv").join("bin").join("python");
    if python.exists() {
        return python;
    }
    let pip = dir.join(".venv").join("bin").join("pip");
    let create = ["-m", "venv", ".venv"];
    let install = [
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "-r",
        "requirements.txt",
    ];
    for (program, args) in [(Path::new("python3"), &create[..]), (&pip, &install[..])] {
        let run = Command::new(program).args(args).current_dir(&dir).status();
        let status = tokio::time::timeout(std::time::Duration::from_secs(300), run)
            .await
            .expect("setting up the Python client took over 5 minutes")
            .expect("python3 (with venv) must be installed to run the Python SDK tests");
        assert!(
            status.success(),
            "{} {args:?} failed in {}",
            program.display(),
            dir.display()
        );
    }
    python
}

/// Starts the Python client `script` with `args`, pointed at `url` with
/// `bearer`.
pub fn python_client(
    python: &Path,
    script: &str,
    args: &[&str],
    url: &str,
    bearer: &str,
) -> (Child, Steps) {
    let mut command = Command::new(python);
    command
        .arg(script)
        .args(args)
        .current_dir(python_client_dir());
    client_process(command, url, bearer, "the Python client's venv runs")
}

/// Reads the next JSON line the client prints, failing on its error step.
pub async fn next_step(lines: &mut Steps) -> Value {
    let line = within(lines.next_line())
        .await
        .expect("read client stdout")
        .expect("client exited early");
    let value: Value = serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line}"));
    assert_ne!(value["step"], "error", "client failed: {value}");
    value
}
