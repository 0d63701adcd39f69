//! `mcp-launch call --batch FILE|-`: many calls at once over shared sessions — through the
//! daemon of this config set when one runs, else through a gateway in this process — one JSON
//! result per line, as each finishes.

use std::path::Path;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio::io::AsyncReadExt;

use crate::config::Loaded;
use crate::gateway::daemon::{CallRequest, Client};
use crate::gateway::{Budget, Gateway, GatewayOptions, Mode};
use crate::mcp::ConnectOptions;
use crate::output;
use crate::outputs::ClientScope;
use crate::outputs::Outputs;

use super::call::{parse_arguments, refuse_by_overrides, result_json, CallArgs};
use super::daemon::{self, daemon_error};
use super::error::{BATCH_LINE, BATCH_ORIGIN};
use super::server::load_overrides;
use super::{find_server, load_config, CliError, GlobalArgs, Outcome};

/// One line of the batch: its number, its `id` (echoed), and the call or why it cannot run.
struct Line {
    number: usize,
    id: Value,
    call: Result<CallRequest, CliError>,
}

pub(super) async fn run(
    file: &Path,
    args: &CallArgs,
    global: &GlobalArgs,
) -> Result<Outcome, CliError> {
    let text = read(file).await?;
    let loaded = load_config(global)?;
    let overrides = load_overrides()?;
    let lines: Vec<Line> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| plan(i + 1, l, &loaded, &overrides, args.timeout))
        .collect();
    let mut printer = Printer {
        all_ok: true,
        outputs: Outputs::new(args.max_output_tokens.unwrap_or_default()),
    };
    let (ready, refused): (Vec<&Line>, Vec<&Line>) = lines.iter().partition(|l| l.call.is_ok());
    for line in refused {
        if let Err(e) = &line.call {
            printer.emit(line, output::error_envelope(e))?;
        }
    }
    let window = usize::from(args.concurrency);
    // When every line was refused already, nothing is started.
    if !ready.is_empty() {
        match daemon::client_for(&loaded, args.daemon.how).await? {
            Some(mut client) => through_daemon(&mut client, &ready, window, &mut printer).await?,
            None => in_process(&loaded, args.timeout, &ready, window, &mut printer).await?,
        }
    }
    Ok(if printer.all_ok {
        Outcome::Success
    } else {
        Outcome::Failed
    })
}

/// Prints one answer per line (each result within the output budget), and remembers whether
/// all succeeded.
struct Printer {
    all_ok: bool,
    outputs: Outputs,
}

impl Printer {
    fn emit(&mut self, line: &Line, mut answer: Value) -> std::io::Result<()> {
        self.all_ok &= answer["success"] == json!(true);
        answer["line"] = json!(line.number);
        if !line.id.is_null() {
            answer["id"] = line.id.clone();
        }
        output::print_json_line(&answer)
    }

    fn answer(&mut self, line: &Line, outcome: Result<Value, CliError>) -> std::io::Result<()> {
        let answer = match (outcome, &line.call) {
            (Ok(result), Ok(call)) => {
                let named = (call.server.as_str(), call.tool.as_str());
                // Calls overlap: no per-line time is recorded.
                let result = self.outputs.apply_blocking(
                    named,
                    result,
                    &ClientScope::local(),
                    Duration::ZERO,
                );
                result_json(&call.server, &call.tool, result)
            }
            (Ok(result), Err(_)) => json!({"success": true, "result": result}),
            (Err(e), _) => output::error_envelope(&e),
        };
        self.emit(line, answer)
    }
}

fn calls(ready: &[&Line]) -> Vec<CallRequest> {
    ready
        .iter()
        .filter_map(|l| l.call.as_ref().ok().cloned())
        .collect()
}

async fn through_daemon(
    client: &mut Client,
    ready: &[&Line],
    window: usize,
    printer: &mut Printer,
) -> Result<(), CliError> {
    let mut failed = None;
    client
        .batch(&calls(ready), window, |i, outcome| {
            if let Err(e) = printer.answer(ready[i], outcome.map_err(daemon_error)) {
                failed.get_or_insert(e);
            }
        })
        .await
        .map_err(daemon_error)?;
    failed.map_or(Ok(()), |e| Err(CliError::Output(e)))
}

