//! A connected client as the answerer of its servers' requests (sampling, elicitation,
//! roots): asked only for what it declared at `initialize`.

use std::sync::atomic::{AtomicU64, Ordering};

use futures_util::future::BoxFuture;
use rmcp::model::Extensions;
use rmcp::model::ServerRequest;
use rmcp::service::RoleServer;
use rmcp::{Peer, ServiceError};
use serde_json::{json, Value};

use crate::gateway::ClientLink;
use crate::mcp::message::METHOD_NOT_FOUND;
use crate::mcp::RpcError;

/// JSON-RPC "invalid params" and "internal error".
const INVALID_PARAMS: i64 = -32602;
const INTERNAL_ERROR: i64 = -32603;

/// Numbers the requests of clients of the stateless revision: each is a client of its own.
static STANDALONE: AtomicU64 = AtomicU64::new(1);

/// The client behind an rmcp peer, and who it is ([`ClientLink::who`]).
pub struct PeerLink {
    peer: Peer<RoleServer>,
    who: String,
    /// A request of the stateless revision: its client cannot be asked anything mid-call.
    stateless: bool,
}

impl PeerLink {
    /// The client of a request or notification that came with `extensions` (over HTTP, the
    /// request's parts); `stateless` for a request of the stateless revision, which stands
    /// alone whatever session header it carries.
    pub fn new(peer: Peer<RoleServer>, extensions: &Extensions, stateless: bool) -> PeerLink {
        PeerLink {
            peer,
            who: who(extensions, stateless),
            stateless,
        }
    }
}

/// Who sent a request: its HTTP session, the one stdio client, or (a request of the stateless
/// revision, or over HTTP without a session) a client of its own.
fn who(extensions: &Extensions, stateless: bool) -> String {
    let standalone = || format!("request:{}", STANDALONE.fetch_add(1, Ordering::Relaxed));
    if stateless {
        return standalone();
    }
    let Some(parts) = extensions.get::<axum::http::request::Parts>() else {
        return "stdio".into();
    };
    parts
        .headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map_or_else(standalone, |session| format!("session:{session}"))
}

impl ClientLink for PeerLink {
    fn who(&self) -> &str {
        &self.who
    }

    fn ask(
        &self,
        method: String,
        params: Option<Value>,
    ) -> BoxFuture<'static, Result<Value, RpcError>> {
        let peer = self.peer.clone();
        let stateless = self.stateless;
        Box::pin(async move {
            if stateless {
                tracing::info!(
                    method,
                    "refused a server request: a 2026-07-28 client cannot be asked mid-call"
                );
                return Err(rpc(
                    METHOD_NOT_FOUND,
                    format!("{method}: the client cannot be asked during a call"),
                ));
            }
            if !declared(&peer, &method) {
                tracing::info!(
                    method,
                    "refused a server request: the client did not declare the capability"
                );
                return Err(rpc(
                    METHOD_NOT_FOUND,
                    format!("{method}: the client does not offer it"),
                ));
            }
            let request: ServerRequest = serde_json::from_value(
                json!({"method": method, "params": params.unwrap_or_else(|| json!({}))}),
            )
            .map_err(|e| rpc(INVALID_PARAMS, format!("{method}: {e}")))?;
            match peer.send_request(request).await {
                Ok(result) => {
                    serde_json::to_value(result).map_err(|e| rpc(INTERNAL_ERROR, e.to_string()))
                }
                Err(ServiceError::McpError(error)) => Err(RpcError {
                    code: i64::from(error.code.0),
                    message: error.message.to_string(),
                    data: error.data,
                }),
                Err(other) => Err(rpc(INTERNAL_ERROR, format!("{method}: {other}"))),
            }
        })
    }
}

/// Whether the client declared the capability `method` needs.
fn declared(peer: &Peer<RoleServer>, method: &str) -> bool {
    let capability = match method {
        "sampling/createMessage" => "sampling",
        "elicitation/create" => "elicitation",
        "roots/list" => "roots",
        _ => return false,
    };
    let Some(info) = peer.peer_info() else {
        return false;
    };
    serde_json::to_value(&info.capabilities)
        .ok()
        .is_some_and(|caps| caps.get(capability).is_some_and(|c| !c.is_null()))
}

fn rpc(code: i64, message: String) -> RpcError {
    RpcError {
        code,
        message,
        data: None,
    }
}
