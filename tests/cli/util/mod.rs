//! The harness: a strict builder that runs the real binary in a fresh directory (here), the
//! real test servers and clients and the fault server (`servers`), and small process and port
//! helpers (`process`).
//!
//! Strict in the style of `just`'s tests: a run fails unless the exit code is the expected one
//! (0 unless `.status(N)`), stderr is empty unless the test says what it holds
//! (`.stderr_has(..)` / `.stderr_any()`), and `--json` output parses as one JSON document.
//! Every failure prints the command, its directory, status, time, stdout and stderr.

use std::fmt;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tempfile::TempDir;

mod process;
mod servers;

pub use process::*;
pub use servers::*;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_mcp-launch");

/// A run longer than this is a hang: the binary is killed and the test fails.
const WATCHDOG: Duration = Duration::from_secs(90);

/// Variables of the developer's shell that would change the binary's behaviour.
const SCRUBBED_ENV: &[&str] = &[
    "MCP_INIT_TIMEOUT_SEC",
    "MCP_LAUNCH_LOG",
    "RUST_LOG",
    "COLUMNS",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "XDG_CONFIG_HOME",
    "XDG_STATE_HOME",
    "MCP_LAUNCH_MCPO",
    "MCP_LAUNCH_SHARED_HOST",
    "MCP_LAUNCH_CLOUDFLARED",
    // A fresh HOME: gateways' sockets go under $HOME/.local/state, and `call` does not ride a
    // daemon unless a test starts one.
    "XDG_RUNTIME_DIR",
    "XDG_STATE_HOME",
    "MCP_LAUNCH_DAEMON",
    // No embedding model unless a test installs one into its fresh HOME.
    "XDG_DATA_HOME",
    "MCP_LAUNCH_MODEL_DIR",
    "MCP_LAUNCH_PYPI_INDEX",
    // Clients' own directories (`clients`, `serve --print-config`): in HOME unless a test moves them.
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "COPILOT_HOME",
    // OAuth tokens go to the 0600 file unless a test gives the process a keyring's bus.
    "DBUS_SESSION_BUS_ADDRESS",
    "MCP_LAUNCH_TOKEN_STORE",
    // Logins register dynamically unless a test names our client metadata document.
    "MCP_LAUNCH_CLIENT_METADATA_URL",
];

enum StderrRule {
    Empty,
    Has(Vec<String>),
    Any,
}

/// One run of the binary, built up and then `run()`.
#[must_use]
pub struct Cmd {
    dir: Arc<TempDir>,
    cwd: Option<PathBuf>,
    config: bool,
    args: Vec<String>,
    env: Vec<(String, String)>,
    stdin: Option<String>,
    status: i32,
    stderr: StderrRule,
}

