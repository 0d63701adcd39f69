//! [`CliError`]: what a command reports when it fails, with its kind, help and exit class.

use crate::catalog::ServerProblem;
use crate::config::ConfigError;
use crate::error::Actionable;

/// Errors a command reports (rendered once, by `main`, through [`crate::output`]).
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The config could not be loaded.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// No config was found here while a stack or gateway runs with one. Named, never used:
    /// the state file naming it comes with the directory, as a discovered config does.
    #[error("{error}")]
    NoConfig {
        /// Discovery's error (every path it looked at; boxed: it is large and rare).
        error: Box<ConfigError>,
        /// The configs of the stacks running here and of the running gateways.
        running: Vec<String>,
    },
    /// No server of that name.
    #[error("no server named {name:?} in {}", .config_files.join(", "))]
    UnknownServer {
        /// The name asked for.
        name: String,
        /// The servers that exist.
        available: Vec<String>,
        /// The config files read.
        config_files: Vec<String>,
    },
    /// The server has no tool of that name.
    #[error("server {server:?} has no tool named {tool:?}")]
    UnknownTool {
        /// The server.
        server: String,
        /// The name asked for.
        tool: String,
        /// Similar tool names, each with its required parameters.
        suggestions: Vec<String>,
        /// How many tools the server has.
        count: usize,
    },
    /// The tool is listed only to clients offering capabilities this path cannot offer.
    #[error("{server}/{tool} is listed only to clients offering {}; the command line offers none", .needs.join(", "))]
    NeedsCapability {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// The client capabilities it needs (sampling, elicitation, roots).
        needs: Vec<String>,
    },
    /// The arguments are not valid JSON.
    #[error(
        "arguments from {origin} are not valid JSON: {message} at line {line}, column {column}"
    )]
    InvalidJson {
        /// `the command line` or `stdin`.
        origin: &'static str,
        /// serde_json's message.
        message: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
    },
    /// The arguments are JSON but not an object.
    #[error("arguments must be a JSON object like '{{\"key\": \"value\"}}', not {found}")]
    ArgumentsNotObject {
        /// What was given (a type name).
        found: &'static str,
    },
    /// The arguments break the tool's inputSchema.
    #[error("arguments for {server}/{tool} do not fit its inputSchema:\n{}", .violations.iter().map(|v| format!("  - {v}")).collect::<Vec<_>>().join("\n"))]
    InvalidArguments {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// One line per violation.
        violations: Vec<String>,
        /// The parameters the tool expects.
        expected: String,
    },
    /// The server could not be configured, started or talked to.
    #[error("server {server:?}: {problem}")]
    Server {
        /// The server.
        server: String,
        /// What went wrong (boxed: server errors are large and rare).
        problem: Box<ServerProblem>,
    },
    /// The project's overrides disable the server or deny the tool.
    #[error("{} is {} by this project's overrides", match .tool { Some(t) => format!("tool {server}/{t}"), None => format!("server {server:?}") }, if .tool.is_some() { "denied" } else { "disabled" })]
    Refused {
        /// The server.
        server: String,
        /// The tool, when a tool is denied (else the server is disabled).
        tool: Option<String>,
        /// The command that lifts the refusal.
        help: String,
    },
    /// The tool's definition changed since it was approved and the overrides pin its server
    /// strictly.
    #[error("tool {server}/{tool} changed since it was approved and is withheld (pin: strict)")]
    Withheld {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
    },
    /// The search query cannot run (pattern too long or invalid).
    #[error(transparent)]
    Search(#[from] crate::search::SearchError),
    /// Reading stdin failed.
    #[error("could not read arguments from stdin: {0}")]
    Stdin(String),
    /// Writing output failed.
    #[error("could not write output: {0}")]
    Output(#[from] std::io::Error),
    /// The project's overrides file could not be read or written.
    #[error(transparent)]
    Overrides(#[from] crate::catalog::OverridesError),
    /// The tool approvals could not be read or written.
    #[error(transparent)]
    Approvals(#[from] crate::catalog::ApprovalsError),
    /// A client's config could not be printed, written or unwritten.
    #[error(transparent)]
    ClientConfig(Box<crate::gateway::clients::ClientError>),
    /// The gateway could not start or serve.
    #[error(transparent)]
    Gateway(Box<crate::gateway::error::GatewayError>),
    /// The daemon could not be reached, or answered with an error.
    #[error(transparent)]
    Daemon(Box<crate::gateway::daemon::DaemonError>),
    /// A flag or combination of flags that cannot work, with what to do instead.
    #[error("{message}")]
    Usage {
        /// What is wrong.
        message: String,
        /// What to do.
        help: String,
    },
    /// The launch state file could not be read or written.
    #[error(transparent)]
    State(#[from] crate::launch::state::StateError),
    /// The TUI could not run.
    #[error(transparent)]
    Tui(#[from] crate::tui::TuiError),
    /// A launch could not begin (state or overrides file).
    #[error(transparent)]
    Launch(#[from] crate::launch::launcher::LaunchError),
    /// A file `init` would write exists already.
    #[error("{path} already exists")]
    FileExists {
        /// The file.
        path: String,
    },
    /// A duration in an environment variable is unreadable or out of range.
    #[error(transparent)]
    Duration(#[from] crate::duration::DurationError),
    /// A size or count in an environment variable is unreadable or out of range.
    #[error(transparent)]
    Limit(#[from] crate::mcp::cap::CapError),
    /// A handle could not be read (unknown, expired, a bad request, the store).
    #[error(transparent)]
    Outputs(#[from] crate::outputs::OutputsError),
    /// The embedding model could not be found, fetched or installed.
    #[error(transparent)]
    Model(#[from] crate::model::ModelError),
    /// An OAuth login, refresh or the token store failed.
    #[error(transparent)]
    Auth(#[from] crate::auth::client::AuthError),
    /// The installed embedding model could not be opened.
    #[error(transparent)]
    Semantic(#[from] crate::search::semantic::SemanticError),
    /// `serve --http --tunnel`: the tunnel did not come up (or ended).
    #[error(transparent)]
    Tunnel(#[from] crate::launch::tunnel::TunnelError),
    /// `--state` names a store that cannot be used.
    #[error(transparent)]
    SharedState(#[from] crate::state::StateError),
}

/// What a line of `call --batch` holds (the help of every bad line).
pub(super) const BATCH_LINE: &str = r#"each line of the batch is one JSON object: {"server": "S", "tool": "T", "arguments": {...}, "id": any} (arguments and id may be left out)"#;

/// Where arguments read from a batch come from (`origin` of [`CliError::InvalidJson`]).
pub(super) const BATCH_ORIGIN: &str = "the batch";

impl CliError {
    /// A failure of `server`.
    pub fn server(server: &str, problem: impl Into<ServerProblem>) -> Self {
        CliError::Server {
            server: server.to_string(),
            problem: Box::new(problem.into()),
        }
    }

    /// True for usage and configuration errors (exit 2); false for failures of servers and
    /// tools (exit 1).
    pub fn is_usage(&self) -> bool {
        match self {
            CliError::Server { problem, .. } => problem.is_config(),
            CliError::State(e) => matches!(e, crate::launch::state::StateError::Escapes { .. }),
            CliError::Stdin(_) | CliError::Output(_) => false,
            CliError::Tui(e) => matches!(e, crate::tui::TuiError::NoTerminal(_)),
            CliError::Launch(_) => false,
            CliError::Daemon(e) => e.is_usage(),
            CliError::Overrides(_) => true,
            CliError::Approvals(_) => true,
            CliError::Outputs(e) => !matches!(e, crate::outputs::OutputsError::Store { .. }),
            CliError::Model(e) => matches!(
                e,
                crate::model::ModelError::UnknownModel { .. }
                    | crate::model::ModelError::NotAModel { .. }
            ),
            CliError::Semantic(_) => false,
            CliError::Auth(_) => false,
            CliError::Tunnel(e) => matches!(
                e,
                crate::launch::tunnel::TunnelError::NotInstalled { .. }
                    | crate::launch::tunnel::TunnelError::NoToken
            ),
            _ => true,
        }
    }
}

impl Actionable for CliError {
    fn kind(&self) -> &'static str {
        match self {
            CliError::Config(e) => e.kind(),
            CliError::NoConfig { error, .. } => error.kind(),
            CliError::UnknownServer { .. } => "unknown_server",
            CliError::NeedsCapability { .. } => "needs_capability",
            CliError::UnknownTool { .. } => "unknown_tool",
            CliError::InvalidJson { .. } => "invalid_json",
            CliError::ArgumentsNotObject { .. } => "invalid_arguments",
            CliError::InvalidArguments { .. } => "invalid_arguments",
            CliError::Server { problem, .. } => problem.kind(),
            CliError::Refused { tool: Some(_), .. } => "tool_denied",
            CliError::Refused { tool: None, .. } => "server_disabled",
            CliError::Withheld { .. } => "tool_withheld",
            CliError::Search(e) => e.kind(),
            CliError::Stdin(_) => "stdin_error",
            CliError::Output(_) => "output_error",
            CliError::Overrides(e) => e.kind(),
            CliError::Approvals(e) => e.kind(),
            CliError::FileExists { .. } => "file_exists",
            CliError::Usage { .. } => "usage",
            CliError::State(e) => e.kind(),
            CliError::Tui(e) => e.kind(),
            CliError::Launch(e) => e.kind(),
            CliError::Tunnel(e) => e.kind(),
            CliError::Duration(e) => e.kind(),
            CliError::SharedState(e) => e.kind(),
            CliError::Gateway(e) => e.kind(),
            CliError::Daemon(e) => e.kind(),
            CliError::ClientConfig(e) => e.kind(),
            CliError::Limit(e) => e.kind(),
            CliError::Outputs(e) => e.kind(),
            CliError::Model(e) => e.kind(),
            CliError::Semantic(e) => e.kind(),
            CliError::Auth(e) => e.kind(),
        }
    }

    fn help(&self) -> String {
        match self {
            CliError::Config(e) => e.help(),
            CliError::NoConfig { running, .. } => format!(
                "a running stack or gateway uses {}: pass --config {} (nothing here names it), or run `mcp-launch init`",
                running.join(", "),
                running[0]
            ),
            CliError::UnknownServer { available, .. } if available.is_empty() => {
                "the config has no servers; add one under \"mcpServers\"".into()
            }
            CliError::UnknownServer { name, available, .. } => {
                let names = available.iter().map(String::as_str);
                match crate::catalog::similar_names(name, names, 3).as_slice() {
                    [] => format!("available servers: {}", available.join(", ")),
                    near => format!(
                        "did you mean `{}`? available servers: {}",
                        near.join("`, `"),
                        available.join(", ")
                    ),
                }
            }
            CliError::UnknownTool { server, suggestions, count, .. } if suggestions.is_empty() => {
                format!("run `mcp-launch list {server}` to see its {count} tools")
            }
            CliError::UnknownTool { suggestions, .. } => {
                format!("did you mean: {}", suggestions.join("; "))
            }
            CliError::InvalidJson { origin, .. } if *origin == BATCH_ORIGIN => BATCH_LINE.into(),
            CliError::NeedsCapability { server, tool, .. } => format!(
                "call it from an MCP client that offers them, through the gateway: add `mcp-launch serve` to that client (docs/CLIENTS.md) and call `{server}__{tool}` there"
            ),
            CliError::InvalidJson { .. } | CliError::ArgumentsNotObject { .. } => {
                "pass one JSON object, e.g. mcp-launch call SERVER TOOL '{\"message\": \"hi\"}', or pipe it with --stdin".into()
            }
            CliError::InvalidArguments { server, tool, expected, .. } => format!(
                "expected parameters:\n{}\n(`mcp-launch inspect {server} {tool} --example` prints a ready-to-run call)",
                expected.lines().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n")
            ),
            CliError::Server { problem, .. } => problem.help(),
            CliError::Refused { help, .. } => help.clone(),
            CliError::Withheld { server, tool } => format!(
                "a human must review it: `mcp-launch inspect {server} {tool}` shows it now, \
                 `mcp-launch tool approve {server} {tool}` accepts it"
            ),
            CliError::Search(e) => e.help(),
            CliError::Stdin(_) => "pipe a JSON object into --stdin, or pass it as an argument".into(),
            CliError::Output(_) => "check that the output destination is writable".into(),
            CliError::Overrides(e) => e.help(),
            CliError::Approvals(e) => e.help(),
            CliError::Usage { help, .. } => help.clone(),
            CliError::State(e) => e.help(),
            CliError::Tui(e) => e.help(),
            CliError::Launch(e) => e.help(),
            CliError::Tunnel(e) => e.help(),
            CliError::Duration(e) => e.help(),
            CliError::SharedState(e) => e.help(),
            CliError::Gateway(e) => e.help(),
            CliError::Daemon(e) => e.help(),
            CliError::ClientConfig(e) => e.help(),
            CliError::Limit(e) => e.help(),
            CliError::Outputs(e) => e.help(),
            CliError::Model(e) => e.help(),
            CliError::Semantic(e) => e.help(),
            CliError::Auth(e) => e.help(),
            CliError::FileExists { path } => {
                format!("pass --force to overwrite {path}, or run init in another directory")
            }
        }
    }
}

impl From<crate::gateway::error::GatewayError> for CliError {
    fn from(error: crate::gateway::error::GatewayError) -> Self {
        CliError::Gateway(Box::new(error))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_server_suggests_the_nearest_names() {
        let unknown = |name: &str| CliError::UnknownServer {
            name: name.into(),
            available: vec!["filesystem".into(), "time".into(), "everything".into()],
            config_files: vec!["mcp.json".into()],
        };
        assert_eq!(
            unknown("tme").help(),
            "did you mean `time`? available servers: filesystem, time, everything"
        );
        assert_eq!(
            unknown("nosuch").help(),
            "available servers: filesystem, time, everything"
        );
    }
}
