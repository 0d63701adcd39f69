//! Why a stack did not start.

use crate::error::Actionable;
use crate::launch::controller::mcpo::ControllerError;
use crate::launch::tunnel::TunnelError;

/// Why a stack did not start.
#[derive(Debug, thiserror::Error)]
pub enum StackError {
    /// No server of the stack can be served.
    #[error("no server of stack {stack} can be served: {reason}")]
    NoServers {
        /// The stack.
        stack: String,
        /// Why (each failing server with its error).
        reason: String,
    },
    /// The controller failed.
    #[error(transparent)]
    Controller(#[from] ControllerError),
    /// The tunnel failed.
    #[error(transparent)]
    Tunnel(#[from] TunnelError),
    /// The front could not be set up (an internal inconsistency, or no HTTP client).
    #[error("the front proxy cannot start: {0}")]
    FrontSetup(#[from] crate::launch::front::SetupError),
    /// The HTTP client that checks the controller could not be built.
    #[error("cannot build an HTTP client: {0}")]
    HttpClient(#[source] reqwest::Error),
    /// A listener bound while planning could not be handed to the runtime.
    #[error("the {what} cannot listen: {source}")]
    Listen {
        /// `front` or `native bridge`.
        what: &'static str,
        /// Why.
        source: std::io::Error,
    },
    /// The stack is stopping (a reload that came too late).
    #[error("the stack is stopping")]
    Stopping,
    /// The state file could not be written.
    #[error(transparent)]
    State(#[from] crate::launch::state::StateError),
    /// The overrides could not be read.
    #[error(transparent)]
    Overrides(#[from] crate::catalog::OverridesError),
}

impl Actionable for StackError {
    fn kind(&self) -> &'static str {
        match self {
            StackError::NoServers { .. } => "no_servers",
            StackError::Controller(e) => e.kind(),
            StackError::Tunnel(e) => e.kind(),
            StackError::FrontSetup(_) | StackError::HttpClient(_) => "front_failed",
            StackError::Listen { .. } => "listen_failed",
            StackError::Stopping => "stack_stopping",
            StackError::State(e) => e.kind(),
            StackError::Overrides(e) => e.kind(),
        }
    }

    fn help(&self) -> String {
        match self {
            StackError::NoServers { .. } => {
                "fix the servers (`mcp-launch list` shows each error with its fix) or enable one with `mcp-launch server enable NAME`".into()
            }
            StackError::Controller(e) => e.help(),
            StackError::Tunnel(e) => e.help(),
            StackError::FrontSetup(_) | StackError::HttpClient(_) => {
                "the system's TLS setup may be broken (reqwest could not load it); run again with -vv and report the output if it persists".into()
            }
            StackError::Listen { .. } => "pick another --port or --host".into(),
            StackError::Stopping => "start it again with `mcp-launch up`".into(),
            StackError::State(e) => e.help(),
            StackError::Overrides(e) => e.help(),
        }
    }
}
