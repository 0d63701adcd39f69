//! `mcp-launch clients move` and `restore`: a client's own servers go into our config (merged
//! under its lock; a name our config already holds for another server is left in the client,
//! never overwritten), their literal secrets into our `.env` file (referred to as `${VAR}`),
//! and the client is pointed at the gateway by [`super::write`] (backed up, atomic, the moved
//! servers set aside). Each move is recorded; `restore` writes the backup back when the file
//! is still what the move wrote (byte for byte), else undoes the move key by key
//! ([`super::unwrite`]), and takes out of our config what the move added, if unchanged.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::found::{find, secret_prefix, Found, OwnServer, Secret};
use super::{file, json_file, Client, ClientError, ClientPaths, Scope, ServeCommand, WriteReport};

/// Where moved servers go and where moves are recorded.
#[derive(Debug, Clone)]
pub struct Target {
    /// Our config (`~/.claude/mcp.json`, which `mcp-launch` finds from any directory).
    pub config: PathBuf,
    /// The variables file our config reads (`~/.claude/.env`): the moved secrets.
    pub env_file: PathBuf,
    /// The record of moves, for `restore`.
    pub record: PathBuf,
}

/// What moving one client did (or, with `--dry-run`, would do).
#[derive(Debug, Default)]
pub struct Moved {
    /// The client's name.
    pub client: &'static str,
    /// Its user file.
    pub file: PathBuf,
    /// Servers now in our config, set aside in the client.
    pub moved: Vec<String>,
    /// Servers our config already held as they are: set aside in the client.
    pub shared: Vec<String>,
    /// Servers left in the client: our config has another server of that name.
    pub collided: Vec<String>,
    /// Servers left in the client, and why.
    pub unmovable: Vec<(String, String)>,
    /// Variables written to the `.env` file.
    pub secrets: Vec<String>,
    /// Why the client was left alone (no file, already moved).
    pub skipped: Option<String>,
    /// Why the client could not be moved; nothing of it was changed.
    pub error: Option<ClientError>,
    /// The client file's change (none with `--dry-run`).
    pub write: Option<WriteReport>,
}

/// What restoring one client did.
#[derive(Debug, Default)]
pub struct Restored {
    /// The client's name.
    pub client: &'static str,
    /// Its user file.
    pub file: PathBuf,
    /// True when the file was written back byte for byte from the backup.
    pub exact: bool,
    /// Servers back in the client's file.
    pub put_back: Vec<String>,
    /// Servers taken out of our config again.
    pub removed: Vec<String>,
    /// Servers left in our config (changed since, or moved from another client too).
    pub kept: Vec<String>,
    /// Why the client was left alone, or how it was put back.
    pub note: Option<String>,
}

/// [`Restored::note`] of a client that was not moved.
pub const NOT_MOVED: &str = "nothing to restore: it was not moved";

/// One move of one client, as recorded.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Step {
    client: String,
    file: PathBuf,
    /// The file before the move (`None`: the move created it).
    backup: Option<PathBuf>,
    /// SHA-256 of the file the move wrote.
    written: String,
    /// Servers set aside in the client.
    fronted: Vec<String>,
    /// Servers the move added to our config, as added.
    added: Vec<(String, Value)>,
    /// Variables the move added to the `.env` file.
    secrets: Vec<String>,
}

/// Moves each client's own servers behind the gateway `program` serves from `target.config`.
pub fn move_clients(
    clients: &[Client],
    paths: &ClientPaths,
    target: &Target,
    program: &Path,
    dry_run: bool,
) -> Vec<Moved> {
    // What a dry run would have added so far: later clients see it as in our config.
    let mut planned = Map::new();
    clients
        .iter()
        .map(|&client| {
            let found = find(client, paths);
            let mut moved = Moved {
                client: client.name(),
                file: found.file.clone(),
                ..Moved::default()
            };
            let run = Run {
                paths,
                target,
                program,
                dry_run,
            };
            if let Err(error) = move_one(found, &run, &mut planned, &mut moved) {
                moved.error = Some(error);
            }
            moved
        })
        .collect()
}

/// What every client's move shares.
struct Run<'a> {
    paths: &'a ClientPaths,
    target: &'a Target,
    program: &'a Path,
    dry_run: bool,
}

