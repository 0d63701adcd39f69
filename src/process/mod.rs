//! The one way we spawn and end child processes.
//!
//! Every child runs in a process group of its own, so that ending it reaches the grandchildren
//! that `npx` and `uvx` start (killing only the direct child leaked them in the tool we port).
//! Its stderr is drained continuously into a bounded ring buffer — an undrained pipe blocks a
//! chatty server, and the tail is what makes an error message actionable. Each line is masked
//! ([`Masker`]: the spec's own `env` values and whatever the caller's masker knows) before the
//! ring stores it or a log shows it, so no tail carries a secret into an error.
//!
//! Invariants: a [`ProcessGuard`] kills the whole group when dropped, whatever the exit path;
//! [`ProcessGuard::shutdown`] does it gracefully (TERM, a short grace, then KILL). This module
//! knows nothing of MCP.

mod detached;
mod group;
mod listener;
mod mask;
mod ring;
mod secret_args;
mod service;
mod users;
mod vouch;
mod which;

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::sync::watch;

pub use detached::spawn_detached;
pub use group::{
    descendants, is_ours, is_running, live_members, start_time, stop_group, stop_recorded_group,
    wait_gone,
};
pub use listener::{verify_listener, Squatted};
pub use mask::{is_secret_name, own_secrets, Masker, MASK};
pub use ring::StderrRing;
pub use secret_args::{secret_args, secret_values, ArgSecret};
pub use service::{spawn_service, LineSink};
pub use users::shared_host;
pub use vouch::{own_program, parent_marker, vouch, Expect, Untrusted, PARENT_ENV};
pub use which::{which, which_in};

/// How long a process group gets between SIGTERM and SIGKILL on a graceful shutdown. Servers
/// have nothing to flush for us; half a second lets `npx` forward the signal and exit cleanly.
pub const TERM_GRACE: Duration = Duration::from_millis(500);

/// Bytes of stderr kept per child. Enough for the last few dozen lines of a stack trace; a
/// stderr flood of megabytes costs no more than this.
pub const STDERR_RING_BYTES: usize = 64 * 1024;

/// Variables of ours that no child inherits: the keys of our own fronts and tunnels are none
/// of a third-party server's business. A child that needs one gets it through its
/// [`SpawnSpec::env`] (cloudflared gets `TUNNEL_TOKEN` that way).
pub const WITHHELD_ENV: &[&str] = &["MCP_LAUNCH_API_KEY", "TUNNEL_TOKEN"];

/// What to start: program, arguments, environment overlay and working directory.
#[derive(Debug, Clone, Default)]
pub struct SpawnSpec {
    /// Program name (looked up on `PATH`) or path.
    pub program: String,
    /// Arguments, passed as they are.
    pub args: Vec<String>,
    /// Variables set on top of the inherited environment (replacing keys of the same name).
    pub env: Vec<(String, String)>,
    /// Working directory; the current one when `None`.
    pub cwd: Option<PathBuf>,
    /// Masks the child's output before the ring stores it or a log shows it. The values of
    /// [`SpawnSpec::env`] and the literal secrets of [`SpawnSpec::args`] are added to it at
    /// spawn.
    pub masker: Masker,
}

impl SpawnSpec {
    /// The masker for this child's output: the caller's, taught this child's `env` values,
    /// the secrets in its arguments and this process's own secrets.
    fn output_masker(&self) -> Masker {
        let masker = self.masker.clone();
        masker.add_all(self.env.iter().map(|(_, v)| v.as_str()));
        masker.add_all(secret_values(&self.args));
        masker.add_known(own_secrets());
        masker
    }
}

/// Why a child could not be started.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SpawnError {
    /// The program does not exist on `PATH` (or at the given path).
    #[error("command `{program}` not found on PATH")]
    NotFound {
        /// The program as configured.
        program: String,
    },
    /// The program exists but may not be executed.
    #[error("command `{program}` is not executable: permission denied")]
    PermissionDenied {
        /// The program as configured.
        program: String,
    },
    /// The working directory does not exist.
    #[error("working directory {cwd} does not exist")]
    MissingCwd {
        /// The directory as configured.
        cwd: PathBuf,
    },
    /// Any other operating-system error.
    #[error("could not start `{program}`: {message}")]
    Other {
        /// The program as configured.
        program: String,
        /// The operating system's message.
        message: String,
    },
}

