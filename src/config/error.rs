//! Everything that can go wrong while loading configuration, with the facts a user needs to fix
//! it (file, line, column, server, variable) and a `help` line naming the next step.
//!
//! Invariants: `ConfigError` is `Clone` (it is stored inside every `ServerEntry`), so I/O errors
//! are kept as their message. `kind()` strings are part of the `--json` error envelope and must
//! never be renamed.

use std::path::{Path, PathBuf};

/// Why a configuration could not be loaded, or why one server entry in it is unusable.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// No `--config` was given and discovery found none of the candidate files.
    #[error("no MCP config file found; looked at {}", list_paths(searched))]
    NotFound {
        /// Every path discovery checked, in order.
        searched: Vec<PathBuf>,
    },

    /// Files of the working directory that would be used (a discovered config, the `./.env`
    /// read with it) have not been trusted, or changed since they were.
    #[error("{} is not trusted yet: mcp-launch would use {}", dir.display(), files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(" and "))]
    Untrusted {
        /// The directory.
        dir: PathBuf,
        /// The files that need trust.
        files: Vec<PathBuf>,
    },

    /// A file passed with `--config` does not exist.
    #[error("config file {} does not exist", path.display())]
    ConfigMissing {
        /// The path as resolved against the working directory.
        path: PathBuf,
    },

    /// A config file exists but could not be read (permissions, not UTF-8, a directory…).
    #[error("cannot read config file {}: {reason}", path.display())]
    ConfigUnreadable {
        /// The file.
        path: PathBuf,
        /// The operating system's message.
        reason: String,
    },

    /// A config file is not valid JSON.
    #[error("{}:{line}:{column}: invalid JSON: {message}", path.display())]
    InvalidJson {
        /// The file.
        path: PathBuf,
        /// 1-based line of the fault, as reported by serde_json.
        line: usize,
        /// 1-based column of the fault, as reported by serde_json.
        column: usize,
        /// serde_json's description, without its position suffix.
        message: String,
    },

    /// The top level of a config file is JSON but not an object.
    #[error("{}: the top level is {found}, expected an object", path.display())]
    NotAnObject {
        /// The file.
        path: PathBuf,
        /// What was found instead ("an array", "a string", …).
        found: &'static str,
    },

    /// A config file has neither a `mcpServers` nor a `servers` key.
    #[error("{}: no \"mcpServers\" or \"servers\" key", path.display())]
    NoServers {
        /// The file.
        path: PathBuf,
    },

    /// `mcpServers` or `servers` is present but is not an object.
    #[error("{}: \"{key}\" is {found}, expected an object", path.display())]
    ServersNotObject {
        /// The file.
        path: PathBuf,
        /// `mcpServers` or `servers`.
        key: &'static str,
        /// What was found instead.
        found: &'static str,
    },

    /// One server entry is malformed; the other servers of the file still load.
    #[error("{}: server \"{server}\": {fault}", at(path, *line))]
    InvalidServer {
        /// The config file.
        path: PathBuf,
        /// Approximate line of the server's entry (see `file::entry_line`).
        line: Option<usize>,
        /// The server's name.
        server: String,
        /// What is wrong with it.
        fault: ServerFault,
    },

    /// A `${VAR}` without default names a variable set nowhere.
    #[error("{}: server \"{server}\": variable {var} is not set", at(path, *line))]
    UnsetVariable {
        /// The variable's name.
        var: String,
        /// The server whose entry uses it.
        server: String,
        /// The config file.
        path: PathBuf,
        /// Approximate line of the server's entry.
        line: Option<usize>,
    },

    /// A config that came with the directory sends a variable from the process environment to a
    /// remote server (in its URL or a header) without declaring it.
    #[error("{}: server \"{server}\": its {place} reads ${{{var}}} from your environment, which a config found in this directory may not do unless the server declares it", at(path, *line))]
    UndeclaredUrlVariable {
        /// The variable's name.
        var: String,
        /// Where it would be sent: `url` or `header NAME`.
        place: String,
        /// The server whose URL uses it.
        server: String,
        /// The config file.
        path: PathBuf,
        /// Approximate line of the server's entry.
        line: Option<usize>,
    },

    /// A `${` is not closed or encloses something that is not a variable name.
    #[error("{}: server \"{server}\": bad ${{…}} in {text:?}: {reason}", at(path, *line))]
    InvalidInterpolation {
        /// The server whose entry holds the text.
        server: String,
        /// The config file.
        path: PathBuf,
        /// Approximate line of the server's entry.
        line: Option<usize>,
        /// The whole string that failed to interpolate.
        text: String,
        /// What is wrong ("unterminated `${`", "invalid variable name `a b`").
        reason: String,
    },

    /// A file passed with `--env-file` does not exist.
    #[error("env file {} does not exist", path.display())]
    EnvFileMissing {
        /// The path as resolved against the working directory.
        path: PathBuf,
    },

    /// An env file exists but could not be read.
    #[error("cannot read env file {}: {reason}", path.display())]
    EnvFileUnreadable {
        /// The file.
        path: PathBuf,
        /// The operating system's message.
        reason: String,
    },

    /// A line of an env file is not `KEY=VALUE`.
    #[error("{}:{line}: {reason}", path.display())]
    InvalidEnvFile {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong with the line.
        reason: String,
    },

    /// The process environment itself is unusable (e.g. the working directory was deleted).
    #[error("cannot read the process environment: {reason}")]
    Environment {
        /// The operating system's message.
        reason: String,
    },
}

