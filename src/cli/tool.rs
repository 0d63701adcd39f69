//! `mcp-launch tool allow|deny|reset SERVER TOOL…`,
//! `mcp-launch tool describe SERVER TOOL (--text TEXT | --trim [N] | --clear)` and
//! `mcp-launch tool budget SERVER TOOL (N | --clear)` and
//! `mcp-launch tool approve SERVER (TOOL… | --all)`.
//!
//! Tool names are checked against what the server offers (from the tool index when fresh,
//! else live); an unknown name is a usage error with suggestions, except that `reset` and
//! `budget --clear` also take stale names — tools the overrides still mention that the server
//! no longer offers — and `budget` takes `*`, the server's default.

use std::io::Write;

use clap::{ArgGroup, Args, Subcommand};

use crate::catalog::{
    tool, Edit, Overrides, ServerReport, Status, ALL_TOOLS, CHATGPT_DESCRIPTION_LIMIT,
};

use super::server::{finish, load_overrides, update_overrides, Target};
use super::{find_tool, report_through_daemon, CliError, GlobalArgs, Outcome};

/// Allow, deny, reset, describe or budget a server's tools in this project's overrides.
///
/// Choices are saved per stack and server in ./.mcp-launch/overrides.json and every listing
/// applies them: denied tools are hidden (`list SERVER --all` shows them), overridden
/// descriptions are marked with `*`. Tools a server adds later are allowed unless it has an
/// allow list (see `tool allow --only`); choices about tools it drops are kept, as stale.
///
/// Example: mcp-launch tool deny github delete_repository fork_repository
#[derive(Debug, Args)]
pub struct ToolArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: ToolAction,
}

/// The `tool` subcommands.
#[derive(Debug, Subcommand)]
pub enum ToolAction {
    /// Allow TOOLs: off the deny list, and onto the allow list when the server has one.
    ///
    /// With --only, TOOLs become the server's whole allow list: every other tool, including
    /// tools the server adds later, is hidden.
    ///
    /// Example: mcp-launch tool allow github search_code create_issue --only
    Allow(AllowArgs),
    /// Deny TOOLs: hidden from every listing (and off the allow list).
    ///
    /// Example: mcp-launch tool deny github delete_repository
    Deny(ToolNames),
    /// Forget every choice about TOOLs (allow/deny entries, description override).
    ///
    /// Also takes stale names: tools the overrides mention that the server no longer offers.
    ///
    /// Example: mcp-launch tool reset github delete_repository
    Reset(ToolNames),
    /// Override a tool's description: exactly one of --text, --trim, --clear.
    ///
    /// --trim stores the current description (override or the server's) cut at a word
    /// boundary, never inside a character; ChatGPT Actions cut descriptions at 300.
    ///
    /// Example: mcp-launch tool describe github search_code --trim 200
    Describe(DescribeArgs),
    /// Set a tool's output budget in o200k tokens (`*`: the server's default), or --clear it.
    ///
    /// Results over the budget are cut at a clean boundary by `serve` and `call`, the rest
    /// kept behind a handle (`mcp-launch output`); 0 means never cut. Wins over
    /// --max-output-tokens; --clear gives the tool back to it (or to the server's `*`).
    ///
    /// Example: mcp-launch tool budget github search_code 2000
    Budget(BudgetArgs),
    /// Approve the current definitions of TOOLs (or --all of the server's tools).
    ///
    /// A tool whose definition (name, description, schemas, annotations) changed since it
    /// was first seen or approved is flagged by `list`, the TUI and `serve`, and withheld by
    /// `serve` when the overrides pin the server strictly (`"pin": "strict"`). Read it first
    /// (`mcp-launch inspect SERVER TOOL`): approving accepts what the server sends now.
    ///
    /// Example: mcp-launch tool approve github search_code
    Approve(ApproveArgs),
}

/// `tool approve`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("which").required(true).args(["tools", "all"])))]
pub struct ApproveArgs {
    /// The server (name, or stack/name).
    #[arg(value_name = "SERVER")]
    pub server: String,
    /// The tools to approve.
    #[arg(value_name = "TOOL")]
    pub tools: Vec<String>,
    /// Approve every tool the server offers now.
    #[arg(long)]
    pub all: bool,
}

