//! Puts `mcp-launch serve` into an MCP client's config: `serve --print-config CLIENT` prints the
//! entry, `--write` adds it to the client's own file, `--unwrite` takes it out again.
//!
//! | client           | file (user scope; project scope)                                  | shape |
//! |------------------|-------------------------------------------------------------------|-------|
//! | `claude-code`    | `~/.claude.json`; `./.mcp.json`                                    | `mcpServers` |
//! | `claude-desktop` | `~/.config/Claude/` or `~/Library/Application Support/Claude/` `claude_desktop_config.json` | `mcpServers` |
//! | `cursor`         | `~/.cursor/mcp.json`; `./.cursor/mcp.json`                         | `mcpServers` |
//! | `vscode`         | the profile's `User/mcp.json`; `./.vscode/mcp.json` (default)      | `servers` (JSONC, `"type": "stdio"`) |
//! | `codex`          | `~/.codex/config.toml`; `./.codex/config.toml`                     | `[mcp_servers.mcp-launch]` |
//! | `opencode`       | `~/.config/opencode/opencode.json`; `./opencode.json`              | `mcp` (JSONC, `"type": "local"`, one `command` array) |
//! | `gemini-cli`     | `~/.gemini/settings.json`; `./.gemini/settings.json`               | `mcpServers` (JSONC; `httpUrl` for HTTP) |
//! | `windsurf`       | `~/.codeium/windsurf/mcp_config.json`                              | `mcpServers` (`serverUrl` for HTTP) |
//! | `copilot-cli`    | `~/.copilot/mcp-config.json`                                       | `mcpServers` (`"type": "local"`, `"tools": ["*"]`) |
//!
//! Writing keeps the file as it was around our entry: other keys, their order, indentation and
//! (JSONC, TOML) comments. It backs the file up first (`<file>.bak-<UTC time>`, with the
//! file's privacy), writes through [`crate::files`] (atomic), and changes nothing when the entry
//! is already there ("already up to date"). A file that does not parse is refused, naming the
//! line. Servers the gateway now fronts can be set aside so the client does not start them twice:
//! TOML gets them as comments between `# >>> mcp-launch fronted: NAME` and `# <<< …` lines;
//! JSON (which has no comments) gets them under the top-level key `"mcp-launch.fronted"`, which
//! the clients ignore. [`unwrite`] removes our entry and puts them back. A file that is also a
//! config serve reads (a `--config` file, or `./.mcp.json` found by discovery) is refused: the
//! gateway would start itself.
//!
//! CLI wiring (in `cli/`): `--print-config CLIENT` → [`print`]; `--write` → [`write`] (with
//! the fronted server names when asked to comment them out, else `&[]`); `--unwrite` →
//! [`unwrite`]; a scope flag → [`Scope`], else [`Client::default_scope`]. Print the report
//! (`Display`) and [`Snippet::how`] on stderr; errors are [`ClientError`] (`Actionable`).
//!
//! `mcp-launch clients` ([`find`], [`move_clients`], [`restore`]): what each client runs on its
//! own, and moving it behind the gateway (found.rs, moving.rs; client.rs cites each client's
//! documentation).
//!
//! Only [`ClientPaths`] says where home, the working directory and the clients' own directory
//! variables (`$XDG_CONFIG_HOME`, `$CLAUDE_CONFIG_DIR`, `$CODEX_HOME`, `$COPILOT_HOME`) are:
//! nothing here reads the environment, so tests write into a temporary home.
//!
//! ```no_run
//! use mcp_launch::gateway::clients::{self, Client, ClientPaths, ServeCommand};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let paths = ClientPaths::with_env("/home/me".into(), std::env::current_dir()?, |v| std::env::var_os(v));
//! let serve = ServeCommand::new(
//!     std::env::current_exe()?,
//!     &["stack.json".into()],                 // --config files (made absolute)
//!     &["--mode".into(), "sparse".into()], // other serve flags, passed through
//!     &paths.cwd,
//! );
//! let client: Client = "codex".parse()?;
//! let snippet = clients::print(client, client.default_scope(), &paths, &serve)?;
//! print!("{}", snippet.text); // the entry, to paste
//! eprintln!("{}", snippet.how); // where it goes
//! let report = clients::write(client, client.default_scope(), &paths, &serve, &["github".into()])?;
//! eprintln!("{report}"); // backup, what changed, how to undo
//! # Ok(()) }
//! ```

