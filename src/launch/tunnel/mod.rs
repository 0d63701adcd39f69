//! Cloudflare tunnels through `cloudflared`: a quick tunnel (a random
//! `https://…trycloudflare.com` address, no account) or a named tunnel (the user's own, by
//! name or by `TUNNEL_TOKEN`), started and watched until it is ready to carry traffic.
//!
//! Two sources tell us how it goes, and we listen to both: cloudflared's log (the URL box,
//! `Registered tunnel connection`) and its metrics server, on a loopback port we choose
//! (`/quicktunnel` names the hostname, `/ready` answers 200 once a connection is registered).
//! The metrics server is the authority — log lines change between versions and vanish under
//! `TUNNEL_LOGLEVEL=warn` — and the log is the fallback that works when the metrics server
//! cannot be reached.
//!
//! Invariants: [`start`] either returns a ready [`Tunnel`] or leaves no process behind; it
//! keeps no state between calls, so a supervisor restarts a tunnel by calling it again. The
//! token of a named tunnel only ever travels in the environment (`ps` shows command lines).

mod error;
mod url;

#[cfg(test)]
mod tests;

use std::ffi::OsString;
use std::fmt;
use std::net::{Ipv4Addr, TcpListener};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::mcp::limits::read_capped;
use crate::process::{
    spawn_service, verify_listener, Exit, LineSink, ProcessGuard, SpawnSpec, Squatted,
};

pub use error::TunnelError;
pub use url::parse_quick_url;

/// Environment variable naming the cloudflared binary to use; it wins over `PATH`.
pub const CLOUDFLARED_ENV: &str = "MCP_LAUNCH_CLOUDFLARED";

/// The variable cloudflared reads a named tunnel's token from.
pub const TOKEN_ENV: &str = "TUNNEL_TOKEN";

/// A reasonable [`TunnelSpec::ready_timeout`]: a quick tunnel usually answers in a few
/// seconds, but asking the trycloudflare API and registering with the edge can each take
/// several more on a slow link.
pub const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long cloudflared itself waits for open connections after SIGTERM (its default is 30 s,
/// which would hold up every `down` and restart). [`ProcessGuard::shutdown`] kills it sooner
/// still; this bounds a stop through the state file.
const GRACE_PERIOD: &str = "1s";

/// How often the metrics server is asked while we wait: often enough that readiness is noticed
/// within a blink, rarely enough to cost nothing.
const POLL_INTERVAL: Duration = Duration::from_millis(200);

/// The limit on one metrics request. A loopback server answers in milliseconds; this only stops
/// a wedged one from stalling the wait loop (which must keep noticing an exit).
const METRICS_REQUEST_TIMEOUT: Duration = Duration::from_secs(1);

/// How long we give the output pipes to drain after cloudflared exits, so that the error
/// carries its last words (the exit is reported before the pipes reach their end).
const SETTLE_AFTER_EXIT: Duration = Duration::from_secs(1);

/// Log lines kept in an error: enough for cloudflared's error and the lines leading to it.
const TAIL_LINES: usize = 15;

/// The log line cloudflared prints when a connection to Cloudflare's edge is up.
const REGISTERED_MARK: &str = "Registered tunnel connection";

/// Which tunnel to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TunnelKind {
    /// A quick tunnel: a random `https://<words>.trycloudflare.com`, no account needed.
    Quick,
    /// A named tunnel. Its ingress (config file or dashboard) must route to the local port;
    /// the public address is the user's to give (`--public-url`).
    Named {
        /// The tunnel's name or UUID (credentials from `~/.cloudflared`); `None` runs the tunnel
        /// whose token is in `TUNNEL_TOKEN`.
        name: Option<String>,
    },
}

impl fmt::Display for TunnelKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TunnelKind::Quick => f.write_str("quick tunnel"),
            TunnelKind::Named { name: Some(name) } => write!(f, "named tunnel `{name}`"),
            TunnelKind::Named { name: None } => write!(f, "named tunnel from {TOKEN_ENV}"),
        }
    }
}

/// Everything [`start`] needs.
#[derive(Debug, Clone)]
pub struct TunnelSpec {
    /// The cloudflared binary (see [`find_cloudflared`]).
    pub program: PathBuf,
    /// Quick or named.
    pub kind: TunnelKind,
    /// The loopback port a quick tunnel forwards to.
    pub local_port: u16,
    /// A free loopback port for cloudflared's metrics server, which we read readiness from.
    pub metrics_port: u16,
    /// How long to wait for the URL and the first registered connection.
    pub ready_timeout: Duration,
    /// Variables set for cloudflared on top of the inherited environment — e.g. `TUNNEL_TOKEN`
    /// for a named tunnel, which must never go on the command line.
    pub env: Vec<(String, String)>,
}

