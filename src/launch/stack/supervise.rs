//! Supervision: a crashed mcpo or cloudflared is restarted with exponential backoff, the spec
//! rebuilt (a quick tunnel comes back with a new URL) and the state record updated, until the
//! stack stops.

use std::time::Duration;

use tokio::sync::Mutex;

use super::{lock, start_controller, start_tunnel, Controller, RunningStack};
use crate::backoff::Backoff;
use crate::launch::events::StackEvent;
use crate::launch::state::ProcessRecord;
use crate::process::{Exit, ProcessGuard};

/// A process that runs at least this long before crashing starts its backoff afresh.
const STABLE_AFTER: Duration = Duration::from_secs(60);

/// Longest wait between restarts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Restart delays: 1 s, 2 s, 4 s … 30 s, afresh once a process stayed up for [`STABLE_AFTER`].
fn restart_backoff() -> Backoff {
    Backoff::new(Duration::from_secs(1), MAX_BACKOFF).stable_after(STABLE_AFTER)
}

impl RunningStack {
    /// Restarts the controller or the tunnel when they end, with backoff, until [`stop`]
    /// (or the shutdown token) ends the stack.
    ///
    /// [`stop`]: RunningStack::stop
    pub async fn supervise(&self) {
        let mut controller_backoff = restart_backoff();
        let mut tunnel_backoff = restart_backoff();
        loop {
            let controller_exit = match self.inner.controller.process() {
                Some(process) => exit_watch(process).await,
                None => None,
            };
            let tunnel_exit = self
                .inner
                .tunnel
                .lock()
                .await
                .as_ref()
                .map(|t| t.guard.exit_watch());
            tokio::select! {
                _ = self.inner.shutdown.cancelled() => return,
                _ = wait_exit(controller_exit) => {
                    self.inner.front.set_upstream_ready(false);
                    let reason = match self.inner.controller.process() {
                        Some(process) => take_exit_reason(process).await,
                        None => "ended".into(),
                    };
                    self.restart_controller(&mut controller_backoff, reason).await;
                }
                _ = wait_exit(tunnel_exit) => {
                    let reason = match self.inner.tunnel.lock().await.take() {
                        Some(t) => describe_exit(&t.guard),
                        None => "ended".into(),
                    };
                    self.restart_tunnel(&mut tunnel_backoff, reason).await;
                }
            }
        }
    }

    /// Announces the next restart of `process` (why it ended, the attempt, the delay) and
    /// waits out the backoff; false when the stack stops first.
    async fn wait_to_restart(
        &self,
        backoff: &mut Backoff,
        process: &'static str,
        reason: &str,
    ) -> bool {
        let inner = &self.inner;
        let (delay, attempt) = backoff.next_delay();
        inner.events.send(StackEvent::Restarting {
            stack: inner.name.clone(),
            process,
            reason: reason.to_string(),
            delay_secs: delay.as_secs(),
            attempt,
        });
        tracing::warn!(stack = %inner.name, attempt, "{process} ended ({reason}); restarting in {}s", delay.as_secs());
        !self.sleep_or_stop(delay).await
    }

    async fn restart_controller(&self, backoff: &mut Backoff, reason: String) {
        let inner = &self.inner;
        loop {
            if !self.wait_to_restart(backoff, "mcpo", &reason).await {
                return;
            }
            let Controller::Mcpo { launch, process } = &inner.controller else {
                return;
            };
            match start_controller(
                &inner.name,
                launch,
                &inner.client,
                &inner.masker,
                &inner.events,
            )
            .await
            {
                Ok(guard) => {
                    let pgid = guard.pgid();
                    *process.lock().await = Some(guard);
                    backoff.started();
                    {
                        let mut record = lock(&inner.record);
                        record.controller_process = pgid.map(ProcessRecord::of);
                        record.restarts += 1;
                    }
                    if let Err(e) = self.refresh_spec(None).await {
                        inner.events.warn(
                            &inner.name,
                            format!("the spec was not rebuilt after the restart: {e}"),
                        );
                    }
                    inner.front.set_upstream_ready(true);
                    if let Err(e) = self.save_record() {
                        inner.events.warn(&inner.name, e.to_string());
                    }
                    inner.events.send(StackEvent::Restarted {
                        stack: inner.name.clone(),
                        process: "mcpo",
                        new_url: None,
                    });
                    return;
                }
                Err(e) => {
                    inner
                        .events
                        .warn(&inner.name, format!("mcpo did not come back: {e}"));
                }
            }
        }
    }

    async fn restart_tunnel(&self, backoff: &mut Backoff, reason: String) {
        let inner = &self.inner;
        let Some(spec) = &inner.tunnel_spec else {
            return;
        };
        loop {
            if !self.wait_to_restart(backoff, "cloudflared", &reason).await {
                return;
            }
            match start_tunnel(&inner.name, spec, &inner.masker, &inner.events).await {
                Ok(tunnel) => {
                    backoff.started();
                    let pgid = tunnel.guard.pgid();
                    let new_url = match (&inner.public_url_flag, &tunnel.url) {
                        (None, Some(url)) => Some(url.clone()),
                        _ => None,
                    };
                    *inner.tunnel.lock().await = Some(tunnel);
                    {
                        let mut record = lock(&inner.record);
                        record.tunnel_process = pgid.map(ProcessRecord::of);
                        record.restarts += 1;
                    }
                    if new_url.is_some() {
                        if let Err(e) = self.refresh_spec(new_url.clone()).await {
                            inner.events.warn(
                                &inner.name,
                                format!("the spec was not rebuilt for the new URL: {e}"),
                            );
                        }
                    }
                    if let Err(e) = self.save_record() {
                        inner.events.warn(&inner.name, e.to_string());
                    }
                    inner.events.send(StackEvent::Restarted {
                        stack: inner.name.clone(),
                        process: "cloudflared",
                        new_url,
                    });
                    return;
                }
                Err(e) => inner
                    .events
                    .warn(&inner.name, format!("cloudflared did not come back: {e}")),
            }
        }
    }

    /// Sleeps `delay`; true when the stack is stopping instead.
    async fn sleep_or_stop(&self, delay: Duration) -> bool {
        tokio::select! {
            _ = self.inner.shutdown.cancelled() => true,
            _ = tokio::time::sleep(delay) => false,
        }
    }
}

async fn exit_watch(
    slot: &Mutex<Option<ProcessGuard>>,
) -> Option<tokio::sync::watch::Receiver<Option<Exit>>> {
    slot.lock().await.as_ref().map(ProcessGuard::exit_watch)
}

/// Resolves when the watched process has exited; never when there is none.
async fn wait_exit(watch: Option<tokio::sync::watch::Receiver<Option<Exit>>>) {
    match watch {
        Some(mut rx) => {
            if rx.wait_for(Option::is_some).await.is_err() {
                std::future::pending::<()>().await;
            }
        }
        None => std::future::pending().await,
    }
}

async fn take_exit_reason(slot: &Mutex<Option<ProcessGuard>>) -> String {
    match slot.lock().await.take() {
        Some(guard) => {
            guard.settle(Duration::from_millis(500)).await;
            describe_exit(&guard)
        }
        None => "ended".into(),
    }
}

fn describe_exit(guard: &ProcessGuard) -> String {
    let exit = guard
        .exit_status()
        .map(|e| e.to_string())
        .unwrap_or_else(|| "ended".into());
    let tail = guard.stderr_tail(3);
    if tail.is_empty() {
        exit
    } else {
        format!("{exit}: {}", tail.replace('\n', " | "))
    }
}
