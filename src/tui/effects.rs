//! The effects the app asks for, run off the event loop: each is a task (a blocking one for
//! file system work: loading configs, completing paths, saving the log) that answers with a
//! [`Msg`]. Every task is spawned on the TUI's [`TaskTracker`] and ends when the TUI's stop
//! token is cancelled, so quitting joins them all. Checks run in parallel; their token counts
//! and tool-index records go through one worker, so the tokenizer loads at most once per batch
//! and index writes never race.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use base64::Engine;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::auth::server::Store;
use crate::catalog::{self, PreflightOptions, ServerReport};
use crate::config::{self, LoadOptions, Loaded, ServerEntry};
use crate::gateway::Gateway;
use crate::launch::events::Events;
use crate::launch::launcher::{self, LaunchOptions};
use crate::launch::mask::Masker;
use crate::launch::stack::RunningStack;
use crate::launch::tunnel::{self, TunnelKind};

use super::mcp::{ConsentTo, McpRequest, ServeMcp};
use super::msg::{Effect, LaunchMsg, Msg};
use super::overrides_sync::OverridesSync;
use super::paths;
use super::screens::collector::CollectorMsg;
use super::screens::consent::ConsentMsg;
use super::screens::launch::{Availability, LaunchChoice, TunnelChoice};
use super::screens::results::StackResult;

/// The stacks launched from the TUI (stopped when it ends).
pub(super) type Running = Arc<Mutex<Vec<RunningStack>>>;

/// The config files chosen and what they load to.
struct Chosen {
    loaded: Arc<Loaded>,
    configs: Vec<PathBuf>,
}

/// What the effects need besides the app (cheap to clone: tasks take a copy).
#[derive(Clone)]
pub(super) struct Context {
    /// The stacks, once known (the collector fills them in, from a task).
    chosen: Arc<Mutex<Option<Chosen>>>,
    /// How config files are loaded (working directory, home, environment).
    opts: LoadOptions,
    /// What was launched.
    pub(super) running: Running,
    /// Cancelled when the TUI ends: every task stops.
    pub(super) stop: CancellationToken,
    /// Writes the overrides and watches them.
    pub(super) sync: OverridesSync,
    /// Every task the TUI spawns.
    pub(super) tasks: TaskTracker,
    /// The launches under way (joined before the stacks are stopped, so none is missed).
    pub(super) launching: TaskTracker,
    /// Serves `/mcp` on launched stacks (`up --tui` hands it down; none: REST only).
    pub(super) mcp: Option<ServeMcp>,
    /// The launched stacks' `/mcp` gateways (shut down when the TUI ends).
    pub(super) gateways: Arc<Mutex<Vec<Gateway>>>,
    /// Where the stacks' consent requests go: to the app.
    consent: ConsentTo,
    /// The built-in authorization server's state, where `a` records an approval (the one
    /// `mcp-launch auth approve` writes).
    pub(super) oauth_store: Arc<dyn Store>,
}

impl Context {
    /// The context of a TUI on `opts` (with `loaded` when `--config` chose the stacks).
    pub(super) fn new(
        opts: LoadOptions,
        loaded: Option<Loaded>,
        stop: CancellationToken,
        tx: mpsc::UnboundedSender<Msg>,
    ) -> Context {
        let tasks = TaskTracker::new();
        let chosen = loaded.map(|loaded| Chosen {
            loaded: Arc::new(loaded),
            configs: opts.configs.clone(),
        });
        Context {
            chosen: Arc::new(Mutex::new(chosen)),
            consent: super::mcp::consent_to_app(tx.clone()),
            sync: OverridesSync::spawn(opts.cwd.clone(), tx, &tasks),
            opts,
            running: Running::default(),
            stop,
            tasks,
            launching: TaskTracker::new(),
            mcp: None,
            gateways: Arc::default(),
            oauth_store: crate::auth::server::default_store(),
        }
    }

    /// The loaded stacks and their config files, once chosen.
    pub(super) fn chosen(&self) -> Option<(Arc<Loaded>, Vec<PathBuf>)> {
        let chosen = self.chosen.lock().unwrap_or_else(PoisonError::into_inner);
        chosen
            .as_ref()
            .map(|c| (Arc::clone(&c.loaded), c.configs.clone()))
    }
}

