//! `up`'s `/mcp`: each stack's front also serves the gateway over that stack's servers, for MCP
//! clients (claude.ai and ChatGPT connectors, VS Code, Cursor).
//!
//! The composition lives here because `launch` and `gateway` share a floor and neither may
//! name the other: the front takes an `McpMount` (routes built for a public URL), and this
//! module builds it from a `Gateway` — started over the native bridge's own upstream pool, so
//! each server runs once; with mcpo (whose servers live inside mcpo) over a pool of its own
//! that starts servers on the first MCP call and stops them when idle.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::auth::metadata::{AUTHORIZATION_SERVER_SUFFIX, PROTECTED_RESOURCE_SUFFIX};
use crate::auth::server::oidc::Delegate;
use crate::auth::server::proxy::{Login, CALLBACK_PATH};
use crate::auth::server::OAuthServer;
use crate::cli::serve::AuthMode;
use crate::cli::CliError;
use crate::config::ServerEntry;
use crate::gateway::wire::{self, HttpOptions};
use crate::gateway::{Budget, Gateway, GatewayOptions};
use crate::launch::front::{McpMount, McpSide};
use crate::launch::stack::RunningStack;
use crate::launch::state::LoginProxyState;
use crate::mcp::ConnectOptions;
use crate::tui::mcp::{ConsentTo, McpRequest, Say, ServeMcp};

use super::UpArgs;

/// Where the gateway answers on the front.
pub(super) const MCP_PATH: &str = "/mcp";

/// The OAuth routes the front hands to the MCP side beside `/mcp` (the built-in authorization
/// server's: `crate::auth::server`'s router and metadata name them).
const OAUTH_PATHS: &[&str] = &["/authorize", "/register", "/token", "/revoke"];

/// The login proxy's routes (`--oidc-client-id`): the built-in server's, but the provider's
/// callback to us instead of `/revoke`.
const PROXY_PATHS: &[&str] = &["/authorize", "/register", "/token", CALLBACK_PATH];

/// Servers of a pool of the gateway's own (mcpo stacks) stop after this long without calls.
const IDLE: Duration = Duration::from_secs(600);

/// How long `tools/list` waits for servers the tool index does not know (as `serve`).
const LIST_WAIT: Duration = Duration::from_secs(5);

/// `--auth` resolved: OAuth by default when a tunnel shares the stacks, else the stack's key.
/// `none` is refused when the front can be reached from elsewhere.
pub(super) fn choose_auth(args: &UpArgs, shared: bool) -> Result<AuthMode, CliError> {
    let reachable = shared || !args.host.is_loopback() || !args.public_urls.is_empty();
    match args.auth.clone() {
        Some(AuthMode::None) if reachable => Err(CliError::Usage {
            message: "--auth none would let anyone who reaches the front call every tool over /mcp".into(),
            help: "use --auth oauth (you consent to each client) or --auth key; --auth none only with --tunnel none on 127.0.0.1".into(),
        }),
        Some(auth) => Ok(auth),
        None if shared => Ok(AuthMode::Oauth),
        None => Ok(AuthMode::Key),
    }
}

/// How `/mcp` is protected: `--auth` resolved, with the provider for `oidc:ISSUER`
/// (discovered before the stacks started) and, with `--oidc-client-id`, the client its login
/// is proxied as (each stack's side proxies it, at its own callback).
pub(super) struct McpAuth {
    pub mode: AuthMode,
    pub delegate: Option<Delegate>,
    pub proxied: Option<Login>,
    /// Who is told of each stack's consent requests: the terminal, or the TUI.
    pub consent: ConsentTo,
    /// Where lines for the operator go: stderr, or the TUI's log pane.
    pub say: Say,
}

/// Lines for the operator on stderr.
pub(super) fn say_on_terminal() -> Say {
    Arc::new(|line| eprintln!("{line}"))
}

/// Consent requests told on the terminal (stderr), each said by its stack.
pub(super) fn consent_on_terminal() -> ConsentTo {
    Arc::new(|stack: &str| crate::cli::serve_oauth::show_consent(format!("stack {stack}")))
}

/// The word `share`, `status` and `--json` use for `auth`.
pub(super) fn auth_name(auth: &AuthMode) -> &'static str {
    match auth {
        AuthMode::Key => "key",
        AuthMode::Oauth => "oauth",
        AuthMode::Oidc(_) => "oidc",
        AuthMode::None => "none",
    }
}

