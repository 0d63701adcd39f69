//! The mcpo controller: mcpo (the Python MCP→OpenAPI bridge) serves a stack's servers as
//! `POST /<server>/<tool>` on 127.0.0.1, behind our front.
//!
//! mcpo binds all interfaces unless told otherwise, so it always gets `--host 127.0.0.1`. It
//! connects to its servers one after another before it answers anything, so readiness is its
//! root `/openapi.json` answering; a server it cannot reach still gets a spec without paths
//! (the merge warns about those). A stdio server that hangs would hold mcpo's start-up forever,
//! which is why only servers our own preflight reached are handed to it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::config::{ServerEntry, ServerSpec};
use crate::duration::Setting;
use crate::process::{
    spawn_service, verify_listener, Exit, LineSink, Masker, ProcessGuard, SpawnError, SpawnSpec,
    Squatted,
};

/// Environment variable naming the mcpo executable (else `mcpo` on `PATH`).
pub use crate::pins::MCPO_ENV;

/// Environment variable bounding mcpo's start-up, in seconds.
pub const READY_TIMEOUT_ENV: &str = "MCP_LAUNCH_READY_TIMEOUT";

/// Default bound on mcpo's start-up: it connects servers one by one and a cold `npx`/`uvx`
/// download can take a minute on its own.
pub const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(120);

/// Lines of mcpo's output shown when it fails.
const TAIL_LINES: usize = 15;

/// Why mcpo did not come up or answer.
#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    /// mcpo is not installed (or not where `MCP_LAUNCH_MCPO` says).
    #[error("mcpo not found{}", .looked.as_ref().map(|p| format!(" at {} ({MCPO_ENV})", p.display())).unwrap_or_else(|| " on PATH".into()))]
    NotInstalled {
        /// The path from `MCP_LAUNCH_MCPO`, when set.
        looked: Option<PathBuf>,
    },
    /// mcpo could not be started.
    #[error("cannot start mcpo: {0}")]
    Spawn(#[from] SpawnError),
    /// mcpo ended before it answered.
    #[error("mcpo {exit} before it was ready{}", tail_suffix(.tail))]
    Exited {
        /// How it ended.
        exit: String,
        /// Its last output lines.
        tail: String,
        /// True when its output says the port was taken.
        port_taken: bool,
    },
    /// Something else listens on mcpo's port: it took the port between our check and mcpo's
    /// bind. It was sent nothing (the readiness probe carries no key) and mcpo is stopped.
    #[error("mcpo's {0}")]
    PortSquatted(Squatted),
    /// mcpo did not answer in time.
    #[error("mcpo did not answer within {}s{}", .waited.as_secs(), tail_suffix(.tail))]
    Timeout {
        /// How long we waited.
        waited: Duration,
        /// Its last output lines.
        tail: String,
    },
    /// mcpo's config file could not be written.
    #[error("cannot write mcpo's config {path}: {message}")]
    Config {
        /// The file.
        path: PathBuf,
        /// The operating system's message.
        message: String,
    },
    /// A directory on the way to mcpo's config is a symlink (planted in a checkout).
    #[error("{dir} is a symlink: mcpo's config (the servers' resolved secrets) is never written through one")]
    ConfigDirLinked {
        /// The directory.
        dir: PathBuf,
    },
    /// A per-server document could not be fetched.
    #[error("cannot fetch /{server}/openapi.json from mcpo: {message}")]
    Fetch {
        /// The server.
        server: String,
        /// What went wrong.
        message: String,
    },
}

fn tail_suffix(tail: &str) -> String {
    if tail.is_empty() {
        String::new()
    } else {
        format!("; its last output:\n{tail}")
    }
}

