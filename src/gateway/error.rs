//! What a gateway request ends with when it does not get the upstream's answer. The wire
//! layer turns each into a JSON-RPC error (unknown names, bad requests) or a tool error the
//! model can read and act on (`isError: true`, the message and the help).

use crate::error::Actionable;
use crate::mcp::RpcError;
use crate::pool::PoolError;

/// JSON-RPC "invalid params" (an unknown tool, prompt or resource).
pub const INVALID_PARAMS: i64 = -32602;

/// Why a gateway request failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum GatewayError {
    /// No tool is exposed under that name.
    #[error("unknown tool `{name}`")]
    UnknownTool {
        /// The name asked for.
        name: String,
        /// Close exposed names.
        suggestions: Vec<String>,
    },
    /// The overrides deny the tool.
    #[error("tool `{tool}` of server `{server}` is denied by this project's overrides")]
    Denied {
        /// The server's name.
        server: String,
        /// The tool's own name.
        tool: String,
    },
    /// The tool's definition changed since it was approved and the overrides pin its server
    /// strictly.
    #[error(
        "tool `{tool}` of server `{server}` changed since it was approved and is withheld \
         (pin: strict)"
    )]
    Withheld {
        /// The server's name.
        server: String,
        /// The tool's own name.
        tool: String,
    },
    /// The client's OAuth token lacks the scope the tool needs.
    #[error("tool `{name}` needs scope `{needs}`, which this client's token was not granted")]
    OutOfScope {
        /// The exposed name.
        name: String,
        /// The scope it needs.
        needs: &'static str,
    },
    /// No server serves that prompt or resource.
    #[error("unknown {what} `{name}`")]
    UnknownItem {
        /// `prompt` or `resource`.
        what: &'static str,
        /// The name or URI asked for.
        name: String,
    },
    /// The arguments do not fit the tool's input schema.
    #[error("invalid arguments for `{name}`: {}", .violations.join("; "))]
    InvalidArguments {
        /// The exposed name.
        name: String,
        /// What is wrong, one line each.
        violations: Vec<String>,
        /// The expected shape, compactly.
        expected: String,
    },
    /// A meta-tool's own input is wrong (a bad JSONPath, an empty query).
    #[error("{message}")]
    BadInput {
        /// What is wrong.
        message: String,
        /// How to fix it.
        help: String,
    },
    /// The upstream answered with a JSON-RPC error: passed on as it is.
    #[error("{server}: {error}")]
    Rpc {
        /// The server's name.
        server: String,
        /// Its error (boxed: it carries arbitrary `data`).
        error: Box<RpcError>,
    },
    /// The server could not be reached, timed out, or the gateway is stopping.
    #[error(transparent)]
    Pool(Box<PoolError>),
    /// The server wants an OAuth login (none held, or one with more scopes: a step-up): a
    /// person must run `command`; calls fail until then.
    #[error("server `{server}` needs a login: {reason}")]
    NeedsLogin {
        /// The server's name.
        server: String,
        /// Why (the scopes the tool needs, for a step-up).
        reason: String,
        /// The exact command, with the scopes and the gateway's config and env files.
        command: String,
    },
    /// The gateway cannot answer this the way the command line would yet (a search by
    /// meaning before the tools' embeddings are in): the command line answers itself.
    #[error("the gateway cannot answer yet: {what}")]
    NotReady {
        /// What is missing.
        what: String,
    },
}

impl GatewayError {
    /// Whether the client gets a JSON-RPC error (else a tool error the model reads).
    pub fn is_protocol_error(&self) -> bool {
        matches!(
            self,
            Self::UnknownTool { .. }
                | Self::OutOfScope { .. }
                | Self::UnknownItem { .. }
                | Self::Rpc { .. }
        )
    }

    /// The JSON-RPC error a client gets for a protocol error (`code`, `message`, `data`): an
    /// upstream's as it sent it, ours as invalid params with the kind and the help.
    pub fn as_rpc(&self) -> serde_json::Value {
        match self {
            Self::Rpc { error, .. } => {
                let mut rpc = serde_json::json!({"code": error.code, "message": error.message});
                if let Some(data) = &error.data {
                    rpc["data"] = data.clone();
                }
                rpc
            }
            other => serde_json::json!({
                "code": INVALID_PARAMS,
                "message": other.to_string(),
                "data": {"type": other.kind(), "help": other.help()},
            }),
        }
    }

    /// The tool result a client gets for any other error: `isError` and a text saying what
    /// happened and what to do.
    pub fn as_tool_result(&self) -> serde_json::Value {
        let text = format!("{self}\nhelp: {}", self.help());
        serde_json::json!({"content": [{"type": "text", "text": text}], "isError": true})
    }

