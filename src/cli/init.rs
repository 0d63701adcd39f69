//! `mcp-launch init [--force]`.

use std::io::{self, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::json;

use crate::output::{self, style};

use super::{CliError, GlobalArgs, Outcome};

/// Scaffold ./mcp.config.json (a working example) and ./.mcp-launch/.
///
/// The config holds the reference servers: everything, filesystem (on this directory) and
/// memory through npx, time through uvx — the same stack as mcp_configs/example.json.
/// `.mcp-launch/` is where state and overrides live; its .gitignore keeps state and logs out of
/// git. Existing files are never overwritten without --force; writes are atomic.
///
/// Example: mcp-launch init && mcp-launch list
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Overwrite mcp.config.json and .mcp-launch/.gitignore when they exist.
    #[arg(long)]
    pub force: bool,
}

/// The config `init` writes.
pub const CONFIG: &str = r#"{
  "mcpServers": {
    "everything": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-everything@2026.8.31"]
    },
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "."]
    },
    "memory": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-memory@2026.8.31"],
      "env": { "MEMORY_FILE_PATH": "${TMPDIR:-/tmp}/mcp-launch-example-memory.jsonl" }
    },
    "time": {
      "command": "uvx",
      "args": ["mcp-server-time==2026.10.19"]
    }
  }
}
"#;

/// What `.mcp-launch/.gitignore` holds.
const GITIGNORE: &str = crate::project::GITIGNORE;

const CONFIG_FILE: &str = "mcp.config.json";
const STATE_DIR: &str = ".mcp-launch";

pub(super) async fn run(args: InitArgs, global: &GlobalArgs) -> Result<Outcome, CliError> {
    let config = PathBuf::from(CONFIG_FILE);
    let dir = PathBuf::from(STATE_DIR);
    let gitignore = dir.join(".gitignore");
    // Refuse before touching anything: a half-done scaffold is worse than none.
    if !args.force {
        if let Some(existing) = [&config, &gitignore].into_iter().find(|p| p.exists()) {
            return Err(CliError::FileExists {
                path: existing.display().to_string(),
            });
        }
    }
    let mut created = Vec::new();
    let mut skipped = Vec::new();
    write_atomic(&config, CONFIG, args.force)?;
    created.push(CONFIG_FILE.to_string());
    let dir_shown = format!("{STATE_DIR}/");
    if dir.is_dir() {
        skipped.push(dir_shown);
    } else {
        // Owner-only, as every other writer makes it: state, mcpo's configs and logs hold keys.
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|e| at(&dir, e))?;
        created.push(dir_shown);
    }
    write_atomic(&gitignore, GITIGNORE, args.force)?;
    created.push(gitignore.display().to_string());
    trust_what_we_wrote(&config);

    if global.json {
        output::print_json(&json!({"success": true, "created": created, "skipped": skipped}))?;
    } else {
        let mut out = anstream::stdout().lock();
        let good = style::GOOD;
        for path in &created {
            writeln!(out, "{good}created{good:#} {path}")?;
        }
        let dim = style::DIM;
        for path in &skipped {
            writeln!(out, "{dim}exists{dim:#}  {path}")?;
        }
        let head = style::HEAD;
        writeln!(
            out,
            "\nnext: {head}mcp-launch list{head:#} (starts each server once and lists its tools; `mcp-launch doctor` checks npx and uvx)"
        )?;
    }
    Ok(Outcome::Success)
}

/// The config `init` just wrote is ours, not the checkout's: discovery may use it without
/// asking. Not when a `./.env` is there too (that one did not come from us).
fn trust_what_we_wrote(config: &Path) {
    let Ok(opts) = crate::config::LoadOptions::from_process(Vec::new(), Vec::new()) else {
        return;
    };
    let Some(subject) = crate::config::trust_subject(&opts, Some(&opts.cwd.join(config))) else {
        return;
    };
    if subject.files.iter().any(|f| f.ends_with(".env")) {
        return;
    }
    if let Err(e) = opts.trust.trust(&subject) {
        tracing::warn!(error = %e, "could not record {} as trusted", config.display());
    }
}

/// An I/O error that names the file.
fn at(path: &Path, e: io::Error) -> CliError {
    CliError::Output(io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

/// Writes `text` to `path` atomically; unless `replace`, fails rather than clobber a file
/// that exists (even one created meanwhile).
fn write_atomic(path: &Path, text: &str, replace: bool) -> Result<(), CliError> {
    let written = if replace {
        crate::files::write(path, text.as_bytes())
    } else {
        crate::files::create_new(path, text.as_bytes())
    };
    match written {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(CliError::FileExists {
            path: path.display().to_string(),
        }),
        Err(e) => Err(at(path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scaffolded_config_is_the_example_stack() {
        let config: serde_json::Value = serde_json::from_str(CONFIG).unwrap();
        let servers = config["mcpServers"].as_object().unwrap();
        assert_eq!(
            servers.keys().collect::<Vec<_>>(),
            ["everything", "filesystem", "memory", "time"]
        );
    }
}
