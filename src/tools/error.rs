//! What a lean tool can refuse or fail at; each becomes a tool result with `isError: true`
//! whose text says what happened and what to do.

use std::path::PathBuf;

use crate::error::Actionable;

/// An error of one tool call.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The path resolves outside every root (through `..`, an absolute path or a symlink).
    #[error("{path} is outside the allowed roots")]
    OutsideRoots {
        /// The path as given.
        path: String,
        /// The roots, for the help.
        roots: Vec<PathBuf>,
    },
    /// Nothing at that path.
    #[error("{path}: no such file or directory")]
    NotFound {
        /// The path as given.
        path: String,
    },
    /// A directory where a file was wanted, or the reverse.
    #[error("{path} is a {found}")]
    WrongType {
        /// The path as given.
        path: String,
        /// `directory` or `file`.
        found: &'static str,
        /// The tool to use instead.
        instead: &'static str,
    },
    /// A device, FIFO or socket: reading one could block forever or never end.
    #[error("{path} is a {found}, not a regular file: refused")]
    Special {
        /// The path as given.
        path: String,
        /// `FIFO`, `socket`, `character device`, `block device`.
        found: &'static str,
    },
    /// An argument is missing or wrong.
    #[error("{message}")]
    InvalidArgument {
        /// What is wrong.
        message: String,
        /// The tool's parameters.
        usage: &'static str,
    },
    /// No such tool.
    #[error("no tool named {name:?}")]
    UnknownTool {
        /// The name asked for.
        name: String,
    },
    /// Reading failed.
    #[error("{path}: {source}")]
    Io {
        /// The path as given.
        path: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// A handle could not be read.
    #[error(transparent)]
    Output(#[from] crate::outputs::OutputsError),
}

impl ToolError {
    pub(crate) fn invalid(message: impl Into<String>, usage: &'static str) -> Self {
        ToolError::InvalidArgument {
            message: message.into(),
            usage,
        }
    }
}

impl Actionable for ToolError {
    fn kind(&self) -> &'static str {
        match self {
            ToolError::OutsideRoots { .. } => "outside_roots",
            ToolError::NotFound { .. } => "not_found",
            ToolError::WrongType { .. } => "wrong_type",
            ToolError::Special { .. } => "special_file",
            ToolError::InvalidArgument { .. } => "invalid_arguments",
            ToolError::UnknownTool { .. } => "unknown_tool",
            ToolError::Io { .. } => "io_error",
            ToolError::Output(e) => e.kind(),
        }
    }

    fn help(&self) -> String {
        let list = |roots: &[PathBuf]| {
            roots
                .iter()
                .map(|r| r.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            ToolError::OutsideRoots { roots, .. } => format!(
                "use a path under {} (relative paths start at the first); symlinks leading out are not followed",
                list(roots)
            ),
            ToolError::NotFound { .. } => "check the path with ls or find".into(),
            ToolError::WrongType { instead, .. } => format!("use {instead}"),
            ToolError::Special { .. } => "only regular files and directories can be read".into(),
            ToolError::InvalidArgument { usage, .. } => format!("parameters: {usage}"),
            ToolError::UnknownTool { .. } => {
                "the tools are grep, cat, find, ls, head, tail and read_output".into()
            }
            ToolError::Io { .. } => "check the file's permissions".into(),
            ToolError::Output(e) => e.help(),
        }
    }
}
