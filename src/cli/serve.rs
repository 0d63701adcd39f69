//! `mcp-launch serve`: every configured server behind one MCP endpoint (see `crate::gateway`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use tokio_util::sync::CancellationToken;

use crate::duration::{Setting, DAY};
use crate::gateway::daemon;
use crate::gateway::wire::{self, HttpOptions};
use crate::gateway::{Budget, Gateway, GatewayOptions, Mode};
use crate::mcp::ConnectOptions;

use super::{load_config, CliError, GlobalArgs, Outcome};

/// Serve every configured server to MCP clients (Claude Code, Cursor, VS Code, …) as one
/// server: stdio by default, Streamable HTTP at /mcp with --http.
///
/// Full mode offers every allowed tool as `server__tool`; sparse mode offers search_tools,
/// describe_tool, call_tool and discover instead (and --pin'ned tools); auto picks full while
/// the catalog fits 40 tools and 8,000 tokens. Tools are listed from the tool index: no server
/// starts until a call needs it, and idle ones stop after --idle.
///
/// Example: claude mcp add mcp-launch -- mcp-launch serve --config ~/dev.json --mode sparse
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// full, sparse or auto.
    #[arg(long, value_enum, default_value = "auto")]
    pub mode: Mode,
    /// Serve Streamable HTTP at http://ADDR:PORT/mcp instead of stdio, with a key: --api-key,
    /// or on loopback the one kept for you (made on first use, shown once).
    #[arg(long, value_name = "ADDR:PORT")]
    pub http: Option<SocketAddr>,
    /// With --http on loopback: serve without a key (any local user can call every tool).
    #[arg(long, requires = "http", conflicts_with = "api_key")]
    pub no_auth: bool,
    /// With --http: how clients prove who they are. key: a bearer key (the default without a
    /// tunnel); oauth: OAuth 2.1 with the built-in authorization server (the default with
    /// --tunnel; hosted clients: claude.ai, ChatGPT, VS Code; you consent with a one-time code
    /// shown here or `mcp-launch auth approve`); oidc:ISSUER: JWT access tokens of your
    /// OpenID provider (teams); none: as --no-auth (never with --tunnel).
    #[arg(
        long,
        value_parser = AuthMode::parse,
        requires = "http",
        conflicts_with = "no_auth",
        value_name = "MODE"
    )]
    pub auth: Option<AuthMode>,
    /// With --auth oidc:ISSUER: the `aud` tokens must name, when the provider cannot name this
    /// server's URL (http://ADDR:PORT/mcp, the default) and puts a client id there instead.
    #[arg(long, requires = "auth", value_name = "AUDIENCE")]
    pub oidc_audience: Option<String>,
    #[command(flatten)]
    pub oidc_client: super::serve_oauth::OidcClientArgs,
    /// The key HTTP clients send as `Authorization: Bearer <key>` (required off loopback;
    /// on loopback, the default is a key kept owner-only in the state directory).
    #[arg(
        long,
        env = "MCP_LAUNCH_API_KEY",
        hide_env_values = true,
        value_name = "KEY"
    )]
    pub api_key: Option<String>,
    /// With --http: make it public through cloudflared: quick (a random trycloudflare.com
    /// URL, no account) or named (your tunnel, routed to --http; give --public-url). The
    /// public URL is printed, with what to paste into claude.ai or ChatGPT.
    #[arg(long, value_enum, requires = "http", value_name = "MODE")]
    pub tunnel: Option<super::up::TunnelMode>,
    /// With --tunnel named: the tunnel's name or UUID (else the one in TUNNEL_TOKEN).
    #[arg(long, value_name = "NAME")]
    pub tunnel_name: Option<String>,
    /// With --tunnel named: the public URL your tunnel routes to --http
    /// (https://tools.example.com); clients, the OAuth issuer and the tokens' audience use it.
    #[arg(long, value_name = "URL")]
    pub public_url: Option<String>,
    /// Stop a server after this long without calls (0: never).
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = |s: &str| IDLE.parse(s))]
    pub idle: Duration,
    /// Start these servers at once and restart them when they die.
    #[arg(long = "always-on", value_name = "SERVER", num_args = 1..)]
    pub always_on: Vec<String>,
    /// Offer these tools directly in sparse mode (exposed names, `server__tool`).
    #[arg(long = "pin", value_name = "SERVER__TOOL", num_args = 1..)]
    pub pins: Vec<String>,
    /// Front one server with its own tool, prompt and resource names (no prefix).
    #[arg(long)]
    pub passthrough: bool,
    /// Serve the command line instead of a client: `call` goes through this gateway's warm
    /// sessions (a 0600 unix socket in the runtime directory, one per config set).
    #[arg(long, conflicts_with_all = ["http", "passthrough"])]
    pub daemon: bool,
    /// With --daemon: exit after this long without calls (0: never).
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = |s: &str| IDLE_EXIT.parse(s))]
    pub idle_exit: Duration,
    /// Client-config flags (--print-config and friends).
    #[command(flatten)]
    pub client: super::client_config::ClientConfigArgs,
    /// The most o200k tokens a tool result may cost; over it, the result is cut at a clean
    /// boundary and the rest kept behind a handle `read_output` reads (0: never cut).
    #[arg(long, value_name = "TOKENS", default_value = "6000", value_parser = parse_budget)]
    pub max_output_tokens: crate::outputs::Budget,
    /// How long a call may take.
    #[arg(long, value_name = "DURATION", default_value = "300", value_parser = |s: &str| CALL_TIMEOUT.parse(s))]
    pub call_timeout: Duration,
    /// With --http: the most sessions kept at once (past it, the one idle longest ends).
    #[arg(long, env = "MCP_LAUNCH_MAX_SESSIONS", value_name = "N", default_value_t = wire::MAX_SESSIONS,
        value_parser = parse_sessions)]
    pub max_sessions: usize,
    /// With --http: the most sessions kept at once per key.
    #[arg(long, env = "MCP_LAUNCH_MAX_SESSIONS_PER_KEY", value_name = "N", default_value_t = wire::MAX_SESSIONS_PER_KEY,
        value_parser = parse_sessions)]
    pub max_sessions_per_key: usize,
    /// Serve /metrics, /healthz and /readyz on this loopback address too, without a key (with
    /// --http, /metrics is also served there, behind its key).
    #[arg(long, env = "MCP_LAUNCH_METRICS_ADDR", value_name = "ADDR:PORT", value_parser = parse_metrics_addr)]
    pub metrics: Option<SocketAddr>,
    /// With --http: end a session after this long without a message.
    #[arg(long, env = "MCP_LAUNCH_SESSION_IDLE", value_name = "DURATION", default_value = "120s",
        value_parser = |s: &str| SESSION_IDLE.parse(s))]
    pub session_idle: Duration,
    /// With --http: keep handles, the usage record, OAuth clients and tokens and sessions
    /// in Redis (redis://[:PASSWORD@]HOST[:PORT][/DB]) so replicas share them; local files
    /// without.
    #[arg(long, env = crate::state::ENV, value_name = "URL", hide_env_values = true)]
    pub state: Option<String>,
    /// With --http: one more name clients reach the gateway by, accepted in `Host` and
    /// `Origin` (a load balancer's or DNS name; NAME or NAME:PORT; repeatable). Without it
    /// only loopback names and the bound address are.
    #[arg(long = "allowed-host", value_name = "NAME", requires = "http", value_parser = parse_allowed_host)]
    pub allowed_hosts: Vec<String>,
}

