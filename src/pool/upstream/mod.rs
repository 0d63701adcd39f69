//! One server in the pool: its long-lived session, shared by every concurrent request (the
//! session multiplexes requests by id), and what happens when it dies or sits idle.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

mod life;

use super::failure::{Failure, PoolError};
use super::{ServerState, ServerStatus, FIRST_BACKOFF, MAX_BACKOFF};
use crate::backoff::Backoff;
use crate::config::{ServerEntry, ServerSpec};
use crate::mcp::{ConnectOptions, McpError, ServerInfo, ServerRequestHandler, Session, ToolList};

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

/// How one request is sent: how long it may take, what cancels it, who answers the server's
/// requests about it (`None`: the session's handler).
struct Sending<'a> {
    timeout: Duration,
    cancel: Option<&'a CancellationToken>,
    answerer: Option<ServerRequestHandler>,
}

impl Sending<'_> {
    /// Within `timeout`, nothing else.
    fn plain(timeout: Duration) -> Self {
        Sending {
            timeout,
            cancel: None,
            answerer: None,
        }
    }
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
            .send(&session, method, params.clone(), Sending::plain(timeout))
            .await?
        {
            Err(McpError::Http { status: 404, .. }) => {
                tracing::info!(server = %self.name, "the server forgot our session; starting a new one");
                self.forget(&session);
                let session = self.session().await?;
                let outcome = self
                    .send(&session, method, params, Sending::plain(timeout))
                    .await?;
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
        let outcome = self
            .send(session, method, params, Sending::plain(timeout))
            .await?;
        outcome.map_err(|error| self.failed(session, method, error))
    }

    /// [`Upstream::request_on`] that ends when `cancel` fires, telling the server; the
    /// server's requests about it answered by `answerer` when one is given (see
    /// [`Session::request_answered_by`]).
    pub async fn request_cancellable(
        &self,
        session: &Arc<Session>,
        method: &str,
        params: Value,
        timeout: Duration,
        cancel: &CancellationToken,
        answerer: Option<ServerRequestHandler>,
    ) -> Result<Value, PoolError> {
        let sending = Sending {
            timeout,
            cancel: Some(cancel),
            answerer,
        };
        let outcome = self.send(session, method, params, sending).await?;
        outcome.map_err(|error| self.failed(session, method, error))
    }

    /// The server's answer, or `Err` when the pool is closing.
    async fn send(
        &self,
        session: &Session,
        method: &str,
        params: Value,
        sending: Sending<'_>,
    ) -> Result<Result<Value, McpError>, PoolError> {
        let never = CancellationToken::new();
        let (timeout, cancel) = (sending.timeout, sending.cancel.unwrap_or(&never));
        let started = Instant::now();
        let mut params = params;
        let span = super::traced::span_of(&self.name, &self.entry, method, &mut params);
        // The span is held, not entered (`traced`): it ends when the answer is in.
        let answerer = sending.answerer;
        let sent = session.request_answered_by(method, Some(params), timeout, cancel, answerer);
        let outcome = self.guarded(sent).await;
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
}

/// A pool error as one line for a warning (the stderr tail, when there is one, follows it).
pub fn describe(error: &PoolError) -> String {
    match error {
        PoolError::Unavailable { failure, .. } => failure.with_stderr(),
        other => other.to_string(),
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
