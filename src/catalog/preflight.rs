//! The preflight: every server of every stack checked in parallel, each bounded by its own
//! timeouts, so a full `list` costs about the slowest handshake, not the sum.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use serde_json::Value;
use tokio::task::JoinSet;
use tracing::Instrument;

use crate::config::{ConfigError, ServerEntry, ServerSpec};
use crate::error::Actionable;
use crate::mcp::{ConnectOptions, Endpoint, McpError, ServerInfo, Session, ToolList};
use crate::process::SpawnSpec;

use super::tokens::count_tools;

/// A server's state after preflight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Handshake and `tools/list` succeeded.
    Connected,
    /// It could not be configured, started, or talked to.
    Error,
    /// `"disabled": true`; not started.
    Disabled,
    /// Answered from the tool index; not started.
    Cached,
    /// A remote server that wants OAuth and has no usable grant: a person must run
    /// `mcp-launch auth login SERVER`. Not a failure.
    NeedsLogin,
}

impl Status {
    /// The name used in output and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Connected => "connected",
            Status::Error => "error",
            Status::Disabled => "disabled",
            Status::Cached => "cached",
            Status::NeedsLogin => "needs_login",
        }
    }
}

/// Why one server failed: its config entry, or the conversation with it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ServerProblem {
    /// The entry in the config file is unusable.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Starting or talking to the server failed.
    #[error(transparent)]
    Mcp(#[from] McpError),
    /// A problem another process saw and passed on (a daemon's report): its facts as words.
    #[error("{}", .0.message)]
    Relayed(RelayedProblem),
}

/// A server problem as another process told it: type, message and help, no error value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayedProblem {
    /// The original error's type (`server_exited`, `unset_variable`, …).
    pub kind: &'static str,
    /// What happened.
    pub message: String,
    /// What to do.
    pub help: String,
    /// The config entry was at fault (exit 2), not the server (exit 1).
    pub is_config: bool,
    /// The scopes a new login must ask for, when the server wanted more (a step-up).
    pub scope: Option<String>,
}

impl ServerProblem {
    /// True when the config entry is at fault (the user must change it), not the server.
    pub fn is_config(&self) -> bool {
        match self {
            ServerProblem::Config(_) => true,
            ServerProblem::Mcp(_) => false,
            ServerProblem::Relayed(relayed) => relayed.is_config,
        }
    }
}

impl ServerProblem {
    /// True when the server wants OAuth and no usable grant is stored (a person must log in).
    pub fn needs_login(&self) -> bool {
        match self {
            ServerProblem::Mcp(McpError::Auth(e)) => e.kind() == "needs_login",
            ServerProblem::Relayed(relayed) => relayed.kind == "needs_login",
            _ => false,
        }
    }

    /// The scopes a new login must ask for, when the server refused for want of them (a 403
    /// `insufficient_scope`, SEP-2350).
    pub fn step_up_scope(&self) -> Option<&str> {
        match self {
            ServerProblem::Mcp(McpError::Auth(e)) => e.step_up_scope(),
            ServerProblem::Relayed(relayed) => relayed.scope.as_deref(),
            _ => None,
        }
    }
}

impl Actionable for ServerProblem {
    fn kind(&self) -> &'static str {
        match self {
            ServerProblem::Config(e) => e.kind(),
            ServerProblem::Mcp(e) => e.kind(),
            ServerProblem::Relayed(relayed) => relayed.kind,
        }
    }
    fn help(&self) -> String {
        match self {
            ServerProblem::Config(e) => e.help(),
            ServerProblem::Mcp(e) => e.help(),
            ServerProblem::Relayed(relayed) => relayed.help.clone(),
        }
    }
}

impl ServerReport {
    /// The exact command that logs in to this server: its name, the scopes a step-up needs
    /// (from its error) and `--config` for each of `configs` (the files given, so it finds the
    /// same server). What `list` and the TUI print.
    pub fn login_command<P: AsRef<std::path::Path>>(&self, configs: &[P]) -> String {
        let scope = self.error.as_ref().and_then(ServerProblem::step_up_scope);
        crate::auth::client::login_command(&self.name, scope, configs)
    }
}

