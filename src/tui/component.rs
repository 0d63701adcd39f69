//! The shape every screen has (gitui's components, ratatui's actions): a screen owns its
//! state, handles the keys it binds and says what the app should do about them as an
//! [`Action`], lists its [`Command`]s (which feed both the status bar and the `?` help, so the
//! help cannot drift from the keys) and draws itself from its state and the shared [`Ctx`].
//!
//! No screen sees the [`App`](super::app::App): what a key changes outside the screen's own
//! state (the overrides, another screen in front, a notice, a task to run) goes back as an
//! [`Action`], which [`App::update`](super::app::App::update) applies.

use crossterm::event::KeyEvent;
use ratatui::layout::Rect;
use ratatui::Frame;

use crate::catalog::Overrides;

use super::app::Screen;
use super::model::Row;
use super::msg::Effect;
use super::rewrite::Rewrite;
use super::screens::launch::{Availability, LaunchChoice};
use super::screens::results::LaunchState;
use super::theme::Theme;

/// Whether a screen took a key.
#[derive(Debug, Clone)]
pub enum Handled<T> {
    /// The key is bound here (and may ask for something).
    Consumed(T),
    /// Not a key of this screen: the app's own keys (`?`, `q`) get it.
    Ignored,
}

impl Handled<Option<Action>> {
    /// Taken, nothing more to do.
    pub fn done() -> Self {
        Handled::Consumed(None)
    }

    /// Taken, and the app should do `action`.
    pub fn then(action: Action) -> Self {
        Handled::Consumed(Some(action))
    }
}

/// What a screen asks the app to do about a key or a task's answer.
#[derive(Debug, Clone)]
pub enum Action {
    /// Bring this screen to the front.
    Show(Screen),
    /// A message in the status bar.
    Say(String),
    /// A problem in the status bar.
    Complain(String),
    /// Enable or disable the server of this row (saved).
    ToggleServer(usize),
    /// Check the servers of these rows again.
    Retry(Vec<usize>),
    /// Allow or deny these tools of the server in `row` (saved).
    SetAllowed {
        /// The server's row.
        row: usize,
        /// The tools.
        tools: Vec<String>,
        /// Allow (else deny).
        allow: bool,
    },
    /// Rewrite the descriptions of these tools of the server in `row` (saved).
    Rewrite {
        /// The server's row.
        row: usize,
        /// The tools (stale or unknown ones are passed over).
        tools: Vec<String>,
        /// What to do to them.
        rewrite: Rewrite,
    },
    /// Launch every stack as chosen (the choices are remembered).
    Launch(LaunchChoice),
    /// Put a stack's spec URL and key on the clipboard.
    Copy {
        /// The stack (named in the notice).
        stack: String,
        /// What to copy.
        text: String,
    },
    /// Run this effect; nothing in the app changes meanwhile.
    Run(Effect),
}

/// The app's data every screen may read (its own state it owns).
#[derive(Debug, Clone, Copy)]
pub struct Ctx<'a> {
    /// Stack names, in config order.
    pub stacks: &'a [String],
    /// The config files the stacks come from, as given (named in the login hint).
    pub configs: &'a [std::path::PathBuf],
    /// One row per server of every stack.
    pub rows: &'a [Row],
    /// The overrides as shown.
    pub overrides: &'a Overrides,
    /// Which programs are installed.
    pub available: Availability,
    /// Where the launch stands.
    pub launch: &'a LaunchState,
    /// Styles.
    pub theme: &'a Theme,
    /// Ticks so far (spinners).
    pub tick: u64,
}

/// One thing a screen does with a key: what the help lists, and what the status bar names
/// (`bar`: none, one or a few short hints).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Command {
    /// The keys, as the help shows them (`↑↓ j k`).
    pub keys: &'static str,
    /// What they do, as the help says it.
    pub help: &'static str,
    /// `(keys, word)` the status bar shows for it.
    pub bar: &'static [(&'static str, &'static str)],
}

impl Command {
    /// A command the help lists and the status bar does not name.
    pub const fn help(keys: &'static str, help: &'static str) -> Command {
        Command {
            keys,
            help,
            bar: &[],
        }
    }

    /// A command the status bar names too, with these hints.
    pub const fn bar(
        keys: &'static str,
        help: &'static str,
        bar: &'static [(&'static str, &'static str)],
    ) -> Command {
        Command { keys, help, bar }
    }
}

/// A screen: its keys, its commands and its drawing.
pub trait Component {
    /// Handles `key`: [`Handled::Ignored`] when it is not one of this screen's keys.
    fn handle_key(&mut self, key: KeyEvent, ctx: &Ctx) -> Handled<Option<Action>>;

    /// What the keys do now (the help and the status bar show these).
    fn commands(&self) -> &'static [Command];

    /// True while text is typed: every key is the screen's, `?` and `q` included.
    fn is_typing(&self) -> bool;

    /// Draws the screen into `area`.
    fn render(&self, frame: &mut Frame, area: Rect, ctx: &Ctx);
}

impl<'a> Ctx<'a> {
    /// Rows of stack `stack`.
    pub fn stack_rows(&self, stack: &'a str) -> impl Iterator<Item = &'a Row> + 'a {
        self.rows.iter().filter(move |r| r.entry.stack == stack)
    }
}