/// A server and some of its tools.
#[derive(Debug, Args)]
pub struct ToolNames {
    /// The server (name, or stack/name when two stacks share it).
    #[arg(value_name = "SERVER")]
    pub server: String,
    /// One or more of its tools.
    #[arg(value_name = "TOOL", required = true)]
    pub tools: Vec<String>,
}

/// `tool allow`.
#[derive(Debug, Args)]
pub struct AllowArgs {
    /// The server and tools.
    #[command(flatten)]
    pub names: ToolNames,
    /// Make TOOLs the server's whole allow list: every other tool, present or future, is
    /// hidden.
    #[arg(long)]
    pub only: bool,
}

/// `tool describe`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("how").required(true).args(["text", "trim", "clear"])))]
pub struct DescribeArgs {
    /// The server (name, or stack/name).
    #[arg(value_name = "SERVER")]
    pub server: String,
    /// The tool.
    #[arg(value_name = "TOOL")]
    pub tool: String,
    /// Use this description (ChatGPT Actions cut descriptions at 300 characters).
    #[arg(long, value_name = "TEXT")]
    pub text: Option<String>,
    /// Store the current description cut to N characters at a word boundary (default 300).
    #[arg(
        long,
        value_name = "N",
        num_args = 0..=1,
        default_missing_value = "300",
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub trim: Option<u32>,
    /// Remove the override: the server's own description is back.
    #[arg(long)]
    pub clear: bool,
}

/// `tool budget`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("how").required(true).args(["tokens", "clear"])))]
pub struct BudgetArgs {
    /// The server (name, or stack/name).
    #[arg(value_name = "SERVER")]
    pub server: String,
    /// The tool, or `*` for the server's tools without a budget of their own.
    #[arg(value_name = "TOOL")]
    pub tool: String,
    /// The budget in o200k tokens (`2000`, `2k`; 0: never cut).
    #[arg(value_name = "N", value_parser = super::serve::parse_budget)]
    pub tokens: Option<crate::outputs::Budget>,
    /// Remove the budget: the run's --max-output-tokens (or the server's `*`) applies.
    #[arg(long)]
    pub clear: bool,
}

pub(super) async fn run(args: ToolArgs, global: &GlobalArgs) -> Result<Outcome, CliError> {
    // The file first: a malformed one fails before any server starts.
    let overrides = load_overrides()?;
    let server = match &args.action {
        ToolAction::Allow(a) => &a.names.server,
        ToolAction::Deny(n) | ToolAction::Reset(n) => &n.server,
        ToolAction::Describe(d) => &d.server,
        ToolAction::Budget(b) => &b.server,
        ToolAction::Approve(a) => &a.server,
    };
    let report =
        report_through_daemon(global, server, super::daemon::DaemonUse::Off, false).await?;
    let (stack, server) = (report.stack.clone(), report.config_name.clone());
    let mut warnings = Vec::new();
    if report.status == Status::Disabled {
        warnings.push(format!(
            "{} is disabled in its config, so its tool names could not be checked",
            report.name
        ));
    }
    let edit = match args.action {
        ToolAction::Allow(a) => Edit::Allow {
            tools: checked(&report, &overrides, &a.names.tools, false)?,
            only: a.only,
            stack: stack.clone(),
            server: server.clone(),
        },
        ToolAction::Deny(n) => Edit::Deny {
            tools: checked(&report, &overrides, &n.tools, false)?,
            stack: stack.clone(),
            server: server.clone(),
        },
        ToolAction::Reset(n) => Edit::Reset {
            tools: checked(&report, &overrides, &n.tools, true)?,
            stack: stack.clone(),
            server: server.clone(),
        },
        ToolAction::Describe(d) => {
            let tools = checked(&report, &overrides, std::slice::from_ref(&d.tool), false)?;
            describe(&report, tools[0].clone(), &d, &mut warnings)
        }
        ToolAction::Budget(b) => {
            let tool = if b.tool == ALL_TOOLS {
                b.tool
            } else {
                let names = std::slice::from_ref(&b.tool);
                checked(&report, &overrides, names, b.clear)?.remove(0)
            };
            Edit::Budget {
                stack: stack.clone(),
                server: server.clone(),
                tool,
                tokens: b.tokens.map(|b| b.max_tokens),
            }
        }
        ToolAction::Approve(a) => return approve(&a, &report, &overrides, global).await,
    };
    // Applied to the file as it is now: the server check above may have taken a while.
    let updated = update_overrides(&[edit])?;
    let target = Target {
        shown: &report.name,
        stack: &stack,
        key: &server,
    };
    finish(global, &updated, &target, &warnings).await
}

