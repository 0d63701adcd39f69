//! `doctor`: are the external programs a stack needs installed, and do they run?
//!
//! Each check finds a program on `PATH`, runs it with a harmless argument (`--version`,
//! `--help`) in a process group of its own, bounded by a timeout — a hanging binary must not
//! hang `doctor`, and on timeout the whole group is killed so nothing is left behind. The
//! checks run in parallel. This module knows nothing of the terminal: `cli::doctor` renders.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::AsyncReadExt;

use crate::process::{self, which_in, Exit, SpawnSpec};
use serde_json::{json, Value};

/// Default bound of one check. mcpo's first import (FastAPI, pydantic, the MCP SDK) on a cold
/// disk cache takes several seconds; anything slower than this is as good as broken.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(15);

/// After a probe's stdout closes, how long its last stderr lines may take to be drained.
const STDERR_SETTLE: Duration = Duration::from_millis(200);

/// The mcpo release whose pins we know to work (see [`crate::pins`]).
pub use crate::pins::{MCPO_CONSTRAINTS, MCPO_ENV, MCPO_SPEC};

/// Oldest Node.js the reference servers run on.
const MIN_NODE_MAJOR: u64 = 18;

/// How a check ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Found, and it runs.
    Ok,
    /// Not on `PATH`.
    Missing,
    /// On `PATH`, but it fails, hangs or is too old.
    Broken,
}

impl Status {
    /// `ok`, `missing` or `broken`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Missing => "missing",
            Status::Broken => "broken",
        }
    }
}

/// The result of one check.
#[derive(Debug, Clone)]
pub struct Check {
    /// The program checked (`mcpo`, `node`, …).
    pub name: &'static str,
    /// How it went.
    pub status: Status,
    /// Whether `doctor` fails when this is not ok (optional programs only warn when missing).
    pub required: bool,
    /// The version it reported, when it did.
    pub version: Option<String>,
    /// Where it was found on `PATH`.
    pub path: Option<PathBuf>,
    /// What went wrong (the last line of its error output, a timeout, …).
    pub message: Option<String>,
    /// How to fix it, when not ok.
    pub help: Option<String>,
}

impl Check {
    /// True when this check makes `doctor` fail: a required program that is not ok, or any
    /// program that is present but broken.
    pub fn fails(&self) -> bool {
        match self.status {
            Status::Ok => false,
            Status::Missing => self.required,
            Status::Broken => true,
        }
    }

    /// The `--json` object of this check.
    pub fn to_json(&self) -> Value {
        let mut v = json!({"name": self.name, "status": self.status.as_str()});
        if let Some(version) = &self.version {
            v["version"] = json!(version);
        }
        if let Some(path) = &self.path {
            v["path"] = json!(path.display().to_string());
        }
        if let Some(message) = &self.message {
            v["message"] = json!(message);
        }
        if let Some(help) = &self.help {
            v["help"] = json!(help);
        }
        v
    }
}

/// What `doctor` looks at: `PATH` and the bound of each check.
#[derive(Debug, Clone)]
pub struct DoctorOptions {
    /// The search path (the process's `PATH` by default).
    pub path: Option<OsString>,
    /// Bound of each program run.
    pub timeout: Duration,
    /// The mcpo `up` would run instead of PATH's (`MCP_LAUNCH_MCPO`).
    pub mcpo: Option<PathBuf>,
}

impl Default for DoctorOptions {
    fn default() -> Self {
        Self {
            path: std::env::var_os("PATH"),
            timeout: DEFAULT_TIMEOUT,
            mcpo: std::env::var_os(MCPO_ENV)
                .filter(|p| !p.is_empty())
                .map(PathBuf::from),
        }
    }
}

/// Runs every check in parallel; the result is in a fixed order (required first).
pub async fn run(opts: &DoctorOptions) -> Vec<Check> {
    let simple = |name: &'static str, required: bool| check_version(name, required, opts);
    let (python, node, npx, uv, uvx, cloudflared, mcpo) = tokio::join!(
        simple("python3", true),
        simple("node", true),
        simple("npx", true),
        simple("uv", false),
        simple("uvx", false),
        simple("cloudflared", false),
        check_mcpo(opts),
    );
    vec![python, node, npx, uv, uvx, cloudflared, mcpo]
}

fn mcpo_help() -> String {
    format!(
        "optional: `up` serves through its native controller without mcpo (--controller auto \
         takes mcpo only when installed). For --controller mcpo, install it in a venv of its \
         own with its working pins (a plain `pip install mcpo` pulls an MCP SDK 2.x and a \
         FastAPI it cannot run with):\n{}",
        crate::pins::mcpo_install()
    )
}

