//! The terminal while the TUI runs: raw mode, the alternate screen and mouse capture, undone
//! on every way out — a normal return, an error, a panic (ratatui's hook restores first, then
//! the panic is reported) and SIGTERM (the event loop ends and the guard drops).

use std::io::{self, IsTerminal};

use crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use crossterm::execute;
use ratatui::DefaultTerminal;

/// Owns the terminal; dropping it restores the user's terminal.
pub struct TerminalGuard {
    terminal: DefaultTerminal,
}

impl TerminalGuard {
    /// Takes over the terminal. Fails when stdin or stdout is not a terminal.
    pub fn enter() -> Result<TerminalGuard, io::Error> {
        if !io::stdin().is_terminal() || !io::stdout().is_terminal() {
            return Err(io::Error::other("not a terminal"));
        }
        // ratatui::init also installs a panic hook that restores the terminal first.
        let terminal = ratatui::try_init()?;
        if let Err(e) = execute!(io::stdout(), EnableMouseCapture) {
            tracing::debug!(error = %e, "no mouse capture");
        }
        Ok(TerminalGuard { terminal })
    }

    /// The terminal to draw on.
    pub fn terminal(&mut self) -> &mut DefaultTerminal {
        &mut self.terminal
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        let _ = execute!(io::stdout(), DisableMouseCapture);
        ratatui::restore();
    }
}
