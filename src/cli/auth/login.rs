//! `mcp-launch auth login SERVER`: the browser comes back to a loopback listener on a port
//! derived from the server's name (so a redirect URI stays valid), another when that one is
//! taken — or, for a client registered by hand with `oauth.callbackPort`, exactly
//! `http://localhost:PORT/callback` as the app lists it (on 127.0.0.1 and ::1); `--no-browser`
//! prints the URL and reads the pasted redirect; `--device` (and a machine with no browser
//! whose authorization server offers it) shows a code to enter on any device (RFC 8628).
//!
//! With our Client ID Metadata Document named (the server's `oauth.clientMetadataUrl`, else
//! `MCP_LAUNCH_CLIENT_METADATA_URL`), a login to an authorization server that takes such
//! documents uses its URL as the client id instead of registering (one that does not gets a
//! dynamic registration as before); the redirect then must be one the hosted document lists,
//! so the server's own port is the only one taken (`auth client-metadata` lists them).

use std::time::Duration;

use clap::Args;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

use crate::auth::client::device;
use crate::auth::client::login::{start, Flow, LoginRequest, Started};
use crate::auth::client::{http_client, store, Grant, PreRegistered};
use crate::config::{
    client_metadata_url_fault, Loaded, OAuthClient, ServerEntry, ServerSpec,
    CLIENT_METADATA_URL_FORM,
};
use crate::output;

use super::super::{load_config, CliError, GlobalArgs, Outcome};

/// Ports derived from server names lie in `BASE_PORT..BASE_PORT + PORT_SPAN`.
const BASE_PORT: u16 = 33_000;
const PORT_SPAN: u16 = 2_000;
/// How long the browser may take to come back.
const CALLBACK_WAIT: Duration = Duration::from_secs(300);
/// The callback's request head is small; more is not read.
const HEAD_CAP: u64 = 8 * 1024;
/// Our Client ID Metadata Document's URL for servers whose `oauth` names none.
pub(super) const CLIENT_METADATA_ENV: &str = "MCP_LAUNCH_CLIENT_METADATA_URL";

/// Log in to SERVER.
#[derive(Debug, Args)]
pub struct LoginArgs {
    /// The server's name in the config.
    pub server: String,
    /// Print the URL to open and read the URL the browser was sent back to from stdin.
    #[arg(long, conflicts_with = "device")]
    pub no_browser: bool,
    /// Device authorization (RFC 8628): show a code to enter at the authorization server's
    /// page, on any device; chosen by itself on a machine with no browser (no DISPLAY, or
    /// over SSH) when the authorization server offers it.
    #[arg(long)]
    pub device: bool,
    /// Ask for these scopes too (space-separated), with the ones asked for before: what a
    /// server's "needs a login with more scopes" error names.
    #[arg(long, value_name = "SCOPES")]
    pub scope: Option<String>,
}

/// Runs `auth login`.
pub async fn run(args: LoginArgs, global: &GlobalArgs) -> Result<Outcome, CliError> {
    let loaded = load_config(global)?;
    let entry = loaded.find(&args.server).ok_or_else(|| CliError::Usage {
        message: format!("no server named {:?}", args.server),
        help: format!("servers: {}", loaded.server_names().join(", ")),
    })?;
    let how = match (args.device, args.no_browser) {
        (true, _) => How::Device,
        (_, true) => How::Paste,
        _ => How::Browser,
    };
    let grant = log_in(&loaded, entry, args.scope, how).await?;
    report(&grant, global)?;
    Ok(Outcome::Success)
}

/// How the person authorizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum How {
    /// A browser opened here, coming back to our loopback listener; on a machine with no
    /// browser, the device flow where the authorization server offers it.
    Browser,
    /// The URL printed, the redirect pasted (`--no-browser`).
    Paste,
    /// Device authorization (`--device`).
    Device,
}

