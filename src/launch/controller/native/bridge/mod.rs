//! The native bridge: mcpo's HTTP surface served from our own MCP sessions, inside `up`.
//!
//! The stack's front stays in front of it (public key, deny rules, `/healthz`, the merged
//! spec); the bridge only answers the front, which sends `Authorization: Bearer <internal
//! key>`. Each server has one long-lived session shared by all concurrent calls; a server
//! that dies is reconnected on a later call with backoff (see `crate::pool`).
//!
//! | Route | Answer |
//! |---|---|
//! | `POST /<server>/<tool>` | the tool's result as JSON (see `result`); within its budget when asked ([`BridgeOutputs`]: over it, cut, the handle in `X-MCP-Launch-Handle`) |
//! | `POST /read_output` | when asked: more of a cut result, `{handle, offset?, limit?, grep?, jsonpath?}` |
//! | `GET /<server>/openapi.json` | the server's document, as given |
//! | `GET /<server>/docs` | a small offline HTML page linking the spec |
//! | `GET /openapi.json` | a root document with no paths (also the readiness probe) |
//! | `GET /docs` | links to every server's docs |
//!
//! Every route needs the key. Statuses, with the `error.type` of the JSON body:
//!
//! | Status | `type` | When |
//! |---|---|---|
//! | 200 | — | the tool answered (`structuredContent`, else the mapped `content`) |
//! | 400 | `invalid_json`, `bad_request` | the body is not JSON; the path does not decode |
//! | 401 | `unauthorized` | no key or not ours |
//! | 404 | `unknown_server`, `unknown_tool`, `not_found`, `unknown_handle`, `expired_handle` | nothing there |
//! | 405 | `method_not_allowed` | e.g. `GET /<server>/<tool>` |
//! | 413 | `body_too_large` | over [`MAX_BODY_BYTES`] |
//! | 422 | `invalid_arguments`, `invalid_read` | not an object, or against the tool's `inputSchema`; with `violations` and `expected` (a read: not `{handle, …}`) |
//! | 424 | `tool_error` | the tool answered `isError: true`: `message` is its text, `result` its whole `CallToolResult` |
//! | 502 | `upstream_unavailable` | the server exited, cannot start, or is backing off: `cause`, `stderr`, the next attempt in `help` and `Retry-After` |
//! | 502 | `server_error`, `protocol_error`, `http_error` | the server answered the call with a JSON-RPC error or broke the protocol |
//! | 503 | `shutting_down` | the bridge is stopping |
//! | 504 | `timeout` | no answer within the call timeout (the request is cancelled upstream) |
//!
//! 424 Failed Dependency for `isError`: the call was well formed and the server did its part,
//! but the tool it depended on ran and reported a failure (and said why, in `result`). That is
//! neither the client's mistake about the request (422: the arguments were refused before any
//! call, fix them) nor a fault of ours or of the server (5xx: a client, a fuzzer or a proxy
//! would count it as a server error and may retry it). mcpo answers 500 here; our stacks
//! document 424 in their spec. 502 is kept for "the server is not there", where retrying
//! later can help.
//!
//! Privacy: arguments and results are never logged; requests are logged at DEBUG as method,
//! path, status and time only; the key appears nowhere.

mod error;
mod result;
mod routes;
#[cfg(test)]
mod tests;
mod tools;
mod upstream;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::catalog::ServerOverrides;
use crate::config::ServerEntry;
use crate::duration::Setting;
use crate::mcp::{ConnectOptions, ServerInfo, Session, ToolList};
use crate::outputs::{ClientScope, Outputs};
use crate::pool::{Pool, PoolConfig, PoolServer};

use tools::ToolSet;
use upstream::Served;

/// Environment variable with the call timeout in seconds.
pub const CALL_TIMEOUT_ENV: &str = "MCP_LAUNCH_CALL_TIMEOUT";

/// The call timeout when [`CALL_TIMEOUT_ENV`] is not set: tools may legitimately run for
/// minutes (a build, a crawl), as they may behind mcpo.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(300);

/// The call timeout as a user sets it, through [`CALL_TIMEOUT_ENV`].
pub const CALL_TIMEOUT: Setting = Setting::timeout(CALL_TIMEOUT_ENV, DEFAULT_CALL_TIMEOUT);

/// The largest request body taken (axum's default of 2 MB is too small for a file written
/// through a tool).
pub const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// Memory for request bodies at once, in MiB, over all calls: each call reserves
/// [`BODY_COST`] times its body's size (its `Content-Length`, else [`MAX_BODY_BYTES`]) before
/// the body is read and keeps it until it is answered. Many large calls at once then wait
/// their turn instead of holding gigabytes.
pub const BODY_BUDGET_MIB: usize = 256;

/// What a call costs per byte of its body while it runs: the bytes, the parsed arguments, the
/// request written to the server, and an answer that often quotes the input (measured with
/// `bench/abuse.py`: 20 calls of 10 MB at once peaked at 1 GB without the budget, ~60 MB per
/// call in flight).
pub const BODY_COST: usize = 6;

