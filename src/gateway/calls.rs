//! Calls: a client's `tools/call` routed to the server that has the tool (or answered by a
//! meta-tool or `read_output`), forwarded over the pool's shared session with the caller's
//! progress, cancellation and server-to-client requests relayed, the answer kept within its
//! output budget.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::catalog::Catalog;
use super::error::GatewayError;
use super::{era, sparse, ClientLink, Gateway, Stateless};
use crate::outputs::{Served, Structured};

/// Counts a client's call in the metrics: the tool named only when the catalog knows it (a
/// served tool, a meta-tool or `read_output`), so a client cannot grow the label set.
fn count_call(served: &Served, name: &str, routed: &Result<Value, GatewayError>) {
    use crate::observe::Outcome;
    let outcome = match routed {
        Ok(result) if result.get("isError") == Some(&Value::Bool(true)) => Outcome::ToolError,
        Ok(_) => Outcome::Ok,
        Err(_) => Outcome::Error,
    };
    let is_ours =
        sparse::is_meta(name) || name == sparse::CALL || name == crate::outputs::READ_OUTPUT;
    let tool = (served.server != "mcp-launch" || is_ours).then_some(served.tool.as_str());
    crate::observe::call_served(&served.server, tool, outcome);
}

impl Gateway {
    /// A `tools/call`: `read_output`, a meta-tool in sparse mode, else the exposed tool on its
    /// server; the answer within the output budget (a cut result keeps the rest behind a handle
    /// for this caller). `progress` (the client's token and where to send) relays the server's
    /// progress.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
        caller: Caller,
    ) -> Result<Value, GatewayError> {
        let scope = caller.scope.clone();
        let outputs = &self.inner.outputs;
        let is_read = name == crate::outputs::READ_OUTPUT && self.catalog().get(name).is_none();
        if is_read && outputs.tool().is_some() {
            return Ok(outputs.read(arguments, scope).await.unwrap_or_default());
        }
        let started = std::time::Instant::now();
        let served = self.served_by(name, &arguments);
        let routed = self.route(name, arguments, caller).await;
        count_call(&served, name, &routed);
        let mut result = routed.map_err(|e| e.naming_login(&self.inner.options.login))?;
        if served.server != "mcp-launch" {
            self.link_result(&served.server, &mut result);
        }
        if era::asks_for_input(&result) {
            // Not an answer yet: the client's retry must find it as the server sent it.
            return Ok(result);
        }
        Ok(outputs
            .apply(served, result, scope, started.elapsed())
            .await)
    }

    /// The server and tool a call reaches (the gateway itself for its meta-tools), for the
    /// usage record, the output budget the project set for it and how its
    /// `structuredContent` may be cut.
    pub(super) fn served_by(&self, name: &str, arguments: &Value) -> Served {
        let catalog = self.catalog();
        let target = match (self.is_sparse(), name == sparse::CALL) {
            (true, true) => arguments.get("name").and_then(Value::as_str).unwrap_or(""),
            _ => name,
        };
        let budget = catalog.budget_of(target).map(crate::outputs::Budget::new);
        match catalog.get(target) {
            Some(found) => Served {
                server: found.server.clone(),
                tool: found.tool.clone(),
                budget,
                structured: found.structured.clone(),
            },
            None => Served {
                server: "mcp-launch".into(),
                tool: name.to_string(),
                budget: None,
                structured: Structured::Cut,
            },
        }
    }

    pub(super) async fn route(
        &self,
        name: &str,
        arguments: Value,
        caller: Caller,
    ) -> Result<Value, GatewayError> {
        let pinned = self.inner.options.pins.iter().any(|p| p == name);
        if self.is_sparse() && !pinned {
            if name == sparse::CALL {
                let target = arguments.get("name").and_then(Value::as_str).unwrap_or("");
                let inner_args = arguments
                    .get("arguments")
                    .cloned()
                    .unwrap_or_else(|| json!({}));
                let wait = self.inner.options.call_timeout;
                let catalog = self
                    .catalog_knowing(|c| c.get(target).is_some(), wait)
                    .await;
                sparse::check_call(&catalog, &arguments, &inner_args, &caller.reach)?;
                within_reach(&catalog, &caller.reach, target)?;
                return self.forward(target, inner_args, caller, None).await;
            }
            if sparse::is_meta(name) {
                let catalog = self.catalog_embedded().await;
                let model = self.inner.model.get().map(Arc::as_ref);
                let answer = sparse::run(&catalog, model, name, &arguments, &caller.reach);
                self.release_model_later();
                return answer;
            }
            return Err(caller.reach.unknown(&self.catalog(), name));
        }
        within_reach(&self.catalog(), &caller.reach, name)?;
        self.forward(name, arguments, caller, None).await
    }

    /// A call by the server's (qualified) name and the tool's own name, as the command line
    /// names them: refused when the overrides deny it, checked against the input schema, and
    /// bounded by `timeout` (else the gateway's call timeout). Whatever the mode.
    pub async fn call_server_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
        timeout: Option<Duration>,
    ) -> Result<Value, GatewayError> {
        let wait = timeout.unwrap_or(self.inner.options.call_timeout);
        let catalog = self
            .catalog_knowing(|c| c.find(server, tool).is_some(), wait)
            .await;
        let Some(found) = catalog.find(server, tool) else {
            return Err(catalog.refusal(server, tool));
        };
        let name = found.name.clone();
        sparse::validate(&catalog, &name, &arguments)?;
        let caller = Caller {
            progress: None,
            link: None,
            cancel: CancellationToken::new(),
            scope: crate::outputs::ClientScope::local(),
            logs: None,
            stateless: None,
            reach: super::Reach::ALL,
            trace: None,
        };
        self.forward(&name, arguments, caller, timeout).await
    }

    /// The catalog, once it `knows` what a call names — waiting (at most `wait`) while servers
    /// the tool index did not know are still being checked (a first run); else as it is.
    pub(super) async fn catalog_knowing(
        &self,
        knows: impl Fn(&Catalog) -> bool,
        wait: Duration,
    ) -> Arc<Catalog> {
        let catalog = self.catalog();
        if knows(&catalog) || *self.inner.settled.borrow() {
            return catalog;
        }
        let mut settled = self.inner.settled.clone();
        let _ = tokio::time::timeout(wait, settled.wait_for(|done| *done)).await;
        self.catalog()
    }

    /// Calls the tool exposed as `name` on its server.
    pub(super) async fn forward(
        &self,
        name: &str,
        arguments: Value,
        caller: Caller,
        timeout: Option<Duration>,
    ) -> Result<Value, GatewayError> {
        let timeout = timeout.unwrap_or(self.inner.options.call_timeout);
        let catalog = self
            .catalog_knowing(|c| c.get(name).is_some(), timeout)
            .await;
        let found = catalog
            .get(name)
            .ok_or_else(|| caller.reach.unknown(&catalog, name))?;
        let legacy = self.inner.pool.upstream(&found.server)?;
        let upstream = self.era_upstream(legacy, caller.stateless.as_ref()).await?;
        if let Some(stateless) = caller
            .stateless
            .clone()
            .filter(|_| !upstream.is_stateless())
        {
            // A handshake-era server asks for input mid-call: round trips for this client.
            return self
                .forward_asking(name, arguments, caller, &stateless, timeout)
                .await;
        }
        let session = upstream.session().await.map_err(GatewayError::from_pool)?;
        let (_calling, answerer) = match caller.link {
            Some(link) => {
                let callers = &self.inner.callers;
                let stateless = upstream.is_stateless();
                // Only Streamable HTTP says which call a server's request is about.
                let answerer = upstream
                    .is_remote()
                    .then(|| callers.answering(&found.server, stateless, Arc::clone(&link)));
                let calling = callers
                    .enter(&found.server, stateless, link, &session)
                    .await;
                (Some(calling), answerer)
            }
            None => (None, None),
        };
        let mut params = json!({"name": found.tool, "arguments": arguments});
        let done = CancellationToken::new();
        let progress = caller.progress.map(|progress| {
            let ours = format!(
                "mcpl-{}",
                self.inner.next_token.fetch_add(1, Ordering::Relaxed)
            );
            params["_meta"] = json!({"progressToken": ours});
            (progress, ours)
        });
        if let Some(call) = caller
            .stateless
            .as_ref()
            .filter(|_| upstream.is_stateless())
        {
            call.stamp(&mut params);
        }
        if let Some(trace) = &caller.trace {
            let meta = params["_meta"].as_object_mut();
            match meta {
                Some(meta) => trace.write_into(meta),
                None => {
                    let mut meta = serde_json::Map::new();
                    trace.write_into(&mut meta);
                    params["_meta"] = Value::Object(meta);
                }
            }
        }
        // Subscribed before the request is sent, so nothing the server says about it is missed.
        let relay = (progress.is_some() || caller.logs.is_some()).then(|| {
            let relay = Relay {
                progress,
                logs: caller.logs,
            };
            relay.run(session.notifications(), done.clone())
        });
        let call = async {
            let outcome = if found.task {
                upstream
                    .call_task_on(&session, params, timeout, &caller.cancel)
                    .await
            } else {
                let cancel = &caller.cancel;
                upstream
                    .request_cancellable(&session, "tools/call", params, timeout, cancel, answerer)
                    .await
            };
            // What the server sent before its answer reaches the client before the answer.
            done.cancel();
            outcome
        };
        // The relay runs beside the call in this task (no task of its own per call).
        let outcome = match relay {
            Some(relay) => tokio::join!(call, relay).0,
            None => call.await,
        };
        outcome.map_err(GatewayError::from_pool)
    }
}