/// `tool approve`: records the digests of the definitions the server offers now (`report`:
/// from the tool index when fresh, which is what `list` and `inspect` showed, else live), and
/// has the stacks `up` runs here republish their specs and every running gateway rebuild its
/// catalog before it returns (a withheld tool is served again at once).
async fn approve(
    args: &ApproveArgs,
    report: &ServerReport,
    overrides: &Overrides,
    global: &GlobalArgs,
) -> Result<Outcome, CliError> {
    if report.status == Status::Disabled {
        return Err(CliError::Usage {
            message: format!("{} is disabled, so its tools cannot be seen", report.name),
            help: format!(
                "enable it (`mcp-launch server enable {}`), then approve",
                report.name
            ),
        });
    }
    let names = match args.all {
        true => report
            .tools
            .iter()
            .map(|t| tool::name(t).to_string())
            .collect(),
        false => checked(report, overrides, &args.tools, false)?,
    };
    let definitions: Vec<&serde_json::Value> = (report.tools.iter())
        .filter(|t| names.iter().any(|n| n == tool::name(t)))
        .collect();
    let (stack, key) = (&report.stack, &report.config_name);
    let accepted = crate::catalog::approvals::approve(stack, key, &definitions)?;
    let already: Vec<&String> = names.iter().filter(|n| !accepted.contains(n)).collect();
    let live = match accepted.is_empty() {
        true => super::server::Live::default(),
        false => super::server::apply_to_running_stacks().await,
    };
    if global.json {
        crate::output::print_json(&serde_json::json!({
            "success": true,
            "server": report.name,
            "stack": stack,
            "approved": accepted,
            "unchanged": already,
            "file": crate::catalog::Approvals::default_path().display().to_string(),
            "appliedTo": live.applied,
            "gateways": live.gateways,
        }))?;
        return Ok(Outcome::Success);
    }
    let mut out = anstream::stdout().lock();
    for name in &accepted {
        writeln!(
            out,
            "{} {name}: approved (its current definition)",
            report.name
        )?;
    }
    for name in already {
        writeln!(out, "{} {name}: already approved", report.name)?;
    }
    for applied in live.lines() {
        writeln!(out, "{applied}")?;
    }
    Ok(Outcome::Success)
}

/// `names` without repeats, each offered by the server (or, when `stale_ok`, mentioned by the
/// overrides); else the first unknown name's error, with suggestions.
fn checked(
    report: &ServerReport,
    overrides: &Overrides,
    names: &[String],
    stale_ok: bool,
) -> Result<Vec<String>, CliError> {
    let key = report.config_name.as_str();
    let stale = overrides.stale_names(&report.stack, key, &report.tools);
    let mut out: Vec<String> = Vec::with_capacity(names.len());
    for name in names {
        let known = report.status == Status::Disabled
            || (stale_ok && stale.contains(name))
            || find_tool(&report.name, &report.tools, name).is_ok();
        if !known {
            // The error, with suggestions among the server's tools.
            find_tool(&report.name, &report.tools, name)?;
        }
        if !out.contains(name) {
            out.push(name.clone());
        }
    }
    Ok(out)
}

