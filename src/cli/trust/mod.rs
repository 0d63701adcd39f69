//! `mcp-launch trust [--preview | --yes | --revoke]`: informed consent to a checkout's files.
//!
//! Consent is informed: before anything is recorded, the preview shows every file that would be
//! used, everything each server runs or reaches (command, arguments, URL, `headers` and `env`
//! blocks as written) and every variable it receives — names and sources, never values. On a
//! terminal it then asks; elsewhere `--yes` records (there is no one to ask).

mod render;

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use crate::config::{self, LoadOptions, Preview, Subject, TrustPolicy};
use crate::output;

use super::{CliError, GlobalArgs, Outcome};

/// Trust this directory's config, .env and overrides, so that mcp-launch uses them.
///
/// A config file that discovery finds in the working directory (./.mcp.json,
/// ./mcp.config.json, ./.claude/mcp.json), a ./.env there and ./.mcp-launch/overrides.json
/// may come with someone else's checkout: the config's commands run as you, a .env sets
/// variables its servers read, and overrides switch servers on and rewrite what agents read.
/// They are used only once you trust the directory, and only as long as they do not change (a
/// change asks again). `trust` first shows everything that would run and every variable each
/// server receives (names, never values), then asks; `--yes` records without asking (needed
/// when stdin is not a terminal). Files named with --config or --env-file, and ~/.claude's, are
/// your own choice and need no trust; with --config, ./.env is not read at all.
///
/// Example: mcp-launch trust --preview && mcp-launch trust
#[derive(Debug, Args)]
pub struct TrustArgs {
    /// Forget this directory instead.
    #[arg(long, conflicts_with_all = ["yes", "preview"])]
    pub revoke: bool,
    /// Record without asking (you have read the preview).
    #[arg(long, short = 'y', conflicts_with = "preview")]
    pub yes: bool,
    /// Only show what would be trusted; record nothing.
    #[arg(long)]
    pub preview: bool,
}

/// Everything `trust` would record, with its preview.
pub(super) struct Request {
    /// The discovered config and `./.env`, when there are any.
    pub(super) subject: Option<Subject>,
    /// What the config runs and sends.
    pub(super) preview: Option<Preview>,
    /// `./.mcp-launch/overrides.json`, when it exists.
    pub(super) overrides: Option<Overrides>,
}

/// The project's overrides file and its content.
pub(super) struct Overrides {
    pub(super) path: PathBuf,
    pub(super) text: String,
}

pub(super) async fn run(args: TrustArgs, global: &GlobalArgs) -> Result<Outcome, CliError> {
    let opts = LoadOptions::from_process(global.configs.clone(), global.env_files.clone())?;
    if args.revoke {
        return revoke(&opts, global);
    }
    let request = gather(&opts)?;
    if !global.json {
        render::human(&request, &opts)?;
    }
    let confirmed = if args.preview {
        false
    } else if args.yes {
        true
    } else if global.json || !std::io::stdin().is_terminal() {
        return Err(CliError::Usage {
            message: format!(
                "{} is not trusted: trust needs your confirmation",
                opts.cwd.display()
            ),
            help: "read what would run (`mcp-launch trust --preview`), then run `mcp-launch \
                   trust` on a terminal to answer, or add --yes"
                .into(),
        });
    } else {
        ask(&opts)?
    };
    if confirmed {
        record(&opts.trust, &opts, &request)?;
    }
    if global.json {
        output::print_json(&render::json(&request, &opts, confirmed))?;
    } else if confirmed {
        render::recorded(&opts)?;
    } else if !args.preview {
        anstream::println!("nothing recorded");
    }
    Ok(Outcome::Success)
}

/// What the working directory holds that needs trust; an error when nothing does.
fn gather(opts: &LoadOptions) -> Result<Request, CliError> {
    let discovered = if opts.configs.is_empty() {
        config::discover(opts).ok()
    } else {
        None
    };
    let subject = config::trust_subject(opts, discovered.as_deref());
    let preview = match discovered.as_deref().filter(|_| subject.is_some()) {
        Some(path) => Some(config::preview(opts, path)?),
        None => None,
    };
    let path = opts.cwd.join(crate::catalog::OVERRIDES_FILE);
    let overrides = std::fs::read_to_string(&path)
        .ok()
        .filter(|text| !text.trim().is_empty())
        .map(|text| Overrides { path, text });
    if subject.is_none() && overrides.is_none() {
        return Err(CliError::Usage {
            message: format!("nothing in {} needs trust", opts.cwd.display()),
            help: "trust covers a config that discovery finds here (./.mcp.json, ./mcp.config.json, ./.claude/mcp.json), the ./.env read with it and ./.mcp-launch/overrides.json; there is none of them (with --config, ./.env is not read)".into(),
        });
    }
    Ok(Request {
        subject,
        preview,
        overrides,
    })
}

/// Asks on the terminal; true for yes.
fn ask(opts: &LoadOptions) -> Result<bool, CliError> {
    let mut err = std::io::stderr().lock();
    write!(err, "trust {}? [y/N] ", opts.cwd.display())?;
    err.flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes"))
}

fn record(policy: &TrustPolicy, opts: &LoadOptions, request: &Request) -> Result<(), CliError> {
    let failed = |e: std::io::Error| CliError::Usage {
        message: format!("could not record the trust: {e}"),
        help: "check that your config directory ($XDG_CONFIG_HOME or ~/.config) is writable".into(),
    };
    if let Some(subject) = &request.subject {
        policy.trust(subject).map_err(failed)?;
    }
    if let Some(overrides) = &request.overrides {
        let digest = config::digest(overrides.text.as_bytes());
        policy.trust_overrides(&opts.cwd, &digest).map_err(failed)?;
    }
    Ok(())
}

fn revoke(opts: &LoadOptions, global: &GlobalArgs) -> Result<Outcome, CliError> {
    let was = opts.trust.revoke(&opts.cwd).map_err(|e| CliError::Usage {
        message: format!("could not update the trusted directories: {e}"),
        help: "check that your config directory ($XDG_CONFIG_HOME or ~/.config) is writable".into(),
    })?;
    if global.json {
        output::print_json(&json!({"success": true, "dir": opts.cwd, "revoked": was}))?;
    } else if was {
        anstream::println!("{} is no longer trusted", opts.cwd.display());
    } else {
        anstream::println!("{} was not trusted", opts.cwd.display());
    }
    Ok(Outcome::Success)
}
