//! A session with one MCP server: the hardened handshake, tool paging, multiplexed requests.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::duration::Setting;
use crate::process::{ProcessGuard, SpawnSpec};

use super::error::McpError;
use super::limits::Limits;
use super::message::{KNOWN_PROTOCOL_VERSIONS, PROTOCOL_VERSION};
use super::peer::{CloseReason, Peer};
use super::{http, sse, stdio};

mod input;
mod revision;
mod task;
mod tools;

use self::revision::meta_offering;
pub use self::revision::{own_meta, DISCOVER_WINDOW};

pub use self::task::{requires_task, supports_task};
pub use self::tools::ToolList;

/// The first window for the `initialize` answer. Most servers answer in well under a second;
/// after this we log that we are waiting longer (a cold `npx`/`uvx` install).
pub const INIT_FAST_WINDOW: Duration = Duration::from_secs(6);

/// The default slow window that follows the fast one, overridable by `MCP_INIT_TIMEOUT_SEC`.
pub const INIT_SLOW_WINDOW: Duration = Duration::from_secs(20);

/// Environment variable that sets the slow window, in seconds.
pub const INIT_TIMEOUT_ENV: &str = "MCP_INIT_TIMEOUT_SEC";

/// The slow window as a user sets it, through [`INIT_TIMEOUT_ENV`].
pub const INIT_TIMEOUT: Setting = Setting::timeout(INIT_TIMEOUT_ENV, INIT_SLOW_WINDOW);

/// How long a request that found the connection closed waits for the reason (exit status,
/// stderr tail) to be recorded: the reader settles within about a second of the exit.
const CLOSE_SETTLE: Duration = Duration::from_millis(1500);

/// Where a server lives and how to reach it.
#[derive(Debug, Clone)]
pub enum Endpoint {
    /// A local process speaking newline-delimited JSON-RPC on stdio.
    Stdio(SpawnSpec),
    /// A remote server speaking Streamable HTTP.
    StreamableHttp {
        /// The MCP endpoint URL.
        url: String,
        /// Extra headers (e.g. `Authorization`).
        headers: Vec<(String, String)>,
    },
    /// A remote server speaking the legacy HTTP+SSE transport.
    Sse {
        /// The SSE endpoint URL.
        url: String,
        /// Extra headers.
        headers: Vec<(String, String)>,
    },
}

/// Timeouts for connecting and listing, and the bounds the session works under.
#[derive(Debug, Clone, Copy)]
pub struct ConnectOptions {
    /// First window for the `initialize` answer.
    pub fast_window: Duration,
    /// Second window, used only when the first expires.
    pub slow_window: Duration,
    /// Limit for each `tools/list` page.
    pub list_timeout: Duration,
    /// Message size, queue length and page count bounds.
    pub limits: Limits,
    /// Declare the client capabilities a gateway passes on to its own clients (sampling,
    /// elicitation, roots); the session's [`Session::on_server_request`] handler answers them.
    pub forwards_client_requests: bool,
    /// Speak the stateless revision ([`STATELESS_PROTOCOL_VERSION`](super::message::STATELESS_PROTOCOL_VERSION)): `server/discover`
    /// instead of `initialize`; each request then carries its client's `_meta` (the caller
    /// puts it in, else the session puts ours). Over Streamable HTTP the revision's headers
    /// go with every POST (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`).
    pub stateless: bool,
    /// Over Streamable HTTP, ask `server/discover` first (within [`DISCOVER_WINDOW`]) and
    /// speak the stateless revision when the server answers it, else the handshake
    /// ([`Session::connect_either`]). Ignored with `stateless`.
    pub probe_revision: bool,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        Self {
            fast_window: INIT_FAST_WINDOW,
            slow_window: INIT_SLOW_WINDOW,
            list_timeout: INIT_SLOW_WINDOW,
            limits: Limits::default(),
            forwards_client_requests: false,
            stateless: false,
            probe_revision: false,
        }
    }
}

