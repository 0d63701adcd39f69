//! The command line: clap definitions, one file per command. Commands orchestrate — load the
//! config, ask `catalog`, hand results to `output` — and hold no logic of their own.

mod auth;
mod batch;
mod call;
mod client_config;
mod clients;
mod daemon;
mod doctor;
mod down;
mod embedding;
mod error;
mod init;
mod inspect;
mod list;
mod model;
mod openapi;
mod output;
mod progress;
mod search;
mod serve;
mod serve_key;
mod serve_oauth;
mod serve_tunnel;
mod server;
mod share;
mod status;
mod tokens;
mod tool;
mod tools;
mod top;
mod trust;
mod up;
mod usage;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub use error::CliError;

use crate::config::{self, Loaded, ServerEntry};

/// Inspect, trim, launch and serve stacks of MCP servers.
///
/// Reads Claude Desktop / Claude Code / Cursor (`mcpServers`) and VS Code (`servers`) config
/// files. Without --config it uses the first of ./.mcp.json, ./mcp.config.json,
/// ./.claude/mcp.json, ~/.claude/mcp.json.
#[derive(Debug, Parser)]
#[command(
    name = "mcp-launch",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    /// Flags every command accepts.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Flags accepted before or after any command.
#[derive(Debug, Args, Clone, Default)]
pub struct GlobalArgs {
    /// Print machine-readable JSON on stdout (errors included).
    #[arg(long, global = true)]
    pub json: bool,
    /// Show more: -v handshake steps and timings, -vv every message and skipped line.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// Also write everything (debug level) to this file.
    #[arg(long, global = true, value_name = "PATH")]
    pub log_file: Option<PathBuf>,
    /// How log lines are written (stderr and --log-file): text, or json (one object a line,
    /// for log shippers).
    #[arg(
        long,
        global = true,
        value_enum,
        value_name = "FORMAT",
        env = "MCP_LAUNCH_LOG_FORMAT",
        default_value = "text"
    )]
    pub log_format: LogFormat,
    /// Config file to use; repeat for several stacks (one stack per file).
    #[arg(long = "config", global = true, value_name = "PATH")]
    pub configs: Vec<PathBuf>,
    /// Extra .env file for ${VAR} interpolation; repeatable, later files win.
    #[arg(long = "env-file", global = true, value_name = "PATH")]
    pub env_files: Vec<PathBuf>,
    /// Export traces to this OTLP/HTTP collector (e.g. http://127.0.0.1:4318); the
    /// OTEL_EXPORTER_OTLP_* variables also turn them on. Off by default.
    #[arg(long, global = true, value_name = "URL")]
    pub otlp: Option<String>,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// For people: one line each, uptime first.
    #[default]
    Text,
    /// One JSON object a line (`timestamp`, `level`, `fields`, `span`), for log shippers.
    Json,
}

/// The commands.
#[derive(Debug, Subcommand)]
// Each command's help (short line, long text, example) lives on its `Args` struct; a doc
// comment on a variant would replace it, so the variants carry none.
#[allow(missing_docs)]
pub enum Command {
    List(list::ListArgs),
    Inspect(inspect::InspectArgs),
    Call(call::CallArgs),
    Server(server::ServerArgs),
    Tool(tool::ToolArgs),
    Tokens(tokens::TokensArgs),
    Search(search::SearchArgs),
    Doctor(doctor::DoctorArgs),
    Init(init::InitArgs),
    Trust(trust::TrustArgs),
    Up(up::UpArgs),
    Status(status::StatusArgs),
    Share(share::ShareArgs),
    Openapi(openapi::OpenapiArgs),
    Down(down::DownArgs),
    Serve(Box<serve::ServeArgs>),
    Daemon(daemon::DaemonArgs),
    Output(output::OutputArgs),
    Tools(tools::ToolsArgs),
    Usage(usage::UsageArgs),
    Model(model::ModelArgs),
    Clients(clients::ClientsArgs),
    Auth(auth::AuthArgs),
    Top(top::TopArgs),
}