/// A started child: its pipes, its stderr tail, its exit status, and the guard that ends it.
pub struct Spawned {
    /// The child's stdin.
    pub stdin: ChildStdin,
    /// The child's stdout.
    pub stdout: ChildStdout,
    /// Owns the process group; dropping it kills the group.
    pub guard: ProcessGuard,
}

/// Spawns `spec` in a new process group with piped stdio, drains its stderr into a ring buffer
/// and reaps it in the background.
pub fn spawn(spec: &SpawnSpec) -> Result<Spawned, SpawnError> {
    let mut child = start(spec, Stdio::piped())?;
    let pid = child.id().map(|id| id as i32);
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        // Unreachable by construction: all three were requested as pipes above.
        return Err(SpawnError::Other {
            program: spec.program.clone(),
            message: "stdio pipes were not created".into(),
        });
    };

    let ring = Arc::new(Mutex::new(StderrRing::new(STDERR_RING_BYTES)));
    let (stderr_done_tx, stderr_done) = watch::channel(false);
    {
        let ring = Arc::clone(&ring);
        let program = spec.program.clone();
        let masker = spec.output_masker();
        let trace: LineSink = Arc::new(move |line: &str| {
            tracing::trace!(target: "mcp_launch::stderr", program = %program, "{line}");
        });
        tokio::spawn(async move {
            service::forward_lines(Box::new(stderr), ring, masker, trace).await;
            let _ = stderr_done_tx.send(true);
        });
    }

    let exit_rx = reap(child);

    Ok(Spawned {
        stdin,
        stdout,
        guard: ProcessGuard {
            pgid: pid,
            program: spec.program.clone(),
            stderr: ring,
            stderr_done,
            exit: exit_rx,
        },
    })
}

/// Starts `spec` in a process group of its own with `stdin` as given and stdout/stderr piped.
/// The one place a child is configured, for sessions and services alike.
fn start(spec: &SpawnSpec, stdin: Stdio) -> Result<tokio::process::Child, SpawnError> {
    if let Some(cwd) = &spec.cwd {
        if !cwd.is_dir() {
            return Err(SpawnError::MissingCwd { cwd: cwd.clone() });
        }
    }
    let mut cmd = Command::new(&spec.program);
    for key in WITHHELD_ENV {
        cmd.env_remove(key);
    }
    cmd.args(&spec.args)
        .env(PARENT_ENV, parent_marker())
        .envs(
            spec.env
                .iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v))),
        )
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        // Belt and braces: the guard kills the group, this kills the direct child even if the
        // guard never runs (e.g. a panic while unwinding).
        .kill_on_drop(true);
    if let Some(cwd) = &spec.cwd {
        cmd.current_dir(cwd);
    }
    cmd.spawn().map_err(|e| spawn_error(&spec.program, e))
}

/// Waits for `child` in the background; the receiver changes once it has exited.
fn reap(mut child: tokio::process::Child) -> watch::Receiver<Option<Exit>> {
    let (exit_tx, exit_rx) = watch::channel(None);
    tokio::spawn(async move {
        let status = child.wait().await.ok();
        let _ = exit_tx.send(status.map(Exit::from));
    });
    exit_rx
}

fn spawn_error(program: &str, e: io::Error) -> SpawnError {
    let program = program.to_string();
    match e.kind() {
        io::ErrorKind::NotFound => SpawnError::NotFound { program },
        io::ErrorKind::PermissionDenied => SpawnError::PermissionDenied { program },
        _ => SpawnError::Other {
            program,
            message: e.to_string(),
        },
    }
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this code.
    Code(i32),
    /// A signal ended it.
    Signal(i32),
}