/// `--allowed-host`: a host name or address, with a port or not; no scheme, path or space.
fn parse_allowed_host(text: &str) -> Result<String, String> {
    let name = text.trim().to_ascii_lowercase();
    let bad = name.is_empty()
        || name.contains("://")
        || name.contains(['/', '?', '#', '@', ' ', '*'])
        || reqwest::Url::parse(&format!("http://{name}/")).is_err();
    match bad {
        true => Err(format!(
            "{text:?} is not a host name: give the name clients send in `Host`, as \
             mcp.example.com or mcp.example.com:8443 (no scheme, no path)"
        )),
        false => Ok(name),
    }
}

/// `--metrics`: a loopback address only (its pages are served without a key).
fn parse_metrics_addr(text: &str) -> Result<SocketAddr, String> {
    let addr: SocketAddr = text
        .parse()
        .map_err(|_| format!("{text:?} is not an address: give one like 127.0.0.1:9464"))?;
    match addr.ip().is_loopback() {
        true => Ok(addr),
        false => Err(format!(
            "{addr} is reachable from other machines and /metrics there has no key: bind loopback \
             (127.0.0.1:PORT), or read /metrics on `serve --http` behind its key"
        )),
    }
}

/// `--max-sessions`, `--max-sessions-per-key`: 1 to 65,536.
fn parse_sessions(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if (1..=65_536).contains(&n) => Ok(n),
        _ => Err(format!(
            "{text:?} is not a session count: give one from 1 to 65536"
        )),
    }
}

