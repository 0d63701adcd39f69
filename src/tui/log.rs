//! Log lines for the TUI's log pane. While the TUI owns the terminal nothing may write to
//! stderr, so `main` gives the tracing subscriber a [`LogWriter`] instead: each formatted event
//! goes into a channel that the TUI drains into its log pane (the child processes' lines, tagged
//! `[mcpo#stack]`, included).

use std::io;
use std::sync::{Mutex, OnceLock, PoisonError};

use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tracing_subscriber::fmt::MakeWriter;

type Channel = (
    UnboundedSender<String>,
    Mutex<Option<UnboundedReceiver<String>>>,
);

static LINES: OnceLock<Channel> = OnceLock::new();

fn channel() -> &'static Channel {
    LINES.get_or_init(|| {
        let (tx, rx) = unbounded_channel();
        (tx, Mutex::new(Some(rx)))
    })
}

/// The lines written so far and from now on; `None` once taken (there is one log pane).
pub fn take_lines() -> Option<UnboundedReceiver<String>> {
    channel()
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
            let _ = channel().0.send(line.to_string());
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
}