impl From<ExitStatus> for Exit {
    fn from(status: ExitStatus) -> Self {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(code), _) => Exit::Code(code),
            (None, Some(sig)) => Exit::Signal(sig),
            (None, None) => Exit::Code(-1),
        }
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(code) => write!(f, "exited with code {code}"),
            Exit::Signal(sig) => match Signal::try_from(*sig) {
                Ok(s) => write!(f, "was killed by {s}"),
                Err(_) => write!(f, "was killed by signal {sig}"),
            },
        }
    }
}

/// Owns a child's process group. Dropping it sends SIGKILL to the whole group.
pub struct ProcessGuard {
    /// The group id (= the child's pid, since it leads its own group). `None` once ended.
    pgid: Option<i32>,
    program: String,
    stderr: Arc<Mutex<StderrRing>>,
    stderr_done: watch::Receiver<bool>,
    exit: watch::Receiver<Option<Exit>>,
}

impl ProcessGuard {
    /// The process group id, which is also the direct child's pid.
    pub fn pgid(&self) -> Option<i32> {
        self.pgid
    }

    /// The program this guard started.
    pub fn program(&self) -> &str {
        &self.program
    }

    /// The last `lines` lines the child wrote to stderr.
    pub fn stderr_tail(&self, lines: usize) -> String {
        self.stderr
            .lock()
            .map(|ring| ring.tail_lines(lines))
            .unwrap_or_default()
    }

    /// A handle to read the stderr tail later without holding the guard.
    pub fn stderr_handle(&self) -> StderrHandle {
        StderrHandle(Arc::clone(&self.stderr))
    }

    /// The exit status, if the direct child has ended.
    pub fn exit_status(&self) -> Option<Exit> {
        *self.exit.borrow()
    }

    /// A receiver that changes once the direct child has exited.
    pub fn exit_watch(&self) -> watch::Receiver<Option<Exit>> {
        self.exit.clone()
    }

    /// Waits up to `limit` for the direct child to exit and for its stderr to be drained, so
    /// that an error built afterwards carries the exit code and the last words.
    pub async fn settle(&self, limit: Duration) -> Option<Exit> {
        let mut exit = self.exit.clone();
        let mut stderr_done = self.stderr_done.clone();
        let _ = tokio::time::timeout(limit, async {
            let _ = exit.wait_for(Option::is_some).await;
            let _ = stderr_done.wait_for(|done| *done).await;
        })
        .await;
        self.exit_status()
    }

    /// Ends the group gracefully: SIGTERM, up to [`TERM_GRACE`] for the direct child to exit,
    /// then SIGKILL to whatever of the group remains.
    pub async fn shutdown(mut self) {
        let Some(pgid) = self.pgid else { return };
        signal_group(pgid, Signal::SIGTERM);
        let mut exit = self.exit.clone();
        let _ = tokio::time::timeout(TERM_GRACE, exit.wait_for(Option::is_some)).await;
        signal_group(pgid, Signal::SIGKILL);
        self.pgid = None;
    }
}

impl Drop for ProcessGuard {
    fn drop(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            signal_group(pgid, Signal::SIGKILL);
        }
    }
}

/// Reads a child's stderr tail after its guard has moved elsewhere.
#[derive(Clone)]
pub struct StderrHandle(Arc<Mutex<StderrRing>>);

impl StderrHandle {
    /// The last `lines` lines the child wrote to stderr.
    pub fn tail(&self, lines: usize) -> String {
        self.0
            .lock()
            .map(|ring| ring.tail_lines(lines))
            .unwrap_or_default()
    }
}

