//! Tools a server runs only as tasks, through the pool: the protocol steps are the session's
//! (`Session::call_as_task`); here they run on the shared session, counted and ended with the
//! pool like any request.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::mcp::Session;

use super::{PoolError, Upstream};

impl Upstream {
    /// Calls `tool`, which its server runs only as a task, on the shared session.
    pub async fn call_task(
        self: &Arc<Self>,
        tool: &str,
        arguments: Value,
        timeout: Duration,
    ) -> Result<Value, PoolError> {
        let session = self.session().await?;
        let params = json!({"name": tool, "arguments": arguments});
        self.call_task_on(&session, params, timeout, &CancellationToken::new())
            .await
    }

    /// `tools/call` with `params` as a task on `session`, its result awaited (see
    /// `Session::call_as_task`).
    pub async fn call_task_on(
        &self,
        session: &Arc<Session>,
        params: Value,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<Value, PoolError> {
        let outcome = self
            .guarded(session.call_as_task(params, timeout, cancel))
            .await?;
        outcome.map_err(|error| self.failed(session, "tools/call", error))
    }
}
