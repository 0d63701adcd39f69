//! A task as clients read it, in both eras over the same store: the 2026-07-28 tasks extension
//! (SEP-2663: a flat `CreateTaskResult`, `tasks/get` inlining `result` or `error`, durations in
//! `…Ms`) and the 2025-11-25 tasks utility (`{task: …}`, durations `ttl` and `pollInterval`,
//! the answer from `tasks/result` marked with its task, `notifications/tasks/status`).

use std::time::{Duration, SystemTime};

use serde_json::{json, Map, Value};

use super::store::{Snapshot, State, POLL_INTERVAL};

fn stamp(time: SystemTime) -> String {
    humantime::format_rfc3339_millis(time).to_string()
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// The task's fields, with the names of its durations (the 2025-11-25 names differ).
fn fields(task: &Snapshot, ttl: &str, poll: &str) -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("taskId".into(), json!(task.id));
    fields.insert("status".into(), json!(task.state.name()));
    fields.insert("createdAt".into(), json!(stamp(task.created)));
    fields.insert("lastUpdatedAt".into(), json!(stamp(task.updated)));
    fields.insert(ttl.into(), json!(millis(task.ttl)));
    if !task.state.is_terminal() {
        fields.insert(poll.into(), json!(millis(POLL_INTERVAL)));
    }
    if task.state == State::Cancelled {
        fields.insert("statusMessage".into(), json!("cancelled by its client"));
    }
    fields
}

/// 2026-07-28: a `tools/call`'s `CreateTaskResult` (flat: `resultType: "task"` and the task).
pub fn created(task: &Snapshot) -> Value {
    let mut fields = fields(task, "ttlMs", "pollIntervalMs");
    fields.insert("resultType".into(), json!("task"));
    Value::Object(fields)
}

/// 2026-07-28: `tasks/get`'s `DetailedTask`, the result (tool errors too) or the protocol
/// error inlined once the task has ended.
pub fn detailed(task: &Snapshot) -> Value {
    let mut fields = fields(task, "ttlMs", "pollIntervalMs");
    fields.insert("resultType".into(), json!("complete"));
    match &task.state {
        State::Completed(result) => {
            fields.insert("result".into(), result.clone());
        }
        State::Failed(error) => {
            fields.insert("error".into(), error.clone());
        }
        State::Working | State::Cancelled => {}
    }
    Value::Object(fields)
}

/// The `_meta` key that ties a message to its task (2025-11-25).
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// 2025-11-25: the `Task` (`tasks/get`, `tasks/cancel`, a page of `tasks/list`).
pub fn task_2025(task: &Snapshot) -> Value {
    Value::Object(fields(task, "ttl", "pollInterval"))
}

/// 2025-11-25: a task-augmented `tools/call`'s `CreateTaskResult`.
pub fn created_2025(task: &Snapshot) -> Value {
    json!({"task": task_2025(task)})
}

/// 2025-11-25: a page of `tasks/list`, with the cursor of the next when there is one.
pub fn listed_2025(tasks: &[Snapshot], next: Option<&str>) -> Value {
    let mut page = json!({"tasks": tasks.iter().map(task_2025).collect::<Vec<_>>()});
    if let Some(next) = next {
        page["nextCursor"] = json!(next);
    }
    page
}

/// 2025-11-25: what `tasks/result` answers for an ended task — its call's result marked with
/// the task (`_meta` related-task), or the JSON-RPC error it ended in (`Err`).
pub fn payload_2025(task: &Snapshot) -> Result<Value, Value> {
    match &task.state {
        State::Completed(result) => {
            let mut result = result.clone();
            if let Some(fields) = result.as_object_mut() {
                let meta = fields.entry("_meta").or_insert_with(|| json!({}));
                if let Some(meta) = meta.as_object_mut() {
                    meta.insert(RELATED_TASK.into(), json!({"taskId": task.id}));
                }
            }
            Ok(result)
        }
        State::Failed(error) => Err(error.clone()),
        State::Cancelled => Err(json!({
            "code": super::INTERNAL_ERROR,
            "message": format!("task `{}` was cancelled by its client: it has no result", task.id),
        })),
        State::Working => Err(json!({
            "code": super::INTERNAL_ERROR,
            "message": format!("task `{}` has not ended", task.id),
        })),
    }
}

/// 2025-11-25: the `notifications/tasks/status` message telling where `task` stands.
pub fn status_2025(task: &Snapshot) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": task_2025(task)})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(state: State) -> Snapshot {
        let now = SystemTime::now();
        Snapshot {
            id: "t1".into(),
            state,
            created: now,
            updated: now,
            ttl: Duration::from_secs(60),
        }
    }

    #[test]
    fn a_2026_task_is_flat_with_durations_in_milliseconds() {
        let created = created(&snapshot(State::Working));
        assert_eq!(created["resultType"], "task");
        assert_eq!(created["ttlMs"], 60_000);
        assert_eq!(created["pollIntervalMs"], 500);
        for legacy in [
            "task",
            "ttl",
            "pollInterval",
            "result",
            "error",
            "requestState",
        ] {
            assert!(created.get(legacy).is_none(), "{legacy} in {created}");
        }
        let failed = detailed(&snapshot(State::Failed(
            json!({"code": -1, "message": "m"}),
        )));
        assert_eq!(failed["status"], "failed");
        assert_eq!(failed["error"]["code"], -1);
        assert!(failed.get("result").is_none());
    }

    #[test]
    fn a_2025_task_is_nested_and_its_result_names_it() {
        let created = created_2025(&snapshot(State::Working));
        assert_eq!(created["task"]["ttl"], 60_000);
        assert_eq!(created["task"]["pollInterval"], 500);
        assert!(created.get("resultType").is_none() && created["task"].get("ttlMs").is_none());
        let done = snapshot(State::Completed(json!({"content": [], "_meta": {"k": 1}})));
        let payload = payload_2025(&done).expect("a result");
        assert_eq!(payload["_meta"][RELATED_TASK]["taskId"], "t1");
        assert_eq!(payload["_meta"]["k"], 1, "its own _meta stays");
        assert!(payload_2025(&snapshot(State::Cancelled)).is_err());
        let page = listed_2025(&[done], Some("t1"));
        assert_eq!(page["nextCursor"], "t1");
        assert_eq!(page["tasks"][0]["status"], "completed");
    }
}