/// Refuses a call to the catalog's tool `name` when `reach` does not allow it: a tool outside
/// the client's allow-list is unknown to it (a client never learns of it), one its token's
/// scope does not cover needs that scope; unknown names are left to the forward's own refusal.
fn within_reach(catalog: &Catalog, reach: &super::Reach, name: &str) -> Result<(), GatewayError> {
    let Some(found) = catalog.get(name) else {
        return Ok(());
    };
    if !reach.lists(catalog, found) {
        return Err(reach.unknown(catalog, name));
    }
    match reach.allows(catalog, found) {
        true => Ok(()),
        false => Err(GatewayError::OutOfScope {
            name: name.to_string(),
            needs: super::Reach::needed(),
        }),
    }
}

/// Who makes a call: where its progress goes, who answers its server's requests, and the
/// token the client cancels it with.
pub struct Caller {
    /// The client's progress token and sink, when it asked for progress.
    pub progress: Option<Progress>,
    /// The client, for the server's own requests.
    pub link: Option<Arc<dyn ClientLink>>,
    /// Cancelled when the client cancels the call (or goes away).
    pub cancel: CancellationToken,
    /// Whose outputs a cut result's handle belongs to (and who may read them).
    pub scope: crate::outputs::ClientScope,
    /// Where the server's log messages during the call go (else to every client).
    pub logs: Option<Sink>,
    /// A client of the stateless revision: what its server must see of the call.
    pub stateless: Option<Stateless>,
    /// The tools the client may call (its OAuth token's scope).
    pub reach: super::Reach,
    /// The client's trace context, passed on as it came while traces are off.
    pub trace: Option<crate::observe::trace::Relayed>,
}

