//! Clients of the stateless revision (2026-07-28, SEP-2575) reach their servers in it: a stdio
//! server serves one era per process and an HTTP session one per connection, so the pool keeps
//! a second upstream per server for them (`Pool::stateless`: a second process, or over HTTP a
//! stateless connection), and their requests carry the client's own `_meta` (protocol version,
//! capabilities, client info, log level) and, on a retry, its `inputResponses` and
//! `requestState` (SEP-2322), verbatim. An `InputRequiredResult` comes back as the server sent
//! it, and the retry reaches the same server process (the one upstream, while it lives).

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::mcp::message::META_PREFIX;
use crate::pool::Upstream;

use super::error::GatewayError;
use super::Gateway;

/// The retry members of a request a server asked for input on (SEP-2322).
const RETRY_MEMBERS: [&str; 2] = ["inputResponses", "requestState"];

/// What a server must see of a stateless-revision client's request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stateless {
    /// The client's `_meta` members of the revision (`io.modelcontextprotocol/…`).
    meta: Map<String, Value>,
    /// `inputResponses` and `requestState`, when the request is a retry.
    retry: Map<String, Value>,
}

impl Stateless {
    /// The stateless part of a request whose `_meta` is `meta` and whose params are `params`;
    /// `None` for a request of the handshake era (its `_meta` names no protocol version).
    pub fn of(meta: &Map<String, Value>, params: &Map<String, Value>) -> Option<Stateless> {
        if !meta.contains_key(&format!("{META_PREFIX}protocolVersion")) {
            return None;
        }
        let mut reserved: Map<String, Value> = meta
            .iter()
            .filter(|(key, _)| key.starts_with(META_PREFIX))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        // The gateway holds its clients' tasks: their servers are not told a client does.
        let capabilities = reserved.get_mut(&format!("{META_PREFIX}clientCapabilities"));
        if let Some(extensions) = capabilities
            .and_then(|capabilities| capabilities.get_mut("extensions"))
            .and_then(Value::as_object_mut)
        {
            extensions.remove(super::tasks::EXTENSION);
        }
        let retry = RETRY_MEMBERS
            .iter()
            .filter_map(|&key| Some((key.to_string(), params.get(key)?.clone())))
            .collect();
        Some(Stateless {
            meta: reserved,
            retry,
        })
    }

    /// The retry's `requestState`, when the request is a retry.
    pub fn request_state(&self) -> Option<&str> {
        self.retry.get("requestState").and_then(Value::as_str)
    }

    /// The retry's `inputResponses` (answers by the keys of the requests they answer).
    pub fn input_responses(&self) -> Option<&Map<String, Value>> {
        self.retry.get("inputResponses").and_then(Value::as_object)
    }

    /// A member of the client's `_meta` (`io.modelcontextprotocol/…`).
    pub fn meta(&self, key: &str) -> Option<&Value> {
        self.meta.get(key)
    }

    /// `params` (an object) as the server must get them: the retry members and the client's
    /// `_meta` members added (a `progressToken` already there stays).
    pub fn stamp(&self, params: &mut Value) {
        let Some(fields) = params.as_object_mut() else {
            return;
        };
        for (key, value) in &self.retry {
            fields.insert(key.clone(), value.clone());
        }
        let meta = fields
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(meta) = meta.as_object_mut() {
            for (key, value) in &self.meta {
                meta.insert(key.clone(), value.clone());
            }
        }
    }
}

/// Whether a result asks the client for input (SEP-2322) instead of answering.
pub fn asks_for_input(result: &Value) -> bool {
    result.get("resultType").and_then(Value::as_str) == Some("input_required")
}

impl Gateway {
    /// The upstream that serves a request to `legacy`'s server: for a stateless-revision
    /// client (`stateless`) the server's stateless upstream when it speaks the revision (its
    /// first connect tells; a refusal is remembered), else `legacy`.
    pub(crate) async fn era_upstream(
        &self,
        legacy: &Arc<Upstream>,
        stateless: Option<&Stateless>,
    ) -> Result<Arc<Upstream>, GatewayError> {
        let modern = stateless
            .and_then(|_| self.inner.pool.stateless(legacy.name()))
            .filter(|modern| !modern.refused());
        if let Some(modern) = modern {
            match modern.session().await {
                Ok(_) => return Ok(Arc::clone(modern)),
                Err(_) if modern.refused() => {}
                Err(error) => return Err(GatewayError::from_pool(error)),
            }
        }
        Ok(Arc::clone(legacy))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().cloned().expect("an object")
    }

    #[test]
    fn a_handshake_era_request_is_not_stateless() {
        let meta = object(json!({"progressToken": 1}));
        assert_eq!(Stateless::of(&meta, &Map::new()), None);
    }

    #[test]
    fn a_retry_reaches_the_server_with_the_clients_meta_and_its_state_verbatim() {
        let meta = object(json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
            "progressToken": "theirs",
            "vendor/x": 1,
        }));
        let params = object(json!({"name": "t", "arguments": {},
            "inputResponses": {"q": {"action": "accept", "content": {"name": "A"}}},
            "requestState": "sealed.bytes=="}));
        let call = Stateless::of(&meta, &params).expect("stateless");
        let mut sent = json!({"name": "server_t", "arguments": {"a": 1},
            "_meta": {"progressToken": "mcpl-1"}});
        call.stamp(&mut sent);
        assert_eq!(
            sent,
            json!({"name": "server_t", "arguments": {"a": 1},
                "inputResponses": {"q": {"action": "accept", "content": {"name": "A"}}},
                "requestState": "sealed.bytes==",
                "_meta": {"progressToken": "mcpl-1",
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}})
        );
    }

    #[test]
    fn a_server_is_not_told_the_client_holds_tasks() {
        let meta = object(json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "extensions": {
                "io.modelcontextprotocol/tasks": {}, "vendor/other": {}}},
        }));
        let call = Stateless::of(&meta, &Map::new()).expect("stateless");
        assert_eq!(
            call.meta("io.modelcontextprotocol/clientCapabilities"),
            Some(&json!({"elicitation": {}, "extensions": {"vendor/other": {}}}))
        );
    }

    #[test]
    fn a_first_request_carries_no_retry_members() {
        let meta = object(json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"}));
        let call = Stateless::of(&meta, &Map::new()).expect("stateless");
        let mut sent = json!({"name": "p"});
        call.stamp(&mut sent);
        assert_eq!(
            sent,
            json!({"name": "p", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}})
        );
        assert!(asks_for_input(
            &json!({"resultType": "input_required", "inputRequests": {}})
        ));
        assert!(!asks_for_input(&json!({"content": []})));
    }
}
