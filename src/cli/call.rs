//! `mcp-launch call SERVER TOOL [ARGS | --stdin] [--timeout DURATION]`.

use std::io::Write;
use std::time::Duration;

use clap::Args;
use serde_json::{json, Value};
use tokio::io::AsyncReadExt;

use crate::catalog;
use crate::duration::Setting;
use crate::mcp::ConnectOptions;
use crate::output::{self, style};

use crate::gateway::daemon::CallRequest;
use crate::outputs::{ClientScope, Structured};
use crate::outputs::{Outputs, Served};

use super::daemon::{self, DaemonFlag};
use super::server::load_overrides;
use super::{find_server, find_tool, load_config, CliError, GlobalArgs, Outcome};

/// Call a tool with JSON arguments.
///
/// The arguments are checked as JSON before anything starts, and against the tool's
/// inputSchema before the call is sent. A result with isError: true exits 1.
///
/// Example: mcp-launch call time get_current_time '{"timezone": "Europe/Paris"}'
#[derive(Debug, Args)]
pub struct CallArgs {
    /// The server (name, or stack/name).
    #[arg(value_name = "SERVER", required_unless_present = "batch")]
    pub server: Option<String>,
    /// The tool.
    #[arg(value_name = "TOOL", required_unless_present = "batch")]
    pub tool: Option<String>,
    /// Arguments as one JSON object (default {}).
    #[arg(value_name = "JSON", conflicts_with = "stdin")]
    pub arguments: Option<String>,
    /// Read the JSON arguments from stdin.
    #[arg(long)]
    pub stdin: bool,
    /// How long to wait for the tool's answer: seconds (30, 2.5) or a duration (90s, 5m).
    #[arg(long, value_name = "DURATION", default_value = "30", value_parser = |s: &str| CALL_TIMEOUT.parse(s))]
    pub timeout: Duration,
    /// Run many calls: one JSON object per line (`{"server", "tool", "arguments", "id"}`)
    /// from FILE, or `-` for stdin; prints one JSON result per line as each finishes.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["server", "stdin"])]
    pub batch: Option<std::path::PathBuf>,
    /// With --batch: how many calls run at once.
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub concurrency: u16,
    /// The most o200k tokens the result may cost; over it, it is cut at a clean boundary and
    /// the rest kept behind a handle (`mcp-launch output HANDLE`). 0: never cut. Default: the
    /// tool's budget in the project's overrides, else 6000.
    #[arg(long, value_name = "TOKENS", value_parser = super::serve::parse_budget)]
    pub max_output_tokens: Option<crate::outputs::Budget>,
    /// Through the daemon of this config set: over its warm session.
    #[command(flatten)]
    pub daemon: DaemonFlag,
}

/// `--timeout`: one millisecond to one day.
const CALL_TIMEOUT: Setting = Setting::timeout("--timeout", Duration::from_secs(30));

pub(super) async fn run(args: CallArgs, global: &GlobalArgs) -> Result<Outcome, CliError> {
    if let Some(file) = &args.batch {
        return super::batch::run(file, &args, global).await;
    }
    let (server_arg, tool) = (
        args.server.clone().unwrap_or_default(),
        args.tool.clone().unwrap_or_default(),
    );
    // Bad JSON is reported before any server starts.
    let arguments = parse_arguments(&read_argument_text(&args).await?)?;
    let loaded = load_config(global)?;
    let entry = find_server(&loaded, &server_arg)?;
    let server = entry.qualified.clone();
    let overrides = load_overrides()?;
    refuse_by_overrides(&overrides, entry, &server_arg, &tool)?;
    let started = std::time::Instant::now();
    let result = match daemon::client_for(&loaded, args.daemon.how).await? {
        Some(mut client) => {
            let request = CallRequest {
                server: server.clone(),
                tool: tool.clone(),
                arguments,
                timeout: args.timeout,
            };
            client.call(&request).await.map_err(daemon::daemon_error)?
        }
        None => {
            check_against_index(entry, &tool, &arguments)?;
            let strict = overrides.pin(&entry.stack, &entry.name).is_strict();
            let first = call_directly(entry, &tool, arguments.clone(), args.timeout, strict).await;
            match step_up_scope(&first) {
                Some(scope) if can_ask_a_person(global) => {
                    anstream::eprintln!("{server} needs a login with more scopes ({scope}); logging in again, then calling once more");
                    super::auth::log_in(&loaded, entry, Some(scope), super::auth::How::Browser)
                        .await?;
                    call_directly(entry, &tool, arguments, args.timeout, strict).await?
                }
                _ => first.map_err(|e| naming_the_login(e, global))?,
            }
        }
    };
    let project = overrides
        .for_server(&entry.stack, &entry.name)
        .and_then(|o| o.output_budget(&tool))
        .map(crate::outputs::Budget::new);
    let budget = args.max_output_tokens.or(project).unwrap_or_default();
    let served = Served {
        server: server.clone(),
        tool: tool.clone(),
        budget: None,
        // `call` prints the result; it advertises no outputSchema to hold it to.
        structured: Structured::Cut,
    };
    let result = Outputs::new(budget)
        .apply(served, result, ClientScope::local(), started.elapsed())
        .await;
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    if global.json {
        output::print_json(&result_json(&server, &tool, result))?;
    } else {
        print_result(&result, is_error)?;
    }
    Ok(if is_error {
        Outcome::Failed
    } else {
        Outcome::Success
    })
}

