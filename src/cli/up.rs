//! `mcp-launch up`: turn each config file into a running, authenticated, shareable stack.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::catalog::{Overrides, ResolveOptions};
use crate::config::{self, ServerEntry};
use crate::launch::events::{Events, StackEvent};
use crate::launch::mask::Masker;
use crate::launch::mcpo::{self, McpoLaunch};
use crate::launch::plan::{generate_key, PortPlanner};
use crate::launch::stack::{self, RunningStack, StackPlan};
use crate::launch::state::StateFile;
use crate::launch::tunnel::{self, TunnelKind, TunnelSpec};
use crate::output::{self, style};

use super::{CliError, GlobalArgs, Outcome};

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
    /// What serves the tools: mcpo, native (not yet available) or auto (mcpo for now).
    #[arg(long, value_enum, default_value = "auto")]
    pub controller: ControllerChoice,
    /// Require the key for /openapi.json too.
    #[arg(long)]
    pub protect_spec: bool,
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

/// `--controller`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ControllerChoice {
    /// mcpo when installed.
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
    let began = Instant::now();
    if args.controller == ControllerChoice::Native {
        return Err(CliError::Usage {
            message: "the native controller is not available yet".into(),
            help: "use --controller mcpo (or auto)".into(),
        });
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
    let mcpo_program = mcpo::find_mcpo();

    let masker = Masker::new();
    let shared_key = match (&args.api_key, args.shared_key) {
        (Some(key), _) => Some(validate_key(key)?),
        (None, true) => Some(generate_key()),
        (None, false) => None,
    };
    if let Some(key) = &shared_key {
        masker.add(key);
    }
    let mut front_ports = PortPlanner::new(args.host);
    let mut mcpo_ports = PortPlanner::new(IpAddr::from([127, 0, 0, 1]));
    let mut plans = Vec::new();
    for (i, stack) in loaded.stacks.iter().enumerate() {
        if let Some(running) = running_before
            .stacks
            .iter()
            .find(|s| s.name == stack.name && s.supervisor.process_alive())
        {
            errors.push((stack.name.clone(), json!({
                "type": "already_running",
                "message": format!("stack {} is already running (mcp-launch up pid {}, {})", stack.name, running.supervisor.pgid, running.local_url()),
                "help": "stop it first with `mcp-launch down`, or use another config file name",
            })));
            continue;
        }
        let program = match &mcpo_program {
            Ok(p) => p.clone(),
            Err(e) => {
                errors.push((stack.name.clone(), output::error_object(e)));
                continue;
            }
        };
        // `--public-url` values follow the order of `--config`, failed files included.
        let index = opts
            .configs
            .iter()
            .position(|c| opts.cwd.join(c) == stack.path)
            .unwrap_or(i);
        let offset = u16::try_from(i).unwrap_or(u16::MAX);
        let front = match front_ports.take(
            args.port.unwrap_or(DEFAULT_PORT).saturating_add(offset),
            args.port.is_some(),
            true,
            &format!("front port of stack {}", stack.name),
        ) {
            Ok(p) => p,
            Err(e) => {
                errors.push((
                    stack.name.clone(),
                    json!({"type": "port_taken", "message": e.to_string(), "help": e.help()}),
                ));
                continue;
            }
        };
        let controller_port = match mcpo_ports.take(
            args.mcpo_port
                .unwrap_or(DEFAULT_MCPO_PORT)
                .saturating_add(offset),
            args.mcpo_port.is_some(),
            false,
            &format!("mcpo port of stack {}", stack.name),
        ) {
            Ok(p) => p,
            Err(e) => {
                errors.push((
                    stack.name.clone(),
                    json!({"type": "port_taken", "message": e.to_string(), "help": e.help()}),
                ));
                continue;
            }
        };
        for (planned, what) in [(&front, "front"), (&controller_port, "mcpo")] {
            if let Some(from) = planned.moved_from {
                warn(
                    global,
                    &format!(
                        "stack {}: {what} port {from} is taken; using {}",
                        stack.name, planned.port
                    ),
                );
            }
        }
        let Some(listener) = front.listener else {
            continue;
        };
        let tunnel = match &tunnel_mode {
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
        plans.push(StackPlan {
            name: stack.name.clone(),
            config: stack.path.clone(),
            entries: stack.servers.clone(),
            project_dir: project_dir.clone(),
            host: args.host,
            front: listener,
            api_key: shared_key.clone().unwrap_or_else(generate_key),
            admin_token: generate_key(),
            mcpo: McpoLaunch {
                program,
                port: controller_port.port,
                key: generate_key(),
                config: PathBuf::new(),
                ready_timeout: mcpo::ready_timeout_from_env(),
            },
            tunnel,
            public_url: public_urls.get(index).cloned().flatten(),
            protect_spec: args.protect_spec,
        });
    }

    let (events_tx, events_rx) = tokio::sync::mpsc::unbounded_channel();
    let events = Events::to(events_tx);
    let printer = tokio::spawn(print_events(events_rx, global.json));
    let overrides = Overrides::load(&project_dir)?;
    let all_entries: Vec<ServerEntry> = plans
        .iter()
        .flat_map(|p| p.entries.iter().cloned())
        .collect();
    for plan in &plans {
        events.progress(
            &plan.name,
            &format!("preflight of {} servers", plan.entries.len()),
            0,
        );
    }
    let mut reports = crate::catalog::resolve(&all_entries, &ResolveOptions::from_env(true))
        .await
        .into_iter();

    let mut starts = Vec::new();
    for plan in plans {
        let stack_reports: Vec<_> = reports.by_ref().take(plan.entries.len()).collect();
        let (masker, events, overrides) = (masker.clone(), events.clone(), &overrides);
        starts.push(async move {
            let name = plan.name.clone();
            (
                name,
                stack::start(plan, stack_reports, overrides, masker, events).await,
            )
        });
    }
    let started = tokio::select! {
        results = futures_util::future::join_all(starts) => results,
        _ = shutdown.cancelled() => Vec::new(),
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

/// Lets the printer show what is queued, then ends it (stacks that failed to start may still
/// hold a sender, so waiting for the channel to close could take forever).
async fn finish_printing(events: Events, printer: tokio::task::JoinHandle<()>) {
    drop(events);
    let abort = printer.abort_handle();
    if tokio::time::timeout(Duration::from_millis(200), printer)
        .await
        .is_err()
    {
        abort.abort();
    }
}

/// `--public-url`: none, one for all stacks, or one per config.
pub(super) fn align_public_urls(
    urls: &[String],
    stacks: usize,
) -> Result<Vec<Option<String>>, CliError> {
    for url in urls {
        let parsed = reqwest::Url::parse(url).map_err(|e| CliError::Usage {
            message: format!("--public-url {url:?} is not a URL: {e}"),
            help: "give the full base URL, like https://tools.example.com".into(),
        })?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
            return Err(CliError::Usage {
                message: format!("--public-url {url:?} must be an http(s) URL with a host"),
                help: "give the full base URL, like https://tools.example.com".into(),
            });
        }
    }
    let clean = |u: &String| Some(u.trim_end_matches('/').to_string());
    match urls.len() {
        0 => Ok(vec![None; stacks]),
        1 => Ok(vec![clean(&urls[0]); stacks]),
        n if n == stacks => Ok(urls.iter().map(clean).collect()),
        n => Err(CliError::Usage {
            message: format!("{n} --public-url values for {stacks} config files"),
            help: "give one --public-url per --config (in the same order), or one for all".into(),
        }),
    }
}

/// Resolves `--tunnel` (and its default) to the kind and the cloudflared program, or none.
fn choose_tunnel(
    args: &UpArgs,
    public_urls: &[Option<String>],
) -> Result<Option<(TunnelKind, PathBuf)>, CliError> {
    let cloudflared = tunnel::find_cloudflared();
    let mode = match args.tunnel {
        Some(mode) => mode,
        None if cloudflared.is_some() => {
            anstream::eprintln!("tunnel: quick (cloudflared found; --tunnel none keeps it local)");
            TunnelMode::Quick
        }
        None => {
            if args.tunnel_name.is_some() {
                TunnelMode::Named
            } else {
                anstream::eprintln!(
                    "tunnel: none (cloudflared is not installed; serving local URLs)"
                );
                TunnelMode::None
            }
        }
    };
    if args.tunnel_name.is_some() && mode != TunnelMode::Named {
        return Err(CliError::Usage {
            message: "--tunnel-name only applies to --tunnel named".into(),
            help: "add --tunnel named, or drop --tunnel-name".into(),
        });
    }
    let kind = match mode {
        TunnelMode::None => return Ok(None),
        TunnelMode::Quick => TunnelKind::Quick,
        TunnelMode::Named => {
            if public_urls.iter().any(Option::is_none) {
                return Err(CliError::Usage {
                    message: "--tunnel named needs --public-url (the hostname your tunnel routes to the front)".into(),
                    help: "add --public-url https://tools.example.com (one per --config, or one for all)".into(),
                });
            }
            TunnelKind::Named {
                name: args.tunnel_name.clone(),
            }
        }
    };
    match cloudflared {
        Some(program) => Ok(Some((kind, program))),
        None => Err(CliError::Usage {
            message: format!("--tunnel {} needs cloudflared, which is not installed", if matches!(kind, TunnelKind::Quick) { "quick" } else { "named" }),
            help: format!("install it (https://developers.cloudflare.com/cloudflare-one/connections/connect-networks/downloads/) or set {}=/path/to/cloudflared; or use --tunnel none", tunnel::CLOUDFLARED_ENV),
        }),
    }
}

fn validate_key(key: &str) -> Result<String, CliError> {
    let key = key.trim();
    if key.len() < 16 || !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(CliError::Usage {
            message: "--api-key must be at least 16 visible ASCII characters (no spaces)".into(),
            help: "leave it out for a random 40-character key, or use --shared-key for one random key for all stacks".into(),
        });
    }
    Ok(key.to_string())
}

fn free_port() -> Option<u16> {
    std::net::TcpListener::bind(("127.0.0.1", 0))
        .ok()?
        .local_addr()
        .ok()
        .map(|a| a.port())
}

fn warn(global: &GlobalArgs, message: &str) {
    tracing::info!("{message}");
    if !global.json {
        let _ = output::warn(message);
    }
}

/// Prints what the stacks report while they start and run (stderr; JSON lines with --json).
async fn print_events(mut rx: tokio::sync::mpsc::UnboundedReceiver<StackEvent>, json: bool) {
    while let Some(event) = rx.recv().await {
        if json {
            continue;
        }
        match event {
            StackEvent::Progress {
                stack,
                step,
                waited_secs,
            } => {
                // Every 5 s is enough to show life without flooding the terminal.
                if waited_secs == 0 || waited_secs % 5 == 0 {
                    let dim = style::DIM;
                    let after = if waited_secs > 0 {
                        format!(" ({waited_secs}s)")
                    } else {
                        String::new()
                    };
                    anstream::eprintln!("{dim}{stack}: {step}{after}…{dim:#}");
                }
            }
            StackEvent::Warning { stack, message } => {
                let _ = output::warn(&format!("{stack}: {message}"));
            }
            StackEvent::Restarting {
                stack,
                process,
                reason,
                delay_secs,
                attempt,
            } => {
                let _ = output::warn(&format!(
                    "{stack}: {process} {reason}; restart {attempt} in {delay_secs}s"
                ));
            }
            StackEvent::Restarted {
                stack,
                process,
                new_url,
            } => {
                let url = new_url
                    .map(|u| format!("; new URL {u}/openapi.json"))
                    .unwrap_or_default();
                anstream::eprintln!("{stack}: {process} restarted{url}");
            }
        }
    }
}

fn print_summary(
    running: &[RunningStack],
    errors: &[(String, Value)],
    took: Duration,
    global: &GlobalArgs,
) -> Result<(), CliError> {
    if global.json {
        let stacks: Vec<Value> = running
            .iter()
            .map(|s| {
                let record = s.record();
                let mut v = stack::summary_json(&record);
                v["api_key"] = json!(record.api_key);
                v["local_url"] = json!(record.local_url());
                v["tunnel"] = json!(record.tunnel);
                v
            })
            .collect();
        let errors: Vec<Value> = errors
            .iter()
            .map(|(stack, e)| json!({"stack": stack, "error": e}))
            .collect();
        output::print_json(
            &json!({"success": !running.is_empty(), "stacks": stacks, "errors": errors, "ready_ms": took.as_millis() as u64}),
        )?;
        return Ok(());
    }
    let (head, good, bad, dim) = (style::HEAD, style::GOOD, style::BAD, style::DIM);
    for stack in running {
        let r = stack.record();
        anstream::println!(
            "{head}{}{head:#}  {good}ready{good:#} {dim}in {:.1}s{dim:#}",
            r.name,
            took.as_secs_f64()
        );
        anstream::println!("  spec     {}/openapi.json", r.public_url);
        anstream::println!("  key      X-API-Key: {}", r.api_key);
        let servers: Vec<String> = r
            .servers
            .iter()
            .map(|s| format!("{} ({})", s.name, s.operations))
            .collect();
        anstream::println!(
            "  servers  {} — {} operations",
            servers.join(", "),
            r.operations
        );
        if global.verbose > 0 {
            anstream::println!(
                "  {dim}local {}  mcpo 127.0.0.1:{}  tunnel {}{dim:#}",
                r.local_url(),
                r.controller_port,
                r.tunnel
            );
        }
        for w in &r.warnings {
            let _ = output::warn(w);
        }
    }
    for (stack, e) in errors {
        anstream::println!(
            "{head}{stack}{head:#}  {bad}failed{bad:#}: {}",
            e["message"].as_str().unwrap_or("")
        );
        if let Some(help) = e["help"].as_str() {
            anstream::println!("  {dim}help: {help}{dim:#}");
        }
    }
    if !running.is_empty() {
        anstream::println!(
            "\nShare with ChatGPT: import the spec URL as an Action; authentication \"API Key\", custom header X-API-Key.\nServing until Ctrl-C (or `mcp-launch down`)."
        );
    }
    Ok(())
}
