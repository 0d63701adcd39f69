//! Why a stack did not start.

use crate::error::Actionable;
use crate::launch::mcpo::ControllerError;
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
    /// The front could not be set up or bound.
    #[error("the front proxy cannot start: {0}")]
    Front(String),
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
            StackError::Front(_) => "front_failed",
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
            StackError::Front(_) => "pick another --port or --host".into(),
            StackError::State(e) => e.help(),
            StackError::Overrides(e) => e.help(),
        }
    }
}