/// The project's choices bind `call` too: a disabled server is not started and a denied tool
/// is not called (`asked` is the server as the user named it, for the help).
pub(super) fn refuse_by_overrides(
    overrides: &crate::catalog::Overrides,
    entry: &crate::config::ServerEntry,
    asked: &str,
    tool: &str,
) -> Result<(), CliError> {
    let server = entry.qualified.clone();
    if overrides.is_disabled(entry) {
        return Err(CliError::Refused {
            server,
            tool: None,
            help: format!("enable it with `mcp-launch server enable {asked}`"),
        });
    }
    let is_allowed = overrides
        .for_server(&entry.stack, &entry.name)
        .is_none_or(|o| o.is_allowed(tool));
    if !is_allowed {
        return Err(CliError::Refused {
            server,
            tool: Some(tool.to_string()),
            help: format!(
                "this project's overrides deny it; allow it with `mcp-launch tool allow {asked} {tool}`"
            ),
        });
    }
    Ok(())
}

/// `{"success": true, "result"}`, or for a tool that said no `{"success": false, "error",
/// "result"}`.
pub(super) fn result_json(server: &str, tool: &str, result: Value) -> Value {
    if result.get("isError").and_then(Value::as_bool) != Some(true) {
        return json!({"success": true, "result": result});
    }
    json!({
        "success": false,
        "error": {
            "type": "tool_error",
            "message": format!("{server}/{tool} returned an error: {}", result_text(&result)),
            "help": "the tool reported a failure; check the arguments and the message",
        },
        "result": result,
    })
}

/// What the fresh tool index already knows settles a wrong call before any server starts:
/// an unknown name (with suggestions), a tool only richer clients can call, arguments that
/// break its input schema. Unknown to the index, or missing from a listing that had warnings
/// (it may be partial): the live call judges.
fn check_against_index(
    entry: &crate::config::ServerEntry,
    tool: &str,
    arguments: &Value,
) -> Result<(), CliError> {
    let offered = ConnectOptions::from_env().offered_capabilities();
    let Some(report) = catalog::indexed(entry, &offered) else {
        return Ok(());
    };
    if report.tools.iter().all(|t| catalog::tool::name(t) != tool) {
        refuse_needing(entry, tool, &offered)?;
        if !report.warnings.is_empty() {
            // A listing with warnings may be partial (paging stopped at its cap, tools
            // skipped): what it lacks, the live call judges.
            return Ok(());
        }
    }
    let tool_def = find_tool(&entry.qualified, &report.tools, tool)?;
    check_arguments(&entry.qualified, tool, tool_def, arguments)
}

/// The error for a tool the index says this path's client cannot call (`Ok` otherwise).
fn refuse_needing(
    entry: &crate::config::ServerEntry,
    tool: &str,
    offered: &Value,
) -> Result<(), CliError> {
    match catalog::needed_capabilities(entry, tool, offered) {
        Some(needs) => Err(CliError::NeedsCapability {
            server: entry.qualified.clone(),
            tool: tool.to_string(),
            needs,
        }),
        None => Ok(()),
    }
}

/// The violations of `arguments` against the tool's input schema, as an error.
fn check_arguments(
    server: &str,
    tool: &str,
    tool_def: &Value,
    arguments: &Value,
) -> Result<(), CliError> {
    let violations = catalog::argument_violations(tool_def, arguments);
    if violations.is_empty() {
        return Ok(());
    }
    Err(CliError::InvalidArguments {
        server: server.to_string(),
        tool: tool.to_string(),
        violations,
        expected: catalog::expected_shape(tool_def),
    })
}

