//! Whether a process that a file recorded may be signalled.
//!
//! The state file lives in the project directory, and a project may be someone else's
//! checkout: a planted record must never make us signal what we did not start. So a recorded
//! process is signalled only when all of these hold, checked again right before each signal:
//! - it is not pid/pgid 0 or 1, nor our own process or process group;
//! - its start time was recorded and matches (a reused pid never does);
//! - it belongs to the user we run as;
//! - it is what we start there: for a supervising `up`, its command line runs mcp-launch; for
//!   anything `up` started (mcpo, cloudflared, servers, and what they start in turn), its
//!   environment carries [`PARENT_ENV`] naming that very `up` (pid and start time). Every child
//!   gets the variable from `process::spawn`; a process we did not start cannot have it, and a
//!   command-line check alone would miss servers whose launcher rewrites its title (`npx`).

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use std::sync::OnceLock;

use super::group::{is_running, start_time};

/// The variable every child we start carries: `PID:START` of the mcp-launch that started it.
pub const PARENT_ENV: &str = "MCP_LAUNCH_PARENT";

/// This process's `PID:START`, the value its children get in [`PARENT_ENV`].
pub fn parent_marker() -> &'static str {
    static MARKER: OnceLock<String> = OnceLock::new();
    MARKER.get_or_init(|| {
        let pid = std::process::id() as i32;
        marker(pid, start_time(pid).unwrap_or_default())
    })
}

fn marker(pid: i32, started: u64) -> String {
    format!("{pid}:{started}")
}

/// What a recorded process must be, besides ours and unchanged since it was recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// One of these programs (file names such as `mcp-launch`, compared with its command line's
    /// first two words, so that `python3 /venv/bin/mcpo` counts as `mcpo`).
    Program(Vec<String>),
    /// An `up` of one of these programs run in `dir` (its working directory, where it records
    /// its stacks): what supervises the stacks recorded in `dir`. A process that only runs
    /// mcp-launch — the user's `serve --daemon`, an `up` elsewhere — is not.
    Supervisor {
        /// The program's file names, as for [`Expect::Program`].
        programs: Vec<String>,
        /// The project directory whose state file recorded it.
        dir: std::path::PathBuf,
    },
    /// Started (directly or not) by the mcp-launch process `pid` that started at `started`.
    ChildOf {
        /// That process's pid.
        pid: i32,
        /// Its start time.
        started: u64,
    },
}

/// Why a recorded process is left alone.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Untrusted {
    /// pid 0 or 1, or our own process or group.
    #[error("pid {0} is reserved (init, or this very process)")]
    Reserved(i32),
    /// No start time was recorded, so a reused pid cannot be told apart.
    #[error("pid {0} was recorded without a start time")]
    NoStartTime(i32),
    /// No such process (any more).
    #[error("pid {0} is not running")]
    Gone(i32),
    /// The pid now belongs to another process (it started at another time).
    #[error("pid {0} is another process now (its start time differs from the record)")]
    Reused(i32),
    /// The process belongs to another user.
    #[error("pid {pid} belongs to user {uid}, not to us")]
    OtherUser {
        /// The process.
        pid: i32,
        /// Its owner.
        uid: u32,
    },
    /// The process runs a program we never start there.
    #[error("pid {pid} runs {program:?}, which this stack never started")]
    Unexpected {
        /// The process.
        pid: i32,
        /// What it runs (its command line's program).
        program: String,
    },
    /// The process was not started by the recorded `up`.
    #[error("pid {0} was not started by the recorded mcp-launch up")]
    NotOurChild(i32),
    /// The process runs mcp-launch, but not as the `up` of this project.
    #[error("pid {pid} is not an `mcp-launch up` run in {dir}")]
    NotThisProject {
        /// The process.
        pid: i32,
        /// The project directory whose state file named it.
        dir: String,
    },
}

/// Ok when `pid` may be signalled as a process we started at `started` that is what `expect`
/// says. Call it again right before each signal: a pid can change hands in between.
pub fn vouch(pid: i32, started: Option<u64>, expect: &Expect) -> Result<(), Untrusted> {
    let me = std::process::id() as i32;
    if pid <= 1 || pid == me || pid == nix::unistd::getpgrp().as_raw() {
        return Err(Untrusted::Reserved(pid));
    }
    let expected = started.ok_or(Untrusted::NoStartTime(pid))?;
    let owner = std::fs::metadata(format!("/proc/{pid}"))
        .map_err(|_| Untrusted::Gone(pid))?
        .uid();
    if start_time(pid).ok_or(Untrusted::Gone(pid))? != expected {
        return Err(Untrusted::Reused(pid));
    }
    // A zombie has ended (PID 1 here may never reap it) and shows no environment.
    if !is_running(pid, None) {
        return Err(Untrusted::Gone(pid));
    }
    if owner != nix::unistd::geteuid().as_raw() {
        return Err(Untrusted::OtherUser { pid, uid: owner });
    }
    match expect {
        Expect::Program(programs) => runs_one_of(pid, programs),
        Expect::Supervisor { programs, dir } => {
            runs_one_of(pid, programs)?;
            if is_up_in(pid, dir) {
                Ok(())
            } else {
                Err(Untrusted::NotThisProject {
                    pid,
                    dir: dir.display().to_string(),
                })
            }
        }
        Expect::ChildOf {
            pid: parent,
            started,
        } => {
            let wanted = format!("{PARENT_ENV}={}", marker(*parent, *started));
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            if environ.split(|b| *b == 0).any(|v| v == wanted.as_bytes()) {
                Ok(())
            } else {
                Err(Untrusted::NotOurChild(pid))
            }
        }
    }
}