impl ConnectOptions {
    /// Defaults, with the slow window from `MCP_INIT_TIMEOUT_SEC` ([`INIT_TIMEOUT`]) and the
    /// bounds from theirs ([`Limits::from_env`]); an HTTP server is reached in the newest
    /// revision it speaks ([`ConnectOptions::probe_revision`]).
    pub fn from_env() -> Self {
        ConnectOptions {
            limits: Limits::from_env(),
            probe_revision: true,
            ..Self::with_slow_window(INIT_TIMEOUT.from_env_or_default())
        }
    }

    /// Defaults, with `slow_window` for the handshake's second window and `tools/list`.
    pub fn with_slow_window(slow_window: Duration) -> Self {
        ConnectOptions {
            slow_window,
            list_timeout: slow_window,
            ..Self::default()
        }
    }

    /// The client capabilities a session made with these options declares.
    pub fn offered_capabilities(&self) -> Value {
        if self.forwards_client_requests {
            relayed_capabilities()
        } else {
            json!({})
        }
    }
}

/// What the server said about itself in the handshake.
#[derive(Debug, Clone)]
pub struct ServerInfo {
    /// The protocol version the server chose.
    pub protocol_version: String,
    /// `serverInfo` as sent (name, version, title, …).
    pub server_info: Value,
    /// `capabilities` as sent.
    pub capabilities: Value,
    /// `instructions`, if any.
    pub instructions: Option<String>,
    /// The client capabilities we declared (what the server may have tailored its lists to:
    /// server-everything lists some tools only to clients offering sampling, elicitation or
    /// roots). `{}` in the stateless revision, where each request carries its client's.
    pub declared: Value,
    /// Time from start (spawn or first request) to the `initialize` answer.
    pub init_time: Duration,
    /// True when the answer came only in the slow window.
    pub used_slow_window: bool,
}

/// The client capabilities a gateway declares for its clients
/// ([`ConnectOptions::forwards_client_requests`]): it passes these requests on to them.
pub fn relayed_capabilities() -> Value {
    json!({"sampling": {}, "elicitation": {"form": {}, "url": {}}, "roots": {"listChanged": true}})
}

/// Whether client capabilities `declared` include every one of `wanted` (by name).
pub fn declares_all(declared: &Value, wanted: &Value) -> bool {
    let Some(wanted) = wanted.as_object() else {
        return true;
    };
    wanted.keys().all(|name| declared.get(name).is_some())
}

impl ServerInfo {
    /// What the answer to the opening request (`initialize`, `server/discover`) says.
    fn opened(
        version: &str,
        (server_info, declared): (Value, Value),
        answer: &Value,
        started: Instant,
        used_slow_window: bool,
    ) -> ServerInfo {
        ServerInfo {
            protocol_version: version.to_string(),
            server_info,
            declared,
            capabilities: answer.get("capabilities").cloned().unwrap_or(Value::Null),
            instructions: answer
                .get("instructions")
                .and_then(Value::as_str)
                .map(str::to_owned),
            init_time: started.elapsed(),
            used_slow_window,
        }
    }
}

enum Connection {
    Stdio(ProcessGuard),
    Http(http::Handle),
    Sse(sse::Handle),
}

/// A live session with one server. Requests may be issued concurrently from many tasks.
pub struct Session {
    peer: Arc<Peer>,
    connection: Connection,
    info: ServerInfo,
    /// The span `connect` ran in (the caller names the server there): later requests log in
    /// it too, whichever task makes them.
    span: tracing::Span,
    /// `tools/list` pages followed at most ([`Limits::tool_pages`]).
    tool_pages: usize,
    /// In the stateless revision, the `_meta` a request that carries none gets (ours, with
    /// the capabilities these options offer).
    own_meta: Option<serde_json::Map<String, Value>>,
}

