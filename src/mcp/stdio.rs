//! The stdio transport: one writer task, one reader task, one process group.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::io::BufReader;
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::{mpsc, watch};
use tracing::Instrument;

use crate::process::{self, Exit, ProcessGuard, SpawnSpec, StderrHandle};

use super::error::McpError;
use super::framing::{self, Frame, LineReader};
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
///
/// Both tasks log inside the caller's span (the server's name, set by `catalog::connect`), so
/// `-vv` can tell servers apart when many are checked at once.
pub(crate) fn start(
    spec: &SpawnSpec,
    peer: Arc<Peer>,
    outbox: mpsc::Receiver<Value>,
    line_limit: usize,
) -> Result<ProcessGuard, process::SpawnError> {
    let spawned = process::spawn(spec)?;
    tokio::spawn(write_messages(spawned.stdin, outbox).in_current_span());
    let guard = spawned.guard;
    let reader =
        LineReader::new(BufReader::with_capacity(64 * 1024, spawned.stdout)).with_limit(line_limit);
    let ends = Ends {
        program: spec.program.clone(),
        exit: guard.exit_watch(),
        stderr: guard.stderr_handle(),
    };
    tokio::spawn(read_messages(reader, ends, peer).in_current_span());
    Ok(guard)
}

/// Writes each queued message as one line to the server's stdin, until the queue closes or the
/// pipe breaks (the reader then sees the end of the process and fails what is pending). The
/// messages queued together leave in one write ([`framing::write_queued`]).
async fn write_messages(mut stdin: ChildStdin, mut outbox: mpsc::Receiver<Value>) {
    let put = |msg: Value, batch: &mut Vec<u8>| framing::append_line(&msg, batch);
    if let Err(e) = framing::write_queued(&mut stdin, &mut outbox, put).await {
        tracing::debug!(error = %e, "writing to server stdin failed");
    }
}

/// How the process ended: its exit status and stderr, for the close reason; its program, for
/// errors.
struct Ends {
    program: String,
    exit: watch::Receiver<Option<Exit>>,
    stderr: StderrHandle,
}

/// Hands every message on stdout to `peer` until stdout ends (or, once the process exited,
/// until [`EXIT_DRAIN`] passed), then closes `peer` with the exit status and stderr tail.
async fn read_messages(
    mut reader: LineReader<BufReader<ChildStdout>>,
    mut ends: Ends,
    peer: Arc<Peer>,
) {
    let mut exited_at: Option<tokio::time::Instant> = None;
    loop {
        let deadline = exited_at.map(|t| t + EXIT_DRAIN);
        tokio::select! {
            next = reader.next_frame() => match next {
                Ok(Some(Frame::Value(value))) => peer.handle(value),
                Ok(Some(Frame::Oversized { id: Some(id) })) => {
                    let origin = format!("stdout of `{}`", ends.program);
                    peer.fail(id, McpError::TooLarge { origin, limit: reader.limit() });
                }
                Ok(Some(Frame::Oversized { id: None })) => {}
                Ok(None) | Err(_) => break,
            },
            changed = ends.exit.changed(), if exited_at.is_none() => {
                if changed.is_err() || ends.exit.borrow().is_some() {
                    exited_at = Some(tokio::time::Instant::now());
                }
            }
            _ = sleep_until(deadline), if deadline.is_some() => break,
        }
    }
    let _ = tokio::time::timeout(SETTLE, ends.exit.wait_for(Option::is_some)).await;
    // Give the stderr drain a moment to catch the final lines.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let status = *ends.exit.borrow();
    peer.close(CloseReason::Exited {
        exit: status,
        stderr_tail: ends.stderr.tail(STDERR_TAIL_LINES),
    });
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}
