//! What a config would run and send, for a person deciding whether to trust it
//! (`mcp-launch trust`): each server's command, arguments, URL, `headers` and `env` blocks as
//! written (templates, not values), and every variable each server receives, with where its
//! value would come from. Names only: a resolved value is never part of a preview.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::error::ConfigError;
use super::file;
use super::interpolate::interpolate;
use super::server::{self, Context};
use super::shape::{self, Shape};
use super::variables::Variables;
use super::LoadOptions;

/// Where a variable's value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarSource {
    /// The process environment of whoever runs mcp-launch.
    Environment,
    /// A `.env` file (`./.env`, an `--env-file`, `~/.claude/.env`).
    EnvFile,
    /// The config itself (a key of the entry's `env` block).
    Config,
    /// Set nowhere: its `${NAME:-default}` default is used, or the server fails to load.
    Unset,
}

impl VarSource {
    /// Words for people.
    pub fn as_str(self) -> &'static str {
        match self {
            VarSource::Environment => "your environment",
            VarSource::EnvFile => ".env",
            VarSource::Config => "this config",
            VarSource::Unset => "unset",
        }
    }
}

/// One variable a server receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The variable's name.
    pub name: String,
    /// Where its value comes from.
    pub source: VarSource,
    /// Where it goes, in entry order: `command`, `args`, `env NAME`, `url`, `header NAME`.
    pub into: Vec<String>,
}

/// One server as a person deciding on trust should see it.
#[derive(Debug, Clone)]
pub struct ServerPreview {
    /// The key under `mcpServers` / `servers`.
    pub name: String,
    /// `"disabled": true` in the file.
    pub disabled: bool,
    /// `stdio`, `http`, `sse`, or `invalid`.
    pub transport: &'static str,
    /// The program (stdio), as written.
    pub command: Option<String>,
    /// Its arguments, as written.
    pub args: Vec<String>,
    /// Its working directory, as written.
    pub cwd: Option<String>,
    /// The endpoint (remote), as written.
    pub url: Option<String>,
    /// Headers sent to it, values as written.
    pub headers: Vec<(String, String)>,
    /// The `env` block, values as written.
    pub env: Vec<(String, String)>,
    /// True for a local process: it inherits the whole environment of mcp-launch (less our
    /// own keys), and `receives` lists what is set on top or placed in its command line.
    pub inherits_environment: bool,
    /// Every variable it receives, sorted by name.
    pub receives: Vec<Received>,
    /// Why it would not load, when it would not.
    pub problem: Option<ConfigError>,
}

/// The preview of one config file and the `.env` files read with it.
#[derive(Debug, Clone)]
pub struct Preview {
    /// Its servers, in file order.
    pub servers: Vec<ServerPreview>,
    /// The names (never the values) every `.env` file read with it sets.
    pub env_file_names: Vec<String>,
}

/// Previews the config at `path` as [`super::load`] would read it with `opts` (a file in the
/// working directory is guarded as a discovered one).
pub fn preview(opts: &LoadOptions, path: &Path) -> Result<Preview, ConfigError> {
    let (vars, _) = super::variables(opts, Some(path))?;
    let raw = std::fs::read_to_string(path).map_err(|err| ConfigError::ConfigUnreadable {
        path: path.to_path_buf(),
        reason: err.to_string(),
    })?;
    let root: Value =
        serde_json::from_str(&raw).map_err(|err| file::invalid_json(path, &raw, &err))?;
    let mut servers = Vec::new();
    for (_, section) in file::sections(path, &root)? {
        for (name, value) in section {
            if servers.iter().any(|s: &ServerPreview| &s.name == name) {
                continue;
            }
            servers.push(server_preview(path, name, value, &vars));
        }
    }
    Ok(Preview {
        servers,
        env_file_names: vars.env_file_names().map(str::to_string).collect(),
    })
}

fn server_preview(path: &Path, name: &str, value: &Value, vars: &Variables<'_>) -> ServerPreview {
    let ctx = Context {
        path,
        line: None,
        server: name,
        vars,
        named: Default::default(),
    };
    let problem = server::build(value, &ctx).err();
    let mut preview = ServerPreview {
        name: name.to_string(),
        disabled: shape::is_disabled(value),
        transport: "invalid",
        command: None,
        args: Vec::new(),
        cwd: None,
        url: None,
        headers: Vec::new(),
        env: Vec::new(),
        inherits_environment: false,
        receives: Vec::new(),
        problem,
    };
    let mut seen = Seen::new(vars);
    match Shape::of(value) {
        Ok(Shape::Stdio {
            command,
            args,
            env,
            cwd,
        }) => {
            preview.transport = "stdio";
            preview.inherits_environment = true;
            seen.scan(command, "command");
            args.iter().for_each(|arg| seen.scan(arg, "args"));
            for (key, text) in &env {
                seen.set(key);
                seen.scan(text, &format!("env {key}"));
            }
            preview.command = Some(command.to_string());
            preview.args = args.into_iter().map(str::to_string).collect();
            preview.cwd = cwd.map(str::to_string);
            preview.env = owned(env);
        }
        Ok(Shape::Http {
            url,
            headers,
            oauth,
        }) => {
            if let Some(oauth) = &oauth {
                if let Some(id) = oauth.client_id {
                    seen.scan(id, "oauth.clientId");
                }
                if let Some(url) = oauth.metadata_url {
                    seen.scan(url, "oauth.authServerMetadataUrl");
                }
                if let Some(url) = oauth.client_metadata_url {
                    seen.scan(url, "oauth.clientMetadataUrl");
                }
                if let Some(secret) = oauth.client_secret {
                    seen.scan(secret, "oauth.clientSecret");
                }
            }
            remote(&mut preview, &mut seen, value, url, headers);
        }
        Ok(Shape::Sse { url, headers }) => remote(&mut preview, &mut seen, value, url, headers),
        Err(_) => {}
    }
    preview.receives = seen.into_received();
    preview
}

