//! `mcp-launch tokens [--by server|tool]`.

use std::io::Write;

use clap::{Args, ValueEnum};
use serde_json::{json, Value};

use crate::catalog::{self, total_after, total_before, ExposedTool, ServerReport, Status};
use crate::output::{self, style, thousands, Table};

use super::server::entries_with_overrides;
use super::{load_config, CliError, GlobalArgs, Outcome};

/// Token cost of the stack's tool definitions, before and after the overrides.
///
/// Counts with the o200k_base tokenizer (offline) what each server's tool definitions put in a
/// model's context, and what this project exposes of them (denied tools out, description
/// overrides in). Servers come from the tool index when fresh, else live.
///
/// Example: mcp-launch tokens --by tool --json
#[derive(Debug, Args)]
pub struct TokensArgs {
    /// One row per server or per tool.
    #[arg(long, value_enum, default_value_t = By::Server, value_name = "WHAT")]
    pub by: By,
    /// Check servers live instead of answering from the tool index.
    #[arg(long)]
    pub refresh: bool,
}

/// How the report is broken down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum By {
    /// One row per server.
    Server,
    /// One row per tool.
    Tool,
}

pub(super) async fn run(args: TokensArgs, global: &GlobalArgs) -> Result<Outcome, CliError> {
    let loaded = load_config(global)?;
    let (entries, overrides) = entries_with_overrides(&loaded)?;
    let reports =
        catalog::resolve(&entries, &catalog::ResolveOptions::from_env(args.refresh)).await;
    let exposed = catalog::expose(&reports, &overrides).await;
    let any_failed = reports.iter().any(|r| r.status == Status::Error);
    if global.json {
        output::print_answer(!any_failed, report_json(&reports, &exposed, args.by))?;
    } else {
        print_report(&reports, &exposed, args.by)?;
    }
    Ok(if any_failed {
        Outcome::Failed
    } else {
        Outcome::Success
    })
}

fn counts(tools: &[ExposedTool]) -> Value {
    let allowed = tools.iter().filter(|t| t.is_allowed).count();
    json!({
        "tools": {"before": tools.len(), "after": allowed},
        "tokens": {"before": total_before(tools), "after": total_after(tools)},
    })
}

fn report_json(reports: &[ServerReport], exposed: &[Vec<ExposedTool>], by: By) -> Value {
    let mut stacks: Vec<(String, Vec<Value>, Vec<ExposedTool>)> = Vec::new();
    for (r, tools) in reports.iter().zip(exposed) {
        let mut server = json!({"name": r.name, "status": r.status.as_str()});
        if let Value::Object(c) = counts(tools) {
            server
                .as_object_mut()
                .into_iter()
                .for_each(|o| o.extend(c.clone()));
        }
        if by == By::Tool {
            server["toolCosts"] = tools
                .iter()
                .map(|t| {
                    json!({"name": t.name, "allowed": t.is_allowed, "overridden": t.is_overridden,
                           "tokens": {"before": t.tokens_before, "after": t.is_allowed.then_some(t.tokens_after).flatten()}})
                })
                .collect();
        }
        match stacks.iter_mut().find(|(name, _, _)| *name == r.stack) {
            Some((_, servers, all)) => {
                servers.push(server);
                all.extend(tools.iter().cloned());
            }
            None => stacks.push((r.stack.clone(), vec![server], tools.clone())),
        }
    }
    let all: Vec<ExposedTool> = exposed.iter().flatten().cloned().collect();
    let mut total = counts(&all);
    if let (Some(before), Some(after)) = (total_before(&all), total_after(&all)) {
        total["tokens"]["saved"] = json!(before - after.min(before));
    }
    json!({
        "by": match by { By::Server => "server", By::Tool => "tool" },
        "tokenizer": "o200k_base",
        "stacks": stacks.into_iter().map(|(name, servers, tools)| {
            let mut stack = counts(&tools);
            stack["name"] = json!(name);
            stack["servers"] = json!(servers);
            stack
        }).collect::<Vec<_>>(),
        "total": total,
    })
}

fn opt(n: Option<usize>) -> String {
    n.map(thousands).unwrap_or_else(|| "-".into())
}

fn print_report(
    reports: &[ServerReport],
    exposed: &[Vec<ExposedTool>],
    by: By,
) -> std::io::Result<()> {
    let mut table = match by {
        By::Server => Table::new(
            vec![
                "STACK",
                "SERVER",
                "TOOLS",
                "TOKENS",
                "EXPOSED",
                "EXPOSED TOKENS",
            ],
            &[2, 3, 4, 5],
        ),
        By::Tool => Table::new(
            vec!["SERVER", "TOOL", "TOKENS", "EXPOSED TOKENS", "NOTE"],
            &[2, 3],
        ),
    };
    for (r, tools) in reports.iter().zip(exposed) {
        match by {
            By::Server => table.row(server_row(r, tools)),
            By::Tool => tools.iter().for_each(|t| table.styled_row(tool_row(r, t))),
        }
    }
    let mut out = crate::output::stdout();
    write!(out, "{}", table.render())?;
    print_totals(&mut out, reports, exposed)
}

/// A server's row: its tools and tokens offered and exposed (`-` when it has no tools).
fn server_row(r: &ServerReport, tools: &[ExposedTool]) -> Vec<String> {
    let mut row = vec![r.stack.clone(), r.name.clone()];
    if !r.has_tools() {
        row.extend([r.status.as_str().into(), "-".into(), "-".into(), "-".into()]);
        return row;
    }
    row.extend([
        tools.len().to_string(),
        opt(total_before(tools)),
        tools.iter().filter(|t| t.is_allowed).count().to_string(),
        opt(total_after(tools)),
    ]);
    row
}

/// A tool's row: tokens before and after the overrides, and why they differ.
fn tool_row(r: &ServerReport, t: &ExposedTool) -> Vec<(String, anstyle::Style)> {
    let note = match (t.is_allowed, t.is_overridden) {
        (false, _) => "denied",
        (true, true) => "description overridden",
        (true, false) => "",
    };
    let after = if t.is_allowed {
        opt(t.tokens_after)
    } else {
        "-".into()
    };
    vec![
        (r.name.clone(), style::DIM),
        (t.name.clone(), style::HEAD),
        (opt(t.tokens_before), Default::default()),
        (after, Default::default()),
        (note.to_string(), style::WARN),
    ]
}

/// The totals line (with what the overrides save) and the servers not counted.
fn print_totals(
    out: &mut impl Write,
    reports: &[ServerReport],
    exposed: &[Vec<ExposedTool>],
) -> std::io::Result<()> {
    let all: Vec<ExposedTool> = exposed.iter().flatten().cloned().collect();
    let allowed = all.iter().filter(|t| t.is_allowed).count();
    let (before, after) = (total_before(&all), total_after(&all));
    let saved = match (before, after) {
        (Some(b), Some(a)) if b > 0 => format!(
            " (−{}, {:.0}%)",
            thousands(b - a.min(b)),
            (b - a.min(b)) as f64 * 100.0 / b as f64
        ),
        _ => String::new(),
    };
    let head = style::HEAD;
    writeln!(
        out,
        "\n{head}total:{head:#} {} tokens in {} tools offered → {} tokens in {} tools exposed{saved}",
        opt(before),
        all.len(),
        opt(after),
        allowed
    )?;
    for r in reports.iter().filter(|r| r.status == Status::Error) {
        let bad = style::BAD;
        writeln!(
            out,
            "{bad}{}:{bad:#} not counted (error; `mcp-launch list` says why)",
            r.name
        )?;
    }
    Ok(())
}
