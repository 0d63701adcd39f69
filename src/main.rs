//! The `mcp-launch` binary: parse the command line, set up logging, run one command, render
//! its error once, choose the exit code (0 success, 1 a server or tool failed, 2 usage or
//! configuration error).

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;
use mcp_launch::cli::{self, Cli, CliError, GlobalArgs, LogFormat, Outcome};
use mcp_launch::observe::trace;
use mcp_launch::output;
use tracing_subscriber::{fmt, layer::SubscriberExt, util::SubscriberInitExt, EnvFilter, Layer};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    if let Some(timeout) = cli.command.init_timeout() {
        // Before any thread starts (the log writer's included): setting the environment is
        // then sound, and every reader below sees the flag as the variable.
        std::env::set_var(
            mcp_launch::mcp::INIT_TIMEOUT_ENV,
            format!("{}ms", timeout.as_millis()),
        );
    }
    let json = cli.global.json;
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    // Before logging starts (its error is the first thing said); its posts run on the runtime.
    let traces = match install_traces(&cli.global, runtime.handle()) {
        Ok(traces) => traces,
        Err(e) => {
            use mcp_launch::error::Actionable;
            eprintln!("error: {e}\n  help: {}", e.help());
            return ExitCode::from(2);
        }
    };
    let _log_guard = match init_logging(
        &cli.global,
        cli.command.streams_child_logs(),
        cli.command.runs_tui(),
    ) {
        Ok(guard) => guard,
        Err(e) => {
            eprintln!("error: cannot open log file: {e:#}\n  help: check that the directory of --log-file exists and is writable, and that the path is not a symlink (log files are never opened through one)");
            return ExitCode::from(2);
        }
    };
    let result = runtime.block_on(run_until_signal(cli));
    if let Some(traces) = &traces {
        traces.shutdown();
    }
    // Dropping the runtime's tasks drops every session still alive (e.g. preflight tasks of an
    // interrupted `list`), and each session's guard kills its process group. Bounded: a task
    // stuck in blocking code must not hold the exit.
    runtime.shutdown_timeout(SHUTDOWN_WAIT);
    match result {
        Ok(result) => exit_code(result, json),
        Err(signal) => {
            eprintln!("interrupted by {signal}; stopped every server we started");
            ExitCode::from(128 + signal as u8)
        }
    }
}

/// How long exit waits for tasks to be dropped (and their process groups killed).
const SHUTDOWN_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Runs the command until it ends or SIGINT/SIGTERM arrives. The handlers are installed before
/// the command starts any server, so an early Ctrl-C cannot orphan one. On a signal, a command
/// that serves (`up`) is asked to stop through its shutdown token and given
/// [`GRACEFUL_STOP`] to do so (a second signal cuts it short); any other command's future is
/// dropped, which drops its sessions and kills their process groups.
async fn run_until_signal(cli: Cli) -> Result<Result<Outcome, CliError>, nix::sys::signal::Signal> {
    use nix::sys::signal::Signal;
    use tokio::signal::unix::{signal, SignalKind};
    let shutdown = tokio_util::sync::CancellationToken::new();
    let graceful = cli.command.stops_gracefully();
    let (Ok(mut interrupt), Ok(mut terminate)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        // Without handlers the default actions apply; still run the command.
        return Ok(cli::run(cli, shutdown).await);
    };
    let command = cli::run(cli, shutdown.clone());
    tokio::pin!(command);
    let first = tokio::select! {
        biased;
        _ = interrupt.recv() => Signal::SIGINT,
        _ = terminate.recv() => Signal::SIGTERM,
        result = &mut command => return Ok(result),
    };
    if !graceful {
        return Err(first);
    }
    shutdown.cancel();
    tokio::select! {
        result = &mut command => Ok(result),
        _ = interrupt.recv() => Err(first),
        _ = terminate.recv() => Err(first),
        _ = tokio::time::sleep(GRACEFUL_STOP) => Err(first),
    }
}

/// How long a serving command may take to stop after the first signal: cloudflared and mcpo
/// each get a TERM grace before KILL, stacks stop one after another.
const GRACEFUL_STOP: std::time::Duration = std::time::Duration::from_secs(20);

/// The one place that turns a command's result into an exit code.
fn exit_code(result: Result<Outcome, CliError>, json: bool) -> ExitCode {
    match result {
        Ok(Outcome::Success) => ExitCode::SUCCESS,
        Ok(Outcome::Failed) => ExitCode::from(1),
        // Output piped into `head` that stops reading is not a failure.
        Err(CliError::Output(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(err) => {
            let _ = output::print_error(&err, json);
            ExitCode::from(if err.is_usage() { 2 } else { 1 })
        }
    }
}

/// Clap's own errors: help and version exit 0; usage errors exit 2, as JSON with `--json`.
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return ExitCode::from(
            if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                2
            } else {
                0
            },
        );
    }
    // `args_os`: `args` panics on an argument that is not UTF-8 — the very input that may
    // have brought us here.
    if std::env::args_os().any(|a| a == "--json") {
        println!("{:#}", usage_envelope(&e.render().to_string()));
        return ExitCode::from(2);
    }
    let _ = e.print();
    ExitCode::from(2)
}