fn move_one(
    mut found: Found,
    run: &Run,
    planned: &mut Map<String, Value>,
    out: &mut Moved,
) -> Result<(), ClientError> {
    let Run {
        paths,
        target,
        program,
        dry_run,
    } = *run;
    if let Some(error) = found.error.take() {
        return Err(error);
    }
    if !found.exists {
        out.skipped = Some("no config file".into());
        return Ok(());
    }
    if found.gateway && found.servers.is_empty() {
        out.skipped = Some("already points at the gateway".into());
        return Ok(());
    }
    let config = &target.config;
    // A dry run takes no lock: the lock file (and its directory) would be a write.
    let _held = if dry_run { None } else { Some(lock(config)?) };
    let text = file::read(config)?.unwrap_or_default();
    let key = servers_key(&text);
    let (mut ours, _) = json_file::servers(&text, config, key, false)?;
    ours.extend(planned.clone());
    let env_now = read_env(&target.env_file)?;
    let mut added: Vec<(String, Value)> = Vec::new();
    let mut secrets: Vec<Secret> = Vec::new();
    for server in &found.servers {
        sort(server, &ours, &env_now, out, &mut added, &mut secrets);
    }
    let serve = ServeCommand::new(
        program.to_path_buf(),
        std::slice::from_ref(config),
        &[],
        &paths.cwd,
    );
    let fronted: Vec<String> = out.moved.iter().chain(&out.shared).cloned().collect();
    // The client's edit is made first: a file we cannot edit stops the move before any write.
    let old = file::read(&found.file)?.unwrap_or_default();
    super::add_entry(found.client, &found.file, &old, &serve, &fronted)?;
    out.secrets = secrets.iter().map(|s| s.var.clone()).collect();
    if dry_run {
        planned.extend(added);
        return Ok(());
    }
    append_env(&target.env_file, &secrets)?;
    if !added.is_empty() {
        let new = json_file::add_servers(&text, config, key, &added)?;
        let private = file::is_private(config).unwrap_or(true);
        file::write(config, new.as_bytes(), private)?;
    }
    let report = super::write(found.client, Scope::User, paths, &serve, &fronted)?;
    if report.changed {
        let written = digest(&std::fs::read(&report.file).unwrap_or_default());
        let step = Step {
            client: found.client.name().into(),
            file: report.file.clone(),
            backup: report.backup.clone(),
            written,
            fronted,
            added,
            secrets: out.secrets.clone(),
        };
        update_record(&target.record, |steps| steps.push(step))?;
    }
    out.write = Some(report);
    Ok(())
}

/// Where one server goes: into our config, already there, or left in the client.
fn sort(
    server: &OwnServer,
    ours: &Map<String, Value>,
    env_now: &[(String, String)],
    out: &mut Moved,
    added: &mut Vec<(String, Value)>,
    secrets: &mut Vec<Secret>,
) {
    let name = &server.name;
    let entry = match &server.entry {
        Ok(entry) => Value::Object(entry.clone()),
        Err(why) => {
            out.unmovable.push((name.clone(), why.clone()));
            return;
        }
    };
    match ours.get(name) {
        Some(existing) if *existing == entry => out.shared.push(name.clone()),
        Some(_) => out.collided.push(name.clone()),
        None => {
            let taken = server.secrets.iter().find(|s| {
                env_now
                    .iter()
                    .any(|(var, value)| var == &s.var && value != &s.value)
            });
            if let Some(secret) = taken {
                let why = format!("the .env file holds {} with another value", secret.var);
                out.unmovable.push((name.clone(), why));
                return;
            }
            let new = server
                .secrets
                .iter()
                .filter(|s| !env_now.iter().any(|(var, _)| var == &s.var));
            secrets.extend(new.cloned());
            added.push((name.clone(), entry));
            out.moved.push(name.clone());
        }
    }
}

/// Puts each client back as it was before its moves, newest move first.
pub fn restore(
    clients: &[Client],
    paths: &ClientPaths,
    target: &Target,
) -> Result<Vec<Restored>, ClientError> {
    let steps = read_record(&target.record)?;
    let mut answers = Vec::new();
    for &client in clients {
        let mine: Vec<&Step> = steps.iter().filter(|s| s.client == client.name()).collect();
        // Servers also set aside by a client that stays moved stay in our config.
        let staying: Vec<&Step> = steps
            .iter()
            .filter(|s| !clients.iter().any(|c| c.name() == s.client))
            .collect();
        let mut restored = Restored {
            client: client.name(),
            file: found_file(client, paths),
            ..Restored::default()
        };
        if mine.is_empty() {
            restored.note = Some(NOT_MOVED.into());
            answers.push(restored);
            continue;
        }
        put_back(client, paths, &mine, &mut restored)?;
        let handed_on = take_out(target, &mine, &staying, &mut restored)?;
        update_record(&target.record, |steps| {
            steps.retain(|s| s.client != client.name());
            hand_on(steps, handed_on);
        })?;
        answers.push(restored);
    }
    Ok(answers)
}

