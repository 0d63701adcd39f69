//! `mcp-launch server enable|disable|reset SERVER`, and the output every overrides command
//! shares (one line per change, or `{"success": true, "server", "stack", "changed", …}`).

use std::io::Write;
use std::path::Path;

use clap::{Args, Subcommand};
use serde_json::{json, Value};

use crate::catalog::{Action, Change, Edit, Overrides, Updated};
use crate::output::{self, style};

use super::{find_server, load_config, CliError, GlobalArgs, Outcome};

/// Enable, disable or reset a server in this project's overrides.
///
/// Choices are saved per stack and server in ./.mcp-launch/overrides.json and win over the
/// config's "disabled" either way. A disabled server shows as disabled in `list` and is never
/// started.
///
/// Example: mcp-launch server disable github
#[derive(Debug, Args)]
pub struct ServerArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: ServerAction,
}

/// The `server` subcommands.
#[derive(Debug, Subcommand)]
pub enum ServerAction {
    /// Enable SERVER, even when its config says "disabled": true.
    ///
    /// Example: mcp-launch server enable github
    Enable(ServerName),
    /// Disable SERVER: listings show it as disabled and nothing starts it.
    ///
    /// Example: mcp-launch server disable github
    Disable(ServerName),
    /// Forget every override of SERVER (disabled, allow/deny lists, descriptions).
    ///
    /// Example: mcp-launch server reset github
    Reset(ServerName),
}

/// The server a `server` subcommand acts on.
#[derive(Debug, Args)]
pub struct ServerName {
    /// The server (name, or stack/name when two stacks share it).
    #[arg(value_name = "SERVER")]
    pub server: String,
}

pub(super) async fn run(args: ServerArgs, global: &GlobalArgs) -> Result<Outcome, CliError> {
    let loaded = load_config(global)?;
    let (ServerAction::Enable(n) | ServerAction::Disable(n) | ServerAction::Reset(n)) =
        &args.action;
    let entry = find_server(&loaded, &n.server)?;
    let edit = match &args.action {
        ServerAction::Enable(_) => Edit::set_disabled(entry, false),
        ServerAction::Disable(_) => Edit::set_disabled(entry, true),
        ServerAction::Reset(_) => Edit::ClearServer {
            stack: entry.stack.clone(),
            server: entry.name.clone(),
        },
    };
    let updated = update_overrides(&[edit])?;
    let target = Target {
        shown: &entry.qualified,
        stack: &entry.stack,
        key: &entry.name,
    };
    finish(global, &updated, &target, &[]).await
}

/// The overrides of the project in the current directory.
pub(super) fn load_overrides() -> Result<Overrides, CliError> {
    Ok(Overrides::load(Path::new("."))?)
}

/// The configured servers, marked disabled where the project's overrides say so (the
/// project's choice wins over the config's, and a disabled server is not started), and the
/// overrides.
pub(super) fn entries_with_overrides(
    loaded: &crate::config::Loaded,
) -> Result<(Vec<crate::config::ServerEntry>, crate::catalog::Overrides), CliError> {
    let overrides = load_overrides()?;
    let mut entries: Vec<_> = loaded.servers().cloned().collect();
    for entry in &mut entries {
        entry.disabled = overrides.is_disabled(entry);
    }
    Ok((entries, overrides))
}

/// Applies `edits` to the overrides file as it is now (under its lock: choices another
/// process made since we loaded it are kept).
pub(super) fn update_overrides(edits: &[Edit]) -> Result<Updated, CliError> {
    Ok(Overrides::update(Path::new("."), edits)?)
}

/// The server an overrides command changed.
pub(super) struct Target<'a> {
    /// The name users type (qualified when two stacks share it).
    pub(super) shown: &'a str,
    /// Its stack.
    pub(super) stack: &'a str,
    /// Its plain config key (the overrides key).
    pub(super) key: &'a str,
}

