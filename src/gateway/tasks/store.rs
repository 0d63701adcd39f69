//! The gateway's tasks, one store for both eras: each task belongs to the client scope that
//! made it (never visible to another), lives its time-to-live, and ends once — a cancel, a
//! result or a protocol error, whichever comes first.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::outputs::ClientScope;

/// Tasks one client scope holds at once (expired ones are gone; at the cap, a new task
/// replaces the oldest ended one, and is refused while all are working).
pub const MAX_PER_SCOPE: usize = 64;
/// How long a task lives when its client names no time-to-live.
pub const DEFAULT_TTL: Duration = Duration::from_secs(10 * 60);
/// The longest time-to-live a client gets (a longer request is shortened).
pub const MAX_TTL: Duration = Duration::from_secs(60 * 60);
/// How often clients are told to poll.
pub const POLL_INTERVAL: Duration = Duration::from_millis(500);

/// Where a task stands.
#[derive(Debug, Clone, PartialEq)]
pub enum State {
    /// Its call is under way.
    Working,
    /// The tool answered (a tool error too: `isError` in the result).
    Completed(Value),
    /// The call ended in a protocol error (`code`, `message`, `data`).
    Failed(Value),
    /// Its client cancelled it.
    Cancelled,
}

impl State {
    /// Whether the task has ended.
    pub fn is_terminal(&self) -> bool {
        !matches!(self, State::Working)
    }

    /// The status's name on the wire (both eras).
    pub fn name(&self) -> &'static str {
        match self {
            State::Working => "working",
            State::Completed(_) => "completed",
            State::Failed(_) => "failed",
            State::Cancelled => "cancelled",
        }
    }
}

/// What a client sees of a task.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Its id (unguessable).
    pub id: String,
    /// Where it stands.
    pub state: State,
    /// When it was made.
    pub created: SystemTime,
    /// When its state last changed.
    pub updated: SystemTime,
    /// How long it lives from `created`.
    pub ttl: Duration,
}

struct Entry {
    scope: ClientScope,
    snapshot: Snapshot,
    /// Ends the task's call.
    cancel: CancellationToken,
    /// Fires once the task has ended (or is gone).
    ended: CancellationToken,
}

impl Entry {
    fn expired(&self, now: SystemTime) -> bool {
        let end = self.snapshot.created + self.snapshot.ttl;
        now > end
    }
}

/// Why a task request was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TaskError {
    /// No task of this client has that id (never made, expired, or another client's).
    #[error("unknown task `{0}`")]
    Unknown(String),
    /// The client holds [`MAX_PER_SCOPE`] live tasks already.
    #[error("too many tasks under way for this client ({MAX_PER_SCOPE})")]
    TooMany,
    /// The shared state store (`--state`) that keeps the tasks did not answer.
    #[error("{0}")]
    Unreachable(String),
}

impl crate::error::Actionable for TaskError {
    fn kind(&self) -> &'static str {
        match self {
            TaskError::Unknown(_) => "unknown_task",
            TaskError::TooMany => "too_many_tasks",
            TaskError::Unreachable(_) => "state_unreachable",
        }
    }

    fn help(&self) -> String {
        match self {
            TaskError::Unknown(_) => {
                "tasks are seen only by the client that made them, until their ttl ends: \
                 call the tool again for a new one"
                    .into()
            }
            TaskError::TooMany => format!(
                "wait for a task to end or cancel one (tasks/cancel); each client may hold \
                 {MAX_PER_SCOPE} at once"
            ),
            TaskError::Unreachable(_) => {
                "the gateway's replicas keep tasks in Redis (--state), which did not answer: \
                 ask again once its /readyz says 200"
                    .into()
            }
        }
    }
}

/// Every task of the gateway.
#[derive(Default)]
pub struct Store {
    entries: Mutex<HashMap<String, Entry>>,
}

/// A task just made: what its call needs.
pub struct Made {
    /// What the client is told.
    pub snapshot: Snapshot,
    /// Cancelled when the client cancels the task (or it expires).
    pub cancel: CancellationToken,
}

impl Store {
    fn with<T>(&self, f: impl FnOnce(&mut HashMap<String, Entry>) -> T) -> T {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let now = SystemTime::now();
        entries.retain(|_, entry| {
            let keep = !entry.expired(now);
            if !keep {
                entry.cancel.cancel();
                entry.ended.cancel();
            }
            keep
        });
        f(&mut entries)
    }

