//! One config file: read, parse as JSON, split into server entries.
//!
//! Formats: `{"mcpServers": {…}}` (Claude Desktop, Claude Code, Cursor) and `{"servers": {…}}`
//! (VS Code). When a file has both, the entries are merged, `mcpServers` first; a name already
//! taken by `mcpServers` is skipped in `servers` with a warning, so names stay unique within a
//! file. Other top-level keys (`inputs`, …) are ignored.
//!
//! File-level problems are `Err`; a bad server becomes an `Err` spec inside its own entry so
//! its neighbours still load.
//!
//! Line numbers of entries are an approximation: the first `"NAME":` (key written the way
//! serde_json would write it, whitespace allowed before the colon) after the section key in the
//! raw text. A name written with escapes the serializer would not use, or a key of the same
//! name earlier in the section, can make it `None` or point at the wrong line.

use std::path::Path;

use serde_json::Value;

use super::error::{describe, ConfigError};
use super::server::{self, Context};
use super::shape;
use super::variables::Variables;
use super::ServerEntry;

/// The keys that hold servers, in merge order.
const SECTIONS: [&str; 2] = ["mcpServers", "servers"];

/// Reads `path` and builds its entries, all tagged with `stack`. Each entry's `qualified` name
/// is its plain name; the caller qualifies names shared between stacks.
pub(crate) fn read(
    path: &Path,
    stack: &str,
    vars: &Variables<'_>,
) -> Result<Vec<ServerEntry>, ConfigError> {
    let raw = std::fs::read_to_string(path).map_err(|err| match err.kind() {
        std::io::ErrorKind::NotFound => ConfigError::ConfigMissing {
            path: path.to_path_buf(),
        },
        _ => ConfigError::ConfigUnreadable {
            path: path.to_path_buf(),
            reason: err.to_string(),
        },
    })?;
    parse(path, &raw, stack, vars)
}

/// Parses the text of a config file; `path` is only used in errors and to resolve `cwd`.
pub(crate) fn parse(
    path: &Path,
    raw: &str,
    stack: &str,
    vars: &Variables<'_>,
) -> Result<Vec<ServerEntry>, ConfigError> {
    let root: Value = serde_json::from_str(raw).map_err(|err| invalid_json(path, raw, &err))?;
    let sections = sections(path, &root)?;
    let mut entries: Vec<ServerEntry> = Vec::new();
    let mut taken = std::collections::HashSet::new();
    for (section, servers) in sections {
        let mut lines = EntryLines::new(raw, section);
        for (name, value) in servers {
            if !taken.insert(name.as_str()) {
                tracing::warn!(
                    path = %path.display(), server = %name,
                    "server appears in both \"mcpServers\" and \"servers\"; keeping the first"
                );
                continue;
            }
            let line = lines.line_of(name);
            let ctx = Context {
                path,
                line,
                server: name,
                vars,
                named: Default::default(),
            };
            entries.push(ServerEntry {
                name: name.clone(),
                qualified: name.clone(),
                stack: stack.to_string(),
                line,
                disabled: shape::is_disabled(value),
                spec: server::build(value, &ctx),
            });
        }
    }
    Ok(entries)
}

/// One server section: its key and its servers.
pub(crate) type Section<'r> = (&'static str, &'r serde_json::Map<String, Value>);

/// The server sections of a parsed config file, in merge order.
pub(crate) fn sections<'r>(path: &Path, root: &'r Value) -> Result<Vec<Section<'r>>, ConfigError> {
    let root = root.as_object().ok_or_else(|| ConfigError::NotAnObject {
        path: path.to_path_buf(),
        found: describe(root),
    })?;
    let mut sections = Vec::new();
    for key in SECTIONS {
        match root.get(key) {
            None => {}
            Some(Value::Object(servers)) => sections.push((key, servers)),
            Some(other) => {
                return Err(ConfigError::ServersNotObject {
                    path: path.to_path_buf(),
                    key,
                    found: describe(other),
                })
            }
        }
    }
    if sections.is_empty() {
        return Err(ConfigError::NoServers {
            path: path.to_path_buf(),
        });
    }
    Ok(sections)
}

