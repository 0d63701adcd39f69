//! The sessions of `serve --http` (the 2025 era's `Mcp-Session-Id`): rmcp's
//! [`LocalSessionManager`] with bounds. A flood of `initialize`s once held 12,000 sessions
//! (803 MB) for rmcp's 300 s each; now:
//! - at most [`SessionLimits::max_sessions`] in all and [`SessionLimits::max_per_key`] per key
//!   (the key a client presented; keyless clients count as one key). Past a cap, a session
//!   goes to make room: first one that has asked nothing since its handshake (a flood's), then
//!   the one idle longest; one with a request or stream open only when every other is busy;
//! - a session ends after [`SessionLimits::idle`] without a message and without a call in
//!   flight ([`Sessions::spawn_reaper`]; rmcp's own keep-alive counted only messages, so a call
//!   longer than the idle time lost its answer: the session ended under it);
//! - the maps shrink after a wave, so the memory goes back to the allocator.
//!
//! Every end of a session (DELETE, idle, evicted) passes through [`Sessions::close_session`],
//! and a session id is trusted as a scope only while rmcp routes requests into it (the
//! handler's `scope_of`): a closed session's handles can no longer be read.
//!
//! Across replicas (`serve --http --state redis://…`): each session's handshake — the
//! client's `initialize` parameters, all a session of ours holds that a replica cannot rebuild
//! — is kept in Redis by rmcp's session store ([`SessionRecords`], `mcp-launch:session:<the
//! id's SHA-256>`, expiring after [`SessionLimits::idle`] without a message). A request naming
//! a session this replica does not hold is restored from it (rmcp replays the handshake into a
//! fresh local session), so a client's session goes on through any replica. The record's
//! expiry is pushed back at most every quarter of the idle time, not on every message.
//! A client's DELETE, whatever replica it reaches, ends the session everywhere
//! ([`Sessions::end_everywhere`]): the record goes, and the news (the id's hash, on channel
//! `mcp-launch:session-ended`) makes every replica close the copy it holds, with its
//! upstream state; an idle or evicted copy ends on its own replica only.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures_util::future::Either;
use futures_util::{Stream, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, GetExtensions, ServerJsonRpcMessage};
use rmcp::transport::common::server_side_http::{ServerSseMessage, SessionId};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    RestoreOutcome, SessionState, SessionStore, SessionStoreError,
};
use rmcp::transport::streamable_http_server::SessionManager;
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use super::resume::{lost, Resume, StreamTags};
use crate::state::{Redis, StateError};

/// The channel on which a replica tells the others that a client ended a session.
const ENDED: &str = "session-ended";

/// Sessions kept at once, in all: ~80 KB each, so ~20 MB at most.
pub const MAX_SESSIONS: usize = 256;
/// Sessions kept at once per key (with one key, the binding cap).
pub const MAX_SESSIONS_PER_KEY: usize = 128;
/// How long a session may stay silent before it ends (rmcp's default is 300 s; an agent's
/// client speaks far more often, and one that was away initializes again).
pub const SESSION_IDLE: Duration = Duration::from_secs(120);

/// The bounds of the HTTP sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// See [`MAX_SESSIONS`].
    pub max_sessions: usize,
    /// See [`MAX_SESSIONS_PER_KEY`].
    pub max_per_key: usize,
    /// See [`SESSION_IDLE`].
    pub idle: Duration,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            max_sessions: MAX_SESSIONS,
            max_per_key: MAX_SESSIONS_PER_KEY,
            idle: SESSION_IDLE,
        }
    }
}

/// rmcp's sessions, bounded.
pub struct Sessions {
    inner: LocalSessionManager,
    limits: SessionLimits,
    book: Mutex<HashMap<SessionId, Entry>>,
    /// The handshakes kept for other replicas, with `--state`.
    records: Option<Arc<SessionRecords>>,
    /// This process's mark on its streams' event ids.
    tags: StreamTags,
}