fn found_file(client: Client, paths: &ClientPaths) -> PathBuf {
    client
        .config_file(Scope::User, paths)
        .map(|f| file::resolve(&f))
        .unwrap_or_default()
}

/// The client's file as it was: the backup written back while the file is what the move
/// wrote, else our entry taken out and the set-aside servers put back.
fn put_back(
    client: Client,
    paths: &ClientPaths,
    steps: &[&Step],
    out: &mut Restored,
) -> Result<(), ClientError> {
    out.put_back = steps.iter().flat_map(|s| s.fronted.clone()).collect();
    for step in steps.iter().rev() {
        let now = std::fs::read(&step.file).ok();
        let original = step.backup.as_ref().map(std::fs::read);
        match (now, original) {
            (Some(now), Some(Ok(original))) if digest(&now) == step.written => {
                let private = file::is_private(&step.file).unwrap_or(true);
                file::write(&step.file, &original, private)?;
            }
            (Some(now), None) if digest(&now) == step.written => {
                std::fs::remove_file(&step.file).map_err(|e| write_error(&step.file, e))?;
            }
            _ => {
                super::unwrite(client, Scope::User, paths)?;
                out.note = Some(format!(
                    "{} changed since the move: our entry was taken out and the servers put \
                     back, the rest kept as it is now",
                    step.file.display()
                ));
                return Ok(());
            }
        }
    }
    out.exact = true;
    Ok(())
}

/// Takes out of our config the servers these steps added, unless changed since or set aside
/// by a client that stays moved, and their variables out of the `.env` file.
fn take_out(
    target: &Target,
    steps: &[&Step],
    staying: &[&Step],
    out: &mut Restored,
) -> Result<Vec<Handed>, ClientError> {
    let config = &target.config;
    let _held = lock(config)?;
    let Some(text) = file::read(config)? else {
        return Ok(Vec::new());
    };
    let key = servers_key(&text);
    let (ours, _) = json_file::servers(&text, config, key, false)?;
    let mut secrets = Vec::new();
    let mut handed_on = Vec::new();
    for step in steps {
        for (name, entry) in &step.added {
            let elsewhere = staying.iter().any(|o| o.fronted.contains(name));
            if ours.get(name) != Some(entry) {
                out.kept.push(name.clone());
            } else if elsewhere {
                out.kept.push(name.clone());
                let vars = step
                    .secrets
                    .iter()
                    .filter(|v| v.starts_with(&secret_prefix(name)));
                handed_on.push((name.clone(), entry.clone(), vars.cloned().collect()));
            } else {
                out.removed.push(name.clone());
                secrets.extend(
                    step.secrets
                        .iter()
                        .filter(|v| v.starts_with(&secret_prefix(name))),
                );
            }
        }
    }
    if !out.removed.is_empty() {
        let new = json_file::remove_servers(&text, config, key, &out.removed)?;
        let private = file::is_private(config).unwrap_or(true);
        file::write(config, new.as_bytes(), private)?;
        remove_env(&target.env_file, &secrets)?;
    }
    Ok(handed_on)
}

/// A server left in our config for a client that stays moved, with its variables.
type Handed = (String, Value, Vec<String>);

/// A server kept for a client that stays moved becomes that client's to take out later.
fn hand_on(steps: &mut [Step], servers: Vec<Handed>) {
    for (name, entry, vars) in servers {
        if let Some(step) = steps.iter_mut().find(|s| s.fronted.contains(&name)) {
            if !step.added.iter().any(|(n, _)| *n == name) {
                step.added.push((name, entry));
                step.secrets.extend(vars);
            }
        }
    }
}

/// `servers` when our config is in VS Code's shape, else `mcpServers`.
fn servers_key(text: &str) -> &'static str {
    let value: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    if value.get("servers").is_some() && value.get("mcpServers").is_none() {
        "servers"
    } else {
        "mcpServers"
    }
}

