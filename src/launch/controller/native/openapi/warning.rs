//! What [`server_document`](super::server_document) tells the user about a server's tools:
//! each warning is one line naming the server and tool and what the spec does about it.

use std::fmt;

use super::names::NameProblem;

/// A tool left out of the generated document, or documented more loosely than it is defined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolWarning {
    /// A `tools/list` entry without a string `name`; it is left out.
    Nameless {
        /// The server.
        server: String,
        /// Its position in `tools/list`, from 0.
        index: usize,
    },
    /// A name that cannot be the path segment `/<name>` as is; the tool is left out.
    UnusableName {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// Why.
        problem: NameProblem,
    },
    /// A second tool of the same name; only the first is served.
    DuplicateName {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
    },
    /// `inputSchema` is not a JSON object; the arguments are documented as any object.
    InputSchemaReplaced {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
    },
    /// `outputSchema` is not a JSON object; the result is documented as any JSON.
    OutputSchemaIgnored {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
    },
    /// A `$ref` that does not resolve inside the tool's own schema (a URL, another file, an
    /// anchor, a missing definition); it is removed, so that part accepts any value.
    UnresolvedReference {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// The `$ref` as written (JSON text when it is not a string).
        reference: String,
    },
    /// A schema keyword that is data, not a subschema (a `default`, `enum`, `examples`, …),
    /// but holds a `$ref` key, which OpenAPI tools would take for a reference; it is removed.
    ReferenceInData {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// The keyword.
        keyword: String,
    },
}

impl fmt::Display for ToolWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Nameless { server, index } => write!(
                f,
                "{server}: entry {index} of its tools/list has no name; left out of the spec"
            ),
            Self::UnusableName {
                server,
                tool,
                problem,
            } => write!(
                f,
                "{server}/{tool}: left out of the spec, the name cannot be a URL path segment \
                 as is ({problem})"
            ),
            Self::DuplicateName { server, tool } => write!(
                f,
                "{server}/{tool}: tools/list has this name twice; only the first is served"
            ),
            Self::InputSchemaReplaced { server, tool } => write!(
                f,
                "{server}/{tool}: its inputSchema is not a JSON object; the spec documents the \
                 arguments as any object"
            ),
            Self::OutputSchemaIgnored { server, tool } => write!(
                f,
                "{server}/{tool}: its outputSchema is not a JSON object; the spec documents the \
                 result as any JSON"
            ),
            Self::UnresolvedReference {
                server,
                tool,
                reference,
            } => write!(
                f,
                "{server}/{tool}: its schema refers to `{reference}`, which it does not define; \
                 the spec documents that part as any value"
            ),
            Self::ReferenceInData {
                server,
                tool,
                keyword,
            } => write!(
                f,
                "{server}/{tool}: a `{keyword}` in its schema holds a `$ref` key, which OpenAPI \
                 tools take for a reference; the spec leaves that `{keyword}` out"
            ),
        }
    }
}
