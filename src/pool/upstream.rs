//! One server in the pool: its long-lived session, shared by every concurrent request (the
//! session multiplexes requests by id), and what happens when it dies or sits idle.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use nix::sys::signal::Signal;
use serde_json::{json, Value};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::failure::{Failure, PoolError};
use super::{ServerState, ServerStatus, FIRST_BACKOFF, MAX_BACKOFF};
use crate::backoff::Backoff;
use crate::catalog;
use crate::config::{ServerEntry, ServerSpec};
use crate::mcp::{ConnectOptions, McpError, ServerInfo, Session, ToolList};

/// How long shutdown waits for in-flight requests to let go of a session before killing its
/// process group outright (they are cancelled, so this is normally a few milliseconds).
const RELEASE_WAIT: Duration = Duration::from_secs(2);

/// One server: its session and its health.
pub struct Upstream {
    name: String,
    entry: ServerEntry,
    always_on: bool,
    connect: ConnectOptions,
    on_session: Option<super::SessionHook>,
    slot: Mutex<Slot>,
    /// Held for the whole of a connect, so there is only one at a time.
    gate: Arc<tokio::sync::Mutex<()>>,
    /// Requests answered or failed, over every session.
    calls: AtomicU64,
    /// Cancelled by [`Pool::shutdown`](super::Pool::shutdown): connects and requests end.
    closing: CancellationToken,
    /// Told whenever the server's health changes.
    changes: Arc<watch::Sender<()>>,
    /// A stateless-revision upstream whose first connect failed: the server does not speak
    /// the revision (callers use its handshake upstream instead).
    refused: AtomicBool,
}

/// The mutable part, behind a short-lived lock (never held across an await).
struct Slot {
    session: Option<Arc<Session>>,
    connecting: bool,
    /// Sessions established so far; every one after a loss is a restart.
    sessions: u32,
    /// Sessions lost (the server exited, the connection broke); idle stops are not losses.
    losses: u32,
    /// The last session was lost (not stopped): the next one is a restart.
    was_lost: bool,
    last_error: Option<Failure>,
    /// The waits between failed connects.
    backoff: Backoff,
    /// No connect before this instant (`None`: connect on the next request).
    next_attempt: Option<Instant>,
    /// When the last request through the current session ended (or the session started).
    last_used: Instant,
}

impl Slot {
    /// Records a failure and schedules the next attempt; the backoff doubles.
    fn fail(&mut self, failure: Failure) {
        self.next_attempt = Some(Instant::now() + self.backoff.next_delay().0);
        self.last_error = Some(failure);
    }

    fn retry_at(&self) -> Option<SystemTime> {
        let at = self.next_attempt?;
        Some(SystemTime::now() + at.saturating_duration_since(Instant::now()))
    }
}

impl Upstream {
    pub(super) fn new(
        server: super::PoolServer,
        connect: ConnectOptions,
        on_session: Option<super::SessionHook>,
        closing: CancellationToken,
        changes: Arc<watch::Sender<()>>,
    ) -> Upstream {
        // A session handed over (from the preflight) counts as the first one.
        let adopted = server.session.map(Arc::new);
        let sessions = u32::from(adopted.is_some());
        if !connect.stateless {
            crate::observe::upstream_known(&server.entry.name, adopted.is_some());
        }
        Upstream {
            name: server.entry.name.clone(),
            entry: server.entry,
            always_on: server.always_on,
            connect,
            on_session,
            slot: Mutex::new(Slot {
                session: adopted,
                connecting: false,
                sessions,
                losses: 0,
                was_lost: false,
                last_error: None,
                backoff: Backoff::new(FIRST_BACKOFF, MAX_BACKOFF),
                next_attempt: None,
                last_used: Instant::now(),
            }),
            gate: Arc::new(tokio::sync::Mutex::new(())),
            calls: AtomicU64::new(0),
            closing,
            changes,
            refused: AtomicBool::new(false),
        }
    }

    /// Whether it speaks the stateless revision to its server (`Pool::stateless`).
    pub fn is_stateless(&self) -> bool {
        self.connect.stateless
    }

    /// Whether this stateless-revision upstream found that its server does not speak the
    /// revision (never true of a handshake upstream).
    pub fn refused(&self) -> bool {
        self.refused.load(Ordering::Relaxed)
    }

