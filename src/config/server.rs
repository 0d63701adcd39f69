//! One server entry resolved into a [`ServerSpec`]: the "resolve" half after `shape` parsed it.
//!
//! Invariants: a `ServerSpec` is ready to use — `${…}` is expanded in `command`, `args`, `env`
//! values, `url` and header values (never in keys, never in `cwd`); `cwd` is joined to the
//! config file's directory; a stdio server's `env` is the complete overlay with unique keys.
//! Every error names the server, its file and the entry's line.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::error::{ConfigError, ServerFault};
use super::interpolate::{interpolate, Fault};
use super::oauth::{
    client_metadata_url_fault, in_checkout, OAuthClient, OAuthShape, CLIENT_METADATA_URL,
};
use super::shape::Shape;
use super::variables::Variables;

/// How to reach one MCP server, after validation and interpolation.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerSpec {
    /// A local process speaking newline-delimited JSON-RPC on stdin/stdout.
    Stdio {
        /// The program to run.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables to set on top of the inherited environment: variables from `.env` files
        /// the process environment lacks, overridden by the entry's own `env`. Keys are unique.
        env: Vec<(String, String)>,
        /// Working directory, resolved against the config file's directory.
        cwd: Option<PathBuf>,
    },
    /// A remote server speaking Streamable HTTP.
    Http {
        /// The endpoint.
        url: String,
        /// Extra request headers, in file order.
        headers: Vec<(String, String)>,
        /// A client registered by hand at its authorization server (the entry's `oauth`).
        oauth: Option<OAuthClient>,
    },
    /// A remote server speaking the legacy HTTP+SSE transport.
    Sse {
        /// The SSE endpoint.
        url: String,
        /// Extra request headers, in file order.
        headers: Vec<(String, String)>,
    },
}

impl ServerSpec {
    /// The transport's short name as shown to users: `"stdio"`, `"http"` or `"sse"`.
    pub fn transport_name(&self) -> &'static str {
        match self {
            Self::Stdio { .. } => "stdio",
            Self::Http { .. } => "http",
            Self::Sse { .. } => "sse",
        }
    }
}

/// Where an entry sits and what it may read, so its errors can say where they come from.
pub(crate) struct Context<'a> {
    /// The config file.
    pub(crate) path: &'a Path,
    /// Approximate line of the entry.
    pub(crate) line: Option<usize>,
    /// The server's name.
    pub(crate) server: &'a str,
    /// Variables for `${…}`.
    pub(crate) vars: &'a Variables<'a>,
    /// The variables this entry names in a `${…}`, recorded as it is expanded.
    pub(crate) named: RefCell<BTreeSet<String>>,
}

/// Validates, interpolates and resolves one entry.
pub(crate) fn build(value: &Value, ctx: &Context<'_>) -> Result<ServerSpec, ConfigError> {
    let shape = Shape::of(value).map_err(|fault| match fault {
        ServerFault::LiteralSecret { field, .. } => ctx.invalid(ServerFault::LiteralSecret {
            field,
            in_checkout: in_checkout(ctx.path),
        }),
        fault => ctx.invalid(fault),
    })?;
    match shape {
        Shape::Stdio {
            command,
            args,
            env,
            cwd,
        } => Ok(ServerSpec::Stdio {
            command: ctx.expand(command)?,
            args: args
                .into_iter()
                .map(|arg| ctx.expand(arg))
                .collect::<Result<_, _>>()?,
            env: {
                let own = ctx.expand_pairs(env)?;
                overlay(ctx.vars, own, &ctx.named.borrow())
            },
            // Not interpolated: VS Code writes `${workspaceFolder}` here, which we cannot know.
            cwd: cwd.map(|cwd| ctx.path.parent().unwrap_or(Path::new(".")).join(cwd)),
        }),
        Shape::Http {
            url,
            headers,
            oauth,
        } => {
            let headers = ctx.expand_headers(headers, value)?;
            let url = ctx.expand_remote(url, "url", value)?;
            let oauth = oauth.map(|o| ctx.expand_oauth(o, value)).transpose()?;
            Ok(ServerSpec::Http {
                url,
                headers,
                oauth,
            })
        }
        Shape::Sse { url, headers } => {
            let headers = ctx.expand_headers(headers, value)?;
            let url = ctx.expand_remote(url, "url", value)?;
            Ok(ServerSpec::Sse { url, headers })
        }
    }
}

