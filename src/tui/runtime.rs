//! The event loop: terminal events, ticks and effect results become messages for
//! [`App::update`]; the effects it returns run as tasks ([`super::effects`]) that answer with
//! messages. The loop itself only draws, reads keys and hands effects over; it runs the
//! external editor, which needs the terminal.

use std::sync::PoisonError;
use std::time::Duration;

use crossterm::event::{Event, EventStream};
use futures_util::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::catalog::Overrides;
use crate::config::{LoadOptions, Loaded};
use crate::launch::stack::RunningStack;

use super::app::App;
use super::effects::{Context, Effects};
use super::external_editor;
use super::mcp::ServeMcp;
use super::msg::{Effect, LaunchMsg, Msg};
use super::terminal::TerminalGuard;
use super::theme::Theme;
use super::{view, TuiError};

const TICK: Duration = Duration::from_millis(100);

/// How long quitting waits for the TUI's tasks to end once told to stop. They stop at once
/// (checks and launches are cancelled, the stacks are stopped before); a file write or a
/// token count under way may take a moment. A task still running after this is left to the
/// process's exit rather than holding the operator's terminal.
const TASKS_GRACE: Duration = Duration::from_secs(5);

/// How the TUI ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// The operator quit.
    Quit,
    /// SIGINT/SIGTERM from outside.
    Signalled,
}

/// Runs the TUI until the operator quits or `shutdown` is cancelled, then stops every stack
/// it launched and joins every task it spawned. With `loaded` it starts on the preflight of
/// those stacks; without, on the config collector (files are loaded with `opts`). With `mcp`,
/// the stacks it launches serve `/mcp` too, their consent requests shown in the TUI.
pub async fn run(
    opts: LoadOptions,
    loaded: Option<Loaded>,
    mcp: Option<ServeMcp>,
    shutdown: CancellationToken,
) -> Result<Exit, TuiError> {
    let overrides = Overrides::load(&opts.cwd).map_err(TuiError::Overrides)?;
    let mut guard = TerminalGuard::enter().map_err(TuiError::NoTerminal)?;
    let (mut app, effects) = match &loaded {
        Some(loaded) => App::new(
            loaded.servers().cloned().collect(),
            overrides,
            Theme::from_env(),
        ),
        None => (App::collecting(overrides, Theme::from_env()), Vec::new()),
    };
    app.configs = opts.configs.clone();
    let (tx, rx) = mpsc::unbounded_channel::<Msg>();
    let mut context = Context::new(opts, loaded, shutdown.child_token(), tx.clone());
    context.mcp = mcp;
    let ending = context.clone();
    let runner = Effects::start(context, tx);
    let result = event_loop(guard.terminal(), app, effects, runner, rx, &shutdown).await;
    end(ending).await;
    drop(guard);
    result
}

/// Quitting: stop every task, write the choices made just before, stop the stacks (before
/// the terminal is handed back: their stop is part of quitting) and join the tasks.
async fn end(context: Context) {
    context.stop.cancel();
    context.sync.flushed().await;
    // A launch that was finishing has put its stacks in `running` by now.
    context.launching.close();
    joined(&context.launching).await;
    let stacks: Vec<RunningStack> = context
        .running
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .drain(..)
        .collect();
    for stack in &stacks {
        stack.stop().await;
    }
    let gateways: Vec<_> = (context.gateways.lock())
        .unwrap_or_else(PoisonError::into_inner)
        .drain(..)
        .collect();
    for gateway in gateways {
        gateway.shutdown().await;
    }
    let tasks = context.tasks.clone();
    drop((stacks, context));
    tasks.close();
    joined(&tasks).await;
}

/// Waits for `tasks` to end, at most [`TASKS_GRACE`].
async fn joined(tasks: &TaskTracker) {
    if tokio::time::timeout(TASKS_GRACE, tasks.wait())
        .await
        .is_err()
    {
        tracing::warn!(
            tasks = tasks.len(),
            "TUI tasks still running after {TASKS_GRACE:?}; leaving them"
        );
    }
}

async fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    mut app: App,
    initial: Vec<Effect>,
    runner: Effects,
    mut rx: mpsc::UnboundedReceiver<Msg>,
    shutdown: &CancellationToken,
) -> Result<Exit, TuiError> {
    // Log lines are read here, by the loop itself: while it is blocked (an editor runs) they
    // wait in their bounded channel instead of piling up in the unbounded message queue.
    let mut log_lines = super::log::take_lines();
    for effect in initial {
        runner.run(effect);
    }
    let mut events = EventStream::new();
    let mut ticks = tokio::time::interval(TICK);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        terminal
            .draw(|frame| view::draw(frame, &app))
            .map_err(TuiError::Draw)?;
        let msg = tokio::select! {
            () = shutdown.cancelled() => return Ok(Exit::Signalled),
            _ = ticks.tick() => Msg::Tick,
            Some(msg) = rx.recv() => msg,
            Some(line) = next_log_line(&mut log_lines) => Msg::Launch(LaunchMsg::Log(line)),
            event = events.next() => match event {
                Some(Ok(Event::Key(key))) => Msg::Key(key),
                Some(Ok(Event::Mouse(mouse))) => Msg::Mouse(mouse),
                Some(Ok(Event::Resize(..))) => Msg::Resize,
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(TuiError::Input(e)),
                None => return Ok(Exit::Quit),
            },
        };
        for effect in app.update(msg) {
            match effect {
                Effect::Quit => return Ok(Exit::Quit),
                Effect::EditExternally(edit) => {
                    // The key reader's thread would take the editor's keystrokes: stop it
                    // while the editor runs, start a new one after.
                    drop(events);
                    let edited = external_editor::run(terminal, edit, shutdown).await;
                    events = EventStream::new();
                    runner.answer(edited);
                }
                effect => runner.run(effect),
            }
        }
    }
}

/// The next tracing line (ours, and the children's tagged `[mcpo#stack]`) for the log pane;
/// never, when another pane took the lines.
async fn next_log_line(lines: &mut Option<mpsc::Receiver<String>>) -> Option<String> {
    match lines {
        Some(lines) => lines.recv().await,
        None => std::future::pending().await,
    }
}
