//! What a client may see and call, from the OAuth token it came with (`serve --http --auth
//! oauth|oidc:ISSUER`): its scope — `tools:all` reaches every tool the overrides expose,
//! `tools:read` only tools annotated `readOnlyHint: true` — and the overrides' per-client
//! allow-lists (`clients`, naming its client id or subject; `catalog::Clients`). Key-authenticated
//! and stdio clients reach everything. The tool list, calls and sparse search/describe follow
//! the same rule: a client never learns of a tool it may not call — nor of a server it reaches
//! no tool of: the sparse meta-tools' descriptions, the `instructions`, `discover` and the
//! "did you mean" of errors speak only of [`Reach::servers`] and the tools it allows.
//!
//! Resources, templates and prompts follow ([`Reach::items`]): a client sees (and reads, gets,
//! subscribes to, completes) those of the servers it reaches a tool of, unless its allow-list
//! names them (`resources`, `prompts`: then those alone); one it may not see is answered as
//! unknown.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value;

use super::catalog::{Catalog, GatewayTool, ServerSummary};
use super::error::GatewayError;
use crate::auth::server::store::Grant;
use crate::auth::server::{allows_all_tools, SCOPE_ALL};
use crate::catalog::{ItemNames, ToolNames};

/// The tools a client reaches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reach {
    /// Only tools annotated `readOnlyHint: true` (the token lacks `tools:all`).
    read_only: bool,
    /// Who holds the token — client id and subject — when it came with one: the overrides'
    /// allow-lists may narrow what it reaches.
    holder: Option<Arc<(String, Option<String>)>>,
}

impl Reach {
    /// Every exposed tool (a key, stdio, the command line).
    pub const ALL: Reach = Reach {
        read_only: false,
        holder: None,
    };

    /// The reach of a request that passed the OAuth check (its [`Grant`] in `extensions`);
    /// everything for any other.
    pub fn of(extensions: &axum::http::Extensions) -> Reach {
        match extensions.get::<Grant>() {
            Some(grant) => Reach {
                read_only: !allows_all_tools(&grant.scope),
                holder: Some(Arc::new((grant.client_id.clone(), grant.subject.clone()))),
            },
            None => Reach::ALL,
        }
    }

    /// Whether this reach is every tool of `catalog` (no scope or list narrows it).
    pub fn is_everything(&self, catalog: &Catalog) -> bool {
        !self.read_only && (self.holder.is_none() || catalog.clients().is_empty())
    }

    /// Whether the client may call `tool`: its allow-list lists it and its scope covers it.
    pub fn allows(&self, catalog: &Catalog, tool: &GatewayTool) -> bool {
        self.lists(catalog, tool) && (!self.read_only || is_read_only(&tool.definition))
    }

    /// Whether the client's allow-list (if any) names `tool`.
    pub fn lists(&self, catalog: &Catalog, tool: &GatewayTool) -> bool {
        let Some(holder) = &self.holder else {
            return true;
        };
        let names = ToolNames {
            server: &tool.server,
            tool: &tool.tool,
            exposed: &tool.name,
        };
        catalog
            .clients()
            .allows(&holder.0, holder.1.as_deref(), names)
    }

