//! `mcp-launch doctor [--timeout DURATION]`.

use std::io::Write;
use std::time::Duration;

use clap::Args;
use serde_json::json;

use crate::doctor::{self, Check, DoctorOptions, Status};
use crate::duration::Setting;
use crate::output::{self, style, Table};

use super::{CliError, GlobalArgs, Outcome};

/// Check that the programs stacks need are installed and actually run.
///
/// Looks on PATH for python3, node, npx, uv, uvx, cloudflared and mcpo, runs each one (in
/// parallel, each bounded by --timeout, in a process group killed on timeout) and reports it
/// ok, missing or broken, with its version and, when not ok, the fix. mcpo is also made to
/// import its server code, which a plain `pip install mcpo` breaks today.
///
/// mcpo is optional: `up` serves through its native controller without it. The mcpo checked is
/// the one `up` would run: MCP_LAUNCH_MCPO when set, else PATH's.
///
/// Exit status: 0 when python3, node and npx are ok and nothing is broken; missing optional
/// programs (mcpo, cloudflared, uv, uvx) only warn. 1 otherwise.
///
/// Example: mcp-launch doctor --json
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// How long each program may take before it counts as broken (hung): seconds or a
    /// duration (15, 2.5, 1m).
    #[arg(long, value_name = "DURATION", default_value = "15", value_parser = |s: &str| DOCTOR_TIMEOUT.parse(s))]
    pub timeout: Duration,
    /// Print mcpo's working pins (a pip constraints file) and exit: `pip install mcpo==0.0.20
    /// -c <(mcp-launch doctor --mcpo-constraints)`.
    #[arg(long)]
    pub mcpo_constraints: bool,
}

/// `--timeout`: one millisecond to one day.
const DOCTOR_TIMEOUT: Setting = Setting::timeout("--timeout", doctor::DEFAULT_TIMEOUT);

pub(super) async fn run(args: DoctorArgs, global: &GlobalArgs) -> Result<Outcome, CliError> {
    if args.mcpo_constraints {
        anstream::print!("{}", doctor::MCPO_CONSTRAINTS);
        return Ok(Outcome::Success);
    }
    let opts = DoctorOptions {
        timeout: args.timeout,
        ..DoctorOptions::default()
    };
    let checks = doctor::run(&opts).await;
    let failed = checks.iter().any(Check::fails);
    if global.json {
        output::print_answer(
            !failed,
            json!({"checks": checks.iter().map(Check::to_json).collect::<Vec<_>>()}),
        )?;
    } else {
        print_report(&checks)?;
    }
    Ok(if failed {
        Outcome::Failed
    } else {
        Outcome::Success
    })
}

fn print_report(checks: &[Check]) -> std::io::Result<()> {
    let mut out = crate::output::stdout();
    let mut table = Table::new(vec!["CHECK", "STATUS", "VERSION", "PATH"], &[]);
    for c in checks {
        let status_style = match c.status {
            Status::Ok => style::GOOD,
            Status::Missing if !c.required => style::WARN,
            _ => style::BAD,
        };
        table.styled_row(vec![
            (c.name.to_string(), style::HEAD),
            (c.status.as_str().to_string(), status_style),
            (
                c.version.clone().unwrap_or_else(|| "-".into()),
                Default::default(),
            ),
            (
                c.path
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| "-".into()),
                style::DIM,
            ),
        ]);
    }
    write!(out, "{}", table.render())?;
    for c in checks.iter().filter(|c| c.status != Status::Ok) {
        let s = if c.fails() { style::BAD } else { style::WARN };
        writeln!(
            out,
            "\n{s}{}: {}{s:#}{}",
            c.name,
            c.status.as_str(),
            c.message
                .as_deref()
                .map(|m| format!(" — {m}"))
                .unwrap_or_default()
        )?;
        if let Some(help) = &c.help {
            let head = style::HEAD;
            writeln!(
                out,
                "  {head}fix:{head:#} {}",
                help.replace('\n', "\n       ")
            )?;
        }
    }
    let failing = checks.iter().filter(|c| c.fails()).count();
    if failing == 0 {
        let good = style::GOOD;
        writeln!(out, "\n{good}ready{good:#} (optional programs that are missing only limit what you can use)")?;
    }
    Ok(())
}
