//! What can go wrong with budgeted outputs and their handles.

use std::path::PathBuf;

use crate::error::Actionable;

/// An error of the output store or of a `read_output` request.
#[derive(Debug, thiserror::Error)]
pub enum OutputsError {
    /// No such handle for this client: never made, made for another client, or evicted.
    #[error("no output {handle} here (unknown to this client, or evicted to keep the store under its size cap)")]
    Unknown {
        /// The handle asked for.
        handle: String,
    },
    /// The handle was made too long ago.
    #[error("output {handle} has expired (handles last {ttl})")]
    Expired {
        /// The handle asked for.
        handle: String,
        /// How long handles last, for people (`24h`).
        ttl: String,
    },
    /// The store's directory or a file in it could not be read or written.
    #[error("output store {}: {source}", .path.display())]
    Store {
        /// The directory or file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The shared state store (`--state`) could not keep or give back a handle.
    #[error("output store: {0}")]
    Shared(crate::state::StateError),
    /// A `read_output` argument is wrong (a bad regex, JSONPath or offset).
    #[error("read_output: {message}")]
    InvalidRequest {
        /// What is wrong.
        message: String,
    },
}

impl OutputsError {
    pub(crate) fn store(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        OutputsError::Store {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        OutputsError::InvalidRequest {
            message: message.into(),
        }
    }
}

impl Actionable for OutputsError {
    fn kind(&self) -> &'static str {
        match self {
            OutputsError::Unknown { .. } => "unknown_handle",
            OutputsError::Expired { .. } => "expired_handle",
            OutputsError::Store { .. } => "output_store_error",
            OutputsError::Shared(e) => e.kind(),
            OutputsError::InvalidRequest { .. } => "invalid_read",
        }
    }

    fn help(&self) -> String {
        match self {
            OutputsError::Unknown { .. } | OutputsError::Expired { .. } => {
                "call the tool again for a fresh result and handle".into()
            }
            OutputsError::Store { path, .. } => format!(
                "check that {} is writable and the disk has room (the store lives in the user state dir, $XDG_STATE_HOME/mcp-launch/outputs)",
                path.display()
            ),
            OutputsError::Shared(e) => e.help(),
            OutputsError::InvalidRequest { .. } => {
                "read_output takes handle, offset and limit (lines), grep (a regex) or jsonpath (e.g. $.items[10:20])".into()
            }
        }
    }
}
