//! `mcp-launch up`: turn each config file into a running, authenticated, shareable stack.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::catalog::{resolve, resolve_keeping, Overrides, ResolveOptions};
use crate::config::{self, ServerEntry};
use crate::launch::events::Events;
use crate::launch::mask::Masker;
use crate::launch::mcpo::{self, McpoLaunch};
use crate::launch::plan::{generate_key, PortPlanner};
use crate::launch::stack::{self, ControllerPlan, RunningStack, StackPlan};
use crate::launch::state::StateFile;
use crate::launch::tunnel::{TunnelKind, TunnelSpec};
use crate::output;

use super::{CliError, GlobalArgs, Outcome};

mod flags;
mod report;

pub(super) use flags::align_public_urls;
use flags::{choose_tunnel, validate_key};
use report::{finish_printing, print_events, print_summary, warn};

/// Launch each config as a stack: mcpo, a front proxy with an API key, one merged
/// /openapi.json, optionally a Cloudflare tunnel; supervise until Ctrl-C.
///
/// For each --config (one stack per file; default: the discovered config) the servers are
/// preflighted in parallel, the overrides applied (./.mcp-launch/overrides.json), mcpo started on
/// 127.0.0.1 and the front proxy on --host:--port. The front enforces the key (X-API-Key or
/// Authorization: Bearer), refuses denied tools (403) and disabled servers (404), and serves the
/// merged spec at /openapi.json (open unless --protect-spec) and /healthz. A crashed mcpo or
/// cloudflared is restarted with backoff. Ctrl-C or SIGTERM stops every process; so does
/// `mcp-launch down` from another terminal.
///
/// Examples:
///   mcp-launch up --config work.json --tunnel none
///   mcp-launch up --config a.json --config b.json --shared-key --tunnel quick
#[derive(Debug, Args)]
pub struct UpArgs {
    /// Front port of the first stack; stack i gets PORT+i. Taken ports move to the next free
    /// one unless given explicitly.
    #[arg(long, value_name = "N")]
    pub port: Option<u16>,
    /// mcpo port of the first stack (127.0.0.1 only); stack i gets N+i.
    #[arg(long, value_name = "N")]
    pub mcpo_port: Option<u16>,
    /// Address the front binds (mcpo always binds 127.0.0.1).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// API key for every stack (default: a random 40-character key per stack).
    #[arg(
        long,
        value_name = "KEY",
        env = "MCP_LAUNCH_API_KEY",
        hide_env_values = true
    )]
    pub api_key: Option<String>,
    /// One random key shared by all stacks.
    #[arg(long)]
    pub shared_key: bool,
    /// none, quick (a trycloudflare.com URL) or named (needs --public-url). Default: quick
    /// when cloudflared is installed, else none.
    #[arg(long, value_enum, value_name = "MODE")]
    pub tunnel: Option<TunnelMode>,
    /// Public URL of a stack (repeat once per --config, or give one for all).
    #[arg(long = "public-url", value_name = "URL")]
    pub public_urls: Vec<String>,
    /// Named tunnel to run (`cloudflared tunnel run NAME`); without it TUNNEL_TOKEN is used.
    #[arg(long, value_name = "NAME")]
    pub tunnel_name: Option<String>,
    /// Show the logs of mcpo and cloudflared (tagged [mcpo#stack]) without more verbosity.
    #[arg(long)]
    pub stream: bool,
    /// What serves the tools: mcpo (the Python bridge), native (built in, no Python) or auto
    /// (mcpo when installed, else native).
    #[arg(long, value_enum, default_value = "auto")]
    pub controller: ControllerChoice,
    /// Require the key for /openapi.json too.
    #[arg(long)]
    pub protect_spec: bool,
    /// Check every server live before serving. Without it the native controller serves the
    /// servers the tool index knows (fresh, same definition) at once and starts them in the
    /// background; mcpo always checks every server live.
    #[arg(long)]
    pub refresh: bool,
    /// Full-screen terminal UI: watch the preflight, allow/deny tools, enable/disable servers
    /// (saved to ./.mcp-launch/overrides.json). In progress: launching from it comes next.
    #[arg(long)]
    pub tui: bool,
}

/// `--tunnel`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TunnelMode {
    /// Local URLs only.
    None,
    /// A cloudflared quick tunnel (random trycloudflare.com URL).
    Quick,
    /// A named cloudflared tunnel (your domain, via --public-url).
    Named,
}

