//! What each client on this machine runs: its user file read (never written), our entry told
//! apart from the servers it still starts itself, and each of those turned into the entry our
//! config would hold (`command`/`args`/`env`/`cwd`, or `type`/`url`/`headers`), with its
//! references rewritten to our `${VAR}` and its literal secrets named for the `.env` file.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::client::Format;
use super::literal;
use super::{file, json_file, toml_file, Client, ClientError, ClientPaths, Scope, ENTRY};

/// One of a client's files, as found.
#[derive(Debug)]
pub struct Found {
    /// The client.
    pub client: Client,
    /// Which of its files this is.
    pub scope: FoundScope,
    /// The VS Code profile's name, for [`FoundScope::Profile`].
    pub profile: Option<String>,
    /// The file (symlinks resolved).
    pub file: PathBuf,
    /// Whether the file exists.
    pub exists: bool,
    /// Why the file could not be read; nothing else is known then.
    pub error: Option<ClientError>,
    /// Whether the file has an entry that runs or reaches `mcp-launch serve`.
    pub gateway: bool,
    /// The servers the client starts or reaches on its own.
    pub servers: Vec<OwnServer>,
    /// Servers an earlier `--write`/`clients move` set aside in the file.
    pub set_aside: Vec<String>,
}

/// Which of a client's files a [`Found`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FoundScope {
    /// The user's file: every project sees its servers.
    User,
    /// The working directory's file (`.mcp.json`, `.cursor/mcp.json`, `opencode.json`, …):
    /// shared with everyone who checks the project out.
    Project,
    /// Claude Code's servers for the working directory only, kept in the user's
    /// `.claude.json` under `projects.<dir>.mcpServers` (its "local" scope).
    Local,
    /// A VS Code profile other than the default one (`User/profiles/<id>/mcp.json`).
    Profile,
}

impl FoundScope {
    /// The name `clients` prints and `--json` carries.
    pub fn name(self) -> &'static str {
        match self {
            FoundScope::User => "user",
            FoundScope::Project => "project",
            FoundScope::Local => "local",
            FoundScope::Profile => "profile",
        }
    }
}

/// A server a client runs on its own.
#[derive(Debug, Clone)]
pub struct OwnServer {
    /// Its name in the client's file.
    pub name: String,
    /// `stdio`, `http` or `sse`.
    pub transport: &'static str,
    /// The command line or the URL, for people.
    pub target: String,
    /// Whether the client has it switched off.
    pub disabled: bool,
    /// The entry our config would hold (values that were secrets refer to [`Secret::var`]),
    /// or why it cannot move (a reference only the client understands).
    pub entry: Result<Map<String, Value>, String>,
    /// The literal values of `env` and `headers`, which go to the `.env` file.
    pub secrets: Vec<Secret>,
}

/// A literal value of a moved server's `env` or `headers`, kept in our `.env` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Secret {
    /// The variable's name: `SERVER_KEY` upper-cased (a name the shell is unlikely to hold,
    /// since the process environment wins over the `.env` file).
    pub var: String,
    /// The value.
    pub value: String,
}

/// Reads `client`'s user file.
pub fn find(client: Client, paths: &ClientPaths) -> Found {
    let path = user_file(client, paths);
    let text = file::read(&path);
    found_in(client, FoundScope::User, path, text, |text, path| {
        read_servers(client, text, path)
    })
}

/// Reads `client`'s user file, and the files that hold servers for the working directory
/// only: its project file when it has one there (and it is not its user file: in the home
/// directory `.cursor/mcp.json` is both), and for Claude Code this directory's entry in
/// `.claude.json` — read from the same text as the user file (it can be many megabytes).
/// Files that do not exist, and a local entry with no servers, are left out of the second.
pub fn find_with_project(client: Client, paths: &ClientPaths) -> (Found, Vec<Found>) {
    let path = user_file(client, paths);
    let text = file::read(&path);
    let (user, local) = match (client, client.format(), &text) {
        (Client::ClaudeCode, Format::Json { servers_key, .. }, Ok(Some(text))) => {
            claude_code_found(&path, text, servers_key, paths)
        }
        _ => {
            let user = found_in(client, FoundScope::User, path, text, |text, path| {
                read_servers(client, text, path)
            });
            (user, None)
        }
    };
    let mut in_project: Vec<Found> = project_found(client, paths, &user.file)
        .into_iter()
        .collect();
    in_project.extend(local);
    (user, in_project)
}

