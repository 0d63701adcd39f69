//! What the bridge answers when a call does not succeed: the front's JSON shape,
//! `{"error": {"type", "message", "help", …}}`, with the extra facts each case needs
//! (`violations`, `expected`, `stderr`, the tool's own `result`). Clients are often LLM agents:
//! the `help` line is what lets them recover on their own.

use std::time::{Duration, SystemTime};

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};

use crate::mcp::McpError;
use crate::pool::{retry_text, seconds_until, Failure, PoolError};

use super::CALL_TIMEOUT_ENV;

/// Why a request to the bridge did not get the tool's answer.
#[derive(Debug, Clone, thiserror::Error)]
pub(super) enum BridgeError {
    /// No `Authorization: Bearer <key>`, or not ours.
    #[error("missing or wrong controller key")]
    Unauthorized,
    /// A path the bridge does not serve.
    #[error("no route for {path}")]
    NotFound { path: String },
    /// A path that cannot be decoded.
    #[error("bad request: {reason}")]
    BadRequest { reason: String },
    /// A route called with the wrong method.
    #[error("{method} is not allowed on {path}")]
    MethodNotAllowed {
        method: String,
        path: String,
        /// The route's methods, for the `Allow` header (RFC 9110 §15.5.6 requires it).
        allow: &'static str,
    },
    /// The body is over the limit.
    #[error("the request body is over {limit} bytes")]
    BodyTooLarge { limit: usize },
    /// No server of that name.
    #[error("no server `{server}`")]
    UnknownServer {
        server: String,
        servers: Vec<String>,
    },
    /// The server has no tool of that name.
    #[error("server `{server}` has no tool `{tool}`")]
    UnknownTool {
        server: String,
        tool: String,
        suggestions: Vec<String>,
    },
    /// The body is not JSON.
    #[error("the body is not valid JSON: {reason}")]
    InvalidJson { reason: String },
    /// The arguments do not fit the tool's `inputSchema` (or are not an object).
    #[error("invalid arguments for {server}/{tool}: {}", .violations.join("; "))]
    InvalidArguments {
        server: String,
        tool: String,
        violations: Vec<String>,
        expected: String,
    },
    /// The tool ran and answered `isError: true`.
    #[error("{message}")]
    ToolError {
        message: String,
        /// The `CallToolResult` as the server sent it.
        result: Value,
    },
    /// The tool did not answer within the call timeout.
    #[error("{server}/{tool} did not answer within {}s", .after.as_secs_f64())]
    Timeout {
        server: String,
        tool: String,
        after: Duration,
    },
    /// The server is down: it exited, could not start, or the bridge is backing off.
    #[error("server `{server}` is unavailable: {}", .failure.message)]
    Unavailable {
        server: String,
        /// Boxed: the error travels in every `Result` of the call path.
        failure: Box<Failure>,
        /// When the next (re)connect may happen; `None` when a call may retry at once.
        retry_at: Option<SystemTime>,
    },
    /// The server answered with a JSON-RPC error or broke the protocol.
    #[error("server `{server}` failed the call: {error}")]
    Upstream { server: String, error: McpError },
    /// The server wants an OAuth login (none held, or more scopes: a step-up).
    #[error("server `{server}` needs a login: {reason}")]
    NeedsLogin {
        server: String,
        reason: String,
        /// The exact command a person runs (the scopes, the stack's config).
        command: String,
    },
    /// The bridge is stopping.
    #[error("the bridge is shutting down")]
    ShuttingDown,
    /// `POST /read_output` could not read: the handle is gone or the request is wrong.
    #[error("{message}")]
    Read {
        kind: &'static str,
        message: String,
        help: String,
    },
}

impl From<crate::outputs::OutputsError> for BridgeError {
    fn from(error: crate::outputs::OutputsError) -> Self {
        use crate::error::Actionable;
        BridgeError::Read {
            kind: error.kind(),
            message: error.to_string(),
            help: error.help(),
        }
    }
}

impl BridgeError {
    /// `self`, or for a server that needs an OAuth login, the error naming the exact command
    /// that logs in to it (the scopes from a step-up's challenge).
    pub(super) fn naming_login(self, login: &crate::auth::client::LoginContext) -> BridgeError {
        let (server, reason, scope) = match &self {
            Self::Upstream {
                server,
                error: McpError::Auth(auth),
            } if auth.kind() == "needs_login" => (server, auth.to_string(), auth.step_up_scope()),
            Self::Unavailable {
                server, failure, ..
            } if failure.cause == "needs_login" => (server, failure.message.clone(), None),
            _ => return self,
        };
        BridgeError::NeedsLogin {
            server: server.clone(),
            command: login.command(server, scope),
            reason,
        }
    }
}

impl From<PoolError> for BridgeError {
    fn from(error: PoolError) -> Self {
        match error {
            PoolError::UnknownServer { server } => BridgeError::UnknownServer {
                server,
                servers: Vec::new(),
            },
            PoolError::Unavailable {
                server,
                failure,
                retry_at,
            } => BridgeError::Unavailable {
                server,
                failure,
                retry_at,
            },
            PoolError::Upstream { server, error } => BridgeError::Upstream { server, error },
            PoolError::Timeout {
                server,
                what,
                after,
            } => BridgeError::Timeout {
                server,
                tool: what,
                after,
            },
            PoolError::ShuttingDown => BridgeError::ShuttingDown,
        }
    }
}

