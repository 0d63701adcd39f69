//! Configuration: which MCP servers exist and how to reach them.
//!
//! [`load`] finds the config files (explicit `--config` paths, else discovery), reads the
//! variables (process environment > `--env-file` > `./.env` > `~/.claude/.env`; `./.env` only
//! when the config was discovered, see [`checkout_env`]), and turns each
//! file into a [`Stack`] of [`ServerEntry`]s whose [`ServerSpec`] is validated and has every
//! `${VAR}` / `${VAR:-default}` expanded.
//!
//! Invariants:
//! - File-level problems (missing file, bad JSON, no server section, bad env file) are `Err`
//!   from [`load`]; a problem in one server (bad shape, unset variable) lives in that entry's
//!   `spec` and never hides the other servers.
//! - Every error carries its facts (file, line, column, server, variable) and a `help` line.
//! - Nothing here reads the real process environment except [`LoadOptions::from_process`]; all
//!   else takes the environment, working directory and home as data, so tests are hermetic.
//! - This module knows nothing of sessions, processes or output formats.
//!
//! Layout: `discovery` (where to look), `dotenv` (the `.env` parser), `variables` (layering),
//! `interpolate` (`${…}`), `file` (one JSON file → entries), `shape` (one raw entry → typed
//! fields), `server` (typed fields → [`ServerSpec`]), `stack` (naming and qualification),
//! `error`.

use std::collections::BTreeMap;
use std::path::PathBuf;

mod discovery;
pub(crate) use discovery::candidates;
pub(crate) mod dotenv;
mod error;
pub(crate) mod file;
pub(crate) mod interpolate;
mod oauth;
mod preview;
mod server;
mod shape;
mod stack;
mod trust;
pub(crate) mod variables;

#[cfg(test)]
mod tests;

pub use error::{ConfigError, ServerFault};
pub use oauth::{client_metadata_url_fault, OAuthClient, CLIENT_METADATA_URL_FORM};
pub use preview::{preview, Preview, Received, ServerPreview, VarSource};
pub use server::ServerSpec;
pub use stack::Stack;
pub use trust::{digest, Subject, TrustPolicy};

use variables::Variables;

/// What [`load`] needs to know, all explicit so tests can use temporary directories.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// `--config` paths, one stack each; empty means discover one file.
    pub configs: Vec<PathBuf>,
    /// `--env-file` paths; a later file wins over an earlier one. Each must exist.
    pub env_files: Vec<PathBuf>,
    /// The working directory: relative paths, `./.env` (with a discovered config) and discovery
    /// start here.
    pub cwd: PathBuf,
    /// The home directory, for `~/.claude/mcp.json` and `~/.claude/.env`; `None` skips both.
    pub home: Option<PathBuf>,
    /// The process environment: the highest-precedence variables.
    pub process_env: BTreeMap<String, String>,
    /// Where the directories the user trusts are recorded (see [`trust_subject`]).
    pub trust: TrustPolicy,
}

impl LoadOptions {
    /// Options from the real process: `std::env` (variables that are not UTF-8 are skipped),
    /// the current directory and the user's home directory.
    pub fn from_process(
        configs: Vec<PathBuf>,
        env_files: Vec<PathBuf>,
    ) -> Result<Self, ConfigError> {
        let cwd = std::env::current_dir().map_err(|err| ConfigError::Environment {
            reason: err.to_string(),
        })?;
        let process_env = std::env::vars_os()
            .filter_map(|(key, value)| Some((key.into_string().ok()?, value.into_string().ok()?)))
            .collect();
        Ok(Self {
            configs,
            env_files,
            cwd,
            home: dirs::home_dir(),
            process_env,
            trust: TrustPolicy::from_user_dirs(),
        })
    }
}

/// One server as configured, usable or not.
#[derive(Debug, Clone)]
pub struct ServerEntry {
    /// The key under `mcpServers` / `servers`.
    pub name: String,
    /// What users type: `name`, or `stack/name` when the name appears in several stacks.
    pub qualified: String,
    /// The name of the stack (config file) it comes from.
    pub stack: String,
    /// Approximate 1-based line of the entry in its file (first `"name":` in the section).
    pub line: Option<usize>,
    /// `"disabled": true` in the file. The spec is still built, so it can be shown.
    pub disabled: bool,
    /// How to reach it, or why it cannot be reached (this server's error only).
    pub spec: Result<ServerSpec, ConfigError>,
}

impl ServerEntry {
    /// An entry for a stdio server made in code (a built-in server, a test), in stack
    /// `stack`, qualified by its plain name.
    pub fn stdio(stack: &str, name: &str, command: &str, args: Vec<String>) -> ServerEntry {
        ServerEntry {
            name: name.into(),
            qualified: name.into(),
            stack: stack.into(),
            line: None,
            disabled: false,
            spec: Ok(ServerSpec::Stdio {
                command: command.into(),
                args,
                env: Vec::new(),
                cwd: None,
            }),
        }
    }
}

/// Everything [`load`] found.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// One stack per config file, in the order given (or the one discovered).
    pub stacks: Vec<Stack>,
    /// The file discovery chose, when no `--config` was given, so the CLI can say which.
    pub discovered: Option<PathBuf>,
    /// The `.env` files read besides `~/.claude/.env`, lowest precedence first: `./.env` when
    /// discovery chose the config and it exists, then each `--env-file` (resolved against the
    /// working directory). A child `mcp-launch` given these as `--env-file`s, with the stacks
    /// as `--config`s, sees the same variables.
    pub env_files: Vec<PathBuf>,
}