/// The scopes a call's failure asks a new login for (a 403 `insufficient_scope`, SEP-2350).
fn step_up_scope(outcome: &Result<Value, CliError>) -> Option<String> {
    match outcome {
        Err(CliError::Server { problem, .. }) => problem.step_up_scope().map(String::from),
        _ => None,
    }
}

/// A `needs_login` failure with its help naming the exact command to run (the server, the
/// scopes a step-up needs, the config files given); other errors as they are.
fn naming_the_login(error: CliError, global: &GlobalArgs) -> CliError {
    use crate::catalog::{RelayedProblem, ServerProblem};
    use crate::error::Actionable;
    let CliError::Server { server, problem } = error else {
        return error;
    };
    if !problem.needs_login() {
        return CliError::Server { server, problem };
    }
    let command =
        crate::auth::client::login_command(&server, problem.step_up_scope(), &global.configs);
    let relayed = RelayedProblem {
        kind: problem.kind(),
        message: problem.to_string(),
        help: format!("a person must log in: {command}"),
        is_config: false,
        scope: problem.step_up_scope().map(str::to_string),
    };
    CliError::server(&server, ServerProblem::Relayed(relayed))
}

/// Whether a person is there to log in: a terminal on stderr, and not `--json` (agents read
/// the `needs_login` error and its command instead; a step-up is retried once, never looped).
fn can_ask_a_person(global: &GlobalArgs) -> bool {
    use std::io::IsTerminal;
    !global.json && std::io::stderr().is_terminal()
}

/// Starts the server for this one call. `strict` (the overrides pin the server strictly)
/// refuses a tool whose definition changed since it was approved.
async fn call_directly(
    entry: &crate::config::ServerEntry,
    tool: &str,
    arguments: Value,
    timeout: Duration,
    strict: bool,
) -> Result<Value, CliError> {
    let server = &entry.qualified;
    let connect = ConnectOptions::from_env();
    let session = catalog::connect(entry, &connect)
        .await
        .map_err(|problem| CliError::server(server, problem))?;
    let outcome = call(&session, entry, tool, arguments, timeout, connect, strict).await;
    session.close().await;
    outcome
}

async fn call(
    session: &crate::mcp::Session,
    entry: &crate::config::ServerEntry,
    tool: &str,
    arguments: Value,
    timeout: Duration,
    connect: ConnectOptions,
    strict: bool,
) -> Result<Value, CliError> {
    let server = entry.qualified.as_str();
    let server_error = |e: crate::mcp::McpError| CliError::server(server, e);
    let tools = session
        .list_tools(connect.list_timeout)
        .await
        .map_err(server_error)?;
    if tools.tools.iter().all(|t| catalog::tool::name(t) != tool) {
        // Listed to richer clients only (the daemon's)? Recorded beside their listing, this
        // one tells.
        catalog::record_live(entry, session.info(), tools.clone()).await;
        refuse_needing(entry, tool, &connect.offered_capabilities())?;
    }
    let tool_def = find_tool(server, &tools.tools, tool)?;
    if strict
        && catalog::Approvals::load()
            .of(&entry.stack, &entry.name, tool_def)
            .is_changed()
    {
        return Err(CliError::Withheld {
            server: server.to_string(),
            tool: tool.to_string(),
        });
    }
    check_arguments(server, tool, tool_def, &arguments)?;
    if crate::mcp::requires_task(tool_def) {
        let params = serde_json::json!({"name": tool, "arguments": arguments});
        let never = tokio_util::sync::CancellationToken::new();
        return (session.call_as_task(params, timeout, &never).await).map_err(server_error);
    }
    // A server of the 2026-07-28 revision may ask for input in its result: the CLI has no
    // user to ask, so that ends as an `input_required` error naming what it asked.
    session
        .call_tool_answering(tool, arguments, timeout)
        .await
        .map_err(server_error)
}

/// The raw arguments text and where it came from. Stdin is read asynchronously so a Ctrl-C
/// while waiting for it is still handled.
async fn read_argument_text(args: &CallArgs) -> Result<(String, &'static str), CliError> {
    if !args.stdin {
        return Ok((
            args.arguments.clone().unwrap_or_default(),
            "the command line",
        ));
    }
    let mut text = String::new();
    tokio::io::stdin()
        .read_to_string(&mut text)
        .await
        .map_err(|e| CliError::Stdin(e.to_string()))?;
    Ok((text, "stdin"))
}