    /// The servers this client reaches a tool of, each told with only those tools (count,
    /// summary, changed ones): the catalog's own list when it reaches everything.
    pub fn servers<'c>(&self, catalog: &'c Catalog) -> Cow<'c, [ServerSummary]> {
        if self.is_everything(catalog) {
            return Cow::Borrowed(catalog.servers());
        }
        let seen = catalog.servers().iter().filter_map(|server| {
            let reached: Vec<&GatewayTool> = (catalog.tools().iter())
                .filter(|t| t.server == server.name && self.allows(catalog, t))
                .collect();
            (!reached.is_empty()).then(|| narrowed(server, &reached))
        });
        Cow::Owned(seen.collect())
    }

    /// The error for `name` when it is not (or not to this client) a tool: unknown, with only
    /// the near names it reaches.
    pub fn unknown(&self, catalog: &Catalog, name: &str) -> GatewayError {
        match super::sparse::unknown(catalog, name) {
            GatewayError::UnknownTool { name, .. } if !self.is_everything(catalog) => {
                let reached = (catalog.tools().iter())
                    .filter(|t| self.allows(catalog, t))
                    .map(|t| t.name.as_str());
                GatewayError::UnknownTool {
                    suggestions: crate::catalog::similar_names(&name, reached, 3),
                    name,
                }
            }
            // Denied or withheld: told only of a tool the client's list names.
            other if catalog.get(name).is_none_or(|t| self.lists(catalog, t)) => other,
            _ => GatewayError::UnknownTool {
                name: name.to_string(),
                suggestions: Vec::new(),
            },
        }
    }

    /// What this client sees of the servers' resources, templates and prompts.
    pub fn items(&self, catalog: &Arc<Catalog>) -> ItemReach {
        let reached = (!self.is_everything(catalog)).then(|| {
            let servers = self.servers(catalog);
            servers.iter().map(|s| s.name.clone()).collect()
        });
        ItemReach {
            holder: self.holder.clone(),
            catalog: Arc::clone(catalog),
            reached,
        }
    }

    /// The scope a tool outside this reach needs.
    pub fn needed() -> &'static str {
        SCOPE_ALL
    }
}

/// The resources, templates and prompts a client sees ([`Reach::items`]).
#[derive(Clone)]
pub struct ItemReach {
    holder: Option<Arc<(String, Option<String>)>>,
    catalog: Arc<Catalog>,
    /// The servers the client reaches a tool of; `None` when it reaches everything.
    reached: Option<HashSet<String>>,
}

impl ItemReach {
    /// Whether the client sees `item` (and may read, get or subscribe to it).
    pub fn shows(&self, item: ItemNames<'_>) -> bool {
        let Some(reached) = &self.reached else {
            return true;
        };
        let reaches_server = reached.contains(item.server);
        match &self.holder {
            Some(holder) => {
                (self.catalog.clients()).shows(&holder.0, holder.1.as_deref(), item, reaches_server)
            }
            None => reaches_server,
        }
    }
}

/// `server` as a client reaching only `reached` of its tools sees it.
fn narrowed(server: &ServerSummary, reached: &[&GatewayTool]) -> ServerSummary {
    let names: Vec<&str> = reached.iter().take(4).map(|t| t.tool.as_str()).collect();
    let more = if reached.len() > names.len() {
        ", …"
    } else {
        ""
    };
    ServerSummary {
        tools: reached.len(),
        summary: format!("{}{more}", names.join(", ")),
        changed: (server.changed.iter())
            .filter(|name| reached.iter().any(|t| &t.tool == *name))
            .cloned()
            .collect(),
        ..server.clone()
    }
}

/// Whether a tool's definition is annotated `readOnlyHint: true`.
fn is_read_only(definition: &Value) -> bool {
    definition.pointer("/annotations/readOnlyHint") == Some(&Value::Bool(true))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn grant(scope: &str) -> axum::http::Extensions {
        let mut extensions = axum::http::Extensions::new();
        extensions.insert(Grant {
            client_id: "c".into(),
            subject: None,
            scope: scope.into(),
            resource: "r".into(),
            expires_at: 0,
            family: "f".into(),
        });
        extensions
    }

    #[test]
    fn read_scope_reaches_read_only_tools() {
        let reach = Reach::of(&grant("tools:read"));
        assert!(reach.read_only);
        assert!(is_read_only(
            &json!({"annotations": {"readOnlyHint": true}})
        ));
        assert!(!is_read_only(
            &json!({"annotations": {"readOnlyHint": false}})
        ));
        assert!(!is_read_only(&json!({"name": "plain"})));
    }

    #[test]
    fn all_scope_keys_and_stdio_reach_everything() {
        assert!(!Reach::of(&grant("tools:read tools:all")).read_only);
        assert_eq!(Reach::of(&axum::http::Extensions::new()), Reach::ALL);
    }
}
