//! What the front answers when it does not forward: one JSON shape,
//! `{"error": {"type", "message", "help"}}`, whose `help` names the next step. Clients are
//! often LLM agents; a precise, actionable error is what lets them recover on their own.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::error::Actionable;

/// Why the front refused or could not complete a request.
#[derive(Debug, Clone, thiserror::Error)]
pub enum FrontError {
    /// No API key, or not this stack's.
    #[error("missing or wrong API key for stack `{stack}`")]
    Unauthorized {
        /// The stack.
        stack: String,
    },
    /// The admin endpoint was called without the admin token.
    #[error("missing or wrong admin token")]
    AdminUnauthorized,
    /// The path has `.`/`..`/empty segments, an encoded slash, a bad escape or similar.
    #[error("rejected path: {reason}")]
    BadPath {
        /// What is wrong with it.
        reason: String,
    },
    /// A front route called with the wrong method (e.g. `POST /healthz`).
    #[error("{method} is not allowed on {path}")]
    MethodNotAllowed {
        /// The method used.
        method: String,
        /// The route.
        path: String,
    },
    /// The request body is not what the endpoint takes.
    #[error("bad request body: {reason}")]
    BadBody {
        /// serde_json's message.
        reason: String,
    },
    /// The stack has not published its spec (and gate) yet.
    #[error("stack `{stack}` has not published its API yet")]
    NotPublished {
        /// The stack.
        stack: String,
    },
    /// No server of that name in the stack.
    #[error("stack `{stack}` has no server `{server}`")]
    UnknownServer {
        /// The stack.
        stack: String,
        /// The name asked for.
        server: String,
        /// The stack's enabled servers.
        enabled: Vec<String>,
    },
    /// The server is disabled by the overrides.
    #[error("server `{server}` is disabled in stack `{stack}`")]
    ServerDisabled {
        /// The stack.
        stack: String,
        /// The server.
        server: String,
        /// The stack started it (it was disabled later), so a new spec can enable it again.
        started: bool,
    },
    /// The tool is denied by the overrides.
    #[error("tool `{tool}` of server `{server}` is denied in stack `{stack}`")]
    ToolDenied {
        /// The stack.
        stack: String,
        /// The server.
        server: String,
        /// The tool.
        tool: String,
    },
    /// The tool's definition changed since it was approved, and its server is pinned strictly.
    #[error("tool `{tool}` of server `{server}` changed since it was approved and is withheld (pin: strict)")]
    ToolWithheld {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
    },
    /// The server has no tool of that name.
    #[error("server `{server}` has no tool `{tool}`")]
    UnknownTool {
        /// The server.
        server: String,
        /// The name asked for.
        tool: String,
        /// Allowed tools with similar names, best first.
        suggestions: Vec<String>,
    },
    /// The controller could not be reached (or dropped the exchange).
    #[error("the controller (mcpo or native bridge) of stack `{stack}` is not answering")]
    UpstreamUnavailable {
        /// The stack.
        stack: String,
    },
    /// The controller did not answer within the forward timeout.
    #[error("stack `{stack}`'s controller did not answer within {}", humantime::format_duration(*.timeout))]
    UpstreamTimeout {
        /// The stack.
        stack: String,
        /// The bound that ran out.
        timeout: std::time::Duration,
    },
    /// Every forwarding slot of the stack stayed taken while the request waited.
    #[error("stack `{stack}` is busy: {in_flight} requests are already in flight")]
    Busy {
        /// The stack.
        stack: String,
        /// Its bound on requests at once.
        in_flight: usize,
    },
    /// The controller refused the front's internal key: a bug or a half-restarted stack, never
    /// the client's fault — hence not passed through as a 401/403.
    #[error(
        "the controller (mcpo or native bridge) of stack `{stack}` rejected the front's internal key (HTTP {status})"
    )]
    UpstreamRejectedKey {
        /// The stack.
        stack: String,
        /// The controller's status (401 or 403).
        status: u16,
    },
    /// No reload handler is installed yet.
    #[error("stack `{stack}` cannot reload its API yet")]
    ReloadUnavailable {
        /// The stack.
        stack: String,
    },
    /// The reload handler failed.
    #[error("reload failed: {0}")]
    ReloadFailed(super::ReloadError),
    /// An upstream action on a stack whose servers this process does not run (mcpo's).
    #[error("stack `{stack}` runs its servers in mcpo, not in this process")]
    NoBridge {
        /// The stack.
        stack: String,
    },
    /// A stop of a server that is always on or busy with a request.
    #[error("server `{server}` is always on or busy with a request")]
    UpstreamBusy {
        /// The server.
        server: String,
    },
}

