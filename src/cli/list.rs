//! `mcp-launch list [SERVER]`.

use clap::Args;
use serde_json::{json, Value};

use crate::catalog::{self, tool, PreflightOptions, ServerReport, Status};
use crate::error::Actionable;
use crate::mcp::ConnectOptions;
use crate::output::{self, style, thousands, Table};

use super::{connected_report, load_config, CliError, GlobalArgs, Outcome};

/// Check every server in parallel, or list one server's tools.
///
/// Without SERVER: one row per server of every stack — status, transport, tool count, schema
/// tokens and init time; failures say what to do. With SERVER: its tools with their required
/// parameters and token cost.
///
/// Example: mcp-launch list --config work.json --json
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Show this server's tools (name, or stack/name when two stacks share it).
    #[arg(value_name = "SERVER")]
    pub server: Option<String>,
    /// Re-check servers live instead of answering from the tool index (every check is live
    /// until the index exists).
    #[arg(long)]
    pub refresh: bool,
}

pub(super) async fn run(args: ListArgs, global: &GlobalArgs) -> Result<Outcome, CliError> {
    if let Some(name) = &args.server {
        let report = connected_report(global, name).await?;
        if global.json {
            output::print_json(&tools_json(&report))?;
        } else {
            print_tools(&report)?;
        }
        return Ok(Outcome::Success);
    }
    let loaded = load_config(global)?;
    let opts = PreflightOptions {
        connect: ConnectOptions::from_env(),
        count_tokens: true,
    };
    let entries: Vec<_> = loaded.servers().cloned().collect();
    let reports = catalog::preflight(&entries, &opts).await;
    if global.json {
        let configs: Vec<String> = loaded
            .stacks
            .iter()
            .map(|s| s.path.display().to_string())
            .collect();
        output::print_json(&json!({
            "configs": configs,
            "servers": reports.iter().map(server_json).collect::<Vec<_>>(),
        }))?;
    } else {
        print_servers(&reports, loaded.stacks.len() > 1)?;
    }
    let any_failed = reports.iter().any(|r| r.status == Status::Error);
    Ok(if any_failed {
        Outcome::Failed
    } else {
        Outcome::Success
    })
}

fn server_json(r: &ServerReport) -> Value {
    let mut v = json!({
        "name": r.name,
        "stack": r.stack,
        "status": r.status.as_str(),
        "transport": r.transport,
        "tools": r.tools.len(),
        "tokens": r.tokens(),
        "init_ms": r.init_time.map(|t| t.as_millis() as u64),
    });
    if let Some(version) = &r.protocol_version {
        v["protocolVersion"] = json!(version);
    }
    if r.used_slow_window {
        v["slowWindow"] = json!(true);
    }
    if !r.warnings.is_empty() {
        v["warnings"] = json!(r.warnings);
    }
    if let Some(problem) = &r.error {
        v["error"] = output::error_object(problem);
    }
    v
}

fn tools_json(r: &ServerReport) -> Value {
    let tools: Vec<Value> = r
        .tools
        .iter()
        .enumerate()
        .map(|(i, t)| {
            json!({
                "name": tool::name(t),
                "description": tool::description(t),
                "requiredParams": tool::required_params(t),
                "tokens": r.tool_tokens.get(i),
            })
        })
        .collect();
    json!({"server": r.name, "status": r.status.as_str(), "tokens": r.tokens(), "tools": tools, "warnings": r.warnings})
}

fn print_servers(reports: &[ServerReport], show_stack: bool) -> std::io::Result<()> {
    use std::io::Write;
    let mut headers = vec!["SERVER", "STATUS", "TRANSPORT", "TOOLS", "TOKENS", "INIT"];
    if show_stack {
        headers.insert(1, "STACK");
    }
    let right: Vec<usize> = if show_stack {
        vec![4, 5, 6]
    } else {
        vec![3, 4, 5]
    };
    let mut table = Table::new(headers, &right);
    for r in reports {
        let status_style = match r.status {
            Status::Connected => style::GOOD,
            Status::Error => style::BAD,
            Status::Disabled => style::DIM,
        };
        let dash = || "-".to_string();
        let connected = r.status == Status::Connected;
        let mut init = r
            .init_time
            .map(|t| format!("{} ms", t.as_millis()))
            .unwrap_or_else(dash);
        if r.used_slow_window {
            init.push_str(" (slow)");
        }
        let mut row = vec![
            (r.name.clone(), style::HEAD),
            (r.status.as_str().to_string(), status_style),
            (r.transport.to_string(), Default::default()),
            (
                if connected {
                    r.tools.len().to_string()
                } else {
                    dash()
                },
                Default::default(),
            ),
            (
                r.tokens().map(thousands).unwrap_or_else(dash),
                Default::default(),
            ),
            (init, Default::default()),
        ];
        if show_stack {
            row.insert(1, (r.stack.clone(), style::DIM));
        }
        table.styled_row(row);
    }
    let mut out = anstream::stdout().lock();
    write!(out, "{}", table.render())?;
    for r in reports {
        for w in &r.warnings {
            let st = style::WARN;
            writeln!(out, "{st}warning:{st:#} {}: {w}", r.name)?;
        }
        if let Some(problem) = &r.error {
            let (bad, head) = (style::BAD, style::HEAD);
            writeln!(out, "\n{bad}{}:{bad:#} {problem}", r.name)?;
            writeln!(out, "  {head}help:{head:#} {}", problem.help())?;
        }
    }
    let count = |s: Status| reports.iter().filter(|r| r.status == s).count();
    let tools: usize = reports.iter().map(|r| r.tools.len()).sum();
    let tokens: usize = reports.iter().filter_map(ServerReport::tokens).sum();
    let dim = style::DIM;
    writeln!(
        out,
        "\n{dim}{} servers: {} connected, {} error, {} disabled · {} tools · {} tokens{dim:#}",
        reports.len(),
        count(Status::Connected),
        count(Status::Error),
        count(Status::Disabled),
        thousands(tools),
        thousands(tokens)
    )
}

fn print_tools(r: &ServerReport) -> std::io::Result<()> {
    use std::io::Write;
    let mut table = Table::new(vec!["TOOL", "REQUIRED", "TOKENS", "DESCRIPTION"], &[2]);
    let name_width = r
        .tools
        .iter()
        .map(|t| tool::name(t).len())
        .max()
        .unwrap_or(4);
    let req_width = r
        .tools
        .iter()
        .map(|t| tool::required_params(t).join(", ").len())
        .max()
        .unwrap_or(8);
    let room = output::terminal_width()
        .saturating_sub(name_width + req_width.max(8) + 14)
        .max(20);
    for (i, t) in r.tools.iter().enumerate() {
        table.styled_row(vec![
            (tool::name(t).to_string(), style::HEAD),
            (tool::required_params(t).join(", "), Default::default()),
            (
                r.tool_tokens
                    .get(i)
                    .map(|n| thousands(*n))
                    .unwrap_or_default(),
                Default::default(),
            ),
            (output::clip(tool::description(t), room), style::DIM),
        ]);
    }
    let mut out = anstream::stdout().lock();
    write!(out, "{}", table.render())?;
    for w in &r.warnings {
        let st = style::WARN;
        writeln!(out, "{st}warning:{st:#} {w}")?;
    }
    let dim = style::DIM;
    writeln!(
        out,
        "\n{dim}{}: {} tools · {} tokens{dim:#}",
        r.name,
        r.tools.len(),
        r.tokens().map(thousands).unwrap_or_else(|| "-".into())
    )
}
