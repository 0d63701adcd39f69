//! The state file `./.mcp-launch/state.json`: what each running stack is (ports, process
//! groups, key, URLs, counts) so that `status`, `share`, `openapi` and `down` — separate
//! processes — can find and act on it.
//!
//! Invariants: written atomically with mode 0600 (it holds keys); every read-modify-write holds
//! an exclusive lock on `state.lock` beside it, so two `up`s in one project never lose each
//! other's stacks; a recorded process is trusted only while its start time still matches
//! (pids are reused).

use std::fs::File;
use std::path::{Path, PathBuf};

use nix::fcntl::Flock;
use serde::{Deserialize, Serialize};

/// The file name inside the project's `.mcp-launch/` directory.
pub const STATE_FILE: &str = "state.json";

/// Why the state file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// Reading, locking or writing failed.
    #[error("cannot {action} {path}: {source}")]
    Io {
        /// What we were doing.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// `.mcp-launch` is a symlink that leads out of the project.
    #[error(
        "{dir} is a symlink to {target}, outside the project; project state is not followed there"
    )]
    Escapes {
        /// The `.mcp-launch` directory.
        dir: PathBuf,
        /// Where the symlink leads.
        target: PathBuf,
    },
    /// The file is not the JSON we write.
    #[error("{path} is not a valid state file: {message}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The parser's message (line and column).
        message: String,
    },
}

impl StateError {
    /// A stable name for the error envelope.
    pub fn kind(&self) -> &'static str {
        match self {
            StateError::Io { .. } => "state_io",
            StateError::Escapes { .. } => "state_dir_escapes",
            StateError::Corrupt { .. } => "state_corrupt",
        }
    }

    /// What to do about it.
    pub fn help(&self) -> String {
        match self {
            StateError::Io { path, .. } => format!(
                "check that {} exists and is writable by you",
                path.parent().unwrap_or(Path::new(".")).display()
            ),
            StateError::Escapes { dir, .. } => format!(
                "remove the symlink (`rm {}`) and run the command again: mcp-launch keeps a project's state inside the project",
                dir.display()
            ),
            StateError::Corrupt { path, .. } => format!(
                "stop leftover processes with `mcp-launch down --force`, which also removes {}",
                path.display()
            ),
        }
    }
}

impl crate::error::Actionable for StateError {
    fn kind(&self) -> &'static str {
        StateError::kind(self)
    }
    fn help(&self) -> String {
        StateError::help(self)
    }
}

/// Everything recorded about the running stacks of one project.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct State {
    /// Format version, for future migrations.
    #[serde(default = "current_version")]
    pub version: u32,
    /// The stacks, in launch order.
    #[serde(default)]
    pub stacks: Vec<StackState>,
}

fn current_version() -> u32 {
    1
}

impl Default for State {
    fn default() -> Self {
        Self {
            version: current_version(),
            stacks: Vec::new(),
        }
    }
}

/// A process we started, identified beyond its pid.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct ProcessRecord {
    /// Its pid, which is also its process group id (it leads its own group).
    pub pgid: i32,
    /// Its start time in clock ticks since boot (see `process::start_time`); `None` where the
    /// platform has no `/proc`.
    pub started: Option<u64>,
}

impl ProcessRecord {
    /// Records the running process `pid`.
    pub fn of(pid: i32) -> Self {
        Self {
            pgid: pid,
            started: crate::process::start_time(pid),
        }
    }

    /// True while the group still has a live member and its leader, if alive, is the process
    /// we recorded.
    pub fn group_alive(&self) -> bool {
        crate::process::is_ours(self.pgid, self.started)
    }

    /// True while the recorded process itself runs (for processes that do not lead a group,
    /// like the supervising `up`).
    pub fn process_alive(&self) -> bool {
        crate::process::is_running(self.pgid, self.started)
    }
}

/// One running stack.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StackState {
    /// The stack's name (from its config file's name).
    pub name: String,
    /// The config file, absolute.
    pub config: PathBuf,
    /// The `mcp-launch up` process that supervises it (and serves its front). It does not lead
    /// a process group: signal it by pid only.
    pub supervisor: ProcessRecord,
    /// Which controller serves the tools (`mcpo` or `native`).
    pub controller: String,
    /// The controller's process group, when it runs as a process of its own.
    pub controller_process: Option<ProcessRecord>,
    /// The controller's port on 127.0.0.1.
    pub controller_port: u16,
    /// The front's bind address.
    pub host: String,
    /// The front's port.
    pub port: u16,
    /// `none`, `quick` or `named`.
    pub tunnel: String,
    /// The tunnel's process group, when one runs.
    pub tunnel_process: Option<ProcessRecord>,
    /// The URL clients use: the tunnel's or `--public-url`, else the local front URL.
    pub public_url: String,
    /// The API key clients send.
    pub api_key: String,
    /// The token of the front's admin endpoint (never shown; `openapi` uses it).
    pub admin_token: String,
    /// Servers in the merged spec with their operation counts.
    #[serde(default)]
    pub servers: Vec<ServerCount>,
    /// Operations in the merged spec.
    pub operations: usize,
    /// Warnings of the last merge.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// When the stack was started (RFC 3339, UTC).
    pub started_at: String,
    /// Restarts of the controller or tunnel so far.
    #[serde(default)]
    pub restarts: u32,
    /// The native bridge's servers as last seen (updated whenever one connects, fails or is
    /// lost); empty with mcpo.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bridge_servers: Vec<BridgeServerState>,
    /// How MCP clients prove who they are at `<public_url>/mcp` (`oauth`, `key`, `none`);
    /// `None` when the front serves no `/mcp` (a stack of an older `up`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_auth: Option<String>,
    /// With `--oidc-client-id`: the provider's client whose login `/mcp`'s clients are
    /// proxied through (`share` names the callback to register there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_login_proxy: Option<LoginProxyState>,
}