/// Starts a gateway for each running stack and mounts it at `/mcp` on the stack's front.
/// `auth` says how it is protected. Returns the gateways, to shut down once the stacks stop.
pub(super) async fn serve_mcp(
    running: &[RunningStack],
    args: &UpArgs,
    auth: &McpAuth,
    project_dir: &Path,
    env_files: &[std::path::PathBuf],
    stop: &CancellationToken,
) -> Result<Vec<Gateway>, CliError> {
    let mut gateways = Vec::with_capacity(running.len());
    for stack in running {
        // One stack's gateway: its servers go by their plain names, unique within a stack
        // (qualified ones tell stacks apart; the bridge's pool knows the plain ones).
        let entries: Vec<ServerEntry> = (stack.served().iter())
            .map(|e| ServerEntry {
                qualified: e.name.clone(),
                ..e.clone()
            })
            .collect();
        let mut options = gateway_options(args, project_dir);
        // A server needing a login is answered with a command naming this stack's config.
        options.login =
            crate::auth::client::LoginContext::new(vec![stack.record().config], env_files.to_vec());
        let gateway = match stack.bridge() {
            Some(bridge) => Gateway::start_sharing(entries, options, bridge.pool().clone()).await?,
            None => Gateway::start(entries, options).await?,
        };
        let record = stack.record();
        let side = Side {
            gateway: gateway.clone(),
            stack: record.name.clone(),
            api_key: record.api_key.clone(),
            auth: auth.mode.clone(),
            delegate: auth.delegate.clone(),
            proxied: auth.proxied.clone(),
            consent: (auth.consent)(&record.name),
            say: Arc::clone(&auth.say),
            audience: args.oidc_audience.clone(),
            front: SocketAddr::new(args.host, record.port),
            stop: stop.clone(),
            previous: Mutex::new(None),
        };
        let login_proxy = login_proxy_state(auth);
        if let Err(e) = stack.serve_mcp(side.into_mount(), auth_name(&auth.mode), login_proxy) {
            // /mcp serves all the same; only `share` and `status` will not know of it.
            crate::output::warn(&format!("{}: /mcp is not recorded: {e}", record.name))?;
        }
        gateways.push(gateway);
    }
    Ok(gateways)
}

/// The login proxy as the state file records it (`share` names its callback), if on.
fn login_proxy_state(auth: &McpAuth) -> Option<LoginProxyState> {
    let (delegate, login) = (auth.delegate.as_ref()?, auth.proxied.as_ref()?);
    Some(LoginProxyState {
        issuer: delegate.issuer().to_string(),
        client_id: login.client_id().to_string(),
    })
}

/// `/mcp` for the stacks `up --tui` launches, as `up` serves it: the provider of `--auth
/// oidc:ISSUER` asked before the TUI starts (a wrong issuer stops at once), `--auth` resolved
/// per launch by the tunnel chosen in the TUI (OAuth by default with one), consent requests
/// sent where the TUI says.
pub(super) async fn for_tui(
    args: UpArgs,
    opts: &crate::config::LoadOptions,
    stop: &CancellationToken,
) -> Result<ServeMcp, CliError> {
    let delegate =
        crate::cli::serve_oauth::delegate(args.auth.as_ref(), args.oidc_audience.as_deref())
            .await?;
    let proxied =
        crate::cli::serve_oauth::login(delegate.as_ref(), &args.oidc_client, "mcp-launch up")?;
    let (args, cwd, env_files) = (Arc::new(args), opts.cwd.clone(), opts.env_files.clone());
    let stop = stop.clone();
    Ok(Arc::new(move |running, request: McpRequest| {
        let (args, cwd, env_files, stop) = (
            Arc::clone(&args),
            cwd.clone(),
            env_files.clone(),
            stop.clone(),
        );
        let (delegate, proxied) = (delegate.clone(), proxied.clone());
        Box::pin(async move {
            let mode = choose_auth(&args, request.shared).map_err(|e| e.to_string())?;
            let auth = McpAuth {
                mode,
                delegate,
                proxied,
                consent: request.consent,
                say: request.say,
            };
            let served = serve_mcp(&running, &args, &auth, &cwd, &env_files, &stop).await;
            served.map_err(|e| e.to_string())
        })
    }))
}