/// `up --tui`: the configs' servers in the TUI until the operator quits (or a signal).
async fn run_tui(global: &GlobalArgs, shutdown: CancellationToken) -> Result<Outcome, CliError> {
    let opts = config::LoadOptions::from_process(global.configs.clone(), global.env_files.clone())?;
    let loaded = config::load(&opts)?;
    let entries: Vec<ServerEntry> = loaded.servers().cloned().collect();
    crate::tui::runtime::run(entries, opts.cwd.clone(), shutdown).await?;
    Ok(Outcome::Success)
}

/// `--controller`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ControllerChoice {
    /// mcpo when installed, else native.
    Auto,
    /// The mcpo Python bridge.
    Mcpo,
    /// The built-in bridge.
    Native,
}

const DEFAULT_PORT: u16 = 8000;
const DEFAULT_MCPO_PORT: u16 = 8800;

/// Bound on opening a tunnel: cloudflared registers within seconds when the network works.
const TUNNEL_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs `up` until `shutdown` is cancelled (SIGINT/SIGTERM) or every stack is gone.
pub async fn run(
    args: UpArgs,
    global: &GlobalArgs,
    shutdown: CancellationToken,
) -> Result<Outcome, CliError> {
    if args.tui {
        return run_tui(global, shutdown).await;
    }
    let began = Instant::now();
    // Flags first: a usage error must come before anything is announced, stopped or started.
    let shared_key = match (&args.api_key, args.shared_key) {
        (Some(key), _) => Some(validate_key(key)?),
        (None, true) => Some(generate_key()),
        (None, false) => None,
    };
    let masker = Masker::new();
    if let Some(key) = &shared_key {
        masker.add(key);
    }
    let opts = config::LoadOptions::from_process(global.configs.clone(), global.env_files.clone())?;
    let (loaded, failed) = config::load_each(&opts)?;
    let stack_count = loaded.stacks.len() + failed.len();
    let public_urls = align_public_urls(&args.public_urls, stack_count)?;
    let tunnel_mode = choose_tunnel(&args, &public_urls)?;
    let project_dir = opts.cwd.clone();
    let state_file = StateFile::in_project(&project_dir);
    let mut errors: Vec<(String, Value)> = Vec::new();
    for f in &failed {
        errors.push((f.name.clone(), output::error_object(&f.error)));
    }
    let running_before = state_file.read()?;
    clean_up_stale(&state_file, &running_before, &loaded, global).await?;
    // auto: mcpo when it is installed, else the native bridge (said once on stderr).
    let mcpo_program = match args.controller {
        ControllerChoice::Native => None,
        ControllerChoice::Mcpo => Some(mcpo::find_mcpo()),
        ControllerChoice::Auto => match mcpo::find_mcpo() {
            Ok(program) => Some(Ok(program)),
            Err(_) => {
                if !global.json {
                    anstream::eprintln!("controller: native (mcpo is not installed; --controller mcpo insists on it)");
                }
                None
            }
        },
    };

    let planning = Planning {
        args: &args,
        global,
        opts: &opts,
        running_before: &running_before,
        mcpo_program: &mcpo_program,
        tunnel_mode: &tunnel_mode,
        public_urls: &public_urls,
        shared_key: shared_key.as_deref(),
    };
    let mut front_ports = PortPlanner::new(args.host);
    let mut mcpo_ports = PortPlanner::new(IpAddr::from([127, 0, 0, 1]));
    let mut plans = Vec::new();
    for (i, stack) in loaded.stacks.iter().enumerate() {
        match planning.plan(i, stack, &mut front_ports, &mut mcpo_ports) {
            Ok(plan) => plans.push(plan),
            Err(error) => errors.push((stack.name.clone(), error)),
        }
    }

    let (events_tx, events_rx) = tokio::sync::mpsc::unbounded_channel();
    let events = Events::to(events_tx);
    let printer = tokio::spawn(print_events(events_rx, global.json));
    let overrides = Overrides::load(&project_dir)?;
    let mut all_entries: Vec<ServerEntry> = plans
        .iter()
        .flat_map(|p| p.entries.iter().cloned())
        .collect();
    for entry in &mut all_entries {
        // The project's choice wins over the config's, and a disabled server is not started.
        entry.disabled = overrides.is_disabled(entry);
    }
    for plan in &plans {
        events.progress(
            &plan.name,
            &format!("preflight of {} servers", plan.entries.len()),
            0,
        );
    }
    // mcpo must only get servers that answer now (one hanging server blocks its whole start),
    // so it needs a live check; the native bridge adopts the live checks' sessions and may
    // trust the tool index, starting those servers in the background.
    let (reports, mut sessions) = if mcpo_program.is_some() {
        let reports = resolve(&all_entries, &ResolveOptions::from_env(true)).await;
        (reports, Default::default())
    } else {
        resolve_keeping(&all_entries, &ResolveOptions::from_env(args.refresh)).await
    };
    let mut reports = reports.into_iter();

    let mut starts = Vec::new();
    for plan in plans {
        let stack_reports: Vec<_> = reports.by_ref().take(plan.entries.len()).collect();
        let stack_sessions = plan
            .entries
            .iter()
            .map(|entry| sessions.take(&entry.qualified))
            .collect();
        let (masker, events, overrides) = (masker.clone(), events.clone(), &overrides);
        starts.push(async move {
            let name = plan.name.clone();
            let started = stack::start(
                plan,
                stack_reports,
                stack_sessions,
                overrides,
                masker,
                events,
            );
            (name, started.await)
        });
    }
    // Nothing else is left to adopt them.
    drop(sessions);
    let started = tokio::select! {
        results = futures_util::future::join_all(starts) => results,
        _ = shutdown.cancelled() => {
            // Dropping the starts killed their process groups; drop their records too.
            let me = std::process::id() as i32;
            state_file.update(|s| s.stacks.retain(|r| r.supervisor.pgid != me))?;
            finish_printing(events, printer).await;
            return Ok(Outcome::Failed);
        }
    };
    let mut running: Vec<RunningStack> = Vec::new();
    for (name, result) in started {
        match result {
            Ok(stack) => running.push(stack),
            Err(e) => errors.push((name, output::error_object(&e))),
        }
    }
    print_summary(&running, &errors, began.elapsed(), global)?;
    if running.is_empty() {
        finish_printing(events, printer).await;
        return Ok(Outcome::Failed);
    }

    let supervisors: Vec<_> = running
        .iter()
        .cloned()
        .map(|s| tokio::spawn(async move { s.supervise().await }))
        .collect();
    shutdown.cancelled().await;
    if !global.json {
        anstream::eprintln!("stopping {} stack(s)…", running.len());
    }
    let mut survivors = Vec::new();
    for stack in &running {
        survivors.extend(stack.stop().await);
    }
    for s in supervisors {
        s.abort();
    }
    drop(running);
    finish_printing(events, printer).await;
    if survivors.is_empty() {
        if !global.json {
            anstream::eprintln!("stopped every process we started");
        }
        Ok(if errors.is_empty() {
            Outcome::Success
        } else {
            Outcome::Failed
        })
    } else {
        output::warn(&format!(
            "still running after stop: {}",
            survivors.join(", ")
        ))?;
        Ok(Outcome::Failed)
    }
}

