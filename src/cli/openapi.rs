//! `mcp-launch openapi [--public-url URL…]`.

use clap::Args;
use serde_json::json;

use crate::launch::control;
use crate::launch::state::StateFile;
use crate::output::{self, style};

use super::{CliError, GlobalArgs, Outcome};

/// Rebuild the merged /openapi.json of each running stack from mcpo and the current overrides;
/// the front serves the new one at once.
///
/// Use it after `mcp-launch tool deny|allow|describe` or `server enable|disable` to update a
/// running stack without restarting it, or with --public-url when the public address changed.
///
/// Example: mcp-launch tool deny everything get-env && mcp-launch openapi
#[derive(Debug, Args)]
pub struct OpenapiArgs {
    /// New public URL (repeat once per running stack in launch order, or give one for all).
    #[arg(long = "public-url", value_name = "URL")]
    pub public_urls: Vec<String>,
}

/// Runs `openapi`.
pub async fn run(args: OpenapiArgs, global: &GlobalArgs) -> Result<Outcome, CliError> {
    let cwd = std::env::current_dir().map_err(CliError::Output)?;
    let state = StateFile::in_project(&cwd).read()?;
    let live: Vec<_> = state
        .stacks
        .iter()
        .filter(|s| s.supervisor.process_alive())
        .collect();
    if live.is_empty() {
        return Err(CliError::Usage {
            message: "no running stack to rebuild".into(),
            help: "start one with `mcp-launch up`".into(),
        });
    }
    let urls = super::up::align_public_urls(&args.public_urls, live.len())?;
    let client = reqwest::Client::new();
    let mut results = Vec::new();
    for (stack, url) in live.iter().zip(&urls) {
        results.push((
            stack.name.clone(),
            control::reload(stack, &client, url.as_deref()).await,
        ));
    }
    let failed = results.iter().any(|(_, r)| r.is_err());
    if global.json {
        let stacks: Vec<_> = results
            .iter()
            .map(|(name, r)| match r {
                Ok(summary) => summary.clone(),
                Err(e) => json!({"stack": name, "error": output::error_object(e)}),
            })
            .collect();
        output::print_json(&json!({"success": !failed, "stacks": stacks}))?;
    } else {
        let (head, bad) = (style::HEAD, style::BAD);
        for (name, r) in &results {
            match r {
                Ok(summary) => {
                    anstream::println!(
                        "{head}{name}{head:#}  {}  {} operations",
                        summary["openapi_url"].as_str().unwrap_or(""),
                        summary["operations"]
                    );
                    for w in summary["warnings"].as_array().into_iter().flatten() {
                        output::warn(w.as_str().unwrap_or(""))?;
                    }
                }
                Err(e) => {
                    anstream::println!("{head}{name}{head:#}  {bad}failed{bad:#}: {e}")
                }
            }
        }
    }
    Ok(if failed {
        Outcome::Failed
    } else {
        Outcome::Success
    })
}