impl How {
    /// The library's flow for this choice on this machine.
    fn flow(self, headless: bool) -> Flow {
        match self {
            How::Device => Flow::Device,
            How::Browser if headless => Flow::DeviceWhereOffered,
            How::Browser | How::Paste => Flow::Redirect,
        }
    }
}

/// Whether no browser can open here: an SSH session, or (off macOS) no graphical display.
fn is_headless() -> bool {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    let over_ssh = set("SSH_CONNECTION") || set("SSH_TTY");
    let no_display = !cfg!(target_os = "macos") && !set("DISPLAY") && !set("WAYLAND_DISPLAY");
    over_ssh || no_display
}

/// Logs in to `entry`'s server and stores the grant: `auth login`, and `call` on a terminal
/// when the server asks for more scopes (a step-up). Says so when the server's authorization
/// server is not the one of the grant held before (it registers anew there).
pub(crate) async fn log_in(
    loaded: &Loaded,
    entry: &ServerEntry,
    scope: Option<String>,
    how: How,
) -> Result<Grant, CliError> {
    let server = entry.qualified.as_str();
    let (url, oauth) = match &entry.spec {
        Ok(ServerSpec::Http { url, oauth, .. }) => (url.clone(), oauth.as_ref()),
        // The legacy HTTP+SSE transport: the stream's URL is the endpoint (no `oauth` block).
        Ok(ServerSpec::Sse { url, .. }) => (url.clone(), None),
        Err(config) => return Err(config.clone().into()),
        _ => {
            return Err(CliError::Usage {
                message: format!("{server} is not a remote (Streamable HTTP or SSE) server"),
                help: "OAuth login is for servers with a \"url\"".into(),
            })
        }
    };
    let origin = origin(loaded, entry);
    let document = document_url(oauth)?;
    let (listeners, redirect_uri) = match oauth.and_then(|o| o.callback_port) {
        Some(port) => listen_fixed(port, &origin).await?,
        // The hosted document lists this port's redirect URI: no other would be let in.
        None if document.is_some() && how != How::Device => listen_own(server).await?,
        None => listen(server).await?,
    };
    let http = http_client();
    let request = LoginRequest {
        server: server.to_string(),
        url,
        redirect_uri: redirect_uri.clone(),
        registered: oauth.and_then(|o| pre_registered(o, origin)),
        metadata_document: document,
        scope,
        flow: how.flow(is_headless()),
        metadata_url: oauth.and_then(|o| o.metadata_url.clone()),
    };
    let started = start(&http, request).await?;
    if let Some(old) = &started.replaces_issuer {
        anstream::eprintln!("{server}: its authorization server changed from {old}; registering anew with the new one (nothing from {old} is sent to it)");
    }
    let grant = match started.flow() {
        Flow::Device => {
            drop(listeners);
            by_device(&http, started).await?
        }
        _ => by_redirect(&http, started, how, &listeners, &redirect_uri).await?,
    };
    store::save(grant.clone()).await?;
    Ok(grant)
}

/// The device flow: the code and where to enter it on stderr, then the polls.
async fn by_device(http: &reqwest::Client, started: Started) -> Result<Grant, CliError> {
    use std::io::Write;
    let login = device::begin(http, started).await?;
    let mut said = format!(
        "On any device, open {} and enter the code {}",
        login.verification_uri, login.user_code
    );
    if let Some(complete) = &login.verification_uri_complete {
        said.push_str(&format!("\n(or open {complete}, which carries the code)"));
    }
    let _ = writeln!(output::stderr(), "{said}\nWaiting for the approval…");
    Ok(login.finish(http).await?)
}

/// The authorization code flow: the browser (or the pasted redirect), then the exchange.
async fn by_redirect(
    http: &reqwest::Client,
    started: Started,
    how: How,
    listeners: &[TcpListener],
    redirect_uri: &str,
) -> Result<Grant, CliError> {
    let pending = started.authorize()?;
    pending.check_client(http).await?;
    let shown = pending.authorize_url.to_string();
    let redirected = if how == How::Paste {
        anstream::eprintln!("Open this URL in a browser, log in, then paste the address the browser was sent to:\n\n{shown}\n");
        read_pasted().await?
    } else {
        open_browser(&shown);
        anstream::eprintln!("Waiting for the browser to come back (open this URL if it did not start):\n\n{shown}\n");
        wait_for_callback(listeners, redirect_uri).await?
    };
    Ok(pending.finish(http, &redirected).await?)
}