/// The login proxy of a stack's `/mcp` (`--auth oidc:ISSUER --oidc-client-id ID`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct LoginProxyState {
    /// The provider (its issuer).
    pub issuer: String,
    /// The client registered at the provider, whose redirect URI must be the stack's callback.
    pub client_id: String,
}

/// One server behind the native bridge.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct BridgeServerState {
    /// The server's name (its path prefix).
    pub name: String,
    /// `up`, `down` or `restarting` (see `native::bridge::ServerState`).
    pub state: String,
    /// Sessions established after the first one.
    #[serde(default)]
    pub restarts: u32,
    /// The last thing that went wrong, if anything did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The process group of a running stdio server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<ProcessRecord>,
}

/// One server of a stack and how many operations it publishes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ServerCount {
    /// The server's name (its path prefix).
    pub name: String,
    /// Its operations in the merged spec.
    pub operations: usize,
}

impl StackState {
    /// The front's local base URL.
    pub fn local_url(&self) -> String {
        let host = match self.host.as_str() {
            "0.0.0.0" | "::" => "127.0.0.1",
            host => host,
        };
        if host.contains(':') {
            format!("http://[{host}]:{}", self.port)
        } else {
            format!("http://{host}:{}", self.port)
        }
    }

    /// The process groups this stack started (tunnel first), without the supervisor, each
    /// with what it is (`cloudflared`, `mcpo`, `server <name>`).
    pub fn groups(&self) -> Vec<(String, ProcessRecord)> {
        let mut out = Vec::new();
        if let Some(p) = self.tunnel_process {
            out.push(("cloudflared".to_string(), p));
        }
        if let Some(p) = self.controller_process {
            out.push(("mcpo".to_string(), p));
        }
        for server in &self.bridge_servers {
            if let Some(p) = server.process {
                out.push((format!("server {}", server.name), p));
            }
        }
        out
    }
}

/// The state file of a project, with its lock.
#[derive(Debug, Clone)]
pub struct StateFile {
    path: PathBuf,
}

impl StateFile {
    /// The state file of the project in `project_dir` (its `.mcp-launch/` directory).
    pub fn in_project(project_dir: &Path) -> Self {
        Self {
            path: project_dir.join(".mcp-launch").join(STATE_FILE),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the state; a missing file is an empty state.
    pub fn read(&self) -> Result<State, StateError> {
        self.check_dir()?;
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| StateError::Corrupt {
                path: self.path.clone(),
                message: e.to_string(),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(State::default()),
            Err(source) => Err(StateError::Io {
                action: "read",
                path: self.path.clone(),
                source,
            }),
        }
    }

    /// Reads, changes and writes the state under the lock; returns what `change` returned.
    /// When the change leaves no stack, the file is removed.
    pub fn update<T>(&self, change: impl FnOnce(&mut State) -> T) -> Result<T, StateError> {
        let _lock = self.lock()?;
        let mut state = self.read()?;
        let result = change(&mut state);
        self.write(&state)?;
        Ok(result)
    }

    /// Like [`StateFile::update`], but a corrupt file counts as empty (for `down --force`).
    pub fn reset_with<T>(&self, change: impl FnOnce(&mut State) -> T) -> Result<T, StateError> {
        let _lock = self.lock()?;
        let mut state = self.read().unwrap_or_default();
        let result = change(&mut state);
        self.write(&state)?;
        Ok(result)
    }

    fn write(&self, state: &State) -> Result<(), StateError> {
        let io = |action, source| StateError::Io {
            action,
            path: self.path.clone(),
            source,
        };
        if state.stacks.is_empty() {
            return match std::fs::remove_file(&self.path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io("remove", e)),
                _ => Ok(()),
            };
        }
        let bytes = serde_json::to_vec_pretty(state).map_err(|e| io("encode", e.into()))?;
        crate::files::write_private(&self.path, &bytes).map_err(|e| io("write", e))
    }

    /// Refuses a `.mcp-launch` that is a symlink leading out of the project: a planted link
    /// would make us read (and trust) state from, and write keys to, anywhere.
    fn check_dir(&self) -> Result<(), StateError> {
        let Some(dir) = self.path.parent() else {
            return Ok(());
        };
        let is_link = std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink());
        if !is_link {
            return Ok(());
        }
        let project = dir.parent().and_then(|p| p.canonicalize().ok());
        let target = dir
            .canonicalize()
            .unwrap_or_else(|_| std::fs::read_link(dir).unwrap_or_default());
        match project {
            Some(project) if target.starts_with(&project) => Ok(()),
            _ => Err(StateError::Escapes {
                dir: dir.to_path_buf(),
                target,
            }),
        }
    }