/// What the preflight learned about one server.
#[derive(Debug, Clone)]
pub struct ServerReport {
    /// The name users type (qualified by stack where two stacks share it).
    pub name: String,
    /// The server's key in its config file (what overrides are keyed by).
    pub config_name: String,
    /// The stack (config file) it belongs to.
    pub stack: String,
    /// `stdio`, `http` or `sse` (`"-"` when the entry is unusable).
    pub transport: &'static str,
    /// The outcome.
    pub status: Status,
    /// Tool definitions as sent.
    pub tools: Vec<Value>,
    /// Token cost of each tool, parallel to `tools` (empty when tokens were not counted).
    pub tool_tokens: Vec<usize>,
    /// Time to the `initialize` answer.
    pub init_time: Option<Duration>,
    /// The protocol version the server chose.
    pub protocol_version: Option<String>,
    /// True when the server answered only in the slow window.
    pub used_slow_window: bool,
    /// Non-fatal problems (malformed tools skipped, cursor loops).
    pub warnings: Vec<String>,
    /// Why it failed, when `status` is `Error`.
    pub error: Option<ServerProblem>,
    /// Tools it offered before and no longer does (from the tool index).
    pub stale: Vec<String>,
    /// When its tools were seen live, for a report from the tool index.
    pub checked_at: Option<std::time::SystemTime>,
    /// The client capabilities its tools were listed with (`None`: not known, an index
    /// written before they were recorded). Servers may list more tools to clients offering
    /// more (sampling, elicitation, roots).
    pub listed_with: Option<Value>,
    /// Its resources, resource templates and prompts, when they were listed.
    pub items: Option<ItemLists>,
    /// Its tools whose definitions changed since they were approved, with the approved
    /// definition (see `catalog::approvals`): filled where the catalog answers (`resolve`,
    /// `remember`, `from_index`), empty in reports relayed by a daemon.
    pub changed: BTreeMap<String, Value>,
    /// Tools listed only to clients offering more, with the client capabilities each needs
    /// (from the tool index; those this report's client cannot offer are not in `tools`).
    pub needs: super::needs::Needs,
}

/// A server's resources, resource templates and prompts as listed, by their list's key
/// (`resources`, `resourceTemplates`, `prompts`).
pub type ItemLists = std::collections::BTreeMap<String, Vec<Value>>;

/// The lists of [`ItemLists`]: the method, the result's key, the capability that offers it.
pub const ITEM_LISTS: [(&str, &str, &str); 3] = [
    ("resources/list", "resources", "resources"),
    ("resources/templates/list", "resourceTemplates", "resources"),
    ("prompts/list", "prompts", "prompts"),
];

impl ServerReport {
    /// Total token cost of the server's tools, if counted.
    pub fn tokens(&self) -> Option<usize> {
        (self.tool_tokens.len() == self.tools.len() && self.has_tools())
            .then(|| self.tool_tokens.iter().sum())
    }

    /// What its tools need to be listed to strict clients (see [`repair_tool`]).
    ///
    /// [`repair_tool`]: super::repair_tool
    pub fn repairs(&self) -> super::ServerRepairs {
        super::ServerRepairs::of(&self.tools)
    }

    /// True when the tools are known: connected now, or answered from the index.
    pub fn has_tools(&self) -> bool {
        matches!(self.status, Status::Connected | Status::Cached)
    }

    /// An error report with no tools yet; the other constructors fill it in.
    pub(crate) fn blank(entry: &ServerEntry, transport: &'static str) -> ServerReport {
        ServerReport {
            name: entry.qualified.clone(),
            config_name: entry.name.clone(),
            stack: entry.stack.clone(),
            transport,
            status: Status::Error,
            tools: Vec::new(),
            tool_tokens: Vec::new(),
            init_time: None,
            protocol_version: None,
            used_slow_window: false,
            warnings: Vec::new(),
            error: None,
            stale: Vec::new(),
            checked_at: None,
            listed_with: None,
            items: None,
            changed: BTreeMap::new(),
            needs: Default::default(),
        }
    }

    /// The report of a server that is not started because it is disabled.
    pub fn disabled(entry: &ServerEntry) -> ServerReport {
        ServerReport {
            status: Status::Disabled,
            ..ServerReport::blank(entry, transport_of(entry))
        }
    }
}

/// How the preflight runs.
#[derive(Debug, Clone, Copy)]
pub struct PreflightOptions {
    /// Handshake and listing timeouts.
    pub connect: ConnectOptions,
    /// Count tokens of every tool (loads the tokenizer once, in parallel with the handshakes).
    pub count_tokens: bool,
}