/// `--session-idle`: a second to an hour.
const SESSION_IDLE: Setting = Setting::new(
    "--session-idle",
    wire::SESSION_IDLE,
    Duration::from_secs(1),
    Duration::from_secs(3600),
);

/// `--idle`: zero (never) to a day.
const IDLE: Setting = Setting::new("--idle", Duration::from_secs(600), Duration::ZERO, DAY);
/// `--idle-exit`: zero (never) to a day.
const IDLE_EXIT: Setting = Setting::new(
    "--idle-exit",
    Duration::from_secs(1800),
    Duration::ZERO,
    DAY,
);
/// `--call-timeout`.
const CALL_TIMEOUT: Setting = Setting::timeout("--call-timeout", Duration::from_secs(300));
/// How `serve --http` clients prove who they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthMode {
    /// A bearer key (`--api-key`, or the one kept for you on loopback).
    Key,
    /// OAuth 2.1 with the built-in authorization server.
    Oauth,
    /// JWT access tokens of the OpenID provider at this issuer URL (delegated mode).
    Oidc(String),
    /// No check (loopback only).
    None,
}

impl AuthMode {
    /// `key`, `oauth`, `oidc:ISSUER` or `none`.
    pub fn parse(text: &str) -> Result<AuthMode, String> {
        match text {
            "key" => Ok(AuthMode::Key),
            "oauth" => Ok(AuthMode::Oauth),
            "none" => Ok(AuthMode::None),
            _ => match text.strip_prefix("oidc:") {
                Some(issuer) if !issuer.is_empty() => Ok(AuthMode::Oidc(issuer.to_string())),
                _ => Err(format!(
                    "{text:?} is not an auth mode: give key, oauth, none or \
                     oidc:ISSUER (e.g. oidc:https://idp.example.com)"
                )),
            },
        }
    }

    /// Whether clients log in with OAuth (no key).
    pub fn is_oauth(&self) -> bool {
        matches!(self, AuthMode::Oauth | AuthMode::Oidc(_))
    }
}

/// `--auth`, or its default: OAuth with a tunnel (hosted clients cannot send a key), none with
/// `--no-auth`, else a key.
fn auth_mode(args: &ServeArgs, tunnel: bool) -> AuthMode {
    match &args.auth {
        Some(mode) => mode.clone(),
        None if tunnel => AuthMode::Oauth,
        None if args.no_auth => AuthMode::None,
        None => AuthMode::Key,
    }
}

/// `--print-config` with a tunnel: its public URL, known beforehand only for a named tunnel.
fn printed_public_url(tunnel: &super::serve_tunnel::TunnelPlan) -> Result<String, CliError> {
    match tunnel.known_url() {
        Some(base) => Ok(format!("{base}/mcp")),
        None => Err(CliError::Usage {
            message: "a quick tunnel's URL is made up by cloudflared when it starts".into(),
            help: "start `serve --http … --tunnel quick` and give clients the URL it prints, or use --tunnel named --public-url URL".into(),
        }),
    }
}

/// How long `tools/list` waits for servers the tool index does not know.
const LIST_WAIT: Duration = Duration::from_secs(5);