/// Clap's rendered error as the `--json` envelope: its whole first paragraph (which argument,
/// which value) is the message; its tips ("a similar subcommand exists: 'list'") and usage
/// line go into the help.
fn usage_envelope(rendered: &str) -> serde_json::Value {
    let mut paragraphs = rendered
        .split("\n\n")
        .map(str::trim)
        .filter(|p| !p.is_empty());
    let first = paragraphs
        .next()
        .unwrap_or("")
        .trim_start_matches("error: ");
    let message = first.lines().map(str::trim).collect::<Vec<_>>().join(" ");
    let mut help = Vec::new();
    for paragraph in paragraphs {
        if let Some(usage) = paragraph.strip_prefix("Usage: ") {
            help.push(format!("usage: {usage}"));
        } else {
            let tips = paragraph
                .lines()
                .filter_map(|l| l.trim().strip_prefix("tip: "));
            help.extend(tips.map(str::to_owned));
        }
    }
    help.push("run `mcp-launch --help` or `mcp-launch COMMAND --help`".to_string());
    serde_json::json!({"success": false, "error": {
        "type": "usage", "message": message, "help": help.join("; ")}})
}

/// The trace exporter when `--otlp` or the `OTEL_EXPORTER_OTLP_*` variables ask for one.
fn install_traces(
    global: &GlobalArgs,
    runtime: &tokio::runtime::Handle,
) -> Result<Option<trace::Exporter>, trace::TraceError> {
    let Some(settings) = trace::Settings::from_env(global.otlp.as_deref())? else {
        return Ok(None);
    };
    trace::Exporter::install(&settings, runtime.clone()).map(Some)
}

/// Stderr gets warnings (or more with -v/-vv); `--log-file` gets everything at debug level
/// (trace with -vvv). The returned guard flushes the file on exit.
/// One JSON object a line (tracing-subscriber's formatter): the event's fields flattened, the
/// span it happened in (`server{name=stack/server}`), a UTC timestamp. What the text lines mask
/// is masked here too: values are masked before they are logged, whatever the format.
fn json_layer<W, S>(writer: W) -> Box<dyn Layer<S> + Send + Sync>
where
    W: for<'w> fmt::MakeWriter<'w> + Send + Sync + 'static,
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fmt::layer()
        .json()
        .flatten_event(true)
        .with_current_span(true)
        .with_span_list(false)
        .with_writer(writer)
        .boxed()
}

fn init_logging(
    global: &GlobalArgs,
    stream_child_logs: bool,
    tui: bool,
) -> anyhow::Result<Option<tracing_appender::non_blocking::WorkerGuard>> {
    let level = match global.verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    // The logs of mcpo and cloudflared (target mcp_launch::child, info level) show with -v, or
    // with `up --stream` at any verbosity.
    let child = if stream_child_logs {
        ",mcp_launch::child=info"
    } else {
        ""
    };
    // What rmcp logs as errors of a client that left is shown with -v only.
    let rmcp = if global.verbose == 0 {
        mcp_launch::serving::QUIET_LOGS
    } else {
        ""
    };
    let stderr_filter = EnvFilter::try_from_env("MCP_LAUNCH_LOG")
        .unwrap_or_else(|_| EnvFilter::new(format!("mcp_launch={level},warn{child}{rmcp}")));
    // The TUI owns the terminal: its log pane gets these lines (and the children's) instead.
    let (stderr_layer, pane_layer) = if tui {
        let filter = EnvFilter::try_from_env("MCP_LAUNCH_LOG").unwrap_or_else(|_| {
            EnvFilter::new(format!(
                "mcp_launch={level},warn,mcp_launch::child=info{rmcp}"
            ))
        });
        let layer = fmt::layer()
            .with_writer(mcp_launch::tui::log::LogWriter)
            .with_ansi(false)
            .with_target(false)
            .without_time()
            .with_filter(filter);
        (None, Some(layer))
    } else {
        let layer = match global.log_format {
            LogFormat::Text => fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(
                    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
                )
                .with_target(false)
                .with_timer(fmt::time::uptime())
                .boxed(),
            LogFormat::Json => json_layer(std::io::stderr),
        };
        (Some(layer.with_filter(stderr_filter)), None)
    };
    let (file_layer, guard) = match &global.log_file {
        Some(path) => {
            // Logs may quote what servers said: owner-only, and never through a symlink
            // someone planted at that name.
            use std::os::unix::fs::OpenOptionsExt;
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .custom_flags(nix::libc::O_NOFOLLOW)
                .open(path)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            // `mode` applies only to a new file: one that exists is made owner-only too.
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(0o600))
                .map_err(|e| {
                    anyhow::anyhow!("{}: cannot make it owner-only (0600): {e}", path.display())
                })?;
            let (writer, guard) = tracing_appender::non_blocking(file);
            let file_level = if global.verbose >= 3 {
                "trace"
            } else {
                "debug"
            };
            let layer = match global.log_format {
                LogFormat::Text => fmt::layer().with_writer(writer).with_ansi(false).boxed(),
                LogFormat::Json => json_layer(writer),
            };
            let layer = layer.with_filter(EnvFilter::new(format!("mcp_launch={file_level},info")));
            (Some(layer), Some(guard))
        }
        None => (None, None),
    };
    tracing_subscriber::registry()
        .with(stderr_layer)
        .with(pane_layer)
        .with(file_layer)
        .init();
    Ok(guard)
}
