//! Errors of the MCP client. Each variant carries the facts a user needs to act: the phase,
//! the exit status, the stderr tail, the window that expired.

use std::time::Duration;

use crate::process::{Exit, SpawnError};

use super::message::RpcError;

/// Why talking to a server failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum McpError {
    /// The server process could not be started.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    /// The server process ended (or closed its stdout) while we waited for `method`.
    #[error("server {} during {method}{}", exit_text(.exit), tail_text(.stderr_tail))]
    Exited {
        /// The request that was pending (or the phase).
        method: String,
        /// How the process ended, if it did.
        exit: Option<Exit>,
        /// The last stderr lines.
        stderr_tail: String,
    },
    /// No answer to `initialize` within the fast and then the slow window.
    #[error("no answer to initialize after {} (fast window {}, then slow window {}){}", secs(*.fast + *.slow), secs(*.fast), secs(*.slow), tail_text(.stderr_tail))]
    InitTimeout {
        /// The first window.
        fast: Duration,
        /// The second window (`MCP_INIT_TIMEOUT_SEC`).
        slow: Duration,
        /// The last stderr lines.
        stderr_tail: String,
    },
    /// A request got no answer in time.
    #[error("{method} got no answer within {}", secs(*.after))]
    Timeout {
        /// The request (e.g. `tools/call echo`).
        method: String,
        /// The limit that expired.
        after: Duration,
    },
    /// Our caller cancelled the request (the server was told with `notifications/cancelled`).
    #[error("{method} was cancelled")]
    Cancelled {
        /// The request.
        method: String,
    },
    /// The server answered with a JSON-RPC error.
    #[error("{method} failed: {error}")]
    Rpc {
        /// The request that failed.
        method: String,
        /// The server's error (boxed: it carries arbitrary `data`).
        error: Box<RpcError>,
    },
    /// The server broke the protocol (e.g. a result of the wrong shape).
    #[error("protocol error: {0}")]
    Protocol(String),
    /// An HTTP server answered with an error status.
    #[error("HTTP {status} from {}{}", super::redact::url(.url), if .body.is_empty() { String::new() } else { format!(": {}", .body) })]
    Http {
        /// The URL we called.
        url: String,
        /// The HTTP status code.
        status: u16,
        /// The start of the response body.
        body: String,
    },
    /// An HTTP server could not be reached.
    #[error("cannot reach {}: {message}", super::redact::url(.url))]
    Connect {
        /// The URL we called.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// A message from the server is larger than we take.
    #[error("a message from {origin} is larger than {} MiB; it was not read", .limit / (1024 * 1024))]
    TooLarge {
        /// The server's URL (or command).
        origin: String,
        /// The cap, in bytes.
        limit: usize,
    },
    /// The server stopped taking messages: the queue to it stayed full until the timeout.
    #[error("{method} could not be sent: the server stopped reading its input ({queued} messages are waiting)")]
    Stalled {
        /// The request that could not be sent.
        method: String,
        /// Messages waiting to be written.
        queued: usize,
    },
    /// A server of the 2026-07-28 revision asked for input (an `InputRequiredResult`) that
    /// this session cannot give, or kept asking past the round limit.
    #[error("{method}: the server asked for input ({asked}) and {reason}")]
    InputRequired {
        /// The request (e.g. `tools/call deploy`).
        method: String,
        /// What it asked for (`elicitation/create`, …).
        asked: String,
        /// Why it got no answer.
        reason: String,
    },
    /// OAuth to the server failed, or it needs a person to log in (`auth login`).
    #[error(transparent)]
    Auth(#[from] crate::auth::client::AuthError),
    /// The connection is closed; no more requests can be sent.
    #[error("connection to the server is closed{}", tail_text(.stderr_tail))]
    Closed {
        /// The last stderr lines, if any.
        stderr_tail: String,
    },
}

/// `6s`, `0.5s`, `1.25s`: whole seconds without decimals.
fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0}s")
    } else {
        format!("{}s", (s * 1000.0).round() / 1000.0)
    }
}

fn exit_text(exit: &Option<Exit>) -> String {
    match exit {
        Some(exit) => exit.to_string(),
        None => "closed its output".to_string(),
    }
}

