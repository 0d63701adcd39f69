//! `mcp-launch list [SERVER]`.

use std::path::PathBuf;

use clap::Args;
use serde_json::{json, Value};

use crate::catalog::{
    self, tool, ExposedTool, Overrides, Repair, ServerOverrides, ServerRepairs, ServerReport,
    Status, ToolView,
};
use crate::error::Actionable;
use crate::output::{self, style, thousands, Table};

use super::daemon::{self, DaemonFlag, DaemonUse};
use super::server::{budget_words, entries_with_overrides, load_overrides};
use super::{
    load_config_announced, report_through_daemon, server_report, CliError, GlobalArgs, Outcome,
};

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
    /// Check servers live instead of answering from the tool index (only this server's
    /// entry is replaced when SERVER is given).
    #[arg(long)]
    pub refresh: bool,
    /// With SERVER: also show the tools the overrides deny, marked `denied`.
    #[arg(long)]
    pub all: bool,
    /// Through the daemon (without --refresh, which checks live here): its warm sessions'
    /// tools for running servers, the tool index's for the rest; nothing is started.
    #[command(flatten)]
    pub daemon: DaemonFlag,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub init_timeout: super::InitTimeoutFlag,
}

pub(super) async fn run(args: ListArgs, global: &GlobalArgs) -> Result<Outcome, CliError> {
    if let Some(name) = &args.server {
        let overrides = load_overrides()?;
        let report = match (daemon::checks_live(args.refresh), args.daemon.how) {
            // --refresh checks live here, whatever runs.
            (true, _) | (_, DaemonUse::Off) => server_report(global, name, args.refresh).await?,
            (false, how) => report_through_daemon(global, name, how, false).await?,
        };
        let costs = catalog::expose(std::slice::from_ref(&report), &overrides).await;
        let shown = Exposed::of(
            &report,
            &overrides,
            costs.into_iter().next().unwrap_or_default(),
        );
        if global.json {
            output::print_answer(true, tools_json(&report, &shown, args.all))?;
        } else {
            print_tools(&report, &shown, args.all)?;
        }
        return Ok(Outcome::Success);
    }
    let loaded = load_config_announced(global, true)?;
    let opts = catalog::ResolveOptions::from_env(args.refresh);
    let (entries, overrides) = entries_with_overrides(&loaded)?;
    let through = match daemon::checks_live(args.refresh) {
        true => None,
        false => daemon::reports_through(&loaded, args.daemon.how, &entries).await?,
    };
    // The daemon's live checks are recorded by it; embedding them is its business.
    let ridden = through.is_some();
    let mut reports = match through {
        Some(reports) => reports,
        None => super::progress::resolve(&entries, &opts, !global.json).await,
    };
    let exposed = catalog::expose(&reports, &overrides).await;
    let changed = changed_names(&exposed);
    let hidden = narrow_to_exposed(&mut reports, &exposed);
    if global.json {
        let configs: Vec<String> = loaded
            .stacks
            .iter()
            .map(|s| s.path.display().to_string())
            .collect();
        let any_failed = reports.iter().any(|r| r.status == Status::Error);
        output::print_answer(
            !any_failed,
            json!({
                "configs": configs,
                "servers": reports.iter().zip(&entries).zip(&hidden).zip(&changed).map(|(((r, e), hidden), changed)| {
                    let mut v = server_json(r, &global.configs);
                    if *hidden > 0 {
                        v["hiddenTools"] = json!(hidden);
                    }
                    if !changed.is_empty() {
                        v["changedTools"] = json!(changed);
                    }
                    if overrides.for_server(&e.stack, &e.name).is_some_and(|o| o.disabled.is_some()) {
                        v["disabledBy"] = json!("overrides");
                    }
                    v
                }).collect::<Vec<_>>(),
            }),
        )?;
    } else {
        print_servers(&reports, loaded.stacks.len() > 1, &global.configs)?;
        print_changed(&reports, &changed)?;
        let hidden: usize = hidden.iter().sum();
        if hidden > 0 {
            let dim = style::DIM;
            anstream::println!(
                "{dim}{} hidden by {} (`list SERVER --all` shows them){dim:#}",
                output::counted(hidden, "tool"),
                overrides.path().display()
            );
        }
    }
    let checked_live = !ridden && reports.iter().any(|r| r.status == Status::Connected);
    super::embedding::in_background(&loaded, checked_live);
    let any_failed = reports.iter().any(|r| r.status == Status::Error);
    Ok(if any_failed {
        Outcome::Failed
    } else {
        Outcome::Success
    })
}

