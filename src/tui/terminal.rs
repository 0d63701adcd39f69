//! The terminal while the TUI runs: raw mode, the alternate screen and mouse capture, undone
//! on every way out — a normal return, an error, a panic (ratatui's hook restores first, then
//! the panic is reported) and SIGTERM (the event loop ends and the guard drops) — and handed
//! back to the user's editor for a while ([`suspend`], [`resume`]).

use std::io::{self, IsTerminal};

use crossterm::cursor::Show;
use crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use crossterm::execute;
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::layout::Rect;
use ratatui::DefaultTerminal;

/// Owns the terminal; dropping it restores the user's terminal.
pub struct TerminalGuard {
    terminal: DefaultTerminal,
}

impl TerminalGuard {
    /// Takes over the terminal. Fails when stdin or stdout is not a terminal.
    pub fn enter() -> Result<TerminalGuard, io::Error> {
        if !io::stdin().is_terminal() {
            return Err(io::Error::other("its input (stdin) is a pipe or a file"));
        }
        if !io::stdout().is_terminal() {
            return Err(io::Error::other("its output (stdout) is a pipe or a file"));
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

/// Gives the terminal back as the user had it (main screen, cooked mode, no mouse capture) so
/// another program can run in it; [`resume`] takes it again.
pub fn suspend() -> io::Result<()> {
    let _ = execute!(io::stdout(), DisableMouseCapture);
    execute!(io::stdout(), LeaveAlternateScreen, Show)?;
    disable_raw_mode()
}

/// Takes the terminal again after [`suspend`]; the next draw repaints every cell (the other
/// program left its own output on the screen).
pub fn resume(terminal: &mut DefaultTerminal) -> io::Result<()> {
    enable_raw_mode()?;
    execute!(io::stdout(), EnterAlternateScreen)?;
    if let Err(e) = execute!(io::stdout(), EnableMouseCapture) {
        tracing::debug!(error = %e, "no mouse capture");
    }
    // `resize`, not `clear`: `clear` asks the terminal where its cursor is, an answer that can
    // be lost right after another program had the terminal (then it waits seconds and fails).
    // Both wipe the screen and forget the last frame.
    let size = terminal.size()?;
    terminal.resize(Rect::new(0, 0, size.width, size.height))?;
    // The editor showed the cursor; the TUI draws its own.
    terminal.hide_cursor()
}
