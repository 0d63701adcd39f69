//! A task as clients read it: the 2026-07-28 tasks extension (SEP-2663: a flat
//! `CreateTaskResult`, `tasks/get` inlining `result` or `error`, durations in `…Ms`). The
//! 2025-11-25 tasks utility's shapes (`{task: …}`, `ttl`, `tasks/result`) would sit beside
//! them, over the same store.

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
}