/// What is wrong with one server entry.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ServerFault {
    /// The entry is not a JSON object.
    #[error("the entry is {found}, expected an object")]
    NotAnObject {
        /// What was found instead.
        found: &'static str,
    },
    /// Neither `command` nor `url` is present, so no transport can be chosen.
    #[error("it has neither \"command\" nor \"url\"")]
    NoTransport,
    /// A field has the wrong JSON type.
    #[error("\"{field}\" must be {expected}")]
    WrongType {
        /// The field's name (e.g. `args`).
        field: &'static str,
        /// What it must be (e.g. "an array of strings").
        expected: &'static str,
    },
    /// `type` names no transport we know.
    #[error("unknown \"type\" {value:?}")]
    UnknownType {
        /// The value given.
        value: String,
    },
    /// The declared `type` needs a field the entry lacks.
    #[error("type \"{transport}\" needs \"{field}\"")]
    MissingField {
        /// The transport declared.
        transport: &'static str,
        /// The field it needs.
        field: &'static str,
    },
    /// A URL that must serve as an OAuth client id (`oauth.clientMetadataUrl`) and cannot.
    #[error("\"{field}\" is refused: {why}")]
    BadClientIdUrl {
        /// The field.
        field: &'static str,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A secret is written out in the file instead of coming from a variable.
    #[error("\"{field}\" is written out in the file{}", if *in_checkout { ", which is in a git checkout (if it was committed, the secret is out: rotate it)" } else { "" })]
    LiteralSecret {
        /// The field (e.g. `oauth.clientSecret`).
        field: &'static str,
        /// Whether the file lies in a git work tree.
        in_checkout: bool,
    },
}

impl ConfigError {
    /// Stable snake_case type for the `--json` error envelope.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::NotFound { .. } | Self::ConfigMissing { .. } => "config_not_found",
            Self::ConfigUnreadable { .. } => "config_unreadable",
            Self::Untrusted { .. } => "untrusted_directory",
            Self::InvalidJson { .. } => "invalid_json",
            Self::NotAnObject { .. } | Self::NoServers { .. } | Self::ServersNotObject { .. } => {
                "invalid_config"
            }
            Self::InvalidServer { .. } => "invalid_server",
            Self::UnsetVariable { .. } => "unset_variable",
            Self::UndeclaredUrlVariable { .. } => "undeclared_variable",
            Self::InvalidInterpolation { .. } => "invalid_interpolation",
            Self::EnvFileMissing { .. } => "env_file_not_found",
            Self::EnvFileUnreadable { .. } => "env_file_unreadable",
            Self::InvalidEnvFile { .. } => "invalid_env_file",
            Self::Environment { .. } => "environment",
        }
    }

    /// One line telling the user what to do next.
    pub fn help(&self) -> String {
        match self {
            Self::NotFound { .. } => {
                "run `mcp-launch init` to write a working ./mcp.config.json (the reference servers), or pass --config PATH".to_string()
            }
            Self::Untrusted { dir, .. } => format!(
                "these files come with the directory, not from you: read them (a config's commands run as you; a .env sets variables), then run `mcp-launch trust` in {} — or name your own files with --config FILE and --env-file FILE",
                dir.display()
            ),
            Self::ConfigMissing { .. } => {
                "check the path given to --config (relative paths start at the current directory)"
                    .to_string()
            }
            Self::ConfigUnreadable { path, .. } => {
                format!("make {} a readable UTF-8 file", path.display())
            }
            Self::InvalidJson {
                path, line, column, ..
            } => format!(
                "fix the JSON at {}:{line}:{column}; look for a missing comma, quote or bracket \
                 (JSON allows no comments and no trailing commas)",
                path.display()
            ),
            Self::NotAnObject { .. } => {
                "write the file as an object: {\"mcpServers\": {\"NAME\": {\"command\": …}}}"
                    .to_string()
            }
            Self::NoServers { .. } => "add a \"mcpServers\" object (Claude, Cursor) or a \
                 \"servers\" object (VS Code) mapping server names to their settings"
                .to_string(),
            Self::ServersNotObject { key, .. } => {
                format!("make \"{key}\" an object: {{\"NAME\": {{\"command\": …}}}}")
            }
            Self::InvalidServer { fault, .. } => fault.help(),
            Self::UnsetVariable { var, .. } => format!(
                "set {var} in the environment or in a file passed with --env-file FILE \
                 (./.env is read only with a discovered config), or write ${{{var}:-default}}"
            ),
            Self::UndeclaredUrlVariable { var, server, .. } => format!(
                "if {server} should receive {var}, declare it in the server's entry: \
                 \"env\": {{\"{var}\": \"${{{var}}}\"}} (`mcp-launch trust` then shows it); or \
                 set it in ./.env, or name the file with --config (your own choice)"
            ),
            Self::InvalidInterpolation { .. } => "write ${NAME} or ${NAME:-default} with a name \
                 of letters, digits and _; write $$ for a literal $"
                .to_string(),
            Self::EnvFileMissing { .. } => "check the path given to --env-file".to_string(),
            Self::EnvFileUnreadable { path, .. } => {
                format!("make {} a readable UTF-8 file", path.display())
            }
            Self::InvalidEnvFile { .. } => "write each line as KEY=VALUE (optionally after \
                 `export`); quote values that start with a quote or contain ` #`"
                .to_string(),
            Self::Environment { .. } => {
                "run mcp-launch from an existing, readable directory".to_string()
            }
        }
    }
}