/// `client`'s user file (symlinks resolved); empty when the client has none here.
fn user_file(client: Client, paths: &ClientPaths) -> PathBuf {
    client
        .config_file(Scope::User, paths)
        .map(|f| file::resolve(&f))
        .unwrap_or_default()
}

/// `client`'s project file in the working directory, when there is one and it is not `user`.
fn project_found(client: Client, paths: &ClientPaths, user: &Path) -> Option<Found> {
    let project = file::resolve(&client.config_file(Scope::Project, paths).ok()?);
    if !project.exists() || project == user {
        return None;
    }
    let text = file::read(&project);
    Some(found_in(
        client,
        FoundScope::Project,
        project,
        text,
        |text, path| read_servers(client, text, path),
    ))
}

/// Claude Code's user file from `.claude.json`'s `text`, and its servers for the working
/// directory unless none, from one parse.
fn claude_code_found(
    path: &Path,
    text: &str,
    servers_key: &str,
    paths: &ClientPaths,
) -> (Found, Option<Found>) {
    let client = Client::ClaudeCode;
    let dir = paths.cwd.display().to_string();
    let (servers, aside, local) =
        match json_file::claude_code_servers(text, path, servers_key, &dir) {
            Ok(read) => read,
            Err(e) => {
                let user = found_in(
                    client,
                    FoundScope::User,
                    path.into(),
                    Ok(Some(text)),
                    |_, _| Err(e),
                );
                return (user, None);
            }
        };
    let aside = aside.keys().cloned().collect();
    let user = found_in(
        client,
        FoundScope::User,
        path.into(),
        Ok(Some(text)),
        |_, _| Ok((servers, aside)),
    );
    let local = found_in(
        client,
        FoundScope::Local,
        path.into(),
        Ok(Some(text)),
        |_, _| Ok((local, Vec::new())),
    );
    let any = local.error.is_none() && (local.gateway || !local.servers.is_empty());
    (user, any.then_some(local))
}

/// The `mcp.json` of each VS Code profile other than the default one that has one, named as
/// VS Code names the profile (`userDataProfiles` in `User/globalStorage/storage.json`; the
/// profile's directory name when that file does not say).
pub fn find_vscode_profiles(paths: &ClientPaths) -> Vec<Found> {
    let Ok(default) = Client::VsCode.config_file(Scope::User, paths) else {
        return Vec::new();
    };
    let Some(user_dir) = default.parent() else {
        return Vec::new();
    };
    let names = profile_names(&user_dir.join("globalStorage/storage.json"));
    let Ok(dirs) = std::fs::read_dir(user_dir.join("profiles")) else {
        return Vec::new();
    };
    let mut ids: Vec<String> = dirs
        .filter_map(|d| d.ok()?.file_name().into_string().ok())
        .collect();
    ids.sort();
    ids.into_iter()
        .filter_map(|id| {
            let path = file::resolve(&user_dir.join("profiles").join(&id).join("mcp.json"));
            if !path.exists() {
                return None;
            }
            let text = file::read(&path);
            let mut found = found_in(
                Client::VsCode,
                FoundScope::Profile,
                path,
                text,
                |text, path| read_servers(Client::VsCode, text, path),
            );
            found.profile = Some(names.get(&id).cloned().unwrap_or(id));
            Some(found)
        })
        .collect()
}

/// Profile names by directory, from VS Code's `storage.json` (empty when unreadable).
fn profile_names(storage: &Path) -> std::collections::HashMap<String, String> {
    let text = file::read(storage).ok().flatten().unwrap_or_default();
    let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    value["userDataProfiles"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| {
            Some((
                p["location"].as_str()?.to_string(),
                p["name"].as_str()?.to_string(),
            ))
        })
        .collect()
}

