//! What [`merge`](super::merge) tells the user about the document it built: each warning is
//! one line that says what happened and which command changes it.

use std::fmt;

/// Something the merged document leaves out, changes or cannot satisfy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeWarning {
    /// More operations than one ChatGPT action accepts.
    TooManyOperations {
        /// Operations in the merged document.
        operations: usize,
        /// The limit ([`MergeOptions::operation_limit`](super::MergeOptions)).
        limit: usize,
        /// Operations per server, in input order.
        per_server: Vec<(String, usize)>,
    },
    /// An operation's description was over the limit and was cut.
    DescriptionTrimmed {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// Characters before.
        before: usize,
        /// Characters after.
        after: usize,
    },
    /// The server's document has no paths: mcpo could not start the server.
    NoTools {
        /// The server.
        server: String,
    },
    /// An enabled server of the stack has no document at all.
    MissingDocument {
        /// The server.
        server: String,
    },
    /// mcpo serves a tool the exposure has no rule for; it is left out (fail closed — the
    /// front refuses it too).
    UnknownTool {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
    },
    /// A document for a server that is not in the stack; it is ignored.
    UnknownServer {
        /// The server.
        server: String,
    },
    /// A second document for the same server; only the first is used.
    DuplicateDocument {
        /// The server.
        server: String,
    },
    /// An operation refers to something its document does not define (a missing component,
    /// another file); it is left out, since one dangling reference invalidates the document.
    UnresolvedReference {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// The `$ref` as written.
        reference: String,
    },
    /// Part of a server's document is not shaped as OpenAPI says; that part is left out.
    Malformed {
        /// The server.
        server: String,
        /// What is wrong, naming the part.
        detail: String,
    },
}

impl fmt::Display for MergeWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooManyOperations {
                operations,
                limit,
                per_server,
            } => {
                let counts: Vec<_> = per_server.iter().map(|(s, n)| format!("{s} {n}")).collect();
                write!(
                    f,
                    "the spec has {operations} operations ({}), over the limit of {limit} per \
                     ChatGPT action: deny tools (`mcp-launch tool deny SERVER TOOL…`), disable \
                     servers (`mcp-launch server disable SERVER`) or split the servers across \
                     config files (one stack per `--config`)",
                    counts.join(", ")
                )
            }
            Self::DescriptionTrimmed {
                server,
                tool,
                before,
                after,
            } => write!(
                f,
                "{server}/{tool}: description cut from {before} to {after} characters; set a \
                 shorter one with `mcp-launch tool describe {server} {tool} --text \"…\"`"
            ),
            Self::NoTools { server } => write!(
                f,
                "{server}: mcpo serves no tools for it (it could not start the server); see why \
                 with `mcp-launch list {server}` or `mcp-launch up -v`"
            ),
            Self::MissingDocument { server } => write!(
                f,
                "{server}: mcpo gave no OpenAPI document for it, so its tools are not in the \
                 spec; see why with `mcp-launch list {server}` or `mcp-launch up -v`"
            ),
            Self::UnknownTool { server, tool } => write!(
                f,
                "{server}/{tool}: left out of the spec, the tool index does not know this tool; \
                 refresh it with `mcp-launch list {server} --refresh` and restart the stack"
            ),
            Self::UnknownServer { server } => write!(
                f,
                "{server}: not a server of this stack, its OpenAPI document is ignored"
            ),
            Self::DuplicateDocument { server } => write!(
                f,
                "{server}: a second OpenAPI document for this server is ignored"
            ),
            Self::UnresolvedReference {
                server,
                tool,
                reference,
            } => write!(
                f,
                "{server}/{tool}: left out of the spec, it refers to `{reference}`, which mcpo's \
                 document does not define"
            ),
            Self::Malformed { server, detail } => write!(
                f,
                "{server}: mcpo's OpenAPI document is malformed ({detail}); that part is left out"
            ),
        }
    }
}