fn digest(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// The lock on our config (`<config>.lock`): moves and restores that run at once take turns.
fn lock(config: &Path) -> Result<nix::fcntl::Flock<std::fs::File>, ClientError> {
    make_parent(config)?;
    let name = config.file_name().unwrap_or_default().to_string_lossy();
    let path = config.with_file_name(format!("{name}.lock"));
    crate::files::lock(&path).map_err(|e| write_error(&path, e))
}

fn make_parent(path: &Path) -> Result<(), ClientError> {
    match path.parent() {
        Some(dir) => std::fs::create_dir_all(dir).map_err(|e| write_error(dir, e)),
        None => Ok(()),
    }
}

fn write_error(path: &Path, e: std::io::Error) -> ClientError {
    ClientError::Write {
        path: path.to_path_buf(),
        reason: e.to_string(),
    }
}

/// The `.env` file's pairs (none when it does not exist).
fn read_env(path: &Path) -> Result<Vec<(String, String)>, ClientError> {
    let Some(text) = file::read(path)? else {
        return Ok(Vec::new());
    };
    crate::config::dotenv::parse(&text).map_err(|bad| ClientError::Invalid {
        path: path.to_path_buf(),
        line: bad.line,
        column: 1,
        format: ".env",
        message: bad.reason,
    })
}

/// Adds `VAR='value'` lines to the `.env` file (owner-only), under its lock.
fn append_env(path: &Path, secrets: &[Secret]) -> Result<(), ClientError> {
    if secrets.is_empty() {
        return Ok(());
    }
    make_parent(path)?;
    crate::files::update_locked(path, |current| {
        let mut text = current.unwrap_or_default();
        if !text.is_empty() && !text.ends_with(b"\n") {
            text.push(b'\n');
        }
        for secret in secrets {
            text.extend(format!("{}={}\n", secret.var, quoted(&secret.value)).into_bytes());
        }
        Some(text)
    })
    .map_err(|e| write_error(path, e))
}

/// Drops the lines of `vars` from the `.env` file.
fn remove_env(path: &Path, vars: &[&String]) -> Result<(), ClientError> {
    if vars.is_empty() || !path.exists() {
        return Ok(());
    }
    crate::files::update_locked(path, |current| {
        let text = String::from_utf8(current?).ok()?;
        let kept: String = text
            .split_inclusive('\n')
            .filter(|line| {
                let line = line.trim_start();
                let line = line.strip_prefix("export ").unwrap_or(line);
                !vars.iter().any(|v| line.starts_with(&format!("{v}=")))
            })
            .collect();
        Some(kept.into_bytes())
    })
    .map_err(|e| write_error(path, e))
}

/// A value as our `.env` parser reads it back unchanged: single quotes (literal) when they
/// can hold it, else double quotes with escapes.
fn quoted(value: &str) -> String {
    if !value.contains(['\'', '\n', '\r']) {
        return format!("'{value}'");
    }
    let escaped = value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
        .replace('\r', "\\r");
    format!("\"{escaped}\"")
}

fn read_record(path: &Path) -> Result<Vec<Step>, ClientError> {
    let Some(text) = file::read(path)? else {
        return Ok(Vec::new());
    };
    serde_json::from_str(&text).map_err(|e| {
        let (line, column) = crate::error::json_position(&text, &e);
        ClientError::Invalid {
            path: path.to_path_buf(),
            line,
            column,
            format: "JSON",
            message: e.to_string(),
        }
    })
}

/// Changes the record under its lock.
fn update_record(path: &Path, change: impl FnOnce(&mut Vec<Step>)) -> Result<(), ClientError> {
    make_parent(path)?;
    let mut failed = None;
    crate::files::update_locked(path, |current| {
        let mut steps: Vec<Step> = match current {
            Some(bytes) => match serde_json::from_slice(&bytes) {
                Ok(steps) => steps,
                Err(e) => {
                    failed = Some(e.to_string());
                    return None;
                }
            },
            None => Vec::new(),
        };
        change(&mut steps);
        serde_json::to_vec_pretty(&steps).ok()
    })
    .map_err(|e| write_error(path, e))?;
    match failed {
        Some(reason) => Err(ClientError::Unreadable {
            path: path.to_path_buf(),
            reason,
        }),
        None => Ok(()),
    }
}
