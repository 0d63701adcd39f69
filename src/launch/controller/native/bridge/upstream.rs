//! One server behind the bridge: its long-lived session, shared by every concurrent call (the
//! session multiplexes requests by id), and what happens when it dies.
//!
//! A lost session (the server exited, the connection broke) marks the server down and
//! schedules the next connect attempt after a backoff: 1 s, then 2 s, 4 s … up to 30 s while
//! attempts keep failing; a successful connect resets it. Nothing restarts in the background:
//! the first call after the scheduled time reconnects, so an idle stack costs nothing and a
//! server nobody calls is never respawned in a loop. Until then calls get a 502 at once,
//! naming the time of the next attempt. One connect at a time per server: concurrent callers
//! wait for it and share its outcome instead of each spawning a server.
//!
//! A server that dies while idle is noticed by the next call (its request fails at once with
//! the exit status): that call gets the 502 and the restart follows the same schedule.
//! `mcp::Session` tells no one when its connection closes, so there is no earlier moment.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::{Duration, Instant, SystemTime};

use nix::sys::signal::Signal;
use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::backoff::Backoff;
use crate::catalog;
use crate::config::ServerEntry;
use crate::mcp::{ConnectOptions, McpError, ServerInfo, Session, ToolList};

use super::error::{BridgeError, Failure};
use super::tools::ToolSet;
use super::{ServerState, ServerStatus};

/// The first wait after a failure, and the wait again after a successful connect.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The longest wait between attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How long shutdown waits for in-flight calls to let go of a session before killing its
/// process group outright (they are cancelled, so this is normally a few milliseconds).
const RELEASE_WAIT: Duration = Duration::from_secs(2);

/// One server: its tools, its session and its health.
pub(super) struct Upstream {
    pub(super) name: String,
    entry: ServerEntry,
    /// Its tools; replaced whole when the server turns out to offer others.
    tools: RwLock<Arc<ToolSet>>,
    connect: ConnectOptions,
    slot: Mutex<Slot>,
    /// Held for the whole of a connect, so there is only one at a time.
    gate: Arc<tokio::sync::Mutex<()>>,
    /// Cancelled by [`Bridge::shutdown`](super::Bridge::shutdown): connects and calls end.
    closing: CancellationToken,
    /// Told whenever the server's health changes (see [`Bridge::changes`](super::Bridge::changes)).
    changes: Arc<watch::Sender<()>>,
}