fn help_for(name: &str) -> String {
    match name {
        "python3" => "install Python 3 (3.10 or newer) with your package manager or from https://www.python.org/downloads/".into(),
        "node" | "npx" => format!(
            "install Node.js {MIN_NODE_MAJOR} or newer (npx ships with it): your package manager, https://nodejs.org/ or nvm"
        ),
        "uv" | "uvx" => "optional (only servers started with uvx need it): `pip install uv`, or see https://docs.astral.sh/uv/".into(),
        "cloudflared" => "optional (only `--tunnel quick|named` needs it): install Cloudflare's cloudflared package (https://pkg.cloudflare.com/) or a release binary from https://github.com/cloudflare/cloudflared/releases".into(),
        "mcpo" => mcpo_help(),
        _ => String::new(),
    }
}

fn blank(name: &'static str, required: bool) -> Check {
    Check {
        name,
        status: Status::Ok,
        required,
        version: None,
        path: None,
        message: None,
        help: None,
    }
}

fn missing(mut check: Check) -> Check {
    check.status = Status::Missing;
    check.message = Some("not found on PATH".into());
    check.help = Some(help_for(check.name));
    check
}

fn broken(mut check: Check, message: String) -> Check {
    check.status = Status::Broken;
    check.message = Some(message);
    check.help = Some(help_for(check.name));
    check
}

/// `NAME --version`: ok with the version it prints, broken when it fails or hangs.
async fn check_version(name: &'static str, required: bool, opts: &DoctorOptions) -> Check {
    let mut check = blank(name, required);
    let Some(path) = opts.path.as_deref().and_then(|path| which_in(name, path)) else {
        return missing(check);
    };
    check.path = Some(path.clone());
    let probe = probe(&path, &["--version"], opts).await;
    if let Err(message) = probe.success() {
        return broken(check, message);
    }
    // Old Pythons print their version on stderr.
    check.version = parse_version(&probe.stdout).or_else(|| parse_version(&probe.stderr));
    if name == "node" {
        if let Some(major) = check.version.as_deref().and_then(major) {
            if major < MIN_NODE_MAJOR {
                let message =
                    format!("Node.js {major} is too old (need {MIN_NODE_MAJOR} or newer)");
                return broken(check, message);
            }
        }
    }
    check
}

/// mcpo: found, `mcpo --help` starts, and its own interpreter can import `mcpo.main` (the
/// import that a bad resolution of FastAPI / the MCP SDK breaks) and tell its version.
async fn check_mcpo(opts: &DoctorOptions) -> Check {
    let mut check = blank("mcpo", false);
    // The one `up` would run: MCP_LAUNCH_MCPO when set, else PATH's.
    let found = match &opts.mcpo {
        Some(path) if path.is_file() => Some(path.clone()),
        Some(path) => {
            let mut check = missing(check);
            check.message = Some(format!(
                "{MCPO_ENV} names {}, which does not exist",
                path.display()
            ));
            return check;
        }
        None => opts.path.as_deref().and_then(|path| which_in("mcpo", path)),
    };
    let Some(path) = found else {
        return missing(check);
    };
    check.path = Some(path.clone());
    let help = probe(&path, &["--help"], opts).await;
    if let Err(message) = help.success() {
        return broken(check, message);
    }
    // `mcpo --help` does not import the server code; its interpreter (the script's shebang)
    // can. A launcher that is not a Python script is taken at its word.
    if let Some(python) = shebang_python(&path) {
        let script = "import importlib.metadata as m, mcpo.main; print(m.version('mcpo'))";
        let import = probe(&python, &["-c", script], opts).await;
        if let Err(message) = import.success() {
            return broken(check, message);
        }
        check.version = parse_version(&import.stdout);
    }
    check
}

/// The interpreter named by `script`'s `#!` line when it is a Python that exists.
fn shebang_python(script: &Path) -> Option<PathBuf> {
    use std::io::Read;
    let mut head = [0u8; 512];
    let n = std::fs::File::open(script).ok()?.read(&mut head).ok()?;
    let text = String::from_utf8_lossy(&head[..n]);
    let line = text.strip_prefix("#!")?.lines().next()?.trim();
    let interpreter = PathBuf::from(line.split_whitespace().next()?);
    let file_name = interpreter.file_name()?.to_string_lossy().into_owned();
    (file_name.starts_with("python") && interpreter.is_file()).then_some(interpreter)
}

/// What a program run produced.
struct Probe {
    /// `Ok(code)` when it exited, `Err(message)` when it could not run or timed out.
    ended: Result<Option<i32>, String>,
    stdout: String,
    stderr: String,
}

impl Probe {
    /// `Ok` when it exited 0, else the message a user sees: the last line of its output.
    fn success(&self) -> Result<(), String> {
        match &self.ended {
            Ok(Some(0)) => Ok(()),
            Ok(code) => {
                let how = match code {
                    Some(c) => format!("exited with code {c}"),
                    None => "was killed by a signal".into(),
                };
                Err(
                    match last_line(&self.stderr).or_else(|| last_line(&self.stdout)) {
                        Some(line) => format!("{how}: {line}"),
                        None => how,
                    },
                )
            }
            Err(message) => Err(message.clone()),
        }
    }
}

