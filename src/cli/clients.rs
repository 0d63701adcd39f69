//! `mcp-launch clients [move|restore]`: which AI tools on this machine reach the gateway,
//! which still run servers of their own, and moving those behind it (and back).

use std::io::Write;

use clap::{Args, Subcommand};
use serde_json::{json, Value};

use crate::gateway::clients::{
    self, Client, ClientPaths, Found, FoundScope, Moved, Restored, Target,
};
use crate::output;

use super::{CliError, GlobalArgs, Outcome};

/// Which MCP clients here use the gateway; move their own servers behind it.
///
/// Lists every client mcp-launch knows (Claude Code, Claude Desktop, Cursor, VS Code, Codex,
/// OpenCode, Gemini CLI, Windsurf, Copilot CLI) with its user config file, whether it points
/// at `mcp-launch serve`, and the servers it still starts itself. `move` puts those servers
/// into your mcp-launch config (`~/.claude/mcp.json`, or --config), their secrets into
/// `~/.claude/.env`, and points the client at the gateway; `restore` undoes it.
///
/// Example: mcp-launch clients move --all --dry-run
#[derive(Debug, Args)]
pub struct ClientsArgs {
    /// What to do; without one, list the clients.
    #[command(subcommand)]
    pub action: Option<ClientsAction>,
}