/// Reports what `updated` changed (and `warnings`).
pub(super) async fn finish(
    global: &GlobalArgs,
    updated: &Updated,
    target: &Target<'_>,
    warnings: &[String],
) -> Result<Outcome, CliError> {
    let Updated {
        overrides,
        changes,
        saved,
    } = updated;
    let entry = overrides.for_server(target.stack, target.key);
    let live = match saved {
        true => apply_to_running_stacks().await,
        false => Live::default(),
    };
    if global.json {
        let (done, same): (Vec<&Change>, Vec<&Change>) = changes.iter().partition(|c| c.changed);
        let mut v = json!({
            "success": true,
            "server": target.shown,
            "stack": target.stack,
            "changed": done,
            "unchanged": same,
            "overrides": entry.map_or_else(|| json!({}), |e| json!(e)),
            "file": overrides.path().display().to_string(),
        });
        if !warnings.is_empty() {
            v["warnings"] = Value::from(warnings);
        }
        v["appliedTo"] = json!(live.applied);
        v["gateways"] = json!(live.gateways);
        if !live.failed.is_empty() {
            v["notApplied"] = json!(live.failed);
        }
        output::print_json(&v)?;
        return Ok(Outcome::Success);
    }
    for w in warnings {
        output::warn(w)?;
    }
    let mut out = crate::output::stdout();
    for c in changes {
        let subject = match &c.tool {
            Some(tool) => format!("{} {tool}", target.shown),
            None => target.shown.to_string(),
        };
        writeln!(out, "{subject}: {}", phrase(c))?;
        if let (Action::Described, Some(tool), true) = (c.action, &c.tool, c.changed) {
            let text = entry.and_then(|e| e.descriptions.get(tool));
            let dim = style::DIM;
            writeln!(out, "  {dim}{}{dim:#}", text.map_or("", String::as_str))?;
        }
        if let (Action::Budgeted, Some(tool)) = (c.action, &c.tool) {
            let tokens = entry.and_then(|e| e.max_output_tokens.get(tool));
            let dim = style::DIM;
            writeln!(
                out,
                "  {dim}{}{dim:#}",
                tokens.map_or(String::new(), |&t| budget_words(t))
            )?;
        }
    }
    let dim = style::DIM;
    if *saved {
        writeln!(out, "{dim}saved in {}{dim:#}", overrides.path().display())?;
        for applied in live.lines() {
            writeln!(out, "{dim}{applied}{dim:#}")?;
        }
        for failed in &live.failed {
            output::warn(&format!(
                "not applied to the running stack {}: {} (`mcp-launch openapi` applies it)",
                failed["stack"].as_str().unwrap_or_default(),
                failed["error"].as_str().unwrap_or_default()
            ))?;
        }
    } else {
        writeln!(out, "{dim}nothing to change{dim:#}")?;
    }
    Ok(Outcome::Success)
}

/// The stacks of this project a change was applied to, and those it could not reach.
#[derive(Default)]
pub(super) struct Live {
    pub(super) applied: Vec<String>,
    pub(super) failed: Vec<Value>,
    /// The running gateways (daemons, `serve`) that rebuilt their catalogs.
    pub(super) gateways: Vec<Value>,
}

impl Live {
    /// One line for each stack and gateway the change reached: `applied to the running …`.
    pub(super) fn lines(&self) -> Vec<String> {
        let stacks =
            (self.applied.iter()).map(|stack| format!("applied to the running stack {stack}"));
        let gateways = self.gateways.iter().map(|g| {
            let kind = g["kind"].as_str().unwrap_or("gateway");
            format!("applied to the running gateway ({kind}, pid {})", g["pid"])
        });
        stacks.chain(gateways).collect()
    }
}

