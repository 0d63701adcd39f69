//! `mcp-launch daemon status|stop`; how `call`, `list`, `inspect` and `search` find (or
//! start) the daemon of their config set (see `crate::gateway::daemon`); and what the last
//! three read through it — the daemon's data, rendered by each command as on the direct path.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand, ValueEnum};
use serde_json::{json, Value};

use crate::catalog::ServerReport;
use crate::config::{Loaded, ServerEntry};
use crate::gateway::daemon::{self, Client, DaemonError, SearchRequest};
use crate::gateway::Found;
use crate::output::{self, style, Table};

use super::{load_config, CliError, GlobalArgs, Outcome};

/// See and stop the gateways running for this user: daemons (`serve --daemon`), which
/// `call` goes through, and gateways serving clients.
///
/// Example: mcp-launch daemon status --json
#[derive(Debug, Args)]
pub struct DaemonArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: DaemonCommand,
}

/// `daemon` subcommands.
#[derive(Debug, Subcommand)]
pub enum DaemonCommand {
    /// Every gateway of this user: kind, pid, configs, upstreams (state, calls, restarts,
    /// idle time, last error).
    Status,
    /// The metrics of the daemon of this config set, as `/metrics` serves them (Prometheus
    /// text; with --json, `{"metrics": TEXT}`).
    Metrics,
    /// Stop the daemon of this config set (its servers stop with it).
    Stop {
        /// Stop every daemon of this user.
        #[arg(long)]
        all: bool,
    },
}

/// `--daemon use|auto|off`, shared by the commands that ride a daemon.
#[derive(Debug, Clone, Copy, Args)]
pub struct DaemonFlag {
    /// Through the daemon of this config set (`mcp-launch serve --daemon`): `use` it when it
    /// runs, `auto` starts one when none does, `off` never.
    #[arg(
        id = "daemon",
        long = "daemon",
        value_enum,
        value_name = "HOW",
        default_value = "use",
        env = "MCP_LAUNCH_DAEMON"
    )]
    pub how: DaemonUse,
}

/// Whether a command goes through a daemon.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DaemonUse {
    /// Through the daemon of this config set when one runs, else directly.
    Use,
    /// Start one (detached; it exits after 30 minutes without calls) when none runs.
    Auto,
    /// Never: start the server for this call.
    Off,
}

/// How long `call --daemon auto` waits for the daemon it started.
const START_WAIT: Duration = Duration::from_secs(30);

pub(super) async fn run(args: DaemonArgs, global: &GlobalArgs) -> Result<Outcome, CliError> {
    match args.command {
        DaemonCommand::Status => status(global).await,
        DaemonCommand::Metrics => metrics(global).await,
        DaemonCommand::Stop { all } => stop(global, all).await,
    }
}

async fn status(global: &GlobalArgs) -> Result<Outcome, CliError> {
    let gateways = gateways().await;
    if global.json {
        output::print_answer(true, json!({ "gateways": gateways }))?;
    } else if gateways.is_empty() {
        anstream::println!("no gateway runs (start one with `mcp-launch serve --daemon`)");
    } else {
        print_gateways(&gateways);
    }
    Ok(Outcome::Success)
}

/// Asks the daemon of this config set for its metrics through its control socket.
async fn metrics(global: &GlobalArgs) -> Result<Outcome, CliError> {
    let socket = own_socket(&load_config(global)?)?;
    let Some(mut client) = Client::connect(&socket).await.map_err(daemon_error)? else {
        return Err(daemon_error(daemon::DaemonError::NotRunning));
    };
    let text = client.metrics().await.map_err(daemon_error)?;
    if global.json {
        output::print_answer(true, json!({ "metrics": text }))?;
    } else {
        use std::io::Write;
        output::stdout().write_all(text.as_bytes())?;
    }
    Ok(Outcome::Success)
}