/// Runs effects as tasks.
pub(super) struct Effects {
    tx: mpsc::UnboundedSender<Msg>,
    counter: mpsc::UnboundedSender<(usize, ServerEntry, ServerReport)>,
    context: Context,
}

impl Effects {
    /// The runner; it starts by finding the installed programs and, with no stacks chosen
    /// yet, the config files discovery knows.
    pub(super) fn start(context: Context, tx: mpsc::UnboundedSender<Msg>) -> Effects {
        let counter = spawn_token_worker(tx.clone(), &context);
        let (answer, opts) = (tx.clone(), context.opts.clone());
        let collecting = context.chosen().is_none();
        context.tasks.spawn_blocking(move || {
            let available = Availability {
                mcpo: launcher::mcpo_available().is_ok(),
                cloudflared: tunnel::find_cloudflared().is_some(),
            };
            let _ = answer.send(Msg::Launch(LaunchMsg::Available(available)));
            if collecting {
                let existing = config::candidates(&opts.cwd, opts.home.as_deref())
                    .into_iter()
                    .filter(|p| p.is_file())
                    .collect();
                let _ = answer.send(Msg::Collector(CollectorMsg::Discovered(existing)));
            }
        });
        Effects {
            tx,
            counter,
            context,
        }
    }

    /// Queues `msg` for the app, as a task would.
    pub(super) fn answer(&self, msg: Msg) {
        let _ = self.tx.send(msg);
    }

    /// Starts `effect`; its answer comes as a message. (The event loop runs
    /// [`Effect::Quit`] and [`Effect::EditExternally`] itself: they need the terminal.)
    pub(super) fn run(&self, effect: Effect) {
        let tasks = &self.context.tasks;
        let tx = self.tx.clone();
        let opts = self.context.opts.clone();
        match effect {
            Effect::Check { row, entry } => {
                let (counter, stop) = (self.counter.clone(), self.context.stop.clone());
                tasks.spawn(async move {
                    tokio::select! {
                        () = stop.cancelled() => {}
                        () = check(row, entry, tx, counter) => {}
                    }
                });
            }
            Effect::Save(edits) => self.context.sync.save(edits),
            Effect::Launch(choice, failed) => {
                let launch = launch(choice, failed, self.context.clone(), tx);
                tasks.spawn(self.context.launching.track_future(launch));
            }
            Effect::Copy(text) => copy_to_clipboard(&text),
            Effect::SaveLog(lines) => {
                tasks.spawn_blocking(move || {
                    let saved = save_log(&opts.cwd, &lines);
                    let _ = tx.send(Msg::Launch(LaunchMsg::LogSaved(saved)));
                });
            }
            Effect::CheckConfig(input) => {
                tasks.spawn_blocking(move || {
                    let _ = tx.send(Msg::Collector(check_config(input, opts)));
                });
            }
            Effect::CompletePath(input) => {
                tasks.spawn_blocking(move || {
                    let candidates = paths::complete(&input, &opts.cwd, opts.home.as_deref());
                    let news = CollectorMsg::Completions { input, candidates };
                    let _ = tx.send(Msg::Collector(news));
                });
            }
            Effect::LoadConfigs(configs) => {
                let chosen = Arc::clone(&self.context.chosen);
                tasks.spawn_blocking(move || {
                    let _ = tx.send(Msg::ConfigsLoaded(load_configs(configs, opts, &chosen)));
                });
            }
            Effect::Approve {
                row,
                stack,
                server,
                tools,
            } => {
                tasks.spawn(async move {
                    let approving = tokio::task::spawn_blocking(move || {
                        let definitions: Vec<&serde_json::Value> = tools.iter().collect();
                        catalog::approvals::approve(&stack, &server, &definitions)
                            .map_err(|e| e.to_string())
                    });
                    let result = approving.await.unwrap_or_else(|e| Err(e.to_string()));
                    if result.as_ref().is_ok_and(|approved| !approved.is_empty()) {
                        // Running gateways serve the approved tool from their next list.
                        crate::gateway::daemon::client::reload_every_gateway().await;
                    }
                    let _ = tx.send(Msg::Approved { row, result });
                });
            }
            Effect::ApproveConsent { request_id } => {
                let store = Arc::clone(&self.context.oauth_store);
                tasks.spawn_blocking(move || {
                    let result = crate::auth::server::admin::approve(store.as_ref(), &request_id)
                        .map_err(|e| e.to_string());
                    let _ = tx.send(Msg::Consent(ConsentMsg::Approved { request_id, result }));
                });
            }
            Effect::Quit | Effect::EditExternally(_) => {}
        }
    }
}

