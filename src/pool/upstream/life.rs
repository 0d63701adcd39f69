//! A server's session over its life: connected on demand (one connect at a time), marked
//! down when lost (with a backoff before the next connect), kept up when always on, stopped
//! when idle, closed for good at shutdown.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use tokio::sync::watch;

use super::{describe, Slot, Upstream};
use crate::catalog;
use crate::mcp::{McpError, Session};
use crate::pool::failure::{Failure, PoolError};
use crate::pool::FIRST_BACKOFF;

/// How long shutdown waits for in-flight requests to let go of a session before killing its
/// process group outright (they are cancelled, so this is normally a few milliseconds).
const RELEASE_WAIT: Duration = Duration::from_secs(2);

impl Upstream {
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
    pub(super) fn ready(&self) -> Result<Option<Arc<Session>>, PoolError> {
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
        if let Ok(session) = &outcome {
            self.learn_tool_headers(session).await;
        }
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
                if self.connect.stateless && slot.sessions == 0 && !unreachable(&problem) {
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

    /// Lists a stateless-revision HTTP session's tools once, so that its calls carry the
    /// `Mcp-Param-*` headers their tools ask for (SEP-2243; the connection learns them from
    /// the list). A failure only costs those headers: the server says what it missed.
    async fn learn_tool_headers(&self, session: &Session) {
        if !(self.connect.stateless && self.is_remote()) {
            return;
        }
        if let Err(error) = session.list_tools(self.connect.list_timeout).await {
            tracing::debug!(server = %self.name, %error, "cannot list the tools of the 2026-07-28 session");
        }
    }

    /// Marks the server down after `lost` died under a request, unless a newer session
    /// already replaced it, and returns the error for that request.
    pub(super) fn lose(&self, lost: &Arc<Session>, error: &McpError) -> PoolError {
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
    pub(super) fn forget(&self, stale: &Arc<Session>) {
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
    pub(in crate::pool) async fn keep_alive(self: Arc<Self>) {
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
        self.stop_unheld(Duration::ZERO, crate::observe::Stop::Asked)
            .await
    }

    /// Ends the session when nothing used it for `idle` and no request holds it; true when it
    /// did. Always-on servers are never stopped for idleness.
    pub(in crate::pool) async fn stop_if_idle(&self, idle: Duration) -> bool {
        self.stop_unheld(idle, crate::observe::Stop::Idle).await
    }

    /// Ends the session, counted as `why`, when nothing used it for `idle` and no request
    /// holds it (never an always-on server's); true when it did.
    async fn stop_unheld(&self, idle: Duration, why: crate::observe::Stop) -> bool {
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
        self.observe_stop(why);
        self.changes.send_replace(());
        match Arc::try_unwrap(session) {
            Ok(session) => session.close().await,
            // A request took it between the check and now; its drop ends the process group.
            Err(shared) => drop(shared),
        }
        true
    }

    /// Ends the session for good (the pool's `closing` token is already cancelled, so no
    /// connect starts and in-flight requests let go): TERM, grace, KILL to the process group.
    pub(in crate::pool) async fn close(&self) {
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

/// Tells the watchers of a server's health when dropped (after the slot's lock, taken later,
/// is released: locals drop in reverse order).
struct Notify<'a>(&'a watch::Sender<()>);

impl Drop for Notify<'_> {
    fn drop(&mut self) {
        self.0.send_replace(());
    }
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

/// Whether a connect failed before the server could say which revisions it speaks (not
/// reached, or not logged in to): that is no refusal of the stateless revision.
fn unreachable(problem: &catalog::ServerProblem) -> bool {
    matches!(
        problem,
        catalog::ServerProblem::Mcp(McpError::Connect { .. } | McpError::Auth(_))
    )
}
