//! The gateway: `mcp-launch serve` — every configured server behind one MCP endpoint, in
//! full mode (every allowed tool, under `server__tool` names) or sparse mode (a handful of
//! meta-tools: search, describe, call, discover), with servers started on demand by the
//! upstream pool (`crate::pool`) and stopped when idle.
//!
//! Rooms: `catalog` (what is offered, from the tool index), `names` (exposed names),
//! `sparse` (the meta-tools), `items` (resources and prompts), `wire` (the MCP server side,
//! on rmcp, and its transports), `clients` (client config snippets), `calls` (routing a call
//! to its server), `refresh` (keeping the catalog current), `views` (what the command line
//! reads through a daemon). This module holds the state they share.

mod callers;
mod calls;
pub mod catalog;
pub mod clients;
pub mod daemon;
mod era;
pub mod error;
mod follow;
mod input;
mod items;
mod known;
mod meaning;
pub mod names;
pub mod reach;
mod refresh;
pub mod sparse;
mod tasks;
mod views;
pub mod wire;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, SystemTime};

use serde_json::Value;
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::catalog::{self as tool_catalog, Overrides, ServerReport};
use crate::config::ServerEntry;
use crate::mcp::ConnectOptions;
use crate::pool::{Pool, PoolConfig, PoolServer};

use self::callers::Callers;
pub use self::callers::ClientLink;
pub use self::calls::{Caller, Progress, Sink};
use self::catalog::{Budgets, Catalog};
pub use self::era::{asks_for_input, Stateless};
use self::error::GatewayError;
pub use self::reach::Reach;
pub use self::views::{Found, FoundTool};
use crate::outputs::Outputs;
use crate::search::semantic::Model;

/// How long shutdown waits for the gateway's own tasks to end.
const TASKS_GRACE: Duration = Duration::from_secs(2);

/// How the tools are offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Every allowed tool, directly.
    Full,
    /// The meta-tools (and pinned tools).
    Sparse,
    /// Full while the catalog fits the budget, else sparse.
    Auto,
}

/// When `auto` chooses full mode: at most this many tools and tokens.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Tools at most.
    pub tools: usize,
    /// o200k tokens of tool definitions at most.
    pub tokens: usize,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            tools: 40,
            tokens: 8_000,
        }
    }
}

/// How the gateway runs.
#[derive(Debug, Clone)]
pub struct GatewayOptions {
    /// Full, sparse or auto.
    pub mode: Mode,
    /// Stop a server after this long without calls (`None`: never).
    pub idle: Option<Duration>,
    /// Servers started at boot and kept running (by qualified or plain name).
    pub always_on: Vec<String>,
    /// Tools exposed directly in sparse mode (exposed names).
    pub pins: Vec<String>,
    /// Tools, resources and prompts keep their own names (one server fronted as is).
    pub passthrough: bool,
    /// How long `tools/list` waits for servers still being checked.
    pub list_wait: Duration,
    /// The longest a call may take.
    pub call_timeout: Duration,
    /// Handshake windows.
    pub connect: ConnectOptions,
    /// The budget of `auto`.
    pub budget: Budget,
    /// Where `overrides.json` lives (the project directory).
    pub project_dir: PathBuf,
    /// The most tokens a tool result may cost before it is cut (0: never cut).
    pub max_output: crate::outputs::Budget,
    /// The files a login command must name (a server that needs a login is answered with the
    /// exact command a person runs).
    pub login: crate::auth::client::LoginContext,
}

/// What clients hear of: list changes, and what upstreams send every client.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The tool list changed.
    Tools,
    /// The resource list changed.
    Resources,
    /// The prompt list changed.
    Prompts,
    /// A log message from a server (`notifications/message` params).
    Log(Value),
    /// A subscribed resource changed (`notifications/resources/updated` params, URI renamed).
    ResourceUpdated(Value),
}

