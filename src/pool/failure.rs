//! What went wrong with an upstream server, kept after the fact (for `status`, and for the
//! answers to calls that arrive while the pool backs off), and the error a pool request ends
//! with.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::catalog::ServerProblem;
use crate::error::Actionable;
use crate::mcp::McpError;

/// Why a server is unreachable.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The underlying error's type (`server_exited`, `command_not_found`, …).
    pub cause: &'static str,
    /// What happened, without the stderr tail (that has its own field).
    pub message: String,
    /// What a human can do about the cause.
    pub help: String,
    /// The server's last stderr lines, when it is a local process (already masked). Logged
    /// for the operator (with [`Failure::incident`]), never sent to remote clients: a server's
    /// stderr may hold paths and URLs with keys.
    pub stderr: String,
    /// A short id that ties an answer to a client to the log line with the details.
    pub incident: String,
    /// The server's config entry is at fault (the user must change it), not the server.
    pub is_config: bool,
    /// The scopes a new login must ask for, when the server wanted more (a step-up): the
    /// login command names them.
    pub scope: Option<String>,
}

impl Failure {
    /// A failure from a session error. The message is rebuilt from the variant's fields so the
    /// stderr tail (part of `McpError`'s `Display`) is not repeated in it.
    pub fn from_mcp(error: &McpError) -> Failure {
        let (message, stderr) = match error {
            McpError::Exited {
                method,
                exit,
                stderr_tail,
            } => {
                let how = exit.map_or_else(|| "closed its output".to_string(), |e| e.to_string());
                (format!("the server {how} during {method}"), stderr_tail)
            }
            McpError::InitTimeout {
                fast,
                slow,
                stderr_tail,
            } => (
                format!(
                    "no answer to initialize within {}s",
                    (*fast + *slow).as_secs_f64()
                ),
                stderr_tail,
            ),
            McpError::Closed { stderr_tail } => (
                "the connection to the server is closed".to_string(),
                stderr_tail,
            ),
            other => (other.to_string(), &String::new()),
        };
        let scope = match error {
            McpError::Auth(e) => e.step_up_scope().map(str::to_string),
            _ => None,
        };
        Failure {
            scope,
            ..Failure::new(error.kind(), message, error.help(), stderr.clone())
        }
    }

    /// A failure to (re)connect: a bad config entry or a failed start/handshake.
    pub fn from_problem(problem: &ServerProblem) -> Failure {
        match problem {
            ServerProblem::Mcp(error) => Failure::from_mcp(error),
            ServerProblem::Config(error) => Failure {
                is_config: true,
                ..Failure::new(
                    Actionable::kind(error),
                    error.to_string(),
                    Actionable::help(error),
                    String::new(),
                )
            },
            ServerProblem::Relayed(relayed) => Failure {
                is_config: relayed.is_config,
                scope: relayed.scope.clone(),
                ..Failure::new(
                    relayed.kind,
                    relayed.message.clone(),
                    relayed.help.clone(),
                    String::new(),
                )
            },
        }
    }

    fn new(cause: &'static str, message: String, help: String, stderr: String) -> Failure {
        let facts = format!("{cause}\n{message}\n{stderr}\n{:?}", SystemTime::now());
        let incident = format!("i-{:08x}", crate::catalog::fnv1a(facts.as_bytes()) as u32);
        Failure {
            cause,
            message,
            help,
            stderr,
            incident,
            is_config: false,
            scope: None,
        }
    }

    /// The message with the stderr tail under it, for a warning on our own terminal.
    pub fn with_stderr(&self) -> String {
        if self.stderr.is_empty() {
            self.message.clone()
        } else {
            format!("{}\n{}", self.message, self.stderr)
        }
    }
}

/// Why a request through the pool did not get the server's answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PoolError {
    /// No server of that name in the pool.
    #[error("no server `{server}`")]
    UnknownServer {
        /// The name asked for.
        server: String,
    },
    /// The server is down: it exited, could not start, or the pool is backing off.
    #[error("server `{server}` is unavailable: {}", .failure.message)]
    Unavailable {
        /// The server's name.
        server: String,
        /// Boxed: the error travels in every `Result` of the call path.
        failure: Box<Failure>,
        /// When the next (re)connect may happen; `None` when a call may retry at once.
        retry_at: Option<SystemTime>,
    },
    /// The server answered with a JSON-RPC error or broke the protocol.
    #[error("server `{server}` failed the request: {error}")]
    Upstream {
        /// The server's name.
        server: String,
        /// What it answered.
        error: McpError,
    },
    /// No answer within the timeout (the request was cancelled upstream).
    #[error("{server}: {what} did not answer within {}s", .after.as_secs_f64())]
    Timeout {
        /// The server's name.
        server: String,
        /// The request: `tools/call echo`, `resources/read`, …
        what: String,
        /// The timeout.
        after: Duration,
    },
    /// The pool is stopping.
    #[error("the pool is shutting down")]
    ShuttingDown,
}

impl Actionable for PoolError {
    fn kind(&self) -> &'static str {
        match self {
            Self::UnknownServer { .. } => "unknown_server",
            Self::Unavailable { .. } => "upstream_unavailable",
            Self::Upstream { error, .. } => error.kind(),
            Self::Timeout { .. } => "timeout",
            Self::ShuttingDown => "shutting_down",
        }
    }

    fn help(&self) -> String {
        match self {
            Self::UnknownServer { .. } => "`mcp-launch list` shows the configured servers".into(),
            Self::Unavailable {
                failure, retry_at, ..
            } => format!("{}; {}", failure.help, retry_text(*retry_at)),
            Self::Upstream { error, .. } => error.help(),
            Self::Timeout { .. } => "the request was cancelled; if the tool is just slow, \
                raise the call timeout"
                .into(),
            Self::ShuttingDown => "mcp-launch is stopping; see `mcp-launch status`".into(),
        }
    }
}

/// When the next attempt happens, as the caller can act on it: a UTC wall-clock time (logs
/// and `status` are compared by time) and a countdown.
pub fn retry_text(retry_at: Option<SystemTime>) -> String {
    let Some(at) = retry_at else {
        return "the next call retries it; see `mcp-launch status`".into();
    };
    let since_epoch = at.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    let (h, m, s) = (
        since_epoch / 3600 % 24,
        since_epoch / 60 % 60,
        since_epoch % 60,
    );
    format!(
        "it is restarted on the first call from {h:02}:{m:02}:{s:02} UTC (in {:.1}s); \
         see `mcp-launch status`",
        seconds_until(at)
    )
}

/// Seconds from now until `at` (0 when it has passed).
pub fn seconds_until(at: SystemTime) -> f64 {
    at.duration_since(SystemTime::now())
        .unwrap_or_default()
        .as_secs_f64()
}
