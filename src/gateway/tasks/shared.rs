//! Tasks across replicas (`serve --http --state redis://…`): a task's record — its scope's
//! hash, its status, the result or error once it has ended — lives in the state store, so a
//! client polls, lists, reads and cancels it through any replica. The replica running the call
//! writes its end; the others read. A cancel, wherever it arrives, marks the record and is
//! told to every replica (channel `mcp-launch:task-cancelled`, the task's id) so the one
//! running the call ends it. Every change is a compare-and-swap on the record: a cancel and
//! a result racing from two replicas end the task once.
//!
//! A working task's replica holds a lease on it (`mcp-launch:task-lease:<SHA-256 of the id>`,
//! [`LEASE`] long, renewed every [`RENEW_EVERY`] while the call runs): a replica that stops
//! (killed, its machine lost) leaves the lease to lapse, and whichever replica next reads the
//! task ends it `failed`, saying so, by the same compare-and-swap — instead of `working` until
//! its ttl.
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

/// The channel on which a task's end (its id) is told to replicas waiting for it
/// (`tasks/result` through a replica not running the call).
const ENDED: &str = "task-ended";

/// The largest record kept (a result budgeted by `--max-output-tokens` is far smaller; an
/// unbudgeted one is refused rather than stored whole in every poll's answer path).
pub const MAX_RECORD_BYTES: usize = 1 << 20;

/// How often a replica waiting for a task run elsewhere (`tasks/result`) reads its record
/// when no news of its end came (news is missed while a listener reconnects; the lease's
/// lapse is never told).
const WAIT_EVERY: Duration = Duration::from_secs(1);

/// How long a working task's lease lasts unless renewed: the longest a task whose replica
/// stopped still reads `working` (plus one read).
pub const LEASE: Duration = Duration::from_secs(10);

