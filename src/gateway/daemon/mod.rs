//! The gateway's local socket: how the command line rides a warm gateway, and how `status`
//! sees every gateway running for this user.
//!
//! Every `serve` listens on a unix socket in the user's runtime directory (0700; the socket
//! 0600; peers of another user are turned away): `g-<pid>.sock` for a gateway serving a
//! client, `d-<key>.sock` for a daemon (`serve --daemon`), where the key hashes the binary's
//! version, the working directory, the config files, the `.env` files and every server as
//! resolved (a changed variable means another daemon) — one daemon per user and config set. `call` finds the daemon of its config set by that name and sends its calls
//! over the daemon's warm sessions; with none running it takes the direct path.
//!
//! The protocol is one JSON object per line each way, answered out of order by `id`:
//! `{"id":1,"op":"call","server":"s","tool":"t","arguments":{},"timeout_ms":30000}` →
//! `{"id":1,"result":<CallToolResult>}` or `{"id":1,"error":{"type","message","help","usage"}}`;
//! `{"op":"status"}` → the gateway and its upstreams; `{"op":"stop"}` ends a daemon;
//! `{"op":"upstream","server":"s","action":"stop"|"restart"}` ends one upstream's session (and
//! starts it again) — `mcp-launch top`'s keys; `{"op":"reload"}` rebuilds the catalog from the
//! overrides and tool approvals as they are now and answers `{"kind","pid","socket","tools"}`
//! once it has (`tool approve` and the overrides' edits tell every gateway so).
//!
//! `list`, `inspect` and `search` read through it too (the daemon sends data, the command line
//! renders it as on the direct path): `{"op":"list","definitions":bool}` → `{"reports":[…]}`
//! (every server it serves, starting nothing; without definitions, `null`s stand for those of
//! a server whose tools are all counted and untouched by the overrides); `{"op":"inspect","server":"s"}` → `{"report":{…}}` (listed live
//! over the pool's session, started lazily); `{"op":"search","query","method","limit",
//! "server","schema"}` → `{"servers":[…],"hits":[…],"searched","unavailable"}`, or a
//! `not_ready` error while a search by meaning could not rank as the command line would.

pub mod client;
mod server;
mod views;

use std::fs::DirBuilder;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tokio::net::UnixListener;

pub use self::client::{CallRequest, Client, SearchAnswer, SearchRequest};
pub use self::server::{listen, Info, Kind};

/// The longest request or answer line (a tool result included).
const MAX_LINE: usize = 64 * 1024 * 1024;

/// Why the daemon could not be reached or asked.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// The runtime directory is missing, unsafe or cannot be made.
    #[error("the runtime directory {path} cannot hold our sockets: {reason}")]
    RuntimeDir {
        /// The directory.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A daemon for this config set answers already.
    #[error("a daemon for this config set is running already ({socket})")]
    AlreadyRunning {
        /// Its socket.
        socket: PathBuf,
    },
    /// No daemon runs for this config set.
    #[error("no daemon runs for this config set")]
    NotRunning,
    /// The socket could not be created, reached, read or written.
    #[error("{}: {source}", .socket.display())]
    Io {
        /// The socket.
        socket: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// The daemon did not answer in time or broke the protocol.
    #[error("the daemon at {} {problem}", .socket.display())]
    Protocol {
        /// The socket.
        socket: PathBuf,
        /// What happened.
        problem: String,
    },
    /// A daemon we started did not come up.
    #[error("the daemon did not start within {seconds} s")]
    StartFailed {
        /// How long we waited.
        seconds: u64,
        /// Its log.
        log: PathBuf,
    },
    /// The daemon answered with an error (the gateway's own, passed on).
    #[error("{message}")]
    Remote {
        /// The error's type.
        kind: String,
        /// Its message.
        message: String,
        /// What to do.
        help: String,
        /// Whether the caller's input was wrong (exit 2) rather than a server (exit 1).
        usage: bool,
    },
}

impl DaemonError {
    /// True when what was asked cannot work as asked (exit 2): a second daemon, an unsafe
    /// runtime directory, a call the gateway refused; false when a server or the daemon
    /// failed (exit 1).
    pub fn is_usage(&self) -> bool {
        match self {
            Self::AlreadyRunning { .. } | Self::RuntimeDir { .. } => true,
            Self::Remote { usage, .. } => *usage,
            _ => false,
        }
    }
}

impl crate::error::Actionable for DaemonError {
    fn kind(&self) -> &'static str {
        match self {
            Self::RuntimeDir { .. } => "runtime_dir",
            Self::AlreadyRunning { .. } => "daemon_running",
            Self::NotRunning => "daemon_not_running",
            Self::Io { .. } => "daemon_unreachable",
            Self::Protocol { .. } => "daemon_protocol",
            Self::StartFailed { .. } => "daemon_start_failed",
            Self::Remote { kind, .. } => remote_kind(kind),
        }
    }

    fn help(&self) -> String {
        match self {
            Self::RuntimeDir { .. } => {
                "set XDG_RUNTIME_DIR to a directory only you can write (0700)".into()
            }
            Self::AlreadyRunning { .. } => {
                "use it (`mcp-launch call` finds it), or `mcp-launch daemon stop` first".into()
            }
            Self::NotRunning => "start one with `mcp-launch serve --daemon &`".into(),
            Self::Io { .. } | Self::Protocol { .. } => {
                "`mcp-launch daemon stop` and try again; --daemon off takes the direct path".into()
            }
            Self::StartFailed { log, .. } => format!("read its log: {}", log.display()),
            Self::Remote { help, .. } => help.clone(),
        }
    }
}