/// Ok when `pid`'s command line runs one of `programs`.
fn runs_one_of(pid: i32, programs: &[String]) -> Result<(), Untrusted> {
    let words = command_words(pid);
    let runs = |name: &String| words.iter().take(2).any(|w| file_name(w) == name.as_str());
    if programs.iter().any(runs) {
        Ok(())
    } else {
        Err(Untrusted::Unexpected {
            pid,
            program: words.into_iter().next().unwrap_or_default(),
        })
    }
}

/// Whether `pid` was run as `up` (a word of its command line) and works in `dir` (compared
/// canonically; an unreadable working directory is not `dir`).
fn is_up_in(pid: i32, dir: &Path) -> bool {
    let is_up = command_words(pid).iter().skip(1).any(|w| w == "up");
    let cwd = std::fs::canonicalize(format!("/proc/{pid}/cwd"));
    is_up && matches!((cwd, std::fs::canonicalize(dir)), (Ok(a), Ok(b)) if a == b)
}

/// The command line of `pid`, word by word (empty when unreadable).
fn command_words(pid: i32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| {
            raw.split(|b| *b == 0)
                .filter(|w| !w.is_empty())
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn file_name(word: &str) -> &str {
    Path::new(word)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(word)
}

/// The file name of the running executable (`mcp-launch`, or whatever it was installed as).
pub fn own_program() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "mcp-launch".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::{spawn, SpawnSpec};

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    /// The pid of a fresh child, once it runs `program` (right after the fork it is still a
    /// copy of the test binary).
    async fn once_running(pid: i32, program: &str) -> i32 {
        for _ in 0..500 {
            if command_words(pid)
                .iter()
                .take(2)
                .any(|w| file_name(w) == program)
            {
                return pid;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        panic!("pid {pid} never ran {program}");
    }

    #[test]
    fn reserved_pids_and_our_own_are_never_vouched_for() {
        let me = std::process::id() as i32;
        let all = Expect::Program(names(&["init", "systemd", "sh"]));
        for pid in [0, 1, -1, me, nix::unistd::getpgrp().as_raw()] {
            let err = vouch(pid, start_time(pid.max(1)), &all).unwrap_err();
            assert_eq!(err, Untrusted::Reserved(pid));
        }
    }

    #[tokio::test]
    async fn a_process_we_started_is_vouched_for_only_with_its_start_time_and_program() {
        let spawned = spawn(&SpawnSpec {
            program: "sleep".into(),
            args: vec!["1000".into()],
            ..SpawnSpec::default()
        })
        .unwrap();
        let pid = once_running(spawned.guard.pgid().unwrap(), "sleep").await;
        let started = start_time(pid);
        let sleep = Expect::Program(names(&["sleep"]));
        assert_eq!(vouch(pid, started, &sleep), Ok(()));
        assert_eq!(
            vouch(pid, None, &sleep),
            Err(Untrusted::NoStartTime(pid)),
            "a planted record without a start time"
        );
        assert_eq!(
            vouch(pid, started.map(|t| t + 1), &sleep),
            Err(Untrusted::Reused(pid))
        );
        let other = Expect::Program(names(&["mcpo", "cloudflared"]));
        assert!(matches!(
            vouch(pid, started, &other),
            Err(Untrusted::Unexpected { .. })
        ));
        // Started by this process: its environment names us.
        let me = std::process::id() as i32;
        let ours = Expect::ChildOf {
            pid: me,
            started: start_time(me).unwrap(),
        };
        assert_eq!(vouch(pid, started, &ours), Ok(()));
        let someone_else = Expect::ChildOf {
            pid: me,
            started: start_time(me).unwrap() + 1,
        };
        assert_eq!(
            vouch(pid, started, &someone_else),
            Err(Untrusted::NotOurChild(pid))
        );
        drop(spawned);
    }

    /// `python3 /venv/bin/mcpo …` runs mcpo: the script is the command line's second word.
    #[tokio::test]
    async fn the_second_word_counts_for_interpreted_programs() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("mcpo");
        std::fs::write(&script, "sleep 1000\n").unwrap();
        let spawned = spawn(&SpawnSpec {
            program: "sh".into(),
            args: vec![script.display().to_string()],
            ..SpawnSpec::default()
        })
        .unwrap();
        let pid = once_running(spawned.guard.pgid().unwrap(), "mcpo").await;
        let mcpo = Expect::Program(names(&["mcpo"]));
        assert_eq!(vouch(pid, start_time(pid), &mcpo), Ok(()));
        drop(spawned);
    }
}