/// Parses the arguments: one JSON object (empty text means `{}`).
pub(super) fn parse_arguments((text, origin): &(String, &'static str)) -> Result<Value, CliError> {
    let origin = *origin;
    if text.trim().is_empty() {
        return Ok(json!({}));
    }
    let value: Value = serde_json::from_str(text).map_err(|e| CliError::InvalidJson {
        origin,
        message: e
            .to_string()
            .split(" at line")
            .next()
            .unwrap_or_default()
            .to_string(),
        line: e.line(),
        column: e.column(),
    })?;
    match value {
        Value::Object(_) => Ok(value),
        other => Err(CliError::ArgumentsNotObject {
            found: match other {
                Value::Null => "null",
                Value::Bool(_) => "a boolean",
                Value::Number(_) => "a number",
                Value::String(_) => "a string",
                Value::Array(_) => "an array",
                Value::Object(_) => "an object",
            },
        }),
    }
}

/// The text parts of a result, joined (for messages).
fn result_text(result: &Value) -> String {
    result
        .get("content")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// Human output: text as text, structured content as JSON, other content described.
fn print_result(result: &Value, is_error: bool) -> std::io::Result<()> {
    let mut out = crate::output::stdout();
    if is_error {
        let bad = style::BAD;
        let mut err = crate::output::stderr();
        writeln!(
            err,
            "{bad}error:{bad:#} the tool returned an error (isError: true)"
        )?;
    }
    let items = result
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for item in &items {
        match item.get("type").and_then(Value::as_str) {
            // A cut result's envelope names the `output` command, not MCP's read_output.
            Some("text") => writeln!(
                out,
                "{}",
                output::in_cli_words(item.get("text").and_then(Value::as_str).unwrap_or(""))
            )?,
            Some(kind @ ("image" | "audio")) => {
                let mime = item.get("mimeType").and_then(Value::as_str).unwrap_or("?");
                let bytes = item
                    .get("data")
                    .and_then(Value::as_str)
                    .map_or(0, |d| d.len() * 3 / 4);
                writeln!(
                    out,
                    "[{kind}: {mime}, ~{bytes} bytes; --json shows the data]"
                )?;
            }
            Some("resource") => {
                let res = item.get("resource").cloned().unwrap_or_default();
                let uri = res.get("uri").and_then(Value::as_str).unwrap_or("?");
                writeln!(out, "[resource {uri}]")?;
                if let Some(text) = res.get("text").and_then(Value::as_str) {
                    writeln!(out, "{text}")?;
                }
            }
            Some("resource_link") => {
                let uri = item.get("uri").and_then(Value::as_str).unwrap_or("?");
                writeln!(out, "[resource link {uri}]")?;
            }
            _ => writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(item).unwrap_or_default()
            )?,
        }
    }
    if let Some(structured) = result.get("structuredContent") {
        if items.is_empty() {
            writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(structured).unwrap_or_default()
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn parse(args: &[&str]) -> Result<CallArgs, clap::Error> {
        #[derive(Parser)]
        struct T {
            #[command(flatten)]
            call: CallArgs,
        }
        T::try_parse_from(std::iter::once("t").chain(args.iter().copied())).map(|t| t.call)
    }

    #[test]
    fn json_errors_carry_line_and_column() {
        let text = ("{\n  \"a\": 1,\n  \"b\": }".to_string(), "the command line");
        match parse_arguments(&text).unwrap_err() {
            CliError::InvalidJson { line, column, .. } => assert_eq!((line, column), (3, 8)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn arguments_must_be_an_object() {
        let array = ("[1]".to_string(), "stdin");
        assert!(matches!(
            parse_arguments(&array),
            Err(CliError::ArgumentsNotObject { found: "an array" })
        ));
        assert_eq!(
            parse_arguments(&(" \n".to_string(), "stdin")).unwrap(),
            json!({})
        );
    }

    #[test]
    fn timeout_must_be_positive_and_stdin_excludes_inline_json() {
        assert!(parse(&["s", "t", "--timeout", "0"]).is_err());
        assert!(parse(&["s", "t", "--timeout", "abc"]).is_err());
        assert!(
            parse(&["s", "t", "--timeout", "1e20"]).is_err(),
            "panicked before"
        );
        let timeout = |t| parse(&["s", "t", "--timeout", t]).unwrap().timeout;
        assert_eq!(timeout("2.5"), Duration::from_millis(2500));
        assert_eq!(timeout("2m"), Duration::from_secs(120));
        assert_eq!(parse(&["s", "t"]).unwrap().timeout, Duration::from_secs(30));
        assert!(parse(&["s", "t", "{}", "--stdin"]).is_err());
    }
}
