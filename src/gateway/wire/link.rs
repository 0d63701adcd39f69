//! A connected client as the answerer of its servers' requests (sampling, elicitation,
//! roots): asked only for what it declared at `initialize`.

use futures_util::future::BoxFuture;
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

/// The client behind an rmcp peer.
pub struct PeerLink(pub Peer<RoleServer>);

impl ClientLink for PeerLink {
    fn ask(
        &self,
        method: String,
        params: Option<Value>,
    ) -> BoxFuture<'static, Result<Value, RpcError>> {
        let peer = self.0.clone();
        Box::pin(async move {
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