mod client;
mod error;
mod file;
mod found;
mod json_file;
mod literal;
mod moving;
mod paths;
mod toml_file;

#[cfg(test)]
mod moving_tests;
#[cfg(test)]
mod tests;

use std::fmt;
use std::path::{Path, PathBuf};

pub use client::Client;
pub use error::ClientError;
pub use found::{
    find, find_vscode_profiles, find_with_project, Found, FoundScope, OwnServer, Secret,
};
pub use moving::{move_clients, restore, Moved, Restored, Target, NOT_MOVED};
pub use paths::{ClientPaths, CLIENT_DIR_VARS};

use client::Format;

/// The name of our entry in every client's file.
pub const ENTRY: &str = "mcp-launch";

/// The top-level JSON key that holds the servers `--write` set aside (JSON has no comments).
pub const FRONTED_KEY: &str = "mcp-launch.fronted";

/// Which of a client's files: the user's own, or the project's (in the working directory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The file under the home directory: every project sees the entry.
    User,
    /// The file in the working directory (`.mcp.json`, `.vscode/mcp.json`, …).
    Project,
}

/// The command a client runs: `mcp-launch serve` over stdio, with absolute paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeCommand {
    /// The mcp-launch executable, absolute (GUI clients do not have the shell's `PATH`).
    pub program: PathBuf,
    /// `serve`, then `--config FILE` for each config, then the other flags as given.
    pub args: Vec<String>,
    /// The `--config` files, absolute (also in `args`); empty when serve discovers its config.
    pub configs: Vec<PathBuf>,
    /// Set when the client should reach a running `serve --http` instead of starting one.
    pub http: Option<HttpEntry>,
}

/// A running `serve --http` as a client reaches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpEntry {
    /// `http://ADDR:PORT/mcp`.
    pub url: String,
    /// The key the client sends as `Authorization: Bearer <key>` (none with `--no-auth`).
    pub key: Option<String>,
}

/// The printed entry: the text to paste, the file it belongs in, and a sentence saying so.
#[derive(Debug, Clone)]
pub struct Snippet {
    /// The entry as a complete file (JSON or TOML) that `--write` would merge.
    pub text: String,
    /// The client's file for the chosen scope.
    pub file: PathBuf,
    /// Where to paste it (and, for Claude Code, the `claude mcp add-json` line): for stderr.
    pub how: String,
}

/// What [`write`] or [`unwrite`] did, to print on stderr.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteReport {
    /// The client's file (symlinks resolved).
    pub file: PathBuf,
    /// The copy of the old file, when there was one and it changed.
    pub backup: Option<PathBuf>,
    /// False when the file already said what we would write ("already up to date").
    pub changed: bool,
    /// `write`: fronted servers set aside (commented out, or moved under [`FRONTED_KEY`]).
    pub set_aside: Vec<String>,
    /// `unwrite`: servers put back.
    pub restored: Vec<String>,
    /// `unwrite`: servers left aside because the file has a server of that name again.
    pub kept_aside: Vec<String>,
    /// How to undo the change, when there was one.
    undo: Option<String>,
}

impl Scope {
    /// `user` or `project`, as a `--scope` flag would take it.
    pub fn name(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
        }
    }
}

/// A file's new text and the servers set aside or restored on the way.
#[derive(Debug, Default)]
struct Edit {
    text: String,
    set_aside: Vec<String>,
    restored: Vec<String>,
    kept_aside: Vec<String>,
}