    /// `self`, or for a server that needs an OAuth login, the error naming the exact command
    /// that logs in to it (`login` gives the gateway's files; the scopes come from a step-up's
    /// challenge).
    pub fn naming_login(self, login: &crate::auth::client::LoginContext) -> GatewayError {
        let (server, reason, scope) = match &self {
            Self::Pool(pool) => match pool.as_ref() {
                PoolError::Upstream {
                    server,
                    error: crate::mcp::McpError::Auth(auth),
                } if auth.kind() == "needs_login" => {
                    (server, auth.to_string(), auth.step_up_scope())
                }
                PoolError::Unavailable {
                    server, failure, ..
                } if failure.cause == "needs_login" => (server, failure.message.clone(), None),
                _ => return self,
            },
            _ => return self,
        };
        GatewayError::NeedsLogin {
            server: server.clone(),
            command: login.command(server, scope),
            reason,
        }
    }

    /// The pool's error, with an upstream JSON-RPC error pulled out so it passes on as is.
    pub fn from_pool(error: PoolError) -> GatewayError {
        match error {
            PoolError::Upstream {
                server,
                error: crate::mcp::McpError::Rpc { error, .. },
            } => GatewayError::Rpc { server, error },
            other => GatewayError::Pool(Box::new(other)),
        }
    }
}

impl From<PoolError> for GatewayError {
    fn from(error: PoolError) -> Self {
        GatewayError::from_pool(error)
    }
}

impl Actionable for GatewayError {
    fn kind(&self) -> &'static str {
        match self {
            Self::UnknownTool { .. } => "unknown_tool",
            Self::Denied { .. } => "tool_denied",
            Self::Withheld { .. } => "tool_withheld",
            Self::OutOfScope { .. } => "insufficient_scope",
            Self::UnknownItem { .. } => "unknown_item",
            Self::InvalidArguments { .. } => "invalid_arguments",
            Self::BadInput { .. } => "bad_input",
            Self::Rpc { .. } => "server_error",
            Self::Pool(error) => error.kind(),
            Self::NotReady { .. } => "not_ready",
            Self::NeedsLogin { .. } => "needs_login",
        }
    }

    fn help(&self) -> String {
        match self {
            // Sparse mode: the tool exists, and is reached through the meta-tool.
            Self::UnknownTool { name, suggestions } if suggestions.contains(name) => format!(
                "in sparse mode `{name}` is called through `{call}`: {call} \
                 {{\"name\": \"{name}\", \"arguments\": {{…}}}} (`describe_tool` shows its \
                 parameters)",
                call = super::sparse::CALL
            ),
            Self::UnknownTool { suggestions, .. } if !suggestions.is_empty() => {
                format!("did you mean `{}`?", suggestions.join("`, `"))
            }
            Self::UnknownTool { .. } => {
                "list the tools (or search them) for the exposed names".into()
            }
            Self::Denied { server, tool } => {
                format!("`mcp-launch tool allow {server} {tool}` allows it again")
            }
            Self::Withheld { server, tool } => format!(
                "a human must review it: `mcp-launch inspect {server} {tool}` shows the new \
                 definition, `mcp-launch tool approve {server} {tool}` accepts it"
            ),
            Self::OutOfScope { needs, .. } => format!(
                "authorize the client again asking for scope `{needs}` (the operator consents \
                 again), or call a read-only tool"
            ),
            Self::UnknownItem { .. } => "list them first; names carry their server's prefix".into(),
            Self::InvalidArguments { expected, .. } => {
                format!("fix the arguments and call again; expected: {expected}")
            }
            Self::BadInput { help, .. } => help.clone(),
            Self::Rpc { .. } => "the server refused the request; check its arguments".into(),
            Self::Pool(error) => error.help(),
            Self::NotReady { .. } => "ask again in a moment (--daemon off answers directly)".into(),
            Self::NeedsLogin { command, .. } => format!(
                "a person must run `{command}` (a browser step, or a code to enter on another \
                 device with --device); do not retry the call before"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sparse_gateways_own_tool_called_by_name_points_at_call_tool() {
        let unknown = |suggestions: &[&str]| GatewayError::UnknownTool {
            name: "everything__echo".into(),
            suggestions: suggestions.iter().map(|s| s.to_string()).collect(),
        };
        let help = unknown(&["everything__echo", "everything__get-env"]).help();
        assert!(
            help.contains("call_tool {\"name\": \"everything__echo\""),
            "{help}"
        );
        let help = unknown(&["everything__echoes"]).help();
        assert_eq!(help, "did you mean `everything__echoes`?");
    }
}