/// One server the bridge serves.
pub struct BridgeServer {
    /// The name in the routes (`/<name>/<tool>`).
    pub name: String,
    /// How to start or reach it.
    pub entry: ServerEntry,
    /// Its tool definitions, as the preflight listed them: the routes and their schemas.
    pub tools: Vec<Value>,
    /// Its OpenAPI document, served at `/<name>/openapi.json`.
    pub document: Value,
    /// A live session to adopt (the preflight's), so the server is not started twice;
    /// `None`: the first call or [`Bridge::connect_all`] starts it.
    pub session: Option<Session>,
}

/// How the bridge runs. Its `Debug` hides the key.
#[derive(Clone)]
pub struct BridgeConfig {
    /// The internal key the front sends as `Authorization: Bearer <key>`.
    pub key: String,
    /// The longest a tool call may take before the caller gets a 504.
    pub call_timeout: Duration,
    /// Handshake timeouts for every (re)connect.
    pub connect: ConnectOptions,
    /// Budgeted results, when asked (`up --max-output-tokens`); `None`: results pass whole.
    pub outputs: Option<BridgeOutputs>,
    /// The files a login command names (a call to a server that needs a login is answered
    /// with the exact command a person runs).
    pub login: crate::auth::client::LoginContext,
}

/// How the bridge budgets results when asked: cut with the same envelope and handles as the
/// gateway's (`crate::outputs`), read on through `POST /read_output`.
#[derive(Clone)]
pub struct BridgeOutputs {
    /// The default budget, the handle store and the usage log.
    pub outputs: Arc<Outputs>,
    /// Whose handles they are: the front's key (whoever holds it reads them).
    pub scope: ClientScope,
    /// The project's choices per server (their `max_output_tokens` win over the default).
    pub budgets: HashMap<String, ServerOverrides>,
}

impl BridgeConfig {
    /// A config with `key`, the call timeout from [`CALL_TIMEOUT_ENV`] ([`CALL_TIMEOUT`]) and
    /// the handshake windows from the environment.
    pub fn from_env(key: String) -> BridgeConfig {
        BridgeConfig {
            key,
            call_timeout: CALL_TIMEOUT.from_env_or_default(),
            connect: ConnectOptions::from_env(),
            outputs: None,
            login: Default::default(),
        }
    }
}

impl std::fmt::Debug for BridgeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BridgeConfig")
            .field("key", &"<redacted>")
            .field("call_timeout", &self.call_timeout)
            .field("connect", &self.connect)
            .field("outputs", &self.outputs.is_some())
            .finish()
    }
}

pub use crate::pool::{ServerState, ServerStatus};

/// Why the bridge could not reach a server outside a call (connecting all at start, listing
/// a server's live tools): its calls answer 502 until it is up.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ServerDown {
    /// The bridge serves no server of that name.
    #[error("the bridge serves no server named {server}")]
    NotServed {
        /// The name asked for.
        server: String,
    },
    /// The server could not be started or listed (the stderr tail, when any, follows).
    #[error("{reason}")]
    Unavailable {
        /// The server.
        server: String,
        /// Why, as the pool describes it.
        reason: String,
    },
}

impl crate::error::Actionable for ServerDown {
    fn kind(&self) -> &'static str {
        match self {
            ServerDown::NotServed { .. } => "unknown_server",
            ServerDown::Unavailable { .. } => "server_unavailable",
        }
    }

    fn help(&self) -> String {
        match self {
            ServerDown::NotServed { .. } => "`mcp-launch status` lists the stack's servers".into(),
            ServerDown::Unavailable { server, .. } => format!(
                "its calls answer 502 until it starts (each call after the backoff tries \
                 again); `mcp-launch inspect {server}` shows why"
            ),
        }
    }
}

/// The native bridge of one stack. Cheap to clone: clones share the sessions.
#[derive(Clone)]
pub struct Bridge {
    inner: Arc<Inner>,
}

struct Inner {
    /// The sessions (in the order given, for `status`).
    pool: Pool,
    /// Each server's tools, by route name.
    served: HashMap<String, Served>,
    key: String,
    call_timeout: Duration,
    /// The root `/openapi.json`, serialized once.
    root_document: bytes::Bytes,
    /// Mebibytes of request bodies that may be held at once ([`BODY_BUDGET_MIB`]).
    bodies: Arc<tokio::sync::Semaphore>,
    /// Budgeted results, when asked.
    outputs: Option<BridgeOutputs>,
    /// What a login command names.
    login: crate::auth::client::LoginContext,
}

