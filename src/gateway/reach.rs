//! What a client may see and call, from the scope its OAuth token was granted
//! (`serve --http --auth oauth`): `tools:all` reaches every tool the overrides expose,
//! `tools:read` only tools annotated `readOnlyHint: true`. Key-authenticated and stdio clients
//! reach everything. The tool list, calls and sparse search follow the same rule: a client
//! never learns of a tool it may not call.

use serde_json::Value;

use crate::auth::server::store::Grant;
use crate::auth::server::{allows_all_tools, SCOPE_ALL};

/// The tools a client reaches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Reach {
    /// Every exposed tool.
    #[default]
    All,
    /// Tools annotated `readOnlyHint: true` (and the gateway's own meta-tools).
    ReadOnly,
}

impl Reach {
    /// The reach of a request that passed the OAuth check (its [`Grant`] in `extensions`);
    /// everything for any other.
    pub fn of(extensions: &axum::http::Extensions) -> Reach {
        match extensions.get::<Grant>() {
            Some(grant) if !allows_all_tools(&grant.scope) => Reach::ReadOnly,
            _ => Reach::All,
        }
    }

    /// Whether a tool with this definition is reached.
    pub fn allows(self, definition: &Value) -> bool {
        match self {
            Reach::All => true,
            Reach::ReadOnly => {
                definition.pointer("/annotations/readOnlyHint") == Some(&Value::Bool(true))
            }
        }
    }

    /// The scope a tool outside this reach needs.
    pub fn needed() -> &'static str {
        SCOPE_ALL
    }
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
        assert_eq!(reach, Reach::ReadOnly);
        assert!(reach.allows(&json!({"annotations": {"readOnlyHint": true}})));
        assert!(!reach.allows(&json!({"annotations": {"readOnlyHint": false}})));
        assert!(!reach.allows(&json!({"name": "plain"})));
    }

    #[test]
    fn all_scope_keys_and_stdio_reach_everything() {
        assert_eq!(Reach::of(&grant("tools:read tools:all")), Reach::All);
        assert_eq!(Reach::of(&axum::http::Extensions::new()), Reach::All);
        assert!(Reach::All.allows(&json!({"name": "plain"})));
    }
}