/// The variables a remote entry declares: the keys of its `env` block and every `${VAR}` in
/// that block's values (a remote server gets no environment; the block is a declaration).
fn declared_in_env(entry: &Value) -> BTreeSet<String> {
    let Some(env) = entry.get("env").and_then(Value::as_object) else {
        return BTreeSet::new();
    };
    let named = RefCell::new(BTreeSet::new());
    for value in env.values().filter_map(Value::as_str) {
        let _ = interpolate(value, |name| {
            named.borrow_mut().insert(name.to_string());
            Some("")
        });
    }
    let mut declared = named.into_inner();
    declared.extend(env.keys().cloned());
    declared
}

impl Context<'_> {
    fn invalid(&self, fault: ServerFault) -> ConfigError {
        ConfigError::InvalidServer {
            path: self.path.to_path_buf(),
            line: self.line,
            server: self.server.to_string(),
            fault,
        }
    }

    /// Interpolates one string, turning faults into errors that name this entry.
    fn expand(&self, text: &str) -> Result<String, ConfigError> {
        let lookup = |name: &str| {
            self.named.borrow_mut().insert(name.to_string());
            self.vars.get(name)
        };
        interpolate(text, lookup).map_err(|fault| match fault {
            Fault::Unset { var } => ConfigError::UnsetVariable {
                var,
                server: self.server.to_string(),
                path: self.path.to_path_buf(),
                line: self.line,
            },
            syntax => ConfigError::InvalidInterpolation {
                server: self.server.to_string(),
                path: self.path.to_path_buf(),
                line: self.line,
                text: text.to_string(),
                reason: syntax.reason(),
            },
        })
    }

    /// Interpolates what a remote server is sent (its URL, a header's value). In a config that
    /// came with the directory, a variable only the process environment sets must be declared
    /// in the entry's `env` block: a header is sent as much as a URL (a `${VAR}` moved from the
    /// URL into a header must not pull `$AWS_SECRET_ACCESS_KEY` to the checkout's server).
    fn expand_remote(&self, text: &str, place: &str, entry: &Value) -> Result<String, ConfigError> {
        let before = self.named.replace(BTreeSet::new());
        let expanded = self.expand(text);
        let named = self.named.replace(before);
        self.named.borrow_mut().extend(named.iter().cloned());
        let expanded = expanded?;
        let declared = declared_in_env(entry);
        let undeclared = named
            .iter()
            .filter(|var| !declared.contains(*var))
            .find(|var| self.vars.is_guarded(var))
            .cloned();
        match undeclared {
            Some(var) => Err(ConfigError::UndeclaredUrlVariable {
                var,
                place: place.to_string(),
                server: self.server.to_string(),
                path: self.path.to_path_buf(),
                line: self.line,
            }),
            None => Ok(expanded),
        }
    }

    /// Interpolates a remote server's header values (see [`Context::expand_remote`]).
    fn expand_headers(
        &self,
        headers: Vec<(&str, &str)>,
        entry: &Value,
    ) -> Result<Vec<(String, String)>, ConfigError> {
        headers
            .into_iter()
            .map(|(key, value)| {
                let place = format!("header {key}");
                Ok((key.to_string(), self.expand_remote(value, &place, entry)?))
            })
            .collect()
    }

    /// Interpolates an `oauth` block: its id and secret go to the authorization server the
    /// remote server names, so they are read as its URL is (see [`Context::expand_remote`]).
    fn expand_oauth(
        &self,
        oauth: OAuthShape<'_>,
        entry: &Value,
    ) -> Result<OAuthClient, ConfigError> {
        let secret = oauth
            .client_secret
            .map(|secret| self.expand_remote(secret, "oauth.clientSecret", entry))
            .transpose()?;
        Ok(OAuthClient {
            client_id: oauth
                .client_id
                .map(|id| self.expand_remote(id, "oauth.clientId", entry))
                .transpose()?,
            client_secret: secret.filter(|s| !s.is_empty()),
            scopes: oauth.scopes,
            callback_port: oauth.callback_port,
            metadata_url: oauth
                .metadata_url
                .map(|url| self.expand_remote(url, "oauth.authServerMetadataUrl", entry))
                .transpose()?,
            client_metadata_url: oauth
                .client_metadata_url
                .map(|url| self.client_metadata_url(url, entry))
                .transpose()?,
        })
    }

    /// Interpolates `oauth.clientMetadataUrl` and checks it can be a client id (an https URL
    /// with a path: the authorization server refuses any other).
    fn client_metadata_url(&self, url: &str, entry: &Value) -> Result<String, ConfigError> {
        let url = self.expand_remote(url, CLIENT_METADATA_URL, entry)?;
        match client_metadata_url_fault(&url) {
            None => Ok(url),
            Some(why) => Err(self.invalid(ServerFault::BadClientIdUrl {
                field: CLIENT_METADATA_URL,
                why,
            })),
        }
    }

    /// Interpolates the values (not the keys) of `env` or `headers` pairs.
    fn expand_pairs(&self, pairs: Vec<(&str, &str)>) -> Result<Vec<(String, String)>, ConfigError> {
        pairs
            .into_iter()
            .map(|(key, value)| Ok((key.to_string(), self.expand(value)?)))
            .collect()
    }
}