impl Bridge {
    /// A bridge over `servers`; nothing connects until [`Bridge::connect_all`] or a call.
    /// A later server with an already-used name is ignored (names are unique per stack).
    pub fn new(servers: Vec<BridgeServer>, config: BridgeConfig) -> Bridge {
        let mut served = HashMap::with_capacity(servers.len());
        let mut pooled = Vec::with_capacity(servers.len());
        for server in servers {
            if served.contains_key(&server.name) {
                tracing::warn!(server = %server.name, "duplicate server name; ignored");
                continue;
            }
            served.insert(
                server.name.clone(),
                ToolSet::new(server.tools, &server.document),
            );
            let mut entry = server.entry;
            entry.name = server.name;
            pooled.push(PoolServer {
                entry,
                session: server.session,
                always_on: false,
            });
        }
        let pool = Pool::new(
            pooled,
            PoolConfig {
                connect: config.connect,
                idle: None,
                on_session: None,
                stateless: false,
            },
        );
        let served: HashMap<String, Served> = pool
            .servers()
            .iter()
            .filter_map(|upstream| {
                let tools = served.remove(upstream.name())?;
                Some((
                    upstream.name().to_string(),
                    Served::new(Arc::clone(upstream), tools),
                ))
            })
            .collect();
        let names: Vec<&str> = pool.servers().iter().map(|u| u.name()).collect();
        let root_document = bytes::Bytes::from(routes::root_document(&names).to_string());
        Bridge {
            inner: Arc::new(Inner {
                pool,
                served,
                key: config.key,
                call_timeout: config.call_timeout,
                root_document,
                bodies: Arc::new(tokio::sync::Semaphore::new(BODY_BUDGET_MIB)),
                outputs: config.outputs,
                login: config.login,
            }),
        }
    }

    /// Connects every server in parallel. A server that fails stays down (its error is in
    /// [`Bridge::server_status`]) and is retried by its next call after the backoff.
    pub async fn connect_all(&self) -> Vec<(String, Result<(), ServerDown>)> {
        let connected = self.inner.pool.connect_all().await;
        (connected.into_iter())
            .map(|(server, result)| {
                let result = result.map_err(|reason| ServerDown::Unavailable {
                    server: server.clone(),
                    reason,
                });
                (server, result)
            })
            .collect()
    }

    /// Serves on `listener` until `shutdown` is cancelled or [`Bridge::shutdown`] is called,
    /// then stops accepting and lets in-flight requests finish (calls still waiting on a tool
    /// end with 503 once [`Bridge::shutdown`] runs).
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: CancellationToken,
    ) -> std::io::Result<()> {
        let closed = self.inner.pool.closed();
        let app = routes::router(self);
        let stop = CancellationToken::new();
        let trigger = stop.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = shutdown.cancelled() => {}
                () = closed => {}
            }
            trigger.cancel();
        });
        crate::listen::serve(listener, app, stop).await
    }

    /// A receiver that sees a change whenever a server connects, fails, is lost or closes
    /// (read [`Bridge::server_status`] then).
    pub fn changes(&self) -> watch::Receiver<()> {
        self.inner.pool.changes()
    }

    /// Lists `server`'s tools on its live session, connecting it first when it is down (and
    /// not backing off). `Err` says why not.
    pub async fn list_live_tools(
        &self,
        server: &str,
        timeout: Duration,
    ) -> Result<(ServerInfo, ToolList), ServerDown> {
        let served = self.served(server).ok_or_else(|| ServerDown::NotServed {
            server: server.to_string(),
        })?;
        (served.upstream.list_tools(timeout).await).map_err(|e| ServerDown::Unavailable {
            server: server.to_string(),
            reason: crate::pool::describe(&e),
        })
    }

    /// `server`'s OpenAPI document as `/<server>/openapi.json` serves it; `None` when there is
    /// no such server.
    pub fn document(&self, server: &str) -> Option<Value> {
        let tools = self.served(server)?.tools();
        serde_json::from_slice(&tools.document).ok()
    }

    /// Serves `tools` and `document` for `server` from now on (calls already under way finish
    /// with the old ones). False when there is no such server.
    pub fn replace_tools(&self, server: &str, tools: Vec<Value>, document: &Value) -> bool {
        let Some(served) = self.served(server) else {
            return false;
        };
        served.replace_tools(ToolSet::new(tools, document));
        true
    }

    /// The bridge's routes, for a front in the same process to call without a socket (every
    /// route still checks the key).
    pub fn router(&self) -> axum::Router {
        routes::router(self.clone())
    }

    /// The bridge's upstream sessions, for a gateway that serves the same servers over MCP
    /// (`up`'s `/mcp`): sharing them, a server runs once.
    pub fn pool(&self) -> &Pool {
        &self.inner.pool
    }

    /// Every server's health, in the order given.
    pub fn server_status(&self) -> Vec<ServerStatus> {
        self.inner.pool.status()
    }

    /// Ends every session: in-flight calls end with 503, each stdio server's process group
    /// gets TERM, a grace period, then KILL; no server starts afterwards.
    pub async fn shutdown(&self) {
        self.inner.pool.shutdown().await;
    }

    fn served(&self, name: &str) -> Option<&Served> {
        self.inner.served.get(name)
    }

    fn server_names(&self) -> Vec<String> {
        let servers = self.inner.pool.servers();
        servers.iter().map(|u| u.name().to_string()).collect()
    }
}
