//! Why an OAuth step failed, naming the server's resource and the step.

/// The steps of the flow, named in every error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// RFC 9728 protected-resource metadata.
    ResourceMetadata,
    /// RFC 8414 / OpenID authorization-server metadata.
    ServerMetadata,
    /// Client registration (pre-registered, metadata document or RFC 7591).
    Registration,
    /// The authorization response (the redirect back to us).
    Authorization,
    /// The device authorization request (RFC 8628 §3.1).
    DeviceAuthorization,
    /// The authorization code exchange.
    Token,
    /// The refresh token exchange.
    Refresh,
    /// Reading or writing the token store.
    Store,
    /// The OS keyring holding the tokens' secrets (`MCP_LAUNCH_TOKEN_STORE`).
    Keyring,
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Step::ResourceMetadata => "protected-resource metadata",
            Step::ServerMetadata => "authorization-server metadata",
            Step::Registration => "client registration",
            Step::Authorization => "authorization response",
            Step::DeviceAuthorization => "device authorization",
            Step::Token => "token request",
            Step::Refresh => "token refresh",
            Step::Store => "token store",
            Step::Keyring => "OS keyring",
        })
    }
}

/// An OAuth failure. Never carries a token, a code or a secret.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AuthError {
    /// No usable token: a person must log in.
    #[error("{resource} needs login: {reason}")]
    NeedsLogin {
        /// The server's URL.
        resource: String,
        /// Why the stored grant (if any) cannot be used.
        reason: String,
    },
    /// The token is good but lacks scopes the request needs (a 403 `insufficient_scope`): a
    /// person must authorize again, for `scope` (the scopes held and the ones asked for).
    #[error("{resource} needs a login with more scopes ({scope}): the server said {challenged} is required")]
    NeedsScope {
        /// The server's URL.
        resource: String,
        /// The scopes to ask for: those asked for before, with the challenge's (SEP-2350).
        scope: String,
        /// The scopes the server's challenge named (what this request needs).
        challenged: String,
    },
    /// The authorization server or the resource answered something we must not trust.
    #[error("refused {resource} at the {step}: {reason}")]
    Refused {
        /// The server's URL.
        resource: String,
        /// Where it happened.
        step: Step,
        /// What was wrong.
        reason: String,
    },
    /// The authorization server refused a client registered by hand (a wrong or unknown client
    /// id or secret, or a redirect URI the app does not list). Boxed: errors stay small.
    #[error("{0}")]
    ClientRejected(Box<Rejection>),
    /// Our Client ID Metadata Document, as hosted, would not let this login in: it is gone,
    /// names another client id, or lacks the login's redirect URI (a remote server added
    /// since it was printed). Boxed: errors stay small.
    #[error("{0}")]
    StaleDocument(Box<StaleDocument>),
    /// A step could not be done (unreachable, an error answer).
    #[error("OAuth for {resource} failed at the {step}: {reason}")]
    Failed {
        /// The server's URL.
        resource: String,
        /// Where it happened.
        step: Step,
        /// What went wrong.
        reason: String,
    },
}

/// What [`AuthError::ClientRejected`] knows.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the authorization server {issuer} refused the client {client_id:?} of {resource} at the {step}: {said}")]
pub struct Rejection {
    /// The server's URL.
    pub resource: String,
    /// The authorization server.
    pub issuer: String,
    /// The client id it refused.
    pub client_id: String,
    /// Where the client comes from (the config file, the server and the field).
    pub origin: String,
    /// The redirect URI the app must list.
    pub redirect_uri: String,
    /// Where it happened.
    pub step: Step,
    /// What it said.
    pub said: String,
}

/// What [`AuthError::StaleDocument`] knows.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the client metadata document at {url} would not let the login to {resource} in: {said}")]
pub struct StaleDocument {
    /// The server's URL.
    pub resource: String,
    /// The document's URL (the client id).
    pub url: String,
    /// The redirect URI the document must list.
    pub redirect_uri: String,
    /// What is wrong with it.
    pub said: String,
}

