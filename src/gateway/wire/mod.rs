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
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientRequest,
    CompleteRequestParams, CompleteResult, CustomResult, ErrorCode, GetPromptRequestParams,
    GetPromptResponse, GetTaskParams, GetTaskResult, Implementation, InitializeResult,
    InputResponses, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    RequestId, ServerCapabilities, ServerConfig, ServerResult, SetLevelRequestParams,
    SubscribeRequestParams, SubscriptionFilter, Tool, UnsubscribeRequestParams,
};
use rmcp::service::{
    NotificationContext, RequestContext, RoleServer, Service, ServiceRole, SubscriptionContext,
};
use rmcp::ErrorData;
use serde_json::{json, Value};
use tokio::sync::broadcast;
use tracing::Instrument;

use crate::serving::typed;

use super::error::GatewayError;
use super::items::{object, Kind};
use super::{asks_for_input, Caller, Event, Gateway, Progress, Stateless};

pub(crate) mod batch;
pub(crate) mod guard;
mod http;
mod link;
pub(crate) mod raw;
mod sessions;
mod stdio;
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
    let (stdin, stdout) = stdio::streams();
    let stdout = raw::SplicingWriter::new(stdout, gateway.clone());
    let tasks = Arc::new(tasks25::Tasks25(gateway.clone()));
    let transport = crate::serving::stdio::transport_with(stdin, stdout, tasks);
    let running = Wire::new(gateway)
        .serve_with_ct(transport, stop)
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    running.waiting().await.map_err(std::io::Error::other)?;
    Ok(())
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
    fn watch_resources(&self, filter: &SubscriptionFilter) -> HashSet<String> {
        let watched: HashSet<String> = filter
            .resource_subscriptions
            .iter()
            .flatten()
            .cloned()
            .collect();
        for uri in &watched {
            let (gateway, uri) = (self.gateway.clone(), uri.clone());
            self.gateway.spawn(async move {
                if let Err(e) = gateway.subscription("resources/subscribe", &uri).await {
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
        let result = Service::handle_request(&self.0, request, context).await;
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

/// `answer` to a client's `method`, timed and counted in the metrics (`tools/call` is counted
/// again, by server and tool, where the gateway knows them: `Gateway::call_tool`).
async fn timed<T>(
    method: &str,
    answer: impl std::future::Future<Output = Result<T, ErrorData>>,
) -> Result<T, ErrorData> {
    let started = std::time::Instant::now();
    let result = answer.await;
    let outcome = match &result {
        Ok(_) => crate::observe::Outcome::Ok,
        Err(_) => crate::observe::Outcome::Error,
    };
    crate::observe::request_served(method, started.elapsed(), outcome);
    result
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

/// The client's log messages of a call, sent in the call's context (over HTTP, on its
/// response stream).
fn log_sink(context: &RequestContext<RoleServer>) -> crate::gateway::Sink {
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
fn scope_of(context: &RequestContext<RoleServer>) -> crate::outputs::ClientScope {
    let Some(parts) = context.extensions.get::<axum::http::request::Parts>() else {
        return crate::outputs::ClientScope::local();
    };
    let stateless = context.meta.protocol_version().is_some();
    scope_from(&parts.headers, stateless)
}

/// The tools the client of a request may call: over HTTP with OAuth, its token's scope's.
fn reach_of(context: &RequestContext<RoleServer>) -> crate::gateway::Reach {
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
fn scope_from(headers: &axum::http::HeaderMap, stateless: bool) -> crate::outputs::ClientScope {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let session = header("mcp-session-id").filter(|_| !stateless);
    let id = session
        .map(|session| format!("session:{session}"))
        .or_else(|| header("authorization").map(|key| format!("key:{key}")))
        .unwrap_or_else(|| "http".into());
    crate::outputs::ClientScope::new(&id)
}

/// What the server must see of a request of a stateless-revision client (its `_meta` members
/// of the revision, and a retry's `inputResponses` and `requestState`); `None` for the
/// handshake era.
fn stateless_of(
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

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        let capabilities: ServerCapabilities = serde_json::from_value(json!({
            "tools": {"listChanged": true},
            "resources": {"listChanged": true, "subscribe": true},
            "prompts": {"listChanged": true},
            "completions": {},
            "logging": {},
            "extensions": {tasks::EXTENSION: {}},
            "experimental": {raw::TASKS: {}},
        }))
        .unwrap_or_default();
        let mut info =
            InitializeResult::new(capabilities).with_instructions(self.gateway.instructions());
        info.server_info = Implementation::new("mcp-launch", env!("CARGO_PKG_VERSION"));
        info
    }

    /// The advertised tool `name` when it binds arguments to headers: rmcp's HTTP service then
    /// checks a 2026-07-28 request's `Mcp-Param-*` headers against the arguments (Base64
    /// form included) and answers a mismatch with -32020 (SEP-2243).
    fn get_tool(&self, name: &str) -> Option<Tool> {
        let schema = self.gateway.header_schema(name)?;
        Some(Tool::new(name.to_string(), "", Arc::new(schema)))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        timed("tools/list", async move {
            // The tools are spliced in on the way out (`raw`): no copy of the catalog per request.
            self.gateway.prepare_list().await;
            typed(raw::list_placeholder())
        })
        .await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        timed("tools/call", async move {
            let progress = context.meta.get_progress_token().map(|token| {
                let peer = context.peer.clone();
                Progress {
                    token: serde_json::to_value(&token).unwrap_or(Value::Null),
                    send: Box::new(move |params: Value| {
                        let peer = peer.clone();
                        Box::pin(async move {
                            if let Ok(params) = serde_json::from_value(params) {
                                let _ = peer.notify_progress(params).await;
                            }
                        })
                    }),
                }
            });
            let stateless = stateless_of(
                &context,
                request.input_responses.as_ref(),
                request.request_state.as_deref(),
            );
            let arguments = object(request.arguments);
            if tasks::holds_tasks(&context) && self.gateway.runs_as_task(&request.name).await {
                let caller = Caller {
                    progress: None,
                    link: None,
                    cancel: context.ct.clone(),
                    scope: scope_of(&context),
                    logs: None,
                    stateless,
                    reach: reach_of(&context),
                };
                return self.call_as_task(&request.name, arguments, caller);
            }
            let link = link::PeerLink::new(
                context.peer.clone(),
                &context.extensions,
                stateless.is_some(),
            );
            let caller = Caller {
                progress,
                link: Some(Arc::new(link)),
                cancel: context.ct.clone(),
                scope: scope_of(&context),
                logs: Some(log_sink(&context)),
                stateless,
                reach: reach_of(&context),
            };
            let span = traced::span(&context, "tools/call", Some(&request.name));
            let outcome = self
                .gateway
                .call_tool(&request.name, arguments, caller)
                .instrument(span.clone())
                .await;
            traced::record(&span, &outcome);
            let raw = match outcome {
                Ok(raw) => raw,
                Err(error) => tool_error(&error)?,
            };
            if asks_for_input(&raw) {
                return typed(raw::carry_input_required(raw)).map(CallToolResponse::InputRequired);
            }
            if !self.keep_raw {
                return typed(raw::carry_result(raw)).map(CallToolResponse::Complete);
            }
            self.keep(&context.id, raw);
            Ok(CallToolResponse::Complete(CallToolResult::success(
                Vec::new(),
            )))
        })
        .await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        timed("tasks/get", async move {
            self.detailed_task(&request.task_id, &context)
        })
        .await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        timed("tasks/cancel", async move {
            self.cancel_own_task(&request.task_id, &context)
        })
        .await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        timed("resources/list", async move {
            let items = self.gateway.list_items(Kind::Resources).await;
            typed(json!({"resources": items}))
        })
        .await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        timed("resources/templates/list", async move {
            let items = self.gateway.list_items(Kind::Templates).await;
            typed(json!({"resourceTemplates": items}))
        })
        .await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        timed("resources/read", async move {
            let stateless = stateless_of(
                &context,
                request.input_responses.as_ref(),
                request.request_state.as_deref(),
            );
            match self
                .gateway
                .read_resource(&request.uri, stateless.as_ref())
                .await
            {
                Ok(result) if asks_for_input(&result) => typed(raw::carry_input_required(result))
                    .map(ReadResourceResponse::InputRequired),
                Ok(result) => typed(result).map(ReadResourceResponse::Complete),
                Err(error) => Err(rpc_error(&error)),
            }
        })
        .await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        timed("prompts/list", async move {
            let items = self.gateway.list_items(Kind::Prompts).await;
            typed(json!({"prompts": items}))
        })
        .await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        timed("prompts/get", async move {
            let stateless = stateless_of(
                &context,
                request.input_responses.as_ref(),
                request.request_state.as_deref(),
            );
            let arguments = request
                .arguments
                .map(|a| serde_json::to_value(a).unwrap_or_default());
            let outcome = self
                .gateway
                .get_prompt(&request.name, arguments, stateless.as_ref())
                .await;
            match outcome {
                Ok(result) if asks_for_input(&result) => {
                    typed(raw::carry_input_required(result)).map(GetPromptResponse::InputRequired)
                }
                Ok(result) => typed(result).map(GetPromptResponse::Complete),
                Err(error) => Err(rpc_error(&error)),
            }
        })
        .await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        timed("completion/complete", async move {
            let params = serde_json::to_value(&request).unwrap_or_default();
            match self.gateway.complete(params).await {
                Ok(result) => typed(result),
                Err(error) => Err(rpc_error(&error)),
            }
        })
        .await
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let level = serde_json::to_value(request.level).unwrap_or(Value::Null);
        self.gateway.set_log_level(level).await;
        Ok(())
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let outcome = self
            .gateway
            .subscription("resources/subscribe", &request.uri)
            .await;
        outcome.map_err(|e| rpc_error(&e))
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let outcome = self
            .gateway
            .subscription("resources/unsubscribe", &request.uri)
            .await;
        outcome.map_err(|e| rpc_error(&e))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // A session client (2025 era) hears of list changes on its session.
        let mut events = self.gateway.subscribe();
        let peer = context.peer;
        let gateway = self.gateway.clone();
        self.gateway.spawn(async move {
            loop {
                let event = tokio::select! {
                    event = events.recv() => event,
                    () = gateway.stopping() => return,
                };
                let sent = match event {
                    Ok(Event::Tools) => peer.notify_tool_list_changed().await,
                    Ok(Event::Resources) => peer.notify_resource_list_changed().await,
                    Ok(Event::Prompts) => peer.notify_prompt_list_changed().await,
                    Ok(Event::Log(params)) => match serde_json::from_value(params) {
                        Ok(params) => peer.notify_logging_message(params).await,
                        Err(_) => continue,
                    },
                    Ok(Event::ResourceUpdated(params)) => match serde_json::from_value(params) {
                        Ok(params) => peer.notify_resource_updated(params).await,
                        Err(_) => continue,
                    },
                    Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => return,
                };
                if sent.is_err() {
                    return;
                }
            }
        });
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        // A 2026-era client hears of list changes on its `subscriptions/listen` stream, and of
        // the resources it named there (subscribed on their servers, as `resources/subscribe`
        // does for a session client).
        let mut changes = self.gateway.subscribe();
        let watched = self.watch_resources(context.accepted());
        loop {
            let change = tokio::select! {
                change = changes.recv() => change,
                () = context.cancelled() => return Ok(()),
            };
            let sink = context.sink();
            let sent = match change {
                Ok(Event::Tools) => sink.notify_tool_list_changed().await,
                Ok(Event::Resources) => sink.notify_resource_list_changed().await,
                Ok(Event::Prompts) => sink.notify_prompt_list_changed().await,
                Ok(Event::ResourceUpdated(params)) => {
                    match params.get("uri").and_then(Value::as_str) {
                        Some(uri) if watched.contains(uri) => {
                            sink.notify_resource_updated(uri).await
                        }
                        _ => continue,
                    }
                }
                // Log messages reach a 2026-era client on its request's stream only.
                Ok(Event::Log(_)) => continue,
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return Ok(()),
            };
            if sent.is_err() {
                return Ok(());
            }
        }
    }
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
}
