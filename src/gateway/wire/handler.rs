//! The gateway's answers to each MCP request, as rmcp's [`ServerHandler`]: tools (lists
//! spliced on the way out, calls kept raw for [`super::Wire`]), resources, prompts,
//! completions, log levels, subscriptions and the list-change notices of both eras.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams,
    CompleteRequestParams, CompleteResult, DiscoverResult, GetPromptRequestParams,
    GetPromptResponse, GetTaskParams, GetTaskResult, Implementation, InitializeRequestParams,
    InitializeResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ServerCapabilities, ServerConfig, SetLevelRequestParams, SubscribeRequestParams,
    SubscriptionFilter, Tool, UnsubscribeRequestParams,
};
use rmcp::service::{
    NotificationContext, RequestContext, RoleServer, SubscriptionContext, SubscriptionSendError,
};
use rmcp::ErrorData;
use serde_json::{json, Value};
use tokio::sync::broadcast;

use crate::gateway::items::{object, Kind};
use crate::gateway::{asks_for_input, Caller, Event, Progress};
use crate::observe::trace::{self, Span};
use crate::serving::typed;

use super::context::{log_sink, reach_of, reach_of_notice, scope_of, stateless_of};
use super::{link, raw, rpc_error, tasks, tool_error, traced, Handler};