impl ServerFault {
    /// The next step for this fault.
    fn help(&self) -> String {
        match self {
            Self::NotAnObject { .. } => {
                "give the server an object: {\"command\": \"…\", \"args\": […]}".to_string()
            }
            Self::NoTransport => "add \"command\" (a local stdio server) or \"url\" (a remote \
                 HTTP or SSE server), or remove the entry"
                .to_string(),
            Self::WrongType { field, expected } => format!("make \"{field}\" {expected}"),
            Self::UnknownType { .. } => {
                "use \"type\": \"stdio\", \"http\" (or \"streamable-http\") or \"sse\"".to_string()
            }
            Self::MissingField { field, .. } => format!("add \"{field}\" to the entry"),
            Self::BadClientIdUrl { field, .. } => {
                format!(
                    "make \"{field}\" {}",
                    super::oauth::CLIENT_METADATA_URL_FORM
                )
            }
            Self::LiteralSecret { field, .. } => format!(
                "write \"{field}\": \"${{VAR}}\" and set VAR in the environment or a file \
                 passed with --env-file; the secret is never stored or shown"
            ),
        }
    }
}

/// `path:line` when the line is known, else `path`.
fn at(path: &Path, line: Option<usize>) -> String {
    match line {
        Some(line) => format!("{}:{line}", path.display()),
        None => path.display().to_string(),
    }
}

fn list_paths(paths: &[PathBuf]) -> String {
    let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    shown.join(", ")
}

/// A short description of a JSON value's type, for messages ("an array", "a string", …).
pub(crate) fn describe(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

impl crate::error::Actionable for ConfigError {
    fn kind(&self) -> &'static str {
        ConfigError::kind(self)
    }
    fn help(&self) -> String {
        ConfigError::help(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_lists_every_path_and_suggests_init() {
        let err = ConfigError::NotFound {
            searched: vec![
                PathBuf::from("/a/.mcp.json"),
                PathBuf::from("/h/.claude/mcp.json"),
            ],
        };
        assert_eq!(err.kind(), "config_not_found");
        assert_eq!(
            err.to_string(),
            "no MCP config file found; looked at /a/.mcp.json, /h/.claude/mcp.json"
        );
        assert_eq!(
            err.help(),
            "run `mcp-launch init` to write a working ./mcp.config.json (the reference servers), or pass --config PATH"
        );
    }

    #[test]
    fn unset_variable_names_var_server_and_place() {
        let err = ConfigError::UnsetVariable {
            var: "TOKEN".into(),
            server: "github".into(),
            path: PathBuf::from("/p/.mcp.json"),
            line: Some(4),
        };
        assert_eq!(err.kind(), "unset_variable");
        assert_eq!(
            err.to_string(),
            "/p/.mcp.json:4: server \"github\": variable TOKEN is not set"
        );
        assert_eq!(
            err.help(),
            "set TOKEN in the environment or in a file passed with --env-file FILE (./.env is read only with a discovered config), or write ${TOKEN:-default}"
        );
    }

    #[test]
    fn invalid_server_help_comes_from_its_fault() {
        let err = ConfigError::InvalidServer {
            path: PathBuf::from("c.json"),
            line: None,
            server: "x".into(),
            fault: ServerFault::WrongType {
                field: "args",
                expected: "an array of strings",
            },
        };
        assert_eq!(err.kind(), "invalid_server");
        assert_eq!(
            err.to_string(),
            "c.json: server \"x\": \"args\" must be an array of strings"
        );
        assert_eq!(err.help(), "make \"args\" an array of strings");
    }
}
