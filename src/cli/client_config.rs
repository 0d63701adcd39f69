//! `serve --print-config CLIENT [--write | --unwrite] [--scope user|project] [--comment-out]`:
//! puts `mcp-launch serve` into an MCP client's own config (see `gateway::clients`).

use clap::{Args, ValueEnum};

use serde_json::json;

use crate::gateway::clients::{self, Client, ClientPaths, Scope, ServeCommand};
use crate::output;

use super::{load_config, CliError, GlobalArgs, Outcome};

/// The client-config flags of `serve`.
#[derive(Debug, Args)]
pub struct ClientConfigArgs {
    /// Print the entry that runs this gateway for CLIENT: claude-code, claude-desktop, cursor,
    /// vscode, codex, opencode, gemini-cli, windsurf or copilot-cli.
    #[arg(long, value_name = "CLIENT")]
    pub print_config: Option<String>,
    /// Add (or update) the entry in the client's config file: backed up first, written
    /// atomically, nothing changed when it is already there.
    #[arg(long, requires = "print_config", conflicts_with = "unwrite")]
    pub write: bool,
    /// Remove the entry again and put back the servers --comment-out set aside.
    #[arg(long, requires = "print_config")]
    pub unwrite: bool,
    /// The client's user file (under your home) or the project's (here); each client has
    /// its own default.
    #[arg(long, value_enum, requires = "print_config")]
    pub scope: Option<ScopeArg>,
    /// With --write: set aside the client's entries for the servers the gateway now fronts.
    #[arg(long, requires = "write")]
    pub comment_out: bool,
}

/// `--scope`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ScopeArg {
    /// The file under your home directory.
    User,
    /// The file in the working directory.
    Project,
}

/// Prints, writes or unwrites the client entry; `flags` are the serve flags to pass on, or
/// `http` the URL and key of a running `serve --http` the client reaches instead.
pub(super) fn run(
    args: &ClientConfigArgs,
    client: &str,
    flags: &[String],
    http: Option<(String, Option<String>)>,
    global: &GlobalArgs,
) -> Result<Outcome, CliError> {
    let client: Client = client.parse().map_err(usage)?;
    let scope = match args.scope {
        Some(ScopeArg::User) => Scope::User,
        Some(ScopeArg::Project) => Scope::Project,
        None => client.default_scope(),
    };
    let cwd = std::env::current_dir()?;
    let home = dirs::home_dir().ok_or_else(|| CliError::Usage {
        message: "no home directory is known (HOME is unset)".into(),
        help: "set HOME, or use --scope project".into(),
    })?;
    let paths = ClientPaths::with_env(home, cwd, |v| std::env::var_os(v));
    let program = std::env::current_exe()?;
    let mut serve = ServeCommand::new(program, &global.configs, flags, &paths.cwd);
    if let Some((url, key)) = http {
        serve = serve.over_http(url, key);
    }
    if args.unwrite {
        let report = clients::unwrite(client, scope, &paths).map_err(usage)?;
        return print_report(&report, global);
    }
    if args.write {
        let fronted = if args.comment_out {
            fronted_servers(global)?
        } else {
            Vec::new()
        };
        let report = clients::write(client, scope, &paths, &serve, &fronted).map_err(usage)?;
        return print_report(&report, global);
    }
    let snippet = clients::print(client, scope, &paths, &serve).map_err(usage)?;
    if global.json {
        let answer = json!({"client": client.name(), "file": snippet.file, "text": snippet.text, "how": snippet.how});
        output::print_answer(true, answer)?;
    } else {
        print!("{}", snippet.text);
        eprintln!("{}", snippet.how);
    }
    Ok(Outcome::Success)
}

/// What `--write` or `--unwrite` did: on stderr, or as the `--json` answer.
fn print_report(report: &clients::WriteReport, global: &GlobalArgs) -> Result<Outcome, CliError> {
    if global.json {
        let answer = json!({"file": report.file, "changed": report.changed, "backup": report.backup, "message": report.to_string()});
        output::print_answer(true, answer)?;
    } else {
        eprintln!("{report}");
    }
    Ok(Outcome::Success)
}

/// The names of the servers the gateway fronts (its config's entries).
fn fronted_servers(global: &GlobalArgs) -> Result<Vec<String>, CliError> {
    let loaded = load_config(global)?;
    Ok(loaded.servers().map(|e| e.name.clone()).collect())
}

/// A client-config error, with its own kind and help.
fn usage(error: clients::ClientError) -> CliError {
    CliError::ClientConfig(Box::new(error))
}