pub(super) async fn run(
    args: ServeArgs,
    global: &GlobalArgs,
    shutdown: CancellationToken,
) -> Result<Outcome, CliError> {
    let tunnel = super::serve_tunnel::plan(&args)?;
    let auth = auth_mode(&args, tunnel.is_some());
    let key = match args.http {
        Some(_) if auth.is_oauth() => super::serve_oauth::no_key(&args)?,
        Some(addr) => super::serve_key::http_key(addr, &args, tunnel.is_some())?,
        None => None,
    };
    if let Some(client) = &args.client.print_config {
        let http = match (&tunnel, args.http) {
            (Some(tunnel), _) => Some((printed_public_url(tunnel)?, key)),
            (None, Some(addr)) => Some((format!("http://{addr}/mcp"), key)),
            (None, None) => None,
        };
        return super::client_config::run(&args.client, client, &passed_on(&args), http, global);
    }
    let delegate =
        super::serve_oauth::delegate(args.auth.as_ref(), args.oidc_audience.as_deref()).await?;
    let proxied =
        super::serve_oauth::login(delegate.as_ref(), &args.oidc_client, "mcp-launch serve")?;
    let loaded = load_config(global)?;
    let entries: Vec<_> = loaded.servers().cloned().collect();
    if args.passthrough && entries.len() != 1 {
        return Err(CliError::Usage {
            message: format!(
                "--passthrough fronts one server; the config has {}",
                entries.len()
            ),
            help: "name a config with one server (--config FILE), or drop --passthrough".into(),
        });
    }
    let configs = loaded.stacks.iter().map(|s| s.path.clone()).collect();
    // A daemon's socket is claimed before anything starts: a second one is refused at once.
    let socket = match args.daemon {
        true => Some(claim_daemon_socket(&loaded).await?),
        false => None,
    };
    if let (Some(url), Some(_)) = (&args.state, args.http) {
        share_state(url).await?;
    }
    let login = crate::auth::client::LoginContext::new(
        loaded.stacks.iter().map(|s| s.path.clone()).collect(),
        loaded.env_files.clone(),
    );
    let gateway = Gateway::start(entries, options(&args, login)).await?;
    if args.daemon {
        // The command line's searches rank by meaning with the daemon's model, whatever the mode.
        gateway.open_model();
    }
    let stop = shutdown.child_token();
    let control = control_socket(&gateway, &args, socket, configs, stop.clone()).await;
    let metrics = match args.metrics {
        Some(addr) => Some(metrics_listener(&gateway, addr, stop.clone()).await?),
        None => None,
    };
    let served = match args.http {
        _ if args.daemon => {
            stop.cancelled().await;
            Ok(())
        }
        Some(addr) => {
            let served = Served {
                addr,
                key,
                auth,
                tunnel,
                delegate,
                proxied,
            };
            serve_http(gateway.clone(), served, &args, stop.clone()).await
        }
        None => wire::serve_stdio(gateway.clone(), stop.clone())
            .await
            .map_err(CliError::Output),
    };
    stop.cancel();
    if let Some(control) = control {
        let _ = control.await;
    }
    if let Some(metrics) = metrics {
        let _ = metrics.await;
    }
    gateway.shutdown().await;
    served?;
    Ok(Outcome::Success)
}

/// `--state URL`: the shared state store every room of this process keeps its records in.
async fn share_state(url: &str) -> Result<(), CliError> {
    let store = crate::state::Redis::connect(url).await?;
    eprintln!("mcp-launch serve: state in {}", store.url());
    crate::state::install(store);
    Ok(())
}

/// `--state URL` of a command that reads what replicas share (`usage`, `auth clients`…): the
/// store is installed as `serve` does, and must answer now (an empty answer from a store that
/// is down would read as "nothing recorded").
pub(super) async fn read_shared_state(url: Option<&str>) -> Result<(), CliError> {
    let Some(url) = url else { return Ok(()) };
    let store = crate::state::Redis::connect(url).await?;
    store.ping().await?;
    crate::state::install(store);
    Ok(())
}

/// Binds `--metrics` and serves its pages until `stop`.
async fn metrics_listener(
    gateway: &Gateway,
    addr: SocketAddr,
    stop: CancellationToken,
) -> Result<tokio::task::JoinHandle<()>, CliError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| CliError::Usage {
            message: format!("cannot listen on --metrics {addr}: {e}"),
            help: "pick a free port (`--metrics 127.0.0.1:0` takes any; the address is printed)"
                .into(),
        })?;
    let bound = listener.local_addr().map_err(CliError::Output)?;
    eprintln!("mcp-launch serve: metrics at http://{bound}/metrics");
    let ready = wire::readiness(gateway);
    Ok(tokio::spawn(async move {
        if let Err(e) = crate::observe::serve_metrics(listener, ready, stop).await {
            tracing::warn!(error = %e, "the metrics listener stopped");
        }
    }))
}