/// The servers of `client`'s file in its format, and the names set aside in it.
fn read_servers(
    client: Client,
    text: &str,
    path: &Path,
) -> Result<(Map<String, Value>, Vec<String>), ClientError> {
    match client.format() {
        Format::Json { servers_key, jsonc } => json_file::servers(text, path, servers_key, jsonc)
            .map(|(servers, aside)| (servers, aside.keys().cloned().collect())),
        Format::Toml => toml_file::servers(text, path),
    }
}

/// Sorts the servers `read` finds in `path`'s `text` into ours and the client's own.
fn found_in<T: AsRef<str>>(
    client: Client,
    scope: FoundScope,
    path: PathBuf,
    text: Result<Option<T>, ClientError>,
    read: impl FnOnce(&str, &Path) -> Result<(Map<String, Value>, Vec<String>), ClientError>,
) -> Found {
    let mut found = Found {
        client,
        scope,
        profile: None,
        file: path,
        exists: false,
        error: None,
        gateway: false,
        servers: Vec::new(),
        set_aside: Vec::new(),
    };
    let text = match text {
        Ok(Some(text)) => text,
        Ok(None) => return found,
        Err(e) => {
            found.exists = found.file.exists();
            found.error = Some(e);
            return found;
        }
    };
    found.exists = true;
    let (servers, set_aside) = match read(text.as_ref(), &found.file) {
        Ok(read) => read,
        Err(e) => {
            found.error = Some(e);
            return found;
        }
    };
    found.set_aside = set_aside;
    for (name, raw) in servers {
        if name == ENTRY || runs_gateway(&raw) {
            found.gateway = true;
            continue;
        }
        found.servers.push(own_server(client, name, &raw));
    }
    found
}

/// An entry that starts `mcp-launch serve` (whatever its name).
fn runs_gateway(raw: &Value) -> bool {
    let words: Vec<&str> = match &raw["command"] {
        Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
        Value::String(command) => std::iter::once(command.as_str())
            .chain(
                raw["args"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str),
            )
            .collect(),
        _ => return false,
    };
    let program = words.first().map(|p| Path::new(p).file_name());
    program == Some(Some("mcp-launch".as_ref())) && words.get(1) == Some(&"serve")
}

/// The entry in our shape, read from the client's dialect.
fn own_server(client: Client, name: String, raw: &Value) -> OwnServer {
    let mut server = OwnServer {
        name,
        transport: "stdio",
        target: String::new(),
        disabled: is_disabled(raw),
        entry: Err(String::new()),
        secrets: Vec::new(),
    };
    server.entry = entry(client, raw, &mut server);
    server
}

fn is_disabled(raw: &Value) -> bool {
    raw["disabled"] == Value::Bool(true) || raw["enabled"] == Value::Bool(false)
}

fn entry(
    client: Client,
    raw: &Value,
    server: &mut OwnServer,
) -> Result<Map<String, Value>, String> {
    let Value::Object(raw_map) = raw else {
        server.target = "(not an object)".into();
        return Err("the entry is not an object".into());
    };
    let mut out = Map::new();
    let url = remote_url(client, raw_map);
    if let Some((url, transport)) = url {
        server.transport = transport;
        server.target = literal::url(&server.name, url, &mut Vec::new()).shown;
        if transport == "sse" {
            out.insert("type".into(), "sse".into());
        }
        let url = literal::url(&server.name, &reference(client, url)?, &mut server.secrets);
        out.insert("url".into(), url.config.into());
        let headers = headers(client, raw_map);
        if !headers.is_empty() {
            let headers = secrets_of(client, &server.name, headers, &mut server.secrets)?;
            out.insert("headers".into(), Value::Object(headers));
        }
    } else {
        let (command, args) = command_line(client, raw_map)
            .ok_or_else(|| "it has neither a command nor a URL".to_string())?;
        server.target = std::iter::once(command.clone())
            .chain(literal::args(&server.name, &args, &mut Vec::new()).shown)
            .collect::<Vec<_>>()
            .join(" ");
        out.insert("command".into(), reference(client, &command)?.into());
        let args: Result<Vec<String>, String> = args.iter().map(|a| reference(client, a)).collect();
        let args = literal::args(&server.name, &args?, &mut server.secrets);
        out.insert("args".into(), args.config.into());
        let env = environment(client, raw_map);
        if !env.is_empty() {
            let env = secrets_of(client, &server.name, env, &mut server.secrets)?;
            out.insert("env".into(), Value::Object(env));
        }
        if let Some(cwd) = raw_map.get("cwd").and_then(Value::as_str) {
            out.insert("cwd".into(), reference(client, cwd)?.into());
        }
    }
    if server.disabled {
        out.insert("disabled".into(), true.into());
    }
    Ok(out)
}