impl Cmd {
    /// A command in a fresh temporary directory (also `HOME` and the cache's parent).
    pub fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("mcp-launch-test-")
            .tempdir()
            .expect("create a temp dir");
        Self::in_dir(Arc::new(dir))
    }

    fn in_dir(dir: Arc<TempDir>) -> Self {
        Self {
            dir,
            cwd: None,
            config: false,
            args: Vec::new(),
            env: Vec::new(),
            stdin: None,
            status: 0,
            stderr: StderrRule::Empty,
        }
    }

    /// The temporary directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Another command in the same directory with the same environment (a project that
    /// several commands share: `up` in one, `status` and `down` in others).
    pub fn cmd(&self) -> Cmd {
        let mut cmd = Self::in_dir(Arc::clone(&self.dir));
        cmd.env = self.env.clone();
        cmd
    }

    /// An absolute path inside the temporary directory.
    pub fn path(&self, relative: &str) -> PathBuf {
        self.dir().join(relative)
    }

    /// Creates a directory inside the temporary directory and returns its absolute path.
    pub fn mkdir(&self, relative: &str) -> PathBuf {
        let path = self.path(relative);
        std::fs::create_dir_all(&path).expect("create dir");
        path
    }

    /// Writes `config.json` and passes `--config config.json` before the other arguments.
    pub fn config_json(mut self, config: Value) -> Self {
        self = self.file(
            "config.json",
            &serde_json::to_string_pretty(&config).unwrap(),
        );
        self.config = true;
        self
    }

    /// Writes a file (parents created) relative to the temporary directory.
    pub fn file(self, relative: &str, text: &str) -> Self {
        let path = self.path(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create parent dir");
        }
        std::fs::write(&path, text).expect("write file");
        self
    }

    /// Writes the project's `.mcp-launch/overrides.json` as the user's own: trusted (by
    /// `trust --yes`), as our commands leave the overrides they write. A planted file is used
    /// only once trusted.
    pub fn trusted_overrides(self, text: &str) -> Self {
        let this = self.file(".mcp-launch/overrides.json", text);
        this.cmd().args(["trust", "--yes"]).run();
        this
    }

    /// Runs in this subdirectory of the temporary directory (created) instead of its root.
    pub fn current_dir(mut self, relative: &str) -> Self {
        self.mkdir(relative);
        self.cwd = Some(PathBuf::from(relative));
        self
    }

    /// Appends arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_string()));
        self
    }

    /// Sets an environment variable.
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Feeds this text on stdin (else stdin is empty).
    pub fn stdin(mut self, text: &str) -> Self {
        self.stdin = Some(text.into());
        self
    }

    /// The exit code the run must end with (default 0).
    pub fn status(mut self, code: i32) -> Self {
        self.status = code;
        self
    }

    /// Stderr must contain this text (repeatable); otherwise it must be empty.
    pub fn stderr_has(mut self, text: &str) -> Self {
        match &mut self.stderr {
            StderrRule::Has(all) => all.push(text.into()),
            _ => self.stderr = StderrRule::Has(vec![text.into()]),
        }
        self
    }

    /// Anything on stderr is fine (for runs whose stderr the test does not judge).
    pub fn stderr_any(mut self) -> Self {
        self.stderr = StderrRule::Any;
        self
    }

    /// Runs the binary and checks the exit code, stderr and (with `--json`) stdout's syntax.
    pub fn run(self) -> Output {
        self.spawn().wait()
    }

    /// Starts the binary without waiting for it (to signal it while it runs); `wait()` then
    /// applies the same checks as `run()`.
    pub fn spawn(self) -> Running {
        let mut argv = Vec::new();
        if self.config {
            argv.extend(["--config".to_string(), "config.json".to_string()]);
        }
        argv.extend(self.args.iter().cloned());
        let cwd = match &self.cwd {
            Some(sub) => self.dir().join(sub),
            None => self.dir().to_path_buf(),
        };
        let mut command = Command::new(BIN);
        command
            .args(&argv)
            .current_dir(&cwd)
            .env("HOME", self.dir())
            .env("XDG_CACHE_HOME", self.dir().join(".cache"))
            .env("NO_COLOR", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for key in SCRUBBED_ENV {
            command.env_remove(key);
        }
        for (key, value) in &self.env {
            command.env(key, value);
        }
        let shown = std::iter::once("mcp-launch".to_string())
            .chain(argv.iter().map(|a| quote(a)))
            .collect::<Vec<_>>()
            .join(" ");
        let env_shown: String = self
            .env
            .iter()
            .map(|(k, v)| format!("{k}={} ", quote(v)))
            .collect();

        let started = Instant::now();
        let mut child = command.spawn().expect("spawn the mcp-launch binary");
        let mut stdin = child.stdin.take().expect("stdin pipe");
        let input = self.stdin.clone().unwrap_or_default();
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(input.as_bytes());
        });
        let stdout = drain(child.stdout.take().expect("stdout pipe"));
        let stderr = drain(child.stderr.take().expect("stderr pipe"));
        Running {
            stop_on_drop: StopOnDrop(Some(child.id() as i32)),
            child,
            started,
            writer,
            stdout,
            stderr,
            is_json: argv.iter().any(|a| a == "--json"),
            command: format!("{env_shown}{shown}"),
            cwd,
            cmd: self,
        }
    }
}

/// A run of the binary that has not ended yet.
pub struct Running {
    child: std::process::Child,
    /// Stops the binary if the test panics before waiting for it (an `up` would otherwise
    /// outlive the test with its servers).
    stop_on_drop: StopOnDrop,
    started: Instant,
    writer: std::thread::JoinHandle<()>,
    stdout: std::thread::JoinHandle<Vec<u8>>,
    stderr: std::thread::JoinHandle<Vec<u8>>,
    is_json: bool,
    command: String,
    cwd: PathBuf,
    cmd: Cmd,
}