/// One server's check (a live handshake): shown at once, its token counts follow from the
/// worker.
async fn check(
    row: usize,
    entry: ServerEntry,
    tx: mpsc::UnboundedSender<Msg>,
    counter: mpsc::UnboundedSender<(usize, ServerEntry, ServerReport)>,
) {
    let opts = PreflightOptions::from_env();
    let Some(report) = catalog::preflight(std::slice::from_ref(&entry), &opts)
        .await
        .pop()
    else {
        return;
    };
    let _ = tx.send(Msg::Checked {
        row,
        report: Box::new(report.clone()),
    });
    let _ = counter.send((row, entry, report));
}

/// One config file the operator typed or picked, loaded on its own: its servers, or why not.
fn check_config(input: String, opts: LoadOptions) -> CollectorMsg {
    let path = paths::resolve(&input, &opts.cwd, opts.home.as_deref());
    let one = LoadOptions {
        configs: vec![path.clone()],
        ..opts
    };
    let result = config::load(&one)
        .map(|loaded| loaded.servers().count())
        .map_err(|e| format!("{e}\n{}", e.help()));
    CollectorMsg::Checked {
        input,
        path,
        result,
    }
}

/// The chosen config files loaded as the stacks (kept in `chosen` for the launch): their
/// servers, or why they do not load.
fn load_configs(
    configs: Vec<PathBuf>,
    opts: LoadOptions,
    chosen: &Mutex<Option<Chosen>>,
) -> Result<Vec<ServerEntry>, String> {
    let opts = LoadOptions {
        configs: configs.clone(),
        ..opts
    };
    let loaded = config::load(&opts).map_err(|e| e.to_string())?;
    let entries = loaded.servers().cloned().collect();
    *chosen.lock().unwrap_or_else(PoisonError::into_inner) = Some(Chosen {
        loaded: Arc::new(loaded),
        configs,
    });
    Ok(entries)
}

