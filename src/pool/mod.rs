//! The upstream pool: one long-lived session per server, shared by every caller — the native
//! bridge of a stack and the gateway both stand on it.
//!
//! - **Lazy**: nothing starts until the first request that needs a server (or
//!   [`Pool::connect_all`]); concurrent first requests share one start, which runs in its own
//!   task so a caller that hangs up does not abort it.
//! - **Restart with backoff**: a lost session (the server exited, the connection broke) marks
//!   the server down and schedules the next connect after a backoff — 1 s, 2 s, 4 s … up to
//!   30 s while attempts keep failing; a successful connect resets it. Until then requests get
//!   [`PoolError::Unavailable`] at once, naming the time of the next attempt. Nothing restarts
//!   in the background except always-on servers: the first request after the scheduled time
//!   reconnects, so a server nobody calls is never respawned in a loop.
//! - **Always on**: started by [`Pool::start_keepers`] and restarted (with the same backoff)
//!   as soon as their session ends.
//! - **Idle stop**: with [`PoolConfig::idle`], a server nothing used for that long is stopped
//!   (a remote one only loses our session: the server itself keeps running).
//! - **Remote sessions**: a server that forgot our session (HTTP 404 after its restart) gets a
//!   new one and the request is sent once more.
//! - **Health**: [`Pool::status`] per server; [`Pool::changes`] ticks on every change.
//! - **Both eras** (with [`PoolConfig::stateless`]): a stdio server holds one era per process
//!   (its first request decides), and a Streamable HTTP session one era per connection, so
//!   each gets a second upstream for clients of the stateless revision (2026-07-28), started
//!   on their first request and run the same way (lazy, backoff, idle stop): a second process,
//!   or over HTTP only a `server/discover` (no process, no session to hold). A server that
//!   does not speak it is marked so at that first connect ([`Upstream::refused`]; an HTTP
//!   server that cannot be reached is not) and its handshake upstream serves those clients.

mod action;
mod failure;
mod task;
mod traced;
mod upstream;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::{ServerEntry, ServerSpec};
use crate::mcp::{ConnectOptions, Session, DISCOVER_WINDOW};

pub use action::{Acted, UpstreamAction};
pub use failure::{retry_text, seconds_until, Failure, PoolError};
pub use upstream::{describe, Upstream};

/// The first wait after a failure, and the wait again after a successful connect.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The longest wait between attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How often idle servers are looked for, at most (less often for long idle limits).
const IDLE_SWEEP: Duration = Duration::from_secs(5);

/// One server for the pool.
pub struct PoolServer {
    /// How to start or reach it; its `name` names it in the pool.
    pub entry: ServerEntry,
    /// A live session to adopt (the preflight's), so the server is not started twice.
    pub session: Option<Session>,
    /// Started at boot and restarted when it dies (see [`Pool::start_keepers`]).
    pub always_on: bool,
}

impl PoolServer {
    /// A server started on demand.
    pub fn lazy(entry: ServerEntry) -> PoolServer {
        PoolServer {
            entry,
            session: None,
            always_on: false,
        }
    }
}

/// Called with each new session (and its server's name) before anyone uses it.
pub type SessionHook = Arc<dyn Fn(&str, &Session) + Send + Sync>;

/// How the pool runs its servers.
#[derive(Clone)]
pub struct PoolConfig {
    /// Handshake timeouts for every (re)connect.
    pub connect: ConnectOptions,
    /// Stop a server after this long without requests (`None`: never).
    pub idle: Option<Duration>,
    /// Set up each new session (the gateway passes the server's own requests on).
    pub on_session: Option<SessionHook>,
    /// Keep a stateless-revision upstream beside each stdio and Streamable HTTP server's (see
    /// the module doc).
    pub stateless: bool,
}

/// A server's health, for `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerState {
    /// A session is established.
    Up,
    /// No session: not started yet, stopped while idle, or lost; the next request (after the
    /// backoff) connects.
    Down,
    /// A connect is in progress (the first one or a restart).
    Restarting,
}

impl ServerState {
    /// The name used in output and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerState::Up => "up",
            ServerState::Down => "down",
            ServerState::Restarting => "restarting",
        }
    }
}