/// The gateway. Cheap to clone: clones share everything.
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    entries: Vec<ServerEntry>,
    options: GatewayOptions,
    /// Full or sparse (auto is decided once, at start: the tool list must not change shape).
    sparse: std::sync::atomic::AtomicBool,
    catalog: RwLock<Arc<Catalog>>,
    /// The reports the catalog was built from (replaced per server as checks arrive).
    reports: tokio::sync::Mutex<Vec<ServerReport>>,
    /// Held through each rebuild of the catalog: rebuilds run one at a time, so a slower one
    /// that read older reports can never replace the catalog a newer one made.
    rebuilding: tokio::sync::Mutex<()>,
    /// True once every server without a fresh index entry has been checked.
    settled: watch::Receiver<bool>,
    changed: broadcast::Sender<Event>,
    /// Our progress tokens towards upstreams.
    next_token: AtomicU64,
    /// Clients with calls under way, who answer their servers' requests.
    callers: Arc<Callers>,
    /// Calls of 2026-07-28 clients waiting for their input (handshake-era servers).
    parked: input::Parked,
    /// Clients' tasks (both eras): the calls this process runs.
    task_store: Arc<tasks::Store>,
    /// With `--state`, every replica's tasks, as the shared store keeps them.
    shared_tasks: Option<tasks::Shared>,
    /// The log level a client asked for, passed to every server that starts.
    log_level: std::sync::Mutex<Option<Value>>,
    /// A release of freed memory is scheduled.
    releasing: std::sync::atomic::AtomicBool,
    shutdown: CancellationToken,
    /// Every task the gateway starts (joined, a bounded time, on shutdown).
    tasks: TaskTracker,
    /// Results within their budget, handles, usage.
    outputs: Outputs,
    /// Resources, templates and prompts as last seen, for servers not running.
    known: known::Known,
    /// The embedding model `search_tools` ranks meaning with (sparse mode, when installed).
    model: std::sync::OnceLock<Arc<Model>>,
    /// Searches by meaning so far: the weights' pages are given back after a quiet spell.
    model_uses: AtomicU64,
    /// Woken each time a catalog's tool vectors are in (`search_tools` waits on it).
    embedded: tokio::sync::Notify,
}

impl Gateway {
    /// Builds the catalog from the tool index (nothing starts), starts the always-on servers,
    /// checks the servers the index does not know (in parallel, through the pool, each stopped
    /// after its check unless always-on), chooses the mode once what is known is in (or after
    /// the list wait), and watches the overrides.
    pub async fn start(
        entries: Vec<ServerEntry>,
        options: GatewayOptions,
    ) -> Result<Gateway, GatewayError> {
        Self::start_on(entries, options, None).await
    }

    /// As [`Gateway::start`], over the upstreams of `pool`, which another part of this
    /// process already runs (a stack's native bridge in `up`): a server is not started twice.
    /// The pool keeps its own settings (no idle stop, no always-on keepers, no second
    /// upstream for 2026-07-28 clients, who reach the handshake one); its sessions were
    /// opened without the relayed capabilities, so servers do not ask our clients for
    /// sampling, elicitation or roots.
    pub async fn start_sharing(
        entries: Vec<ServerEntry>,
        options: GatewayOptions,
        pool: Pool,
    ) -> Result<Gateway, GatewayError> {
        Self::start_on(entries, options, Some(pool)).await
    }