/// SIGTERM to a binary never waited for (a panicking test), then a bounded wait: `up` stops
/// its servers on SIGTERM.
struct StopOnDrop(Option<i32>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        let Some(pid) = self.0 else { return };
        let pid = nix::unistd::Pid::from_raw(pid);
        if nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).is_ok() {
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline && pid_alive(pid.as_raw()) {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

impl Running {
    /// The binary's pid.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Waits for the end of the run (killing it after the watchdog limit) and checks it.
    pub fn wait(mut self) -> Output {
        self.stop_on_drop.0 = None;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait for the binary") {
                break status;
            }
            if self.started.elapsed() > WATCHDOG {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "watchdog: `{}` in {} ran for more than {WATCHDOG:?} and was killed",
                    self.command,
                    self.cwd.display()
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let elapsed = self.started.elapsed();
        let _ = self.writer.join();
        use std::os::unix::process::ExitStatusExt;
        let output = Output {
            dir: Arc::clone(&self.cmd.dir),
            cwd: self.cwd,
            command: self.command,
            // Death by a signal reads as the shell shows it: 128 + the signal number.
            status: status
                .code()
                .or_else(|| status.signal().map(|s| 128 + s))
                .unwrap_or(-1),
            stdout: String::from_utf8_lossy(&self.stdout.join().expect("stdout reader"))
                .into_owned(),
            stderr: String::from_utf8_lossy(&self.stderr.join().expect("stderr reader"))
                .into_owned(),
            elapsed,
        };

        assert_eq!(
            output.status, self.cmd.status,
            "unexpected exit code\n{output}"
        );
        match &self.cmd.stderr {
            StderrRule::Empty => assert!(
                output.stderr.is_empty(),
                "unexpected output on stderr\n{output}"
            ),
            StderrRule::Has(parts) => {
                for part in parts {
                    assert!(
                        output.stderr.contains(part.as_str()),
                        "stderr lacks {part:?}\n{output}"
                    );
                }
            }
            StderrRule::Any => {}
        }
        if self.is_json {
            output.json();
        }
        output
    }
}

fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        buf
    })
}

fn quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// What a run produced. `Display` shows everything, for assertion messages: `"{out}"`.
pub struct Output {
    dir: Arc<TempDir>,
    /// Where the binary ran.
    pub cwd: PathBuf,
    /// The command line as a shell would show it.
    pub command: String,
    /// The exit code (128 + N when killed by signal N).
    pub status: i32,
    /// Everything on stdout.
    pub stdout: String,
    /// Everything on stderr.
    pub stderr: String,
    /// Wall time of the run.
    pub elapsed: Duration,
}

impl Output {
    /// Stdout parsed as JSON (panics with the full context when it is not).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not one JSON document: {e}\n{self}"))
    }

    /// The temporary directory of the run.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// An absolute path inside the temporary directory.
    pub fn path(&self, relative: &str) -> PathBuf {
        self.dir().join(relative)
    }

    /// A new command in the same directory (no implicit `--config`).
    pub fn cmd(&self) -> Cmd {
        Cmd::in_dir(Arc::clone(&self.dir))
    }

    /// A command in the same directory with `--config config.json` (the file `config_json`
    /// wrote), for the next step of a scenario.
    pub fn again(&self) -> Cmd {
        self.cmd().args(["--config", "config.json"])
    }

    /// The entry of `list --json` for server `name`.
    pub fn server(&self, name: &str) -> Value {
        let json = self.json();
        let servers = json["servers"]
            .as_array()
            .unwrap_or_else(|| panic!("no \"servers\" array\n{self}"));
        servers
            .iter()
            .find(|s| s["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no server {name:?} in the list\n{self}"))
    }

    /// The `error` object of a JSON error envelope, after checking the envelope's shape.
    pub fn error(&self) -> Value {
        let json = self.json();
        assert_eq!(
            json["success"],
            json!(false),
            "not an error envelope\n{self}"
        );
        let error = json["error"].clone();
        for key in ["type", "message", "help"] {
            assert!(
                error[key].as_str().is_some_and(|s| !s.is_empty()),
                "error.{key} is not a non-empty string\n{self}"
            );
        }
        error
    }
}

impl fmt::Display for Output {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "--- command: {}", self.command)?;
        writeln!(f, "--- cwd:     {}", self.cwd.display())?;
        writeln!(f, "--- status:  {} after {:?}", self.status, self.elapsed)?;
        writeln!(f, "--- stdout ({} bytes):", self.stdout.len())?;
        writeln!(f, "{}", clipped(&self.stdout))?;
        writeln!(f, "--- stderr ({} bytes):", self.stderr.len())?;
        writeln!(f, "{}", clipped(&self.stderr))?;
        write!(f, "---")
    }
}

/// Huge outputs (a 5 MB tool result) are cut in the middle so a failure stays readable.
fn clipped(text: &str) -> String {
    const KEEP: usize = 4000;
    if text.len() <= 2 * KEEP {
        return text.to_string();
    }
    let mut head = KEEP;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - KEEP;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}\n[… {} bytes cut …]\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

/// Runs `future` on the current runtime, failing the test if it takes longer than `secs`.
pub async fn within<F: std::future::Future>(secs: u64, future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(secs), future)
        .await
        .unwrap_or_else(|_| panic!("did not finish within {secs}s"))
}

/// Waits until `condition` holds, checking every 10 ms, failing the test after `secs` with
/// `what`. For ordering events: never a fixed sleep.
pub async fn until(secs: u64, what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !condition() {
        assert!(Instant::now() < deadline, "not within {secs}s: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