async fn stop(global: &GlobalArgs, all: bool) -> Result<Outcome, CliError> {
    let sockets = if all {
        let dir = daemon::runtime_dir().map_err(daemon_error)?;
        daemon::sockets(&dir)
            .into_iter()
            .filter(|s| {
                s.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("d-"))
            })
            .collect()
    } else {
        vec![own_socket(&load_config(global)?)?]
    };
    let mut stopped = Vec::new();
    for socket in sockets {
        if let Some(mut client) = Client::connect(&socket).await.map_err(daemon_error)? {
            client.stop().await.map_err(daemon_error)?;
            wait_gone(&socket).await;
            stopped.push(socket);
        }
    }
    if global.json {
        output::print_answer(true, json!({ "stopped": stopped }))?;
    } else if stopped.is_empty() {
        anstream::println!("no daemon was running");
    } else {
        for socket in &stopped {
            anstream::println!("stopped the daemon at {}", socket.display());
        }
    }
    Ok(Outcome::Success)
}

/// Every gateway's status, asked in parallel (sockets nobody answers on are cleaned away).
pub(super) async fn gateways() -> Vec<Value> {
    daemon::client::ask_every_gateway(|mut client| async move { client.status().await.ok() }).await
}

/// Gateways as a table, then each one's upstreams.
pub(super) fn print_gateways(gateways: &[Value]) {
    let text = |g: &Value, key: &str| g.get(key).and_then(Value::as_str).unwrap_or("").to_string();
    let mut table = Table::new(vec!["GATEWAY", "PID", "MODE", "TOOLS", "CONFIGS"], &[1, 3]);
    for g in gateways {
        let configs: Vec<String> = g["configs"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect();
        let kind = match g.get("address").and_then(Value::as_str) {
            Some(address) => format!("{} {address}", text(g, "kind")),
            None => text(g, "kind"),
        };
        table.styled_row(vec![
            (kind, style::HEAD),
            (g["pid"].to_string(), Default::default()),
            (text(g, "mode"), Default::default()),
            (g["tools"].to_string(), Default::default()),
            (configs.join(", "), Default::default()),
        ]);
    }
    anstream::print!("{}", table.render());
    for g in gateways {
        print_upstreams(g);
    }
}

fn print_upstreams(gateway: &Value) {
    let upstreams = gateway["upstreams"].as_array().cloned().unwrap_or_default();
    if upstreams.is_empty() {
        return;
    }
    anstream::println!(
        "\n{} {}:",
        gateway["kind"].as_str().unwrap_or(""),
        gateway["pid"]
    );
    let mut table = Table::new(
        // Requests, not tool calls: `inspect` lists tools over the warm session, and counts.
        vec![
            "SERVER",
            "STATE",
            "REQUESTS",
            "RESTARTS",
            "IDLE",
            "LAST ERROR",
        ],
        &[2, 3],
    );
    for u in &upstreams {
        let millis = |key: &str| {
            u.get(key)
                .and_then(Value::as_u64)
                .map(Duration::from_millis)
        };
        let idle = match (millis("idle_for_ms"), millis("retry_in_ms")) {
            (Some(idle), _) => format!("{}s", idle.as_secs()),
            (None, Some(retry)) => format!("retry in {}s", retry.as_secs()),
            _ => "-".into(),
        };
        let state = state_word(u).to_string();
        let state_style = match state.as_str() {
            "up" => style::GOOD,
            "restarting" => style::WARN,
            _ => Default::default(),
        };
        let name = u["name"].as_str().unwrap_or("");
        let name = match u["era"].as_str() {
            Some(era) => format!("{name} ({era})"),
            None => name.to_string(),
        };
        table.styled_row(vec![
            (name, style::HEAD),
            (state, state_style),
            (u["calls"].to_string(), Default::default()),
            (u["restarts"].to_string(), Default::default()),
            (idle, Default::default()),
            (
                u["last_error"].as_str().unwrap_or("").to_string(),
                Default::default(),
            ),
        ]);
    }
    anstream::print!("{}", table.render());
}

/// An upstream's state in words: a server without a session that never failed is not "down"
/// but `not started` (no request yet) or `stopped` (stopped while idle).
pub(super) fn state_word(upstream: &Value) -> &str {
    let state = upstream["state"].as_str().unwrap_or("");
    let failed = upstream["last_error"]
        .as_str()
        .is_some_and(|e| !e.is_empty());
    match state {
        "down" if failed => "down",
        "down" if upstream["calls"].as_u64().unwrap_or(0) == 0 => "not started",
        "down" => "stopped",
        other => other,
    }
}

/// The daemon socket of the loaded config set.
pub(super) fn own_socket(loaded: &Loaded) -> Result<PathBuf, CliError> {
    let dir = daemon::runtime_dir().map_err(daemon_error)?;
    let cwd = std::env::current_dir().map_err(CliError::Output)?;
    let configs: Vec<PathBuf> = loaded.stacks.iter().map(|s| s.path.clone()).collect();
    let servers: Vec<String> = loaded
        .servers()
        .filter_map(crate::catalog::server_identity)
        .collect();
    let set = daemon::ConfigSet {
        cwd: &cwd,
        configs: &configs,
        env_files: &loaded.env_files,
        servers: &servers,
    };
    Ok(daemon::daemon_socket(&dir, &set))
}

/// The daemon to send a command through: `None` for the direct path. `auto` starts one when
/// none runs; `use` falls back quietly when the socket cannot be reached.
pub(super) async fn client_for(
    loaded: &Loaded,
    how: DaemonUse,
) -> Result<Option<Client>, CliError> {
    if how == DaemonUse::Off {
        return Ok(None);
    }
    let socket = match own_socket(loaded) {
        Ok(socket) => socket,
        Err(e) if how == DaemonUse::Use => {
            tracing::debug!(error = %e, "no daemon socket; calling directly");
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    match Client::connect(&socket).await {
        Ok(Some(client)) => return Ok(Some(client)),
        Ok(None) if how == DaemonUse::Auto => {}
        Ok(None) => return Ok(None),
        Err(e) if how == DaemonUse::Use => {
            tracing::warn!(error = %e, "the daemon cannot be reached; calling directly");
            return Ok(None);
        }
        Err(e) => return Err(daemon_error(e)),
    }
    start(loaded, &socket).await.map(Some)
}

/// Starts `serve --daemon` for this config set, detached, and waits for its socket.
async fn start(loaded: &Loaded, socket: &std::path::Path) -> Result<Client, CliError> {
    let program = std::env::current_exe().map_err(CliError::Output)?;
    let mut args = super::config_args(loaded);
    args.extend(["serve".to_string(), "--daemon".to_string()]);
    let log = daemon::daemon_log(socket);
    let pid = crate::process::spawn_detached(&program, &args, &log).map_err(CliError::Output)?;
    tracing::info!(pid, socket = %socket.display(), "started a daemon");
    let began = Instant::now();
    while began.elapsed() < START_WAIT {
        if let Some(client) = Client::connect(socket).await.map_err(daemon_error)? {
            return Ok(client);
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    Err(daemon_error(DaemonError::StartFailed {
        seconds: START_WAIT.as_secs(),
        log,
    }))
}

async fn wait_gone(socket: &std::path::Path) {
    let began = Instant::now();
    while socket.exists() && began.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A daemon error as the command's error.
pub(super) fn daemon_error(error: DaemonError) -> CliError {
    CliError::Daemon(Box::new(error))
}

/// True when `list` or `search` must check servers live here rather than read a daemon's
/// catalog: `--refresh`, or `MCP_LAUNCH_INDEX_TTL=0` (the index never answers, so neither does
/// the daemon's copy of it).
pub(super) fn checks_live(refresh: bool) -> bool {
    refresh || crate::catalog::TTL.from_env_or_default().is_zero()
}

/// Every server's report through the daemon, in `entries`' order, starting nothing: servers
/// disabled here are reported disabled (the daemon does not serve them); `None` (the direct
/// path) when no daemon answers, or it does not serve every enabled entry (its overrides were
/// read when it started).
pub(super) async fn reports_through(
    loaded: &Loaded,
    how: DaemonUse,
    entries: &[ServerEntry],
) -> Result<Option<Vec<ServerReport>>, CliError> {
    let Some(mut client) = client_for(loaded, how).await? else {
        return Ok(None);
    };
    // Rendered as counts: the definitions of tools the overrides leave alone need not travel.
    let served = match client.reports(false).await {
        Ok(served) => served,
        Err(e) => return Ok(direct_after(&e)),
    };
    let mut reports = Vec::with_capacity(entries.len());
    for entry in entries {
        if entry.disabled {
            reports.push(ServerReport::disabled(entry));
            continue;
        }
        match served.iter().find(|r| r.name == entry.qualified) {
            Some(report) => reports.push(report.clone()),
            None => {
                tracing::debug!(server = %entry.qualified, "the daemon does not serve it; answering directly");
                return Ok(None);
            }
        }
    }
    crate::catalog::count_tokens(&mut reports).await;
    Ok(Some(reports))
}

/// `entry`'s report through the daemon: as it knows it (`live: false`, starting nothing), or
/// listed live over its session, started lazily and kept warm (`live: true`). `None` (the
/// direct path) when no daemon answers or it does not serve `entry` (disabled here or there).
pub(super) async fn report_through(
    loaded: &Loaded,
    how: DaemonUse,
    entry: &ServerEntry,
    live: bool,
) -> Result<Option<ServerReport>, CliError> {
    if entry.disabled {
        return Ok(None);
    }
    let Some(mut client) = client_for(loaded, how).await? else {
        return Ok(None);
    };
    let asked = if live {
        let connect = crate::mcp::ConnectOptions::from_env();
        // The daemon bounds the start and the listing by the same windows.
        let limit = connect.fast_window + connect.slow_window + connect.list_timeout;
        let report = client.inspect(&entry.qualified, limit + ANSWER_MARGIN);
        report.await.map(Some)
    } else {
        let served = client.reports(true).await;
        served.map(|served| served.into_iter().find(|r| r.name == entry.qualified))
    };
    let mut report = match asked {
        Ok(Some(report)) => report,
        // Not one the daemon serves (disabled when it started): the direct path's.
        Ok(None) => return Ok(None),
        Err(e) => return Ok(direct_after(&e)),
    };
    crate::catalog::count_tokens(std::slice::from_mut(&mut report)).await;
    Ok(Some(report))
}

/// A search through the daemon; `None` (the direct path) when no daemon answers, it cannot
/// rank as the direct path would yet (`not_ready`), or it serves other servers than `enabled`.
pub(super) async fn search_through(
    loaded: &Loaded,
    how: DaemonUse,
    request: &SearchRequest,
    enabled: &[&str],
) -> Result<Option<Found>, CliError> {
    let Some(mut client) = client_for(loaded, how).await? else {
        return Ok(None);
    };
    match client.search(request).await {
        Ok(answer) if answer.servers == enabled => Ok(Some(answer.found)),
        Ok(_) => {
            tracing::debug!("the daemon serves other servers; searching directly");
            Ok(None)
        }
        Err(e) => Ok(direct_after(&e)),
    }
}

/// What the daemon's answer beyond a call's own may take (the daemon bounds the work).
const ANSWER_MARGIN: Duration = Duration::from_secs(5);

/// Logs why the daemon did not answer: the direct path answers instead (what the user asked
/// was checked here before the daemon was asked, so its errors are ours to show).
fn direct_after<T>(error: &DaemonError) -> Option<T> {
    tracing::debug!(error = %error, kind = crate::error::Actionable::kind(error), "the daemon did not answer; answering directly");
    None
}