async fn claim_daemon_socket(
    loaded: &crate::config::Loaded,
) -> Result<(PathBuf, tokio::net::UnixListener), CliError> {
    let socket = super::daemon::own_socket(loaded)?;
    let listener = daemon::bind(&socket)
        .await
        .map_err(super::daemon::daemon_error)?;
    Ok((socket, listener))
}

/// Listens on the gateway's socket (the daemon's, claimed already; else `g-<pid>.sock`, so
/// `status` sees this gateway — without one it still serves its client).
async fn control_socket(
    gateway: &Gateway,
    args: &ServeArgs,
    claimed: Option<(PathBuf, tokio::net::UnixListener)>,
    configs: Vec<PathBuf>,
    stop: CancellationToken,
) -> Option<tokio::task::JoinHandle<()>> {
    let (socket, listener) = match claimed {
        Some(claimed) => claimed,
        None => match gateway_listener().await {
            Ok(bound) => bound,
            Err(e) => {
                tracing::warn!(error = %e, "no control socket: `status` will not list this gateway");
                return None;
            }
        },
    };
    let kind = match (args.daemon, args.http) {
        (true, _) => daemon::Kind::Daemon,
        (false, Some(_)) => daemon::Kind::Http,
        (false, None) => daemon::Kind::Stdio,
    };
    if args.daemon {
        eprintln!("mcp-launch serve --daemon: {}", socket.display());
    }
    let info = daemon::Info {
        kind,
        address: args.http.map(|a| a.to_string()),
        configs,
        cwd: std::env::current_dir().unwrap_or_default(),
        socket,
    };
    let idle_exit = (args.daemon && !args.idle_exit.is_zero()).then_some(args.idle_exit);
    let listening = daemon::listen(gateway.clone(), listener, info, idle_exit, stop);
    Some(tokio::spawn(listening))
}

async fn gateway_listener() -> Result<(PathBuf, tokio::net::UnixListener), daemon::DaemonError> {
    let socket = daemon::gateway_socket(&daemon::runtime_dir()?);
    let listener = daemon::bind(&socket).await?;
    Ok((socket, listener))
}

/// The serve flags a client's entry passes on (stdio: never --http or a key).
fn passed_on(args: &ServeArgs) -> Vec<String> {
    let mut flags = Vec::new();
    if args.mode != Mode::Auto {
        let mode = clap::ValueEnum::to_possible_value(&args.mode).map(|v| v.get_name().to_string());
        flags.extend(["--mode".to_string(), mode.unwrap_or_default()]);
    }
    if args.idle != IDLE.default {
        flags.extend([
            "--idle".to_string(),
            humantime::format_duration(args.idle).to_string(),
        ]);
    }
    for server in &args.always_on {
        flags.extend(["--always-on".to_string(), server.clone()]);
    }
    for pin in &args.pins {
        flags.extend(["--pin".to_string(), pin.clone()]);
    }
    if args.passthrough {
        flags.push("--passthrough".into());
    }
    flags
}

fn options(args: &ServeArgs, login: crate::auth::client::LoginContext) -> GatewayOptions {
    GatewayOptions {
        mode: args.mode,
        idle: (!args.idle.is_zero()).then_some(args.idle),
        always_on: args.always_on.clone(),
        pins: args.pins.clone(),
        passthrough: args.passthrough,
        list_wait: LIST_WAIT,
        call_timeout: args.call_timeout,
        connect: ConnectOptions::from_env(),
        budget: Budget::default(),
        project_dir: PathBuf::from("."),
        max_output: args.max_output_tokens,
        login,
    }
}

/// `--max-output-tokens`: a count (`6000`, `6k`), 0 for off.
pub(super) fn parse_budget(text: &str) -> Result<crate::outputs::Budget, String> {
    crate::outputs::budget_for(text)
        .ok_or_else(|| format!("{text:?} is not a token count: give one like 6000 or 6k (0: off)"))
}