/// serde_json's error with its position as separate facts.
pub(crate) fn invalid_json(path: &Path, raw: &str, err: &serde_json::Error) -> ConfigError {
    let (line, column) = crate::error::json_position(raw, err);
    let full = err.to_string();
    let suffix = format!(" at line {} column {}", err.line(), err.column());
    let message = full.strip_suffix(&suffix).unwrap_or(&full).to_string();
    ConfigError::InvalidJson {
        path: path.to_path_buf(),
        line,
        column,
        message,
    }
}

/// Approximate 1-based lines of a section's server keys (see the module docs), found in one
/// forward pass: entries come in file order, so each key is looked for after the previous
/// one's (from the section's start when it is not there) and newlines are counted only
/// between them. Looking each key up from the section's start cost O(servers × file size):
/// 25 ms of every command on a config of 1,000 servers.
struct EntryLines<'a> {
    raw: &'a str,
    section_start: usize,
    /// Offset of the last key found, and its line.
    at: usize,
    line: usize,
}

impl<'a> EntryLines<'a> {
    fn new(raw: &'a str, section: &str) -> Self {
        let section_start = find_key(raw, section, 0).unwrap_or(0);
        let line = raw[..section_start].matches('\n').count() + 1;
        Self {
            raw,
            section_start,
            at: section_start,
            line,
        }
    }

    /// The line of the first `"name":` after the previous entry's key (else after the
    /// section's key).
    fn line_of(&mut self, name: &str) -> Option<usize> {
        let Some(found) = find_key(self.raw, name, self.at) else {
            let found = find_key(self.raw, name, self.section_start)?;
            return Some(self.raw[..found].matches('\n').count() + 1);
        };
        self.line += self.raw[self.at..found].matches('\n').count();
        self.at = found;
        Some(self.line)
    }
}