/// What planning each stack needs to know.
struct Planning<'a> {
    args: &'a UpArgs,
    global: &'a GlobalArgs,
    opts: &'a config::LoadOptions,
    running_before: &'a crate::launch::state::State,
    /// `None` for the native controller.
    mcpo_program: &'a Option<Result<PathBuf, mcpo::ControllerError>>,
    tunnel_mode: &'a Option<(TunnelKind, PathBuf)>,
    public_urls: &'a [Option<String>],
    shared_key: Option<&'a str>,
}

impl Planning<'_> {
    /// The plan of stack `i`: ports (the front's listener bound), keys, mcpo, tunnel, public
    /// URL — or the error object why it cannot start.
    fn plan(
        &self,
        i: usize,
        stack: &config::Stack,
        front_ports: &mut PortPlanner,
        mcpo_ports: &mut PortPlanner,
    ) -> Result<StackPlan, Value> {
        if let Some(running) = self
            .running_before
            .stacks
            .iter()
            .find(|s| s.name == stack.name && s.supervisor.process_alive())
        {
            return Err(json!({
                "type": "already_running",
                "message": format!("stack {} is already running (mcp-launch up pid {}, {})", stack.name, running.supervisor.pgid, running.local_url()),
                "help": "stop it first with `mcp-launch down`, or use another config file name",
            }));
        }
        let program = match self.mcpo_program {
            Some(found) => Some(found.as_ref().map_err(|e| output::error_object(e))?.clone()),
            None => None,
        };
        // `--public-url` values follow the order of `--config`, failed files included.
        let index = self
            .opts
            .configs
            .iter()
            .position(|c| self.opts.cwd.join(c) == stack.path)
            .unwrap_or(i);
        let offset = u16::try_from(i).unwrap_or(u16::MAX);
        let front = match front_ports.take(
            self.args
                .port
                .unwrap_or(DEFAULT_PORT)
                .saturating_add(offset),
            self.args.port.is_some(),
            true,
            &format!("front port of stack {}", stack.name),
        ) {
            Ok(p) => p,
            Err(e) => {
                return Err(
                    json!({"type": "port_taken", "message": e.to_string(), "help": e.help()}),
                )
            }
        };
        let controller_port = match mcpo_ports.take(
            self.args
                .mcpo_port
                .unwrap_or(DEFAULT_MCPO_PORT)
                .saturating_add(offset),
            self.args.mcpo_port.is_some(),
            // The native bridge serves on the listener bound here; mcpo binds its port itself.
            program.is_none(),
            &format!("controller port of stack {}", stack.name),
        ) {
            Ok(p) => p,
            Err(e) => {
                return Err(
                    json!({"type": "port_taken", "message": e.to_string(), "help": e.help()}),
                )
            }
        };
        for (planned, what) in [(&front, "front"), (&controller_port, "controller")] {
            if let Some(from) = planned.moved_from {
                warn(
                    self.global,
                    &format!(
                        "stack {}: {what} port {from} is taken; using {}",
                        stack.name, planned.port
                    ),
                );
            }
        }
        let Some(listener) = front.listener else {
            return Err(
                json!({"type": "port_taken", "message": "the front port was not kept", "help": "retry"}),
            );
        };
        let tunnel = match self.tunnel_mode {
            Some((kind, program)) => Some(TunnelSpec {
                program: program.clone(),
                kind: kind.clone(),
                local_port: front.port,
                metrics_port: free_port().unwrap_or(0),
                ready_timeout: TUNNEL_TIMEOUT,
                env: Vec::new(),
            }),
            None => None,
        };
        Ok(StackPlan {
            name: stack.name.clone(),
            config: stack.path.clone(),
            entries: stack.servers.clone(),
            project_dir: self.opts.cwd.clone(),
            host: self.args.host,
            front: listener,
            api_key: self.shared_key.map_or_else(generate_key, str::to_string),
            admin_token: generate_key(),
            controller: match (program, controller_port.listener) {
                (Some(program), _) => ControllerPlan::Mcpo(McpoLaunch {
                    program,
                    port: controller_port.port,
                    key: generate_key(),
                    config: PathBuf::new(),
                    ready_timeout: mcpo::ready_timeout_from_env(),
                }),
                (None, Some(listener)) => ControllerPlan::Native {
                    listener,
                    key: generate_key(),
                },
                (None, None) => {
                    return Err(
                        json!({"type": "port_taken", "message": "the controller port was not kept", "help": "retry"}),
                    )
                }
            },
            tunnel,
            public_url: self.public_urls.get(index).cloned().flatten(),
            protect_spec: self.args.protect_spec,
        })
    }
}