    /// The server's name in the config.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How to start or reach it.
    pub fn entry(&self) -> &ServerEntry {
        &self.entry
    }

    /// Whether the pool keeps it running (started at boot, restarted when it dies).
    pub fn always_on(&self) -> bool {
        self.always_on
    }

    /// Whether it is a remote (HTTP) server: stopping it only ends our session.
    pub fn is_remote(&self) -> bool {
        matches!(
            self.entry.spec,
            Ok(ServerSpec::Http { .. } | ServerSpec::Sse { .. })
        )
    }

    fn slot(&self) -> MutexGuard<'_, Slot> {
        // Every update leaves the slot consistent, so a panicked holder left nothing half-done.
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Lists the server's tools on its live session (connecting first when it is down).
    pub async fn list_tools(
        self: &Arc<Self>,
        timeout: Duration,
    ) -> Result<(ServerInfo, ToolList), PoolError> {
        let session = self.session().await?;
        let listed = tokio::select! {
            listed = session.list_tools(timeout) => listed,
            () = self.closing.cancelled() => return Err(PoolError::ShuttingDown),
        };
        self.used();
        match listed {
            Ok(list) => Ok((session.info().clone(), list)),
            Err(error) => Err(self.failed(&session, "tools/list", error)),
        }
    }

    /// Calls `tool` with `arguments` (see [`Upstream::request`]).
    pub async fn call(
        self: &Arc<Self>,
        tool: &str,
        arguments: Value,
        timeout: Duration,
    ) -> Result<Value, PoolError> {
        let params = json!({"name": tool, "arguments": arguments});
        let outcome = self.request("tools/call", params, timeout).await;
        outcome.map_err(|error| match error {
            PoolError::Timeout { server, after, .. } => PoolError::Timeout {
                server,
                what: tool.to_string(),
                after,
            },
            other => other,
        })
    }