/// One server's health as the pool sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStatus {
    /// The server's name.
    pub name: String,
    /// Up, down or restarting.
    pub state: ServerState,
    /// Sessions re-established after a loss.
    pub restarts: u32,
    /// The last thing that went wrong (kept after a recovery, as history).
    pub last_error: Option<String>,
    /// While down and backing off: how long until a request may reconnect.
    pub next_attempt: Option<Duration>,
    /// The process group of a live stdio server (record it so `down` can end it).
    pub pgid: Option<i32>,
    /// Requests answered or failed so far.
    pub calls: u64,
    /// While up: how long since the last request ended.
    pub idle_for: Option<Duration>,
    /// Whether the pool keeps it running.
    pub always_on: bool,
}

/// The servers of one bridge or gateway. Cheap to clone: clones share the sessions.
#[derive(Clone)]
pub struct Pool {
    inner: Arc<Inner>,
}

struct Inner {
    /// In the order given (for `status`).
    servers: Vec<Arc<Upstream>>,
    by_name: HashMap<String, Arc<Upstream>>,
    /// The stateless-revision upstreams of stdio and Streamable HTTP servers, by name.
    stateless: HashMap<String, Arc<Upstream>>,
    idle: Option<Duration>,
    /// Cancelled by [`Pool::shutdown`]: requests end with `ShuttingDown`, connects stop.
    closing: CancellationToken,
    /// Told whenever a server's health changes.
    changes: Arc<watch::Sender<()>>,
    /// The keepers and the idle sweeper, joined on shutdown.
    tasks: TaskTracker,
}

impl Pool {
    /// A pool over `servers`; nothing connects until a request, [`Pool::connect_all`] or
    /// [`Pool::start_keepers`]. A later server with an already-used name is ignored.
    pub fn new(servers: Vec<PoolServer>, config: PoolConfig) -> Pool {
        let closing = CancellationToken::new();
        let changes = Arc::new(watch::Sender::new(()));
        let mut by_name = HashMap::with_capacity(servers.len());
        let mut ordered = Vec::with_capacity(servers.len());
        let mut stateless = HashMap::new();
        for server in servers {
            if by_name.contains_key(&server.entry.name) {
                tracing::warn!(server = %server.entry.name, "duplicate server name; ignored");
                continue;
            }
            let revision = config
                .stateless
                .then(|| stateless_options(&server.entry, config.connect))
                .flatten();
            if let Some(connect) = revision {
                let upstream = Upstream::new(
                    PoolServer::lazy(server.entry.clone()),
                    connect,
                    config.on_session.clone(),
                    closing.clone(),
                    Arc::clone(&changes),
                );
                stateless.insert(server.entry.name.clone(), Arc::new(upstream));
            }
            let upstream = Arc::new(Upstream::new(
                server,
                config.connect,
                config.on_session.clone(),
                closing.clone(),
                Arc::clone(&changes),
            ));
            by_name.insert(upstream.name().to_string(), Arc::clone(&upstream));
            ordered.push(upstream);
        }
        Pool {
            inner: Arc::new(Inner {
                servers: ordered,
                by_name,
                stateless,
                idle: config.idle.filter(|idle| !idle.is_zero()),
                closing,
                changes,
                tasks: TaskTracker::new(),
            }),
        }
    }

