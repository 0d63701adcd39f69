//! Tasks through the gateway: a task-aware client's call of a tool whose server runs it as a
//! task (`execution.taskSupport` "optional" or "required") becomes a gateway task — made in
//! the client's scope, its call run in the background as any call (the server's own task held
//! by `forward` when the tool requires one), its end recorded once. `store` keeps them (one
//! store, whatever the era: only the wire shapes differ), `shapes` writes the messages, and
//! `wire::tasks` / `wire::tasks25` name the methods. Served: the 2026-07-28 tasks extension
//! (SEP-2663) and the 2025-11-25 tasks utility of session clients.
//!
//! With `--state redis://…` the records live in the shared store (`shared`), so any replica
//! answers for a task; the local store still holds the calls this replica runs (their
//! cancellation, their expiry).

mod shapes;
mod shared;
mod store;

use std::time::Duration;

use serde_json::{json, Value};

use super::error::GatewayError;
use super::{era, Caller, Gateway};
use crate::outputs::ClientScope;

pub use shapes::task_2025;
pub use shapes::{created, created_2025, detailed, listed_2025, payload_2025, status_2025};
pub use shared::Shared;
pub use store::{Snapshot, State, Store, TaskError};

/// Tasks a `tasks/list` page holds at most.
pub const PAGE: usize = 16;

/// The 2026-07-28 tasks extension's id (SEP-2663), as `capabilities.extensions` names it.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// JSON-RPC "internal error", for a call that ended without an answer a task can hold.
const INTERNAL_ERROR: i64 = -32603;

impl Gateway {
    /// Whether a call of `name` may become a task: a tool `tools/list` shows whose server runs
    /// it as a task (on a first run, once its server's check has told).
    pub async fn runs_as_task(&self, name: &str) -> bool {
        let listed = !self.is_sparse() || self.inner.options.pins.iter().any(|p| p == name);
        let wait = self.inner.options.call_timeout;
        let catalog = self.catalog_knowing(|c| c.get(name).is_some(), wait);
        listed && catalog.await.get(name).is_some_and(|tool| tool.tasks)
    }

    /// Whether a 2025-11-25 client may call `name` as a task: a tool that runs as one, or in
    /// sparse mode `call_tool` (whatever it calls runs as the task's call).
    pub async fn accepts_task(&self, name: &str) -> bool {
        (self.is_sparse() && name == super::sparse::CALL) || self.runs_as_task(name).await
    }

    /// The task `id` of `scope` once it has ended (at most until it expires: then unknown).
    pub async fn ended_task(&self, scope: &ClientScope, id: &str) -> Result<Snapshot, TaskError> {
        if let Some(shared) = &self.inner.shared_tasks {
            return shared.ended(scope, id).await;
        }
        let (task, ended) = self.inner.task_store.watch(scope, id)?;
        if task.state.is_terminal() {
            return Ok(task);
        }
        let left = (task.created + task.ttl)
            .duration_since(std::time::SystemTime::now())
            .unwrap_or_default();
        let _ = tokio::time::timeout(left, ended.cancelled()).await;
        self.task(scope, id).await
    }

    /// A page of `scope`'s tasks after the task `cursor` names, and the next page's cursor.
    pub async fn task_page(
        &self,
        scope: &ClientScope,
        cursor: Option<&str>,
    ) -> Result<(Vec<Snapshot>, Option<String>), TaskError> {
        let mut page = match &self.inner.shared_tasks {
            Some(shared) => shared.page(scope, cursor, PAGE + 1).await?,
            None => self.inner.task_store.page(scope, cursor, PAGE + 1)?,
        };
        let more = page.len() > PAGE;
        page.truncate(PAGE);
        let next = more.then(|| page.last().map(|t| t.id.clone())).flatten();
        Ok((page, next))
    }

    /// Starts the call of `name` as a task of `caller`'s scope, living `ttl` (else the
    /// default): answered at once, the call runs on (ended by `tasks/cancel` or expiry), in
    /// the span of the request that made it.
    pub async fn start_task(
        &self,
        name: &str,
        arguments: Value,
        mut caller: Caller,
        ttl: Option<Duration>,
    ) -> Result<Snapshot, TaskError> {
        use tracing::Instrument;
        let made = self.inner.task_store.create(&caller.scope, ttl)?;
        let id = made.snapshot.id.clone();
        let mut lease = None;
        if let Some(shared) = &self.inner.shared_tasks {
            if let Err(refused) = shared.create(&caller.scope, &made.snapshot).await {
                self.inner.task_store.forget(&id);
                return Err(refused);
            }
            lease = Some(shared.hold_lease(&id));
        }
        caller.cancel = made.cancel;
        let (gateway, name) = (self.clone(), name.to_string());
        let call = async move {
            let _lease = lease; // renewed until the call has ended
            let outcome = ended(gateway.call_tool(&name, arguments, caller).await);
            if let Some(shared) = &gateway.inner.shared_tasks {
                if let Err(e) = shared.finish(&id, outcome.clone()).await {
                    tracing::warn!(error = %e, "a task's end was not recorded in the state store");
                }
            }
            gateway.inner.task_store.finish(&id, outcome);
        };
        // Still answering the request (its span the upstream call's parent, `trace::carried`).
        self.spawn(crate::observe::trace::carried(call).instrument(tracing::Span::current()));
        Ok(made.snapshot)
    }

    /// The task `id` of `scope`.
    pub async fn task(&self, scope: &ClientScope, id: &str) -> Result<Snapshot, TaskError> {
        match &self.inner.shared_tasks {
            Some(shared) => shared.get(scope, id).await,
            None => self.inner.task_store.get(scope, id),
        }
    }

    /// Cancels the task `id` of `scope` (its server's call too, on whatever replica runs it);
    /// an ended task stays ended.
    pub async fn cancel_task(&self, scope: &ClientScope, id: &str) -> Result<Snapshot, TaskError> {
        match &self.inner.shared_tasks {
            Some(shared) => {
                let cancelled = shared.cancel(scope, id).await?;
                self.inner.task_store.cancel_relayed(id);
                Ok(cancelled)
            }
            None => self.inner.task_store.cancel(scope, id),
        }
    }
}

/// The JSON-RPC error a refused task request gets: an unknown task is invalid params
/// (-32602), as the spec asks; too many tasks an internal error; both with the help.
pub fn refusal(error: &TaskError) -> Value {
    use crate::error::Actionable;
    let code = match error {
        TaskError::Unknown(_) => super::error::INVALID_PARAMS,
        TaskError::TooMany | TaskError::Unreachable(_) => INTERNAL_ERROR,
    };
    json!({
        "code": code,
        "message": error.to_string(),
        "data": {"type": error.kind(), "help": error.help()},
    })
}

/// How a task's call ended, as the task records it: a result (a tool error too) is
/// `completed`, a protocol error `failed`.
fn ended(outcome: Result<Value, GatewayError>) -> State {
    match outcome {
        Ok(result) if era::asks_for_input(&result) => State::Failed(json!({
            "code": INTERNAL_ERROR,
            "message": "the tool asked its client for input, which a task through \
                        mcp-launch cannot ask yet: call it without a task",
        })),
        Ok(result) => State::Completed(result),
        Err(error) if error.is_protocol_error() => State::Failed(error.as_rpc()),
        Err(error) => State::Completed(error.as_tool_result()),
    }
}