    /// A new working task of `scope`, living `ttl` (the default when `None`, at most
    /// [`MAX_TTL`]).
    pub fn create(&self, scope: &ClientScope, ttl: Option<Duration>) -> Result<Made, TaskError> {
        let ttl = ttl.unwrap_or(DEFAULT_TTL).min(MAX_TTL);
        self.with(|entries| {
            make_room(entries, scope)?;
            let now = SystemTime::now();
            let snapshot = Snapshot {
                id: crate::auth::generate_key(),
                state: State::Working,
                created: now,
                updated: now,
                ttl,
            };
            let cancel = CancellationToken::new();
            entries.insert(
                snapshot.id.clone(),
                Entry {
                    scope: scope.clone(),
                    snapshot: snapshot.clone(),
                    cancel: cancel.clone(),
                    ended: CancellationToken::new(),
                },
            );
            Ok(Made { snapshot, cancel })
        })
    }

    /// The task `id` of `scope`.
    pub fn get(&self, scope: &ClientScope, id: &str) -> Result<Snapshot, TaskError> {
        self.with(|entries| Ok(own(entries, scope, id)?.snapshot.clone()))
    }

    /// The task `id` of `scope`, and what fires once it has ended (or expired).
    pub fn watch(
        &self,
        scope: &ClientScope,
        id: &str,
    ) -> Result<(Snapshot, CancellationToken), TaskError> {
        self.with(|entries| {
            let entry = own(entries, scope, id)?;
            Ok((entry.snapshot.clone(), entry.ended.clone()))
        })
    }

    /// The live tasks of `scope`, oldest first (ties by id): a page of at most `limit` after
    /// the task `after` names (from the start when `None`); an `after` no task of `scope` has
    /// is unknown.
    pub fn page(
        &self,
        scope: &ClientScope,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Snapshot>, TaskError> {
        self.with(|entries| {
            let own = entries.values().filter(|e| &e.scope == scope);
            page_of(own.map(|e| e.snapshot.clone()).collect(), after, limit)
        })
    }

    /// Cancels the task `id` of `scope` (its call ends); a task already ended stays as it is.
    pub fn cancel(&self, scope: &ClientScope, id: &str) -> Result<Snapshot, TaskError> {
        self.with(|entries| {
            let entry = own_mut(entries, scope, id)?;
            if !entry.snapshot.state.is_terminal() {
                entry.cancel.cancel();
                end(entry, State::Cancelled);
            }
            Ok(entry.snapshot.clone())
        })
    }

    /// Ends the call of the task `id` whatever its scope: its client cancelled it through
    /// another replica, which checked the scope (the news names only the id).
    pub fn cancel_relayed(&self, id: &str) {
        self.with(|entries| {
            if let Some(entry) = entries.get_mut(id) {
                if !entry.snapshot.state.is_terminal() {
                    entry.cancel.cancel();
                    end(entry, State::Cancelled);
                }
            }
        });
    }

    /// Forgets the task `id` (its shared record could not be made), ending its call.
    pub fn forget(&self, id: &str) {
        self.with(|entries| {
            if let Some(entry) = entries.remove(id) {
                entry.cancel.cancel();
                entry.ended.cancel();
            }
        });
    }

    /// Records how the task `id` ended, unless it already has (a cancel came first).
    pub fn finish(&self, id: &str, state: State) {
        self.with(|entries| {
            if let Some(entry) = entries.get_mut(id) {
                if !entry.snapshot.state.is_terminal() {
                    end(entry, state);
                }
            }
        });
    }
}

/// A page of `own` (one scope's live tasks), oldest first (ties by id): at most `limit` after
/// the task `after` names (from the start when `None`); an `after` not among them is unknown.
pub fn page_of(
    mut own: Vec<Snapshot>,
    after: Option<&str>,
    limit: usize,
) -> Result<Vec<Snapshot>, TaskError> {
    own.sort_by(|a, b| (a.created, &a.id).cmp(&(b.created, &b.id)));
    let start = match after {
        None => 0,
        Some(after) => {
            let at = own.iter().position(|t| t.id == after);
            at.ok_or_else(|| TaskError::Unknown(after.to_string()))? + 1
        }
    };
    Ok(own.into_iter().skip(start).take(limit).collect())
}

/// Room for one more task of `scope`: at [`MAX_PER_SCOPE`] its oldest ended task goes (its
/// result unread, or read); refused when every one is still working.
fn make_room(entries: &mut HashMap<String, Entry>, scope: &ClientScope) -> Result<(), TaskError> {
    let own = || entries.values().filter(|e| &e.scope == scope);
    if own().count() < MAX_PER_SCOPE {
        return Ok(());
    }
    let oldest_ended = own()
        .filter(|e| e.snapshot.state.is_terminal())
        .min_by_key(|e| e.snapshot.updated)
        .map(|e| e.snapshot.id.clone())
        .ok_or(TaskError::TooMany)?;
    entries.remove(&oldest_ended);
    Ok(())
}

fn end(entry: &mut Entry, state: State) {
    entry.snapshot.state = state;
    entry.snapshot.updated = SystemTime::now();
    entry.ended.cancel();
}

fn own<'a>(
    entries: &'a HashMap<String, Entry>,
    scope: &ClientScope,
    id: &str,
) -> Result<&'a Entry, TaskError> {
    entries
        .get(id)
        .filter(|e| &e.scope == scope)
        .ok_or_else(|| TaskError::Unknown(id.to_string()))
}