/// The URL of a remote server and its transport, in the client's keys.
fn remote_url(client: Client, raw: &Map<String, Value>) -> Option<(&str, &'static str)> {
    let text = |key: &str| raw.get(key).and_then(Value::as_str);
    let sse = matches!(text("type"), Some("sse"));
    match client {
        Client::GeminiCli => text("httpUrl")
            .map(|u| (u, "http"))
            .or_else(|| text("url").map(|u| (u, "sse"))),
        Client::Windsurf => text("serverUrl")
            .or_else(|| text("url"))
            .map(|u| (u, "http")),
        _ if text("command").is_some() || raw.get("command").is_some_and(Value::is_array) => None,
        _ => text("url").map(|u| (u, if sse { "sse" } else { "http" })),
    }
}

/// The command and arguments: OpenCode's one array, or `command` + `args`.
fn command_line(client: Client, raw: &Map<String, Value>) -> Option<(String, Vec<String>)> {
    let strings = |v: &Value| -> Option<Vec<String>> {
        v.as_array()?
            .iter()
            .map(|s| s.as_str().map(String::from))
            .collect()
    };
    if client == Client::OpenCode {
        let mut words = strings(raw.get("command")?)?;
        if words.is_empty() {
            return None;
        }
        let command = words.remove(0);
        return Some((command, words));
    }
    let command = raw.get("command")?.as_str()?.to_string();
    let args = raw.get("args").map_or(Some(Vec::new()), strings)?;
    Some((command, args))
}

/// The variables a local server gets, in the client's keys (Codex's `env_vars` forward the
/// client's own variables by name).
fn environment(client: Client, raw: &Map<String, Value>) -> Vec<Pair> {
    let key = if client == Client::OpenCode {
        "environment"
    } else {
        "env"
    };
    let mut env = pairs(raw, key);
    if client == Client::Codex {
        for name in raw
            .get("env_vars")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(name) = name.as_str() {
                env.push(ours(name, format!("${{{name}}}")));
            }
        }
    }
    env
}

/// A key and value of `env` or `headers`; `is_ours` when already written as our reference.
type Pair = (String, Value, bool);

fn pairs(raw: &Map<String, Value>, key: &str) -> Vec<Pair> {
    raw.get(key)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.clone(), false))
                .collect()
        })
        .unwrap_or_default()
}

fn ours(key: &str, value: String) -> Pair {
    (key.to_string(), value.into(), true)
}

/// The headers a remote server gets (Codex: `http_headers`, `env_http_headers` and
/// `bearer_token_env_var`).
fn headers(client: Client, raw: &Map<String, Value>) -> Vec<Pair> {
    if client != Client::Codex {
        return pairs(raw, "headers");
    }
    let mut headers = pairs(raw, "http_headers");
    for (header, var, _) in pairs(raw, "env_http_headers") {
        if let Some(var) = var.as_str() {
            headers.push(ours(&header, format!("${{{var}}}")));
        }
    }
    if let Some(var) = raw.get("bearer_token_env_var").and_then(Value::as_str) {
        headers.push(ours("Authorization", format!("Bearer ${{{var}}}")));
    }
    headers
}

