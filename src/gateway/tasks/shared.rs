//! Tasks across replicas (`serve --http --state redis://…`): a task's record — its scope's
//! hash, its status, the result or error once it has ended — lives in the state store, so a
//! client polls, lists, reads and cancels it through any replica. The replica running the call
//! writes its end; the others read. A cancel, wherever it arrives, marks the record and is
//! told to every replica (channel `mcp-launch:task-cancelled`, the task's id) so the one
//! running the call ends it. Every change is a compare-and-swap on the record: a cancel and
//! a result racing from two replicas end the task once.
//!
//! Keys: `mcp-launch:task:<SHA-256 of the id>` (expires with the task's ttl) and
//! `mcp-launch:tasks:<scope hash>`, the set of a scope's task keys (for `tasks/list` and the
//! per-scope cap; members whose record expired are taken out as they are met). A record is
//! at most [`MAX_RECORD_BYTES`]: a larger result ends the task `failed`, saying so.

use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::store::{page_of, Snapshot, State, Store, TaskError, MAX_PER_SCOPE, MAX_TTL};
use crate::outputs::ClientScope;
use crate::state::{Redis, StateError};

/// The channel on which a cancel is told to the replica running the task's call.
const CANCELLED: &str = "task-cancelled";

/// The largest record kept (a result budgeted by `--max-output-tokens` is far smaller; an
/// unbudgeted one is refused rather than stored whole in every poll's answer path).
pub const MAX_RECORD_BYTES: usize = 1 << 20;

/// How often a replica waiting for a task run elsewhere (`tasks/result`) reads its record.
const WAIT_EVERY: Duration = Duration::from_millis(250);

/// A task as the store keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    v: u8,
    id: String,
    scope: String,
    status: String,
    /// The result (completed) or the JSON-RPC error (failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    outcome: Option<Value>,
    created_ms: u64,
    updated_ms: u64,
    ttl_ms: u64,
}

