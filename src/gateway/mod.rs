//! The gateway: `mcp-launch serve` — every configured server behind one MCP endpoint, in
//! full mode (every allowed tool, under `server__tool` names) or sparse mode (a handful of
//! meta-tools: search, describe, call, discover), with servers started on demand by the
//! upstream pool (`crate::pool`) and stopped when idle.
//!
//! Rooms: `catalog` (what is offered, from the tool index), `names` (exposed names),
//! `sparse` (the meta-tools), `items` (resources and prompts), `wire` (the MCP server side,
//! on rmcp, and its transports), `clients` (client config snippets). This module holds the
//! state they share and routes calls.

mod callers;
pub mod catalog;
pub mod clients;
pub mod daemon;
mod era;
pub mod error;
mod items;
mod known;
mod meaning;
pub mod names;
pub mod sparse;
mod views;
pub mod wire;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, SystemTime};

use serde_json::{json, Value};
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::catalog::{self as tool_catalog, Overrides, ServerReport};
use crate::config::ServerEntry;
use crate::mcp::ConnectOptions;
use crate::outputs::Structured;
use crate::pool::{Pool, PoolConfig, PoolServer};

use self::callers::Callers;
pub use self::callers::ClientLink;
use self::catalog::{Budgets, Catalog};
pub use self::era::{asks_for_input, Stateless};
use self::error::GatewayError;
pub use self::views::{Found, FoundTool};
use crate::outputs::{Outputs, Served};
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
        let overrides = load_overrides(&options)?;
        let entries: Vec<ServerEntry> = entries
            .into_iter()
            .filter(|e| !e.disabled && !overrides.is_disabled(e))
            .collect();
        let (reports, unknown) = tool_catalog::from_index(&entries);
        let outputs = Outputs::new(options.max_output);
        let known = known::Known::load(&entries);
        let catalog = build_catalog(&reports, &overrides, options.passthrough, &outputs).await;
        let callers = Arc::new(Callers::default());
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
                    ..options.connect
                },
                idle: options.idle,
                on_session: Some(callers.hook()),
                // Clients of the 2026-07-28 revision reach stdio servers that speak it in it.
                stateless: true,
            },
        );
        pool.start_keepers();
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
        let sparse = choose_mode(&gateway.inner.options, &gateway.catalog());
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

    /// The server's `instructions` for `initialize`.
    pub fn instructions(&self) -> String {
        let catalog = self.catalog();
        if self.is_sparse() {
            sparse::instructions(&catalog)
        } else {
            format!(
                "mcp-launch fronts {} tools on {} servers; tool names are server__tool.",
                catalog.tools().len(),
                catalog.servers().len()
            )
        }
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
        serde_json::to_string(&self.tools_now())
            .unwrap_or_else(|_| "[]".into())
            .into()
    }

    /// The input schema of a tool `tools/list` advertises as `name`, when it binds arguments
    /// to HTTP headers (`Catalog::header_schema`).
    pub fn header_schema(&self, name: &str) -> Option<serde_json::Map<String, Value>> {
        let listed = !self.is_sparse() || self.inner.options.pins.iter().any(|p| p == name);
        listed.then(|| self.catalog().header_schema(name).cloned())?
    }

    /// The `tools/list` tools: every tool (full) or the meta-tools, `read_output` and pins
    /// (sparse).
    fn tools_now(&self) -> Vec<Value> {
        let catalog = self.catalog();
        if !self.is_sparse() {
            return catalog
                .tools()
                .iter()
                .map(|t| t.definition.clone())
                .collect();
        }
        let mut tools = sparse::tools(&catalog);
        tools.extend(self.inner.outputs.tool());
        for pin in &self.inner.options.pins {
            if let Some(found) = catalog.get(pin) {
                tools.push(found.definition.clone());
            }
        }
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

    /// A `tools/call`: `read_output`, a meta-tool in sparse mode, else the exposed tool on its
    /// server; the answer within the output budget (a cut result keeps the rest behind a handle
    /// for this caller). `progress` (the client's token and where to send) relays the server's
    /// progress.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
        caller: Caller,
    ) -> Result<Value, GatewayError> {
        let scope = caller.scope.clone();
        let outputs = &self.inner.outputs;
        let is_read = name == crate::outputs::READ_OUTPUT && self.catalog().get(name).is_none();
        if is_read && outputs.tool().is_some() {
            return Ok(outputs.read(arguments, scope).await.unwrap_or_default());
        }
        let started = std::time::Instant::now();
        let served = self.served_by(name, &arguments);
        let result = self.route(name, arguments, caller).await?;
        if era::asks_for_input(&result) {
            // Not an answer yet: the client's retry must find it as the server sent it.
            return Ok(result);
        }
        Ok(outputs
            .apply(served, result, scope, started.elapsed())
            .await)
    }

    /// The server and tool a call reaches (the gateway itself for its meta-tools), for the
    /// usage record, the output budget the project set for it and how its
    /// `structuredContent` may be cut.
    fn served_by(&self, name: &str, arguments: &Value) -> Served {
        let catalog = self.catalog();
        let target = match (self.is_sparse(), name == sparse::CALL) {
            (true, true) => arguments.get("name").and_then(Value::as_str).unwrap_or(""),
            _ => name,
        };
        let budget = catalog.budget_of(target).map(crate::outputs::Budget::new);
        match catalog.get(target) {
            Some(found) => Served {
                server: found.server.clone(),
                tool: found.tool.clone(),
                budget,
                structured: found.structured.clone(),
            },
            None => Served {
                server: "mcp-launch".into(),
                tool: name.to_string(),
                budget: None,
                structured: Structured::Cut,
            },
        }
    }

    async fn route(
        &self,
        name: &str,
        arguments: Value,
        caller: Caller,
    ) -> Result<Value, GatewayError> {
        let pinned = self.inner.options.pins.iter().any(|p| p == name);
        if self.is_sparse() && !pinned {
            if name == sparse::CALL {
                let target = arguments.get("name").and_then(Value::as_str).unwrap_or("");
                let inner_args = arguments
                    .get("arguments")
                    .cloned()
                    .unwrap_or_else(|| json!({}));
                let wait = self.inner.options.call_timeout;
                let catalog = self
                    .catalog_knowing(|c| c.get(target).is_some(), wait)
                    .await;
                sparse::validate(&catalog, target, &inner_args)?;
                return self.forward(target, inner_args, caller, None).await;
            }
            if sparse::is_meta(name) {
                let catalog = self.catalog_embedded().await;
                let model = self.inner.model.get().map(Arc::as_ref);
                let answer = sparse::run(&catalog, model, name, &arguments);
                self.release_model_later();
                return answer;
            }
            return Err(sparse::unknown(&self.catalog(), name));
        }
        self.forward(name, arguments, caller, None).await
    }

    /// A call by the server's (qualified) name and the tool's own name, as the command line
    /// names them: refused when the overrides deny it, checked against the input schema, and
    /// bounded by `timeout` (else the gateway's call timeout). Whatever the mode.
    pub async fn call_server_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
        timeout: Option<Duration>,
    ) -> Result<Value, GatewayError> {
        let wait = timeout.unwrap_or(self.inner.options.call_timeout);
        let catalog = self
            .catalog_knowing(|c| c.find(server, tool).is_some(), wait)
            .await;
        let Some(found) = catalog.find(server, tool) else {
            return Err(catalog.refusal(server, tool));
        };
        let name = found.name.clone();
        sparse::validate(&catalog, &name, &arguments)?;
        let caller = Caller {
            progress: None,
            link: None,
            cancel: CancellationToken::new(),
            scope: crate::outputs::ClientScope::local(),
            logs: None,
            stateless: None,
        };
        self.forward(&name, arguments, caller, timeout).await
    }

    /// The catalog, once it `knows` what a call names — waiting (at most `wait`) while servers
    /// the tool index did not know are still being checked (a first run); else as it is.
    async fn catalog_knowing(
        &self,
        knows: impl Fn(&Catalog) -> bool,
        wait: Duration,
    ) -> Arc<Catalog> {
        let catalog = self.catalog();
        if knows(&catalog) || *self.inner.settled.borrow() {
            return catalog;
        }
        let mut settled = self.inner.settled.clone();
        let _ = tokio::time::timeout(wait, settled.wait_for(|done| *done)).await;
        self.catalog()
    }

    /// Calls the tool exposed as `name` on its server.
    async fn forward(
        &self,
        name: &str,
        arguments: Value,
        caller: Caller,
        timeout: Option<Duration>,
    ) -> Result<Value, GatewayError> {
        let timeout = timeout.unwrap_or(self.inner.options.call_timeout);
        let catalog = self
            .catalog_knowing(|c| c.get(name).is_some(), timeout)
            .await;
        let found = catalog
            .get(name)
            .ok_or_else(|| sparse::unknown(&catalog, name))?;
        let legacy = self.inner.pool.upstream(&found.server)?;
        let upstream = self.era_upstream(legacy, caller.stateless.as_ref()).await?;
        let session = upstream.session().await.map_err(GatewayError::from_pool)?;
        let _calling = caller
            .link
            .map(|link| self.inner.callers.enter(&found.server, link));
        let mut params = json!({"name": found.tool, "arguments": arguments});
        let done = CancellationToken::new();
        let progress = caller.progress.map(|progress| {
            let ours = format!(
                "mcpl-{}",
                self.inner.next_token.fetch_add(1, Ordering::Relaxed)
            );
            params["_meta"] = json!({"progressToken": ours});
            (progress, ours)
        });
        if let Some(call) = caller
            .stateless
            .as_ref()
            .filter(|_| upstream.is_stateless())
        {
            call.stamp(&mut params);
        }
        let relay = (progress.is_some() || caller.logs.is_some()).then(|| {
            let relay = Relay {
                progress,
                logs: caller.logs,
            };
            self.spawn(relay.run(session.notifications(), done.clone()))
        });
        let outcome = upstream
            .request_cancellable(&session, "tools/call", params, timeout, &caller.cancel)
            .await;
        // What the server sent before its answer reaches the client before the answer.
        done.cancel();
        if let Some(relay) = relay {
            let _ = relay.await;
        }
        outcome.map_err(GatewayError::from_pool)
    }

    /// Checks the servers the tool index does not know (in parallel, each stopped after its
    /// check), rebuilds the catalog, and tells clients.
    async fn check_unknown(self, unknown: Vec<usize>, settle: watch::Sender<bool>) {
        let checks = unknown.iter().map(|&i| self.check(i));
        futures_util::future::join_all(checks).await;
        self.rebuild().await;
        settle.send_replace(true);
    }

    /// Lists the tools of entry `i` live through the pool, records them in the tool index and
    /// the reports, and stops the server again unless it is always on (or a call took it).
    async fn check(&self, i: usize) {
        let entry = &self.inner.entries[i];
        let Ok(upstream) = self.inner.pool.upstream(&entry.qualified) else {
            return;
        };
        let timeout = self.inner.options.connect.list_timeout;
        match upstream.list_tools(timeout).await {
            Ok((info, list)) => {
                let report = tool_catalog::record_live(entry, &info, list).await;
                self.inner.reports.lock().await[i] = report;
            }
            // Stopping: nothing to check for.
            Err(_) if self.inner.pool.is_closing() => {}
            Err(e) => {
                tracing::warn!(server = %entry.qualified, "cannot list its tools: {}", crate::pool::describe(&e));
                // Kept for the command line's `list` through a daemon: why it has no tools.
                self.inner.reports.lock().await[i].error = Some(views::problem_of(&e));
            }
        }
        upstream.stop_unless_used().await;
    }

    /// Rebuilds the catalog from the reports and the overrides; tells clients when the tools
    /// changed.
    async fn rebuild(&self) {
        let _one_at_a_time = self.inner.rebuilding.lock().await;
        let overrides = match load_overrides(&self.inner.options) {
            Ok(overrides) => overrides,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the overrides; the tools stay as they were");
                return;
            }
        };
        let reports = self.inner.reports.lock().await.clone();
        let passthrough = self.inner.options.passthrough;
        let outputs = &self.inner.outputs;
        let catalog = build_catalog(&reports, &overrides, passthrough, outputs).await;
        let before = self.list_fingerprint();
        *self
            .inner
            .catalog
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(catalog);
        self.embed_catalog();
        if self.list_fingerprint() != before {
            tracing::info!("the tools changed; telling clients");
            let _ = self.inner.changed.send(Event::Tools);
        }
        // The catalog it replaced is freed once the requests holding it end.
        self.release_after_answer();
    }

    /// What clients see of the tool list, to tell whether it changed.
    fn list_fingerprint(&self) -> u64 {
        tool_catalog::fnv1a(self.tools_json_now().as_bytes())
    }

    /// Rebuilds when `overrides.json` changes (`tool deny` in another terminal, the TUI).
    async fn watch_overrides(self) {
        let path = self
            .inner
            .options
            .project_dir
            .join(crate::catalog::OVERRIDES_FILE);
        let mut seen = modified(&path);
        loop {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(500)) => {}
                () = self.inner.shutdown.cancelled() => return,
            }
            let now = modified(&path);
            if now != seen {
                seen = now;
                tracing::info!(path = %path.display(), "the overrides changed");
                self.rebuild().await;
            }
        }
    }

    /// Follows upstream list changes: a server's own `list_changed` re-lists its tools (and
    /// records them in the tool index); resources and prompts changes are passed on.
    async fn watch_upstreams(self) {
        items::watch_upstreams(self).await;
    }

    /// Re-lists `server`'s tools live and rebuilds the catalog.
    async fn refresh_server(&self, server: &str) {
        let Some(i) = self.index_of(server) else {
            return;
        };
        let Ok(upstream) = self.inner.pool.upstream(server) else {
            return;
        };
        let timeout = self.inner.options.connect.list_timeout;
        let (info, list) = match upstream.list_tools(timeout).await {
            Ok(listed) => listed,
            // Stopping: nothing to re-list for.
            Err(_) if self.inner.pool.is_closing() => return,
            Err(e) => {
                tracing::warn!(server, error = %e, "cannot re-list the tools");
                return;
            }
        };
        self.keep_listed(i, &info, list).await;
        self.rebuild().await;
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

/// Who makes a call: where its progress goes, who answers its server's requests, and the
/// token the client cancels it with.
pub struct Caller {
    /// The client's progress token and sink, when it asked for progress.
    pub progress: Option<Progress>,
    /// The client, for the server's own requests.
    pub link: Option<Arc<dyn ClientLink>>,
    /// Cancelled when the client cancels the call (or goes away).
    pub cancel: CancellationToken,
    /// Whose outputs a cut result's handle belongs to (and who may read them).
    pub scope: crate::outputs::ClientScope,
    /// Where the server's log messages during the call go (else to every client).
    pub logs: Option<Sink>,
    /// A client of the stateless revision: what its server must see of the call.
    pub stateless: Option<Stateless>,
}

/// Sends one notification's params to a client.
pub type Sink = Box<dyn Fn(Value) -> futures_util::future::BoxFuture<'static, ()> + Send + Sync>;

/// Where a call's progress goes: the client's token and a sink for
/// `notifications/progress` params.
pub struct Progress {
    /// The client's `progressToken`.
    pub token: Value,
    /// Sends one progress notification's params to the client.
    pub send: Sink,
}

/// What a call passes on to its client, in order, as its server sends it: progress (under the
/// client's token, for our token `ours`) and log messages — part of answering the call, so
/// they travel with it (on its response stream over HTTP) and reach the client before the
/// answer.
struct Relay {
    progress: Option<(Progress, String)>,
    logs: Option<Sink>,
}

impl Relay {
    /// Passes notices on until `done`, then what is already received.
    async fn run(
        self,
        mut notices: broadcast::Receiver<crate::mcp::Notice>,
        done: CancellationToken,
    ) {
        loop {
            let received = tokio::select! {
                biased;
                notice = notices.recv() => notice,
                () = done.cancelled() => break,
            };
            match received {
                Ok(notice) => self.pass_on(notice).await,
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
        while let Ok(notice) = notices.try_recv() {
            self.pass_on(notice).await;
        }
    }

    async fn pass_on(&self, notice: crate::mcp::Notice) {
        let Some(mut params) = notice.params else {
            return;
        };
        match (notice.method.as_str(), &self.progress, &self.logs) {
            ("notifications/progress", Some((progress, ours)), _)
                if params.get("progressToken").and_then(Value::as_str) == Some(ours) =>
            {
                params["progressToken"] = progress.token.clone();
                (progress.send)(params).await;
            }
            ("notifications/message", _, Some(logs)) => logs(params).await,
            _ => {}
        }
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
}

/// Sparse unless the mode is full, or auto and the catalog fits the budget (said on stderr).
fn choose_mode(options: &GatewayOptions, catalog: &Catalog) -> bool {
    let (tools, tokens) = (catalog.tools().len(), catalog.tokens());
    let fits = tools <= options.budget.tools && tokens <= options.budget.tokens;
    let sparse = match options.mode {
        Mode::Full => false,
        Mode::Sparse => true,
        Mode::Auto => !fits,
    };
    if options.mode == Mode::Auto {
        let chosen = if sparse { "sparse" } else { "full" };
        tracing::info!(tools, tokens, chosen, "auto mode");
        eprintln!(
            "mcp-launch serve: {chosen} mode ({tools} tools, ~{tokens} tokens; full up to {} tools and {} tokens)",
            options.budget.tools, options.budget.tokens
        );
    }
    sparse
}

fn is_always_on(names: &[String], entry: &ServerEntry) -> bool {
    names
        .iter()
        .any(|n| *n == entry.name || *n == entry.qualified)
}

fn modified(path: &std::path::Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}