impl ControllerError {
    /// A stable name for the error envelope.
    pub fn kind(&self) -> &'static str {
        match self {
            ControllerError::NotInstalled { .. } => "mcpo_missing",
            ControllerError::Spawn(_) => "mcpo_spawn",
            ControllerError::Exited { .. } => "mcpo_exited",
            ControllerError::Timeout { .. } => "mcpo_timeout",
            ControllerError::PortSquatted(_) => "port_squatted",
            ControllerError::Config { .. } => "mcpo_config",
            ControllerError::ConfigDirLinked { .. } => "state_dir_escapes",
            ControllerError::Fetch { .. } => "mcpo_fetch",
        }
    }

    /// What to do about it.
    pub fn help(&self) -> String {
        let install = format!(
            "install it in a venv of its own with working pins: {}; `mcp-launch doctor` checks it",
            crate::pins::mcpo_install()
        );
        match self {
            ControllerError::NotInstalled { .. } | ControllerError::Spawn(_) => install,
            ControllerError::Exited { port_taken: true, .. } => {
                "another process took mcpo's port; pass --mcpo-port with a free base port".into()
            }
            ControllerError::Exited { tail, .. } if tail.contains("ImportError") || tail.contains("ModuleNotFoundError") => {
                format!("this mcpo install is broken; {install}")
            }
            ControllerError::Exited { .. } => {
                "run `mcp-launch up -v` to see mcpo's whole output; `mcp-launch doctor` checks the install".into()
            }
            ControllerError::Timeout { .. } => format!(
                "a server may be slow to start (first npx/uvx download); raise {READY_TIMEOUT_ENV} (seconds, default {}) or check `mcp-launch list`",
                DEFAULT_READY_TIMEOUT.as_secs()
            ),
            ControllerError::PortSquatted(squatted) => format!(
                "another process took mcpo's port before mcpo could bind it; it was sent no key. \
                 {}, or pass --mcpo-port with another base port",
                squatted.next_step()
            ),
            ControllerError::Config { .. } => "check that ./.mcp-launch/ is writable".into(),
            ControllerError::ConfigDirLinked { dir } => format!(
                "remove the symlink (`rm {}`) and run the command again: mcp-launch keeps a project's state inside the project",
                dir.display()
            ),
            ControllerError::Fetch { .. } => "see `mcp-launch status`; mcpo may be restarting".into(),
        }
    }
}

impl crate::error::Actionable for ControllerError {
    fn kind(&self) -> &'static str {
        ControllerError::kind(self)
    }
    fn help(&self) -> String {
        ControllerError::help(self)
    }
}

/// The mcpo executable: `MCP_LAUNCH_MCPO` when set, else `mcpo` on `PATH`.
pub fn find_mcpo() -> Result<PathBuf, ControllerError> {
    match std::env::var_os(MCPO_ENV).filter(|path| !path.is_empty()) {
        Some(path) => {
            let path = PathBuf::from(path);
            if path.is_file() {
                Ok(path)
            } else {
                Err(ControllerError::NotInstalled { looked: Some(path) })
            }
        }
        None => crate::process::which("mcpo").ok_or(ControllerError::NotInstalled { looked: None }),
    }
}

/// How long mcpo may take to serve, as a user sets it through [`READY_TIMEOUT_ENV`].
pub const READY_TIMEOUT: Setting = Setting::timeout(READY_TIMEOUT_ENV, DEFAULT_READY_TIMEOUT);

/// The ready timeout from `MCP_LAUNCH_READY_TIMEOUT`, else the default.
pub fn ready_timeout_from_env() -> Duration {
    READY_TIMEOUT.from_env_or_default()
}

/// mcpo's config for `servers` (their config names become the path prefixes). Values are the
/// resolved ones (`${VAR}` already substituted): mcpo does no interpolation of its own, so the
/// file is written owner-only.
pub fn config_for(servers: &[&ServerEntry]) -> Value {
    let mut out = Map::new();
    for entry in servers {
        let Ok(spec) = &entry.spec else { continue };
        out.insert(entry.name.clone(), server_config(spec));
    }
    json!({ "mcpServers": out })
}