impl FrontError {
    /// The HTTP status the front answers with.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Unauthorized { .. } | Self::AdminUnauthorized => StatusCode::UNAUTHORIZED,
            Self::BadPath { .. } | Self::BadBody { .. } => StatusCode::BAD_REQUEST,
            Self::UnknownServer { .. } | Self::ServerDisabled { .. } | Self::UnknownTool { .. } => {
                StatusCode::NOT_FOUND
            }
            Self::ToolDenied { .. } | Self::ToolWithheld { .. } => StatusCode::FORBIDDEN,
            Self::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            Self::UpstreamUnavailable { .. } | Self::UpstreamRejectedKey { .. } => {
                StatusCode::BAD_GATEWAY
            }
            Self::UpstreamTimeout { .. } => StatusCode::GATEWAY_TIMEOUT,
            Self::NotPublished { .. } | Self::ReloadUnavailable { .. } | Self::Busy { .. } => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            Self::ReloadFailed(_) => StatusCode::INTERNAL_SERVER_ERROR,
            Self::NoBridge { .. } | Self::UpstreamBusy { .. } => StatusCode::CONFLICT,
        }
    }

    /// The JSON body: `{"error": {"type", "message", "help"}}`.
    pub fn body(&self) -> serde_json::Value {
        json!({"error": {"type": self.kind(), "message": self.to_string(), "help": self.help()}})
    }
}

