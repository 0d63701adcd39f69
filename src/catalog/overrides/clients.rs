//! Per-client allow-lists: the overrides' `clients` block names, for an OAuth client id (or a
//! token's `sub`), the tools it may call through `serve --http --auth oauth|oidc:…`:
//!
//! ```json
//! "clients": {
//!   "claude-team": {"tools": ["github__search_code", "time__*"]},
//!   "alice@example.com": {"tools": ["*"]},
//!   "*": {"tools": ["time__*"]}
//! }
//! ```
//!
//! A pattern is an exposed name (`server__tool`, as clients see it), `server__*` for every tool
//! of a server, or `*`. With no `clients` block every token reaches what its scope allows. With
//! one, a token is held to every entry naming its client id or its subject (both, when both are
//! named); one named by neither falls to `"*"`, and without `"*"` it reaches no tool. The scope
//! still applies on top: `tools:read` stays read-only whatever the list says.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// The tools one client (or subject) may call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientTools {
    /// Patterns: `server__tool`, `server__*` or `*`.
    #[serde(default)]
    pub tools: BTreeSet<String>,
}

/// The entry that holds clients no other entry names.
pub const ANY_CLIENT: &str = "*";

/// The `clients` block: client id or subject → its tools.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Clients(pub BTreeMap<String, ClientTools>);

/// One tool, named every way a pattern may name it.
#[derive(Debug, Clone, Copy)]
pub struct ToolNames<'a> {
    /// The server's name (the gateway's, qualified).
    pub server: &'a str,
    /// The tool's name on its server.
    pub tool: &'a str,
    /// The name clients see (`server__tool`, or shortened).
    pub exposed: &'a str,
}

impl ClientTools {
    fn allows(&self, names: ToolNames<'_>) -> bool {
        self.tools.iter().any(|pattern| {
            pattern == ANY_CLIENT
                || pattern == names.exposed
                || pattern
                    .strip_prefix(names.server)
                    .and_then(|rest| rest.strip_prefix("__"))
                    .is_some_and(|rest| rest == "*" || rest == names.tool)
        })
    }
}

impl Clients {
    /// Whether nothing is listed (every token reaches what its scope allows).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether the holder of a token issued to `client_id` (for `subject`) may call the tool.
    pub fn allows(&self, client_id: &str, subject: Option<&str>, names: ToolNames<'_>) -> bool {
        if self.0.is_empty() {
            return true;
        }
        let mut named = self.0.get(client_id).into_iter().collect::<Vec<_>>();
        if let Some(entry) = subject
            .filter(|s| *s != client_id)
            .and_then(|s| self.0.get(s))
        {
            named.push(entry);
        }
        match named.is_empty() {
            true => self.0.get(ANY_CLIENT).is_some_and(|any| any.allows(names)),
            false => named.iter().all(|entry| entry.allows(names)),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn clients(value: serde_json::Value) -> Clients {
        serde_json::from_value(value).unwrap()
    }

    const ECHO: ToolNames<'static> = ToolNames {
        server: "fault",
        tool: "echo",
        exposed: "fault__echo",
    };
    const ERASE: ToolNames<'static> = ToolNames {
        server: "fault",
        tool: "erase",
        exposed: "fault__erase",
    };
    const NOW: ToolNames<'static> = ToolNames {
        server: "time",
        tool: "now",
        exposed: "time__now",
    };

    #[test]
    fn no_block_allows_everything() {
        assert!(Clients::default().allows("any", None, ERASE));
    }

    #[test]
    fn a_named_client_reaches_its_patterns_only() {
        let lists = clients(json!({"app": {"tools": ["fault__echo", "time__*"]}}));
        assert!(lists.allows("app", None, ECHO));
        assert!(lists.allows("app", None, NOW));
        assert!(!lists.allows("app", None, ERASE));
    }

    #[test]
    fn unnamed_clients_fall_to_the_star_entry_or_reach_nothing() {
        let strict = clients(json!({"app": {"tools": ["*"]}}));
        assert!(!strict.allows("stranger", None, ECHO));
        let open = clients(json!({"app": {"tools": ["*"]}, "*": {"tools": ["time__*"]}}));
        assert!(open.allows("stranger", None, NOW));
        assert!(!open.allows("stranger", None, ECHO));
    }

    #[test]
    fn client_and_subject_entries_both_hold() {
        let lists = clients(json!({
            "app": {"tools": ["fault__*"]},
            "alice": {"tools": ["fault__echo", "time__now"]}
        }));
        assert!(lists.allows("app", Some("alice"), ECHO));
        assert!(
            !lists.allows("app", Some("alice"), ERASE),
            "alice's list narrows the app's"
        );
        assert!(
            !lists.allows("app", Some("alice"), NOW),
            "the app's list narrows alice's"
        );
        assert!(lists.allows("other-app", Some("alice"), NOW));
    }

    /// `tool deny` and the TUI rewrite the file: the block must survive them.
    #[test]
    fn the_block_is_read_kept_through_a_rewrite_and_checked() {
        let text = r#"{"version": 1, "clients": {"app": {"tools": ["time__*"]}}}"#;
        let path = std::path::PathBuf::from("overrides.json");
        let mut overrides = super::super::Overrides::parse(path.clone(), text).unwrap();
        assert!(overrides.clients().allows("app", None, NOW));
        overrides.server_mut("mcp", "fault").deny(&["erase".into()]);
        let written = overrides.to_text().unwrap();
        let again = super::super::Overrides::parse(path.clone(), &written).unwrap();
        assert_eq!(again.clients(), overrides.clients(), "{written}");
        let typo = r#"{"clients": {"app": {"tool": ["time__*"]}}}"#;
        let refused = super::super::Overrides::parse(path, typo).unwrap_err();
        assert!(refused.to_string().contains("tool"), "{refused}");
    }

    #[test]
    fn a_server_pattern_does_not_match_a_longer_server_name() {
        let lists = clients(json!({"app": {"tools": ["fa__*"]}}));
        let tool = ToolNames {
            server: "fa",
            tool: "x",
            exposed: "fa__x",
        };
        assert!(lists.allows("app", None, tool));
        assert!(!lists.allows("app", None, ECHO));
    }
}
