//! `mcp-launch top`: a live view of every gateway, daemon and `up` stack of this user, per
//! upstream server. The command line samples (`cli::top`) and sends each [`Snapshot`] here
//! as a message; this loop draws it, turns keys into [`app::Effect`]s, reads logs itself and
//! hands stop/restart requests back to the command line, which answers with
//! [`app::Msg::Done`]. It draws only when something changed: a sample, a key, an answer, a
//! resize — nothing between ticks.
//!
//! [`Snapshot`]: crate::observe::snapshot::Snapshot

pub mod app;
pub mod view;

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use crossterm::event::{Event, EventStream};
use futures_util::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use self::app::{App, Effect, Msg};
use super::terminal::TerminalGuard;
use super::theme::Theme;
use super::TuiError;

/// How much of a log's end the pane reads.
const LOG_TAIL_BYTES: u64 = 256 * 1024;

/// Runs the view until `q`, the end of `messages`, or `shutdown`. Stop and restart requests
/// go out on `controls` (an [`Effect::Control`] each).
pub async fn run(
    mut messages: mpsc::UnboundedReceiver<Msg>,
    controls: mpsc::UnboundedSender<Effect>,
    shutdown: CancellationToken,
) -> Result<(), TuiError> {
    let mut guard = TerminalGuard::enter().map_err(TuiError::NoTerminal)?;
    let theme = Theme::from_env();
    let mut app = App::new();
    let mut keys = EventStream::new();
    let mut is_dirty = true;
    loop {
        if is_dirty {
            let drawn = guard.terminal().draw(|f| view::draw(&app, &theme, f));
            drawn.map_err(TuiError::Draw)?;
            is_dirty = false;
        }
        let msg = tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            msg = messages.recv() => match msg {
                Some(msg) => msg,
                None => return Ok(()),
            },
            event = keys.next() => match event {
                Some(Ok(Event::Key(key))) => Msg::Key(key),
                Some(Ok(Event::Resize(..))) => {
                    is_dirty = true;
                    continue;
                }
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(TuiError::Input(e)),
                None => return Ok(()),
            },
        };
        is_dirty = true;
        for effect in app.update(msg) {
            match effect {
                Effect::Quit => return Ok(()),
                Effect::ReadLog(title, path) => {
                    let lines = tokio::task::spawn_blocking(move || read_tail(&path)).await;
                    let lines = lines.unwrap_or_else(|e| Err(e.to_string()));
                    app.update(Msg::Log(title, lines));
                }
                control @ Effect::Control { .. } => {
                    let _ = controls.send(control);
                }
            }
        }
    }
}

/// The last lines of a log (its last [`LOG_TAIL_BYTES`]), control characters shown as `·`
/// (a log holds what servers wrote: never let it drive the terminal).
pub fn read_tail(path: &Path) -> Result<Vec<String>, String> {
    let describe = |e: std::io::Error| format!("{}: {e}", path.display());
    let mut file = std::fs::File::open(path).map_err(describe)?;
    let size = file.metadata().map_err(describe)?.len();
    let start = size.saturating_sub(LOG_TAIL_BYTES);
    file.seek(SeekFrom::Start(start)).map_err(describe)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(describe)?;
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<String> = text
        .lines()
        .map(|line| {
            line.chars()
                .map(|c| if c.is_control() && c != '\t' { '·' } else { c })
                .collect()
        })
        .collect();
    if start > 0 && !lines.is_empty() {
        // The first line was cut in the middle.
        lines.remove(0);
    }
    Ok(lines)
}

#[cfg(test)]
mod tests;
