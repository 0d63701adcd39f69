//! `mcp-launch down [STACK…] [--force]`.

use clap::Args;
use serde_json::json;

use crate::launch::control;
use crate::launch::state::{State, StateFile};
use crate::output::{self, style};

use super::{CliError, GlobalArgs, Outcome};

/// Stop the stacks recorded in ./.mcp-launch/state.json: their `mcp-launch up`, mcpo and
/// cloudflared process groups; check that they are gone; tidy the state file.
///
/// Works also when `up` was killed: the recorded process groups are ended directly. A pid is
/// only signalled while its start time matches the record, so a reused pid is never hit.
///
/// Example: mcp-launch down
#[derive(Debug, Args)]
pub struct DownArgs {
    /// Stop only these stacks (default: all).
    #[arg(value_name = "STACK")]
    pub stacks: Vec<String>,
    /// Also clear a state file that cannot be read.
    #[arg(long)]
    pub force: bool,
}

/// Runs `down`.
pub async fn run(args: DownArgs, global: &GlobalArgs) -> Result<Outcome, CliError> {
    let cwd = std::env::current_dir().map_err(CliError::Output)?;
    let file = StateFile::in_project(&cwd);
    let state = match file.read() {
        Ok(state) => state,
        Err(e) if args.force => {
            output::warn(&format!("{e}; clearing it (--force)"))?;
            file.reset_with(|s| *s = State::default())?;
            State::default()
        }
        Err(e) => return Err(e.into()),
    };
    for name in &args.stacks {
        if !state.stacks.iter().any(|s| &s.name == name) {
            let known: Vec<_> = state.stacks.iter().map(|s| s.name.as_str()).collect();
            return Err(CliError::Usage {
                message: format!("no recorded stack named {name:?}"),
                help: if known.is_empty() {
                    "nothing is running here".into()
                } else {
                    format!("recorded stacks: {}", known.join(", "))
                },
            });
        }
    }
    let chosen: Vec<_> = state
        .stacks
        .iter()
        .filter(|s| args.stacks.is_empty() || args.stacks.contains(&s.name))
        .cloned()
        .collect();
    let reports = control::stop(&chosen, &cwd).await;
    let names: Vec<String> = chosen.iter().map(|s| s.name.clone()).collect();
    file.update(|s| s.stacks.retain(|stack| !names.contains(&stack.name)))?;
    let clean = reports.iter().all(|r| r.survivors.is_empty());
    if global.json {
        let stacks: Vec<_> = chosen
            .iter()
            .zip(&reports)
            .map(|(s, r)| json!({"stack": s.name, "stopped": r.stopped, "survivors": r.survivors, "refused": r.refused}))
            .collect();
        output::print_json(&json!({"success": clean, "stacks": stacks}))?;
    } else if chosen.is_empty() {
        anstream::println!("no stacks running here");
    } else {
        let (head, good, bad) = (style::HEAD, style::GOOD, style::BAD);
        for (s, r) in chosen.iter().zip(&reports) {
            for line in &r.refused {
                anstream::eprintln!("warning: {}: left alone, {line}", s.name);
            }
            if r.survivors.is_empty() {
                let what = if r.stopped.is_empty() {
                    "nothing was left running".to_string()
                } else {
                    r.stopped.join(", ")
                };
                anstream::println!("{head}{}{head:#}  {good}stopped{good:#}  {what}", s.name);
            } else {
                anstream::println!(
                    "{head}{}{head:#}  {bad}still running{bad:#}: {}",
                    s.name,
                    r.survivors.join(", ")
                );
            }
        }
    }
    Ok(if clean {
        Outcome::Success
    } else {
        Outcome::Failed
    })
}
