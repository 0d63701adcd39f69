//! What flows through the event loop: messages into [`App::update`](super::app::App::update)
//! (terminal input, ticks, results of effects) and the effects it asks the runtime to run.

use crossterm::event::{KeyEvent, MouseEvent};

use crate::catalog::{Edit, Overrides, ServerReport};
use crate::config::ServerEntry;
use crate::launch::events::StackEvent;

use super::screens::collector::CollectorMsg;
use super::screens::consent::ConsentMsg;
use super::screens::launch::{Availability, LaunchChoice};
use super::screens::results::StackResult;

/// Something that happened.
#[derive(Debug, Clone)]
pub enum Msg {
    /// A key press.
    Key(KeyEvent),
    /// A mouse event (the wheel scrolls).
    Mouse(MouseEvent),
    /// The terminal was resized (rendering reads the new size; nothing else changes).
    Resize,
    /// About ten times a second: spinners turn.
    Tick,
    /// A server's check finished.
    Checked {
        /// Its row.
        row: usize,
        /// What the check found.
        report: Box<ServerReport>,
    },
    /// The overrides file was written (or not, with why): its content now. Answers each
    /// [`Effect::Save`], in order.
    Saved(Result<Overrides, String>),
    /// The overrides file changed outside the TUI (`mcp-launch tool deny` in another
    /// terminal, an edit by hand): its content now, or why it does not load.
    OverridesChanged(Result<Overrides, String>),
    /// The external editor closed: the text it left, or why there is none (no editor set,
    /// it failed, the temporary file could not be written or read).
    EditedExternally {
        /// The server's row.
        row: usize,
        /// The tool whose description was edited.
        tool: String,
        /// The edited text, or what went wrong.
        result: Result<String, String>,
    },
    /// Launch, log and clipboard news.
    Launch(LaunchMsg),
    /// The config collector's answers.
    Collector(CollectorMsg),
    /// The chosen config files loaded: their servers, stacks in order.
    ConfigsLoaded(Result<Vec<ServerEntry>, String>),
    /// A consent request of a stack's authorization server, or its end.
    Consent(ConsentMsg),
    /// Tools' current definitions were approved (or not, with why). Answers
    /// [`Effect::Approve`].
    Approved {
        /// The server's row.
        row: usize,
        /// The tools approved, or what went wrong.
        result: Result<Vec<String>, String>,
    },
}

/// Launch, log and clipboard messages (kept apart from the editing ones above).
#[derive(Debug, Clone)]
pub enum LaunchMsg {
    /// Which programs are installed (sent once at start).
    Available(Availability),
    /// A log line of ours or of a process we run.
    Log(String),
    /// Something a stack reported while starting or running.
    Stack(StackEvent),
    /// The launch finished: the stacks that run, and `(stack, message)` for the others.
    Launched {
        /// Running stacks.
        stacks: Vec<StackResult>,
        /// Failed stacks.
        errors: Vec<(String, String)>,
    },
    /// The log was saved (to this path), or why not.
    LogSaved(Result<String, String>),
}

/// Something the runtime must do for the app.
#[derive(Debug, Clone)]
pub enum Effect {
    /// Check one server (a live handshake); answers with [`Msg::Checked`].
    Check {
        /// Its row.
        row: usize,
        /// Its entry.
        entry: ServerEntry,
    },
    /// Apply these edits to the overrides file as it is now (under its lock, off the event
    /// loop); answers with [`Msg::Saved`].
    Save(Vec<Edit>),
    /// Suspend the TUI and edit a description in `$VISUAL` / `$EDITOR`; answers with
    /// [`Msg::EditedExternally`].
    EditExternally(ExternalEdit),
    /// Launch every stack as chosen; answers with [`LaunchMsg::Stack`] events, then
    /// [`LaunchMsg::Launched`].
    /// With the servers the preflight found failing: the launch reports them as they were
    /// instead of checking them again (`r` retries one first).
    Launch(LaunchChoice, Vec<crate::catalog::ServerReport>),
    /// Put this text on the clipboard (OSC 52).
    Copy(String),
    /// Write these log lines to a file in `./.mcp-launch/`; answers with
    /// [`LaunchMsg::LogSaved`].
    SaveLog(Vec<String>),
    /// Load one config file the operator typed or picked (`~`, `$VAR` expanded); answers
    /// with [`CollectorMsg::Checked`].
    CheckConfig(String),
    /// Complete a typed path; answers with [`CollectorMsg::Completions`].
    CompletePath(String),
    /// Load the chosen config files as the stacks; answers with [`Msg::ConfigsLoaded`].
    LoadConfigs(Vec<std::path::PathBuf>),
    /// Approve the current definitions of tools changed since they were approved (in the
    /// user's approvals file, off the event loop); answers with [`Msg::Approved`].
    Approve {
        /// The server's row.
        row: usize,
        /// Its stack.
        stack: String,
        /// Its config key.
        server: String,
        /// The definitions to approve, as the server sends them now.
        tools: Vec<serde_json::Value>,
    },
    /// Approve consent request `request_id` (as `mcp-launch auth approve` does, off the event
    /// loop); answers with [`ConsentMsg::Approved`].
    ApproveConsent {
        /// The request's id.
        request_id: String,
    },
    /// Leave: stop everything we started and restore the terminal.
    Quit,
}

/// A description to edit in the operator's editor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalEdit {
    /// The server's row.
    pub row: usize,
    /// The tool.
    pub tool: String,
    /// The text the editor opens with (the description clients see now).
    pub text: String,
}
