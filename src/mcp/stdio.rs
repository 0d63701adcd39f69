//! The stdio transport: one writer task, one reader task, one process group.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::process::{self, ProcessGuard, SpawnSpec};

use super::framing::LineReader;
use super::peer::{CloseReason, Peer};

/// After the direct child exits, how long its stdout may still deliver buffered answers before
/// we declare the connection closed (a grandchild may hold the pipe open forever).
const EXIT_DRAIN: Duration = Duration::from_millis(300);

/// How long we wait, after stdout closed, for the exit status and the last stderr bytes, so the
/// error names the exit code and the server's last words.
const SETTLE: Duration = Duration::from_secs(1);

/// Stderr lines quoted in errors.
pub(crate) const STDERR_TAIL_LINES: usize = 12;

/// Spawns the server and the tasks that move messages between it and `peer`.
pub(crate) fn start(
    spec: &SpawnSpec,
    peer: Arc<Peer>,
    mut outbox: mpsc::Receiver<Value>,
) -> Result<ProcessGuard, process::SpawnError> {
    let spawned = process::spawn(spec)?;
    let mut stdin = spawned.stdin;
    tokio::spawn(async move {
        while let Some(msg) = outbox.recv().await {
            let mut line = msg.to_string();
            line.push('\n');
            if let Err(e) = async {
                stdin.write_all(line.as_bytes()).await?;
                stdin.flush().await
            }
            .await
            {
                // The reader sees the end of the process and fails what is pending.
                tracing::debug!(error = %e, "writing to server stdin failed");
                break;
            }
        }
    });

    let guard = spawned.guard;
    let mut exit = guard.exit_watch();
    let stderr = guard.stderr_handle();
    let mut reader = LineReader::new(BufReader::with_capacity(64 * 1024, spawned.stdout));
    tokio::spawn(async move {
        let mut exited_at: Option<tokio::time::Instant> = None;
        loop {
            let deadline = exited_at.map(|t| t + EXIT_DRAIN);
            tokio::select! {
                next = reader.next_value() => match next {
                    Ok(Some(value)) => peer.handle(value),
                    Ok(None) | Err(_) => break,
                },
                changed = exit.changed(), if exited_at.is_none() => {
                    if changed.is_err() || exit.borrow().is_some() {
                        exited_at = Some(tokio::time::Instant::now());
                    }
                }
                _ = sleep_until(deadline), if deadline.is_some() => break,
            }
        }
        let _ = tokio::time::timeout(SETTLE, exit.wait_for(Option::is_some)).await;
        // Give the stderr drain a moment to catch the final lines.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let status = *exit.borrow();
        peer.close(CloseReason::Exited {
            exit: status,
            stderr_tail: stderr.tail(STDERR_TAIL_LINES),
        });
    });
    Ok(guard)
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}