fn tail_text(tail: &str) -> String {
    if tail.is_empty() {
        String::new()
    } else {
        let indented: Vec<String> = tail.lines().map(|l| format!("    {l}")).collect();
        format!("; last stderr lines:\n{}", indented.join("\n"))
    }
}

impl McpError {
    /// A stable snake_case name for the `type` field of the JSON error envelope.
    pub fn kind(&self) -> &'static str {
        match self {
            McpError::Spawn(SpawnError::NotFound { .. }) => "command_not_found",
            McpError::Spawn(_) => "spawn_failed",
            McpError::Exited { .. } => "server_exited",
            McpError::InitTimeout { .. } => "init_timeout",
            McpError::Timeout { .. } => "timeout",
            McpError::Cancelled { .. } => "cancelled",
            McpError::Rpc { .. } => "server_error",
            McpError::Protocol(_) => "protocol_error",
            McpError::Http { .. } => "http_error",
            McpError::Connect { .. } => "connection_failed",
            McpError::Closed { .. } => "connection_closed",
            McpError::TooLarge { .. } => "message_too_large",
            McpError::Stalled { .. } => "server_stalled",
            McpError::InputRequired { .. } => "input_required",
            McpError::Auth(e) => e.kind(),
        }
    }

    /// What the user can do about it.
    pub fn help(&self) -> String {
        match self {
            McpError::Spawn(SpawnError::NotFound { program }) => format!(
                "install `{program}` or put it on PATH, or use an absolute path in the server's \"command\" (npx comes with Node.js, uvx with uv: `pip install uv`)"
            ),
            McpError::Spawn(SpawnError::PermissionDenied { program }) => {
                format!("make `{program}` executable (chmod +x) or fix the path in \"command\"")
            }
            McpError::Spawn(SpawnError::MissingCwd { .. }) => {
                "fix the server's \"cwd\" in the config file, or create the directory".into()
            }
            McpError::Spawn(SpawnError::Other { .. }) => {
                "check the server's \"command\" and \"args\" in the config file".into()
            }
            McpError::Exited { .. } => {
                "the server crashed: read its stderr above; run its command by hand to see the full output, and check its args and env in the config".into()
            }
            McpError::InitTimeout { .. } => {
                "a first `npx`/`uvx` run may need longer: retry with MCP_INIT_TIMEOUT_SEC=60; if it never answers, the command may not be an MCP stdio server (run it with -vv to see what it prints)".into()
            }
            McpError::Timeout { .. } => {
                "raise the limit with --timeout SECONDS, or check that the server is not stuck (-vv shows the traffic)".into()
            }
            McpError::Cancelled { .. } => "the request was cancelled by its caller".into(),
            McpError::Rpc { .. } => {
                "the server refused the request; check the arguments against `mcp-launch inspect SERVER TOOL`".into()
            }
            McpError::Protocol(_) => {
                "the server does not follow the MCP protocol; run with -vv to see the traffic".into()
            }
            McpError::Http { status: 401 | 403, .. } => {
                "check the server's \"headers\" (e.g. an Authorization token) in the config".into()
            }
            McpError::Http { .. } | McpError::Connect { .. } => {
                "check the server's \"url\" and that the server is running".into()
            }
            McpError::Closed { .. } => "the server went away; run the command again".into(),
            McpError::TooLarge { .. } => {
                format!("the server sent more than any tool result needs; check the server (-vv shows the traffic) or ask a narrower question of the tool; {} raises the cap", super::limits::MESSAGE_BYTES.name)
            }
            McpError::InputRequired { .. } => {
                "the tool asks its user for input (elicitation, sampling or roots): call it from an MCP client that offers them, through `mcp-launch serve`".into()
            }
            McpError::Auth(e) => e.help(),
            McpError::Stalled { .. } => {
                format!("the server is stuck (it no longer reads stdin or accepts requests): restart it; if it repeats, report it to the server's authors ({} sets how many messages may wait for it)", super::limits::QUEUED_MESSAGES.name)
            }
        }
    }
}

impl crate::error::Actionable for McpError {
    fn kind(&self) -> &'static str {
        McpError::kind(self)
    }
    fn help(&self) -> String {
        McpError::help(self)
    }
}
