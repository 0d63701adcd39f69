//! What a client may see and call, from the OAuth token it came with (`serve --http --auth
//! oauth|oidc:ISSUER`): its scope — `tools:all` reaches every tool the overrides expose,
//! `tools:read` only tools annotated `readOnlyHint: true` — and the overrides' per-client
//! allow-lists (`clients`, naming its client id or subject; `catalog::Clients`). Key-authenticated
//! and stdio clients reach everything. The tool list, calls and sparse search/describe follow
//! the same rule: a client never learns of a tool it may not call.

use std::sync::Arc;

use serde_json::Value;

use super::catalog::{Catalog, GatewayTool};
use super::error::GatewayError;
use crate::auth::server::store::Grant;
use crate::auth::server::{allows_all_tools, SCOPE_ALL};
use crate::catalog::ToolNames;

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

    /// The error for `name` when it is not (or not to this client) a tool: unknown, with only
    /// the near names it reaches.
    pub fn unknown(&self, catalog: &Catalog, name: &str) -> GatewayError {
        match super::sparse::unknown(catalog, name) {
            GatewayError::UnknownTool { name, suggestions } => GatewayError::UnknownTool {
                suggestions: suggestions
                    .into_iter()
                    .filter(|s| catalog.get(s).is_some_and(|t| self.allows(catalog, t)))
                    .collect(),
                name,
            },
            // Denied or withheld: told only of a tool the client's list names.
            other if catalog.get(name).is_none_or(|t| self.lists(catalog, t)) => other,
            _ => GatewayError::UnknownTool {
                name: name.to_string(),
                suggestions: Vec::new(),
            },
        }
    }

    /// The scope a tool outside this reach needs.
    pub fn needed() -> &'static str {
        SCOPE_ALL
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
