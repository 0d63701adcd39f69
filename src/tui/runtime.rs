//! The event loop: terminal events, ticks and effect results become messages for
//! [`App::update`]; the effects it returns run as tasks that answer with messages. Checks run in
//! parallel; their token counts and tool-index records go through one worker, so the tokenizer
//! loads at most once per batch and index writes never race.

use std::path::PathBuf;
use std::time::Duration;

use crossterm::event::{Event, EventStream};
use futures_util::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::catalog::{self, Overrides, PreflightOptions, ServerReport};
use crate::config::ServerEntry;
use crate::mcp::ConnectOptions;

use super::app::App;
use super::external_editor;
use super::msg::{Effect, Msg};
use super::terminal::TerminalGuard;
use super::theme::Theme;
use super::{view, TuiError};

const TICK: Duration = Duration::from_millis(100);

/// How the TUI ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// The operator quit.
    Quit,
    /// SIGINT/SIGTERM from outside.
    Signalled,
}

/// Runs the TUI over `entries` until the operator quits or `shutdown` is cancelled.
pub async fn run(
    entries: Vec<ServerEntry>,
    project_dir: PathBuf,
    shutdown: CancellationToken,
) -> Result<Exit, TuiError> {
    let overrides = Overrides::load(&project_dir).map_err(TuiError::Overrides)?;
    let mut guard = TerminalGuard::enter().map_err(TuiError::NoTerminal)?;
    let (app, effects) = App::new(entries, overrides, Theme::from_env());
    let result = event_loop(guard.terminal(), app, effects, &shutdown).await;
    drop(guard);
    result
}

async fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    mut app: App,
    initial: Vec<Effect>,
    shutdown: &CancellationToken,
) -> Result<Exit, TuiError> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Msg>();
    let counter = spawn_token_worker(tx.clone());
    let mut effects = Effects { tx, counter };
    for effect in initial {
        effects.run(effect);
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
                    let _ = effects.tx.send(edited);
                }
                effect => effects.run(effect),
            }
        }
    }
}

/// Runs effects as tasks.
struct Effects {
    tx: mpsc::UnboundedSender<Msg>,
    counter: mpsc::UnboundedSender<(usize, ServerEntry, ServerReport)>,
}

impl Effects {
    fn run(&mut self, effect: Effect) {
        match effect {
            Effect::Check { row, entry } => {
                let (tx, counter) = (self.tx.clone(), self.counter.clone());
                tokio::spawn(async move {
                    let opts = PreflightOptions {
                        connect: ConnectOptions::from_env(),
                        count_tokens: false,
                    };
                    let report = catalog::preflight(std::slice::from_ref(&entry), &opts)
                        .await
                        .pop()
                        .expect("one report per entry");
                    // Shown at once; its token counts follow from the worker.
                    let _ = tx.send(Msg::Checked {
                        row,
                        report: Box::new(report.clone()),
                    });
                    let _ = counter.send((row, entry, report));
                });
            }
            Effect::Save(overrides) => {
                let saved = overrides.save().map_err(|e| e.to_string());
                let _ = self.tx.send(Msg::Saved(saved));
            }
            // The event loop runs these itself: they need the terminal.
            Effect::Quit | Effect::EditExternally(_) => {}
        }
    }
}

/// One task that counts tokens for finished checks (whatever has queued up, in one batch) and
/// records them in the tool index, then sends the complete reports.
fn spawn_token_worker(
    tx: mpsc::UnboundedSender<Msg>,
) -> mpsc::UnboundedSender<(usize, ServerEntry, ServerReport)> {
    let (counter, mut queue) = mpsc::unbounded_channel::<(usize, ServerEntry, ServerReport)>();
    tokio::spawn(async move {
        while let Some(first) = queue.recv().await {
            let mut batch = vec![first];
            while let Ok(more) = queue.try_recv() {
                batch.push(more);
            }
            let mut reports: Vec<ServerReport> = batch.iter().map(|(_, _, r)| r.clone()).collect();
            catalog::count_tokens(&mut reports).await;
            for ((row, entry, _), mut report) in batch.into_iter().zip(reports) {
                catalog::remember(&entry, &mut report);
                let _ = tx.send(Msg::Checked {
                    row,
                    report: Box::new(report),
                });
            }
        }
    });
    counter
}