fn server_config(spec: &ServerSpec) -> Value {
    let headers = |headers: &[(String, String)]| -> Value {
        headers
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect::<Map<_, _>>()
            .into()
    };
    match spec {
        ServerSpec::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            // mcpo has no working-directory setting: a shell changes into it and execs the
            // server, with every value passed as a positional parameter (nothing is parsed).
            let (command, args) = match cwd {
                Some(dir) => {
                    let mut wrapped = vec![
                        "-c".to_string(),
                        r#"cd "$0" && exec "$@""#.to_string(),
                        dir.display().to_string(),
                        command.clone(),
                    ];
                    wrapped.extend(args.iter().cloned());
                    ("/bin/sh".to_string(), wrapped)
                }
                None => (command.clone(), args.clone()),
            };
            let env: Map<String, Value> = env
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect();
            json!({ "command": command, "args": args, "env": env })
        }
        ServerSpec::Http {
            url, headers: h, ..
        } => {
            json!({ "type": "streamable-http", "url": url, "headers": headers(h) })
        }
        ServerSpec::Sse { url, headers: h } => {
            json!({ "type": "sse", "url": url, "headers": headers(h) })
        }
    }
}

/// Where stack `stack`'s mcpo config goes: `.mcp-launch/stacks/<stack>/mcpo.json` of the
/// project, its directories created owner-only, a symlink among them refused.
pub fn config_path(project_dir: &Path, stack: &str) -> Result<PathBuf, ControllerError> {
    match crate::project::private_subdir(project_dir, &["stacks", stack]) {
        Ok(dir) => Ok(dir.join("mcpo.json")),
        Err(Ok(dir)) => Err(ControllerError::ConfigDirLinked { dir }),
        Err(Err(e)) => Err(ControllerError::Config {
            path: crate::project::dir(project_dir).join("stacks").join(stack),
            message: e.to_string(),
        }),
    }
}