/// The edit `tool describe` makes: a new text, the current one trimmed, or no override.
fn describe(
    report: &ServerReport,
    tool: String,
    args: &DescribeArgs,
    warnings: &mut Vec<String>,
) -> Edit {
    let (stack, server) = (report.stack.clone(), report.config_name.clone());
    if let Some(max) = args.trim {
        let original = report
            .tools
            .iter()
            .find(|t| tool::name(t) == tool)
            .map(tool::description)
            .unwrap_or("")
            .to_string();
        return Edit::Trim {
            stack,
            server,
            tool,
            original,
            max: max as usize,
        };
    }
    if let Some(text) = &args.text {
        let chars = text.chars().count();
        if chars > CHATGPT_DESCRIPTION_LIMIT {
            warnings.push(format!(
                "the description has {chars} characters; ChatGPT Actions cut descriptions at \
                 {CHATGPT_DESCRIPTION_LIMIT} (stored anyway; --trim {CHATGPT_DESCRIPTION_LIMIT} \
                 cuts it at a word boundary)"
            ));
        }
    }
    Edit::Describe {
        stack,
        server,
        tool,
        text: args.text.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Cli, Command};
    use super::*;
    use crate::outputs::Budget;
    use clap::Parser;

    fn parse(args: &[&str]) -> Result<ToolAction, clap::Error> {
        let cli = Cli::try_parse_from(["mcp-launch", "tool"].iter().chain(args))?;
        match cli.command {
            Command::Tool(a) => Ok(a.action),
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn allow_deny_reset_take_a_server_and_tools() {
        let Ok(ToolAction::Deny(n)) = parse(&["deny", "gh", "a", "b"]) else {
            panic!()
        };
        assert_eq!((n.server.as_str(), n.tools.len()), ("gh", 2));
        assert!(parse(&["deny", "gh"]).is_err(), "at least one TOOL");
        assert!(matches!(
            parse(&["reset", "gh", "old"]),
            Ok(ToolAction::Reset(_))
        ));
        let Ok(ToolAction::Allow(a)) = parse(&["allow", "gh", "x", "--only"]) else {
            panic!()
        };
        assert!(a.only && a.names.tools == ["x"]);
    }

    #[test]
    fn describe_needs_exactly_one_of_text_trim_clear() {
        let d = |args: &[&str]| match parse(&[&["describe", "gh", "t"], args].concat()) {
            Ok(ToolAction::Describe(d)) => Ok(d),
            Ok(other) => panic!("{other:?}"),
            Err(e) => Err(e),
        };
        assert_eq!(d(&["--text", "Hi."]).unwrap().text.as_deref(), Some("Hi."));
        assert_eq!(d(&["--trim"]).unwrap().trim, Some(300));
        assert_eq!(d(&["--trim", "120"]).unwrap().trim, Some(120));
        assert!(d(&["--clear"]).unwrap().clear);
        assert!(d(&[]).is_err(), "one is required");
        assert!(d(&["--clear", "--trim"]).is_err(), "only one");
        assert!(d(&["--text", "a", "--clear"]).is_err(), "only one");
        assert!(d(&["--trim", "0"]).is_err(), "N >= 1");
        assert!(d(&["--trim", "many"]).is_err());
    }

    #[test]
    fn budget_needs_exactly_one_of_n_and_clear() {
        let b = |args: &[&str]| match parse(&[&["budget", "gh"], args].concat()) {
            Ok(ToolAction::Budget(b)) => Ok(b),
            Ok(other) => panic!("{other:?}"),
            Err(e) => Err(e),
        };
        let set = b(&["search", "2000"]).unwrap();
        assert_eq!(set.tool, "search");
        assert_eq!(set.tokens, Some(Budget::new(2000)));
        assert_eq!(
            b(&["search", "2k"]).unwrap().tokens,
            Some(Budget::new(2000))
        );
        assert_eq!(
            b(&["*", "0"]).unwrap().tokens,
            Some(Budget::new(0)),
            "0: never cut"
        );
        assert!(b(&["search", "--clear"]).unwrap().clear);
        assert!(b(&["search"]).is_err(), "one is required");
        assert!(b(&["search", "10", "--clear"]).is_err(), "only one");
        assert!(b(&["search", "lots"]).is_err(), "N is a number");
        assert!(b(&["search", "-5"]).is_err(), "N is not negative");
        assert!(b(&[]).is_err(), "TOOL is required");
    }
}
