//! The tasks extension of 2026-07-28 (SEP-2663, `io.modelcontextprotocol/tasks`) on rmcp: a
//! client that declared it (for its session, or in one request's `_meta`) gets a task for a
//! call of a task-supporting tool, and `tasks/get` / `tasks/cancel` on its own tasks. rmcp
//! answers `tasks/*` of a client that did not declare it with -32021.

use rmcp::model::{CallToolResponse, GetTaskResult};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::ErrorData;
use serde_json::Value;

pub use crate::gateway::tasks::EXTENSION;
use crate::gateway::tasks::{self, TaskError};
use crate::gateway::Caller;
use crate::serving::typed;

use super::context::scope_of;
use super::{rpc_error_of, Handler};

/// Whether the request's client holds tasks (declared the extension).
pub fn holds_tasks(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|capabilities| capabilities.supports_tasks())
}

fn refused(error: &TaskError) -> ErrorData {
    rpc_error_of(tasks::refusal(error))
}

impl Handler {
    /// A call made a task: answered with its `CreateTaskResult`, the call run on.
    pub(super) async fn call_as_task(
        &self,
        name: &str,
        arguments: Value,
        caller: Caller,
    ) -> Result<CallToolResponse, ErrorData> {
        let task = self
            .gateway
            .start_task(name, arguments, caller, None)
            .await
            .map_err(|e| refused(&e))?;
        typed(tasks::created(&task)).map(CallToolResponse::Task)
    }

    /// `tasks/get`: the client's own task, its result or error inlined once ended.
    pub(super) async fn detailed_task(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let task = self
            .gateway
            .task(&scope_of(context), id)
            .await
            .map_err(|e| refused(&e))?;
        typed(tasks::detailed(&task))
    }

    /// `tasks/cancel`: the client's own task ended (an ended one stays as it is).
    pub(super) async fn cancel_own_task(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.gateway
            .cancel_task(&scope_of(context), id)
            .await
            .map(|_| ())
            .map_err(|e| refused(&e))
    }
}