    /// Sends `method` on the shared session, (re)connecting first when the server is down and
    /// its backoff has passed. A remote server that forgot our session (HTTP 404 after its
    /// restart) gets a new one and the request once more.
    pub async fn request(
        self: &Arc<Self>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, PoolError> {
        let session = self.session().await?;
        match self
            .send(&session, method, params.clone(), timeout, None)
            .await?
        {
            Err(McpError::Http { status: 404, .. }) => {
                tracing::info!(server = %self.name, "the server forgot our session; starting a new one");
                self.forget(&session);
                let session = self.session().await?;
                let outcome = self.send(&session, method, params, timeout, None).await?;
                outcome.map_err(|error| self.failed(&session, method, error))
            }
            outcome => outcome.map_err(|error| self.failed(&session, method, error)),
        }
    }

    /// Sends `method` on `session` (from [`Upstream::session`]; a caller that wants the
    /// session's notifications while the request runs subscribes first).
    pub async fn request_on(
        &self,
        session: &Arc<Session>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, PoolError> {
        let outcome = self.send(session, method, params, timeout, None).await?;
        outcome.map_err(|error| self.failed(session, method, error))
    }

    /// [`Upstream::request_on`] that ends when `cancel` fires, telling the server.
    pub async fn request_cancellable(
        &self,
        session: &Arc<Session>,
        method: &str,
        params: Value,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<Value, PoolError> {
        let outcome = self
            .send(session, method, params, timeout, Some(cancel))
            .await?;
        outcome.map_err(|error| self.failed(session, method, error))
    }

    /// The server's answer, or `Err` when the pool is closing.
    async fn send(
        &self,
        session: &Session,
        method: &str,
        params: Value,
        timeout: Duration,
        cancel: Option<&CancellationToken>,
    ) -> Result<Result<Value, McpError>, PoolError> {
        let never = CancellationToken::new();
        let cancel = cancel.unwrap_or(&never);
        let started = Instant::now();
        let mut params = params;
        let span = super::traced::span_of(&self.name, &self.entry, method, &mut params);
        let outcome = self
            .guarded(session.request_cancellable(method, Some(params), timeout, cancel))
            .instrument(span.clone())
            .await;
        if let Ok(outcome) = &outcome {
            super::traced::record(&span, outcome);
        }
        let is_ok = matches!(outcome, Ok(Ok(_)));
        crate::observe::upstream_request(&self.name, method, started.elapsed(), is_ok);
        outcome
    }

    /// Tells the metrics the session ended (the handshake-era upstream stands for the server).
    fn observe_stop(&self, why: crate::observe::Stop) {
        if !self.connect.stateless {
            crate::observe::upstream_stopped(&self.name, why);
        }
    }

    /// `outcome` of a request, counted, or `Err` when the pool closes first.
    pub(super) async fn guarded(
        &self,
        outcome: impl std::future::Future<Output = Result<Value, McpError>>,
    ) -> Result<Result<Value, McpError>, PoolError> {
        let outcome = tokio::select! {
            outcome = outcome => outcome,
            () = self.closing.cancelled() => return Err(PoolError::ShuttingDown),
        };
        self.used();
        Ok(outcome)
    }

    /// Counts a finished request and restarts the idle clock.
    fn used(&self) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.slot().last_used = Instant::now();
    }

    /// The error for a request that failed on `session`; a lost session marks the server down.
    pub(super) fn failed(
        &self,
        session: &Arc<Session>,
        method: &str,
        error: McpError,
    ) -> PoolError {
        match error {
            McpError::Timeout { after, .. } => PoolError::Timeout {
                server: self.name.clone(),
                what: method.to_string(),
                after,
            },
            lost if session_lost(&lost) => self.lose(session, &lost),
            other => PoolError::Upstream {
                server: self.name.clone(),
                error: other,
            },
        }
    }

    /// The live session, or a connect if the server is down and may be retried now. One
    /// connect at a time: concurrent callers wait for it and share its outcome.
    pub async fn session(self: &Arc<Self>) -> Result<Arc<Session>, PoolError> {
        if let Some(session) = self.ready()? {
            return Ok(session);
        }
        let gate = tokio::select! {
            gate = Arc::clone(&self.gate).lock_owned() => gate,
            () = self.closing.cancelled() => return Err(PoolError::ShuttingDown),
        };
        // Whoever held the gate before us may have connected, or failed and set a backoff.
        if let Some(session) = self.ready()? {
            return Ok(session);
        }
        // The connect runs in its own task: a caller that hangs up mid-connect does not abort
        // a slow first start (npx, uvx) that the next caller would have to redo.
        let upstream = Arc::clone(self);
        let connect = tokio::spawn(async move {
            let outcome = upstream.connect_now().await;
            drop(gate);
            outcome
        });
        connect.await.unwrap_or_else(|panicked| {
            tracing::error!(server = %self.name, error = %panicked, "the connect task failed");
            Err(PoolError::Upstream {
                server: self.name.clone(),
                error: McpError::Protocol("internal error while connecting".into()),
            })
        })
    }

    /// The live session, if there is one (nothing starts).
    pub fn current_session(&self) -> Option<Arc<Session>> {
        self.slot().session.clone()
    }

    /// The session if there is one; an error if the server is down and backing off.
    fn ready(&self) -> Result<Option<Arc<Session>>, PoolError> {
        if self.closing.is_cancelled() {
            return Err(PoolError::ShuttingDown);
        }
        let slot = self.slot();
        if let Some(session) = &slot.session {
            return Ok(Some(Arc::clone(session)));
        }
        match (slot.next_attempt, &slot.last_error) {
            (Some(at), Some(failure)) if at > Instant::now() => Err(PoolError::Unavailable {
                server: self.name.clone(),
                failure: Box::new(failure.clone()),
                retry_at: slot.retry_at(),
            }),
            _ => Ok(None),
        }
    }

    /// Connects (the caller holds the gate) and records the outcome.
    async fn connect_now(&self) -> Result<Arc<Session>, PoolError> {
        let started = Instant::now();
        self.slot().connecting = true;
        self.changes.send_replace(());
        let outcome = tokio::select! {
            outcome = catalog::connect(&self.entry, &self.connect) => outcome,
            () = self.closing.cancelled() => {
                self.slot().connecting = false;
                return Err(PoolError::ShuttingDown);
            }
        };
        // Told once the slot below is updated and its lock released.
        let _notify = Notify(&self.changes);
        let mut slot = self.slot();
        slot.connecting = false;
        match outcome {
            Ok(session) => {
                if let Some(hook) = &self.on_session {
                    hook(&self.name, &session);
                }
                let session = Arc::new(session);
                slot.session = Some(Arc::clone(&session));
                slot.sessions += 1;
                slot.backoff.reset();
                slot.next_attempt = None;
                slot.last_used = Instant::now();
                if slot.losses > 0 {
                    tracing::info!(server = %self.name, restarts = slot.losses, "server restarted");
                }
                if !self.connect.stateless {
                    crate::observe::upstream_started(&self.name, started.elapsed(), slot.was_lost);
                }
                slot.was_lost = false;
                Ok(session)
            }
            Err(problem) => {
                let failure = Failure::from_problem(&problem);
                if self.connect.stateless && slot.sessions == 0 {
                    // Most servers: not a fault, their clients are served in the handshake era.
                    tracing::info!(server = %self.name, "the server does not speak the stateless revision (2026-07-28): {}", failure.message);
                    self.refused.store(true, Ordering::Relaxed);
                } else {
                    tracing::warn!(server = %self.name, cause = failure.cause, incident = %failure.incident, stderr = %failure.stderr, "cannot connect: {}", failure.message);
                }
                slot.fail(failure.clone());
                Err(PoolError::Unavailable {
                    server: self.name.clone(),
                    failure: Box::new(failure),
                    retry_at: slot.retry_at(),
                })
            }
        }
    }

    /// Marks the server down after `lost` died under a request, unless a newer session
    /// already replaced it, and returns the error for that request.
    fn lose(&self, lost: &Arc<Session>, error: &McpError) -> PoolError {
        let failure = Failure::from_mcp(error);
        let mut slot = self.slot();
        let dead = take_if_current(&mut slot, lost);
        if dead.is_some() {
            tracing::warn!(server = %self.name, cause = failure.cause, incident = %failure.incident, stderr = %failure.stderr, "session lost: {}", failure.message);
            slot.losses += 1;
            slot.was_lost = true;
            slot.fail(failure.clone());
            self.observe_stop(crate::observe::Stop::Lost);
        }
        let retry_at = slot.retry_at();
        drop(slot);
        if dead.is_some() {
            self.changes.send_replace(());
        }
        // The last holder's drop kills what is left of the process group.
        drop(dead);
        PoolError::Unavailable {
            server: self.name.clone(),
            failure: Box::new(failure),
            retry_at,
        }
    }

    /// Drops `stale` without a backoff (a remote server forgot it; a new one is due at once).
    fn forget(&self, stale: &Arc<Session>) {
        let dead = take_if_current(&mut self.slot(), stale);
        if dead.is_some() {
            self.changes.send_replace(());
        }
    }

    /// Connects unless already up; `Err` carries the reason as one line plus stderr.
    pub async fn ensure_connected(self: &Arc<Self>) -> Result<(), String> {
        self.session().await.map(drop).map_err(|e| describe(&e))
    }

    /// Keeps an always-on server running until the pool closes: connects, waits for the
    /// session to end, and connects again after the backoff.
    pub(super) async fn keep_alive(self: Arc<Self>) {
        while !self.closing.is_cancelled() {
            let session = match self.session().await {
                Ok(session) => session,
                Err(PoolError::ShuttingDown) => return,
                Err(_) => {
                    self.wait_for_retry().await;
                    continue;
                }
            };
            tokio::select! {
                () = session.closed() => {
                    let error = session.close_error();
                    drop(self.lose(&session, &error));
                }
                () = self.closing.cancelled() => return,
            }
        }
    }

    /// Sleeps until the scheduled next attempt (or the pool closes).
    async fn wait_for_retry(&self) {
        let wait = self.slot().next_attempt.map_or(FIRST_BACKOFF, |at| {
            at.saturating_duration_since(Instant::now())
        });
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = self.closing.cancelled() => {}
        }
    }

    /// Stops the server now unless it is always on or a request holds it (after a check).
    pub async fn stop_unless_used(&self) -> bool {
        self.stop_if_idle(Duration::ZERO).await
    }

    /// Ends the session when nothing used it for `idle` and no request holds it; true when it
    /// did. Always-on servers are never stopped for idleness.
    pub(super) async fn stop_if_idle(&self, idle: Duration) -> bool {
        if self.always_on {
            return false;
        }
        let session = {
            let mut slot = self.slot();
            let idle_long = slot.last_used.elapsed() >= idle;
            let unheld = slot
                .session
                .as_ref()
                .is_some_and(|s| Arc::strong_count(s) == 1);
            if !(idle_long && unheld) {
                return false;
            }
            slot.session.take()
        };
        let Some(session) = session else {
            return false;
        };
        if self.is_remote() {
            tracing::info!(server = %self.name, idle_s = idle.as_secs(), "closing our session to the remote server after idling (the server itself keeps running)");
        } else {
            tracing::info!(server = %self.name, idle_s = idle.as_secs(), "stopping the idle server");
        }
        self.observe_stop(crate::observe::Stop::Idle);
        self.changes.send_replace(());
        match Arc::try_unwrap(session) {
            Ok(session) => session.close().await,
            // A request took it between the check and now; its drop ends the process group.
            Err(shared) => drop(shared),
        }
        true
    }

    /// The server's health for `status`.
    pub fn status(&self) -> ServerStatus {
        let slot = self.slot();
        let state = match (&slot.session, slot.connecting) {
            (Some(_), _) => ServerState::Up,
            (None, true) => ServerState::Restarting,
            (None, false) => ServerState::Down,
        };
        ServerStatus {
            name: self.name.clone(),
            state,
            restarts: slot.losses.min(slot.sessions.saturating_sub(1)),
            last_error: slot.last_error.as_ref().map(|f| f.message.clone()),
            next_attempt: slot
                .next_attempt
                .filter(|_| slot.session.is_none())
                .map(|at| at.saturating_duration_since(Instant::now())),
            pgid: slot.session.as_ref().and_then(|s| s.pgid()),
            calls: self.calls.load(Ordering::Relaxed),
            idle_for: slot.session.as_ref().map(|_| slot.last_used.elapsed()),
            always_on: self.always_on,
        }
    }

    /// Ends the session for good (the pool's `closing` token is already cancelled, so no
    /// connect starts and in-flight requests let go): TERM, grace, KILL to the process group.
    pub(super) async fn close(&self) {
        let _gate = self.gate.lock().await;
        let Some(session) = self.slot().session.take() else {
            return;
        };
        self.observe_stop(crate::observe::Stop::Shutdown);
        self.changes.send_replace(());
        let pgid = session.pgid();
        match release(session).await {
            Ok(session) => session.close().await,
            Err(still_shared) => {
                tracing::warn!(server = %self.name, "a request still holds the session; killing its process group");
                if let Some(pgid) = pgid {
                    crate::process::signal_group(pgid, Signal::SIGKILL);
                }
                drop(still_shared);
            }
        }
    }
}

/// Takes the slot's session when it is still `session` (not already replaced).
fn take_if_current(slot: &mut Slot, session: &Arc<Session>) -> Option<Arc<Session>> {
    match &slot.session {
        Some(current) if Arc::ptr_eq(current, session) => slot.session.take(),
        _ => None,
    }
}

/// A pool error as one line for a warning (the stderr tail, when there is one, follows it).
pub fn describe(error: &PoolError) -> String {
    match error {
        PoolError::Unavailable { failure, .. } => failure.with_stderr(),
        other => other.to_string(),
    }
}

/// Tells the watchers of a server's health when dropped (after the slot's lock, taken later,
/// is released: locals drop in reverse order).
struct Notify<'a>(&'a watch::Sender<()>);

impl Drop for Notify<'_> {
    fn drop(&mut self) {
        self.0.send_replace(());
    }
}

/// Whether the error means the session is gone for every later request too. A Streamable
/// HTTP 404 means the server forgot our session id; a new session is needed.
fn session_lost(error: &McpError) -> bool {
    matches!(
        error,
        McpError::Exited { .. }
            | McpError::Closed { .. }
            | McpError::Connect { .. }
            | McpError::Http { status: 404, .. }
    )
}

/// The session once no request holds it any more, or back after [`RELEASE_WAIT`].
async fn release(mut session: Arc<Session>) -> Result<Session, Arc<Session>> {
    let deadline = Instant::now() + RELEASE_WAIT;
    loop {
        match Arc::try_unwrap(session) {
            Ok(owned) => return Ok(owned),
            Err(shared) if Instant::now() >= deadline => return Err(shared),
            Err(shared) => session = shared,
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