/// One task that counts tokens for finished checks (whatever has queued up, in one batch) and
/// records them in the tool index, then sends the complete reports.
fn spawn_token_worker(
    tx: mpsc::UnboundedSender<Msg>,
    context: &Context,
) -> mpsc::UnboundedSender<(usize, ServerEntry, ServerReport)> {
    let (counter, mut queue) = mpsc::unbounded_channel::<(usize, ServerEntry, ServerReport)>();
    let stop = context.stop.clone();
    context.tasks.spawn(async move {
        loop {
            let first = tokio::select! {
                () = stop.cancelled() => return,
                first = queue.recv() => match first {
                    Some(first) => first,
                    None => return,
                },
            };
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

/// Launches every stack as `choice` says; its events and then the outcome go to the app, the
/// running stacks to `context.running` (stopped when the TUI ends).
async fn launch(
    choice: LaunchChoice,
    failed_just_now: Vec<ServerReport>,
    context: Context,
    tx: mpsc::UnboundedSender<Msg>,
) {
    let Some((loaded, configs)) = context.chosen() else {
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
    let stacks = loaded.stacks.len();
    let options = launch_options(&choice, &context.opts, configs, stacks, failed_just_now);
    let events = spawn_event_forwarder(tx.clone(), &context);
    let masker = Masker::new();
    let outcome = launcher::launch(&loaded, &options, &masker, &events, &context.stop).await;
    let (stacks, mut errors) = match outcome {
        Ok(Some(launched)) => {
            let errors = launched
                .errors
                .iter()
                .map(|(stack, e)| (stack.clone(), e.to_string()))
                .collect();
            for stack in &launched.running {
                let supervised = stack.clone();
                context
                    .tasks
                    .spawn(async move { supervised.supervise().await });
            }
            serve_mcp(&launched.running, &choice, &context, &tx).await;
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

/// `/mcp` on the stacks just launched, as `up` serves it (when `up --tui` handed that down):
/// OAuth by default with a tunnel, its consent requests sent to the app. Why not, in the log.
async fn serve_mcp(
    running: &[RunningStack],
    choice: &LaunchChoice,
    context: &Context,
    tx: &mpsc::UnboundedSender<Msg>,
) {
    let Some(serve) = &context.mcp else {
        return;
    };
    let log = tx.clone();
    let request = McpRequest {
        shared: choice.tunnel != TunnelChoice::None,
        consent: Arc::clone(&context.consent),
        say: Arc::new(move |line| {
            let _ = log.send(Msg::Launch(LaunchMsg::Log(line)));
        }),
    };
    match serve(running.to_vec(), request).await {
        Ok(gateways) => (context.gateways.lock())
            .unwrap_or_else(PoisonError::into_inner)
            .extend(gateways),
        Err(e) => {
            let line = format!("/mcp is not served: {e}");
            let _ = tx.send(Msg::Launch(LaunchMsg::Log(line)));
        }
    }
}

/// The launcher's options for `choice`.
fn launch_options(
    choice: &LaunchChoice,
    opts: &LoadOptions,
    configs: Vec<PathBuf>,
    stack_count: usize,
    failed_just_now: Vec<ServerReport>,
) -> LaunchOptions {
    let tunnel = match choice.tunnel {
        TunnelChoice::None => None,
        TunnelChoice::Quick => tunnel::find_cloudflared().map(|p| (TunnelKind::Quick, p)),
        // The tunnel whose token is in TUNNEL_TOKEN (cloudflared reads it itself).
        TunnelChoice::Named => {
            tunnel::find_cloudflared().map(|p| (TunnelKind::Named { name: None }, p))
        }
    };
    LaunchOptions {
        project_dir: opts.cwd.clone(),
        configs,
        env_files: opts.env_files.clone(),
        port: Some(choice.port),
        mcpo_port: None,
        host: std::net::IpAddr::from([127, 0, 0, 1]),
        shared_key: None,
        tunnel,
        public_urls: vec![choice.public_url.clone(); stack_count],
        controller: choice.controller,
        protect_spec: false,
        refresh: false,
        max_output: None,
        failed_just_now,
    }
}

/// The stacks' events, forwarded to the app while they run (restarts, warnings), until the
/// TUI stops or no stack holds a sender any more.
fn spawn_event_forwarder(tx: mpsc::UnboundedSender<Msg>, context: &Context) -> Events {
    let (events_tx, mut events_rx) = mpsc::unbounded_channel();
    let stop = context.stop.clone();
    context.tasks.spawn(async move {
        loop {
            let event = tokio::select! {
                () = stop.cancelled() => return,
                event = events_rx.recv() => match event {
                    Some(event) => event,
                    None => return,
                },
            };
            let _ = tx.send(Msg::Launch(LaunchMsg::Stack(event)));
        }
    });
    Events::to(events_tx)
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
        mcp: (record.mcp_auth.as_ref())
            .map(|auth| (format!("{}/mcp", record.public_url), auth.clone())),
    }
}

/// OSC 52: the terminal (and tmux, and ssh sessions) put `text` on the clipboard. (A few
/// bytes to the terminal the event loop owns: written in place.)
fn copy_to_clipboard(text: &str) {
    let encoded = base64::engine::general_purpose::STANDARD.encode(text);
    let mut out = std::io::stdout();
    let _ = write!(out, "\x1b]52;c;{encoded}\x07");
    let _ = out.flush();
}

/// Writes the log lines to `./.mcp-launch/tui-log-<unix time>.txt` (owner-only, never through
/// a planted symlink: `create_new` refuses any existing name); the path, or why not.
fn save_log(project_dir: &std::path::Path, lines: &[String]) -> Result<String, String> {
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
