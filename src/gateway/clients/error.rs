//! What can go wrong while printing or writing a client's entry, with the file and line to fix.
//! `kind()` strings are part of the `--json` error envelope and must never be renamed.

use std::path::PathBuf;

/// Why a client's config could not be printed or written.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The client name is not one we know.
    #[error("unknown client {name:?}")]
    UnknownClient {
        /// The name as given.
        name: String,
    },

    /// The client has no config file of that scope (Claude Desktop has no project file).
    #[error("{client} has no {scope} config file")]
    UnsupportedScope {
        /// The client's name.
        client: &'static str,
        /// `user` or `project`.
        scope: &'static str,
    },

    /// The client's config file takes no HTTP server entry we write (Claude Desktop, Codex).
    #[error("{client}'s entry is written for stdio only, not for a running serve --http")]
    NoHttpEntry {
        /// The client's name.
        client: &'static str,
    },

    /// The client's config file exists but could not be read.
    #[error("cannot read {}: {reason}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The operating system's message (or "not UTF-8").
        reason: String,
    },

    /// The client's config file is not valid JSON, JSONC or TOML: it is left untouched.
    #[error("{}:{line}:{column}: invalid {format}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line of the fault.
        line: usize,
        /// 1-based column of the fault.
        column: usize,
        /// `JSON`, `JSONC` or `TOML`.
        format: &'static str,
        /// The parser's description of the fault.
        message: String,
    },

    /// An object we read or edit holds one name twice: which one the client uses is its
    /// parser's choice (the last, for most), and an edit could keep the other.
    #[error("{}: {key} holds \"{name}\" twice", path.display())]
    DuplicateName {
        /// The file.
        path: PathBuf,
        /// The object (`the top level`, `"mcpServers"`, …).
        key: String,
        /// The name found twice.
        name: String,
    },

    /// The file parses, but a key we must edit holds something else than a table/object.
    #[error("{}: {key} is {found}, expected {expected}", path.display())]
    WrongShape {
        /// The file.
        path: PathBuf,
        /// The key (`the top level`, `"mcpServers"`, `[mcp_servers]`, …).
        key: String,
        /// What was found.
        found: &'static str,
        /// What the client expects there.
        expected: &'static str,
    },

    /// The client's file is also a config `mcp-launch serve` reads (`--config`, or discovery's
    /// `./.mcp.json`): the gateway would front itself.
    #[error("{} is also the config mcp-launch serve reads: the gateway would start itself", path.display())]
    GatewayConfig {
        /// The file.
        path: PathBuf,
    },

    /// The backup or the new file could not be written; the old file is unchanged.
    #[error("cannot write {}: {reason}", path.display())]
    Write {
        /// The file (the backup or the config).
        path: PathBuf,
        /// The operating system's message.
        reason: String,
    },
}

impl ClientError {
    /// A stable snake_case name for the JSON envelope's `type`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::UnknownClient { .. } => "unknown_client",
            Self::UnsupportedScope { .. } => "unsupported_scope",
            Self::NoHttpEntry { .. } => "no_http_entry",
            Self::Unreadable { .. } => "client_config_unreadable",
            Self::Invalid { .. } => "client_config_invalid",
            Self::WrongShape { .. } => "client_config_shape",
            Self::DuplicateName { .. } => "client_config_duplicate_name",
            Self::GatewayConfig { .. } => "client_config_is_gateway_config",
            Self::Write { .. } => "client_config_write_failed",
        }
    }

    /// The next step.
    pub fn help(&self) -> String {
        match self {
            Self::NoHttpEntry { .. } => {
                "drop --http: the client then starts `mcp-launch serve` itself over stdio (no key needed)".into()
            }
            Self::UnknownClient { .. } => format!(
                "use one of: {}",
                super::Client::ALL.map(|c| c.name()).join(", ")
            ),
            Self::UnsupportedScope { .. } => {
                "drop the scope option: this client has only its user file".to_string()
            }
            Self::Unreadable { path, .. } => {
                format!("make {} a readable UTF-8 file", path.display())
            }
            Self::Invalid { path, line, .. } => format!(
                "fix line {line} of {} (the client cannot read it either), or move the file \
                 aside and run again to start a new one; nothing was changed",
                path.display()
            ),
            Self::WrongShape {
                path,
                key,
                expected,
                ..
            } => format!(
                "make {key} {expected} in {}, or add the entry by hand from --print-config; \
                 nothing was changed",
                path.display()
            ),
            Self::DuplicateName { path, key, name } => format!(
                "keep one of the two \"{name}\" in {key} of {} (the client reads only one of \
                 them), then run again; nothing was changed",
                path.display()
            ),
            Self::GatewayConfig { path } => format!(
                "give serve a config of its own: move the servers from {} to another file \
                 (e.g. mcp-launch.json) and pass --config with it, or write the user scope",
                path.display()
            ),
            Self::Write { path, .. } => format!(
                "check that {} can be written (its directory's permissions, free space)",
                path.display()
            ),
        }
    }
}

impl crate::error::Actionable for ClientError {
    fn kind(&self) -> &'static str {
        ClientError::kind(self)
    }
    fn help(&self) -> String {
        ClientError::help(self)
    }
}

/// 1-based line and column of a byte offset in `text` (columns count characters).
pub(super) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut at = offset.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, column)
}