impl Command {
    /// True for commands that stop gracefully on SIGINT/SIGTERM (they get the shutdown token
    /// and clean up); the others are dropped, which kills their process groups.
    pub fn stops_gracefully(&self) -> bool {
        matches!(self, Command::Up(_) | Command::Serve(_))
    }

    /// True for `up --tui`: the terminal belongs to the TUI, logs go to its log pane.
    pub fn runs_tui(&self) -> bool {
        matches!(self, Command::Up(args) if args.tui)
    }

    /// True when `up --stream` asks for the logs of mcpo and cloudflared.
    pub fn streams_child_logs(&self) -> bool {
        matches!(self, Command::Up(args) if args.stream)
    }
}

impl Command {
    /// `--init-timeout` of `list` and `up`: `main` hands it on as `MCP_INIT_TIMEOUT_SEC` before
    /// any thread starts, so every session of the command (and every child `mcp-launch` it
    /// spawns) uses the same slow window.
    pub fn init_timeout(&self) -> Option<std::time::Duration> {
        match self {
            Command::List(args) => args.init_timeout.timeout,
            Command::Up(args) => args.init_timeout.timeout,
            _ => None,
        }
    }
}

/// The `--init-timeout` flag of the commands that check servers live.
#[derive(Debug, Args, Clone, Default)]
pub struct InitTimeoutFlag {
    /// The handshake's slow window, after its first 6 s (MCP_INIT_TIMEOUT_SEC as a flag):
    /// seconds or a duration (60, 2m). A first `npx`/`uvx` run may need 60.
    #[arg(long = "init-timeout", value_name = "DURATION", value_parser = |s: &str| INIT_TIMEOUT_FLAG.parse(s))]
    pub timeout: Option<std::time::Duration>,
}

/// `--init-timeout`: the range of `MCP_INIT_TIMEOUT_SEC`.
const INIT_TIMEOUT_FLAG: crate::duration::Setting =
    crate::duration::Setting::timeout("--init-timeout", crate::mcp::INIT_SLOW_WINDOW);

/// How a command ended when it did not fail outright.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Everything worked.
    Success,
    /// Output was printed, but a server or tool failed (exit 1).
    Failed,
}

/// Every duration read from the environment, somewhere below the commands.
const ENV_DURATIONS: [&crate::duration::Setting; 5] = [
    &crate::mcp::INIT_TIMEOUT,
    &crate::launch::controller::mcpo::READY_TIMEOUT,
    &crate::launch::controller::native::bridge::CALL_TIMEOUT,
    &crate::launch::front::FORWARD_TIMEOUT,
    &crate::catalog::TTL,
];

/// Every size and count bound read from the environment.
const ENV_CAPS: [&crate::mcp::cap::Cap; 4] = [
    &crate::mcp::limits::MESSAGE_BYTES,
    &crate::mcp::limits::QUEUED_MESSAGES,
    &crate::mcp::limits::TOOL_PAGES,
    &crate::launch::front::IN_FLIGHT,
];

/// Runs the parsed command.
/// `shutdown` is cancelled on SIGINT/SIGTERM; commands that serve (`up`) stop gracefully on
/// it, the others are simply dropped by `main`.
pub async fn run(
    cli: Cli,
    shutdown: tokio_util::sync::CancellationToken,
) -> Result<Outcome, CliError> {
    // A bad value is refused before anything starts, naming the variable and its range.
    crate::duration::check_env(&ENV_DURATIONS)?;
    crate::mcp::cap::check_env(&ENV_CAPS)?;
    match run_command(cli, shutdown).await {
        Err(CliError::Config(error @ config::ConfigError::NotFound { .. })) => {
            Err(name_running_configs(error).await)
        }
        result => result,
    }
}