impl TunnelSpec {
    /// A tunnel of `kind`, run by `program`, to `http://127.0.0.1:<local_port>`: a free
    /// loopback port for the metrics server, [`DEFAULT_READY_TIMEOUT`], nothing added to the
    /// environment. For callers that run one tunnel (`serve --http --tunnel`).
    pub fn to_local_port(kind: TunnelKind, program: PathBuf, local_port: u16) -> Self {
        TunnelSpec {
            program,
            kind,
            local_port,
            metrics_port: free_loopback_port().unwrap_or(0),
            ready_timeout: DEFAULT_READY_TIMEOUT,
            env: Vec::new(),
        }
    }
}

/// A loopback port nobody listens on now (the OS's pick).
fn free_loopback_port() -> Option<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).ok()?;
    listener.local_addr().ok().map(|a| a.port())
}

/// A running, ready tunnel.
pub struct Tunnel {
    /// Owns cloudflared's process group: `shutdown()` to stop it, dropping it kills it.
    pub guard: ProcessGuard,
    /// A quick tunnel's public URL (`https://…trycloudflare.com`, no trailing slash); `None`
    /// for a named tunnel.
    pub url: Option<String>,
    /// The port of cloudflared's metrics server (`/ready`, `/metrics`).
    pub metrics_port: u16,
}

impl Tunnel {
    /// Resolves when cloudflared ends, with why (the exit and its last log lines): `kind` is
    /// the tunnel's, for the message. Never resolves while it runs.
    pub async fn ended(&self, kind: &TunnelKind) -> TunnelError {
        let mut watch = self.guard.exit_watch();
        // The watch closes only once the exit is in it; a closed one without is not an exit.
        let exit = match watch.wait_for(Option::is_some).await.map(|status| *status) {
            Ok(Some(exit)) => exit,
            _ => std::future::pending().await,
        };
        self.guard.settle(SETTLE_AFTER_EXIT).await;
        TunnelError::Ended {
            kind: kind.clone(),
            exit,
            tail: self.guard.stderr_tail(TAIL_LINES),
        }
    }
}

/// The cloudflared to run: the path in `MCP_LAUNCH_CLOUDFLARED` when set (trusted as given; a
/// wrong path surfaces as [`TunnelError::NotInstalled`] when starting), else `cloudflared` on
/// `PATH`.
pub fn find_cloudflared() -> Option<PathBuf> {
    locate(
        std::env::var_os(CLOUDFLARED_ENV),
        std::env::var_os("PATH").as_deref(),
    )
}

fn locate(configured: Option<OsString>, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    match configured {
        Some(program) if !program.is_empty() => Some(PathBuf::from(program)),
        _ => path.and_then(|path| crate::process::which_in("cloudflared", path)),
    }
}

/// Starts cloudflared for `spec` and waits until the tunnel is ready: for a quick tunnel, its
/// URL is known and a connection is registered; for a named one, a connection is registered.
///
/// Every output line goes to `sink` as it arrives. On failure nothing keeps running: an early
/// exit gives [`TunnelError::Exited`], and at `spec.ready_timeout` the process group is shut
/// down and [`TunnelError::Timeout`] returned.
pub async fn start(spec: &TunnelSpec, sink: LineSink) -> Result<Tunnel, TunnelError> {
    if matches!(spec.kind, TunnelKind::Named { name: None })
        && !token_available(&spec.env, std::env::var(TOKEN_ENV).ok())
    {
        return Err(TunnelError::NoToken);
    }
    ensure_port_free(spec.metrics_port)?;
    let (sink, log) = watching(sink);
    let guard = spawn_service(&spawn_spec(spec), sink)?;
    let mut watcher = Readiness::new(spec, log, guard.pgid());
    let waited = tokio::time::timeout(spec.ready_timeout, watcher.wait(guard.exit_watch())).await;
    match waited {
        Ok(Ok(url)) => Ok(Tunnel {
            guard,
            url,
            metrics_port: spec.metrics_port,
        }),
        Ok(Err(Stopped::Squatted(squatted))) => {
            guard.shutdown().await;
            Err(TunnelError::MetricsPortSquatted(squatted))
        }
        Ok(Err(Stopped::Exited(exit))) => {
            guard.settle(SETTLE_AFTER_EXIT).await;
            Err(TunnelError::Exited {
                kind: spec.kind.clone(),
                exit,
                tail: guard.stderr_tail(TAIL_LINES),
            })
        }
        Err(_elapsed) => {
            let tail = guard.stderr_tail(TAIL_LINES);
            guard.shutdown().await;
            Err(TunnelError::Timeout {
                kind: spec.kind.clone(),
                waited: spec.ready_timeout,
                tail,
                saw_url: watcher.saw_url(),
            })
        }
    }
}