/// What eviction needs to know of a session.
struct Entry {
    /// Who opened it (the key presented, or empty).
    owner: Arc<str>,
    /// When it last heard from its client.
    used: Instant,
    /// Whether it has asked anything since its handshake.
    asked: bool,
    /// Its request and GET streams open now.
    open: Arc<AtomicUsize>,
    /// Its request streams open now (calls waiting for their answer).
    calls: Arc<AtomicUsize>,
    /// When its shared record's expiry was last pushed back.
    kept: Instant,
}

impl Entry {
    /// The order of eviction: never-asked before asked, idle before busy, oldest first.
    fn rank(&self) -> (bool, bool, Instant) {
        (self.asked, self.open.load(Ordering::Relaxed) > 0, self.used)
    }
}

impl Sessions {
    /// Sessions under `limits`.
    pub fn new(limits: SessionLimits) -> Sessions {
        let mut inner = LocalSessionManager::default();
        // Idle sessions are ended by the reaper, which knows of calls in flight.
        inner.session_config.keep_alive = None;
        let records = crate::state::shared().map(|shared| {
            Arc::new(SessionRecords {
                shared,
                ttl: limits.idle,
            })
        });
        Sessions {
            inner,
            limits,
            book: Mutex::default(),
            records,
            tags: StreamTags::default(),
        }
    }

    /// The store of handshakes rmcp restores sessions from, with `--state`.
    pub fn records(&self) -> Option<Arc<dyn SessionStore>> {
        let records = Arc::clone(self.records.as_ref()?);
        Some(records)
    }

    /// Listens (with `--state`) for sessions ended on other replicas, closing the copies held
    /// here; stops once `sessions` is dropped.
    pub fn spawn_listener(sessions: &Arc<Sessions>) {
        let Some(records) = &sessions.records else {
            return;
        };
        let weak = Arc::downgrade(sessions);
        records.shared.spawn_listener(ENDED, move |news| {
            let Some(sessions) = weak.upgrade() else {
                return false;
            };
            let digest = String::from_utf8_lossy(news).into_owned();
            tokio::spawn(async move { sessions.close_digest(&digest).await });
            true
        });
    }

    /// Ends session `id` on every replica (with `--state`): its record goes and the replicas
    /// holding a copy close it. Whether the store knew it (false without `--state`).
    pub async fn end_everywhere(&self, id: &str) -> Result<bool, StateError> {
        let Some(records) = &self.records else {
            return Ok(false);
        };
        let key = SessionRecords::key(id);
        let known = records.shared.get(&key).await?.is_some();
        records.shared.delete(&key).await?;
        records.shared.publish(ENDED, digest(id).as_bytes()).await?;
        Ok(known)
    }

    /// Closes the sessions held here whose id hashes to `wanted`.
    async fn close_digest(&self, wanted: &str) {
        let ids: Vec<SessionId> = self
            .inner
            .sessions
            .read()
            .await
            .keys()
            .filter(|id| digest(id) == wanted)
            .cloned()
            .collect();
        for id in ids {
            tracing::info!(session = %id, "HTTP session ended by its client on another replica");
            let _ = self.close_session(&id).await;
        }
    }