/// How often the replica running a task's call renews its lease: two renewals may be lost
/// (each bounded by the store's 2 s answer time) before the lease lapses.
const RENEW_EVERY: Duration = Duration::from_secs(3);

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
    /// Whether its replica holds a lease while the call runs (records of replicas from before
    /// leases have none and are never ended for lacking one).
    #[serde(default)]
    leased: bool,
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
            leased: true,
        }
    }

    /// This working record ended `failed`: the replica running its call stopped.
    fn orphaned(self) -> Record {
        let error = json!({
            "code": -32603,
            "message": "the gateway replica that ran this task stopped before the task ended \
                        (its lease in the state store lapsed): call the tool again",
            "data": {"type": "replica_stopped"},
        });
        Record {
            status: "failed".into(),
            outcome: Some(error),
            updated_ms: millis(SystemTime::now()),
            ..self
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
    /// Woken by every task's end told on [`ENDED`]: waiters read their record again.
    ended_news: Arc<tokio::sync::Notify>,
    /// [`WAIT_EVERY`] (a test waits on news alone).
    wait_every: Duration,
}

/// The store key of task `id` (a task id is never written as a key).
fn key(id: &str) -> String {
    Redis::key("task", &digest(id))
}

/// The key of the lease the replica running task `id` holds.
fn lease_key(id: &str) -> String {
    Redis::key("task-lease", &digest(id))
}

fn digest(id: &str) -> String {
    let digest = Sha256::digest(id.as_bytes());
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// Renews a task's lease while it lives; dropped when the task's call has ended.
pub struct Lease(tokio::task::JoinHandle<()>);

impl Drop for Lease {
    fn drop(&mut self) {
        self.0.abort();
    }
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
        let ended_news = Arc::new(tokio::sync::Notify::new());
        let waiters = Arc::downgrade(&ended_news);
        redis.spawn_listener(ENDED, move |_| {
            let Some(waiters) = waiters.upgrade() else {
                return false;
            };
            waiters.notify_waiters();
            true
        });
        Shared {
            redis,
            ended_news,
            wait_every: WAIT_EVERY,
        }
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

    /// `record` as it stands, or ended `failed` when it is working but its replica's lease
    /// has lapsed (that replica stopped): the first reader to see it ends it.
    async fn settled(&self, record: Record, bytes: &[u8]) -> Result<Record, TaskError> {
        if !record.leased || record.snapshot().state.is_terminal() {
            return Ok(record);
        }
        let lease = self.redis.get(&lease_key(&record.id)).await;
        if lease.map_err(unreachable)?.is_some() {
            return Ok(record);
        }
        let id = record.id.clone();
        let failed = record.orphaned();
        if self.swapped(&id, bytes, &failed.bytes()).await? {
            tracing::warn!("a task's replica stopped before it ended: the task failed");
            self.tell_ended(&id).await;
            return Ok(failed);
        }
        // Changed meanwhile (it ended, or another reader failed it): as it is now.
        let now = self.read(&key(&id)).await?;
        now.map(|(r, _)| r).ok_or(TaskError::Unknown(id))
    }

    /// Holds the lease of the working task `id` until the returned guard is dropped.
    pub fn hold_lease(&self, id: &str) -> Lease {
        let (redis, key) = (Arc::clone(&self.redis), lease_key(id));
        Lease(tokio::spawn(async move {
            loop {
                tokio::time::sleep(RENEW_EVERY).await;
                if let Err(e) = redis.expire(&key, LEASE).await {
                    tracing::warn!(error = %e, "a task's lease was not renewed");
                }
            }
        }))
    }

    /// Every live task of `scope` (members whose record has expired are taken out).
    async fn all(&self, scope: &ClientScope) -> Result<Vec<Record>, TaskError> {
        let set = scope_key(scope);
        let keys = self.redis.set_members(&set).await.map_err(unreachable)?;
        let records = self.redis.get_many(&keys).await.map_err(unreachable)?;
        let mut live = Vec::new();
        let mut gone = Vec::new();
        for (key, bytes) in keys.into_iter().zip(records) {
            let bytes = bytes.unwrap_or_default();
            match serde_json::from_slice::<Record>(&bytes) {
                Ok(record) if record.scope == scope.hash() => {
                    live.push(self.settled(record, &bytes).await?)
                }
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
    /// task goes, refused while all are working. The cap is kept in one step in the store
    /// (replicas making tasks for one client at the same instant cannot pass it); which ended
    /// task makes room is read, then written (two replicas may each remove one).
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
        let lease = lease_key(&task.id);
        let leased = self.redis.put(&lease, b"1", Some(LEASE), false);
        leased.await.map_err(unreachable)?;
        // The record before its place in the set: a reader finding a member without its
        // record takes it out as expired.
        let put = self.redis.put(&key, &bytes, Some(task.ttl), true);
        put.await.map_err(unreachable)?;
        let listed = self
            .redis
            .set_add_capped(&set, &key, MAX_PER_SCOPE, MAX_TTL);
        if listed.await.map_err(unreachable)? {
            return Ok(());
        }
        let _ = self.redis.delete(&key).await;
        let _ = self.redis.delete(&lease).await;
        Err(TaskError::TooMany)
    }

    /// The task `id` of `scope`.
    pub async fn get(&self, scope: &ClientScope, id: &str) -> Result<Snapshot, TaskError> {
        let (record, bytes) = self.own(scope, id).await?;
        Ok(self.settled(record, &bytes).await?.snapshot())
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
    /// Woken by the news of any task's end ([`ENDED`]), read again every [`WAIT_EVERY`] else.
    pub async fn ended(&self, scope: &ClientScope, id: &str) -> Result<Snapshot, TaskError> {
        loop {
            let news = self.ended_news.notified();
            tokio::pin!(news);
            news.as_mut().enable(); // news told while the record is read still wakes us
            let task = self.get(scope, id).await?;
            let end = task.created + task.ttl;
            if task.state.is_terminal() || SystemTime::now() >= end {
                return Ok(task);
            }
            let _ = tokio::time::timeout(self.wait_every, news).await;
        }
    }

    /// Tells waiting replicas that task `id` ended.
    async fn tell_ended(&self, id: &str) {
        if let Err(e) = self.redis.publish(ENDED, id.as_bytes()).await {
            tracing::debug!(error = %e, "a task's end was not told (waiters read it later)");
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
                self.tell_ended(id).await;
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
                self.tell_ended(id).await;
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

    async fn two_replicas(url: &str) -> (Arc<Store>, Shared, Arc<Store>, Shared) {
        let (local_a, local_b) = (Arc::new(Store::default()), Arc::new(Store::default()));
        let a = Shared::new(Redis::connect(url).await.unwrap(), Arc::downgrade(&local_a));
        let b = Shared::new(Redis::connect(url).await.unwrap(), Arc::downgrade(&local_b));
        tokio::time::sleep(Duration::from_millis(300)).await; // the listeners subscribe
        (local_a, a, local_b, b)
    }

    /// `tasks/result` through a replica not running the call is woken by the news of its end
    /// (before: read every 250 ms; here reading again would take an hour).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_replica_waiting_for_a_task_run_elsewhere_is_woken_by_its_end() {
        let Some(server) = crate::state::tests::RedisServer::start() else {
            return;
        };
        let (local_a, a, _local_b, mut b) = two_replicas(&server.url).await;
        b.wait_every = Duration::from_secs(3600);
        let alice = ClientScope::new("alice");
        let task = snapshot(&local_a, &alice);
        a.create(&alice, &task).await.unwrap();
        let b = Arc::new(b);
        let waiting = {
            let (b, alice, id) = (Arc::clone(&b), alice.clone(), task.id.clone());
            tokio::spawn(async move { b.ended(&alice, &id).await })
        };
        tokio::time::sleep(Duration::from_millis(200)).await;
        let result = json!({"content": []});
        a.finish(&task.id, State::Completed(result.clone()))
            .await
            .unwrap();
        let woken = tokio::time::timeout(Duration::from_secs(5), waiting).await;
        let ended = woken.expect("not woken by the task's end").unwrap();
        assert_eq!(ended.unwrap().state, State::Completed(result));
    }

    /// Replicas making tasks for one client at the same instant stop at the cap together
    /// (before: each read the count, then wrote, and all passed it).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn replicas_making_tasks_at_once_never_pass_the_cap() {
        let Some(server) = crate::state::tests::RedisServer::start() else {
            return;
        };
        let (local_a, a, local_b, b) = two_replicas(&server.url).await;
        let (a, b) = (Arc::new(a), Arc::new(b));
        let alice = ClientScope::new("alice");
        let half = MAX_PER_SCOPE / 2 + 8;
        let mut making = Vec::new();
        for (local, shared) in [(&local_a, &a), (&local_b, &b)] {
            for _ in 0..half {
                let (task, shared, alice) =
                    (snapshot(local, &alice), Arc::clone(shared), alice.clone());
                making.push(tokio::spawn(
                    async move { shared.create(&alice, &task).await },
                ));
            }
        }
        let mut made = 0;
        for making in making {
            match making.await.unwrap() {
                Ok(()) => made += 1,
                Err(refused) => assert_eq!(refused, TaskError::TooMany),
            }
        }
        assert_eq!(made, MAX_PER_SCOPE, "{} tried", 2 * half);
        assert_eq!(
            a.page(&alice, None, 1000).await.unwrap().len(),
            MAX_PER_SCOPE
        );
    }

    /// A working task whose lease lapsed (its replica stopped renewing it) reads `failed`,
    /// saying so; one whose replica renews it stays working.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_task_whose_lease_lapsed_reads_failed_on_another_replica() {
        let Some(server) = crate::state::tests::RedisServer::start() else {
            return;
        };
        let (local_a, a, _local_b, b) = two_replicas(&server.url).await;
        let alice = ClientScope::new("alice");
        let (held, orphan) = (snapshot(&local_a, &alice), snapshot(&local_a, &alice));
        a.create(&alice, &held).await.unwrap();
        a.create(&alice, &orphan).await.unwrap();
        let _lease = a.hold_lease(&held.id);
        a.redis.delete(&lease_key(&orphan.id)).await.unwrap(); // as if LEASE had passed
        assert_eq!(b.get(&alice, &held.id).await.unwrap().state, State::Working);
        let State::Failed(error) = b.get(&alice, &orphan.id).await.unwrap().state else {
            panic!("the orphan still reads working");
        };
        let message = error["message"].as_str().unwrap();
        assert!(
            message.contains("replica that ran this task stopped"),
            "{error}"
        );
        a.finish(&orphan.id, State::Completed(json!({})))
            .await
            .unwrap();
        let after = a.get(&alice, &orphan.id).await.unwrap().state;
        assert!(matches!(after, State::Failed(_)), "ended once: {after:?}");
    }
}