    async fn start_on(
        entries: Vec<ServerEntry>,
        options: GatewayOptions,
        shared: Option<Pool>,
    ) -> Result<Gateway, GatewayError> {
        let overrides = load_overrides(&options)?;
        let entries: Vec<ServerEntry> = entries
            .into_iter()
            .filter(|e| !e.disabled && !overrides.is_disabled(e))
            .collect();
        let (reports, unknown) = tool_catalog::from_index(&entries);
        let outputs = Outputs::new(options.max_output);
        let known = known::Known::load(&entries, &reports);
        let catalog = build_catalog(&reports, &overrides, options.passthrough, &outputs).await;
        catalog.warn_repairs(None);
        catalog.warn_changes(None);
        let callers = Arc::new(Callers::default());
        let task_store = Arc::new(tasks::Store::default());
        let pool = match shared {
            Some(pool) => pool,
            None => own_pool(&entries, &options, &callers),
        };
        let (settle, settled) = watch::channel(unknown.is_empty());
        let gateway = Gateway {
            inner: Arc::new(Inner {
                pool,
                entries,
                sparse: std::sync::atomic::AtomicBool::new(false),
                catalog: RwLock::new(Arc::new(catalog)),
                reports: tokio::sync::Mutex::new(reports),
                rebuilding: tokio::sync::Mutex::new(()),
                settled,
                changed: broadcast::channel(64).0,
                next_token: AtomicU64::new(1),
                log_level: std::sync::Mutex::new(None),
                releasing: std::sync::atomic::AtomicBool::new(false),
                tasks: TaskTracker::new(),
                outputs,
                known,
                callers,
                parked: input::Parked::default(),
                shared_tasks: crate::state::shared()
                    .map(|redis| tasks::Shared::new(redis, Arc::downgrade(&task_store))),
                task_store,
                model: std::sync::OnceLock::new(),
                model_uses: AtomicU64::new(0),
                embedded: tokio::sync::Notify::new(),
                shutdown: CancellationToken::new(),
                options,
            }),
        };
        if !unknown.is_empty() {
            gateway.spawn(gateway.clone().check_unknown(unknown, settle));
        }
        gateway.spawn(gateway.clone().watch_upstreams());
        gateway.wait_settled().await;
        let needing = needing_capabilities(&gateway.catalog(), &gateway.inner.reports.lock().await);
        let sparse = choose_mode(&gateway.inner.options, &gateway.catalog(), &needing);
        gateway.inner.sparse.store(sparse, Ordering::Relaxed);
        if sparse {
            gateway.load_model();
        }
        // What loading the index and building the catalog freed is not ours to keep.
        crate::memory::release_freed();
        gateway.spawn(gateway.clone().watch_overrides());
        Ok(gateway)
    }

    /// True in sparse mode.
    pub fn is_sparse(&self) -> bool {
        self.inner.sparse.load(Ordering::Relaxed)
    }

    /// The upstream pool (for `status` and shutdown).
    pub fn pool(&self) -> &Pool {
        &self.inner.pool
    }

    /// The catalog as it is now.
    pub fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(
            &self
                .inner
                .catalog
                .read()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// Events from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.inner.changed.subscribe()
    }

    /// The server's `instructions` for `initialize`, telling only of what `reach` reaches.
    pub fn instructions(&self, reach: &Reach) -> String {
        let catalog = self.catalog();
        if self.is_sparse() {
            return sparse::instructions(&catalog, reach);
        }
        let servers = reach.servers(&catalog);
        format!(
            "mcp-launch fronts {} tools on {} servers; tool names are server__tool.",
            sparse::tool_count(&servers),
            servers.len()
        )
    }

    /// Readies a `tools/list` answer whose tools the wire splices in from
    /// [`Gateway::tools_json_now`] on its way out (a large list is not copied per request): waits
    /// (a bounded time) for servers still being checked.
    pub async fn prepare_list(&self) {
        self.wait_settled().await;
        if !self.is_sparse() {
            self.release_after_answer();
        }
    }

    /// The tools as they are now, serialised: in full mode the catalog's own copy.
    pub fn tools_json_now(&self) -> Arc<str> {
        if !self.is_sparse() {
            return self.catalog().tools_json();
        }
        let listed: Arc<str> = serde_json::to_string(&self.tools_now(&Reach::ALL))
            .unwrap_or_else(|_| "[]".into())
            .into();
        let full = self.catalog().tokens();
        crate::observe::sparse_list_served(full.saturating_sub(crate::outputs::tokens(&listed)));
        listed
    }