    /// The server named `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<Upstream>> {
        self.inner.by_name.get(name)
    }

    /// The stateless-revision upstream of the server named `name` (see the module doc).
    pub fn stateless(&self, name: &str) -> Option<&Arc<Upstream>> {
        self.inner.stateless.get(name)
    }

    /// Every stateless-revision upstream (see the module doc).
    pub fn stateless_servers(&self) -> impl Iterator<Item = &Arc<Upstream>> {
        self.inner.stateless.values()
    }

    /// The server named `name`, or the error a request for it gets.
    pub fn upstream(&self, name: &str) -> Result<&Arc<Upstream>, PoolError> {
        self.get(name).ok_or_else(|| PoolError::UnknownServer {
            server: name.to_string(),
        })
    }

    /// Every server, in the order given.
    pub fn servers(&self) -> &[Arc<Upstream>] {
        &self.inner.servers
    }

    /// Connects every server in parallel. A server that fails stays down (its error is in
    /// [`Pool::status`]) and is retried by its next request after the backoff.
    pub async fn connect_all(&self) -> Vec<(String, Result<(), String>)> {
        let connects = self.inner.servers.iter().map(|upstream| async move {
            (
                upstream.name().to_string(),
                upstream.ensure_connected().await,
            )
        });
        futures_util::future::join_all(connects).await
    }

    /// Starts the always-on servers (and keeps them running) and the idle sweeper.
    pub fn start_keepers(&self) {
        for upstream in self.inner.servers.iter().filter(|u| u.always_on()) {
            self.inner.tasks.spawn(Arc::clone(upstream).keep_alive());
        }
        if let Some(idle) = self.inner.idle {
            self.inner.tasks.spawn(self.clone().sweep_idle(idle));
        }
    }

    /// Stops servers idle for `idle`, looking every [`IDLE_SWEEP`] (or a quarter of `idle`
    /// when that is shorter), until the pool closes.
    async fn sweep_idle(self, idle: Duration) {
        let every = IDLE_SWEEP.min(idle / 4).max(Duration::from_millis(20));
        loop {
            tokio::select! {
                () = tokio::time::sleep(every) => {}
                () = self.inner.closing.cancelled() => return,
            }
            for upstream in self
                .inner
                .servers
                .iter()
                .chain(self.inner.stateless.values())
            {
                upstream.stop_if_idle(idle).await;
            }
        }
    }

    /// A receiver that sees a change whenever a server connects, fails, is lost, stops or
    /// closes (read [`Pool::status`] then).
    pub fn changes(&self) -> watch::Receiver<()> {
        self.inner.changes.subscribe()
    }

    /// Every server's health, in the order given.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.inner.servers.iter().map(|u| u.status()).collect()
    }

    /// The health of the stateless-revision upstreams that have run (started, or tried to
    /// and not found the server of the handshake era only), in the order given.
    pub fn stateless_status(&self) -> Vec<ServerStatus> {
        let stateless = &self.inner.stateless;
        let ran = self
            .inner
            .servers
            .iter()
            .filter_map(|u| stateless.get(u.name()));
        ran.filter(|u| !u.refused())
            .map(|u| u.status())
            .filter(|s| s.state != ServerState::Down || s.calls > 0 || s.last_error.is_some())
            .collect()
    }

    /// Completes once [`Pool::shutdown`] has begun.
    pub fn closed(&self) -> tokio_util::sync::WaitForCancellationFutureOwned {
        self.inner.closing.clone().cancelled_owned()
    }

    /// Whether [`Pool::shutdown`] has begun.
    pub fn is_closing(&self) -> bool {
        self.inner.closing.is_cancelled()
    }

    /// Ends every session: in-flight requests end with `ShuttingDown`, each stdio server's
    /// process group gets TERM, a grace period, then KILL; no server starts afterwards.
    pub async fn shutdown(&self) {
        self.inner.closing.cancel();
        self.inner.tasks.close();
        let every = self.inner.servers.iter();
        let closes = every
            .chain(self.inner.stateless.values())
            .map(|u| u.close());
        futures_util::future::join_all(closes).await;
        self.inner.tasks.wait().await;
    }
}

/// How a server's stateless-revision upstream connects, when it may have one: a stdio server
/// with the pool's options (its process starts in the revision); a Streamable HTTP server
/// within [`DISCOVER_WINDOW`], as the era probe asks (a server of the handshake era refuses
/// `server/discover` at once, or never answers it). Legacy SSE is of the handshake era only.
fn stateless_options(entry: &ServerEntry, connect: ConnectOptions) -> Option<ConnectOptions> {
    let stateless = ConnectOptions {
        stateless: true,
        probe_revision: false,
        ..connect
    };
    match entry.spec.as_ref().ok()? {
        ServerSpec::Stdio { .. } => Some(stateless),
        ServerSpec::Http { .. } => Some(ConnectOptions {
            fast_window: DISCOVER_WINDOW.min(connect.fast_window),
            slow_window: Duration::ZERO,
            ..stateless
        }),
        ServerSpec::Sse { .. } => None,
    }
}

#[cfg(test)]
mod tests;