/// The gateway's options from `up`'s flags: `serve`'s defaults otherwise.
fn gateway_options(args: &UpArgs, project_dir: &Path) -> GatewayOptions {
    GatewayOptions {
        mode: args.mode,
        idle: Some(IDLE),
        always_on: Vec::new(),
        pins: args.pins.clone(),
        passthrough: false,
        list_wait: LIST_WAIT,
        call_timeout: crate::launch::controller::native::bridge::CALL_TIMEOUT.from_env_or_default(),
        connect: ConnectOptions::from_env(),
        budget: Budget::default(),
        project_dir: project_dir.to_path_buf(),
        max_output: args.max_output_tokens.unwrap_or_default(),
        login: Default::default(),
    }
}

/// What the MCP side of one stack is built from.
struct Side {
    gateway: Gateway,
    stack: String,
    /// The stack's key: the bearer key of `--auth key`.
    api_key: String,
    auth: AuthMode,
    /// With `--auth oidc:ISSUER`: the provider's verifier (its audience set per public URL).
    delegate: Option<Delegate>,
    /// With `--oidc-client-id`: the provider's client the login is proxied as (a new public
    /// URL builds the side again, with the same client).
    proxied: Option<Login>,
    /// Told of the built-in server's consent requests.
    consent: crate::auth::server::Notify,
    /// Says delegated mode's lines to the operator.
    say: Say,
    /// `--oidc-audience`.
    audience: Option<String>,
    /// The front's address (its host is a name clients may send in `Host` off loopback).
    front: SocketAddr,
    /// `up`'s stop: every side's sessions end with it.
    stop: CancellationToken,
    /// The stop of the side built last: a side built for a new URL ends the old one's sessions.
    previous: Mutex<Option<CancellationToken>>,
}

impl Side {
    fn into_mount(self) -> McpMount {
        Arc::new(move |base: &str| self.build(base))
    }

    /// The side for the public base URL `base`.
    fn build(&self, base: &str) -> McpSide {
        let stop = self.stop.child_token();
        let mut previous = self.previous.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(old) = previous.replace(stop.clone()) {
            old.cancel();
        }
        drop(previous);
        let oauth = match (&self.auth, &self.delegate) {
            (_, Some(delegate)) => Some(crate::cli::serve_oauth::delegated_saying(
                base,
                delegate.clone(),
                self.audience.as_deref(),
                &format!("stack {}", self.stack),
                self.proxied.clone(),
                &*self.say,
            )),
            (AuthMode::Oauth, _) => Some(self.oauth_server(base)),
            _ => None,
        };
        // Without OAuth, the key — unless `--auth none` said so: never open by omission.
        let api_key =
            (oauth.is_none() && self.auth != AuthMode::None).then(|| self.api_key.clone());
        let paths = side_paths(&self.auth, self.proxied.is_some());
        let options = HttpOptions {
            addr: self.front,
            api_key,
            oauth,
            public_url: Some(base.to_string()),
            allowed_hosts: Vec::new(),
            limits: crate::listen::Limits::default(),
            sessions: wire::SessionLimits::default(),
        };
        let hosts = allowed_hosts(base, self.front.ip());
        McpSide {
            routes: wire::http_routes(self.gateway.clone(), options, &hosts, &stop),
            paths,
        }
    }

    /// The built-in authorization server (the one `serve --http --auth oauth` uses, its state
    /// shared with `mcp-launch auth`), its issuer `base` and its resource `base/mcp`.
    fn oauth_server(&self, base: &str) -> Arc<OAuthServer> {
        let store = crate::auth::server::default_store();
        let notify = Arc::clone(&self.consent);
        Arc::new(OAuthServer::new(base, MCP_PATH, store, notify))
    }
}

/// The paths the MCP side answers: `/mcp`; with OAuth (built in or delegated) the protected
/// resource's metadata (RFC 9728, at the root and path-suffixed); with the built-in server
/// also its metadata (RFC 8414) and endpoints (a provider serves its own); with the login
/// proxied (`proxied`), that metadata and the proxy's endpoints.
fn side_paths(auth: &AuthMode, proxied: bool) -> Vec<String> {
    let mut paths = vec![MCP_PATH.to_string()];
    if auth.is_oauth() {
        paths.push(PROTECTED_RESOURCE_SUFFIX.to_string());
        paths.push(format!("{PROTECTED_RESOURCE_SUFFIX}{MCP_PATH}"));
    }
    if *auth == AuthMode::Oauth {
        paths.push(AUTHORIZATION_SERVER_SUFFIX.to_string());
        paths.extend(OAUTH_PATHS.iter().map(|p| p.to_string()));
    } else if proxied {
        paths.push(AUTHORIZATION_SERVER_SUFFIX.to_string());
        paths.extend(PROXY_PATHS.iter().map(|p| p.to_string()));
    }
    paths
}