    /// The tools `reach` sees, serialised: all of [`Gateway::tools_json_now`], or only the
    /// catalog's tools it allows (the gateway's own meta-tools stay, told of what it reaches:
    /// `call_tool` checks its target).
    pub fn tools_json_for(&self, reach: &Reach) -> Arc<str> {
        if reach.is_everything(&self.catalog()) {
            return self.tools_json_now();
        }
        serde_json::to_string(&self.tools_now(reach))
            .unwrap_or_else(|_| "[]".into())
            .into()
    }

    /// Whether the gateway can serve: its catalog is loaded (every server the tool index did
    /// not know has been checked once). `/readyz` says so.
    pub fn is_ready(&self) -> bool {
        *self.inner.settled.borrow()
    }

    /// The input schema of a tool `tools/list` advertises as `name`, when it binds arguments
    /// to HTTP headers (`Catalog::header_schema`).
    pub fn header_schema(&self, name: &str) -> Option<serde_json::Map<String, Value>> {
        let listed = !self.is_sparse() || self.inner.options.pins.iter().any(|p| p == name);
        listed.then(|| self.catalog().header_schema(name).cloned())?
    }

    /// The `tools/list` tools `reach` sees: every tool (full) or the meta-tools, `read_output`
    /// and pins (sparse).
    fn tools_now(&self, reach: &Reach) -> Vec<Value> {
        let catalog = self.catalog();
        let reached = |found: &&catalog::GatewayTool| reach.allows(&catalog, found);
        if !self.is_sparse() {
            let mut tools: Vec<Value> = (catalog.tools().iter())
                .filter(reached)
                .map(|t| t.definition.clone())
                .collect();
            tools.extend(self.inner.outputs.tool());
            return tools;
        }
        let mut tools = sparse::tools(&catalog, reach);
        tools.extend(self.inner.outputs.tool());
        let pinned = (self.inner.options.pins.iter()).filter_map(|pin| catalog.get(pin));
        tools.extend(pinned.filter(reached).map(|t| t.definition.clone()));
        tools
    }

    /// Once the answer under way has been sent (a full list is copied and serialised on its
    /// way out), gives the freed pages back: an idle gateway stays small. One at a time.
    fn release_after_answer(&self) {
        if self.inner.releasing.swap(true, Ordering::AcqRel) {
            return;
        }
        let gateway = self.clone();
        self.spawn(async move {
            tokio::time::sleep(Duration::from_millis(250)).await;
            gateway.inner.releasing.store(false, Ordering::Release);
            tokio::task::spawn_blocking(crate::memory::release_freed)
                .await
                .ok();
        });
    }

    async fn wait_settled(&self) {
        let mut settled = self.inner.settled.clone();
        let wait = settled.wait_for(|done| *done);
        // Answering with what we have after the wait is the point: ignore the timeout.
        let _ = tokio::time::timeout(self.inner.options.list_wait, wait).await;
    }

    /// Stops every upstream (their process groups) and the gateway's tasks.
    pub async fn shutdown(&self) {
        self.inner.shutdown.cancel();
        self.inner.pool.shutdown().await;
        self.inner.tasks.close();
        let joined = tokio::time::timeout(TASKS_GRACE, self.inner.tasks.wait()).await;
        if joined.is_err() {
            tracing::debug!(
                left = self.inner.tasks.len(),
                "tasks still running at shutdown"
            );
        }
    }

    /// Starts `task` as one of the gateway's own (tracked, joined on shutdown).
    pub fn spawn<F>(&self, task: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.inner.tasks.spawn(task)
    }

    /// Completes once the gateway begins to stop.
    pub fn stopping(&self) -> tokio_util::sync::WaitForCancellationFuture<'_> {
        self.inner.shutdown.cancelled()
    }
}

fn load_overrides(options: &GatewayOptions) -> Result<Overrides, GatewayError> {
    Overrides::load(&options.project_dir).map_err(|e| GatewayError::BadInput {
        help: crate::error::Actionable::help(&e),
        message: e.to_string(),
    })
}