/// Sends `signal` to every process of group `pgid`; a group that is already gone is fine.
pub fn signal_group(pgid: i32, signal: Signal) {
    // ESRCH (group already gone) is the expected outcome after a clean exit.
    if let Err(e) = killpg(Pid::from_raw(pgid), signal) {
        if e != nix::errno::Errno::ESRCH {
            tracing::debug!(pgid, ?signal, error = %e, "killpg failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> SpawnSpec {
        SpawnSpec {
            program: "sh".into(),
            args: vec!["-c".into(), script.into()],
            ..SpawnSpec::default()
        }
    }

    #[tokio::test]
    async fn missing_program_is_not_found() {
        let err = spawn(&SpawnSpec {
            program: "definitely-not-a-command-xyz".into(),
            ..SpawnSpec::default()
        })
        .err()
        .expect("spawn must fail");
        assert!(matches!(err, SpawnError::NotFound { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            "command `definitely-not-a-command-xyz` not found on PATH"
        );
    }

    #[tokio::test]
    async fn missing_cwd_is_named() {
        let err = spawn(&SpawnSpec {
            cwd: Some("/no/such/dir".into()),
            ..sh("true")
        })
        .err()
        .expect("spawn must fail");
        assert!(err.to_string().contains("/no/such/dir"));
    }

    #[tokio::test]
    async fn exit_code_and_stderr_tail_are_kept() {
        let spawned = spawn(&sh("echo first >&2; echo last words >&2; exit 3")).unwrap();
        let exit = spawned.guard.settle(Duration::from_secs(5)).await;
        assert_eq!(exit, Some(Exit::Code(3)));
        assert_eq!(spawned.guard.stderr_tail(1), "last words");
        assert_eq!(spawned.guard.stderr_tail(5), "first\nlast words");
    }

    /// Low 20 of issue 24: a preflight's stderr tail showed the stack's key; a child's output
    /// is masked with this process's own secrets whoever spawned it.
    #[tokio::test]
    async fn our_own_secrets_are_masked_in_every_childs_stderr() {
        own_secrets().add("stack-key-4f9a2c");
        let spawned = spawn(&sh("echo \"key stack-key-4f9a2c\" >&2")).unwrap();
        spawned.guard.settle(Duration::from_secs(5)).await;
        assert_eq!(spawned.guard.stderr_tail(1), "key ****");
    }

    /// A server handed its key on the command line (`--api-key K`) that prints it: the tail
    /// (what errors and `up` show) has it masked.
    #[tokio::test]
    async fn secrets_in_a_childs_arguments_are_masked_in_its_stderr() {
        let mut spec = sh("echo \"started with $2\" >&2");
        spec.args
            .extend(["sh", "--api-key", "s3cr3t-v4lue"].map(String::from));
        let spawned = spawn(&spec).unwrap();
        spawned.guard.settle(Duration::from_secs(5)).await;
        assert_eq!(spawned.guard.stderr_tail(1), "started with ****");
    }

    #[tokio::test]
    async fn env_overlay_replaces_inherited_keys() {
        let mut spec = sh("echo \"$HOME|$MCPL_TEST\" >&2");
        spec.env = vec![
            ("HOME".into(), "/x".into()),
            ("MCPL_TEST".into(), "y".into()),
        ];
        let spawned = spawn(&spec).unwrap();
        spawned.guard.settle(Duration::from_secs(5)).await;
        assert_eq!(spawned.guard.stderr_tail(1), "/x|y");
    }

    #[tokio::test]
    async fn shutdown_reaches_grandchildren() {
        let spawned = spawn(&sh("sleep 1000 & echo $! >&2; wait")).unwrap();
        let grandchild: i32 = loop {
            let tail = spawned.guard.stderr_tail(1);
            if let Ok(pid) = tail.trim().parse() {
                break pid;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        spawned.guard.shutdown().await;
        assert!(
            wait_gone(grandchild).await,
            "grandchild {grandchild} survived"
        );
    }

    #[tokio::test]
    async fn drop_kills_the_group() {
        let spawned = spawn(&sh("sleep 1000 & echo $! >&2; wait")).unwrap();
        let grandchild: i32 = loop {
            if let Ok(pid) = spawned.guard.stderr_tail(1).trim().parse() {
                break pid;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        drop(spawned);
        assert!(
            wait_gone(grandchild).await,
            "grandchild {grandchild} survived"
        );
    }

    /// True once `pid` no longer runs. PID 1 here does not reap orphans, so a zombie counts as
    /// gone.
    async fn wait_gone(pid: i32) -> bool {
        for _ in 0..200 {
            match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
                Err(_) => return true,
                Ok(stat)
                    if stat
                        .rsplit(')')
                        .next()
                        .is_some_and(|s| s.trim_start().starts_with('Z')) =>
                {
                    return true
                }
                Ok(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
        false
    }
}