/// Dispatches to the command.
async fn run_command(
    cli: Cli,
    shutdown: tokio_util::sync::CancellationToken,
) -> Result<Outcome, CliError> {
    match cli.command {
        Command::List(args) => list::run(args, &cli.global).await,
        Command::Inspect(args) => inspect::run(args, &cli.global).await,
        Command::Call(args) => call::run(args, &cli.global).await,
        Command::Server(args) => server::run(args, &cli.global).await,
        Command::Tool(args) => tool::run(args, &cli.global).await,
        Command::Tokens(args) => tokens::run(args, &cli.global).await,
        Command::Search(args) => search::run(args, &cli.global).await,
        Command::Doctor(args) => doctor::run(args, &cli.global).await,
        Command::Init(args) => init::run(args, &cli.global).await,
        Command::Trust(args) => trust::run(args, &cli.global).await,
        Command::Up(args) => up::run(args, &cli.global, shutdown).await,
        Command::Status(args) => status::run(args, &cli.global).await,
        Command::Share(args) => share::run(args, &cli.global).await,
        Command::Openapi(args) => openapi::run(args, &cli.global).await,
        Command::Down(args) => down::run(args, &cli.global).await,
        Command::Serve(args) => serve::run(*args, &cli.global, shutdown).await,
        Command::Daemon(args) => daemon::run(args, &cli.global).await,
        Command::Output(args) => output::run(args, &cli.global).await,
        Command::Tools(args) => tools::run(args, &cli.global, shutdown).await,
        Command::Usage(args) => usage::run(args, &cli.global).await,
        Command::Model(args) => model::run(args, &cli.global).await,
        Command::Clients(args) => clients::run(args, &cli.global).await,
        Command::Auth(args) => auth::run(args, &cli.global).await,
        Command::Top(args) => top::run(args, &cli.global, shutdown).await,
    }
}

/// Discovery found no config: name the configs of the stacks running here and of the running
/// gateways (`status` and `daemon status` show them), so the error says what to pass.
async fn name_running_configs(error: config::ConfigError) -> CliError {
    let mut running: Vec<String> = std::env::current_dir()
        .ok()
        .and_then(|cwd| {
            crate::launch::state::StateFile::in_project(&cwd)
                .read()
                .ok()
        })
        .map(|state| {
            state
                .stacks
                .iter()
                .map(|s| s.config.display().to_string())
                .collect()
        })
        .unwrap_or_default();
    for gateway in daemon::gateways().await {
        let configs = gateway["configs"].as_array().cloned().unwrap_or_default();
        running.extend(configs.iter().filter_map(|c| c.as_str()).map(str::to_owned));
    }
    let mut seen = std::collections::HashSet::new();
    running.retain(|config| seen.insert(config.clone()));
    if running.is_empty() {
        CliError::Config(error)
    } else {
        CliError::NoConfig {
            error: Box::new(error),
            running,
        }
    }
}

/// Loads the config(s) named by the global flags (or discovers one); `announce` says which
/// file discovery found on stderr.
fn load_config_announced(global: &GlobalArgs, announce: bool) -> Result<Loaded, CliError> {
    let opts = config::LoadOptions::from_process(global.configs.clone(), global.env_files.clone())?;
    let loaded = config::load(&opts)?;
    if let Some(path) = &loaded.discovered {
        tracing::info!(path = %path.display(), "using the config found by discovery");
        // Said once where a person reads a table; scripts calling search/call in a loop get
        // it with -v only.
        if announce && !global.json {
            let dim = crate::output::style::DIM;
            anstream::eprintln!(
                "{dim}using {} (found by discovery; --config PATH picks another){dim:#}",
                path.display()
            );
        }
    }
    Ok(loaded)
}

/// [`load_config_announced`] without the announcement (it is logged at info level).
fn load_config(global: &GlobalArgs) -> Result<Loaded, CliError> {
    load_config_announced(global, false)
}

/// The arguments that make a child `mcp-launch` load the same servers: `--config` for each
/// loaded stack, `--env-file` for each env file read (with a discovered config, `./.env`
/// first: named configs read no `./.env` of their own).
fn config_args(loaded: &Loaded) -> Vec<String> {
    let mut args = Vec::new();
    for stack in &loaded.stacks {
        args.extend(["--config".to_string(), stack.path.display().to_string()]);
    }
    for file in &loaded.env_files {
        args.extend(["--env-file".to_string(), file.display().to_string()]);
    }
    args
}