    fn lock(&self) -> Result<Flock<File>, StateError> {
        self.check_dir()?;
        let lock_path = self.path.with_file_name("state.lock");
        let io = |action, source| StateError::Io {
            action,
            path: lock_path.clone(),
            source,
        };
        if let Some(project) = lock_path.parent().and_then(Path::parent) {
            crate::project::ensure(project).map_err(|e| io("create the directory of", e))?;
        }
        crate::files::lock(&lock_path).map_err(|e| io("lock", e))
    }
}

/// The current time as RFC 3339 UTC (`2026-11-22T16:40:00Z`), without a date crate.
pub fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 → (year, month, day) in the proleptic Gregorian calendar
/// (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack(name: &str) -> StackState {
        StackState {
            name: name.into(),
            config: PathBuf::from(format!("/p/{name}.json")),
            supervisor: ProcessRecord::of(std::process::id() as i32),
            controller: "mcpo".into(),
            controller_process: None,
            controller_port: 8800,
            host: "127.0.0.1".into(),
            port: 8000,
            tunnel: "none".into(),
            tunnel_process: None,
            public_url: "http://127.0.0.1:8000".into(),
            api_key: "k".into(),
            admin_token: "t".into(),
            servers: vec![],
            operations: 0,
            warnings: vec![],
            started_at: now_rfc3339(),
            restarts: 0,
            bridge_servers: Vec::new(),
            mcp_auth: None,
            mcp_login_proxy: None,
        }
    }

    #[test]
    fn update_round_trips_and_an_empty_state_removes_the_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = StateFile::in_project(dir.path());
        assert_eq!(file.read().unwrap(), State::default());
        file.update(|s| s.stacks.push(stack("a"))).unwrap();
        file.update(|s| s.stacks.push(stack("b"))).unwrap();
        let state = file.read().unwrap();
        assert_eq!(state.stacks.len(), 2);
        assert_eq!(state.stacks[1].name, "b");
        let mode = std::fs::metadata(file.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        file.update(|s| s.stacks.clear()).unwrap();
        assert!(!file.path().exists());
    }

    #[test]
    fn corrupt_state_is_an_error_that_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = StateFile::in_project(dir.path());
        std::fs::create_dir_all(file.path().parent().unwrap()).unwrap();
        std::fs::write(file.path(), "{ nope").unwrap();
        let err = file.read().unwrap_err();
        assert_eq!(err.kind(), "state_corrupt");
        assert!(err.to_string().contains("state.json"), "{err}");
        // reset_with treats it as empty.
        file.reset_with(|s| s.stacks.push(stack("a"))).unwrap();
        assert_eq!(file.read().unwrap().stacks.len(), 1);
    }

    #[test]
    fn a_state_dir_linked_out_of_the_project_is_refused() {
        let project = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), project.path().join(".mcp-launch")).unwrap();
        let file = StateFile::in_project(project.path());
        let err = file.read().unwrap_err();
        assert_eq!(err.kind(), "state_dir_escapes", "{err}");
        assert!(err.help().contains("rm "), "{}", err.help());
        assert!(file.update(|s| s.stacks.push(stack("a"))).is_err());
        assert_eq!(
            std::fs::read_dir(elsewhere.path()).unwrap().count(),
            0,
            "nothing written"
        );
        // A link inside the project is the user's own arrangement.
        std::fs::remove_file(project.path().join(".mcp-launch")).unwrap();
        std::fs::create_dir(project.path().join("state")).unwrap();
        std::os::unix::fs::symlink("state", project.path().join(".mcp-launch")).unwrap();
        file.update(|s| s.stacks.push(stack("a"))).unwrap();
        assert_eq!(file.read().unwrap().stacks.len(), 1);
    }

    #[test]
    fn liveness_follows_the_start_time() {
        let me = ProcessRecord::of(std::process::id() as i32);
        assert!(me.process_alive());
        let reused = ProcessRecord {
            started: me.started.map(|t| t + 7),
            ..me
        };
        assert!(!reused.process_alive());
    }

    #[test]
    fn dates_are_civil() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_779), (2026, 11, 22));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert!(now_rfc3339().ends_with('Z'));
    }

    #[test]
    fn local_url_maps_wildcard_binds_to_loopback() {
        let mut s = stack("a");
        assert_eq!(s.local_url(), "http://127.0.0.1:8000");
        s.host = "0.0.0.0".into();
        assert_eq!(s.local_url(), "http://127.0.0.1:8000");
        s.host = "::1".into();
        assert_eq!(s.local_url(), "http://[::1]:8000");
    }
}