/// Stacks of this launch whose record is stale (their `up` was killed): end what they left
/// running (it would hold ports, and its record is about to be replaced) and drop the record.
async fn clean_up_stale(
    state_file: &StateFile,
    state: &crate::launch::state::State,
    loaded: &config::Loaded,
    global: &GlobalArgs,
) -> Result<(), CliError> {
    let stale: Vec<_> = state
        .stacks
        .iter()
        .filter(|s| !s.supervisor.process_alive() && loaded.stacks.iter().any(|l| l.name == s.name))
        .cloned()
        .collect();
    if stale.is_empty() {
        return Ok(());
    }
    let reports = crate::launch::control::stop(&stale).await;
    for (record, report) in stale.iter().zip(&reports) {
        if !report.stopped.is_empty() {
            warn(
                global,
                &format!(
                    "stack {}: stopped what an earlier, killed `up` left running: {}",
                    record.name,
                    report.stopped.join(", ")
                ),
            );
        }
    }
    let names: Vec<&str> = stale.iter().map(|s| s.name.as_str()).collect();
    state_file.update(|s| s.stacks.retain(|r| !names.contains(&r.name.as_str())))?;
    Ok(())
}

fn free_port() -> Option<u16> {
    std::net::TcpListener::bind(("127.0.0.1", 0))
        .ok()?
        .local_addr()
        .ok()
        .map(|a| a.port())
}
