//! `mcp-launch usage [--since 7d] [--json]`.

use std::time::{Duration, SystemTime};

use clap::Args;
use serde_json::json;

use crate::duration::Setting;
use crate::output::{self, thousands, Table};
use crate::outputs::{self, UsageLog};

use super::{CliError, GlobalArgs, Outcome};

/// `--since`: from a minute to a year back.
const SINCE: Setting = Setting::new(
    "--since",
    Duration::from_secs(7 * 24 * 60 * 60),
    Duration::from_secs(60),
    Duration::from_secs(366 * 24 * 60 * 60),
);

/// What tool calls cost: calls, cuts, bytes and tokens per server and tool.
///
/// Reads the usage record (`$XDG_STATE_HOME/mcp-launch/usage.jsonl`, or with --state the one
/// replicas share in Redis): one line per call made
/// through mcp-launch (tool, server, client, bytes and tokens returned, cut or not, duration;
/// never arguments or content).
///
/// Example: mcp-launch usage --since 24h --json
#[derive(Debug, Args)]
pub struct UsageArgs {
    /// How far back (a duration: 90m, 24h, 7d).
    #[arg(long, value_name = "DURATION", default_value = "7d", value_parser = |s: &str| SINCE.parse(s))]
    pub since: Duration,
    /// Read the record replicas of `serve --http --state URL` share in Redis (the same URL),
    /// instead of this machine's file.
    #[arg(long, env = crate::state::ENV, value_name = "URL", hide_env_values = true)]
    pub state: Option<String>,
}

/// The tokens column: "–" when no call was counted, the calls counted when some were not.
fn tokens_shown(total: &outputs::UsageTotal) -> String {
    match total.counted {
        0 => "–".to_string(),
        n if n < total.calls => {
            format!("{} ({n} of {} calls)", thousands(total.tokens), total.calls)
        }
        _ => thousands(total.tokens),
    }
}

/// Runs `usage`.
pub async fn run(args: UsageArgs, global: &GlobalArgs) -> Result<Outcome, CliError> {
    super::serve::read_shared_state(args.state.as_deref()).await?;
    let from = SystemTime::now()
        .checked_sub(args.since)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let records = tokio::task::spawn_blocking(move || UsageLog::open_default().read_since(from))
        .await
        .map_err(|e| CliError::Output(std::io::Error::other(e)))?;
    let totals = outputs::totals(&records);
    if global.json {
        output::print_answer(
            true,
            json!({
                "since": humantime::format_duration(args.since).to_string(),
                "calls": records.len(),
                "tools": totals,
            }),
        )?;
        return Ok(Outcome::Success);
    }
    if totals.is_empty() {
        anstream::println!(
            "no calls recorded in the last {}",
            humantime::format_duration(args.since)
        );
        return Ok(Outcome::Success);
    }
    let mut table = Table::new(
        vec![
            "SERVER",
            "TOOL",
            "CALLS",
            "CUT",
            "SENT",
            "BEFORE CUTS",
            "TOKENS",
            "P50",
        ],
        &[2, 3, 4, 5, 6, 7],
    );
    for t in &totals {
        table.row(vec![
            t.server.clone(),
            t.tool.clone(),
            thousands(t.calls),
            thousands(t.cut),
            outputs::human_bytes(t.bytes),
            outputs::human_bytes(t.bytes_total),
            tokens_shown(t),
            format!("{} ms", t.p50_ms),
        ]);
    }
    anstream::print!("{}", table.render());
    Ok(Outcome::Success)
}