fn server_json(r: &ServerReport, configs: &[PathBuf]) -> Value {
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
    if let Some(at) = r.checked_at {
        let secs = at
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        v["checkedAt"] = json!(secs);
    }
    if !r.stale.is_empty() {
        v["stale"] = json!(r.stale);
    }
    if !r.warnings.is_empty() {
        v["warnings"] = json!(r.warnings);
    }
    let repairs = r.repairs();
    if let Some(note) = repairs.note() {
        v["repairs"] = repairs_json(&repairs, note);
    }
    if let Some(problem) = &r.error {
        v["error"] = output::error_object(problem);
    }
    if r.status == Status::NeedsLogin {
        v["help"] = json!(r.login_command(configs));
    }
    v
}

/// A server's repairs for `--json`: the note, each repaired tool's repairs, the count skipped.
fn repairs_json(repairs: &ServerRepairs, note: String) -> Value {
    let tools: serde_json::Map<String, Value> = (repairs.repaired.iter())
        .map(|t| (t.tool.clone(), tool_repairs_json(&t.repairs)))
        .collect();
    json!({"note": note, "tools": tools, "skipped": repairs.skipped.len()})
}

fn tool_repairs_json(repairs: &[Repair]) -> Value {
    repairs.iter().map(ToString::to_string).collect()
}

/// Names of each server's tools whose definitions changed since they were approved.
fn changed_names(exposed: &[Vec<ExposedTool>]) -> Vec<Vec<String>> {
    let changed = |tools: &Vec<ExposedTool>| {
        (tools.iter())
            .filter(|t| t.approval.is_changed())
            .map(|t| t.name.clone())
            .collect()
    };
    exposed.iter().map(changed).collect()
}

/// One warning per server with changed tool definitions (a rug pull, or an upgrade).
fn print_changed(reports: &[ServerReport], changed: &[Vec<String>]) -> std::io::Result<()> {
    for (r, names) in reports.iter().zip(changed).filter(|(_, n)| !n.is_empty()) {
        output::warn(&format!(
            "{}: {} changed since approved: {} — `mcp-launch list {}` shows them",
            r.name,
            plural(names.len(), "tool definition"),
            names.join(", "),
            r.name
        ))?;
    }
    Ok(())
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// Narrows each report to the tools the project exposes (definitions and token counts as
/// clients get them), returning how many tools each lost to the overrides.
fn narrow_to_exposed(reports: &mut [ServerReport], exposed: &[Vec<ExposedTool>]) -> Vec<usize> {
    reports
        .iter_mut()
        .zip(exposed)
        .map(|(report, tools)| {
            let allowed: Vec<&ExposedTool> = tools.iter().filter(|t| t.is_allowed).collect();
            report.tools = allowed.iter().map(|t| t.definition.clone()).collect();
            report.tool_tokens = allowed
                .iter()
                .map(|t| t.tokens_after)
                .collect::<Option<Vec<_>>>()
                .unwrap_or_default();
            tools.len() - allowed.len()
        })
        .collect()
}

/// One server's tools as the project's overrides expose them.
struct Exposed<'a> {
    views: Vec<ToolView<'a>>,
    /// Token cost of each tool as exposed (overridden descriptions recounted), by tool index:
    /// the same figures `list` and `tokens` total.
    costs: Vec<Option<usize>>,
    /// Total cost of the allowed tools.
    total: Option<usize>,
    /// Names the server no longer offers: the tool index's and the overrides' (sorted).
    stale: Vec<String>,
    /// Where the overrides live, for notes.
    file: String,
    /// The overrides switch the server off (it still answered, for this listing).
    is_disabled: bool,
    /// What the overrides choose for the server (for its output budgets).
    entry: ServerOverrides,
    /// By tool index: its definition changed since it was approved.
    changed: Vec<bool>,
    /// The server is pinned strictly: changed tools are withheld by `serve`.
    is_strict: bool,
}

impl<'a> Exposed<'a> {
    fn of(r: &'a ServerReport, overrides: &Overrides, exposed: Vec<ExposedTool>) -> Self {
        let key = r.config_name.as_str();
        let mut stale = overrides.stale_names(&r.stack, key, &r.tools);
        stale.extend(r.stale.iter().cloned());
        stale.sort();
        stale.dedup();
        Exposed {
            changed: exposed.iter().map(|t| t.approval.is_changed()).collect(),
            is_strict: overrides.pin(&r.stack, key).is_strict(),
            views: overrides.apply(&r.stack, key, &r.tools),
            total: catalog::total_after(&exposed),
            costs: exposed.iter().map(|t| t.tokens_after).collect(),
            stale,
            file: overrides.path().display().to_string(),
            is_disabled: (overrides.for_server(&r.stack, key))
                .is_some_and(|o| o.disabled == Some(true)),
            entry: (overrides.for_server(&r.stack, key))
                .cloned()
                .unwrap_or_default(),
        }
    }