/// Runs `program args` through [`crate::process`] (own process group, stderr drained, reaped)
/// with stdin closed, for at most the timeout; on timeout the whole group is killed.
async fn probe(program: &Path, args: &[&str], opts: &DoctorOptions) -> Probe {
    let failed = |message: String| Probe {
        ended: Err(message),
        stdout: String::new(),
        stderr: String::new(),
    };
    let spec = SpawnSpec {
        program: program.to_string_lossy().into_owned(),
        args: args.iter().map(|a| a.to_string()).collect(),
        env: opts
            .path
            .iter()
            .map(|p| ("PATH".to_string(), p.to_string_lossy().into_owned()))
            .collect(),
        ..SpawnSpec::default()
    };
    let spawned = match process::spawn(&spec) {
        Ok(spawned) => spawned,
        Err(e) => return failed(format!("could not start: {e}")),
    };
    drop(spawned.stdin);
    let (mut stdout, guard) = (spawned.stdout, spawned.guard);
    let ran = tokio::time::timeout(opts.timeout, async {
        let mut out = Vec::new();
        let _ = stdout.read_to_end(&mut out).await;
        let _ = guard.exit_watch().wait_for(Option::is_some).await;
        out
    })
    .await;
    match ran {
        Ok(out) => {
            let exit = guard.settle(STDERR_SETTLE).await;
            Probe {
                ended: Ok(match exit {
                    Some(Exit::Code(code)) => Some(code),
                    _ => None,
                }),
                stdout: String::from_utf8_lossy(&out).into_owned(),
                stderr: guard.stderr_tail(40),
            }
        }
        Err(_) => {
            guard.shutdown().await;
            failed(format!(
                "timed out: `{} {}` did not finish within {}s",
                program.file_name().unwrap_or_default().to_string_lossy(),
                args.join(" "),
                opts.timeout.as_secs_f64()
            ))
        }
    }
}

fn last_line(text: &str) -> Option<String> {
    text.lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .map(str::to_owned)
}

/// The first version-looking word of a `--version` output: `v20.11.0` → `20.11.0`,
/// `Python 3.12.3` → `3.12.3`, `cloudflared version 2024.6.1 (built …)` → `2024.6.1`,
/// `uv 0.13.9 (abc 2025-01-01)` → `0.13.9`.
pub fn parse_version(output: &str) -> Option<String> {
    output.split_whitespace().find_map(|word| {
        let word = word.trim_matches(|c: char| matches!(c, '(' | ')' | ',' | ';' | ':'));
        let word = word.strip_prefix(['v', 'V']).unwrap_or(word);
        let mut parts = word.split('.');
        let first = parts.next()?;
        let rest: Vec<&str> = parts.collect();
        let numeric = |p: &str| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit());
        // Later parts may carry a suffix (`1.2.3rc1`, `0.0.20-dev`), but must start with a digit.
        let starts_numeric = |p: &str| p.chars().next().is_some_and(|c| c.is_ascii_digit());
        (numeric(first) && !rest.is_empty() && rest.iter().all(|p| starts_numeric(p)))
            .then(|| word.to_string())
    })
}

/// The major number of a version string.
fn major(version: &str) -> Option<u64> {
    version.split('.').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_found_in_real_outputs() {
        let cases = [
            ("v20.11.1\n", "20.11.1"),
            ("10.2.4\n", "10.2.4"),
            ("Python 3.12.3\n", "3.12.3"),
            ("uv 0.13.9 (1a2b3c4 2025-10-01)\n", "0.13.9"),
            ("uvx 0.13.9\n", "0.13.9"),
            (
                "cloudflared version 2024.6.1 (built 2024-06-12-1334 UTC)\n",
                "2024.6.1",
            ),
            ("0.0.20\n", "0.0.20"),
            ("Python 3.13.0rc1", "3.13.0rc1"),
        ];
        for (output, want) in cases {
            assert_eq!(parse_version(output).as_deref(), Some(want), "{output:?}");
        }
    }

    #[test]
    fn no_version_in_words_or_dates() {
        for output in [
            "",
            "usage: foo [--bar]",
            "built 2024-06-12",
            "version .5",
            "1.",
        ] {
            assert_eq!(parse_version(output), None, "{output:?}");
        }
    }

    #[test]
    fn major_of_a_version() {
        assert_eq!(major("20.11.1"), Some(20));
        assert_eq!(major("x.1"), None);
    }

    #[test]
    fn only_required_or_broken_checks_fail() {
        let mut check = blank("cloudflared", false);
        check.status = Status::Missing;
        assert!(!check.fails());
        check.status = Status::Broken;
        assert!(check.fails());
        let mut node = blank("node", true);
        node.status = Status::Missing;
        assert!(node.fails());
    }
}