/// Writes mcpo's config to `path` (owner-only, atomically).
pub fn write_config(path: &Path, config: &Value) -> Result<(), ControllerError> {
    let bytes = serde_json::to_vec_pretty(config).unwrap_or_default();
    crate::files::write_private(path, &bytes).map_err(|e| ControllerError::Config {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// How to run one mcpo.
#[derive(Debug, Clone)]
pub struct McpoLaunch {
    /// The executable.
    pub program: PathBuf,
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// The key it checks (`Authorization: Bearer`); only our front knows it.
    pub key: String,
    /// Its config file.
    pub config: PathBuf,
    /// How long it may take to answer.
    pub ready_timeout: Duration,
}

impl McpoLaunch {
    /// mcpo's base URL.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn spawn_spec(&self, masker: &Masker) -> SpawnSpec {
        SpawnSpec {
            program: self.program.display().to_string(),
            args: vec![
                "--host".into(),
                "127.0.0.1".into(),
                "--port".into(),
                self.port.to_string(),
                "--api-key".into(),
                self.key.clone(),
                "--config".into(),
                self.config.display().to_string(),
            ],
            // Unbuffered, so its log lines reach us (and the user) as they happen.
            env: vec![("PYTHONUNBUFFERED".into(), "1".into())],
            cwd: None,
            // mcpo passes its servers' stderr through and logs each call's arguments.
            masker: masker.clone(),
        }
    }
}

/// Starts mcpo and waits until it answers, calling `progress` with the seconds waited about
/// once a second. Its output is masked by `masker` before anything stores or shows it. On
/// failure its process group is gone.
pub async fn start(
    launch: &McpoLaunch,
    client: &reqwest::Client,
    masker: &Masker,
    sink: LineSink,
    progress: &(dyn Fn(u64) + Send + Sync),
) -> Result<ProcessGuard, ControllerError> {
    let guard = spawn_service(&launch.spawn_spec(masker), sink)?;
    let started = Instant::now();
    let url = format!("{}/openapi.json", launch.base_url());
    let mut exit = guard.exit_watch();
    let mut last_progress = 0;
    loop {
        if let Some(status) = guard.exit_status() {
            return Err(exited(&guard, status).await);
        }
        if answers(client, &url).await {
            // Something answered: it must be mcpo, before the front sends it the key.
            return match guard.pgid().map(|pgid| verify_listener(launch.port, pgid)) {
                Some(Err(squatted)) => {
                    guard.shutdown().await;
                    Err(ControllerError::PortSquatted(squatted))
                }
                _ => Ok(guard),
            };
        }
        let waited = started.elapsed();
        if waited >= launch.ready_timeout {
            let tail = guard.stderr_tail(TAIL_LINES);
            guard.shutdown().await;
            return Err(ControllerError::Timeout { waited, tail });
        }
        if waited.as_secs() > last_progress {
            last_progress = waited.as_secs();
            progress(last_progress);
        }
        // Poll often: mcpo answers within a few hundred ms of its last server connecting.
        let _ = tokio::time::timeout(Duration::from_millis(100), exit.changed()).await;
    }
}

async fn exited(guard: &ProcessGuard, status: Exit) -> ControllerError {
    guard.settle(Duration::from_millis(500)).await;
    let tail = guard.stderr_tail(TAIL_LINES);
    let port_taken = tail.contains("address already in use") || tail.contains("Errno 98");
    ControllerError::Exited {
        exit: status.to_string(),
        tail,
        port_taken,
    }
}

async fn answers(client: &reqwest::Client, url: &str) -> bool {
    matches!(
        client.get(url).timeout(Duration::from_secs(2)).send().await,
        Ok(response) if response.status().is_success()
    )
}

/// Fetches each server's OpenAPI document from a running mcpo, in parallel.
pub async fn fetch_documents(
    client: &reqwest::Client,
    base_url: &str,
    key: &str,
    servers: &[String],
) -> Vec<Result<Value, ControllerError>> {
    let fetches = servers.iter().map(|server| async move {
        let url = format!("{base_url}/{server}/openapi.json");
        let fail = |message: String| ControllerError::Fetch {
            server: server.clone(),
            message,
        };
        let response = client
            .get(&url)
            .bearer_auth(key)
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .map_err(|e| fail(e.to_string()))?;
        if !response.status().is_success() {
            return Err(fail(format!("HTTP {}", response.status())));
        }
        response
            .json::<Value>()
            .await
            .map_err(|e| fail(e.to_string()))
    });
    futures_util::future::join_all(fetches).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdio_http_and_sse_servers_become_mcpo_entries() {
        let stdio = ServerSpec::Stdio {
            command: "npx".into(),
            args: vec!["-y".into(), "pkg".into()],
            env: vec![("TOKEN".into(), "t".into())],
            cwd: None,
        };
        assert_eq!(
            server_config(&stdio),
            json!({"command": "npx", "args": ["-y", "pkg"], "env": {"TOKEN": "t"}})
        );
        let in_dir = ServerSpec::Stdio {
            command: "srv".into(),
            args: vec!["a b".into()],
            env: vec![],
            cwd: Some("/some dir".into()),
        };
        assert_eq!(
            server_config(&in_dir)["args"],
            json!(["-c", r#"cd "$0" && exec "$@""#, "/some dir", "srv", "a b"])
        );
        let http = ServerSpec::Http {
            url: "http://h/mcp".into(),
            headers: vec![("X".into(), "y".into())],
            oauth: None,
        };
        assert_eq!(
            server_config(&http),
            json!({"type": "streamable-http", "url": "http://h/mcp", "headers": {"X": "y"}})
        );
        let sse = ServerSpec::Sse {
            url: "http://h/sse".into(),
            headers: vec![],
        };
        assert_eq!(server_config(&sse)["type"], "sse");
    }

    #[test]
    fn the_cwd_wrapper_runs_the_server_in_its_directory() {
        let dir = tempfile::tempdir().unwrap();
        let spec = ServerSpec::Stdio {
            command: "pwd".into(),
            args: vec![],
            env: vec![],
            cwd: Some(dir.path().to_path_buf()),
        };
        let config = server_config(&spec);
        let args: Vec<String> = serde_json::from_value(config["args"].clone()).unwrap();
        let out = std::process::Command::new(config["command"].as_str().unwrap())
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            dir.path().canonicalize().unwrap().display().to_string()
        );
    }
}