/// Byte offset of the first `"key"` at or after `from` that is followed by a colon.
fn find_key(raw: &str, key: &str, from: usize) -> Option<usize> {
    let needle = serde_json::to_string(key).ok()?;
    let mut search = from;
    while let Some(found) = raw.get(search..)?.find(&needle) {
        let at = search + found;
        let after = &raw[at + needle.len()..];
        if after.trim_start().starts_with(':') {
            return Some(at);
        }
        search = at + needle.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    fn parse_text(raw: &str) -> Result<Vec<ServerEntry>, ConfigError> {
        let process = BTreeMap::new();
        let vars = Variables::from_layers(&process, BTreeMap::new());
        parse(Path::new("/p/.mcp.json"), raw, "mcp", &vars)
    }

    fn names(entries: &[ServerEntry]) -> Vec<&str> {
        entries.iter().map(|e| e.name.as_str()).collect()
    }

    #[test]
    fn claude_and_vscode_formats() {
        let claude = parse_text(r#"{"mcpServers": {"a": {"command": "x"}}}"#).unwrap();
        assert_eq!(names(&claude), ["a"]);
        assert_eq!(claude[0].stack, "mcp");
        let vscode =
            parse_text(r#"{"inputs": [], "servers": {"b": {"type": "http", "url": "u"}}}"#);
        let vscode = vscode.unwrap();
        assert_eq!(names(&vscode), ["b"]);
        assert_eq!(vscode[0].spec.as_ref().unwrap().transport_name(), "http");
    }

    #[test]
    fn both_sections_merge_with_mcp_servers_first() {
        let raw = r#"{"servers": {"v": {"command": "v"}, "dup": {"url": "from-servers"}},
                      "mcpServers": {"m": {"command": "m"}, "dup": {"command": "from-mcp"}}}"#;
        let entries = parse_text(raw).unwrap();
        assert_eq!(names(&entries), ["m", "dup", "v"]);
        assert_eq!(entries[1].spec.as_ref().unwrap().transport_name(), "stdio");
    }

    #[test]
    fn malformed_json_gives_line_and_column() {
        let raw = "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",}\n  }\n}\n";
        let err = parse_text(raw).unwrap_err();
        let ConfigError::InvalidJson {
            path,
            line,
            column,
            message,
        } = &err
        else {
            panic!("unexpected {err:?}")
        };
        assert_eq!(path, &PathBuf::from("/p/.mcp.json"));
        // `    "a": {"command": "x",}`: the brace after the trailing comma is column 26.
        assert_eq!((*line, *column), (3, 26));
        assert_eq!(message, "trailing comma");
        assert!(
            err.to_string()
                .starts_with("/p/.mcp.json:3:26: invalid JSON"),
            "{err}"
        );
        assert!(err.help().contains("/p/.mcp.json:3:26"));
        assert_eq!(err.kind(), "invalid_json");
    }

    #[test]
    fn top_level_must_be_an_object_with_servers() {
        let err = parse_text("[1]").unwrap_err();
        assert_eq!(
            err,
            ConfigError::NotAnObject {
                path: "/p/.mcp.json".into(),
                found: "an array"
            }
        );
        let err = parse_text(r#"{"other": {}}"#).unwrap_err();
        assert_eq!(
            err,
            ConfigError::NoServers {
                path: "/p/.mcp.json".into()
            }
        );
        assert!(err.to_string().contains("/p/.mcp.json"));
        let err = parse_text(r#"{"mcpServers": []}"#).unwrap_err();
        assert_eq!(
            err,
            ConfigError::ServersNotObject {
                path: "/p/.mcp.json".into(),
                key: "mcpServers",
                found: "an array"
            }
        );
        assert_eq!(err.kind(), "invalid_config");
    }

    #[test]
    fn a_bad_server_does_not_hide_the_others() {
        let raw = "{\"mcpServers\": {\n  \"good\": {\"command\": \"x\"},\n  \"bad\": {\"args\": [\"y\"]},\n  \"also\": {\"url\": \"u\"}\n}}";
        let entries = parse_text(raw).unwrap();
        assert_eq!(names(&entries), ["good", "bad", "also"]);
        assert!(entries[0].spec.is_ok());
        assert!(entries[2].spec.is_ok());
        let err = entries[1].spec.as_ref().unwrap_err();
        assert_eq!(err.kind(), "invalid_server");
        assert_eq!(
            err.to_string(),
            "/p/.mcp.json:3: server \"bad\": it has neither \"command\" nor \"url\""
        );
    }

    #[test]
    fn entry_lines_skip_same_named_keys_before_the_section() {
        let raw = "{\n  \"git\": 1,\n  \"mcpServers\": {\n    \"x\": {\"command\": \"git\"},\n    \"git\" : {\"command\": \"g\"}\n  }\n}";
        let line = |name| EntryLines::new(raw, "mcpServers").line_of(name);
        assert_eq!(line("git"), Some(5));
        assert_eq!(line("x"), Some(4));
        assert_eq!(line("absent"), None);
        let mut in_order = EntryLines::new(raw, "mcpServers");
        assert_eq!(in_order.line_of("x"), Some(4));
        assert_eq!(in_order.line_of("git"), Some(5));
        assert_eq!(
            in_order.line_of("x"),
            Some(4),
            "out of order: from the section again"
        );
        let entries = parse_text(raw).unwrap();
        assert_eq!(entries[1].line, Some(5));
    }

    #[test]
    fn disabled_flag_is_kept_and_the_spec_still_built() {
        let entries =
            parse_text(r#"{"mcpServers": {"off": {"command": "x", "disabled": true}}}"#).unwrap();
        assert!(entries[0].disabled);
        assert!(entries[0].spec.is_ok());
    }
}