impl Session {
    /// Starts or connects to the server and performs the handshake: one `initialize` with our
    /// protocol version, the fast then the slow window, then `notifications/initialized`.
    pub async fn connect(endpoint: &Endpoint, opts: &ConnectOptions) -> Result<Self, McpError> {
        let started = Instant::now();
        let limits = opts.limits;
        let (tx, rx) = mpsc::channel(limits.queued_messages.max(1));
        let peer = Arc::new(Peer::new(tx));
        let connection = match endpoint {
            Endpoint::Stdio(spec) => {
                tracing::info!(command = %spec.program, args = spec.args.len(), "spawning server");
                let line_limit = limits.message_bytes;
                Connection::Stdio(stdio::start(spec, Arc::clone(&peer), rx, line_limit)?)
            }
            Endpoint::StreamableHttp { url, headers } => {
                tracing::info!(url = %super::redact::url(url), "connecting over Streamable HTTP");
                let body_limit = limits.message_bytes;
                Connection::Http(http::start(
                    url,
                    headers,
                    Arc::clone(&peer),
                    rx,
                    body_limit,
                    opts.stateless,
                )?)
            }
            Endpoint::Sse { url, headers } => {
                tracing::info!(url = %super::redact::url(url), "connecting over legacy SSE");
                Connection::Sse(sse::start(url, headers, Arc::clone(&peer), rx, opts).await?)
            }
        };
        let mut session = Session {
            span: tracing::Span::current(),
            peer,
            connection,
            tool_pages: limits.tool_pages,
            own_meta: opts
                .stateless
                .then(|| meta_offering(opts.offered_capabilities())),
            info: ServerInfo {
                protocol_version: String::new(),
                server_info: Value::Null,
                capabilities: Value::Null,
                declared: json!({}),
                instructions: None,
                init_time: Duration::ZERO,
                used_slow_window: false,
            },
        };
        if opts.stateless {
            session.discover(opts, started).await?;
        } else {
            session.initialize(opts, started).await?;
        }
        Ok(session)
    }

