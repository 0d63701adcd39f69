//! The TUI (`mcp-launch up --tui`): a ratatui + crossterm application to preflight stacks, shape
//! what they expose and launch them.
//!
//! Architecture: [`app::App`] holds every piece of state and changes only in
//! [`app::App::update`], which takes a [`msg::Msg`] (a key, a tick, an effect's result) and
//! returns [`msg::Effect`]s — so every behaviour is tested without a terminal. Each screen
//! (`screens/`, one file each) is a [`component::Component`]: it owns its state, turns the keys
//! it binds into [`component::Action`]s the app applies, lists its commands (the status bar and
//! the `?` help both read them) and draws itself; no screen sees the app. [`view::draw`]
//! renders the state and reads nothing else. [`runtime`] owns the terminal and runs the effects
//! (server checks, saving the overrides, loading configs, the external editor) as tasks that
//! answer with messages. Shared pieces in `widgets/`; description rewrites (trim, cut, clear,
//! reset) in `rewrite`.

pub mod app;
pub mod component;
mod effects;
mod external_editor;
mod fuzzy;
pub mod log;
pub mod mcp;
pub mod model;
pub mod msg;
mod overrides_sync;
mod paths;
mod rewrite;
pub mod runtime;
pub mod screens;
mod terminal;
pub mod theme;
pub mod top;
pub mod view;
mod widgets;
mod words;

#[cfg(test)]
mod tests;

use crate::catalog::OverridesError;
use crate::error::Actionable;

/// Why the TUI could not run.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    /// stdin or stdout is not a terminal.
    #[error("--tui needs a terminal: {0}")]
    NoTerminal(#[source] std::io::Error),
    /// The overrides file cannot be read.
    #[error(transparent)]
    Overrides(OverridesError),
    /// Drawing failed (the terminal went away).
    #[error("cannot draw on the terminal: {0}")]
    Draw(#[source] std::io::Error),
    /// Reading keys failed.
    #[error("cannot read the terminal's input: {0}")]
    Input(#[source] std::io::Error),
}

impl Actionable for TuiError {
    fn kind(&self) -> &'static str {
        match self {
            TuiError::NoTerminal(_) => "no_terminal",
            TuiError::Overrides(e) => e.kind(),
            TuiError::Draw(_) | TuiError::Input(_) => "terminal_error",
        }
    }

    fn help(&self) -> String {
        match self {
            TuiError::NoTerminal(_) => "run it in an interactive terminal, or drop --tui: \
                `mcp-launch up --config FILE` launches without it (scripts, CI, pipes)"
                .into(),
            TuiError::Overrides(e) => e.help(),
            TuiError::Draw(_) | TuiError::Input(_) => {
                "the terminal closed or failed; run the command again".into()
            }
        }
    }
}
