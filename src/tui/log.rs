//! Log lines for the TUI's log pane. While the TUI owns the terminal nothing may write to
//! stderr, so `main` gives the tracing subscriber a [`LogWriter`] instead: each formatted event
//! goes into a channel that the TUI's event loop drains into its log pane (the child processes'
//! lines, tagged `[mcpo#stack]`, included).
//!
//! The channel is bounded ([`BACKLOG`] lines): while the loop cannot drain it (an `$EDITOR`
//! owns the terminal, say) a chatty child cannot make it grow. Lines past the bound are
//! counted, and the pane is told how many were dropped once there is room again (`--log-file`
//! has every line).

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use tokio::sync::mpsc::{channel, error::TrySendError, Receiver, Sender};
use tracing_subscriber::fmt::MakeWriter;

/// Lines waiting for the log pane, at most.
pub const BACKLOG: usize = 10_000;

/// The sending side of the pane's channel, with the count of lines dropped since the last
/// line that got through.
struct Lines {
    tx: Sender<String>,
    dropped: AtomicU64,
}

impl Lines {
    fn new(capacity: usize) -> (Lines, Receiver<String>) {
        let (tx, rx) = channel(capacity);
        let lines = Lines {
            tx,
            dropped: AtomicU64::new(0),
        };
        (lines, rx)
    }

    /// Queues `line` unless the pane is `BACKLOG` lines behind; then it is counted instead.
    fn send(&self, line: String) {
        let dropped = self.dropped.swap(0, Ordering::Relaxed);
        if dropped > 0 {
            let note = format!(
                "… {dropped} log lines dropped while the log pane was not read (--log-file keeps every line)"
            );
            if self.tx.try_send(note).is_err() {
                self.dropped.fetch_add(dropped + 1, Ordering::Relaxed);
                return;
            }
        }
        if let Err(TrySendError::Full(_)) = self.tx.try_send(line) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

type Channel = (Lines, Mutex<Option<Receiver<String>>>);

static LINES: OnceLock<Channel> = OnceLock::new();

fn channel_of_the_pane() -> &'static Channel {
    LINES.get_or_init(|| {
        let (lines, rx) = Lines::new(BACKLOG);
        (lines, Mutex::new(Some(rx)))
    })
}

/// The lines written so far and from now on; `None` once taken (there is one log pane).
pub fn take_lines() -> Option<Receiver<String>> {
    channel_of_the_pane()
        .1
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take()
}

/// A tracing writer that sends every event, one line each, to the log pane.
#[derive(Debug, Clone, Copy, Default)]
pub struct LogWriter;

impl<'a> MakeWriter<'a> for LogWriter {
    type Writer = LineBuffer;

    fn make_writer(&'a self) -> Self::Writer {
        LineBuffer(Vec::new())
    }
}

/// One event's text; sent when the subscriber is done with it.
pub struct LineBuffer(Vec<u8>);

impl io::Write for LineBuffer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for LineBuffer {
    fn drop(&mut self) {
        let text = String::from_utf8_lossy(&self.0);
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            channel_of_the_pane().0.send(line.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    #[test]
    fn each_line_of_an_event_reaches_the_pane() {
        let mut lines = take_lines().expect("the first taker gets the lines");
        let mut writer = LogWriter.make_writer();
        writer.write_all(b"first\nsecond\n").unwrap();
        drop(writer);
        assert_eq!(lines.try_recv().unwrap(), "first");
        assert_eq!(lines.try_recv().unwrap(), "second");
        assert!(take_lines().is_none(), "one log pane");
    }

    /// Nobody reads (the loop is blocked by an editor): the backlog stays bounded, and the
    /// pane learns how many lines it missed once it reads again.
    #[test]
    fn an_unread_pane_keeps_a_bounded_backlog_and_counts_the_rest() {
        let (lines, mut rx) = Lines::new(4);
        for i in 0..100 {
            lines.send(format!("line {i}"));
        }
        let kept: Vec<String> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
        assert_eq!(kept, ["line 0", "line 1", "line 2", "line 3"]);
        lines.send("after".into());
        assert!(rx.try_recv().unwrap().starts_with("… 96 log lines dropped"));
        assert_eq!(rx.try_recv().unwrap(), "after");
        assert!(rx.try_recv().is_err());
    }
}