/// The mutable part, behind a short-lived lock (never held across an await).
struct Slot {
    session: Option<Arc<Session>>,
    connecting: bool,
    /// Sessions established so far; every one after the first is a restart.
    sessions: u32,
    last_error: Option<Failure>,
    /// The waits between failed connects.
    backoff: Backoff,
    /// No connect before this instant (`None`: connect on the next call).
    next_attempt: Option<Instant>,
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
        server: super::BridgeServer,
        connect: ConnectOptions,
        closing: CancellationToken,
        changes: Arc<watch::Sender<()>>,
    ) -> Upstream {
        let tools = ToolSet::new(server.tools, &server.document);
        // A session handed over (from the preflight) counts as the first one.
        let adopted = server.session.map(Arc::new);
        let sessions = u32::from(adopted.is_some());
        Upstream {
            name: server.name,
            entry: server.entry,
            tools: RwLock::new(Arc::new(tools)),
            connect,
            slot: Mutex::new(Slot {
                session: adopted,
                connecting: false,
                sessions,
                last_error: None,
                backoff: Backoff::new(FIRST_BACKOFF, MAX_BACKOFF),
                next_attempt: None,
            }),
            gate: Arc::new(tokio::sync::Mutex::new(())),
            closing,
            changes,
        }
    }

    /// The server's current tools.
    pub(super) fn tools(&self) -> Arc<ToolSet> {
        Arc::clone(&self.tools.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Serves `tools` from now on; calls already validated finish with the old set.
    pub(super) fn replace_tools(&self, tools: ToolSet) {
        *self.tools.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(tools);
    }

    /// Lists the server's tools on its live session (connecting first when it is down).
    pub(super) async fn list_live_tools(
        self: &Arc<Self>,
        timeout: Duration,
    ) -> Result<(ServerInfo, ToolList), BridgeError> {
        let session = self.session().await?;
        let listed = tokio::select! {
            listed = session.list_tools(timeout) => listed,
            () = self.closing.cancelled() => return Err(BridgeError::ShuttingDown),
        };
        match listed {
            Ok(list) => Ok((session.info().clone(), list)),
            Err(lost) if session_lost(&lost) => Err(self.lose(&session, &lost)),
            Err(error) => Err(BridgeError::Upstream {
                server: self.name.clone(),
                error,
            }),
        }
    }

    fn slot(&self) -> MutexGuard<'_, Slot> {
        // Every update leaves the slot consistent, so a panicked holder left nothing half-done.
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Calls `tool` on the shared session, (re)connecting first when the server is down and
    /// its backoff has passed.
    pub(super) async fn call(
        self: &Arc<Self>,
        tool: &str,
        arguments: Value,
        timeout: Duration,
    ) -> Result<Value, BridgeError> {
        let session = self.session().await?;
        let outcome = tokio::select! {
            outcome = session.call_tool(tool, arguments, timeout) => outcome,
            () = self.closing.cancelled() => return Err(BridgeError::ShuttingDown),
        };
        outcome.map_err(|error| match error {
            McpError::Timeout { after, .. } => BridgeError::Timeout {
                server: self.name.clone(),
                tool: tool.to_string(),
                after,
            },
            lost if session_lost(&lost) => self.lose(&session, &lost),
            other => BridgeError::Upstream {
                server: self.name.clone(),
                error: other,
            },
        })
    }

    /// The live session, or a connect if the server is down and may be retried now.
    pub(super) async fn session(self: &Arc<Self>) -> Result<Arc<Session>, BridgeError> {
        if let Some(session) = self.ready()? {
            return Ok(session);
        }
        let gate = tokio::select! {
            gate = Arc::clone(&self.gate).lock_owned() => gate,
            () = self.closing.cancelled() => return Err(BridgeError::ShuttingDown),
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
            Err(BridgeError::Upstream {
                server: self.name.clone(),
                error: McpError::Protocol("internal error while connecting".into()),
            })
        })
    }

    /// The session if there is one; an error if the server is down and backing off.
    fn ready(&self) -> Result<Option<Arc<Session>>, BridgeError> {
        if self.closing.is_cancelled() {
            return Err(BridgeError::ShuttingDown);
        }
        let slot = self.slot();
        if let Some(session) = &slot.session {
            return Ok(Some(Arc::clone(session)));
        }
        match (slot.next_attempt, &slot.last_error) {
            (Some(at), Some(failure)) if at > Instant::now() => Err(BridgeError::Unavailable {
                server: self.name.clone(),
                failure: Box::new(failure.clone()),
                retry_at: slot.retry_at(),
            }),
            _ => Ok(None),
        }
    }

    /// Connects (the caller holds the gate) and records the outcome.
    async fn connect_now(&self) -> Result<Arc<Session>, BridgeError> {
        self.slot().connecting = true;
        self.changes.send_replace(());
        let outcome = tokio::select! {
            outcome = catalog::connect(&self.entry, &self.connect) => outcome,
            () = self.closing.cancelled() => {
                self.slot().connecting = false;
                return Err(BridgeError::ShuttingDown);
            }
        };
        // Told once the slot below is updated and its lock released.
        let _notify = Notify(&self.changes);
        let mut slot = self.slot();
        slot.connecting = false;
        match outcome {
            Ok(session) => {
                let session = Arc::new(session);
                slot.session = Some(Arc::clone(&session));
                slot.sessions += 1;
                slot.backoff.reset();
                slot.next_attempt = None;
                if slot.sessions > 1 {
                    tracing::info!(server = %self.name, restarts = slot.sessions - 1, "server restarted");
                }
                Ok(session)
            }
            Err(problem) => {
                let failure = Failure::from_problem(&problem);
                tracing::warn!(server = %self.name, cause = failure.cause, incident = %failure.incident, stderr = %failure.stderr, "cannot connect: {}", failure.message);
                slot.fail(failure.clone());
                Err(BridgeError::Unavailable {
                    server: self.name.clone(),
                    failure: Box::new(failure),
                    retry_at: slot.retry_at(),
                })
            }
        }
    }

    /// Marks the server down after `lost` died under a call, unless a newer session already
    /// replaced it, and returns the 502 for that call.
    fn lose(&self, lost: &Arc<Session>, error: &McpError) -> BridgeError {
        let failure = Failure::from_mcp(error);
        let mut slot = self.slot();
        let dead = match &slot.session {
            Some(current) if Arc::ptr_eq(current, lost) => slot.session.take(),
            _ => None,
        };
        if dead.is_some() {
            tracing::warn!(server = %self.name, cause = failure.cause, incident = %failure.incident, stderr = %failure.stderr, "session lost: {}", failure.message);
            slot.fail(failure.clone());
        }
        let retry_at = slot.retry_at();
        drop(slot);
        if dead.is_some() {
            self.changes.send_replace(());
        }
        // The last holder's drop kills what is left of the process group.
        drop(dead);
        BridgeError::Unavailable {
            server: self.name.clone(),
            failure: Box::new(failure),
            retry_at,
        }
    }

    /// Connects unless already up (for the start-up pass); `Err` carries the reason.
    pub(super) async fn ensure_connected(self: &Arc<Self>) -> Result<(), String> {
        self.session()
            .await
            .map(drop)
            .map_err(|e| super::describe(&e))
    }

    /// The server's health for `status`.
    pub(super) fn status(&self) -> ServerStatus {
        let slot = self.slot();
        let state = match (&slot.session, slot.connecting) {
            (Some(_), _) => ServerState::Up,
            (None, true) => ServerState::Restarting,
            (None, false) => ServerState::Down,
        };
        ServerStatus {
            name: self.name.clone(),
            state,
            restarts: slot.sessions.saturating_sub(1),
            last_error: slot.last_error.as_ref().map(|f| f.message.clone()),
            next_attempt: slot
                .next_attempt
                .filter(|_| slot.session.is_none())
                .map(|at| at.saturating_duration_since(Instant::now())),
            pgid: slot.session.as_ref().and_then(|s| s.pgid()),
        }
    }

    /// Ends the session for good (the bridge's `closing` token is already cancelled, so no
    /// connect starts and in-flight calls let go): TERM, grace, KILL to the process group.
    pub(super) async fn close(&self) {
        let _gate = self.gate.lock().await;
        let Some(session) = self.slot().session.take() else {
            return;
        };
        self.changes.send_replace(());
        let pgid = session.pgid();
        match release(session).await {
            Ok(session) => session.close().await,
            Err(still_shared) => {
                tracing::warn!(server = %self.name, "a call still holds the session; killing its process group");
                if let Some(pgid) = pgid {
                    crate::process::signal_group(pgid, Signal::SIGKILL);
                }
                drop(still_shared);
            }
        }
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

/// Whether the error means the session is gone for every later call too (not just this one).
/// A Streamable HTTP 404 means the server forgot our session id; a new session is needed.
fn session_lost(error: &McpError) -> bool {
    matches!(
        error,
        McpError::Exited { .. }
            | McpError::Closed { .. }
            | McpError::Connect { .. }
            | McpError::Http { status: 404, .. }
    )
}

/// The session once no call holds it any more, or back after [`RELEASE_WAIT`].
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
