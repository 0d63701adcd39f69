//! Tools a server runs only as tasks (`execution.taskSupport: "required"`, the tasks utility of
//! 2025-11-25): called task-augmented, their result awaited with `tasks/result` on the same
//! session. Callers that cannot hold a task themselves — `call`, the native bridge's HTTP
//! routes, a gateway's clients — get the tool's answer as for any other call.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::Session;
use crate::mcp::McpError;

/// How long a given-up task's `tasks/cancel` may take.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(2);

/// Whether a tool's definition says its server runs it only as a task.
pub fn requires_task(definition: &Value) -> bool {
    definition
        .pointer("/execution/taskSupport")
        .and_then(Value::as_str)
        == Some("required")
}

/// Whether a tool's definition says its server runs it as a task ("optional" or "required").
pub fn supports_task(definition: &Value) -> bool {
    let support = definition.pointer("/execution/taskSupport");
    matches!(
        support.and_then(Value::as_str),
        Some("optional" | "required")
    )
}

impl Session {
    /// `tools/call` with `params` (`name`, `arguments`, …), task-augmented, then its result by
    /// `tasks/result` — the whole bounded by `timeout` and ended by `cancel`; a task given up
    /// is cancelled on its server. A server that answers the call at once has answered it.
    pub async fn call_as_task(
        &self,
        mut params: Value,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<Value, McpError> {
        let started = Instant::now();
        let ttl = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        params["task"] = json!({"ttl": ttl});
        let created = self
            .request_cancellable("tools/call", Some(params), timeout, cancel)
            .await?;
        let Some(task) = created.pointer("/task/taskId").and_then(Value::as_str) else {
            return Ok(created);
        };
        let id = json!({"taskId": task});
        let left = timeout.saturating_sub(started.elapsed());
        let result = self
            .request_cancellable("tasks/result", Some(id.clone()), left, cancel)
            .await;
        if result.is_err() {
            // Timed out, cancelled or failed: the task must not run on for nobody.
            let _ = self.request("tasks/cancel", Some(id), CANCEL_TIMEOUT).await;
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_required_task_support_makes_a_call_a_task() {
        assert!(requires_task(
            &json!({"name": "t", "execution": {"taskSupport": "required"}})
        ));
        assert!(!requires_task(
            &json!({"name": "t", "execution": {"taskSupport": "optional"}})
        ));
        assert!(!requires_task(&json!({"name": "t"})));
        assert!(!requires_task(
            &json!({"name": "t", "execution": {"taskSupport": true}})
        ));
    }
}