/// Without a daemon: a gateway in this process, every configured server started on first use.
async fn in_process(
    loaded: &Loaded,
    call_timeout: Duration,
    ready: &[&Line],
    window: usize,
    printer: &mut Printer,
) -> Result<(), CliError> {
    let options = GatewayOptions {
        mode: Mode::Full,
        idle: None,
        always_on: Vec::new(),
        pins: Vec::new(),
        passthrough: false,
        list_wait: Duration::ZERO,
        call_timeout,
        connect: ConnectOptions::from_env(),
        budget: Budget::default(),
        project_dir: ".".into(),
        // The command line budgets what it prints itself.
        max_output: crate::outputs::Budget::new(0),
        login: Default::default(),
    };
    let gateway = Gateway::start(loaded.servers().cloned().collect(), options).await?;
    let mut answers = futures_util::stream::iter(calls(ready).into_iter().enumerate())
        .map(|(i, c)| {
            let gateway = gateway.clone();
            async move {
                let outcome = gateway
                    .call_server_tool(&c.server, &c.tool, c.arguments, Some(c.timeout))
                    .await;
                (i, outcome.map_err(CliError::from))
            }
        })
        .buffer_unordered(window);
    let mut printed = Ok(());
    while let Some((i, outcome)) = answers.next().await {
        printed = printed.and(printer.answer(ready[i], outcome));
    }
    drop(answers);
    gateway.shutdown().await;
    printed.map_err(CliError::Output)
}

async fn read(file: &Path) -> Result<String, CliError> {
    if file == Path::new("-") {
        let mut text = String::new();
        tokio::io::stdin()
            .read_to_string(&mut text)
            .await
            .map_err(|e| CliError::Stdin(e.to_string()))?;
        return Ok(text);
    }
    tokio::fs::read_to_string(file)
        .await
        .map_err(|e| CliError::Usage {
            message: format!("cannot read the batch file {}: {e}", file.display()),
            help: "name a readable file of JSON lines, or `-` for stdin".into(),
        })
}

/// Reads one line: a JSON object naming a configured server and a tool the overrides allow.
fn plan(
    number: usize,
    text: &str,
    loaded: &Loaded,
    overrides: &crate::catalog::Overrides,
    timeout: Duration,
) -> Line {
    // One line of JSON: its line in the batch is the line the error names.
    let parsed = parse_arguments(&(text.to_string(), BATCH_ORIGIN)).map_err(|e| match e {
        CliError::InvalidJson {
            origin,
            message,
            column,
            ..
        } => CliError::InvalidJson {
            origin,
            message,
            line: number,
            column,
        },
        CliError::ArgumentsNotObject { found } => CliError::Usage {
            message: format!("batch line {number} is {found}, not a JSON object"),
            help: BATCH_LINE.into(),
        },
        other => other,
    });
    let id = parsed
        .as_ref()
        .ok()
        .and_then(|v| v.get("id").cloned())
        .unwrap_or(Value::Null);
    let call = parsed.and_then(|line| {
        let field = |key: &str| line.get(key).and_then(Value::as_str).unwrap_or_default();
        let (asked, tool) = (field("server"), field("tool"));
        if asked.is_empty() || tool.is_empty() {
            return Err(CliError::Usage {
                message: format!("batch line {number} names no server or tool"),
                help: BATCH_LINE.into(),
            });
        }
        let entry = find_server(loaded, asked)?;
        refuse_by_overrides(overrides, entry, asked, tool)?;
        let arguments = line.get("arguments").cloned().unwrap_or_else(|| json!({}));
        if !arguments.is_object() {
            return Err(CliError::Usage {
                message: format!("batch line {number}: \"arguments\" is not a JSON object"),
                help: BATCH_LINE.into(),
            });
        }
        Ok(CallRequest {
            server: entry.qualified.clone(),
            tool: tool.to_string(),
            arguments,
            timeout,
        })
    });
    Line { number, id, call }
}