/// What `serve --http` serves with: where, the key, the authentication, the tunnel.
struct Served {
    addr: SocketAddr,
    key: Option<String>,
    auth: AuthMode,
    tunnel: Option<super::serve_tunnel::TunnelPlan>,
    /// With `--auth oidc:ISSUER`: the provider, discovered before anything started.
    delegate: Option<crate::auth::server::oidc::Delegate>,
    /// With `--oidc-client-id`: the provider's client its login is proxied as.
    proxied: Option<crate::auth::server::proxy::Login>,
}

/// Binds `--http`, opens the tunnel to it (if any) and serves until `stop` or until the tunnel
/// ends; the tunnel is shut down on every way out (its guard kills it when dropped early).
async fn serve_http(
    gateway: Gateway,
    served: Served,
    args: &ServeArgs,
    stop: CancellationToken,
) -> Result<(), CliError> {
    let listener = tokio::net::TcpListener::bind(served.addr).await?;
    let bound = listener.local_addr()?;
    eprintln!("mcp-launch serve: http://{bound}/mcp");
    let opened = match &served.tunnel {
        Some(plan) => Some(super::serve_tunnel::open(plan, bound.port()).await?),
        None => None,
    };
    // Clients know the public URL: it is the issuer and the tokens' audience.
    let base = opened
        .as_ref()
        .map_or_else(|| format!("http://{bound}"), |o| o.base.clone());
    let oauth = match served.delegate {
        Some(delegate) => Some(super::serve_oauth::delegated(
            &base,
            delegate,
            args.oidc_audience.as_deref(),
            "mcp-launch serve",
            served.proxied,
        )),
        None => (served.auth == AuthMode::Oauth).then(|| super::serve_oauth::server(&base)),
    };
    if let Some(opened) = &opened {
        super::serve_tunnel::announce(opened, &served.auth);
    }
    let options = HttpOptions {
        addr: bound,
        api_key: served.key,
        oauth,
        public_url: opened.as_ref().map(|o| o.base.clone()),
        allowed_hosts: args.allowed_hosts.clone(),
        limits: crate::listen::Limits::default(),
        sessions: wire::SessionLimits {
            max_sessions: args.max_sessions,
            max_per_key: args.max_sessions_per_key,
            idle: args.session_idle,
        },
    };
    let serving = wire::serve_http(gateway, listener, options, stop.clone());
    let Some(opened) = opened else {
        return Ok(serving.await?);
    };
    tokio::pin!(serving);
    let result = tokio::select! {
        served = &mut serving => served.map_err(CliError::Output),
        ended = opened.tunnel.ended(&opened.kind) => {
            stop.cancel();
            let _ = serving.await;
            Err(CliError::Tunnel(ended))
        }
    };
    opened.tunnel.guard.shutdown().await;
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_takes_key_oauth_none_and_an_oidc_issuer() {
        assert_eq!(AuthMode::parse("oauth"), Ok(AuthMode::Oauth));
        assert_eq!(
            AuthMode::parse("oidc:https://idp.example.com"),
            Ok(AuthMode::Oidc("https://idp.example.com".into()))
        );
        for bad in ["oidc:", "oidc", "jwt"] {
            let refused = AuthMode::parse(bad).unwrap_err();
            assert!(refused.contains("oidc:ISSUER"), "{refused}");
        }
        use clap::Parser;
        let parsed = crate::cli::Cli::try_parse_from([
            "mcp-launch",
            "serve",
            "--http",
            "127.0.0.1:0",
            "--auth",
            "oidc:https://idp.example.com",
            "--oidc-audience",
            "api://mcp",
        ]);
        assert!(parsed.is_ok(), "{:?}", parsed.err());
    }

    #[test]
    fn an_allowed_host_is_a_name_with_or_without_a_port() {
        for good in [
            "mcp.example.com",
            "MCP.internal:8443",
            "10.0.0.5",
            "[::1]:80",
        ] {
            assert!(parse_allowed_host(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "https://mcp.example.com",
            "mcp.example.com/mcp",
            "*.example.com",
            "a b",
        ] {
            let refused = parse_allowed_host(bad).unwrap_err();
            assert!(refused.contains("no scheme"), "{bad}: {refused}");
        }
    }
}