/// Loads the config, finds server `name` and learns its tools (tokens counted) from the tool
/// index when fresh, else live: its report if it has tools, else the server's error.
async fn server_report(
    global: &GlobalArgs,
    name: &str,
    refresh: bool,
) -> Result<crate::catalog::ServerReport, CliError> {
    let loaded = load_config(global)?;
    let entry = find_server(&loaded, name)?;
    let opts = crate::catalog::ResolveOptions::from_env(refresh);
    let report = crate::catalog::resolve(std::slice::from_ref(entry), &opts)
        .await
        .swap_remove(0);
    with_tools(report)
}

/// A server's report when it has its tools, else the server's error.
fn with_tools(
    report: crate::catalog::ServerReport,
) -> Result<crate::catalog::ServerReport, CliError> {
    match &report.error {
        Some(problem) => Err(CliError::server(&report.name, problem.clone())),
        None => Ok(report),
    }
}

/// [`server_report`] through the daemon of this config set: as the daemon knows the server
/// (`live: false`, nothing starts; `list SERVER`), or listed live over its warm session,
/// started there lazily and kept warm for the next call (`live: true`; `inspect`). The direct
/// path (the tool index when it can) when no daemon answers.
async fn report_through_daemon(
    global: &GlobalArgs,
    name: &str,
    how: daemon::DaemonUse,
    live: bool,
) -> Result<crate::catalog::ServerReport, CliError> {
    if how == daemon::DaemonUse::Off {
        return server_report(global, name, false).await;
    }
    let loaded = load_config(global)?;
    let mut entry = find_server(&loaded, name)?.clone();
    entry.disabled |= server::load_overrides()?.is_disabled(&entry);
    match daemon::report_through(&loaded, how, &entry, live).await? {
        Some(report) => with_tools(report),
        None => server_report(global, name, false).await,
    }
}

/// The entry named `name`, or an error naming the servers that exist.
fn find_server<'a>(loaded: &'a Loaded, name: &str) -> Result<&'a ServerEntry, CliError> {
    loaded.find(name).ok_or_else(|| CliError::UnknownServer {
        name: name.to_string(),
        available: loaded
            .server_names()
            .into_iter()
            .map(str::to_owned)
            .collect(),
        config_files: loaded
            .stacks
            .iter()
            .map(|s| s.path.display().to_string())
            .collect(),
    })
}

/// The tool named `name` among `tools`, or an error suggesting similar names.
fn find_tool<'a>(
    server: &str,
    tools: &'a [serde_json::Value],
    name: &str,
) -> Result<&'a serde_json::Value, CliError> {
    use crate::catalog::tool;
    if let Some(found) = tools.iter().find(|t| tool::name(t) == name) {
        return Ok(found);
    }
    let suggestions = crate::catalog::similar_names(name, tools.iter().map(tool::name), 5)
        .into_iter()
        .map(|n| {
            let required = tools
                .iter()
                .find(|t| tool::name(t) == n)
                .map(tool::required_params)
                .unwrap_or_default();
            if required.is_empty() {
                n
            } else {
                format!("{n} (requires {})", required.join(", "))
            }
        })
        .collect();
    Err(CliError::UnknownTool {
        server: server.to_string(),
        tool: name.to_string(),
        suggestions,
        count: tools.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn global_flags_go_before_or_after_the_command() {
        let a =
            Cli::try_parse_from(["mcp-launch", "--json", "--config", "a.json", "list"]).unwrap();
        let b =
            Cli::try_parse_from(["mcp-launch", "list", "--json", "--config", "a.json"]).unwrap();
        assert!(a.global.json && b.global.json);
        assert_eq!(a.global.configs, b.global.configs);
        let c = Cli::try_parse_from([
            "mcp-launch",
            "-vv",
            "list",
            "--config",
            "a",
            "--config",
            "b",
        ])
        .unwrap();
        assert_eq!(c.global.verbose, 2);
        assert_eq!(c.global.configs.len(), 2);
    }
}