/// `clients move` / `clients restore`.
#[derive(Debug, Subcommand)]
pub enum ClientsAction {
    /// Move clients' own servers into your mcp-launch config and point them at the gateway.
    Move {
        /// The clients (names as `clients` lists them).
        #[arg(value_name = "CLIENT", required_unless_present = "all")]
        clients: Vec<String>,
        /// Every client with a config file.
        #[arg(long, conflicts_with = "clients")]
        all: bool,
        /// Say what would move; write nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Put moved clients back as they were (all moved ones without names).
    Restore {
        /// The clients (names as `clients` lists them).
        #[arg(value_name = "CLIENT")]
        clients: Vec<String>,
    },
}

/// Runs `clients`.
pub async fn run(args: ClientsArgs, global: &GlobalArgs) -> Result<Outcome, CliError> {
    let home = dirs::home_dir().ok_or_else(|| CliError::Usage {
        message: "no home directory is known (HOME is unset)".into(),
        help: "set HOME: client configs live under it".into(),
    })?;
    let paths = ClientPaths::with_env(home, std::env::current_dir()?, |v| std::env::var_os(v));
    let target = target(&paths, global)?;
    match args.action {
        None => list(&paths, global),
        Some(ClientsAction::Move {
            clients,
            all,
            dry_run,
        }) => {
            let chosen = if all {
                Client::ALL.to_vec()
            } else {
                names(&clients)?
            };
            let program = std::env::current_exe()?;
            let moved = clients::move_clients(&chosen, &paths, &target, &program, dry_run);
            print_moves(&moved, &target, dry_run, global)
        }
        Some(ClientsAction::Restore { clients }) => {
            let chosen = if clients.is_empty() {
                Client::ALL.to_vec()
            } else {
                names(&clients)?
            };
            let restored = clients::restore(&chosen, &paths, &target).map_err(boxed)?;
            print_restores(&restored, global)
        }
    }
}

/// Our config (`--config`, else `~/.claude/mcp.json`), its `.env` and the record of moves.
fn target(paths: &ClientPaths, global: &GlobalArgs) -> Result<Target, CliError> {
    let config = match global.configs.as_slice() {
        [] => paths.home.join(".claude/mcp.json"),
        [one] => paths.cwd.join(one),
        _ => {
            return Err(CliError::Usage {
                message: "clients move takes one config to move servers into".into(),
                help: "pass --config once (or none: ~/.claude/mcp.json)".into(),
            })
        }
    };
    Ok(Target {
        config,
        env_file: paths.home.join(".claude/.env"),
        record: crate::files::state_dir().join("clients-moved.json"),
    })
}

fn names(given: &[String]) -> Result<Vec<Client>, CliError> {
    given
        .iter()
        .map(|n| n.parse::<Client>().map_err(boxed))
        .collect()
}

fn boxed(error: clients::ClientError) -> CliError {
    CliError::ClientConfig(Box::new(error))
}

fn list(paths: &ClientPaths, global: &GlobalArgs) -> Result<Outcome, CliError> {
    let (found, in_project): (Vec<Found>, Vec<Vec<Found>>) = Client::ALL
        .iter()
        .map(|&c| clients::find_with_project(c, paths))
        .unzip();
    let in_project: Vec<Found> = in_project.into_iter().flatten().collect();
    let profiles = clients::find_vscode_profiles(paths);
    if global.json {
        let items: Vec<Value> = found.iter().map(found_json).collect();
        let project: Vec<Value> = in_project.iter().map(found_json).collect();
        let profiles: Vec<Value> = profiles.iter().map(found_json).collect();
        let answer = json!({ "clients": items, "vscodeProfiles": profiles,
                             "project": {"dir": paths.cwd, "files": project} });
        output::print_answer(true, answer)?;
        return Ok(Outcome::Success);
    }
    let mut out = output::stdout();
    for f in &found {
        print_found(&mut out, f)?;
    }
    if !profiles.is_empty() {
        writeln!(
            out,
            "\nVS Code profiles: listed, not moved (`clients move vscode` edits the default \
             profile; paste `mcp-launch serve --print-config vscode --scope user` into a profile's file)"
        )?;
        for f in &profiles {
            print_found(&mut out, f)?;
        }
    }
    if !in_project.is_empty() {
        writeln!(
            out,
            "\nfor this directory only ({}): listed, not moved by `clients move` \
             (a project file is shared with everyone who checks it out; there, run \
             `mcp-launch serve --print-config CLIENT --scope project --write`)",
            paths.cwd.display()
        )?;
        for f in &in_project {
            print_found(&mut out, f)?;
        }
    }
    Ok(Outcome::Success)
}

fn print_found(out: &mut impl Write, f: &Found) -> std::io::Result<()> {
    let state = match (&f.error, f.exists, f.gateway) {
        (Some(e), _, _) => format!("unreadable: {e}"),
        (None, false, _) => "no config file".into(),
        (None, true, true) => "points at the gateway".into(),
        (None, true, false) => "does not use the gateway".into(),
    };
    let scope = match (f.scope, &f.profile) {
        (FoundScope::User, _) => String::new(),
        (FoundScope::Profile, Some(name)) => format!(" (profile {name})"),
        (scope, _) => format!(" ({})", scope.name()),
    };
    writeln!(
        out,
        "{:<15} {state}{scope}\n  {}",
        f.client.name(),
        f.file.display()
    )?;
    for s in &f.servers {
        let off = if s.disabled { " (disabled)" } else { "" };
        writeln!(
            out,
            "  runs itself: {} [{}] {}{off}",
            s.name, s.transport, s.target
        )?;
    }
    if !f.set_aside.is_empty() {
        writeln!(out, "  set aside: {}", f.set_aside.join(", "))?;
    }
    Ok(())
}

fn found_json(f: &Found) -> Value {
    let servers: Vec<Value> = f
        .servers
        .iter()
        .map(|s| {
            json!({"name": s.name, "transport": s.transport, "target": s.target,
                   "disabled": s.disabled, "movable": s.entry.is_ok(),
                   "why": s.entry.as_ref().err()})
        })
        .collect();
    json!({
        "client": f.client.name(),
        "scope": f.scope.name(),
        "profile": f.profile,
        "file": f.file,
        "found": f.exists,
        "pointsAtGateway": f.gateway,
        "servers": servers,
        "setAside": f.set_aside,
        "error": f.error.as_ref().map(error_json),
    })
}

fn error_json(e: &clients::ClientError) -> Value {
    json!({"type": e.kind(), "message": e.to_string(), "help": e.help()})
}

fn print_moves(
    moved: &[Moved],
    target: &Target,
    dry_run: bool,
    global: &GlobalArgs,
) -> Result<Outcome, CliError> {
    let failed = moved.iter().any(|m| m.error.is_some());
    if global.json {
        let items: Vec<Value> = moved.iter().map(move_json).collect();
        let answer = json!({"config": target.config, "envFile": target.env_file,
                            "dryRun": dry_run, "clients": items});
        output::print_answer(!failed, answer)?;
    } else {
        let mut out = output::stdout();
        let verb = if dry_run { "would move" } else { "moved" };
        for m in moved {
            write!(out, "{}: ", m.client)?;
            if let Some(e) = &m.error {
                writeln!(out, "not moved: {e}\n  {}", e.help())?;
                continue;
            }
            if let Some(why) = &m.skipped {
                writeln!(out, "skipped ({why})")?;
                continue;
            }
            writeln!(out, "{verb} {}", list_or_none(&m.moved))?;
            let lines = [
                ("already in the config", m.shared.join(", ")),
                (
                    "left in the client (the config has another server of that name)",
                    m.collided.join(", "),
                ),
                ("secrets into the .env file", m.secrets.join(", ")),
            ];
            for (label, names) in lines.iter().filter(|(_, n)| !n.is_empty()) {
                writeln!(out, "  {label}: {names}")?;
            }
            for (name, why) in &m.unmovable {
                writeln!(out, "  left in the client: {name}: {why}")?;
            }
            if let Some(report) = &m.write {
                // The report's own undo names `serve --unwrite`; `clients restore` is ours.
                for line in report
                    .to_string()
                    .lines()
                    .filter(|l| !l.starts_with("undo:"))
                {
                    writeln!(out, "  {line}")?;
                }
            }
        }
        if !dry_run {
            writeln!(out, "undo: mcp-launch clients restore")?;
        }
    }
    Ok(if failed {
        Outcome::Failed
    } else {
        Outcome::Success
    })
}

fn list_or_none(names: &[String]) -> String {
    if names.is_empty() {
        "no server".into()
    } else {
        names.join(", ")
    }
}

fn move_json(m: &Moved) -> Value {
    let unmovable: Vec<Value> = m
        .unmovable
        .iter()
        .map(|(n, w)| json!({"name": n, "why": w}))
        .collect();
    json!({
        "client": m.client, "file": m.file, "moved": m.moved, "shared": m.shared,
        "collided": m.collided, "unmovable": unmovable, "secrets": m.secrets,
        "skipped": m.skipped, "error": m.error.as_ref().map(error_json),
        "backup": m.write.as_ref().and_then(|w| w.backup.clone()),
        "changed": m.write.as_ref().is_some_and(|w| w.changed),
    })
}

fn print_restores(restored: &[Restored], global: &GlobalArgs) -> Result<Outcome, CliError> {
    let done: Vec<&Restored> = restored
        .iter()
        .filter(|r| r.note.as_deref() != Some(NOT_MOVED))
        .collect();
    if global.json {
        let items: Vec<Value> = done
            .iter()
            .map(|r| {
                json!({"client": r.client, "file": r.file, "exact": r.exact,
                       "putBack": r.put_back, "removed": r.removed, "kept": r.kept,
                       "note": r.note})
            })
            .collect();
        output::print_answer(true, json!({ "clients": items }))?;
        return Ok(Outcome::Success);
    }
    let mut out = output::stdout();
    if done.is_empty() {
        writeln!(out, "nothing to restore: no client was moved")?;
    }
    for r in done {
        let how = if r.exact {
            "byte for byte"
        } else {
            "key by key"
        };
        writeln!(out, "{}: restored {} ({how})", r.client, r.file.display())?;
        if !r.put_back.is_empty() {
            writeln!(out, "  put back: {}", r.put_back.join(", "))?;
        }
        if !r.removed.is_empty() {
            writeln!(
                out,
                "  taken out of the mcp-launch config: {}",
                r.removed.join(", ")
            )?;
        }
        if !r.kept.is_empty() {
            writeln!(
                out,
                "  left in the mcp-launch config: {}",
                r.kept.join(", ")
            )?;
        }
        if let Some(note) = &r.note {
            writeln!(out, "  {note}")?;
        }
    }
    Ok(Outcome::Success)
}

/// The note of a client that has nothing to restore.
const NOT_MOVED: &str = clients::NOT_MOVED;

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::ClientsAction;
    use crate::cli::{Cli, Command};

    fn action(args: &[&str]) -> Result<Option<ClientsAction>, clap::Error> {
        let argv = ["mcp-launch", "clients"].iter().chain(args).copied();
        match Cli::try_parse_from(argv)?.command {
            Command::Clients(c) => Ok(c.action),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn move_takes_names_or_all_and_restore_takes_names_or_none() {
        assert!(action(&[]).unwrap().is_none());
        match action(&["move", "--all", "--dry-run"]).unwrap() {
            Some(ClientsAction::Move {
                all: true,
                dry_run: true,
                clients,
            }) => assert!(clients.is_empty()),
            other => panic!("{other:?}"),
        }
        match action(&["move", "cursor", "windsurf"]).unwrap() {
            Some(ClientsAction::Move { clients, all, .. }) => {
                assert_eq!(clients, ["cursor", "windsurf"]);
                assert!(!all);
            }
            other => panic!("{other:?}"),
        }
        assert!(action(&["move"]).is_err(), "move needs names or --all");
        assert!(action(&["move", "--all", "cursor"]).is_err());
        match action(&["restore"]).unwrap() {
            Some(ClientsAction::Restore { clients }) => assert!(clients.is_empty()),
            other => panic!("{other:?}"),
        }
    }
}