fn report(grant: &Grant, global: &GlobalArgs) -> Result<(), CliError> {
    if global.json {
        output::print_json(&json!({
            "success": true,
            "server": grant.server,
            "issuer": grant.issuer,
            "scopes": grant.scope,
            "expiresAt": grant.expires_at,
        }))?;
    } else {
        anstream::println!(
            "logged in to {} (issuer {}, scopes {})",
            grant.server,
            grant.issuer,
            grant.scope.as_deref().unwrap_or("-")
        );
    }
    Ok(())
}

/// Where the client of `entry` is configured, for errors: the file, the server, the field.
fn origin(loaded: &Loaded, entry: &ServerEntry) -> String {
    let file = loaded
        .stacks
        .iter()
        .find(|stack| stack.name == entry.stack)
        .map(|stack| stack.path.display().to_string())
        .unwrap_or_else(|| entry.stack.clone());
    format!("\"oauth\" of server {:?} in {file}", entry.name)
}

/// Our Client ID Metadata Document's URL for a server with this `oauth` block: its
/// `clientMetadataUrl`, else [`CLIENT_METADATA_ENV`] (checked as the config's key is); none
/// for a client registered by hand, which is used as it is.
pub(super) fn document_url(oauth: Option<&OAuthClient>) -> Result<Option<String>, CliError> {
    if oauth.is_some_and(|o| o.client_id.is_some()) {
        return Ok(None);
    }
    if let Some(url) = oauth.and_then(|o| o.client_metadata_url.clone()) {
        return Ok(Some(url));
    }
    default_document_url()
}

/// [`CLIENT_METADATA_ENV`], checked; `None` when unset or empty.
pub(super) fn default_document_url() -> Result<Option<String>, CliError> {
    let url = std::env::var(CLIENT_METADATA_ENV).unwrap_or_default();
    if url.trim().is_empty() {
        return Ok(None);
    }
    match client_metadata_url_fault(&url) {
        None => Ok(Some(url)),
        Some(why) => Err(CliError::Usage {
            message: format!("{CLIENT_METADATA_ENV}={url:?} is refused: {why}"),
            help: format!(
                "make it {CLIENT_METADATA_URL_FORM}, or unset it to register dynamically"
            ),
        }),
    }
}

/// The flow's view of a client registered by hand (`None` for a block naming no client).
fn pre_registered(oauth: &OAuthClient, origin: String) -> Option<PreRegistered> {
    Some(PreRegistered {
        client_id: oauth.client_id.clone()?,
        client_secret: oauth.client_secret.clone(),
        scopes: oauth.scopes.clone(),
        origin,
    })
}

/// The loopback listener: the server's own port, else any free one; and its redirect URI.
async fn listen(server: &str) -> Result<(Vec<TcpListener>, String), CliError> {
    let own = port_of(server);
    let listener = match TcpListener::bind(("127.0.0.1", own)).await {
        Ok(listener) => listener,
        Err(_) => TcpListener::bind(("127.0.0.1", 0)).await?,
    };
    let port = listener.local_addr()?.port();
    Ok((vec![listener], redirect_uri(port)))
}

/// The listener of the server's own port only (its redirect URI is the one our hosted Client
/// ID Metadata Document lists).
async fn listen_own(server: &str) -> Result<(Vec<TcpListener>, String), CliError> {
    let port = port_of(server);
    let why = format!("the client metadata document lists http://127.0.0.1:{port}/callback for {server}; log in again once it is free");
    let listener = bind_exactly(port, &why).await?;
    Ok((vec![listener], redirect_uri(port)))
}

