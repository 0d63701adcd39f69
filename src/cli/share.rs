//! `mcp-launch share`.

use clap::Args;
use serde_json::json;

use crate::launch::spec::API_KEY_HEADER;
use crate::launch::state::StateFile;
use crate::output::{self, style};

use super::{CliError, GlobalArgs, Outcome};

/// Print, per running stack, the /openapi.json URL and the key header, ready to paste into a
/// ChatGPT Action (Authentication: API Key, Auth Type: Custom, header X-API-Key).
///
/// Stale stacks (their `mcp-launch up` is gone) are skipped with a warning.
///
/// Example: mcp-launch share --json | jq -r '.stacks[0].openapi_url'
#[derive(Debug, Args)]
pub struct ShareArgs {}

/// Runs `share`.
pub async fn run(_args: ShareArgs, global: &GlobalArgs) -> Result<Outcome, CliError> {
    let cwd = std::env::current_dir().map_err(CliError::Output)?;
    let state = StateFile::in_project(&cwd).read()?;
    let (live, stale): (Vec<_>, Vec<_>) = state
        .stacks
        .iter()
        .partition(|s| s.supervisor.process_alive());
    if global.json {
        let stacks: Vec<_> = live
            .iter()
            .map(|s| {
                json!({
                    "stack": s.name,
                    "openapi_url": format!("{}/openapi.json", s.public_url),
                    "header": API_KEY_HEADER,
                    "api_key": s.api_key,
                    "operations": s.operations,
                })
            })
            .collect();
        output::print_answer(!live.is_empty(), json!({ "stacks": stacks }))?;
    } else {
        let head = style::HEAD;
        for s in &live {
            anstream::println!("{head}{}{head:#}", s.name);
            anstream::println!("  Schema URL  {}/openapi.json", s.public_url);
            anstream::println!("  Auth        API Key, custom header \"{API_KEY_HEADER}\"");
            anstream::println!("  Key         {}", s.api_key);
        }
        if live.is_empty() {
            anstream::println!("no stacks running here (start one with `mcp-launch up`)");
        }
    }
    for s in &stale {
        output::warn(&format!(
            "{}: not running (its `mcp-launch up` is gone); `mcp-launch down` tidies it",
            s.name
        ))?;
    }
    Ok(if live.is_empty() {
        Outcome::Failed
    } else {
        Outcome::Success
    })
}