impl ServeCommand {
    /// `program serve --config ABS… FLAGS…`; relative config paths are taken from `cwd`.
    pub fn new(program: PathBuf, configs: &[PathBuf], flags: &[String], cwd: &Path) -> Self {
        let configs: Vec<PathBuf> = configs.iter().map(|c| absolute(c, cwd)).collect();
        let mut args = vec!["serve".to_string()];
        for config in &configs {
            args.push("--config".into());
            args.push(config.display().to_string());
        }
        args.extend(flags.iter().cloned());
        ServeCommand {
            program,
            args,
            configs,
            http: None,
        }
    }

    /// The entry for a client reaching a running `serve --http` at `url` with `key`.
    pub fn over_http(self, url: String, key: Option<String>) -> Self {
        ServeCommand {
            http: Some(HttpEntry { url, key }),
            ..self
        }
    }

    /// The files serve would read its servers from when the client starts it in `paths.cwd`.
    fn sources(&self, paths: &ClientPaths) -> Vec<PathBuf> {
        if self.configs.is_empty() {
            crate::config::candidates(&paths.cwd, Some(&paths.home))
        } else {
            self.configs.clone()
        }
    }

    pub(super) fn program_text(&self) -> String {
        self.program.display().to_string()
    }
}

/// `path` made absolute against `cwd`, with `.` components dropped (symlinks are kept).
fn absolute(path: &Path, cwd: &Path) -> PathBuf {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    };
    joined.components().collect()
}

/// The entry for `client`, as the text `--write` would give a new file.
pub fn print(
    client: Client,
    scope: Scope,
    paths: &ClientPaths,
    serve: &ServeCommand,
) -> Result<Snippet, ClientError> {
    let file = client.config_file(scope, paths)?;
    let text = add_entry(client, &file, "", serve, &[])?.text;
    let mut how = format!(
        "merge this into {} (or run: {})",
        file.display(),
        command_line(client, scope, Some(serve), "--write")
    );
    if serve.configs.is_empty() {
        how.push_str(
            "; without --config, serve reads the config it finds where the client starts it",
        );
    }
    if client == Client::ClaudeCode {
        let json = serde_json::Value::Object(client.json_entry(serve)).to_string();
        how.push_str(&format!(
            "; or: claude mcp add-json --scope {} {ENTRY} {}",
            scope.name(),
            shell_quote(&json)
        ));
    }
    Ok(Snippet { text, file, how })
}

/// Adds or updates our entry in the client's file, setting aside the `fronted` servers.
pub fn write(
    client: Client,
    scope: Scope,
    paths: &ClientPaths,
    serve: &ServeCommand,
    fronted: &[String],
) -> Result<WriteReport, ClientError> {
    let file = file::resolve(&client.config_file(scope, paths)?);
    if serve
        .sources(paths)
        .iter()
        .any(|s| file::resolve(s) == file)
    {
        // The gateway would start itself, and setting servers aside would empty its own list.
        return Err(ClientError::GatewayConfig { path: file });
    }
    let old = file::read(&file)?;
    let edit = add_entry(client, &file, old.as_deref().unwrap_or(""), serve, fronted)?;
    let undo = command_line(client, scope, None, "--unwrite");
    finish(scope, file, old, edit, undo)
}

/// Removes our entry from the client's file and puts back the servers `write` set aside.
pub fn unwrite(
    client: Client,
    scope: Scope,
    paths: &ClientPaths,
) -> Result<WriteReport, ClientError> {
    let file = file::resolve(&client.config_file(scope, paths)?);
    let Some(old) = file::read(&file)? else {
        return Ok(WriteReport::unchanged(file));
    };
    let edit = remove_entry(client, &file, &old)?;
    let undo = command_line(client, scope, None, "--write");
    finish(scope, file, Some(old), edit, undo)
}

/// The text [`write`] makes of `text`, the client's `file`, reading and writing no file (what
/// the `client_config` fuzz target checks).
pub fn with_entry(
    client: Client,
    file: &Path,
    text: &str,
    serve: &ServeCommand,
    fronted: &[String],
) -> Result<String, ClientError> {
    add_entry(client, file, text, serve, fronted).map(|edit| edit.text)
}