/// `env` or `headers` for our config: references rewritten, literal values moved out to
/// `secrets` and referred to by variable.
fn secrets_of(
    client: Client,
    server: &str,
    pairs: Vec<Pair>,
    secrets: &mut Vec<Secret>,
) -> Result<Map<String, Value>, String> {
    let mut out = Map::new();
    for (key, value, is_ours) in pairs {
        if is_ours {
            out.insert(key, value);
            continue;
        }
        let text = match &value {
            Value::String(s) => s.clone(),
            Value::Number(_) | Value::Bool(_) => value.to_string(),
            _ => return Err(format!("{key} is not a string")),
        };
        let rewritten = reference(client, &text)?;
        if rewritten != text || has_reference(client, &text) {
            out.insert(key, rewritten.into());
            continue;
        }
        let var = secret_name(server, &key);
        out.insert(key, format!("${{{var}}}").into());
        secrets.push(Secret { var, value: text });
    }
    Ok(out)
}

/// `SERVER_KEY`, upper-cased, anything but letters and digits made `_`.
fn secret_name(server: &str, key: &str) -> String {
    secret_prefix(server) + &upper(key)
}

/// The start of every variable of `server`'s secrets: `SERVER_` (`_` first when it would
/// start with a digit).
pub(super) fn secret_prefix(server: &str) -> String {
    let name = upper(server);
    let lead = if name.starts_with(|c: char| c.is_ascii_digit()) {
        "_"
    } else {
        ""
    };
    format!("{lead}{name}_")
}

pub(super) fn upper(text: &str) -> String {
    let keep = |c: char| c.is_ascii_alphanumeric();
    text.chars()
        .map(|c| if keep(c) { c.to_ascii_uppercase() } else { '_' })
        .collect()
}

/// Whether `text` refers to a variable the client fills in (`${VAR}` in those that do).
fn has_reference(client: Client, text: &str) -> bool {
    interpolates(client) && text.contains("${")
}

/// Clients that fill in `${…}` themselves (Claude Desktop and Codex take values literally).
fn interpolates(client: Client) -> bool {
    !matches!(client, Client::ClaudeDesktop | Client::Codex)
}

/// `text` with the client's variable references written as ours (`${VAR}`); an error names a
/// reference only the client can resolve (`${input:…}`, `${workspaceFolder}`, `{file:…}`).
fn reference(client: Client, text: &str) -> Result<String, String> {
    if !interpolates(client) {
        return Ok(text.to_string());
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(['$', '{']) {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let (written, used) = one_reference(client, tail)?;
        out.push_str(&written);
        rest = &tail[used..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The reference at the start of `tail` in our syntax, and how many bytes it took.
fn one_reference(client: Client, tail: &str) -> Result<(String, usize), String> {
    let braced = |open: &str| -> Option<(&str, usize)> {
        let body = tail.strip_prefix(open)?;
        let end = body.find('}')?;
        Some((&body[..end], open.len() + end + 1))
    };
    if let Some((body, used)) = braced("${") {
        let name = body.strip_prefix("env:").unwrap_or(body);
        let bare = name.split(":-").next().unwrap_or(name);
        if crate::config::interpolate::is_variable_name(bare) {
            return Ok((format!("${{{name}}}"), used));
        }
        return Err(format!(
            "it uses ${{{body}}}, which only {client} can fill in"
        ));
    }
    if client == Client::OpenCode {
        if let Some((body, used)) = braced("{") {
            if let Some(name) = body.strip_prefix("env:") {
                return Ok((format!("${{{name}}}"), used));
            }
            if body.starts_with("file:") {
                return Err(format!(
                    "it uses {{{body}}}, which only {client} can fill in"
                ));
            }
        }
    }
    if client == Client::GeminiCli {
        if let Some(body) = tail.strip_prefix('$') {
            let len = body
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(body.len());
            if len > 0 && crate::config::interpolate::is_variable_name(&body[..len]) {
                return Ok((format!("${{{}}}", &body[..len]), len + 1));
            }
        }
    }
    let first = tail.chars().next().map_or(1, char::len_utf8);
    Ok((tail[..first].to_string(), first))
}