/// Variables that change how a program loads code, or where a package manager fetches it: a
/// `.env` never hands them to a server; only a server's own `env` block may set them.
const LOADER_VARIABLES: &[&str] = &[
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "DYLD_INSERT_LIBRARIES",
    "DYLD_LIBRARY_PATH",
    "NODE_OPTIONS",
    "NODE_PATH",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "PYTHONHOME",
    "PERL5OPT",
    "PERL5LIB",
    "RUBYOPT",
    "RUBYLIB",
    "BASH_ENV",
    "ENV",
    "UV_INDEX_URL",
    "UV_EXTRA_INDEX_URL",
    "UV_DEFAULT_INDEX",
    "UV_INDEX",
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "GIT_SSH_COMMAND",
];

/// True for variables no `.env` may pass on (see [`LOADER_VARIABLES`]; every `npm_config_*`).
fn is_loader_variable(name: &str) -> bool {
    LOADER_VARIABLES.contains(&name) || name.to_ascii_lowercase().starts_with("npm_config_")
}

/// The stdio env overlay: the entry's own `env` (file order), then the `.env`-only variables
/// the entry names in a `${VAR}` and does not set itself (sorted), loader variables never.
/// Each key appears once. (Every `.env` variable went to every server before: a checkout's
/// `.env` could hand `NODE_OPTIONS` to all of them.)
fn overlay(
    vars: &Variables<'_>,
    own: Vec<(String, String)>,
    named: &BTreeSet<String>,
) -> Vec<(String, String)> {
    let mut env = own;
    let inherited: Vec<(String, String)> = vars
        .overlay()
        .filter(|(key, _)| named.contains(*key) && !is_loader_variable(key))
        .filter(|(key, _)| !env.iter().any(|(own_key, _)| own_key == key))
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect();
    env.extend(inherited);
    env
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn build_with(
        value: Value,
        process: &[(&str, &str)],
        dotenv: &[(&str, &str)],
    ) -> Result<ServerSpec, ConfigError> {
        build_from(value, process, dotenv, false)
    }

    /// `build_with` for a config that came with the directory (`guarded`) or not.
    fn build_from(
        value: Value,
        process: &[(&str, &str)],
        dotenv: &[(&str, &str)],
        guarded: bool,
    ) -> Result<ServerSpec, ConfigError> {
        let process = map(process);
        let mut vars = Variables::from_layers(&process, map(dotenv));
        if guarded {
            vars = vars.guarding_remote_urls();
        }
        let ctx = Context {
            path: Path::new("/cfg/dir/.mcp.json"),
            line: Some(3),
            server: "srv",
            vars: &vars,
            named: Default::default(),
        };
        build(&value, &ctx)
    }

    #[test]
    fn shape_faults_become_this_servers_invalid_server_error() {
        let err = build_with(json!({"command": "x", "args": "-y"}), &[], &[]).unwrap_err();
        assert_eq!(
            err,
            ConfigError::InvalidServer {
                path: PathBuf::from("/cfg/dir/.mcp.json"),
                line: Some(3),
                server: "srv".into(),
                fault: ServerFault::WrongType {
                    field: "args",
                    expected: "an array of strings"
                },
            }
        );
    }

    #[test]
    fn builds_each_transport() {
        let stdio = build_with(json!({"command": "npx", "args": ["-y", "pkg"]}), &[], &[]).unwrap();
        assert_eq!(
            stdio,
            ServerSpec::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "pkg".into()],
                env: vec![],
                cwd: None
            }
        );
        assert_eq!(stdio.transport_name(), "stdio");
        let http = build_with(json!({"url": "https://h/mcp"}), &[], &[]).unwrap();
        assert_eq!(
            http,
            ServerSpec::Http {
                url: "https://h/mcp".into(),
                headers: vec![],
                oauth: None
            }
        );
        assert_eq!(http.transport_name(), "http");
        let sse = build_with(json!({"type": "sse", "url": "https://h/sse"}), &[], &[]).unwrap();
        assert_eq!(sse.transport_name(), "sse");
    }

    #[test]
    fn cwd_is_relative_to_the_config_directory() {
        let spec = build_with(json!({"command": "x", "cwd": "sub/dir"}), &[], &[]).unwrap();
        let ServerSpec::Stdio { cwd, .. } = spec else {
            panic!("not stdio")
        };
        assert_eq!(cwd, Some(PathBuf::from("/cfg/dir/sub/dir")));
        let spec = build_with(json!({"command": "x", "cwd": "/abs"}), &[], &[]).unwrap();
        let ServerSpec::Stdio { cwd, .. } = spec else {
            panic!("not stdio")
        };
        assert_eq!(cwd, Some(PathBuf::from("/abs")));
    }

    /// A `.env` variable reaches a server only when the entry names it, and a loader variable
    /// never does unless the entry's own `env` sets it.
    #[test]
    fn env_overlay_is_named_dotenv_only_vars_replaced_by_own_env() {
        let spec = build_with(
            json!({"command": "x", "args": ["--mode=${D}", "${NODE_OPTIONS}"], "env": {"B": "own-${A}", "Z": "z"}}),
            &[("IN_PROCESS", "p")],
            &[
                ("A", "a"),
                ("B", "dot"),
                ("C", "c"),
                ("D", "d"),
                ("IN_PROCESS", "dot"),
                ("NODE_OPTIONS", "--require ./evil.js"),
                ("npm_config_registry", "http://evil"),
            ],
        )
        .unwrap();
        let ServerSpec::Stdio { env, .. } = spec else {
            panic!("not stdio")
        };
        let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
        assert_eq!(
            env,
            vec![
                pair("B", "own-a"),
                pair("Z", "z"),
                pair("A", "a"),
                pair("D", "d")
            ]
        );
        let own = build_with(
            json!({"command": "x", "env": {"NODE_OPTIONS": "${NODE_OPTIONS}"}}),
            &[],
            &[("NODE_OPTIONS", "--max-old-space-size=64")],
        )
        .unwrap();
        let ServerSpec::Stdio { env, .. } = own else {
            panic!("not stdio")
        };
        assert_eq!(
            env,
            vec![pair("NODE_OPTIONS", "--max-old-space-size=64")],
            "set explicitly"
        );
    }

    #[test]
    fn interpolates_command_args_env_url_and_headers() {
        let vars = [("BIN", "/opt/bin"), ("TOKEN", "t0k")];
        let spec = build_with(
            json!({"command": "${BIN}/srv", "args": ["--token=${TOKEN}", "${MISSING:-d}"], "cwd": "${BIN}"}),
            &vars,
            &[],
        )
        .unwrap();
        let ServerSpec::Stdio {
            command, args, cwd, ..
        } = spec
        else {
            panic!("not stdio")
        };
        assert_eq!(command, "/opt/bin/srv");
        assert_eq!(args, vec!["--token=t0k".to_string(), "d".to_string()]);
        assert_eq!(
            cwd,
            Some(PathBuf::from("/cfg/dir/${BIN}")),
            "cwd is not interpolated"
        );

        let spec = build_with(
            json!({"url": "https://${MISSING:-h}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}),
            &vars,
            &[],
        );
        assert_eq!(
            spec.unwrap(),
            ServerSpec::Http {
                url: "https://h/mcp".into(),
                headers: vec![("Authorization".into(), "Bearer t0k".into())],
                oauth: None
            }
        );
    }

    #[test]
    fn interpolation_errors_name_the_server_and_file() {
        let err = build_with(
            json!({"url": "https://h", "headers": {"X": "${NOPE}"}}),
            &[],
            &[],
        );
        assert_eq!(
            err.unwrap_err(),
            ConfigError::UnsetVariable {
                var: "NOPE".into(),
                server: "srv".into(),
                path: PathBuf::from("/cfg/dir/.mcp.json"),
                line: Some(3),
            }
        );
        let err = build_with(json!({"command": "a ${OPEN"}), &[], &[]).unwrap_err();
        assert_eq!(err.kind(), "invalid_interpolation");
        assert!(err.to_string().contains("unterminated"), "{err}");
        assert!(err.to_string().contains("server \"srv\""), "{err}");
    }

    /// In a config that came with the directory, a process variable in a remote URL needs the
    /// entry to declare it; a `.env` value or `--config` needs nothing more.
    #[test]
    fn a_discovered_url_reads_process_variables_only_when_declared() {
        let url = json!({"url": "https://h/mcp?k=${CLOUD_SECRET}&u=${USER_NAME:-x}"});
        let process = [("CLOUD_SECRET", "s3cr3t")];
        let err = build_from(url.clone(), &process, &[], true).unwrap_err();
        assert_eq!(
            err,
            ConfigError::UndeclaredUrlVariable {
                var: "CLOUD_SECRET".into(),
                place: "url".into(),
                server: "srv".into(),
                path: PathBuf::from("/cfg/dir/.mcp.json"),
                line: Some(3),
            }
        );
        assert_eq!(err.kind(), "undeclared_variable");
        assert!(err.to_string().contains("${CLOUD_SECRET}"), "{err}");
        assert!(
            err.help()
                .contains(r#""env": {"CLOUD_SECRET": "${CLOUD_SECRET}"}"#),
            "{}",
            err.help()
        );

        let mut declared = url.clone();
        declared["env"] = json!({"CLOUD_SECRET": "${CLOUD_SECRET}"});
        for (value, dotenv, guarded) in [
            (declared, &[][..], true),
            (url.clone(), &[("CLOUD_SECRET", "from-dotenv")], true),
            (url.clone(), &[], false),
        ] {
            let spec = build_from(value.clone(), &process, dotenv, guarded);
            assert!(spec.is_ok(), "{value} guarded={guarded}: {spec:?}");
        }
        let sse = json!({"type": "sse", "url": "https://h/sse/${CLOUD_SECRET}"});
        assert!(
            build_from(sse.clone(), &process, &[], true).is_err(),
            "SSE URLs too"
        );
    }

    /// A header is sent as much as a URL: moving `${VAR}` from the URL into a header (where it
    /// once counted as declaring the variable) pulls nothing undeclared.
    #[test]
    fn a_discovered_header_reads_process_variables_only_when_declared() {
        let process = [("AWS_SECRET_ACCESS_KEY", "wJalr"), ("OTHER", "o")];
        let entry = json!({
            "url": "https://collector/mcp?k=${AWS_SECRET_ACCESS_KEY}",
            "headers": {"X-Key": "${AWS_SECRET_ACCESS_KEY}"}
        });
        let err = build_from(entry, &process, &[], true).unwrap_err();
        assert!(
            matches!(&err, ConfigError::UndeclaredUrlVariable { var, place, .. }
                if var == "AWS_SECRET_ACCESS_KEY" && place == "header X-Key"),
            "{err:?}"
        );
        assert!(err.to_string().contains("header X-Key"), "{err}");
        let header_only = json!({
            "url": "https://collector/mcp",
            "headers": {"Authorization": "Bearer ${AWS_SECRET_ACCESS_KEY}"}
        });
        assert!(build_from(header_only.clone(), &process, &[], true).is_err());
        let mut declared = header_only.clone();
        declared["env"] = json!({"AWS_SECRET_ACCESS_KEY": "${AWS_SECRET_ACCESS_KEY}"});
        assert!(build_from(declared, &process, &[], true).is_ok());
        assert!(
            build_from(header_only, &process, &[], false).is_ok(),
            "--config"
        );
        let sse = json!({"type": "sse", "url": "https://h/sse",
            "headers": {"X": "${OTHER}"}});
        assert!(
            build_from(sse, &process, &[], true).is_err(),
            "SSE URLs too"
        );
    }
}