/// Applies the saved overrides (or tool approvals) to what runs: the stacks `up` runs in this
/// project, as `mcp-launch openapi` does (each front rebuilds its spec and refuses what was
/// just denied, disabled or withheld), and every gateway of this user (each rebuilds its
/// catalog before this returns, so its next `tools/list` follows).
pub(super) async fn apply_to_running_stacks() -> Live {
    let mut live = Live {
        gateways: crate::gateway::daemon::client::reload_every_gateway().await,
        ..Live::default()
    };
    let Ok(cwd) = std::env::current_dir() else {
        return live;
    };
    let Ok(state) = crate::launch::state::StateFile::in_project(&cwd).read() else {
        return live;
    };
    let client = reqwest::Client::new();
    for stack in state.stacks.iter().filter(|s| s.supervisor.process_alive()) {
        match crate::launch::control::reload(stack, &client, None).await {
            Ok(_) => live.applied.push(stack.name.clone()),
            Err(e) => live
                .failed
                .push(json!({"stack": stack.name, "error": e.to_string()})),
        }
    }
    live
}

/// An output budget in words: `2,000 tokens`, or `0 (never cut)`.
pub(super) fn budget_words(tokens: usize) -> String {
    if tokens == 0 {
        "0 (never cut)".to_string()
    } else {
        format!("{} tokens", crate::output::thousands(tokens))
    }
}

/// How a change reads in one line.
fn phrase(c: &Change) -> &'static str {
    match (c.action, c.changed) {
        (Action::Enabled, true) => "enabled",
        (Action::Enabled, false) => "already enabled",
        (Action::Disabled, true) => "disabled (not started by list or launch)",
        (Action::Disabled, false) => "already disabled",
        (Action::Allowed, true) => "allowed",
        (Action::Allowed, false) => "already allowed",
        (Action::Denied, true) => "denied (hidden from listings)",
        (Action::Denied, false) => "already denied",
        (Action::Unlisted, _) => "left the allow list (hidden)",
        (Action::Reset, true) if c.tool.is_some() => "choices reset",
        (Action::Reset, true) => "every override forgotten",
        (Action::Reset, false) => "nothing to reset",
        (Action::Described, true) => "description overridden:",
        (Action::Described, false) => "description unchanged",
        (Action::DescriptionCleared, true) => "description override cleared",
        (Action::DescriptionCleared, false) => "no description override to clear",
        (Action::Budgeted, true) => "output budget set:",
        (Action::Budgeted, false) => "output budget unchanged:",
        (Action::BudgetCleared, true) => "output budget cleared (the run's budget applies)",
        (Action::BudgetCleared, false) => "no output budget to clear",
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Cli, Command};
    use super::*;
    use clap::Parser;

    fn parse(args: &[&str]) -> Result<ServerAction, clap::Error> {
        let cli = Cli::try_parse_from(["mcp-launch", "server"].iter().chain(args))?;
        match cli.command {
            Command::Server(a) => Ok(a.action),
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn each_action_takes_one_server() {
        assert!(
            matches!(parse(&["enable", "gh"]), Ok(ServerAction::Enable(n)) if n.server == "gh")
        );
        assert!(
            matches!(parse(&["disable", "mcp/gh"]), Ok(ServerAction::Disable(n)) if n.server == "mcp/gh")
        );
        assert!(matches!(
            parse(&["reset", "gh", "--json"]),
            Ok(ServerAction::Reset(_))
        ));
        assert!(parse(&["disable"]).is_err(), "SERVER is required");
        assert!(
            parse(&["disable", "a", "b"]).is_err(),
            "one server at a time"
        );
        assert!(parse(&["toggle", "a"]).is_err());
    }

    #[test]
    fn phrases_say_whether_anything_changed() {
        let c = |action, changed| Change {
            tool: Some("t".into()),
            action,
            changed,
        };
        assert_eq!(phrase(&c(Action::Denied, false)), "already denied");
        assert_eq!(phrase(&c(Action::Reset, true)), "choices reset");
        let server = Change {
            tool: None,
            action: Action::Reset,
            changed: true,
        };
        assert_eq!(phrase(&server), "every override forgotten");
    }
}