    /// Whether the tool's definition changed since it was approved.
    fn is_changed(&self, view: &ToolView<'_>) -> bool {
        self.changed.get(view.index).copied().unwrap_or(false)
    }

    /// The tools to show: allowed ones, or all of them with `--all`.
    fn shown(&self, all: bool) -> impl Iterator<Item = &ToolView<'a>> {
        self.views.iter().filter(move |v| all || v.is_allowed)
    }
}

fn tools_json(r: &ServerReport, exposed: &Exposed<'_>, all: bool) -> Value {
    let repairs = r.repairs();
    let tools: Vec<Value> = exposed
        .shown(all)
        .map(|view| {
            let mut v = json!({
                "name": view.name,
                "description": view.description,
                "requiredParams": tool::required_params(view.def),
                "tokens": exposed.costs.get(view.index).copied().flatten(),
                "allowed": view.is_allowed,
            });
            if view.is_overridden {
                v["originalDescription"] = json!(view.original_description());
            }
            if let Some(tokens) = exposed.entry.output_budget(view.name) {
                v["maxOutputTokens"] = json!(tokens);
            }
            if let Some(repairs) = repairs.of_tool(view.name) {
                v["repairs"] = tool_repairs_json(repairs);
            }
            if exposed.is_changed(view) {
                v["changed"] = json!(true);
                v["withheld"] = json!(exposed.is_strict);
            }
            v
        })
        .collect();
    let changed: Vec<&str> = (exposed.views.iter())
        .filter(|view| exposed.is_changed(view))
        .map(|view| view.name)
        .collect();
    let hidden = exposed.views.len() - exposed.shown(false).count();
    let mut v = json!({"server": r.name, "status": r.status.as_str(), "tokens": exposed.total, "tools": tools, "warnings": r.warnings, "stale": exposed.stale, "hiddenTools": hidden});
    if exposed.is_disabled {
        v["disabledBy"] = json!("overrides");
    }
    if !changed.is_empty() {
        v["changed"] = json!(changed);
    }
    if exposed.is_strict {
        v["pin"] = json!("strict");
    }
    if let Some(note) = repairs.note() {
        v["repairs"] = repairs_json(&repairs, note);
    }
    v
}

fn print_servers(
    reports: &[ServerReport],
    show_stack: bool,
    configs: &[PathBuf],
) -> std::io::Result<()> {
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
            Status::Connected | Status::Cached => style::GOOD,
            Status::Error => style::BAD,
            Status::Disabled => style::DIM,
            Status::NeedsLogin => style::WARN,
        };
        let dash = || "-".to_string();
        let connected = r.has_tools();
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
    let mut out = crate::output::stdout();
    write!(out, "{}", table.render())?;
    for r in reports {
        for w in &r.warnings {
            let st = style::WARN;
            writeln!(out, "{st}warning:{st:#} {}: {w}", r.name)?;
        }
        if let Some(note) = r.repairs().note() {
            let st = style::WARN;
            writeln!(out, "{st}note:{st:#} {}: {note}", r.name)?;
        }
        if let Some(problem) = &r.error {
            let (bad, head) = (style::BAD, style::HEAD);
            writeln!(out, "\n{bad}{}:{bad:#} {problem}", r.name)?;
            let help = match r.status {
                Status::NeedsLogin => r.login_command(configs),
                _ => problem.help(),
            };
            writeln!(out, "  {head}help:{head:#} {help}")?;
        }
    }
    let tools: usize = reports.iter().map(|r| r.tools.len()).sum();
    let tokens: usize = reports.iter().filter_map(ServerReport::tokens).sum();
    let dim = style::DIM;
    writeln!(
        out,
        "\n{dim}{}: {} · {} · {}{dim:#}",
        output::counted(reports.len(), "server"),
        status_counts(reports),
        output::counted(tools, "tool"),
        output::counted(tokens, "token")
    )
}

/// `2 connected, 1 cached, 1 error`: each status some server has, in a fixed order.
fn status_counts(reports: &[ServerReport]) -> String {
    let statuses = [
        Status::Connected,
        Status::Cached,
        Status::Error,
        Status::NeedsLogin,
        Status::Disabled,
    ];
    let counts: Vec<String> = statuses
        .iter()
        .map(|&s| (s, reports.iter().filter(|r| r.status == s).count()))
        .filter(|&(_, n)| n > 0)
        .map(|(s, n)| format!("{n} {}", s.as_str()))
        .collect();
    if counts.is_empty() {
        "none checked".to_string()
    } else {
        counts.join(", ")
    }
}