/// The `Host` names clients may use besides loopback ones: the public URL's host (a tunnel
/// passes the public host on) and the front's bind address off loopback.
fn allowed_hosts(base: &str, bind: IpAddr) -> Vec<String> {
    let mut hosts = Vec::new();
    if let Some(host) = reqwest::Url::parse(base)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
    {
        hosts.push(
            host.trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
        );
    }
    if !bind.is_loopback() && !bind.is_unspecified() {
        hosts.push(bind.to_string());
    }
    hosts
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt;

    /// Every endpoint the authorization server's metadata names is a path the front hands to
    /// the MCP side (else the REST side would answer it 401 for want of the stack's key).
    #[tokio::test]
    async fn the_side_answers_every_endpoint_the_metadata_names() {
        let store = Arc::new(crate::auth::server::MemoryStore::default());
        let notify: crate::auth::server::Notify = Arc::new(|_| {});
        let server = Arc::new(OAuthServer::new(
            "https://x.example",
            MCP_PATH,
            store,
            notify,
        ));
        let request = Request::get(AUTHORIZATION_SERVER_SUFFIX)
            .body(Body::empty())
            .unwrap();
        let answer = server.router().oneshot(request).await.unwrap();
        let body = axum::body::to_bytes(answer.into_body(), 1 << 20)
            .await
            .unwrap();
        let metadata: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let paths = side_paths(&AuthMode::Oauth, false);
        let named = metadata.as_object().unwrap().iter();
        let endpoints = named.filter(|(k, _)| k.ends_with("_endpoint"));
        for (field, url) in endpoints {
            let path = url
                .as_str()
                .unwrap()
                .trim_start_matches("https://x.example");
            assert!(
                paths.iter().any(|p| p == path),
                "{field} {path} not handed over"
            );
        }
        assert!(paths.contains(
            &server
                .resource_metadata_url()
                .replace("https://x.example", "")
        ));
    }

    fn up_args(args: &[&str]) -> UpArgs {
        use clap::Parser;
        let cli = crate::cli::Cli::try_parse_from(["mcp-launch", "up"].iter().chain(args));
        match cli.unwrap().command {
            crate::cli::Command::Up(up) => up,
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn oauth_is_the_default_when_shared_and_none_is_refused_then() {
        assert_eq!(choose_auth(&up_args(&[]), true).unwrap(), AuthMode::Oauth);
        assert_eq!(choose_auth(&up_args(&[]), false).unwrap(), AuthMode::Key);
        let key = up_args(&["--auth", "key"]);
        assert_eq!(choose_auth(&key, true).unwrap(), AuthMode::Key);
        let none = up_args(&["--auth", "none"]);
        assert_eq!(choose_auth(&none, false).unwrap(), AuthMode::None);
        assert!(choose_auth(&none, true).is_err(), "none behind a tunnel");
        let open = up_args(&["--auth", "none", "--host", "0.0.0.0"]);
        assert!(choose_auth(&open, false).is_err(), "none off loopback");
        let public = up_args(&["--auth", "none", "--public-url", "https://x.example"]);
        assert!(choose_auth(&public, false).is_err(), "none at a public URL");
        let oidc = up_args(&["--auth", "oidc:https://idp.example.com"]);
        let issuer = AuthMode::Oidc("https://idp.example.com".into());
        assert_eq!(
            choose_auth(&oidc, true).unwrap(),
            issuer,
            "oidc behind a tunnel"
        );
        assert_eq!(
            side_paths(&issuer, false).len(),
            3,
            "{:?}",
            side_paths(&issuer, false)
        );
        let proxied = side_paths(&issuer, true);
        let proxys = [
            AUTHORIZATION_SERVER_SUFFIX,
            "/register",
            "/authorize",
            "/token",
        ];
        for path in proxys.into_iter().chain([CALLBACK_PATH]) {
            assert!(proxied.iter().any(|p| p == path), "{path} not handed over");
        }
    }

    #[test]
    fn the_public_host_is_allowed_in_host() {
        let hosts = allowed_hosts(
            "https://a-b.trycloudflare.com",
            "127.0.0.1".parse().unwrap(),
        );
        assert_eq!(hosts, vec!["a-b.trycloudflare.com"]);
        let lan = allowed_hosts("http://127.0.0.1:8000", "192.168.1.4".parse().unwrap());
        assert_eq!(lan, vec!["127.0.0.1", "192.168.1.4"]);
    }
}