impl PreflightOptions {
    /// Live checks with the environment's timeouts (`MCP_INIT_TIMEOUT_SEC` and the others
    /// `ConnectOptions::from_env` reads), counting no tokens (a caller that shows them turns
    /// `count_tokens` on, or counts on a worker of its own, as the TUI does).
    pub fn from_env() -> Self {
        Self {
            connect: ConnectOptions::from_env(),
            count_tokens: false,
        }
    }
}

/// The transport endpoint for a configured server. A pre-registered OAuth client's secret is
/// handed to the token store's memory here (every session to a configured server starts
/// here), so a refresh can prove it without the store ever holding it.
pub fn endpoint(spec: &ServerSpec) -> Endpoint {
    match spec {
        ServerSpec::Stdio {
            command,
            args,
            env,
            cwd,
        } => Endpoint::Stdio(SpawnSpec {
            program: command.clone(),
            args: args.clone(),
            env: env.clone(),
            cwd: cwd.clone(),
            ..SpawnSpec::default()
        }),
        ServerSpec::Http {
            url,
            headers,
            oauth,
        } => {
            if let Some(client) = oauth {
                if let (Some(id), Some(secret)) = (&client.client_id, &client.client_secret) {
                    crate::auth::client::secrets::remember(url, id, secret);
                }
            }
            Endpoint::StreamableHttp {
                url: url.clone(),
                headers: headers.clone(),
            }
        }
        ServerSpec::Sse { url, headers } => Endpoint::Sse {
            url: url.clone(),
            headers: headers.clone(),
        },
    }
}

/// Connects to one configured server (for `call`, `inspect`, the native bridge), in the
/// server's span.
pub async fn connect(entry: &ServerEntry, opts: &ConnectOptions) -> Result<Session, ServerProblem> {
    connect_in_span(entry, opts).instrument(span(entry)).await
}

/// The span every line about `entry`'s session is logged in (its reader and writer tasks, and
/// later requests, included), so `-vv` tells servers apart. ERROR level, so that it is on at
/// every verbosity: warnings need the name too.
pub fn span(entry: &ServerEntry) -> tracing::Span {
    tracing::error_span!("server", name = %entry.qualified)
}

/// [`connect`], inside a span the caller has entered already.
async fn connect_in_span(
    entry: &ServerEntry,
    opts: &ConnectOptions,
) -> Result<Session, ServerProblem> {
    let spec = entry
        .spec
        .as_ref()
        .map_err(|e| ServerProblem::Config(e.clone()))?;
    Ok(super::era::connect(entry, &endpoint(spec), opts).await?)
}

/// Sessions a preflight left open, by the server's qualified name, for whoever serves the
/// servers next (the native bridge adopts them instead of starting each server a second
/// time). A session nobody takes is ended when this is dropped (its process group killed).
#[derive(Default)]
pub struct OpenSessions(HashMap<String, Session>);

impl OpenSessions {
    /// The open session of the server named `qualified`, if the preflight kept one.
    pub fn take(&mut self, qualified: &str) -> Option<Session> {
        self.0.remove(qualified)
    }