fn millis(time: SystemTime) -> u64 {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

fn at(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

impl Record {
    fn of(scope: &ClientScope, task: &Snapshot) -> Record {
        let outcome = match &task.state {
            State::Completed(value) | State::Failed(value) => Some(value.clone()),
            State::Working | State::Cancelled => None,
        };
        Record {
            v: 1,
            id: task.id.clone(),
            scope: scope.hash().to_string(),
            status: task.state.name().to_string(),
            outcome,
            created_ms: millis(task.created),
            updated_ms: millis(task.updated),
            ttl_ms: u64::try_from(task.ttl.as_millis()).unwrap_or(u64::MAX),
        }
    }

    fn snapshot(&self) -> Snapshot {
        let outcome = || self.outcome.clone().unwrap_or(Value::Null);
        let state = match self.status.as_str() {
            "completed" => State::Completed(outcome()),
            "failed" => State::Failed(outcome()),
            "cancelled" => State::Cancelled,
            _ => State::Working,
        };
        Snapshot {
            id: self.id.clone(),
            state,
            created: at(self.created_ms),
            updated: at(self.updated_ms),
            ttl: Duration::from_millis(self.ttl_ms),
        }
    }

    /// The record's bytes; a record over [`MAX_RECORD_BYTES`] becomes a failed task saying so.
    fn bytes(&self) -> Vec<u8> {
        let bytes = serde_json::to_vec(self).unwrap_or_default();
        if bytes.len() <= MAX_RECORD_BYTES {
            return bytes;
        }
        let error = json!({
            "code": -32603,
            "message": format!(
                "the task's result ({} bytes) is larger than replicas share ({MAX_RECORD_BYTES}): \
                 call the tool with a smaller --max-output-tokens budget, or without a task",
                bytes.len()
            ),
        });
        let mut failed = self.clone();
        failed.status = "failed".into();
        failed.outcome = Some(error);
        serde_json::to_vec(&failed).unwrap_or_default()
    }
}

/// The tasks' records in the shared store.
pub struct Shared {
    redis: Arc<Redis>,
}

/// The store key of task `id` (a task id is never written as a key).
fn key(id: &str) -> String {
    let digest = Sha256::digest(id.as_bytes());
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    Redis::key("task", &hex)
}

fn scope_key(scope: &ClientScope) -> String {
    Redis::key("tasks", scope.hash())
}

fn unreachable(error: StateError) -> TaskError {
    TaskError::Unreachable(error.to_string())
}

impl Shared {
    /// The records in `redis`; cancels told by other replicas end the calls `local` runs.
    pub fn new(redis: Arc<Redis>, local: Weak<Store>) -> Shared {
        redis.spawn_listener(CANCELLED, move |news| {
            let Some(local) = local.upgrade() else {
                return false;
            };
            local.cancel_relayed(&String::from_utf8_lossy(news));
            true
        });
        Shared { redis }
    }

    /// The record at `key` and its bytes, if there is one and it is ours.
    async fn read(&self, key: &str) -> Result<Option<(Record, Vec<u8>)>, TaskError> {
        let Some(bytes) = self.redis.get(key).await.map_err(unreachable)? else {
            return Ok(None);
        };
        Ok(serde_json::from_slice(&bytes).ok().map(|r| (r, bytes)))
    }

    /// The record of task `id` of `scope` and its bytes.
    async fn own(&self, scope: &ClientScope, id: &str) -> Result<(Record, Vec<u8>), TaskError> {
        match self.read(&key(id)).await? {
            Some((record, bytes)) if record.scope == scope.hash() && record.id == id => {
                Ok((record, bytes))
            }
            _ => Err(TaskError::Unknown(id.to_string())),
        }
    }

    /// Every live task of `scope` (members whose record has expired are taken out).
    async fn all(&self, scope: &ClientScope) -> Result<Vec<Record>, TaskError> {
        let set = scope_key(scope);
        let keys = self.redis.set_members(&set).await.map_err(unreachable)?;
        let records = self.redis.get_many(&keys).await.map_err(unreachable)?;
        let mut live = Vec::new();
        let mut gone = Vec::new();
        for (key, bytes) in keys.into_iter().zip(records) {
            let record = bytes.and_then(|b| serde_json::from_slice::<Record>(&b).ok());
            match record {
                Some(record) if record.scope == scope.hash() => live.push(record),
                _ => gone.push(key),
            }
        }
        self.redis
            .set_remove(&set, &gone)
            .await
            .map_err(unreachable)?;
        Ok(live)
    }

    /// Records the new task `task` of `scope`: at [`MAX_PER_SCOPE`] the scope's oldest ended
    /// task goes, refused while all are working (the cap is read, then written: replicas
    /// making tasks for one client at the same instant may pass it by a few).
    pub async fn create(&self, scope: &ClientScope, task: &Snapshot) -> Result<(), TaskError> {
        let own = self.all(scope).await?;
        if own.len() >= MAX_PER_SCOPE {
            let oldest_ended = own
                .iter()
                .filter(|r| r.snapshot().state.is_terminal())
                .min_by_key(|r| r.updated_ms)
                .ok_or(TaskError::TooMany)?;
            let gone = key(&oldest_ended.id);
            self.redis.delete(&gone).await.map_err(unreachable)?;
            let set = scope_key(scope);
            let _ = self.redis.set_remove(&set, &[gone]).await;
        }
        let (bytes, key, set) = (
            Record::of(scope, task).bytes(),
            key(&task.id),
            scope_key(scope),
        );
        let put = self.redis.put(&key, &bytes, Some(task.ttl), true);
        put.await.map_err(unreachable)?;
        let listed = self.redis.set_add(&set, &key, MAX_TTL);
        listed.await.map_err(unreachable)
    }

    /// The task `id` of `scope`.
    pub async fn get(&self, scope: &ClientScope, id: &str) -> Result<Snapshot, TaskError> {
        Ok(self.own(scope, id).await?.0.snapshot())
    }

    /// A page of `scope`'s live tasks (see [`page_of`]).
    pub async fn page(
        &self,
        scope: &ClientScope,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Snapshot>, TaskError> {
        let own = self.all(scope).await?;
        page_of(own.iter().map(Record::snapshot).collect(), after, limit)
    }

    /// The task `id` of `scope` once it has ended, or as it stands when its ttl runs out.
    pub async fn ended(&self, scope: &ClientScope, id: &str) -> Result<Snapshot, TaskError> {
        loop {
            let task = self.get(scope, id).await?;
            let end = task.created + task.ttl;
            if task.state.is_terminal() || SystemTime::now() >= end {
                return Ok(task);
            }
            tokio::time::sleep(WAIT_EVERY).await;
        }
    }

    /// Cancels the task `id` of `scope`, telling the replica running its call; an ended task
    /// stays as it is.
    pub async fn cancel(&self, scope: &ClientScope, id: &str) -> Result<Snapshot, TaskError> {
        loop {
            let (record, bytes) = self.own(scope, id).await?;
            let task = record.snapshot();
            if task.state.is_terminal() {
                return Ok(task);
            }
            let cancelled = Snapshot {
                state: State::Cancelled,
                updated: SystemTime::now(),
                ..task
            };
            let new = Record::of(scope, &cancelled).bytes();
            if self.swapped(id, &bytes, &new).await? {
                let told = self.redis.publish(CANCELLED, id.as_bytes()).await;
                told.map_err(unreachable)?;
                return Ok(cancelled);
            }
        }
    }

    /// Records how the task `id` ended, unless it already has (a cancel came first).
    pub async fn finish(&self, id: &str, state: State) -> Result<(), TaskError> {
        loop {
            let Some((record, bytes)) = self.read(&key(id)).await? else {
                return Ok(());
            };
            if record.snapshot().state.is_terminal() {
                return Ok(());
            }
            let ended = Record {
                status: state.name().to_string(),
                outcome: match &state {
                    State::Completed(value) | State::Failed(value) => Some(value.clone()),
                    State::Working | State::Cancelled => None,
                },
                updated_ms: millis(SystemTime::now()),
                ..record
            };
            if self.swapped(id, &bytes, &ended.bytes()).await? {
                return Ok(());
            }
        }
    }

    async fn swapped(&self, id: &str, old: &[u8], new: &[u8]) -> Result<bool, TaskError> {
        let key = key(id);
        self.redis.swap(&key, old, new).await.map_err(unreachable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(store: &Store, scope: &ClientScope) -> Snapshot {
        store.create(scope, None).expect("made").snapshot
    }

    /// Two replicas over one Redis: a task made on one is read, listed and cancelled on the
    /// other (the cancel reaching the call on the first), its end written once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_task_made_on_one_replica_is_read_and_cancelled_on_another() {
        let Some(server) = crate::state::tests::RedisServer::start() else {
            return;
        };
        let (local_a, local_b) = (Arc::new(Store::default()), Arc::new(Store::default()));
        let a = Shared::new(
            Redis::connect(&server.url).await.unwrap(),
            Arc::downgrade(&local_a),
        );
        let b = Shared::new(
            Redis::connect(&server.url).await.unwrap(),
            Arc::downgrade(&local_b),
        );
        tokio::time::sleep(Duration::from_millis(300)).await; // the listeners subscribe
        let (alice, bob) = (ClientScope::new("alice"), ClientScope::new("bob"));
        let made = local_a.create(&alice, None).unwrap();
        a.create(&alice, &made.snapshot).await.unwrap();
        let id = made.snapshot.id.clone();
        assert_eq!(b.get(&alice, &id).await.unwrap().state, State::Working);
        assert_eq!(
            b.get(&bob, &id).await.unwrap_err(),
            TaskError::Unknown(id.clone())
        );
        assert!(b.cancel(&bob, &id).await.is_err());
        let listed = b.page(&alice, None, 10).await.unwrap();
        assert_eq!(listed.len(), 1);

        let done = snapshot(&local_a, &alice);
        a.create(&alice, &done).await.unwrap();
        let result = json!({"content": [{"type": "text", "text": "done"}]});
        a.finish(&done.id, State::Completed(result.clone()))
            .await
            .unwrap();
        let ended = b.ended(&alice, &done.id).await.unwrap();
        assert_eq!(ended.state, State::Completed(result));

        assert_eq!(b.cancel(&alice, &id).await.unwrap().state, State::Cancelled);
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !made.cancel.is_cancelled() {
            assert!(std::time::Instant::now() < deadline, "the call never ended");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        a.finish(&id, State::Completed(json!({}))).await.unwrap();
        assert_eq!(a.get(&alice, &id).await.unwrap().state, State::Cancelled);
    }
}