impl Actionable for FrontError {
    fn kind(&self) -> &'static str {
        match self {
            Self::Unauthorized { .. } => "unauthorized",
            Self::AdminUnauthorized => "admin_unauthorized",
            Self::BadPath { .. } => "bad_path",
            Self::MethodNotAllowed { .. } => "method_not_allowed",
            Self::BadBody { .. } => "bad_body",
            Self::NotPublished { .. } => "not_published",
            Self::UnknownServer { .. } => "unknown_server",
            Self::ServerDisabled { .. } => "server_disabled",
            Self::ToolDenied { .. } => "tool_denied",
            Self::ToolWithheld { .. } => "tool_withheld",
            Self::UnknownTool { .. } => "unknown_tool",
            Self::UpstreamUnavailable { .. } => "upstream_unavailable",
            Self::UpstreamTimeout { .. } => "upstream_timeout",
            Self::Busy { .. } => "busy",
            Self::UpstreamRejectedKey { .. } => "upstream_rejected_key",
            Self::ReloadUnavailable { .. } => "reload_unavailable",
            Self::ReloadFailed(_) => "reload_failed",
            Self::NoBridge { .. } => "no_bridge",
            Self::UpstreamBusy { .. } => "upstream_busy",
        }
    }

    fn help(&self) -> String {
        match self {
            Self::Unauthorized { .. } => "send the key as `X-API-Key: <key>` or \
                `Authorization: Bearer <key>`; `mcp-launch share` prints it"
                .to_string(),
            Self::AdminUnauthorized => "this endpoint is for `mcp-launch openapi`, which sends \
                the stack's admin token as `X-MCP-Launch-Admin`; the API key does not work here"
                .to_string(),
            Self::BadPath { .. } => "call plain `/<server>/<tool>` paths: no `.` or `..` \
                segments, no empty segments, no encoded `/`, `\\` or `%`"
                .to_string(),
            Self::MethodNotAllowed { .. } => "pages (`/healthz`, `/openapi.json`, `/docs`, \
                `/<server>/docs`, `/<server>/openapi.json`) take GET; tools take POST at \
                `/<server>/<tool>`; `/_mcp-launch/reload` takes POST"
                .to_string(),
            Self::BadBody { .. } => {
                "send `{}` or `{\"public_url\": \"https://…\"}` as the JSON body".to_string()
            }
            Self::NotPublished { .. } => "the stack is still starting; retry in a few seconds, \
                or see `mcp-launch status`"
                .to_string(),
            Self::UnknownServer { enabled, .. } if enabled.is_empty() => {
                "this stack exposes no server; see `mcp-launch status`".to_string()
            }
            Self::UnknownServer { enabled, .. } => {
                format!("the stack's servers: {}", quoted(enabled))
            }
            Self::ServerDisabled {
                server,
                started: true,
                ..
            } => format!("`mcp-launch server enable {server}`, then `mcp-launch openapi`"),
            Self::ServerDisabled { server, .. } => format!(
                "`mcp-launch server enable {server}`, then restart the stack (`mcp-launch down`, \
                 then `mcp-launch up`): it was disabled when the stack started, so it is not running"
            ),
            Self::ToolDenied { server, tool, .. } => {
                format!("`mcp-launch tool allow {server} {tool}`, then `mcp-launch openapi`")
            }
            Self::ToolWithheld { server, tool } => format!(
                "a human must review the new definition (`mcp-launch inspect {server} {tool}`) and \
                 accept it with `mcp-launch tool approve {server} {tool}`; do not retry"
            ),
            Self::UnknownTool { suggestions, .. } if suggestions.is_empty() => {
                "`GET /openapi.json` lists every allowed tool".to_string()
            }
            Self::UnknownTool { suggestions, .. } => format!(
                "did you mean {}? `GET /openapi.json` lists every allowed tool",
                quoted(suggestions)
            ),
            Self::UpstreamUnavailable { .. } => {
                "it may be restarting; see `mcp-launch status`".to_string()
            }
            Self::UpstreamTimeout { .. } => format!(
                "the tool may still be running; retry later or with less work, or have the \
                 stack's operator raise {} (`mcp-launch up`)",
                super::proxy::FORWARD_TIMEOUT_ENV
            ),
            Self::Busy { .. } => format!(
                "retry in a few seconds; the operator can raise {} (`mcp-launch up`)",
                super::proxy::IN_FLIGHT_ENV
            ),
            Self::UpstreamRejectedKey { .. } => "your API key was accepted; the front and its \
                controller disagree on their internal key (one of them restarted alone?): \
                restart the stack, and see `mcp-launch status`"
                .to_string(),
            Self::ReloadUnavailable { .. } => {
                "the stack is still starting; retry in a few seconds".to_string()
            }
            Self::ReloadFailed(e) => e.help(),
            Self::NoBridge { .. } => "mcpo starts and stops its servers itself: restart the \
                stack (`mcp-launch down`, then `mcp-launch up`), or launch it with the native \
                bridge"
                .to_string(),
            Self::UpstreamBusy { .. } => "wait for its requests to end; an always-on server \
                stops with its stack"
                .to_string(),
        }
    }
}

impl IntoResponse for FrontError {
    fn into_response(self) -> Response {
        let mut response = (self.status(), Json(self.body())).into_response();
        let headers = response.headers_mut();
        match &self {
            Self::Unauthorized { .. } => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            Self::Busy { .. } => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("2"));
            }
            // RFC 9110 §15.5.6: a 405 lists the methods the route takes (axum's `get` routes
            // also take HEAD).
            Self::MethodNotAllowed { path, .. } => {
                let allow = if path == super::RELOAD_PATH {
                    "POST"
                } else {
                    "GET, HEAD"
                };
                headers.insert(header::ALLOW, HeaderValue::from_static(allow));
            }
            _ => {}
        }
        response
    }
}

/// `a`, `b`, `c` — names in backticks, comma-separated.
fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_405_says_which_methods_the_route_takes() {
        let allow = |path: &str| {
            let error = FrontError::MethodNotAllowed {
                method: "PUT".into(),
                path: path.into(),
            };
            let response = error.into_response();
            assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
            response.headers()[header::ALLOW].clone()
        };
        assert_eq!(allow("/healthz"), "GET, HEAD");
        assert_eq!(allow("/openapi.json"), "GET, HEAD");
        assert_eq!(allow(super::super::RELOAD_PATH), "POST");
    }
}