    /// How many are left.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when none are left.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Checks every entry in parallel; reports come back in the order of `entries`. Every server
/// started is stopped again.
pub async fn preflight(entries: &[ServerEntry], opts: &PreflightOptions) -> Vec<ServerReport> {
    run(entries, opts, false).await.0
}

/// [`preflight`], keeping the session of every server that connected and listed its tools.
pub async fn preflight_keeping(
    entries: &[ServerEntry],
    opts: &PreflightOptions,
) -> (Vec<ServerReport>, OpenSessions) {
    run(entries, opts, true).await
}

async fn run(
    entries: &[ServerEntry],
    opts: &PreflightOptions,
    keep: bool,
) -> (Vec<ServerReport>, OpenSessions) {
    let mut set = JoinSet::new();
    for (index, entry) in entries.iter().enumerate() {
        let entry = entry.clone();
        let connect = opts.connect;
        let span = span(&entry);
        set.spawn(async move { (index, check(entry, connect, keep).await) }.instrument(span));
    }
    let mut reports: Vec<Option<ServerReport>> = vec![None; entries.len()];
    let mut sessions = OpenSessions::default();
    while let Some(joined) = set.join_next().await {
        match joined {
            Ok((index, (report, session))) => {
                if let Some(session) = session {
                    sessions.0.insert(report.name.clone(), session);
                }
                reports[index] = Some(report);
            }
            // A panic in one check is a bug; the other servers still report.
            Err(e) => tracing::error!(error = %e, "a preflight task failed"),
        }
    }
    let mut reports: Vec<ServerReport> = reports
        .into_iter()
        .zip(entries)
        .map(|(report, entry)| {
            report.unwrap_or_else(|| {
                let bug = McpError::Protocol("internal error during preflight".into());
                failed(entry, "-", bug.into())
            })
        })
        .collect();
    if opts.count_tokens {
        attach_token_counts(&mut reports).await;
    }
    (reports, sessions)
}

/// Fills `tool_tokens` of every report that lacks them, from the token cache or the tokenizer
/// (off the async threads: both are blocking).
pub(crate) async fn attach_token_counts(reports: &mut [ServerReport]) {
    let lacks_counts = |r: &ServerReport| r.tool_tokens.len() != r.tools.len();
    let tools: Vec<Value> = reports
        .iter()
        .filter(|r| lacks_counts(r))
        .flat_map(|r| r.tools.iter().cloned())
        .collect();
    if tools.is_empty() {
        return;
    }
    let counted = tokio::task::spawn_blocking(move || {
        let refs: Vec<&Value> = tools.iter().collect();
        count_tools(&refs)
    })
    .await;
    let Ok(Some(counts)) = counted else { return };
    let mut counts = counts.into_iter();
    for report in reports.iter_mut().filter(|r| lacks_counts(r)) {
        report.tool_tokens = counts.by_ref().take(report.tools.len()).collect();
    }
}

/// The transport name of an entry (`"-"` when the entry is unusable).
pub(crate) fn transport_of(entry: &ServerEntry) -> &'static str {
    entry
        .spec
        .as_ref()
        .map(ServerSpec::transport_name)
        .unwrap_or("-")
}

/// Checks one server; with `keep`, a server that listed its tools keeps its session open.
async fn check(
    entry: ServerEntry,
    opts: ConnectOptions,
    keep: bool,
) -> (ServerReport, Option<Session>) {
    if entry.disabled {
        return (ServerReport::disabled(&entry), None);
    }
    let transport = transport_of(&entry);
    let session = match connect_in_span(&entry, &opts).await {
        Ok(session) => session,
        Err(problem) => return (failed(&entry, transport, problem), None),
    };
    let listed = session.list_tools(opts.list_timeout).await;
    let info = session.info().clone();
    let report = match listed {
        Ok(list) => ServerReport {
            items: Some(list_items(&session, opts.list_timeout).await),
            ..listed_report(&entry, &info, list)
        },
        Err(e) => ServerReport {
            init_time: Some(info.init_time),
            protocol_version: Some(info.protocol_version),
            ..failed(&entry, transport, e.into())
        },
    };
    if keep && report.status == Status::Connected {
        return (report, Some(session));
    }
    session.close().await;
    (report, None)
}

/// The report of a server whose session listed `list` (token counts not yet attached).
pub(crate) fn listed_report(
    entry: &ServerEntry,
    info: &ServerInfo,
    list: ToolList,
) -> ServerReport {
    ServerReport {
        status: Status::Connected,
        tools: list.tools,
        warnings: list.warnings,
        init_time: Some(info.init_time),
        protocol_version: Some(info.protocol_version.clone()),
        used_slow_window: info.used_slow_window,
        listed_with: Some(info.declared.clone()),
        ..ServerReport::blank(entry, transport_of(entry))
    }
}

/// The resources, templates and prompts `session`'s server offers (each list it declares;
/// one that fails is left out, with a log line: the tools are what the check is for).
pub(crate) async fn list_items(session: &Session, timeout: Duration) -> ItemLists {
    let capabilities = &session.info().capabilities;
    let mut lists = ItemLists::new();
    for (method, key, capability) in ITEM_LISTS {
        if capabilities.get(capability).is_none() {
            continue;
        }
        match session.list_items(method, key, timeout).await {
            Ok(items) => {
                lists.insert(key.to_string(), items);
            }
            Err(e) => tracing::info!(method, error = %e, "cannot list; left out of the index"),
        }
    }
    lists
}

fn failed(entry: &ServerEntry, transport: &'static str, problem: ServerProblem) -> ServerReport {
    let status = if problem.needs_login() {
        Status::NeedsLogin
    } else {
        Status::Error
    };
    ServerReport {
        status,
        error: Some(problem),
        ..ServerReport::blank(entry, transport)
    }
}
