//! `mcp-launch tools serve [--root DIR]…`: the lean tools server.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::outputs::{self, Budget, Store};
use crate::tools::{Roots, Tools};

use super::{CliError, GlobalArgs, Outcome};

/// The lean tools server: grep, cat, find, ls, head, tail, read_output.
///
/// `tools serve` is a stdio MCP server whose whole tool list costs under 420 tokens. It
/// reads only under the roots: the --root directories, else the client's MCP roots when it
/// offers them, else the working directory. Answers over --max-output-tokens are cut, and a
/// handle keeps the rest for read_output (and `mcp-launch output`).
///
/// Example: claude mcp add files -- mcp-launch tools serve --root .
#[derive(Debug, Args)]
pub struct ToolsArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: ToolsCommand,
}

/// The `tools` subcommands.
#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// Serve the lean tools over stdio (MCP).
    Serve(ServeToolsArgs),
}

/// Flags of `tools serve`.
#[derive(Debug, Args)]
pub struct ServeToolsArgs {
    /// A directory the tools may read (repeatable); relative paths start at the first.
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<PathBuf>,
    /// Most tokens an answer may cost before it is cut (0 = never cut).
    #[arg(long, value_name = "N", default_value_t = outputs::DEFAULT_MAX_TOKENS)]
    pub max_output_tokens: usize,
}

/// Runs `tools …`.
pub async fn run(
    args: ToolsArgs,
    _global: &GlobalArgs,
    shutdown: tokio_util::sync::CancellationToken,
) -> Result<Outcome, CliError> {
    let ToolsCommand::Serve(args) = args.command;
    let is_pinned = !args.roots.is_empty();
    let dirs = if is_pinned {
        args.roots
    } else {
        vec![std::env::current_dir().map_err(CliError::Output)?]
    };
    let usage = |e: crate::tools::ToolError| CliError::Usage {
        message: e.to_string(),
        help: "give existing directories: --root DIR (repeatable)".into(),
    };
    let roots = Roots::new(&dirs).map_err(usage)?;
    let store = Store::open_default()?;
    let tools = Tools::new(roots, is_pinned, store, Budget::new(args.max_output_tokens))
        .with_usage(outputs::UsageLog::open_default());
    crate::tools::serve_stdio(tools, shutdown)
        .await
        .map_err(CliError::Output)?;
    Ok(Outcome::Success)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::{Cli, Command};

    #[test]
    fn roots_repeat() {
        let cli =
            Cli::try_parse_from(["mcp-launch", "tools", "serve", "--root", "a", "--root", "b"])
                .unwrap();
        let Command::Tools(args) = cli.command else {
            panic!("not tools");
        };
        let super::ToolsCommand::Serve(serve) = args.command;
        assert_eq!(serve.roots.len(), 2);
        assert_eq!(serve.max_output_tokens, 6000);
    }
}