/// The types of error a gateway call can answer with (an unknown one reads `daemon_error`).
fn remote_kind(kind: &str) -> &'static str {
    const KINDS: &[&str] = &[
        "unknown_tool",
        "tool_denied",
        "tool_withheld",
        "unknown_item",
        "invalid_arguments",
        "bad_input",
        "server_error",
        "unknown_server",
        "upstream_unavailable",
        "timeout",
        "shutting_down",
        "cancelled",
        "server_exited",
        "init_timeout",
        "command_not_found",
        "spawn_failed",
        "protocol_error",
        "http_error",
        "connection_failed",
        "connection_closed",
        "message_too_large",
        "server_stalled",
        "not_a_daemon",
        "bad_request",
        "not_ready",
        "config_not_found",
        "config_unreadable",
        "env_file_not_found",
        "env_file_unreadable",
        "environment",
        "github",
        "invalid_config",
        "invalid_env_file",
        "invalid_interpolation",
        "invalid_json",
        "invalid_server",
        "undeclared_variable",
        "unset_variable",
        "untrusted_directory",
        "needs_login",
        "auth_refused",
        "auth_failed",
        "auth_client_rejected",
    ];
    KINDS
        .iter()
        .find(|k| **k == kind)
        .copied()
        .unwrap_or("daemon_error")
}

/// The directory of our sockets: `$XDG_RUNTIME_DIR/mcp-launch`, else
/// `<state dir>/mcp-launch/run`; made 0700, and refused when another user owns it or others
/// can write it.
pub fn runtime_dir() -> Result<PathBuf, DaemonError> {
    let base = dirs::runtime_dir()
        .map(|d| d.join("mcp-launch"))
        .or_else(|| dirs::state_dir().map(|d| d.join("mcp-launch").join("run")))
        .ok_or_else(|| DaemonError::RuntimeDir {
            path: PathBuf::from("$XDG_RUNTIME_DIR"),
            reason: "neither XDG_RUNTIME_DIR nor HOME is set".into(),
        })?;
    let refuse = |reason: String| DaemonError::RuntimeDir {
        path: base.clone(),
        reason,
    };
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&base)
        .map_err(|e| refuse(e.to_string()))?;
    let meta = std::fs::symlink_metadata(&base).map_err(|e| refuse(e.to_string()))?;
    if !meta.is_dir() {
        return Err(refuse("it is not a directory (a symlink?)".into()));
    }
    if meta.uid() != nix::unistd::geteuid().as_raw() {
        return Err(refuse("another user owns it".into()));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| refuse(e.to_string()))?;
    }
    Ok(base)
}

/// A config set as the daemon's key sees it.
pub struct ConfigSet<'a> {
    /// The working directory (where the overrides live).
    pub cwd: &'a Path,
    /// The config files.
    pub configs: &'a [PathBuf],
    /// The `--env-file`s.
    pub env_files: &'a [PathBuf],
    /// Each server's identity as resolved now (`catalog::server_identity`: command, args, env,
    /// URL, headers after interpolation), so a changed variable means another daemon.
    pub servers: &'a [String],
}

/// The daemon socket of a config set: the same version, directory, files and resolved servers
/// give the same name.
pub fn daemon_socket(dir: &Path, set: &ConfigSet<'_>) -> PathBuf {
    let mut hash = Sha256::new();
    hash.update(env!("CARGO_PKG_VERSION"));
    for part in std::iter::once(set.cwd).chain(set.configs.iter().map(PathBuf::as_path)) {
        hash.update([0]);
        hash.update(canonical(part).as_os_str().as_encoded_bytes());
    }
    for file in set.env_files {
        hash.update([1]);
        hash.update(canonical(file).as_os_str().as_encoded_bytes());
    }
    for server in set.servers {
        hash.update([2]);
        hash.update(server.as_bytes());
    }
    let digest = hash.finalize();
    let key: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    dir.join(format!("d-{key}.sock"))
}

/// The socket of a gateway serving a client (stdio or HTTP).
pub fn gateway_socket(dir: &Path) -> PathBuf {
    dir.join(format!("g-{}.sock", std::process::id()))
}

/// The log of a daemon started on demand (beside its socket).
pub fn daemon_log(socket: &Path) -> PathBuf {
    socket.with_extension("log")
}

/// Every gateway socket in `dir`, daemons first.
pub fn sockets(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "sock"))
        .collect();
    found.sort();
    found
}

/// Listens at `socket`, 0600. A file left by a gateway that died is replaced; a live one is
/// refused.
///
/// The socket is bound and listening under a private name first, then linked into place: a
/// client that connects while it is bound but not yet listening is refused, takes the file for
/// a dead gateway's and removes it — and the gateway would listen where nobody looks. Linking
/// also refuses a second gateway that claims the same path at the same moment.
pub async fn bind(socket: &Path) -> Result<UnixListener, DaemonError> {
    if Client::connect(socket).await?.is_some() {
        return Err(DaemonError::AlreadyRunning {
            socket: socket.to_path_buf(),
        });
    }
    let io = |source| DaemonError::Io {
        socket: socket.to_path_buf(),
        source,
    };
    let private = private_name(socket);
    let _ = std::fs::remove_file(&private);
    let listener = UnixListener::bind(&private).map_err(io)?;
    let placed = std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o600))
        .and_then(|()| std::fs::hard_link(&private, socket));
    let _ = std::fs::remove_file(&private);
    placed.map_err(io)?;
    Ok(listener)
}

/// A name beside `socket` for binding it before it is placed: this process's and this
/// bind's own, without `.sock` (no one lists it), and short (a socket's path has at most 107
/// bytes).
fn private_name(socket: &Path) -> PathBuf {
    static BINDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = BINDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    socket.with_file_name(format!(".bind-{}-{n}", std::process::id()))
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests;
