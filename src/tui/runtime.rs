//! The event loop: terminal events, ticks and effect results become messages for
//! [`App::update`]; the effects it returns run as tasks that answer with messages. Checks run in
//! parallel; their token counts and tool-index records go through one worker, so the tokenizer
//! loads at most once per batch and index writes never race.

use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use base64::Engine;
use crossterm::event::{Event, EventStream};
use futures_util::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::catalog::{self, Overrides, PreflightOptions, ServerReport};
use crate::config::{self, LoadOptions, Loaded, ServerEntry};
use crate::launch::events::Events;
use crate::launch::launcher::{self, LaunchOptions};
use crate::launch::mask::Masker;
use crate::launch::stack::RunningStack;
use crate::launch::tunnel::{self, TunnelKind};
use crate::mcp::ConnectOptions;

use super::app::App;
use super::external_editor;
use super::msg::{Effect, LaunchMsg, Msg};
use super::overrides_sync::OverridesSync;
use super::paths;
use super::screens::collector::CollectorMsg;
use super::screens::launch::{Availability, LaunchChoice, TunnelChoice};
use super::screens::results::StackResult;
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

/// Runs the TUI until the operator quits or `shutdown` is cancelled, then stops every stack
/// it launched. With `loaded` it starts on the preflight of those stacks; without, on the
/// config collector (files are loaded with `opts`, whose `configs` it fills in).
pub async fn run(
    opts: LoadOptions,
    loaded: Option<Loaded>,
    shutdown: CancellationToken,
) -> Result<Exit, TuiError> {
    let overrides = Overrides::load(&opts.cwd).map_err(TuiError::Overrides)?;
    let mut guard = TerminalGuard::enter().map_err(TuiError::NoTerminal)?;
    let (app, effects) = match &loaded {
        Some(loaded) => App::new(
            loaded.servers().cloned().collect(),
            overrides,
            Theme::from_env(),
        ),
        None => (App::collecting(overrides, Theme::from_env()), Vec::new()),
    };
    let running: Running = Arc::default();
    let (tx, rx) = mpsc::unbounded_channel::<Msg>();
    let sync = OverridesSync::spawn(opts.cwd.clone(), tx.clone());
    let context = Context {
        loaded: loaded.map(Arc::new),
        opts,
        running: Arc::clone(&running),
        shutdown: shutdown.clone(),
        sync: sync.clone(),
    };
    let result = event_loop(guard.terminal(), app, effects, context, (tx, rx)).await;
    // Choices made just before quitting are written before we go.
    sync.flushed().await;
    // The stacks go before the terminal is handed back: their stop is part of quitting.
    let stacks: Vec<RunningStack> = running
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .drain(..)
        .collect();
    for stack in &stacks {
        stack.stop().await;
    }
    drop(guard);
    result
}

/// The stacks launched from the TUI.
type Running = Arc<Mutex<Vec<RunningStack>>>;

/// What the effects need besides the app.
#[derive(Clone)]
struct Context {
    /// The stacks, once known (the collector fills them in).
    loaded: Option<Arc<Loaded>>,
    /// How config files are loaded (working directory, home, environment, `--config`s).
    opts: LoadOptions,
    running: Running,
    shutdown: CancellationToken,
    /// Writes the overrides and watches them.
    sync: OverridesSync,
}

async fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    mut app: App,
    initial: Vec<Effect>,
    context: Context,
    (tx, mut rx): (mpsc::UnboundedSender<Msg>, mpsc::UnboundedReceiver<Msg>),
) -> Result<Exit, TuiError> {
    let shutdown = &context.shutdown.clone();
    let available = Availability {
        mcpo: launcher::mcpo_available().is_ok(),
        cloudflared: tunnel::find_cloudflared().is_some(),
    };
    let _ = tx.send(Msg::Launch(LaunchMsg::Available(available)));
    if context.loaded.is_none() {
        let existing = config::candidates(&context.opts.cwd, context.opts.home.as_deref())
            .into_iter()
            .filter(|p| p.is_file())
            .collect();
        let _ = tx.send(Msg::Collector(CollectorMsg::Discovered(existing)));
    }
    // Log lines are read here, by the loop itself: while it is blocked (an editor runs) they
    // wait in their bounded channel instead of piling up in the unbounded message queue.
    let mut log_lines = super::log::take_lines();
    let counter = spawn_token_worker(tx.clone());
    let mut effects = Effects {
        tx,
        counter,
        context,
    };
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
    context: Context,
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
            Effect::Save(edits) => self.context.sync.save(edits),
            Effect::Launch(choice) => {
                let (tx, context) = (self.tx.clone(), self.context.clone());
                tokio::spawn(launch(choice, context, tx));
            }
            Effect::Copy(text) => copy_to_clipboard(&text),
            Effect::SaveLog(lines) => {
                let saved = save_log(&self.context.opts.cwd, &lines);
                let _ = self.tx.send(Msg::Launch(LaunchMsg::LogSaved(saved)));
            }
            Effect::CheckConfig(input) => {
                let opts = &self.context.opts;
                let path = paths::resolve(&input, &opts.cwd, opts.home.as_deref());
                let one = LoadOptions {
                    configs: vec![path.clone()],
                    ..opts.clone()
                };
                let result = config::load(&one)
                    .map(|loaded| loaded.servers().count())
                    .map_err(|e| format!("{e}\n{}", e.help()));
                let news = CollectorMsg::Checked {
                    input,
                    path,
                    result,
                };
                let _ = self.tx.send(Msg::Collector(news));
            }
            Effect::CompletePath(input) => {
                let opts = &self.context.opts;
                let candidates = paths::complete(&input, &opts.cwd, opts.home.as_deref());
                let news = CollectorMsg::Completions { input, candidates };
                let _ = self.tx.send(Msg::Collector(news));
            }
            Effect::LoadConfigs(configs) => {
                self.context.opts.configs = configs;
                let loaded = config::load(&self.context.opts);
                let answer = loaded
                    .map(|loaded| {
                        let entries = loaded.servers().cloned().collect();
                        self.context.loaded = Some(Arc::new(loaded));
                        entries
                    })
                    .map_err(|e| e.to_string());
                let _ = self.tx.send(Msg::ConfigsLoaded(answer));
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

/// The next tracing line (ours, and the children's tagged `[mcpo#stack]`) for the log pane;
/// never, when another pane took the lines.
async fn next_log_line(lines: &mut Option<mpsc::Receiver<String>>) -> Option<String> {
    match lines {
        Some(lines) => lines.recv().await,
        None => std::future::pending().await,
    }
}

/// Launches every stack as `choice` says; its events and then the outcome go to the app, the
/// running stacks to `context.running` (stopped when the TUI ends).
async fn launch(choice: LaunchChoice, context: Context, tx: mpsc::UnboundedSender<Msg>) {
    let Some(loaded) = context.loaded.clone() else {
        let errors = vec![(
            "launch".to_string(),
            "no config file chosen yet".to_string(),
        )];
        let _ = tx.send(Msg::Launch(LaunchMsg::Launched {
            stacks: Vec::new(),
            errors,
        }));
        return;
    };
    // The launch reads the overrides file: the choices made so far must be in it.
    context.sync.flushed().await;
    let stack_count = loaded.stacks.len();
    let tunnel = match choice.tunnel {
        TunnelChoice::None => None,
        TunnelChoice::Quick => tunnel::find_cloudflared().map(|p| (TunnelKind::Quick, p)),
        // The tunnel whose token is in TUNNEL_TOKEN (cloudflared reads it itself).
        TunnelChoice::Named => {
            tunnel::find_cloudflared().map(|p| (TunnelKind::Named { name: None }, p))
        }
    };
    let options = LaunchOptions {
        project_dir: context.opts.cwd.clone(),
        configs: context.opts.configs.clone(),
        port: Some(choice.port),
        mcpo_port: None,
        host: std::net::IpAddr::from([127, 0, 0, 1]),
        shared_key: None,
        tunnel,
        public_urls: vec![choice.public_url.clone(); stack_count],
        controller: choice.controller,
        protect_spec: false,
        refresh: false,
    };
    // The events keep flowing while the stacks run (restarts, warnings): this task lives as
    // long as a stack holds a sender.
    let (events_tx, mut events_rx) = mpsc::unbounded_channel();
    let forward = tx.clone();
    tokio::spawn(async move {
        while let Some(event) = events_rx.recv().await {
            let _ = forward.send(Msg::Launch(LaunchMsg::Stack(event)));
        }
    });
    let events = Events::to(events_tx);
    let masker = Masker::new();
    let outcome = launcher::launch(&loaded, &options, &masker, &events, &context.shutdown).await;
    let (stacks, mut errors) = match outcome {
        Ok(Some(launched)) => {
            let errors = launched
                .errors
                .iter()
                .map(|(stack, e)| (stack.clone(), e.to_string()))
                .collect();
            for stack in &launched.running {
                let supervised = stack.clone();
                tokio::spawn(async move { supervised.supervise().await });
            }
            let results = launched.running.iter().map(result_of).collect();
            context
                .running
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .extend(launched.running);
            (results, errors)
        }
        Ok(None) => (
            Vec::new(),
            vec![("launch".to_string(), "interrupted".to_string())],
        ),
        Err(e) => (Vec::new(), vec![("launch".to_string(), e.to_string())]),
    };
    if stacks.is_empty() && errors.is_empty() {
        errors.push(("launch".into(), "no stack to launch".into()));
    }
    let _ = tx.send(Msg::Launch(LaunchMsg::Launched { stacks, errors }));
}

fn result_of(stack: &RunningStack) -> StackResult {
    let record = stack.record();
    StackResult {
        name: record.name.clone(),
        openapi_url: format!("{}/openapi.json", record.public_url),
        api_key: record.api_key.clone(),
        operations: record.operations,
        servers: record
            .servers
            .iter()
            .map(|s| (s.name.clone(), s.operations))
            .collect(),
        warnings: record.warnings.clone(),
    }
}

/// OSC 52: the terminal (and tmux, and ssh sessions) put `text` on the clipboard.
fn copy_to_clipboard(text: &str) {
    let encoded = base64::engine::general_purpose::STANDARD.encode(text);
    let mut out = std::io::stdout();
    let _ = write!(out, "\x1b]52;c;{encoded}\x07");
    let _ = out.flush();
}

/// Writes the log lines to `./.mcp-launch/tui-log-<unix time>.txt` (owner-only, never through
/// a planted symlink: `create_new` refuses any existing name); the path, or why not.
fn save_log(project_dir: &std::path::Path, lines: &[String]) -> Result<String, String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = crate::project::ensure(project_dir)
        .map_err(|e| format!("{}: {e}", crate::project::dir(project_dir).display()))?;
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let path = dir.join(format!("tui-log-{secs}.txt"));
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path.display().to_string())
}