async fn build_catalog(
    reports: &[ServerReport],
    overrides: &Overrides,
    passthrough: bool,
    outputs: &Outputs,
) -> Catalog {
    // Uncounted: a long-lived gateway must not load the tokenizer (~50 MB) for an overridden
    // description; its cost is estimated from its size instead.
    let exposed = tool_catalog::expose_uncounted(reports, overrides);
    let extra: Vec<Value> = outputs.tool().into_iter().collect();
    let own = |server: &str, tool: &str| {
        let report = reports.iter().find(|r| r.name == server)?;
        overrides
            .for_server(&report.stack, &report.config_name)?
            .output_budget(tool)
    };
    let budgets = Budgets {
        own: &own,
        default: outputs.budget(),
    };
    Catalog::build(reports, &exposed, passthrough, &extra, &budgets)
        .with_clients(overrides.clients().clone())
}

/// The exposed tools only clients offering more capabilities can call (server-everything's
/// sampling, elicitation and roots tools), with their token cost.
fn needing_capabilities(catalog: &Catalog, reports: &[ServerReport]) -> (usize, usize) {
    let needs = |t: &catalog::GatewayTool| {
        reports
            .iter()
            .any(|r| r.name == t.server && r.needs.contains_key(&t.tool))
    };
    let needing = catalog.tools().iter().filter(|t| needs(t));
    needing.fold((0, 0), |(n, tokens), t| (n + 1, tokens + t.tokens))
}

/// Sparse unless the mode is full, or auto and the catalog fits the budget (said on stderr).
/// Counted without the tools only some clients can call (`needing`: how many, their tokens),
/// so a listing made for a richer client (the daemon's) does not change the mode.
fn choose_mode(options: &GatewayOptions, catalog: &Catalog, needing: &(usize, usize)) -> bool {
    let tools = catalog.tools().len() - needing.0;
    let tokens = catalog.tokens().saturating_sub(needing.1);
    let fits = tools <= options.budget.tools && tokens <= options.budget.tokens;
    let sparse = match options.mode {
        Mode::Full => false,
        Mode::Sparse => true,
        Mode::Auto => !fits,
    };
    if options.mode == Mode::Auto {
        let chosen = if sparse { "sparse" } else { "full" };
        tracing::info!(tools, tokens, chosen, "auto mode");
        let more = match needing.0 {
            0 => String::new(),
            n => format!(" and {n} for clients offering sampling, elicitation or roots"),
        };
        eprintln!(
            "mcp-launch serve: {chosen} mode ({tools} tools{more}, ~{tokens} tokens; full up to {} tools and {} tokens)",
            options.budget.tools, options.budget.tokens
        );
    }
    sparse
}

/// The gateway's own pool over `entries`: servers relay their requests to the client whose
/// call caused them (`callers`), idle ones stop, always-on ones are kept running.
fn own_pool(entries: &[ServerEntry], options: &GatewayOptions, callers: &Arc<Callers>) -> Pool {
    let pool = Pool::new(
        entries
            .iter()
            .map(|entry| PoolServer {
                always_on: is_always_on(&options.always_on, entry),
                ..PoolServer::lazy(entry.clone())
            })
            .collect(),
        PoolConfig {
            connect: ConnectOptions {
                forwards_client_requests: true,
                // The gateway relays each client in its own era: an HTTP upstream stays
                // in the handshake era until the gateway relays the 2026-07-28 one to it.
                probe_revision: false,
                ..options.connect
            },
            idle: options.idle,
            on_session: Some(callers.hook()),
            // Clients of the 2026-07-28 revision reach stdio servers that speak it in it.
            stateless: true,
        },
    );
    pool.start_keepers();
    pool
}

fn is_always_on(names: &[String], entry: &ServerEntry) -> bool {
    names
        .iter()
        .any(|n| *n == entry.name || *n == entry.qualified)
}

fn modified(path: &std::path::Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}
