//! What a client's request context says of the call: whose outputs it gets (its scope),
//! which tools it may reach, what a stateless-revision client's server must see, and where its
//! log messages go.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, PoisonError};

use rmcp::model::InputResponses;
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value;

use crate::gateway::Stateless;

/// The client's log messages of a call, sent in the call's context (over HTTP, on its
/// response stream).
pub(super) fn log_sink(context: &RequestContext<RoleServer>) -> crate::gateway::Sink {
    let peer = context.peer.clone();
    Box::new(move |params: Value| {
        let peer = peer.clone();
        Box::pin(async move {
            if let Ok(params) = serde_json::from_value(params) {
                let _ = peer.notify_logging_message(params).await;
            }
        })
    })
}

/// Whose outputs a call's cut result belongs to, from what the client proved: over HTTP a
/// handshake-era request's session (rmcp routes it into its live session or answers 404),
/// else the key it presented; over stdio the one client, as the local user (`mcp-launch
/// output` reads it).
pub(super) fn scope_of(context: &RequestContext<RoleServer>) -> crate::outputs::ClientScope {
    let Some(parts) = context.extensions.get::<axum::http::request::Parts>() else {
        return crate::outputs::ClientScope::local();
    };
    let stateless = context.meta.protocol_version().is_some();
    scope_from(&parts.headers, stateless)
}

/// The tools the client of a request may call: over HTTP with OAuth, its token's scope's.
pub(super) fn reach_of(context: &RequestContext<RoleServer>) -> crate::gateway::Reach {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .map_or(crate::gateway::Reach::ALL, |parts| {
            crate::gateway::Reach::of(&parts.extensions)
        })
}

/// The reach of the client of a notification (its `notifications/initialized`: the session's).
pub(super) fn reach_of_notice(
    context: &rmcp::service::NotificationContext<RoleServer>,
) -> crate::gateway::Reach {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .map_or(crate::gateway::Reach::ALL, |parts| {
            crate::gateway::Reach::of(&parts.extensions)
        })
}

/// The scope of an HTTP request. A stateless-revision request has no session: the
/// `Mcp-Session-Id` it may carry proves nothing (a DELETEd session's handles were read by
/// presenting its id this way), so only a handshake-era request's counts.
pub(super) fn scope_from(
    headers: &axum::http::HeaderMap,
    stateless: bool,
) -> crate::outputs::ClientScope {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let session = header("mcp-session-id").filter(|_| !stateless);
    if let Some(session) = session {
        return session_scope(session);
    }
    let id = header("authorization")
        .map(|key| format!("key:{key}"))
        .unwrap_or_else(|| "http".into());
    crate::outputs::ClientScope::new(&id)
}

/// How many sessions' scopes are kept hashed (emptied when full: sessions end, ids do not
/// come back).
const SCOPES_KEPT: usize = 1024;

/// The scope of the session `session`, hashed once per session: every call of a session has
/// the same, and hashing it per call (SHA-256 and hex) was ~4 % of the gateway's instructions
/// per HTTP `tools/call`. Only session ids are kept (rmcp holds them anyway), never keys.
fn session_scope(session: &str) -> crate::outputs::ClientScope {
    static KNOWN: LazyLock<Mutex<HashMap<String, crate::outputs::ClientScope>>> =
        LazyLock::new(Mutex::default);
    let mut known = KNOWN.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(scope) = known.get(session) {
        return scope.clone();
    }
    if known.len() >= SCOPES_KEPT {
        known.clear();
    }
    let scope = crate::outputs::ClientScope::new(&format!("session:{session}"));
    known.insert(session.to_string(), scope.clone());
    scope
}

/// What the server must see of a request of a stateless-revision client (its `_meta` members
/// of the revision, and a retry's `inputResponses` and `requestState`); `None` for the
/// handshake era.
pub(super) fn stateless_of(
    context: &RequestContext<RoleServer>,
    input_responses: Option<&InputResponses>,
    request_state: Option<&str>,
) -> Option<Stateless> {
    // The handshake era's requests (most) end here.
    context.meta.protocol_version()?;
    let meta = serde_json::to_value(&context.meta).ok()?;
    let mut retry = serde_json::Map::new();
    if let Some(responses) = input_responses {
        retry.insert(
            "inputResponses".into(),
            serde_json::to_value(responses).ok()?,
        );
    }
    if let Some(state) = request_state {
        retry.insert("requestState".into(), Value::String(state.to_string()));
    }
    Stateless::of(meta.as_object()?, &retry)
}

#[cfg(test)]
mod tests {
    use axum::http::{HeaderMap, HeaderValue};

    use super::scope_from;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| (name.parse().unwrap(), HeaderValue::from_static(value)))
            .collect()
    }

    /// Low 15 of issue 24: a stateless request naming a (DELETEd) session read its handles.
    #[test]
    fn a_stateless_request_does_not_get_the_scope_of_the_session_it_names() {
        let named = headers(&[("mcp-session-id", "s-1"), ("authorization", "Bearer k")]);
        let in_session = scope_from(&named, false);
        let stateless = scope_from(&named, true);
        assert_ne!(stateless.hash(), in_session.hash());
        let keyed = scope_from(&headers(&[("authorization", "Bearer k")]), true);
        assert_eq!(stateless.hash(), keyed.hash(), "the key is what it proved");
    }

    /// A session's scope is hashed once and kept: the kept one is the one hashed afresh, and
    /// another session's is its own.
    #[test]
    fn a_sessions_kept_scope_is_the_scope_of_that_session() {
        let fresh = crate::outputs::ClientScope::new("session:s-kept");
        let named = headers(&[("mcp-session-id", "s-kept")]);
        assert_eq!(scope_from(&named, false), fresh);
        assert_eq!(scope_from(&named, false), fresh, "kept");
        let other = scope_from(&headers(&[("mcp-session-id", "s-other")]), false);
        assert_ne!(other, fresh);
    }
}