/// The text [`unwrite`] makes of `text`, the client's `file`, reading and writing no file.
pub fn without_entry(client: Client, file: &Path, text: &str) -> Result<String, ClientError> {
    remove_entry(client, file, text).map(|edit| edit.text)
}

fn remove_entry(client: Client, file: &Path, text: &str) -> Result<Edit, ClientError> {
    match client.format() {
        Format::Json { servers_key, jsonc } => json_file::remove(text, file, servers_key, jsonc),
        Format::Toml => toml_file::remove(text, file),
    }
}

fn add_entry(
    client: Client,
    file: &Path,
    text: &str,
    serve: &ServeCommand,
    fronted: &[String],
) -> Result<Edit, ClientError> {
    if serve.http.is_some() && !client.takes_http() {
        return Err(ClientError::NoHttpEntry {
            client: client.name(),
        });
    }
    match client.format() {
        Format::Json { servers_key, jsonc } => {
            let entry = client.json_entry(serve);
            json_file::add(text, file, servers_key, jsonc, &entry, fronted)
        }
        Format::Toml => toml_file::add(text, file, serve, fronted),
    }
}

/// Backs up and writes when the text changed; says what happened either way.
fn finish(
    scope: Scope,
    file: PathBuf,
    old: Option<String>,
    edit: Edit,
    undo: String,
) -> Result<WriteReport, ClientError> {
    if old.as_deref() == Some(edit.text.as_str()) {
        return Ok(WriteReport::unchanged(file));
    }
    // A new file in the home directory starts private; a project's file is shared anyway.
    let private = file::is_private(&file).unwrap_or(scope == Scope::User);
    let backup = match &old {
        Some(old) => Some(file::backup(&file, old.as_bytes(), private)?),
        None => None,
    };
    file::write(&file, edit.text.as_bytes(), private)?;
    Ok(WriteReport {
        file,
        backup,
        changed: true,
        set_aside: edit.set_aside,
        restored: edit.restored,
        kept_aside: edit.kept_aside,
        undo: Some(undo),
    })
}

impl WriteReport {
    fn unchanged(file: PathBuf) -> Self {
        WriteReport {
            file,
            ..WriteReport::default()
        }
    }
}

impl fmt::Display for WriteReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = self.file.display();
        if !self.changed {
            return write!(f, "{file} is already up to date");
        }
        match &self.backup {
            Some(backup) => write!(
                f,
                "backed up {file} to {}\nupdated {file}",
                backup.display()
            )?,
            None => write!(f, "created {file}")?,
        }
        if !self.set_aside.is_empty() {
            write!(
                f,
                "\nset aside the servers mcp-launch now fronts: {}",
                self.set_aside.join(", ")
            )?;
        }
        if !self.restored.is_empty() {
            write!(f, "\nput back: {}", self.restored.join(", "))?;
        }
        if !self.kept_aside.is_empty() {
            write!(
                f,
                "\nleft aside (the file has a server of that name again): {}",
                self.kept_aside.join(", ")
            )?;
        }
        if let Some(undo) = &self.undo {
            write!(f, "\nundo: {undo}")?;
        }
        Ok(())
    }
}

/// The `serve` command line that does `action` for this client and scope.
/// The command line that does `action` for `client`: with `serve`, its whole `serve …` (configs
/// and flags) so the written entry is the printed one.
fn command_line(
    client: Client,
    scope: Scope,
    serve: Option<&ServeCommand>,
    action: &str,
) -> String {
    let scope = if scope == client.default_scope() {
        String::new()
    } else {
        format!(" --scope {}", scope.name())
    };
    let serve = match serve {
        Some(serve) => serve
            .args
            .iter()
            .map(|a| shell_word(a))
            .collect::<Vec<_>>()
            .join(" "),
        None => "serve".to_string(),
    };
    format!("mcp-launch {serve} --print-config {client}{scope} {action}")
}

/// `text` as one POSIX shell word, quoted only when it needs it.
fn shell_word(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=@+,".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text.to_string()
    } else {
        shell_quote(text)
    }
}

/// `text` as one POSIX shell word.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}