impl BridgeError {
    /// The HTTP status (see the table in the module documentation of `bridge`).
    pub(super) fn status(&self) -> StatusCode {
        match self {
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::BadRequest { .. } | Self::InvalidJson { .. } => StatusCode::BAD_REQUEST,
            Self::NotFound { .. } | Self::UnknownServer { .. } | Self::UnknownTool { .. } => {
                StatusCode::NOT_FOUND
            }
            Self::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            Self::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Self::InvalidArguments { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            Self::ToolError { .. } => StatusCode::FAILED_DEPENDENCY,
            Self::Unavailable { .. } | Self::Upstream { .. } | Self::NeedsLogin { .. } => {
                StatusCode::BAD_GATEWAY
            }
            Self::ShuttingDown => StatusCode::SERVICE_UNAVAILABLE,
            Self::Timeout { .. } => StatusCode::GATEWAY_TIMEOUT,
            Self::Read { kind, .. } => match *kind {
                "unknown_handle" | "expired_handle" => StatusCode::NOT_FOUND,
                "invalid_read" => StatusCode::UNPROCESSABLE_ENTITY,
                _ => StatusCode::INTERNAL_SERVER_ERROR,
            },
        }
    }

    /// The stable `type` of the JSON error.
    pub(super) fn kind(&self) -> &'static str {
        match self {
            Self::Unauthorized => "unauthorized",
            Self::NotFound { .. } => "not_found",
            Self::BadRequest { .. } => "bad_request",
            Self::MethodNotAllowed { .. } => "method_not_allowed",
            Self::BodyTooLarge { .. } => "body_too_large",
            Self::UnknownServer { .. } => "unknown_server",
            Self::UnknownTool { .. } => "unknown_tool",
            Self::InvalidJson { .. } => "invalid_json",
            Self::InvalidArguments { .. } => "invalid_arguments",
            Self::ToolError { .. } => "tool_error",
            Self::Timeout { .. } => "timeout",
            Self::Unavailable { .. } => "upstream_unavailable",
            Self::Upstream { error, .. } => error.kind(),
            Self::NeedsLogin { .. } => "needs_login",
            Self::ShuttingDown => "shutting_down",
            Self::Read { kind, .. } => kind,
        }
    }

    /// The next step for the caller.
    pub(super) fn help(&self) -> String {
        match self {
            Self::Unauthorized => "the native controller only answers the stack's front, which \
                sends `Authorization: Bearer <internal key>`; call the front instead"
                .into(),
            Self::NotFound { .. } => "tools are at `POST /<server>/<tool>`; `GET /openapi.json` \
                and `GET /<server>/openapi.json` describe them"
                .into(),
            Self::BadRequest { .. } => "call plain `/<server>/<tool>` paths".into(),
            Self::MethodNotAllowed { .. } => "tools take POST with a JSON object body; \
                `/<server>/openapi.json` and `/<server>/docs` take GET"
                .into(),
            Self::BodyTooLarge { .. } => "send smaller arguments".into(),
            Self::UnknownServer { servers, .. } => {
                format!("the servers: `{}`", servers.join("`, `"))
            }
            Self::UnknownTool { suggestions, .. } if suggestions.is_empty() => {
                "`GET /<server>/openapi.json` lists the server's tools".into()
            }
            Self::UnknownTool { suggestions, .. } => format!(
                "did you mean `{}`? `GET /<server>/openapi.json` lists the server's tools",
                suggestions.join("`, `")
            ),
            Self::InvalidJson { .. } => "send the arguments as one JSON object (an empty body \
                means `{}`)"
                .into(),
            Self::InvalidArguments { .. } => "fix the arguments to match `expected` (the tool's \
                inputSchema is in `/<server>/openapi.json`)"
                .into(),
            Self::ToolError { .. } => "the tool ran and reported a failure (isError: true); \
                `result` holds its whole answer; check the arguments and the message"
                .into(),
            Self::Timeout { .. } => format!(
                "the call was cancelled; if the tool is just slow, raise {CALL_TIMEOUT_ENV} \
                 (seconds) for the stack"
            ),
            Self::Unavailable {
                failure, retry_at, ..
            } => format!("{}; {}", failure.help, retry_text(*retry_at)),
            Self::Upstream { error, .. } => error.help(),
            Self::NeedsLogin { command, .. } => format!(
                "a person must run `{command}` (a browser step, or a code to enter on another \
                 device with --device); do not retry the call before"
            ),
            Self::ShuttingDown => "the stack is stopping; see `mcp-launch status`".into(),
            Self::Read { help, .. } => help.clone(),
        }
    }

    /// The JSON body: the common envelope plus the facts of this case.
    pub(super) fn body(&self) -> Value {
        let mut error = Map::new();
        error.insert("type".into(), json!(self.kind()));
        error.insert("message".into(), json!(self.to_string()));
        error.insert("help".into(), json!(self.help()));
        let mut body = Map::new();
        match self {
            Self::InvalidArguments {
                violations,
                expected,
                ..
            } => {
                error.insert("violations".into(), json!(violations));
                error.insert("expected".into(), json!(expected));
            }
            Self::Unavailable { failure, .. } => {
                error.insert("cause".into(), json!(failure.cause));
                error.insert("incident".into(), json!(failure.incident));
            }
            Self::ToolError { result, .. } => {
                body.insert("result".into(), result.clone());
            }
            _ => {}
        }
        body.insert("error".into(), Value::Object(error));
        Value::Object(body)
    }
}

impl IntoResponse for BridgeError {
    fn into_response(self) -> Response {
        let mut response = (self.status(), Json(self.body())).into_response();
        let headers = response.headers_mut();
        match &self {
            Self::Unauthorized => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            Self::MethodNotAllowed { allow, .. } => {
                headers.insert(header::ALLOW, HeaderValue::from_static(allow));
            }
            Self::Unavailable {
                retry_at: Some(at), ..
            } => {
                let secs = seconds_until(*at).ceil().max(1.0) as u64;
                headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
            }
            _ => {}
        }
        response
    }
}