impl Loaded {
    /// The entry whose qualified name is `name`, else the only entry whose plain name is
    /// `name`; `None` when nothing matches or a plain name is shared by several stacks.
    pub fn find(&self, name: &str) -> Option<&ServerEntry> {
        if let Some(exact) = self.servers().find(|entry| entry.qualified == name) {
            return Some(exact);
        }
        let mut entries = self.servers();
        let first = entries.find(|entry| entry.name == name)?;
        let is_unique = !entries.any(|entry| entry.name == name);
        is_unique.then_some(first)
    }

    /// Every server's qualified name, in stack then file order.
    pub fn server_names(&self) -> Vec<&str> {
        self.servers()
            .map(|entry| entry.qualified.as_str())
            .collect()
    }

    /// Every server entry, in stack then file order.
    pub fn servers(&self) -> impl Iterator<Item = &ServerEntry> {
        self.stacks.iter().flat_map(|stack| &stack.servers)
    }
}

/// Finds, reads and validates the configuration.
///
/// Order of checks: the config files are located first (so "no config" wins over env-file
/// problems), then every env file is read, then each config file is parsed.
pub fn load(opts: &LoadOptions) -> Result<Loaded, ConfigError> {
    let (loaded, failed) = load_each(opts)?;
    match failed.into_iter().next() {
        Some(first) => Err(first.error),
        None => Ok(loaded),
    }
}

/// What of the working directory needs the user's trust before it is used: the config file
/// discovery found there (not one named with `--config`, nor the home directory's) and the
/// `./.env` read with it. `None` when neither exists, and always with `--config`.
pub fn trust_subject(opts: &LoadOptions, discovered: Option<&std::path::Path>) -> Option<Subject> {
    let mut files: Vec<PathBuf> = discovered
        .filter(|path| path.starts_with(&opts.cwd))
        .map(std::path::Path::to_path_buf)
        .into_iter()
        .collect();
    files.extend(checkout_env(opts, discovered));
    Subject::of(&opts.cwd, &files)
}

/// The working directory's `.env`, when it is read: only with a config that discovery found
/// (the checkout's own setup, used once trusted). A config named with `--config` is the
/// user's choice and brings no `.env` of its own — neither the working directory's (most
/// repositories hold one, for other tools) nor the one beside the file: its variables come
/// from the environment, `--env-file` and `~/.claude/.env`.
pub fn checkout_env(opts: &LoadOptions, discovered: Option<&std::path::Path>) -> Option<PathBuf> {
    discovered.map(|_| opts.cwd.join(".env"))
}

/// The config file discovery would pick in `opts.cwd` (for `mcp-launch trust`).
pub fn discover(opts: &LoadOptions) -> Result<PathBuf, ConfigError> {
    discovery::discover(&opts.cwd, opts.home.as_deref())
}

/// The variables interpolation sees for a config (`discovered`, or the `--config`s), and the
/// `.env` files read besides `~/.claude/.env`, lowest precedence first (see [`Loaded`]).
fn variables<'p>(
    opts: &'p LoadOptions,
    discovered: Option<&std::path::Path>,
) -> Result<(Variables<'p>, Vec<PathBuf>), ConfigError> {
    let checkout_env = checkout_env(opts, discovered).filter(|path| path.is_file());
    let env_files: Vec<PathBuf> = checkout_env
        .into_iter()
        .chain(opts.env_files.iter().map(|file| opts.cwd.join(file)))
        .collect();
    let mut vars = Variables::load(&opts.process_env, &env_files, opts.home.as_deref())?;
    if discovered.is_some_and(|d| d.starts_with(&opts.cwd)) {
        vars = vars.guarding_remote_urls();
    }
    Ok((vars, env_files))
}

/// A config file that could not be loaded, in [`load_each`].
#[derive(Debug, Clone)]
pub struct FailedStack {
    /// The stack name the file would have had.
    pub name: String,
    /// The file.
    pub path: PathBuf,
    /// Why it failed.
    pub error: ConfigError,
}

/// Like [`load`], but each config file stands alone: one that cannot be read or parsed is
/// returned in the second list and the others still load (`up` launches every stack it can).
/// Errors that concern every file (an `--env-file` that is missing, no file discovered) still
/// fail the whole load.
pub fn load_each(opts: &LoadOptions) -> Result<(Loaded, Vec<FailedStack>), ConfigError> {
    let home = opts.home.as_deref();
    let (paths, discovered) = if opts.configs.is_empty() {
        let found = discovery::discover(&opts.cwd, home)?;
        (vec![found.clone()], Some(found))
    } else {
        (
            opts.configs.iter().map(|p| opts.cwd.join(p)).collect(),
            None,
        )
    };
    if let Some(subject) = trust_subject(opts, discovered.as_deref()) {
        if !opts.trust.trusts(&subject) {
            return Err(ConfigError::Untrusted {
                dir: subject.dir,
                files: subject.files,
            });
        }
    }
    let (vars, env_files) = variables(opts, discovered.as_deref())?;
    let names = stack::unique_names(&paths);
    let mut stacks = Vec::with_capacity(paths.len());
    let mut failed = Vec::new();
    for (path, name) in paths.into_iter().zip(names) {
        match file::read(&path, &name, &vars) {
            Ok(servers) => stacks.push(Stack {
                name,
                path,
                servers,
            }),
            Err(error) => failed.push(FailedStack { name, path, error }),
        }
    }
    stack::qualify(&mut stacks);
    Ok((
        Loaded {
            stacks,
            discovered,
            env_files,
        },
        failed,
    ))
}
