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
//!
//! Resources, resource templates and prompts follow the same entries. An entry without
//! `resources` (or `prompts`) shows a server's resources and templates (or prompts) when the
//! client reaches one of that server's tools at all, and hides them otherwise. An entry that
//! names them decides alone: `"resources": ["docs__*", "files+file:///srv/readme.md"]`,
//! `"prompts": ["github__review"]` — a pattern is `*`, `server__*`, an exposed prompt name, or
//! an exposed resource URI or template (`server+demo://r/{id}`, whose fixed start covers the
//! URIs it makes); `[]` hides them all.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// The tools one client (or subject) may call, and the resources and prompts it may see.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientTools {
    /// Patterns: `server__tool`, `server__*` or `*`.
    #[serde(default)]
    pub tools: BTreeSet<String>,
    /// Patterns of resources and templates (`*`, `server__*`, an exposed URI or template);
    /// none: those of the servers whose tools the client reaches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<BTreeSet<String>>,
    /// Patterns of prompts (`*`, `server__*`, `server__prompt`); none: those of the servers
    /// whose tools the client reaches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<BTreeSet<String>>,
}

/// What a server offers besides tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemKind {
    /// A resource or resource template, named by its exposed URI (or template).
    Resource,
    /// A prompt, named by its exposed name.
    Prompt,
}

/// One resource, template or prompt, as a pattern may name it.
#[derive(Debug, Clone, Copy)]
pub struct ItemNames<'a> {
    /// What it is.
    pub kind: ItemKind,
    /// The server's name (the gateway's, qualified).
    pub server: &'a str,
    /// The name (prompt) or URI / template (resource) clients see.
    pub exposed: &'a str,
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

impl ClientTools {
    /// Whether this entry shows the item: its own patterns when it has them for the item's
    /// kind, else `reaches_server` (whether the client reaches a tool of the item's server).
    fn shows(&self, item: ItemNames<'_>, reaches_server: bool) -> bool {
        let patterns = match item.kind {
            ItemKind::Resource => &self.resources,
            ItemKind::Prompt => &self.prompts,
        };
        let Some(patterns) = patterns else {
            return reaches_server;
        };
        patterns.iter().any(|pattern| {
            pattern == ANY_CLIENT
                || names_server(pattern, item.server)
                || match item.kind {
                    ItemKind::Prompt => pattern == item.exposed,
                    ItemKind::Resource => names_uri(pattern, item.exposed),
                }
        })
    }
}

/// Whether `pattern` is `server__*`.
fn names_server(pattern: &str, server: &str) -> bool {
    pattern.strip_prefix(server) == Some("__*")
}

/// Whether a resource pattern names `uri`: equal, or a template (`x+demo://r/{id}`) whose
/// fixed start (up to the first `{`) starts it — a template pattern also names itself.
fn names_uri(pattern: &str, uri: &str) -> bool {
    match pattern.split_once('{') {
        Some((fixed, _)) => !fixed.is_empty() && (uri.starts_with(fixed) || pattern == uri),
        None => pattern == uri,
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
        let held = self.entries(client_id, subject);
        !held.is_empty() && held.iter().all(|entry| entry.allows(names))
    }

    /// Whether the holder of a token issued to `client_id` (for `subject`) may see (and
    /// read, get, subscribe to) `item`; `reaches_server`: whether it reaches a tool of the
    /// item's server (which decides for every entry that does not name such items).
    pub fn shows(
        &self,
        client_id: &str,
        subject: Option<&str>,
        item: ItemNames<'_>,
        reaches_server: bool,
    ) -> bool {
        if self.0.is_empty() {
            return reaches_server;
        }
        let held = self.entries(client_id, subject);
        !held.is_empty() && held.iter().all(|entry| entry.shows(item, reaches_server))
    }

    /// The entries a token is held to: those naming its client id or subject, else `"*"`'s
    /// (none: it reaches nothing).
    fn entries(&self, client_id: &str, subject: Option<&str>) -> Vec<&ClientTools> {
        let mut named = self.0.get(client_id).into_iter().collect::<Vec<_>>();
        if let Some(entry) = subject
            .filter(|s| *s != client_id)
            .and_then(|s| self.0.get(s))
        {
            named.push(entry);
        }
        if named.is_empty() {
            named.extend(self.0.get(ANY_CLIENT));
        }
        named
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

    fn prompt<'a>(server: &'a str, exposed: &'a str) -> ItemNames<'a> {
        ItemNames {
            kind: ItemKind::Prompt,
            server,
            exposed,
        }
    }

    fn resource<'a>(server: &'a str, exposed: &'a str) -> ItemNames<'a> {
        ItemNames {
            kind: ItemKind::Resource,
            server,
            exposed,
        }
    }

    #[test]
    fn items_follow_the_servers_a_client_reaches_unless_named() {
        let lists = clients(json!({
            "app": {"tools": ["fault__echo"]},
            "picky": {"tools": ["fault__*"], "prompts": ["fault__greet"], "resources": []},
            "*": {"tools": [], "resources": ["fault+demo://r/{id}"]}
        }));
        let greet = prompt("fault", "fault__greet");
        assert!(lists.shows("app", None, greet, true));
        assert!(
            !lists.shows("app", None, greet, false),
            "no tool of its server"
        );
        assert!(lists.shows("picky", None, greet, true));
        assert!(!lists.shows("picky", None, prompt("fault", "fault__other"), true));
        let doc = resource("fault", "fault+demo://doc");
        assert!(!lists.shows("picky", None, doc, true), "[] hides them all");
        let made = resource("fault", "fault+demo://r/7");
        assert!(
            lists.shows("stranger", None, made, false),
            "the template's URIs"
        );
        assert!(!lists.shows("stranger", None, doc, false));
        assert!(Clients::default().shows("any", None, doc, true));
        assert!(!Clients::default().shows("any", None, doc, false));
        let strict = clients(json!({"app": {"tools": ["*"], "resources": ["*"]}}));
        assert!(
            !strict.shows("stranger", None, doc, true),
            "no entry, no star"
        );
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