    async fn initialize(
        &mut self,
        opts: &ConnectOptions,
        started: Instant,
    ) -> Result<(), McpError> {
        let capabilities = opts.offered_capabilities();
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": capabilities.clone(),
            "clientInfo": {"name": "mcp-launch", "version": env!("CARGO_PKG_VERSION")},
        });
        let (result, used_slow_window) = self.handshake("initialize", params, opts).await?;
        let version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| McpError::Protocol("initialize answer has no protocolVersion".into()))?;
        if !KNOWN_PROTOCOL_VERSIONS.contains(&version) {
            tracing::warn!(
                version,
                "server chose a protocol version we do not know; continuing"
            );
        }
        let server_info = result.get("serverInfo").cloned().unwrap_or(Value::Null);
        let told = (server_info, capabilities);
        self.info = ServerInfo::opened(version, told, &result, started, used_slow_window);
        tracing::info!(
            version,
            ms = self.info.init_time.as_millis() as u64,
            slow_window = used_slow_window,
            "initialize answered"
        );
        self.peer.notify("notifications/initialized", None);
        Ok(())
    }

    /// Opens a request whose answer nothing waits for (`subscriptions/listen`: what counts are
    /// its notifications, in [`Session::notifications`]). The future ends when the server
    /// answers or the session closes; it holds no reference to the session.
    pub fn open_stream(
        &self,
        method: &str,
        params: Value,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let peer = Arc::clone(&self.peer);
        let method = method.to_string();
        let queued = tokio::time::Instant::now() + INIT_FAST_WINDOW;
        async move {
            if let Ok((_, reply)) = peer.send_request(&method, Some(params), queued).await {
                let _ = reply.await;
            }
        }
    }

    /// The answer to the opening request `method`, within the fast then the slow window, and
    /// whether it took the slow one.
    async fn handshake(
        &self,
        method: &str,
        params: Value,
        opts: &ConnectOptions,
    ) -> Result<(Value, bool), McpError> {
        let deadline = tokio::time::Instant::now() + opts.fast_window + opts.slow_window;
        let sent = self.peer.send_request(method, Some(params), deadline);
        let mut reply = match sent.await {
            Ok((_, reply)) => reply,
            Err(McpError::Closed { .. }) => return Err(self.settled_close_error(method).await),
            Err(e) => return Err(e),
        };
        // The same receiver spans both windows: an answer that arrives after the fast window
        // is still taken (the tool we port lost it to a race).
        let mut used_slow_window = false;
        let outcome = match tokio::time::timeout(opts.fast_window, &mut reply).await {
            Ok(outcome) => outcome,
            Err(_) => {
                tracing::info!(
                    method,
                    fast_s = opts.fast_window.as_secs_f64(),
                    slow_s = opts.slow_window.as_secs_f64(),
                    "no answer in the fast window; waiting the slow window"
                );
                used_slow_window = true;
                match tokio::time::timeout(opts.slow_window, &mut reply).await {
                    Ok(outcome) => outcome,
                    Err(_) => {
                        return Err(McpError::InitTimeout {
                            fast: opts.fast_window,
                            slow: opts.slow_window,
                            stderr_tail: self.stderr_tail(),
                        })
                    }
                }
            }
        };
        let result = outcome.map_err(|_| self.closed_error(method))??;
        Ok((result, used_slow_window))
    }

    /// Sends a notification (queued in order with the requests; nothing waits for it).
    pub fn notify(&self, method: &str, params: Option<Value>) {
        self.peer.notify(method, params);
    }

    /// What the server said in the handshake.
    pub fn info(&self) -> &ServerInfo {
        &self.info
    }

    /// Sends a request and waits up to `timeout` for its answer. On timeout the request is
    /// cancelled (`notifications/cancelled`) and a late answer is ignored.
    pub async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
    ) -> Result<Value, McpError> {
        let span = self.span.clone();
        self.request_in_span(method, params, timeout, None, None)
            .instrument(span)
            .await
    }

    /// [`Session::request`] that also ends when `cancel` fires: the server is told with
    /// `notifications/cancelled` and the answer, should one come, is ignored.
    pub async fn request_cancellable(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<Value, McpError> {
        let span = self.span.clone();
        self.request_in_span(method, params, timeout, Some(cancel), None)
            .instrument(span)
            .await
    }

    /// [`Session::request_cancellable`], the server's requests about this one answered by
    /// `answerer`, when given, instead of the session's handler ([`Session::on_server_request`]).
    /// Only Streamable HTTP says what a server's request is about (it comes on the response
    /// stream of ours); over stdio the session's handler answers them all.
    pub async fn request_answered_by(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
        cancel: &CancellationToken,
        answerer: Option<super::peer::ServerRequestHandler>,
    ) -> Result<Value, McpError> {
        let span = self.span.clone();
        self.request_in_span(method, params, timeout, Some(cancel), answerer)
            .instrument(span)
            .await
    }

    async fn request_in_span(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
        cancel: Option<&CancellationToken>,
        answerer: Option<super::peer::ServerRequestHandler>,
    ) -> Result<Value, McpError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let params = self.stamped(params);
        let sent = self
            .peer
            .send_request_answered(method, params, deadline, answerer)
            .await;
        let (id, reply) = match sent {
            Ok(sent) => sent,
            // The writer saw the pipe break before the reader saw the exit: wait for the
            // reader's verdict, which carries the exit status and the stderr tail.
            Err(McpError::Closed { .. }) => return Err(self.settled_close_error(method).await),
            Err(e) => return Err(e),
        };
        let cancelled = async {
            match cancel {
                Some(cancel) => cancel.cancelled().await,
                None => std::future::pending().await,
            }
        };
        let answer = tokio::select! {
            answer = tokio::time::timeout_at(deadline, reply) => answer,
            () = cancelled => {
                self.peer.forget(id);
                self.peer.notify(
                    "notifications/cancelled",
                    Some(json!({"requestId": id, "reason": "cancelled by the client"})),
                );
                return Err(McpError::Cancelled { method: method.to_string() });
            }
        };
        match answer {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(_)) => Err(self.closed_error(method)),
            Err(_) => {
                self.peer.forget(id);
                self.peer.notify(
                    "notifications/cancelled",
                    Some(json!({"requestId": id, "reason": "timeout"})),
                );
                Err(McpError::Timeout {
                    method: method.to_string(),
                    after: timeout,
                })
            }
        }
    }

    /// Calls a tool and returns the `CallToolResult` exactly as the server sent it (a result
    /// with `isError: true` is still `Ok`: it is the tool's answer, not a protocol failure).
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
        timeout: Duration,
    ) -> Result<Value, McpError> {
        self.request(
            "tools/call",
            Some(json!({"name": name, "arguments": arguments})),
            timeout,
        )
        .await
    }

    /// The last lines the server wrote to stderr (stdio servers only).
    pub fn stderr_tail(&self) -> String {
        match &self.connection {
            Connection::Stdio(guard) => guard.stderr_tail(stdio::STDERR_TAIL_LINES),
            _ => String::new(),
        }
    }

    /// The process group id of a stdio server.
    pub fn pgid(&self) -> Option<i32> {
        match &self.connection {
            Connection::Stdio(guard) => guard.pgid(),
            _ => None,
        }
    }

    /// Completes once the connection has closed (the process exited, the network broke, or
    /// [`Session::close`] ran).
    pub fn closed(&self) -> tokio_util::sync::WaitForCancellationFutureOwned {
        self.peer.closed().cancelled_owned()
    }

    /// Whether the connection has closed (see [`Session::closed`]).
    pub fn is_closed(&self) -> bool {
        self.peer.closed().is_cancelled()
    }

    /// Why the connection closed, as the error a request would get now.
    pub fn close_error(&self) -> McpError {
        self.closed_error("its session")
    }

    /// Answers the server's own requests (sampling, elicitation, roots) with `handler` from
    /// now on, instead of refusing them (`ping` is always answered).
    pub fn on_server_request(&self, handler: super::peer::ServerRequestHandler) {
        self.peer.set_server_request_handler(handler);
    }

    /// The server's notifications from now on (progress, list changes, log messages).
    pub fn notifications(&self) -> tokio::sync::broadcast::Receiver<super::peer::Notice> {
        self.peer.subscribe()
    }

    /// Notifications the server sent so far.
    pub fn notification_count(&self) -> u64 {
        self.peer.notification_count()
    }

    /// Ends the session: a stdio server's whole process group is stopped (TERM, then KILL); an
    /// HTTP session is deleted on the server.
    pub async fn close(self) {
        let span = self.span.clone();
        async move {
            tracing::debug!("closing the session");
            match self.connection {
                Connection::Stdio(guard) => guard.shutdown().await,
                Connection::Http(handle) => handle.shutdown().await,
                Connection::Sse(handle) => handle.shutdown(),
            }
        }
        .instrument(span)
        .await
    }

    /// The close error once the reader has recorded why the connection ended (bounded wait).
    async fn settled_close_error(&self, method: &str) -> McpError {
        let deadline = tokio::time::Instant::now() + CLOSE_SETTLE;
        while self.peer.close_reason().is_none() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.closed_error(method)
    }

    fn closed_error(&self, method: &str) -> McpError {
        match self.peer.close_reason() {
            Some(CloseReason::Exited { exit, stderr_tail }) => McpError::Exited {
                method: method.to_string(),
                exit,
                stderr_tail,
            },
            Some(CloseReason::Disconnected { url, message }) => McpError::Connect { url, message },
            None => McpError::Closed {
                stderr_tail: self.stderr_tail(),
            },
        }
    }
}

#[cfg(test)]
mod tests;
