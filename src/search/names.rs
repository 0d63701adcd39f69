//! Name pinning: a query that is a tool's name (or its start) ranks that tool first, whatever
//! the text scores say. Names are compared by key ([`analyze::name_key`]), so `getFileContents`,
//! `get_file_contents` and `get file contents` are one name, and a server may be written in
//! front in any style: `github create_issue`, `github__create_issue`, `github/create_issue`,
//! `github.create_issue`.

use serde::{Deserialize, Serialize};

use super::analyze;
use super::bm25::StringTable;
use super::doc::ToolDoc;

/// How a document's name matched the query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Pin {
    /// The query starts the tool's name (whole words, or any prefix of three characters or
    /// more when the query is written as an identifier).
    Prefix,
    /// The query is the tool's name, alone or after its server's.
    Exact,
}

/// The name keys of every document, precomputed at build time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct NameKeys {
    /// Key of each document's tool name.
    pub(crate) tools: StringTable,
    /// Key of each document's server name.
    pub(crate) servers: StringTable,
}

/// A query as name pinning sees it.
#[derive(Debug)]
pub(crate) struct NameQuery {
    key: String,
    /// Written as an identifier (`get_pull_req`, `createEv`): a prefix may end mid-word.
    is_identifier: bool,
}

/// Shortest key that may pin by prefix: "ls" or "get" alone should not pin half the catalog
/// by accident of spelling.
const MIN_PREFIX_LEN: usize = 3;

impl NameQuery {
    /// Reads a query for name matching.
    pub(crate) fn new(text: &str) -> NameQuery {
        let trimmed = text.trim();
        let has_hump = trimmed
            .chars()
            .zip(trimmed.chars().skip(1))
            .any(|(a, b)| a.is_lowercase() && b.is_uppercase());
        let is_identifier = !trimmed.contains(char::is_whitespace)
            && (has_hump || trimmed.contains(['_', '-', '.', '/', ':']));
        NameQuery {
            key: analyze::name_key(trimmed),
            is_identifier,
        }
    }

    /// How `tool_key` (and `server_key` + tool) matches this query, if at all.
    fn pin(&self, server_key: &str, tool_key: &str) -> Option<Pin> {
        let key = self.key.as_str();
        if key.is_empty() || tool_key.is_empty() {
            return None;
        }
        let qualified_tail = key
            .strip_prefix(server_key)
            .and_then(|rest| rest.strip_prefix(' '))
            .filter(|_| !server_key.is_empty());
        if key == tool_key || qualified_tail == Some(tool_key) {
            return Some(Pin::Exact);
        }
        let starts = |tail: &str| {
            tail.len() >= MIN_PREFIX_LEN
                && tool_key.strip_prefix(tail).is_some_and(|rest| {
                    rest.starts_with(' ') || (self.is_identifier && !rest.is_empty())
                })
        };
        if starts(key) || qualified_tail.is_some_and(starts) {
            return Some(Pin::Prefix);
        }
        None
    }
}

impl NameKeys {
    /// Computes the keys of `docs`.
    pub(crate) fn build(docs: &[ToolDoc]) -> NameKeys {
        let mut keys = NameKeys::default();
        for doc in docs {
            keys.tools.push(&analyze::name_key(&doc.tool));
            keys.servers.push(&analyze::name_key(&doc.server));
        }
        keys
    }

    /// How document `doc`'s name matches `query`, if at all.
    pub(crate) fn pin(&self, doc: usize, query: &NameQuery) -> Option<Pin> {
        query.pin(self.servers.get(doc), self.tools.get(doc))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pin(query: &str, server: &str, tool: &str) -> Option<Pin> {
        NameQuery::new(query).pin(&analyze::name_key(server), &analyze::name_key(tool))
    }

    #[test]
    fn exact_names_pin_in_every_spelling() {
        for q in [
            "create_issue",
            "createIssue",
            "create issue",
            "CREATE_ISSUE",
            "github create_issue",
            "github__create_issue",
            "github/create_issue",
            "github.create_issue",
            "github:create_issue",
        ] {
            assert_eq!(pin(q, "github", "create_issue"), Some(Pin::Exact), "{q}");
        }
        assert_eq!(pin("gitlab/create_issue", "github", "create_issue"), None);
    }

    #[test]
    fn prefixes_pin_on_word_boundaries_or_as_identifiers() {
        assert_eq!(
            pin("create pull", "github", "create_pull_request"),
            Some(Pin::Prefix)
        );
        assert_eq!(
            pin("get_pull_req", "github", "get_pull_request"),
            Some(Pin::Prefix)
        );
        assert_eq!(
            pin("github/create_pu", "github", "create_pull_request"),
            Some(Pin::Prefix)
        );
        assert_eq!(pin("git", "git", "git_status"), Some(Pin::Prefix));
        // Plain words do not pin in the middle of a word, nor does the server alone.
        assert_eq!(pin("create pu", "github", "create_pull_request"), None);
        assert_eq!(pin("git", "github", "github_search"), None);
        assert_eq!(pin("github", "github", "create_issue"), None);
        assert_eq!(pin("ls", "fs", "ls_files"), None);
    }
}
