//! The MCP server side, on rmcp (pinned exactly; this is the only module that names it):
//! both protocol eras (`initialize` with 2024-11-05 … 2025-11-25, and the stateless
//! 2026-07-28 revision), stdio and Streamable HTTP.
//!
//! rmcp's typed `Tool` and `CallToolResult` drop fields they do not know (`execution`, new
//! content kinds, `_meta` members), so tool lists and call results do not pass through them:
//! the handler keeps the raw answer per request id, rmcp's blanket handler does the protocol
//! work (negotiation, per-request metadata) on a typed placeholder, and [`Wire`] sends the
//! placeholder's fields overlaid with the raw answer's. Over HTTP, where rmcp takes the
//! handler itself, the placeholder carries the raw answer and a response layer puts it back
//! (`raw`).
//!
//! Logging and `resources/subscribe` are deprecated in the 2026 revision (SEP-2577) but live
//! in the 2025 era, which clients still speak: they are passed on.
#![allow(deprecated)]

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    ClientRequest, CustomResult, ErrorCode, RequestId, ServerResult, SubscriptionFilter,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, Service, ServiceRole};
use rmcp::ErrorData;
use serde_json::{json, Value};

use super::error::GatewayError;
use super::Gateway;

pub(crate) mod batch;
mod context;
pub(crate) mod guard;
mod handler;
mod http;
mod link;
pub(crate) mod raw;
mod resume;
mod sessions;
mod tasks;
mod tasks25;
mod traced;
pub use http::{readiness, routes as http_routes, serve_http, HttpOptions};
pub use sessions::{SessionLimits, MAX_SESSIONS, MAX_SESSIONS_PER_KEY, SESSION_IDLE};

/// Serves the gateway over stdin/stdout until the client closes stdin (or `stop` fires).
pub async fn serve_stdio(
    gateway: Gateway,
    stop: tokio_util::sync::CancellationToken,
) -> Result<(), std::io::Error> {
    use rmcp::ServiceExt;
    let (stdin, stdout) = crate::serving::fds::streams();
    let stdout = raw::SplicingWriter::new(stdout, gateway.clone());
    let tasks = Arc::new(tasks25::Tasks25(gateway.clone()));
    let (transport, written) = crate::serving::stdio::transport_with(stdin, stdout, tasks);
    crate::serving::stdio::served(Wire::new(gateway).serve_with_ct(transport, stop), written).await
}

/// The handler rmcp drives, and the raw answers it keeps for [`Wire`].
#[derive(Clone)]
pub struct Handler {
    gateway: Gateway,
    /// Whether a [`Wire`] takes the raw answers (else none are kept).
    keep_raw: bool,
    raw: Arc<Mutex<HashMap<RequestId, Value>>>,
}

/// The service: rmcp's protocol handling around [`Handler`], with raw tool lists and results.
pub struct Wire(Handler);

impl Wire {
    /// A service for one client connection (or one stateless request).
    pub fn new(gateway: Gateway) -> Wire {
        Wire(Handler::new(gateway, true))
    }
}

impl Handler {
    /// A handler over `gateway`; with `keep_raw`, for a [`Wire`].
    pub fn new(gateway: Gateway, keep_raw: bool) -> Handler {
        Handler {
            gateway,
            keep_raw,
            raw: Arc::default(),
        }
    }

    fn keep(&self, id: &RequestId, raw: Value) {
        if !self.keep_raw {
            return;
        }
        self.raw
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.clone(), raw);
    }

    fn take(&self, id: &RequestId) -> Option<Value> {
        self.raw
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id)
    }

    /// The resources a `subscriptions/listen` names, whose updates it is to hear: subscribed
    /// on their servers in the background (a server may have to start first, and the stream
    /// must not wait for it; one no server serves, or whose server refuses, is logged).
    fn watch_resources(
        &self,
        filter: &SubscriptionFilter,
        reach: &crate::gateway::reach::ItemReach,
    ) -> HashSet<String> {
        // A resource the client may not see is not watched (nor subscribed): it hears
        // nothing of it.
        let watched: HashSet<String> = (filter.resource_subscriptions.iter())
            .flatten()
            .filter(|uri| self.gateway.shows_resource(reach, uri))
            .cloned()
            .collect();
        for uri in &watched {
            let (gateway, uri) = (self.gateway.clone(), uri.clone());
            let reach = reach.clone();
            self.gateway.spawn(async move {
                if let Err(e) = gateway
                    .subscription("resources/subscribe", &uri, &reach)
                    .await
                {
                    tracing::info!(uri, error = %e, "subscriptions/listen: not subscribed");
                }
            });
        }
        watched
    }
}

impl Service<RoleServer> for Wire {
    async fn handle_request(
        &self,
        request: <RoleServer as ServiceRole>::PeerReq,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        let raw_answer = matches!(request, ClientRequest::CallToolRequest(_));
        let id = context.id.clone();
        // Boxed: the answer's future (every method's, the whole call path to the upstream
        // under it) is large, and rmcp moves the future it gets through several wrappers
        // (span, task-local, task) — each move a copy of all of it, per request.
        let result = Box::pin(Service::handle_request(&self.0, request, context)).await;
        let raw = self.0.take(&id);
        match (raw_answer, result, raw) {
            (true, Ok(typed), Some(raw)) => Ok(ServerResult::CustomResult(CustomResult(overlay(
                &typed, raw,
            )))),
            (_, result, _) => result,
        }
    }

    async fn handle_notification(
        &self,
        notification: <RoleServer as ServiceRole>::PeerNot,
        context: NotificationContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Service::handle_notification(&self.0, notification, context).await
    }

    fn get_info(&self) -> <RoleServer as ServiceRole>::Info {
        ServerHandler::get_info(&self.0)
    }
}

/// The typed result's JSON with every member of `raw` put over it.
fn overlay(typed: &ServerResult, raw: Value) -> Value {
    let mut merged = serde_json::to_value(typed).unwrap_or_else(|_| json!({}));
    match (merged.as_object_mut(), raw) {
        (Some(fields), Value::Object(raw)) => {
            for (key, value) in raw {
                fields.insert(key, value);
            }
            merged
        }
        (_, raw) => raw,
    }
}

/// A gateway error as the client gets it: a JSON-RPC error for protocol errors, else a tool
/// result with `isError: true` whose text says what happened and what to do.
fn tool_error(error: &GatewayError) -> Result<Value, ErrorData> {
    if error.is_protocol_error() {
        return Err(rpc_error(error));
    }
    Ok(error.as_tool_result())
}

fn rpc_error(error: &GatewayError) -> ErrorData {
    rpc_error_of(error.as_rpc())
}

/// A JSON-RPC error object (`code`, `message`, `data`) as rmcp sends it.
fn rpc_error_of(error: Value) -> ErrorData {
    let code = error.get("code").and_then(Value::as_i64).unwrap_or(-32603);
    let message = error.get("message").and_then(Value::as_str).unwrap_or("");
    ErrorData::new(
        ErrorCode(i32::try_from(code).unwrap_or(-32603)),
        message.to_string(),
        error.get("data").cloned(),
    )
}