/// Sends one notification's params to a client.
pub type Sink = Box<dyn Fn(Value) -> futures_util::future::BoxFuture<'static, ()> + Send + Sync>;

/// Where a call's progress goes: the client's token and a sink for
/// `notifications/progress` params.
pub struct Progress {
    /// The client's `progressToken`.
    pub token: Value,
    /// Sends one progress notification's params to the client.
    pub send: Sink,
}

/// What a call passes on to its client, in order, as its server sends it: progress (under the
/// client's token, for our token `ours`) and log messages — part of answering the call, so
/// they travel with it (on its response stream over HTTP) and reach the client before the
/// answer.
struct Relay {
    progress: Option<(Progress, String)>,
    logs: Option<Sink>,
}

impl Relay {
    /// Passes notices on until `done`, then what is already received.
    pub(super) async fn run(
        self,
        mut notices: broadcast::Receiver<crate::mcp::Notice>,
        done: CancellationToken,
    ) {
        loop {
            let received = tokio::select! {
                biased;
                notice = notices.recv() => notice,
                () = done.cancelled() => break,
            };
            match received {
                Ok(notice) => self.pass_on(notice).await,
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
        while let Ok(notice) = notices.try_recv() {
            self.pass_on(notice).await;
        }
    }

    pub(super) async fn pass_on(&self, notice: crate::mcp::Notice) {
        let Some(mut params) = notice.params else {
            return;
        };
        match (notice.method.as_str(), &self.progress, &self.logs) {
            ("notifications/progress", Some((progress, ours)), _)
                if params.get("progressToken").and_then(Value::as_str) == Some(ours) =>
            {
                params["progressToken"] = progress.token.clone();
                (progress.send)(params).await;
            }
            ("notifications/message", _, Some(logs)) => logs(params).await,
            _ => {}
        }
    }
}
