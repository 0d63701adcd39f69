//! A live line on stderr while `list` checks servers on a terminal: how many answered, which
//! are still awaited and for how long — a hanging server no longer leaves the screen blank for
//! its whole init window. Rewritten in place, cleared before the table prints; never written
//! when stderr is not a terminal.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use futures_util::stream::{FuturesUnordered, StreamExt};

use crate::catalog::{self, ResolveOptions, ServerReport};
use crate::config::ServerEntry;

/// A check quicker than this draws nothing (the tool index answers in milliseconds).
const QUIET_FOR: Duration = Duration::from_millis(800);

/// How often the line is redrawn (its seconds count up).
const REDRAW: Duration = Duration::from_millis(250);

/// [`catalog::resolve`], with the live line when `shown` and stderr is a terminal: each server
/// is resolved on its own then (the tool index merges each one's record under its lock), so
/// the line can name the ones still awaited.
pub(super) async fn resolve(
    entries: &[ServerEntry],
    opts: &ResolveOptions,
    shown: bool,
) -> Vec<ServerReport> {
    if !shown || !std::io::stderr().is_terminal() {
        return catalog::resolve(entries, opts).await;
    }
    let started = Instant::now();
    let mut pending: FuturesUnordered<_> =
        entries
            .iter()
            .enumerate()
            .map(|(i, entry)| async move {
                (i, catalog::resolve(std::slice::from_ref(entry), opts).await)
            })
            .collect();
    let mut reports: Vec<Option<ServerReport>> = vec![None; entries.len()];
    let mut redraw = tokio::time::interval(REDRAW);
    let mut drawn = false;
    loop {
        tokio::select! {
            next = pending.next() => match next {
                Some((i, mut one)) => reports[i] = one.pop(),
                None => break,
            },
            _ = redraw.tick() => {
                if started.elapsed() >= QUIET_FOR {
                    draw(&line(entries, &reports, started.elapsed()));
                    drawn = true;
                }
            }
        }
    }
    if drawn {
        draw("");
    }
    // `catalog::resolve` answers one report per entry: none is missing.
    reports.into_iter().flatten().collect()
}

/// `checking 5 servers: 4 answered · waiting for slow (12 s)`.
fn line(entries: &[ServerEntry], reports: &[Option<ServerReport>], elapsed: Duration) -> String {
    let waiting: Vec<&str> = entries
        .iter()
        .zip(reports)
        .filter(|(_, r)| r.is_none())
        .map(|(e, _)| e.qualified.as_str())
        .collect();
    format!(
        "checking {}: {} answered · waiting for {} ({} s)",
        crate::output::counted(entries.len(), "server"),
        entries.len() - waiting.len(),
        waiting.join(", "),
        elapsed.as_secs()
    )
}

/// Replaces the current line of stderr with `text` (clipped to the terminal), or clears it.
fn draw(text: &str) {
    let text = crate::output::clip(text, crate::output::terminal_width().saturating_sub(1));
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "\r\x1b[2K{text}");
    let _ = err.flush();
}