    fn book(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Entry>> {
        self.book.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records session `id` of `owner`, and picks the sessions that must go to keep the caps.
    fn admit(&self, id: &SessionId, owner: Arc<str>) -> Vec<SessionId> {
        let mut book = self.book();
        let entry = Entry {
            owner: Arc::clone(&owner),
            used: Instant::now(),
            asked: false,
            open: Arc::default(),
            calls: Arc::default(),
            kept: Instant::now(),
        };
        book.insert(id.clone(), entry);
        let mut evicted = Vec::new();
        while let Some(victim) = victim(&book, id, &owner, &self.limits) {
            book.remove(&victim);
            evicted.push(victim);
        }
        crate::observe::sessions_changed(book.len());
        evicted
    }

    /// Notes a message from session `id`'s client (`asked`: a request); the counters of its
    /// open streams and calls.
    fn touch(&self, id: &SessionId, asked: bool) -> Option<(Arc<AtomicUsize>, Arc<AtomicUsize>)> {
        let mut book = self.book();
        let entry = book.get_mut(id)?;
        entry.used = Instant::now();
        entry.asked |= asked;
        if let Some(records) = &self.records {
            if entry.kept.elapsed() >= records.ttl / 4 {
                entry.kept = entry.used;
                records.spawn_keep(id);
            }
        }
        Some((Arc::clone(&entry.open), Arc::clone(&entry.calls)))
    }

    /// Ends, every quarter of the idle time, the sessions idle for longer than it: no message
    /// from their client and no call in flight (a call in flight keeps its session in use).
    /// Stops with `stop`, or when the sessions are gone.
    pub fn spawn_reaper(self: &Arc<Self>, stop: CancellationToken) {
        let sessions = Arc::downgrade(self);
        let every = (self.limits.idle / 4).max(Duration::from_millis(100));
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = tokio::time::sleep(every) => {}
                    () = stop.cancelled() => return,
                }
                let Some(sessions) = sessions.upgrade() else {
                    return;
                };
                for id in sessions.idle() {
                    tracing::info!(session = %id, "HTTP session ended: idle");
                    let _ = SessionManager::close_session(&*sessions, &id).await;
                }
            }
        });
    }

    /// The sessions idle for longer than the idle time; one with a call in flight counts as
    /// used now.
    fn idle(&self) -> Vec<SessionId> {
        let mut book = self.book();
        let now = Instant::now();
        let mut idle = Vec::new();
        for (id, entry) in book.iter_mut() {
            if entry.calls.load(Ordering::Relaxed) > 0 {
                entry.used = now;
            } else if now.duration_since(entry.used) >= self.limits.idle {
                idle.push(id.clone());
            }
        }
        idle
    }

    /// Forgets `id`, and gives the maps' room back once they are mostly empty.
    async fn forget(&self, id: &SessionId) {
        {
            let mut book = self.book();
            book.remove(id);
            crate::observe::sessions_changed(book.len());
            shrink(&mut book);
        }
        shrink(&mut *self.inner.sessions.write().await);
    }
}

/// What stands for session `id` in the store and in the news: half its SHA-256, in hex (the
/// id is a client's credential for its handles: it is never written).
fn digest(id: &str) -> String {
    let digest = Sha256::digest(id.as_bytes());
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// The session to evict for the caps, if one must go (never `new`, the one just admitted).
fn victim(
    book: &HashMap<SessionId, Entry>,
    new: &SessionId,
    owner: &Arc<str>,
    limits: &SessionLimits,
) -> Option<SessionId> {
    let mine = book.values().filter(|e| e.owner == *owner).count();
    let of_owner = mine > limits.max_per_key.max(1);
    if !of_owner && book.len() <= limits.max_sessions.max(1) {
        return None;
    }
    book.iter()
        .filter(|(id, entry)| *id != new && (!of_owner || entry.owner == *owner))
        .min_by_key(|(_, entry)| entry.rank())
        .map(|(id, _)| id.clone())
}

/// A map mostly empty after a wave is reallocated at its size.
fn shrink<V>(map: &mut HashMap<SessionId, V>) {
    if map.capacity() > 64 && map.len() < map.capacity() / 4 {
        map.shrink_to_fit();
    }
}

/// The key a message's HTTP request presented (empty without one).
fn owner_of(message: &ClientJsonRpcMessage) -> Arc<str> {
    let ClientJsonRpcMessage::Request(request) = message else {
        return Arc::from("");
    };
    let parts = request
        .request
        .extensions()
        .get::<axum::http::request::Parts>();
    let key = parts
        .and_then(|parts| parts.headers.get(axum::http::header::AUTHORIZATION))
        .and_then(|value| value.to_str().ok());
    Arc::from(key.unwrap_or_default())
}

/// `stream`, counted in each of `counters` while it lives.
fn counted<S: Stream<Item = ServerSseMessage> + Send + Sync + 'static>(
    stream: S,
    counters: Vec<Arc<AtomicUsize>>,
) -> impl Stream<Item = ServerSseMessage> + Send + Sync + 'static {
    let guard: Vec<OpenStream> = counters.into_iter().map(OpenStream::new).collect();
    stream.map(move |message| {
        let _alive = &guard;
        message
    })
}

/// One open stream of a session, counted until dropped.
struct OpenStream(Arc<AtomicUsize>);

