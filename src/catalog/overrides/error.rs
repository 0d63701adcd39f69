//! Why the overrides file could not be used: each error names the file (and, for bad
//! content, the line and column) and says what to do; none leads to the file being rewritten.

use std::path::{Path, PathBuf};

use super::OVERRIDES_VERSION;
use crate::error::Actionable;

/// Why the overrides file could not be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OverridesError {
    /// It exists but cannot be read.
    #[error("cannot read overrides file {}: {reason}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The operating system's message.
        reason: String,
    },
    /// It is not valid JSON, or not the overrides shape.
    #[error("{}:{line}:{column}: invalid overrides file: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// serde_json's description.
        message: String,
    },
    /// Its `version` is not one this build knows.
    #[error("{}: overrides file version {found} is not supported (this mcp-launch reads version {OVERRIDES_VERSION})", path.display())]
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// The version found, as JSON.
        found: String,
    },
    /// It came with the directory and is not trusted: our commands will not build on it.
    #[error("{} is not trusted: it came with this directory (or changed since you trusted it)", path.display())]
    Untrusted {
        /// The file.
        path: PathBuf,
    },
    /// Writing it failed.
    #[error("cannot write overrides file {}: {reason}", path.display())]
    Unwritable {
        /// The file.
        path: PathBuf,
        /// The operating system's message.
        reason: String,
    },
}

impl Actionable for OverridesError {
    fn kind(&self) -> &'static str {
        match self {
            OverridesError::Unreadable { .. } => "overrides_unreadable",
            OverridesError::Invalid { .. } => "invalid_overrides",
            OverridesError::UnsupportedVersion { .. } => "unsupported_overrides_version",
            OverridesError::Untrusted { .. } => "untrusted_overrides",
            OverridesError::Unwritable { .. } => "overrides_write_failed",
        }
    }

    fn help(&self) -> String {
        match self {
            OverridesError::Unreadable { path, .. } => format!(
                "check the permissions of {}, or move it away to start with no overrides",
                path.display()
            ),
            OverridesError::Invalid { path, line, column, .. } => format!(
                "fix {}:{line}:{column} by hand (mcp-launch never overwrites your choices); \
                 the shape is {{\"version\": 1, \"stacks\": {{\"STACK\": {{\"SERVER\": \
                 {{\"disabled\": bool, \"allow\": [..], \"deny\": [..], \"descriptions\": {{\"TOOL\": \"text\"}}}}}}}}}}",
                path.display()
            ),
            OverridesError::UnsupportedVersion { path, .. } => format!(
                "a newer mcp-launch wrote {}: upgrade mcp-launch, or move the file away to start over",
                path.display()
            ),
            OverridesError::Untrusted { path } => format!(
                "read {} (it can switch servers on and rewrite what agents read), then run \
                 `mcp-launch trust` here; or move it away to start with no overrides",
                path.display()
            ),
            OverridesError::Unwritable { path, .. } => format!(
                "make sure {} is a writable directory",
                path.parent().unwrap_or(Path::new(".")).display()
            ),
        }
    }
}