/// True when `GET <url>/healthz` answers with a success status within `timeout` — the public
/// side of a tunnel works end to end (Cloudflare answers 502/530 itself when it does not).
pub async fn probe_public(url: &str, timeout: Duration) -> bool {
    let Ok(client) = reqwest::Client::builder().timeout(timeout).build() else {
        return false;
    };
    let target = format!("{}/healthz", url.trim_end_matches('/'));
    client
        .get(target)
        .send()
        .await
        .is_ok_and(|r| r.status().is_success())
}

/// cloudflared's command line. Global flags go before `run`; no token ever appears here.
fn cloudflared_args(spec: &TunnelSpec) -> Vec<String> {
    let mut args: Vec<String> = [
        "tunnel",
        "--no-autoupdate",
        "--grace-period",
        GRACE_PERIOD,
        "--metrics",
    ]
    .map(String::from)
    .into();
    args.push(format!("127.0.0.1:{}", spec.metrics_port));
    match &spec.kind {
        TunnelKind::Quick => {
            args.push("--url".into());
            args.push(format!("http://127.0.0.1:{}", spec.local_port));
        }
        TunnelKind::Named { name } => {
            args.push("run".into());
            args.extend(name.iter().cloned());
        }
    }
    args
}

fn spawn_spec(spec: &TunnelSpec) -> SpawnSpec {
    // No child inherits TUNNEL_TOKEN (`process::WITHHELD_ENV`); cloudflared, the one that
    // needs it, is handed it explicitly.
    let mut env = spec.env.clone();
    if !env.iter().any(|(key, _)| key == TOKEN_ENV) {
        if let Some(token) = std::env::var_os(TOKEN_ENV) {
            env.push((TOKEN_ENV.into(), token.to_string_lossy().into_owned()));
        }
    }
    SpawnSpec {
        program: spec.program.to_string_lossy().into_owned(),
        args: cloudflared_args(spec),
        env,
        ..SpawnSpec::default()
    }
}

/// Whether cloudflared will find a token: the overlay's `TUNNEL_TOKEN` when it sets one (even
/// to empty, which hides the inherited one), else the inherited value.
fn token_available(overlay: &[(String, String)], inherited: Option<String>) -> bool {
    overlay
        .iter()
        .rev()
        .find(|(key, _)| key == TOKEN_ENV)
        .map(|(_, value)| value.clone())
        .or(inherited)
        .is_some_and(|token| !token.is_empty())
}

/// Refuses a metrics port someone already listens on: a leftover cloudflared there would
/// answer `/quicktunnel` with its own, stale hostname.
fn ensure_port_free(port: u16) -> Result<(), TunnelError> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, port))
        .map(drop)
        .map_err(|_| TunnelError::MetricsPortInUse { port })
}

/// What cloudflared's log has told us so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct LogSignals {
    /// The last quick tunnel URL printed.
    url: Option<String>,
    /// Whether a connection to the edge was registered.
    registered: bool,
}

impl LogSignals {
    /// Takes in one line; true when it changed anything.
    fn observe(&mut self, line: &str) -> bool {
        let mut changed = false;
        if let Some(url) = parse_quick_url(line) {
            changed |= self.url.as_ref() != Some(&url);
            self.url = Some(url);
        }
        if !self.registered && line.contains(REGISTERED_MARK) {
            self.registered = true;
            changed = true;
        }
        changed
    }
}

/// Wraps the caller's sink so that each line is also read for the URL and readiness.
fn watching(sink: LineSink) -> (LineSink, watch::Receiver<LogSignals>) {
    let (tx, rx) = watch::channel(LogSignals::default());
    let wrapped: LineSink = Arc::new(move |line: &str| {
        sink(line);
        tx.send_if_modified(|signals| signals.observe(line));
    });
    (wrapped, rx)
}

/// Why a tunnel stopped short of ready.
enum Stopped {
    /// cloudflared exited.
    Exited(Exit),
    /// Its metrics port answered from a process that is not cloudflared.
    Squatted(Squatted),
}

/// Waits for a tunnel to be ready, from its log and its metrics server.
struct Readiness {
    quick: bool,
    log: watch::Receiver<LogSignals>,
    metrics: Metrics,
    /// The URL `/quicktunnel` gave, once it gave one.
    metrics_url: Option<String>,
    /// cloudflared's process group: the metrics port's listener must be one of its members
    /// before an answer from it counts.
    pgid: Option<i32>,
    /// Whether that listener was found to be cloudflared's.
    verified: bool,
}

impl Readiness {
    fn new(spec: &TunnelSpec, log: watch::Receiver<LogSignals>, pgid: Option<i32>) -> Self {
        Readiness {
            quick: spec.kind == TunnelKind::Quick,
            log,
            metrics: Metrics::new(spec.metrics_port),
            metrics_url: None,
            pgid,
            verified: false,
        }
    }