impl AuthError {
    /// A stable snake_case name for `--json`.
    pub fn kind(&self) -> &'static str {
        match self {
            AuthError::NeedsLogin { .. } | AuthError::NeedsScope { .. } => "needs_login",
            AuthError::Refused { .. } => "auth_refused",
            AuthError::Failed { .. } => "auth_failed",
            AuthError::ClientRejected(_) | AuthError::StaleDocument(_) => "auth_client_rejected",
        }
    }

    /// The next step for a person.
    pub fn help(&self) -> String {
        match self {
            AuthError::NeedsLogin { .. } => {
                "run `mcp-launch auth login SERVER` (SERVER is the server's name in the config)"
                    .into()
            }
            AuthError::NeedsScope { scope, .. } => format!(
                "run `{}` (SERVER is the server's name in the config)",
                login_command("SERVER", Some(scope), &[] as &[&str])
            ),
            AuthError::Refused { .. } => "the server's authorization server answered something that does not belong to it; check the server's URL in the config, and tell its operator".into(),
            AuthError::ClientRejected(rejection) => format!(
                "check {}: the client id (and `clientSecret`'s variable) must be those of an app registered at {}, whose redirect URIs list {}",
                rejection.origin, rejection.issuer, rejection.redirect_uri
            ),
            AuthError::StaleDocument(stale) => format!(
                "print it again with `mcp-launch auth client-metadata --url {}` (it lists {} with the other servers' redirect URIs), host the output at that URL, and log in again",
                stale.url, stale.redirect_uri
            ),
            AuthError::Failed { step: Step::Keyring, .. } => "unlock the OS keyring (on Linux a Secret Service such as gnome-keyring on the D-Bus session bus, DBUS_SESSION_BUS_ADDRESS), or set MCP_LAUNCH_TOKEN_STORE to auto (the file when no keyring answers) or to file: MCP_LAUNCH_TOKEN_STORE=file".into(),
            AuthError::Failed { step: Step::Store, .. } => "check that the state directory ($XDG_STATE_HOME/mcp-launch/oauth) is writable by you".into(),
            AuthError::Failed { .. } => "check that the server and its authorization server are reachable, then retry `mcp-launch auth login SERVER`".into(),
        }
    }
}

impl AuthError {
    /// The scopes a new login must ask for, when a request was refused for lack of them.
    pub fn step_up_scope(&self) -> Option<&str> {
        match self {
            AuthError::NeedsScope { scope, .. } => Some(scope),
            _ => None,
        }
    }
}

impl crate::error::Actionable for AuthError {
    fn kind(&self) -> &'static str {
        AuthError::kind(self)
    }
    fn help(&self) -> String {
        AuthError::help(self)
    }
}

/// The command a person runs to log in to `server` (its name in the config): `mcp-launch auth
/// login SERVER`, with `--scope "…"` when a step-up needs more scopes and `--config FILE` for
/// each config file named on the command line (so it finds the same server).
pub fn login_command<P: AsRef<std::path::Path>>(
    server: &str,
    scope: Option<&str>,
    configs: &[P],
) -> String {
    let mut command = format!("mcp-launch auth login {}", shell_word(server));
    if let Some(scope) = scope {
        command.push_str(&format!(" --scope {}", shell_word(scope)));
    }
    for config in configs {
        let config = config.as_ref().to_string_lossy();
        command.push_str(&format!(" --config {}", shell_word(&config)));
    }
    command
}

/// What a login command must repeat of the process that found the server, so that it finds
/// the same server when pasted anywhere: the config files and env files read (absolute).
#[derive(Debug, Clone, Default)]
pub struct LoginContext {
    /// `--config` for each.
    pub configs: Vec<std::path::PathBuf>,
    /// `--env-file` for each (a pasted `--config` reads no `./.env`).
    pub env_files: Vec<std::path::PathBuf>,
}

impl LoginContext {
    /// The files, made absolute against the working directory.
    pub fn new(configs: Vec<std::path::PathBuf>, env_files: Vec<std::path::PathBuf>) -> Self {
        let absolute = |paths: Vec<std::path::PathBuf>| {
            paths
                .into_iter()
                .map(|p| std::path::absolute(&p).unwrap_or(p))
                .collect()
        };
        LoginContext {
            configs: absolute(configs),
            env_files: absolute(env_files),
        }
    }

    /// [`login_command`] for `server`, with `--env-file` for each env file.
    pub fn command(&self, server: &str, scope: Option<&str>) -> String {
        let mut command = login_command(server, scope, &self.configs);
        for file in &self.env_files {
            let file = file.to_string_lossy();
            command.push_str(&format!(" --env-file {}", shell_word(&file)));
        }
        command
    }
}

/// `word` as a shell reads it: as is when plain, else in single quotes.
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "._/-:@+=,".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_login_command_names_the_scope_and_the_config() {
        let none: [&str; 0] = [];
        assert_eq!(
            login_command("prot", None, &none),
            "mcp-launch auth login prot"
        );
        assert_eq!(
            login_command("prot", Some("mcp admin"), &["my dir/a.json"]),
            "mcp-launch auth login prot --scope 'mcp admin' --config 'my dir/a.json'"
        );
        assert_eq!(
            login_command("s", None, &["it's.json", "b.json"]),
            r"mcp-launch auth login s --config 'it'\''s.json' --config b.json"
        );
        let context = LoginContext::new(vec!["/p/a.json".into()], vec!["/p/my .env".into()]);
        assert_eq!(
            context.command("s", Some("mcp admin")),
            "mcp-launch auth login s --scope 'mcp admin' --config /p/a.json --env-file '/p/my .env'"
        );
        let relative = LoginContext::new(vec!["a.json".into()], vec![]);
        assert!(relative.configs[0].is_absolute());
    }
}