fn own_mut<'a>(
    entries: &'a mut HashMap<String, Entry>,
    scope: &ClientScope,
    id: &str,
) -> Result<&'a mut Entry, TaskError> {
    entries
        .get_mut(id)
        .filter(|e| &e.scope == scope)
        .ok_or_else(|| TaskError::Unknown(id.to_string()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn scope(name: &str) -> ClientScope {
        ClientScope::new(name)
    }

    #[test]
    fn a_task_is_seen_only_in_its_own_scope() {
        let store = Store::default();
        let made = store.create(&scope("a"), None).expect("made");
        let id = made.snapshot.id.clone();
        assert!(id.len() >= 32, "ids are unguessable: {id}");
        assert_eq!(store.get(&scope("a"), &id).expect("own").id, id);
        assert_eq!(
            store.get(&scope("b"), &id).unwrap_err(),
            TaskError::Unknown(id.clone())
        );
        assert!(store.cancel(&scope("b"), &id).is_err());
        assert!(
            !made.cancel.is_cancelled(),
            "another scope cannot cancel it"
        );
    }

    #[test]
    fn a_cancel_ends_the_call_and_wins_over_a_late_result() {
        let store = Store::default();
        let made = store.create(&scope("a"), None).expect("made");
        let id = made.snapshot.id.clone();
        store.cancel(&scope("a"), &id).expect("cancelled");
        assert!(made.cancel.is_cancelled());
        store.finish(&id, State::Completed(json!({"content": []})));
        assert_eq!(store.get(&scope("a"), &id).unwrap().state, State::Cancelled);
        // Cancelling an ended task changes nothing.
        assert_eq!(
            store.cancel(&scope("a"), &id).unwrap().state,
            State::Cancelled
        );
    }

    #[test]
    fn a_scope_holds_a_bounded_number_of_tasks_the_oldest_ended_making_room() {
        let store = Store::default();
        let ids: Vec<String> = (0..MAX_PER_SCOPE)
            .map(|_| store.create(&scope("a"), None).expect("made").snapshot.id)
            .collect();
        assert_eq!(
            store.create(&scope("a"), None).err(),
            Some(TaskError::TooMany)
        );
        assert!(
            store.create(&scope("b"), None).is_ok(),
            "others are not held up"
        );
        store.finish(&ids[1], State::Completed(json!({})));
        std::thread::sleep(Duration::from_millis(2));
        store.finish(&ids[0], State::Completed(json!({})));
        let newer = store
            .create(&scope("a"), None)
            .expect("the oldest ended task makes room");
        assert_eq!(
            store.get(&scope("a"), &ids[1]).unwrap_err(),
            TaskError::Unknown(ids[1].clone()),
            "the oldest ended task went"
        );
        assert!(
            store.get(&scope("a"), &ids[0]).is_ok(),
            "a newer ended task stays"
        );
        assert!(store.get(&scope("a"), &newer.snapshot.id).is_ok());
        assert_eq!(
            store.create(&scope("a"), None).err(),
            None,
            "the other ended task makes room too"
        );
        assert_eq!(
            store.create(&scope("a"), None).err(),
            Some(TaskError::TooMany),
            "all working: refused"
        );
    }

    #[test]
    fn a_scope_pages_through_its_own_tasks_only_and_hears_when_one_ends() {
        let store = Store::default();
        let ids: Vec<String> = (0..5)
            .map(|_| {
                std::thread::sleep(Duration::from_millis(2));
                store.create(&scope("a"), None).expect("made").snapshot.id
            })
            .collect();
        store.create(&scope("b"), None).expect("made");
        let first = store.page(&scope("a"), None, 2).expect("page");
        let seen: Vec<&str> = first.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(seen, [ids[0].as_str(), ids[1].as_str()]);
        let rest = store.page(&scope("a"), Some(&ids[1]), 10).expect("page");
        assert_eq!(rest.len(), 3);
        assert!(store.page(&scope("b"), Some(&ids[1]), 10).is_err());
        let (_, ended) = store.watch(&scope("a"), &ids[4]).expect("own");
        assert!(!ended.is_cancelled());
        store.finish(&ids[4], State::Completed(json!({})));
        assert!(ended.is_cancelled(), "its end is heard");
    }

    #[test]
    fn an_expired_task_is_gone_and_its_call_ended() {
        let store = Store::default();
        let made = store
            .create(&scope("a"), Some(Duration::from_millis(1)))
            .expect("made");
        std::thread::sleep(Duration::from_millis(5));
        let id = made.snapshot.id;
        assert_eq!(
            store.get(&scope("a"), &id).unwrap_err(),
            TaskError::Unknown(id)
        );
        assert!(made.cancel.is_cancelled());
    }
}