/// Listens on 127.0.0.1:`port` and no other: a redirect URI registered or hosted names it.
/// `why` ends the help of the error when the port is taken.
async fn bind_exactly(port: u16, why: &str) -> Result<TcpListener, CliError> {
    TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|e| CliError::Usage {
            message: format!("cannot listen on 127.0.0.1:{port} for the login's redirect: {e}"),
            help: format!(
                "stop what holds port {port} (`ss -ltnp 'sport = :{port}'` names it): {why}"
            ),
        })
}

/// The redirect URI of a loopback port of ours.
pub(super) fn redirect_uri(port: u16) -> String {
    format!("http://127.0.0.1:{port}/callback")
}

/// The listeners of a fixed callback port: `http://localhost:PORT/callback`, the redirect URI
/// registered with the app (Claude Code's form), so no other port will do. A browser may
/// resolve `localhost` to either loopback address: both are listened on (::1 when the
/// machine has it).
async fn listen_fixed(port: u16, origin: &str) -> Result<(Vec<TcpListener>, String), CliError> {
    let why =
        format!("or register another redirect URI with the app and set `callbackPort` in {origin}");
    let v4 = bind_exactly(port, &why).await?;
    let mut listeners = vec![v4];
    listeners.extend(TcpListener::bind(("::1", port)).await.ok());
    Ok((listeners, fixed_redirect_uri(port)))
}

/// The redirect URI of a fixed callback port (`oauth.callbackPort`).
pub(super) fn fixed_redirect_uri(port: u16) -> String {
    format!("http://localhost:{port}/callback")
}

/// The stable port of `server` (FNV-1a of its name).
pub(super) fn port_of(server: &str) -> u16 {
    let hash = server.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    BASE_PORT + (hash % u32::from(PORT_SPAN)) as u16
}

fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let _ = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}

async fn read_pasted() -> Result<String, CliError> {
    let mut line = String::new();
    BufReader::new(tokio::io::stdin())
        .read_line(&mut line)
        .await
        .map_err(|e| CliError::Stdin(e.to_string()))?;
    Ok(line.trim().to_string())
}

/// The first request to the listener's `/callback`, as the full redirect URL; it is answered
/// with a page saying the browser may be closed.
async fn wait_for_callback(
    listeners: &[TcpListener],
    redirect_uri: &str,
) -> Result<String, CliError> {
    let timed_out = || CliError::Usage {
        message: format!(
            "the browser did not come back within {}s",
            CALLBACK_WAIT.as_secs()
        ),
        help: "retry with --no-browser and paste the address the browser was sent to".into(),
    };
    let deadline = tokio::time::Instant::now() + CALLBACK_WAIT;
    loop {
        let accepts = listeners.iter().map(|l| Box::pin(l.accept()));
        let (accepted, _, _) =
            tokio::time::timeout_at(deadline, futures_util::future::select_all(accepts))
                .await
                .map_err(|_| timed_out())?;
        let (socket, _) = accepted?;
        let mut reader = BufReader::new(socket.take(HEAD_CAP));
        let mut line = String::new();
        let read = tokio::time::timeout(Duration::from_secs(10), reader.read_line(&mut line)).await;
        let target = match read {
            Ok(Ok(_)) => line.split_whitespace().nth(1).map(str::to_string),
            _ => None,
        };
        let mut socket = reader.into_inner().into_inner();
        let Some(target) = target.filter(|t| t.starts_with("/callback")) else {
            let _ = socket
                .write_all(
                    b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                )
                .await;
            continue;
        };
        let page = "mcp-launch: login received; you can close this tab.";
        let answer = format!("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}", page.len());
        let _ = socket.write_all(answer.as_bytes()).await;
        let query = target.split_once('?').map(|(_, q)| q).unwrap_or_default();
        return Ok(format!("{redirect_uri}?{query}"));
    }
}

/// Revokes the grant's tokens at its authorization server (RFC 7009), best effort; whether
/// the server took the request.
pub(super) async fn revoke(grant: &Grant) -> bool {
    crate::auth::client::revoke(&http_client(), grant).await
}