fn print_tools(r: &ServerReport, exposed: &Exposed<'_>, all: bool) -> std::io::Result<()> {
    use std::io::Write;
    let mut table = Table::new(vec!["TOOL", "REQUIRED", "TOKENS", "DESCRIPTION"], &[2]);
    // A `*` marks an overridden description; `!` a definition changed since approved;
    // `(denied)` a tool shown only with --all.
    let label = |v: &ToolView<'_>| {
        let star = if v.is_overridden { "*" } else { "" };
        let bang = if exposed.is_changed(v) { "!" } else { "" };
        let denied = if v.is_allowed { "" } else { " (denied)" };
        format!("{}{star}{bang}{denied}", v.name)
    };
    let name_width = exposed
        .shown(all)
        .map(|v| label(v).len())
        .max()
        .unwrap_or(4);
    let req_width = exposed
        .shown(all)
        .map(|v| tool::required_params(v.def).join(", ").len())
        .max()
        .unwrap_or(8);
    let room = output::terminal_width()
        .saturating_sub(name_width + req_width.max(8) + 14)
        .max(20);
    for v in exposed.shown(all) {
        table.styled_row(vec![
            (
                label(v),
                if v.is_allowed {
                    style::HEAD
                } else {
                    style::DIM
                },
            ),
            (tool::required_params(v.def).join(", "), Default::default()),
            (
                exposed
                    .costs
                    .get(v.index)
                    .copied()
                    .flatten()
                    .map(thousands)
                    .unwrap_or_default(),
                Default::default(),
            ),
            (output::clip(&v.description, room), style::DIM),
        ]);
    }
    let mut out = crate::output::stdout();
    write!(out, "{}", table.render())?;
    print_tool_notes(&mut out, r, exposed, all)
}

/// What follows a server's tool table: its warnings, the overrides' marks, stale tools, and
/// the count line.
fn print_tool_notes(
    out: &mut impl std::io::Write,
    r: &ServerReport,
    exposed: &Exposed<'_>,
    all: bool,
) -> std::io::Result<()> {
    for w in &r.warnings {
        let st = style::WARN;
        writeln!(out, "{st}warning:{st:#} {w}")?;
    }
    if let Some(note) = r.repairs().note() {
        let st = style::WARN;
        writeln!(out, "{st}note:{st:#} {note} (`--json` lists each tool's)")?;
    }
    let dim = style::DIM;
    if exposed.shown(all).any(|v| v.is_overridden) {
        writeln!(
            out,
            "{dim}* description overridden in {}{dim:#}",
            exposed.file
        )?;
    }
    print_changed_tools(out, r, exposed)?;
    if !exposed.entry.max_output_tokens.is_empty() {
        let budgets: Vec<String> = (exposed.entry.max_output_tokens.iter())
            .map(|(tool, &tokens)| format!("{tool} {}", budget_words(tokens)))
            .collect();
        let file = &exposed.file;
        writeln!(
            out,
            "{dim}output budgets in {file}: {}{dim:#}",
            budgets.join(", ")
        )?;
    }
    if !exposed.stale.is_empty() {
        let (names, server) = (exposed.stale.join(", "), &r.name);
        writeln!(out, "{dim}stale (no longer offered; choices kept): {names} — `mcp-launch tool reset {server} NAME` forgets one{dim:#}")?;
    }
    if exposed.is_disabled {
        let st = style::WARN;
        writeln!(
            out,
            "{st}note:{st:#} {} is disabled by {} (`mcp-launch server enable {}`)",
            r.name, exposed.file, r.name
        )?;
    }
    let hidden = exposed.views.len() - exposed.shown(false).count();
    let hidden = match (hidden, all) {
        (0, _) => String::new(),
        (n, false) => format!(" ({n} hidden by overrides; --all shows them)"),
        (n, true) => format!(" ({n} denied)"),
    };
    writeln!(
        out,
        "\n{dim}{}: {} tools{hidden} · {} tokens{dim:#}",
        r.name,
        exposed.shown(false).count(),
        exposed.total.map(thousands).unwrap_or_else(|| "-".into())
    )
}

/// The note under a tool table when definitions changed since they were approved.
fn print_changed_tools(
    out: &mut impl std::io::Write,
    r: &ServerReport,
    exposed: &Exposed<'_>,
) -> std::io::Result<()> {
    let changed: Vec<&str> = (exposed.views.iter())
        .filter(|view| exposed.is_changed(view))
        .map(|view| view.name)
        .collect();
    let Some(first) = changed.first() else {
        return Ok(());
    };
    let (st, server) = (style::WARN, &r.name);
    let served = if exposed.is_strict {
        "withheld by `serve` until approved (pin: strict)"
    } else {
        "served as changed (`\"pin\": \"strict\"` in the overrides withholds it)"
    };
    writeln!(
        out,
        "{st}! definition changed since approved:{st:#} {} — {served}; review with \
         `mcp-launch inspect {server} {first}`, accept with `mcp-launch tool approve {server} \
         {first}` (--all for every tool)",
        changed.join(", ")
    )
}