/// What a remote entry sends: its URL and headers (its `env` block only declares).
fn remote(
    preview: &mut ServerPreview,
    seen: &mut Seen<'_>,
    value: &Value,
    url: &str,
    headers: Vec<(&str, &str)>,
) {
    preview.transport = value_transport(value);
    seen.scan(url, "url");
    for (key, text) in &headers {
        seen.scan(text, &format!("header {key}"));
    }
    preview.url = Some(url.to_string());
    preview.headers = owned(headers);
    preview.env = match value.get("env").and_then(Value::as_object) {
        Some(env) => env
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
            .collect(),
        None => Vec::new(),
    };
}

fn value_transport(value: &Value) -> &'static str {
    match Shape::of(value) {
        Ok(Shape::Sse { .. }) => "sse",
        Ok(Shape::Stdio { .. }) => "stdio",
        _ => "http",
    }
}

fn owned(pairs: Vec<(&str, &str)>) -> Vec<(String, String)> {
    pairs
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The variables met so far, by name.
struct Seen<'v> {
    vars: &'v Variables<'v>,
    by_name: BTreeMap<String, Received>,
}

impl<'v> Seen<'v> {
    fn new(vars: &'v Variables<'v>) -> Self {
        Seen {
            vars,
            by_name: BTreeMap::new(),
        }
    }

    /// Records every `${VAR}` in `text` as going `into` there.
    fn scan(&mut self, text: &str, into: &str) {
        let names = RefCell::new(Vec::new());
        let _ = interpolate(text, |name| {
            names.borrow_mut().push(name.to_string());
            Some("")
        });
        for name in names.into_inner() {
            let source = self.vars.source(&name);
            self.note(name, source, into);
        }
    }

    /// Records a key of a stdio entry's `env` block: set on its environment by the config.
    fn set(&mut self, key: &str) {
        self.note(key.to_string(), VarSource::Config, "its environment");
    }

    fn note(&mut self, name: String, source: VarSource, into: &str) {
        let entry = self
            .by_name
            .entry(name.clone())
            .or_insert_with(|| Received {
                name,
                source,
                into: Vec::new(),
            });
        if !entry.into.iter().any(|place| place == into) {
            entry.into.push(into.to_string());
        }
    }

    fn into_received(self) -> Vec<Received> {
        self.by_name.into_values().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Every block and every variable is shown, and no value that a variable resolves to.
    #[test]
    fn a_preview_names_every_block_and_variable_but_no_value() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join(".mcp.json");
        let text = serde_json::json!({"mcpServers": {
            "local": {"command": "npx", "args": ["-y", "pkg", "--token=${GH_TOKEN}"],
                      "env": {"MODE": "fast", "DB": "${DB_URL}"}},
            "remote": {"url": "https://h/mcp", "headers": {"Authorization": "Bearer ${AWS_SECRET_ACCESS_KEY}"}}
        }});
        std::fs::write(&config, text.to_string()).unwrap();
        std::fs::write(dir.path().join(".env"), "DB_URL=postgres://secret@db\n").unwrap();
        let process: BTreeMap<String, String> = [
            ("GH_TOKEN".to_string(), "ghp_value".to_string()),
            ("AWS_SECRET_ACCESS_KEY".to_string(), "wJalr".to_string()),
        ]
        .into();
        let opts = LoadOptions {
            cwd: dir.path().to_path_buf(),
            process_env: process,
            ..Default::default()
        };
        let preview = preview(&opts, &config).unwrap();
        assert_eq!(preview.env_file_names, ["DB_URL"]);
        let local = &preview.servers[0];
        assert_eq!(local.transport, "stdio");
        assert!(local.inherits_environment);
        assert_eq!(local.args[2], "--token=${GH_TOKEN}");
        let names: Vec<_> = local
            .receives
            .iter()
            .map(|r| (r.name.as_str(), r.source, r.into.join(",")))
            .collect();
        assert_eq!(
            names,
            [
                ("DB", VarSource::Config, "its environment".to_string()),
                ("DB_URL", VarSource::EnvFile, "env DB".to_string()),
                ("GH_TOKEN", VarSource::Environment, "args".to_string()),
                ("MODE", VarSource::Config, "its environment".to_string()),
            ]
        );
        let remote = &preview.servers[1];
        assert_eq!(remote.headers[0].1, "Bearer ${AWS_SECRET_ACCESS_KEY}");
        assert_eq!(remote.receives[0].into, ["header Authorization"]);
        assert!(
            matches!(
                remote.problem,
                Some(ConfigError::UndeclaredUrlVariable { .. })
            ),
            "{:?}",
            remote.problem
        );
        let shown = format!("{preview:?}");
        for value in ["ghp_value", "wJalr", "postgres://secret"] {
            assert!(!shown.contains(value), "{value} in {shown}");
        }
    }
}