    /// Returns the URL (`None` for a named tunnel) once ready, or why it never will be (an
    /// exit, a squatter on the metrics port). Not bounded in time: the caller is.
    async fn wait(
        &mut self,
        mut exit: watch::Receiver<Option<Exit>>,
    ) -> Result<Option<String>, Stopped> {
        // A closed channel stays "changed" forever: stop listening to it, or the loop spins.
        let (mut exit_open, mut log_open) = (true, true);
        loop {
            if let Some(status) = *exit.borrow_and_update() {
                return Err(Stopped::Exited(status));
            }
            if let Some(ready) = self.check().await.map_err(Stopped::Squatted)? {
                return Ok(ready);
            }
            tokio::select! {
                changed = exit.changed(), if exit_open => exit_open = changed.is_ok(),
                changed = self.log.changed(), if log_open => log_open = changed.is_ok(),
                () = tokio::time::sleep(POLL_INTERVAL) => {}
            }
        }
    }

    /// One look at both sources: `Some(url)` when ready. An answer of the metrics server
    /// counts only once its listener is known to be cloudflared's.
    async fn check(&mut self) -> Result<Option<Option<String>>, Squatted> {
        let log = self.log.borrow_and_update().clone();
        if self.quick && self.metrics_url.is_none() {
            self.metrics_url = self.metrics.quick_url().await;
        }
        if self.metrics_url.is_some() {
            self.verify()?;
        }
        let url = match (self.quick, choose_url(log.url, self.metrics_url.clone())) {
            (false, _) => None,
            (true, Some(url)) => Some(url),
            (true, None) => return Ok(None),
        };
        let ready = log.registered || self.metrics.ready().await;
        if ready && !log.registered {
            self.verify()?;
        }
        Ok(ready.then_some(url))
    }

    /// Checks once that the metrics port's listener belongs to cloudflared's group.
    fn verify(&mut self) -> Result<(), Squatted> {
        if let (false, Some(pgid)) = (self.verified, self.pgid) {
            verify_listener(self.metrics.port, pgid)?;
        }
        self.verified = true;
        Ok(())
    }

    /// Whether a quick tunnel URL appeared in either source.
    fn saw_url(&self) -> bool {
        self.metrics_url.is_some() || self.log.borrow().url.is_some()
    }
}

/// The URL to hand out when the log and the metrics server may each have named one. The
/// metrics server wins: it answers for this very process, while a log line is only text.
fn choose_url(from_log: Option<String>, from_metrics: Option<String>) -> Option<String> {
    match (from_log, from_metrics) {
        (Some(logged), Some(served)) if logged != served => {
            tracing::debug!(logged = %logged, served = %served, "the quick tunnel URL in cloudflared's log differs from /quicktunnel; using /quicktunnel");
            Some(served)
        }
        (logged, served) => served.or(logged),
    }
}

/// cloudflared's metrics server on loopback.
struct Metrics {
    /// `None` when no HTTP client could be built; then only the log tells.
    client: Option<reqwest::Client>,
    port: u16,
    base: String,
}

/// The body of `/quicktunnel`.
#[derive(serde::Deserialize)]
struct QuickTunnelInfo {
    hostname: String,
}

impl Metrics {
    fn new(port: u16) -> Self {
        let client = reqwest::Client::builder()
            // A proxy from the environment must not see (or break) loopback requests.
            .no_proxy()
            .timeout(METRICS_REQUEST_TIMEOUT)
            .build()
            .inspect_err(|e| tracing::debug!(error = %e, "no HTTP client for cloudflared's metrics; watching its log only"))
            .ok();
        Metrics {
            client,
            port,
            base: format!("http://127.0.0.1:{port}"),
        }
    }

    /// `GET <path>` on the metrics server; `None` when it does not answer.
    async fn get(&self, path: &str) -> Option<reqwest::Response> {
        let client = self.client.as_ref()?;
        client.get(format!("{}{path}", self.base)).send().await.ok()
    }

    /// The quick tunnel URL `/quicktunnel` names, if it answers with a valid hostname.
    async fn quick_url(&self) -> Option<String> {
        let response = self.get("/quicktunnel").await?.error_for_status().ok()?;
        // A few hundred bytes in truth; whatever answers on the port is not trusted with more.
        let body = read_capped(response, &self.base, 64 * 1024).await.ok()?;
        let info: QuickTunnelInfo = serde_json::from_slice(&body).ok()?;
        url::quick_url_from_hostname(&info.hostname)
    }

    /// Whether `/ready` says a connection is registered.
    async fn ready(&self) -> bool {
        self.get("/ready")
            .await
            .is_some_and(|r| r.status() == reqwest::StatusCode::OK)
    }
}