impl OpenStream {
    fn new(open: Arc<AtomicUsize>) -> OpenStream {
        open.fetch_add(1, Ordering::Relaxed);
        OpenStream(open)
    }
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl SessionManager for Sessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.inner.create_session().await
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        for old in self.admit(id, owner_of(&message)) {
            tracing::info!(session = %old, "HTTP session evicted: over the session cap");
            let _ = self.inner.close_session(&old).await;
        }
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let closed = self.inner.close_session(id).await;
        self.forget(id).await;
        closed
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let counters = self.touch(id, true).map(|(open, calls)| vec![open, calls]);
        let request = match &message {
            ClientJsonRpcMessage::Request(request) => Some(request.id.clone()),
            _ => None,
        };
        let stream = self.inner.create_stream(id, message).await?;
        Ok(counted(
            self.tags.mark(stream, request),
            counters.unwrap_or_default(),
        ))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.touch(id, false);
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let open = self.touch(id, false).map(|(open, _)| vec![open]);
        let stream = self.inner.create_standalone_stream(id).await?;
        Ok(counted(
            self.tags.mark(stream, None),
            open.unwrap_or_default(),
        ))
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        // rmcp then replays the handshake through `initialize_session`, which admits it.
        self.inner.restore_session(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let open = self
            .touch(id, false)
            .map(|(open, _)| vec![open])
            .unwrap_or_default();
        let (found, request) = match self.tags.read(&last_event_id) {
            Resume::Untagged(inner) => (self.inner.resume(id, inner).await.map(Either::Left), None),
            Resume::Here { inner, request } => {
                let found = self.inner.resume(id, inner).await.map(Either::Left);
                (found, request)
            }
            Resume::Elsewhere {
                request: Some(request),
            } => {
                tracing::info!(session = %id, "a stream written by another gateway process cannot be resumed here: its request is answered with an error");
                return Ok(counted(lost(request).right_stream(), open));
            }
            // The session's standalone stream, held by another process: open this one's.
            Resume::Elsewhere { request: None } => {
                let fresh = self.inner.create_standalone_stream(id).await;
                (fresh.map(Either::Right), None)
            }
        };
        match (found, request) {
            (Ok(stream), request) => {
                Ok(counted(self.tags.mark(stream, request).left_stream(), open))
            }
            // rmcp no longer holds the stream (its request long done, or the session restored
            // here): an empty stream would have the client reconnect to it forever.
            (Err(error), Some(request)) => {
                tracing::info!(session = %id, %error, "a stream cannot be resumed: its request is answered with an error");
                Ok(counted(lost(request).right_stream(), open))
            }
            (Err(error), None) => Err(error),
        }
    }
}

/// The handshakes of the sessions, in the shared state store: what a replica needs to take a
/// session over.
pub struct SessionRecords {
    shared: Arc<Redis>,
    /// How long a record outlives its session's last message (the session idle time).
    ttl: Duration,
}

impl SessionRecords {
    /// The record's key: the id is a client's credential for its handles, so only its hash
    /// is ever written.
    fn key(id: &str) -> String {
        Redis::key("session", &digest(id))
    }

    /// Pushes back the expiry of `id`'s record, in the background (a message never waits).
    fn spawn_keep(&self, id: &SessionId) {
        let (shared, key, ttl) = (Arc::clone(&self.shared), Self::key(id), self.ttl);
        tokio::spawn(async move {
            if let Err(e) = shared.expire(&key, ttl).await {
                tracing::debug!(error = %e, "a session's record was not kept");
            }
        });
    }
}

#[async_trait::async_trait]
impl SessionStore for SessionRecords {
    async fn load(&self, id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let Some(bytes) = self.shared.get(&Self::key(id)).await? else {
            return Ok(None);
        };
        Ok(Some(serde_json::from_slice(&bytes)?))
    }

    async fn store(&self, id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let bytes = serde_json::to_vec(state)?;
        let key = Self::key(id);
        Ok(self.shared.put(&key, &bytes, Some(self.ttl), false).await?)
    }

    async fn delete(&self, id: &str) -> Result<(), SessionStoreError> {
        Ok(self.shared.delete(&Self::key(id)).await?)
    }
}

#[cfg(test)]
mod tests;
