//! `mcp-launch trust [--revoke]`.

use std::io::Write;

use clap::Args;
use serde_json::json;

use crate::config::{self, LoadOptions, TrustPolicy};
use crate::output::{self, style};

use super::{CliError, GlobalArgs, Outcome};

/// Trust this directory's config and .env, so that mcp-launch uses them.
///
/// A config file that discovery finds in the working directory (./.mcp.json,
/// ./mcp.config.json, ./.claude/mcp.json) and a ./.env there may come with someone else's
/// checkout: the config's commands run as you, and a .env sets variables its servers read. They
/// are used only once you trust the directory, and only as long as they do not change (a
/// change asks again). Read them first: `trust` shows what each server runs. Files named with
/// --config or --env-file, and ~/.claude's, are your own choice and need no trust; with
/// --config, ./.env is not read at all.
///
/// Example: mcp-launch trust
#[derive(Debug, Args)]
pub struct TrustArgs {
    /// Forget this directory instead.
    #[arg(long)]
    pub revoke: bool,
}

pub(super) async fn run(args: TrustArgs, global: &GlobalArgs) -> Result<Outcome, CliError> {
    let opts = LoadOptions::from_process(global.configs.clone(), global.env_files.clone())?;
    if args.revoke {
        return revoke(&opts, global);
    }
    let discovered = if opts.configs.is_empty() {
        config::discover(&opts).ok()
    } else {
        None
    };
    let Some(subject) = config::trust_subject(&opts, discovered.as_deref()) else {
        return Err(CliError::Usage {
            message: format!("nothing in {} needs trust", opts.cwd.display()),
            help: "trust covers a config that discovery finds here (./.mcp.json, ./mcp.config.json, ./.claude/mcp.json) and the ./.env read with it; there is neither (with --config, ./.env is not read)".into(),
        });
    };
    // What the config would run, shown before it is trusted (loaded as if trusted).
    let preview = LoadOptions {
        configs: discovered.iter().cloned().collect(),
        trust: TrustPolicy::Everything,
        ..opts.clone()
    };
    let commands = match discovered {
        Some(_) => config::load(&preview)?
            .servers()
            .map(|entry| (entry.qualified.clone(), runs(entry)))
            .collect(),
        None => Vec::new(),
    };
    opts.trust.trust(&subject).map_err(|e| CliError::Usage {
        message: format!("could not record the trust: {e}"),
        help: "check that your config directory ($XDG_CONFIG_HOME or ~/.config) is writable".into(),
    })?;
    let files: Vec<String> = subject
        .files
        .iter()
        .map(|f| f.display().to_string())
        .collect();
    if global.json {
        let servers: Vec<_> = commands
            .iter()
            .map(|(name, runs)| json!({"name": name, "runs": runs}))
            .collect();
        output::print_json(
            &json!({"success": true, "dir": subject.dir, "files": files, "servers": servers}),
        )?;
        return Ok(Outcome::Success);
    }
    let mut out = anstream::stdout().lock();
    let (good, dim) = (style::GOOD, style::DIM);
    writeln!(out, "{good}trusted{good:#} {}", subject.dir.display())?;
    for file in &files {
        writeln!(out, "  {file}")?;
    }
    for (name, runs) in &commands {
        writeln!(out, "  {name}: {dim}{runs}{dim:#}")?;
    }
    writeln!(
        out,
        "{dim}until these files change; `mcp-launch trust --revoke` forgets it{dim:#}"
    )?;
    Ok(Outcome::Success)
}

/// What an entry runs or reaches, for a person deciding whether to trust it.
fn runs(entry: &config::ServerEntry) -> String {
    match &entry.spec {
        Ok(config::ServerSpec::Stdio { command, args, .. }) => std::iter::once(command.as_str())
            .chain(args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        Ok(config::ServerSpec::Http { url, .. } | config::ServerSpec::Sse { url, .. }) => {
            crate::mcp::redact::url(url)
        }
        Err(e) => format!("(unusable: {e})"),
    }
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