/// `answer` to a client's `method`, timed and counted in the metrics (`tools/call` is counted
/// again, by server and tool, where the gateway knows them: `Gateway::call_tool`), within
/// `span`, the request's (`Span::none()` for `tools/call`, whose span names its tool).
///
/// The answer is boxed: over HTTP rmcp takes this handler itself, and its `handle_request`
/// future — one state machine holding every method's future inline, as large as the largest —
/// is moved into each request's task by value (spawn, task cell, stage): copying it was ~20 %
/// of the gateway's instructions per HTTP `tools/call`. Boxed here, each method's part of it
/// is its arguments and a pointer.
fn timed<'a, T: Send + 'a>(
    method: &'static str,
    span: Span,
    answer: impl Future<Output = Result<T, ErrorData>> + Send + 'a,
) -> Pin<Box<dyn Future<Output = Result<T, ErrorData>> + Send + 'a>> {
    Box::pin(async move {
        let started = std::time::Instant::now();
        let result = trace::within(span.clone(), answer).await;
        let outcome = match &result {
            Ok(_) => crate::observe::Outcome::Ok,
            Err(_) => crate::observe::Outcome::Error,
        };
        crate::observe::request_served(method, started.elapsed(), outcome);
        if let Err(error) = &result {
            traced::fail_rpc(&span, error);
        }
        result
    })
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
        // The instructions depend on the client (its reach): `initialize` and `discover` add
        // them.
        let mut info = InitializeResult::new(capabilities);
        info.server_info = Implementation::new("mcp-launch", env!("CARGO_PKG_VERSION"));
        info
    }

    /// The handshake's answer, its instructions telling only of what the client reaches.
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        let span = traced::span(&context, "initialize", None);
        timed("initialize", span, async move {
            context.peer.set_peer_info(request.clone());
            let info = self.negotiate_initialize(&request)?;
            Ok(info.with_instructions(self.gateway.instructions(&reach_of(&context))))
        })
        .await
    }

    /// A handshake-era `ping`: answered at once, counted as any request.
    async fn ping(&self, context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        let span = traced::span(&context, "ping", None);
        timed("ping", span, std::future::ready(Ok(()))).await
    }

    /// A 2026-07-28 client's `server/discover`, its instructions as `initialize`'s.
    async fn discover(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        // No await: nothing of this answer is held across one, so nothing to box.
        let info = self
            .get_info()
            .with_instructions(self.gateway.instructions(&reach_of(&context)));
        let versions = self.supported_protocol_versions().into_owned();
        Ok(DiscoverResult::from_server_info(versions, info))
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
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let span = traced::span(&context, "tools/list", None);
        timed("tools/list", span, async move {
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
        timed("tools/call", Span::none(), async move {
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
            let span = traced::span(&context, "tools/call", Some(&request.name));
            if tasks::holds_tasks(&context) && self.gateway.runs_as_task(&request.name).await {
                let caller = Caller {
                    progress: None,
                    link: None,
                    cancel: context.ct.clone(),
                    scope: scope_of(&context),
                    logs: None,
                    stateless,
                    reach: reach_of(&context),
                    trace: traced::relayed(&context),
                };
                // The task's call is spawned answering this request (`trace::carried`): its
                // upstream call is the span's child.
                // Boxed: held inline, it made this whole answer's future (copied twice per
                // call by `timed`) as large as itself.
                let made = Box::pin(self.call_as_task(&request.name, arguments, caller));
                return trace::within(span, made).await;
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
                trace: traced::relayed(&context),
            };
            // Boxed, as `Wire` boxes the whole answer: over HTTP rmcp takes this handler
            // itself, and moves its future through its wrappers. Boxed before it is wrapped:
            // the wrapper then moves a pointer, not the whole call path.
            let call = Box::pin(self.gateway.call_tool(&request.name, arguments, caller));
            let outcome = trace::within(span.clone(), call).await;
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
        let span = traced::span(&context, "tasks/get", None);
        timed("tasks/get", span, async move {
            self.detailed_task(&request.task_id, &context).await
        })
        .await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let span = traced::span(&context, "tasks/cancel", None);
        timed("tasks/cancel", span, async move {
            self.cancel_own_task(&request.task_id, &context).await
        })
        .await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let span = traced::span(&context, "resources/list", None);
        timed("resources/list", span, async move {
            let reach = reach_of(&context).items(&self.gateway.catalog());
            let items = self.gateway.list_items(Kind::Resources, &reach).await;
            typed(json!({"resources": items}))
        })
        .await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let span = traced::span(&context, "resources/templates/list", None);
        timed("resources/templates/list", span, async move {
            let reach = reach_of(&context).items(&self.gateway.catalog());
            let items = self.gateway.list_items(Kind::Templates, &reach).await;
            typed(json!({"resourceTemplates": items}))
        })
        .await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let span = traced::span(&context, "resources/read", None);
        timed("resources/read", span, async move {
            let stateless = stateless_of(
                &context,
                request.input_responses.as_ref(),
                request.request_state.as_deref(),
            );
            let reach = reach_of(&context).items(&self.gateway.catalog());
            match self
                .gateway
                .read_resource(&request.uri, stateless.as_ref(), &reach)
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
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let span = traced::span(&context, "prompts/list", None);
        timed("prompts/list", span, async move {
            let reach = reach_of(&context).items(&self.gateway.catalog());
            let items = self.gateway.list_items(Kind::Prompts, &reach).await;
            typed(json!({"prompts": items}))
        })
        .await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let span = traced::span(&context, "prompts/get", None);
        timed("prompts/get", span, async move {
            let stateless = stateless_of(
                &context,
                request.input_responses.as_ref(),
                request.request_state.as_deref(),
            );
            let arguments = request
                .arguments
                .map(|a| serde_json::to_value(a).unwrap_or_default());
            let reach = reach_of(&context).items(&self.gateway.catalog());
            let outcome = self
                .gateway
                .get_prompt(&request.name, arguments, stateless.as_ref(), &reach)
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
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let span = traced::span(&context, "completion/complete", None);
        timed("completion/complete", span, async move {
            let params = serde_json::to_value(&request).unwrap_or_default();
            let reach = reach_of(&context).items(&self.gateway.catalog());
            match self.gateway.complete(params, &reach).await {
                Ok(result) => typed(result),
                Err(error) => Err(rpc_error(&error)),
            }
        })
        .await
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let span = traced::span(&context, "logging/setLevel", None);
        timed("logging/setLevel", span, async move {
            let level = serde_json::to_value(request.level).unwrap_or(Value::Null);
            self.gateway.set_log_level(level).await;
            Ok(())
        })
        .await
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let span = traced::span(&context, "resources/subscribe", None);
        timed("resources/subscribe", span, async move {
            let reach = reach_of(&context).items(&self.gateway.catalog());
            let outcome = self
                .gateway
                .subscription("resources/subscribe", &request.uri, &reach)
                .await;
            outcome.map_err(|e| rpc_error(&e))
        })
        .await
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let span = traced::span(&context, "resources/unsubscribe", None);
        timed("resources/unsubscribe", span, async move {
            let reach = reach_of(&context).items(&self.gateway.catalog());
            let outcome = self
                .gateway
                .subscription("resources/unsubscribe", &request.uri, &reach)
                .await;
            outcome.map_err(|e| rpc_error(&e))
        })
        .await
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // A session client (2025 era) hears of list changes on its session.
        let mut events = self.gateway.subscribe();
        let reach = reach_of_notice(&context);
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
                    Ok(Event::ResourceUpdated(params)) if shown(&gateway, &reach, &params) => {
                        match serde_json::from_value(params) {
                            Ok(params) => peer.notify_resource_updated(params).await,
                            Err(_) => continue,
                        }
                    }
                    Ok(Event::ResourceUpdated(_)) => continue,
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
        Box::pin(async move {
            // A 2026-era client hears of list changes on its `subscriptions/listen` stream, and of
            // the resources it named there (subscribed on their servers, as `resources/subscribe`
            // does for a session client).
            let mut changes = self.gateway.subscribe();
            let reach = reach_of(context.request_context()).items(&self.gateway.catalog());
            let watched = self.watch_resources(context.accepted(), &reach);
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
                // A change the client did not ask to hear of is left out; the stream goes on.
                if let Err(
                    SubscriptionSendError::SubscriptionClosed | SubscriptionSendError::Service(_),
                ) = sent
                {
                    return Ok(());
                }
            }
        })
        .await
    }
}

/// Whether a client of `reach` may hear of the resource an update names.
fn shown(gateway: &crate::gateway::Gateway, reach: &crate::gateway::Reach, params: &Value) -> bool {
    let uri = params
        .get("uri")
        .and_then(Value::as_str)
        .unwrap_or_default();
    gateway.shows_resource(&reach.items(&gateway.catalog()), uri)
}
