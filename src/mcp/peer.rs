//! The state a connection's reader and its callers share: the pending requests (id → oneshot),
//! answers to server→client requests, and the close reason.
//!
//! Transports feed every message they receive into [`Peer::handle`] from one reader task and
//! call [`Peer::close`] once when the connection ends; every pending request then fails at
//! once with the reason instead of waiting for its timeout.
//!
//! A server's request comes with no mark of what it is about, except over Streamable HTTP: one
//! sent on the response stream of one of our requests is about that request
//! ([`Peer::handle_related`]). A request sent with an answerer of its own
//! ([`Peer::send_request_answered`]) has such requests answered by it; every other one goes to
//! the session's handler.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use serde_json::{json, Value};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::error::McpError;
use super::message::{self, Incoming, RpcError, METHOD_NOT_FOUND};

type Reply = oneshot::Sender<Result<Value, McpError>>;

struct PendingRequest {
    method: String,
    reply: Reply,
    /// Answers the server's requests about this one, instead of the session's handler.
    answerer: Option<ServerRequestHandler>,
}

/// Why a connection ended; turned into an error for each request still pending.
#[derive(Debug, Clone)]
pub(crate) enum CloseReason {
    /// The process ended or closed stdout.
    Exited {
        exit: Option<crate::process::Exit>,
        stderr_tail: String,
    },
    /// A network connection broke.
    Disconnected { url: String, message: String },
}

impl CloseReason {
    fn error_for(&self, method: &str) -> McpError {
        match self {
            CloseReason::Exited { exit, stderr_tail } => McpError::Exited {
                method: method.to_string(),
                exit: *exit,
                stderr_tail: stderr_tail.clone(),
            },
            CloseReason::Disconnected { url, message } => McpError::Connect {
                url: url.clone(),
                message: message.clone(),
            },
        }
    }
}

/// Shared between the session (callers) and the transport's reader.
pub(crate) struct Peer {
    next_id: AtomicU64,
    pending: Mutex<Pending>,
    /// Messages to the server; the transport's writer owns the receiving end. Bounded
    /// ([`crate::mcp::Limits::queued_messages`]): a server that stops reading cannot make the
    /// queue grow.
    outbox: mpsc::Sender<Value>,
    /// Notifications received (method names), for `-vv` and tests.
    notifications: AtomicU64,
    /// Notifications as they arrive, for whoever subscribed (the gateway forwards progress
    /// and list changes); lagging subscribers lose the oldest.
    notices: broadcast::Sender<Notice>,
    /// Cancelled once the connection closed (see [`Peer::close`]).
    closed: CancellationToken,
    /// Answers the server's requests, when someone (the gateway) passes them on.
    server_requests: std::sync::RwLock<Option<ServerRequestHandler>>,
}

/// Answers a server's request (`method`, `params`): the result, or the JSON-RPC error.
pub type ServerRequestHandler = std::sync::Arc<
    dyn Fn(
            String,
            Option<Value>,
        ) -> futures_util::future::BoxFuture<'static, Result<Value, RpcError>>
        + Send
        + Sync,
>;

/// A notification from the server.
#[derive(Debug, Clone)]
pub struct Notice {
    /// The method, e.g. `notifications/tools/list_changed`.
    pub method: String,
    /// Its parameters as sent.
    pub params: Option<Value>,
}

/// Notifications kept for a subscriber that falls behind.
const NOTICE_BACKLOG: usize = 256;

#[derive(Default)]
struct Pending {
    requests: HashMap<u64, PendingRequest>,
    closed: Option<CloseReason>,
}

impl Peer {
    /// A peer writing to `outbox`.
    pub(crate) fn new(outbox: mpsc::Sender<Value>) -> Self {
        Self {
            next_id: AtomicU64::new(1),
            pending: Mutex::new(Pending::default()),
            outbox,
            notifications: AtomicU64::new(0),
            notices: broadcast::channel(NOTICE_BACKLOG).0,
            closed: CancellationToken::new(),
            server_requests: std::sync::RwLock::new(None),
        }
    }

    /// Registers a request and queues it, waiting until `deadline` for room in the queue; the
    /// receiver yields its answer (or the close reason).
    pub(crate) async fn send_request(
        &self,
        method: &str,
        params: Option<Value>,
        deadline: tokio::time::Instant,
    ) -> Result<(u64, oneshot::Receiver<Result<Value, McpError>>), McpError> {
        self.send_request_answered(method, params, deadline, None)
            .await
    }

    /// [`Peer::send_request`], the server's requests about it answered by `answerer` (see the
    /// module doc).
    pub(crate) async fn send_request_answered(
        &self,
        method: &str,
        params: Option<Value>,
        deadline: tokio::time::Instant,
        answerer: Option<ServerRequestHandler>,
    ) -> Result<(u64, oneshot::Receiver<Result<Value, McpError>>), McpError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = self.lock();
            if let Some(reason) = &pending.closed {
                return Err(reason.error_for(method));
            }
            pending.requests.insert(
                id,
                PendingRequest {
                    method: method.to_string(),
                    reply: tx,
                    answerer,
                },
            );
        }
        tracing::debug!(id, method, "→ request");
        // Only the size: a call's arguments may hold anything, credentials included, and trace
        // logs end up in files and bug reports.
        tracing::trace!(
            bytes = params.as_ref().map_or(0, |p| p.to_string().len()),
            "→ params"
        );
        let message = message::request(id, method, params);
        let sent = tokio::time::timeout_at(deadline, self.outbox.send(message)).await;
        match sent {
            Ok(Ok(())) => Ok((id, rx)),
            Ok(Err(_)) => {
                self.forget(id);
                Err(McpError::Closed {
                    stderr_tail: String::new(),
                })
            }
            Err(_) => {
                self.forget(id);
                Err(McpError::Stalled {
                    method: method.to_string(),
                    queued: self.outbox.max_capacity(),
                })
            }
        }
    }

    /// Sends a notification (no answer expected). Notifications are best effort: one that finds
    /// the queue full is dropped with a warning rather than waiting on a server that does not
    /// read.
    pub(crate) fn notify(&self, method: &str, params: Option<Value>) {
        tracing::debug!(method, "→ notification");
        self.queue(message::notification(method, params), method);
    }

    /// Queues a message without waiting (the reader must never block on the writer).
    fn queue(&self, message: Value, what: &str) {
        if let Err(mpsc::error::TrySendError::Full(_)) = self.outbox.try_send(message) {
            tracing::warn!(
                what,
                queued = self.outbox.max_capacity(),
                "the server is not reading its input; a message to it was dropped"
            );
        }
    }

    /// Drops a pending request (after a timeout), so a late answer is ignored.
    pub(crate) fn forget(&self, id: u64) {
        self.lock().requests.remove(&id);
    }

    /// Fails one pending request with `error` (an HTTP transport's POST failed).
    pub(crate) fn fail(&self, id: u64, error: McpError) {
        if let Some(req) = self.lock().requests.remove(&id) {
            let _ = req.reply.send(Err(error));
        }
    }

    /// Handles one message from the server: resolves a pending request, answers a server
    /// request, records a notification, or logs and skips anything else.
    pub(crate) fn handle(&self, value: Value) {
        self.handle_related(value, None);
    }

    /// [`Peer::handle`] for a message that came on the response stream of our request
    /// `related`: a server request there is about that request.
    pub(crate) fn handle_related(&self, value: Value, related: Option<u64>) {
        match Incoming::classify(value) {
            Some(Incoming::Response { id, outcome }) => {
                let request = id.as_u64().and_then(|id| self.lock().requests.remove(&id));
                match request {
                    Some(req) => {
                        tracing::debug!(%id, method = %req.method, ok = outcome.is_ok(), "← response");
                        let result = outcome.map_err(|error| McpError::Rpc {
                            method: req.method,
                            error: Box::new(error),
                        });
                        let _ = req.reply.send(result);
                    }
                    None => tracing::debug!(%id, "← response to no pending request, ignored"),
                }
            }
            Some(Incoming::Request { id, method, params }) => {
                tracing::debug!(%id, %method, "← server request");
                if method != "ping" {
                    if let Some(handler) = self.answerer_of(related) {
                        self.pass_on(handler, id, method, params);
                        return;
                    }
                }
                let answer = match method.as_str() {
                    "ping" => message::response(id, json!({})),
                    // We declare no roots capability; a server that asks anyway gets none.
                    "roots/list" => message::response(id, json!({"roots": []})),
                    _ => message::error_response(
                        id,
                        METHOD_NOT_FOUND,
                        "method not supported by mcp-launch",
                    ),
                };
                self.queue(answer, &method);
            }
            Some(Incoming::Notification { method, params }) => {
                tracing::debug!(%method, "← notification");
                self.notifications.fetch_add(1, Ordering::Relaxed);
                // Nobody listening is the common case (the CLI); a send error only says so.
                let _ = self.notices.send(Notice { method, params });
            }
            None => tracing::debug!("skipped a JSON message that is not JSON-RPC"),
        }
    }

    /// Marks the connection closed and fails every pending request with `reason`. Idempotent:
    /// only the first reason counts.
    pub(crate) fn close(&self, reason: CloseReason) {
        let drained: Vec<PendingRequest> = {
            let mut pending = self.lock();
            if pending.closed.is_some() {
                return;
            }
            pending.closed = Some(reason.clone());
            pending.requests.drain().map(|(_, req)| req).collect()
        };
        self.closed.cancel();
        tracing::debug!(?reason, failed = drained.len(), "connection closed");
        for req in drained {
            let _ = req.reply.send(Err(reason.error_for(&req.method)));
        }
    }

    /// Why the connection closed, if it did.
    pub(crate) fn close_reason(&self) -> Option<CloseReason> {
        self.lock().closed.clone()
    }

    pub(crate) fn set_server_request_handler(&self, handler: ServerRequestHandler) {
        *self
            .server_requests
            .write()
            .unwrap_or_else(|e| e.into_inner()) = Some(handler);
    }

    pub(crate) fn server_request_handler(&self) -> Option<ServerRequestHandler> {
        self.server_requests
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Who answers a server request about our request `related`: that request's own answerer
    /// while it is pending, else the session's handler.
    fn answerer_of(&self, related: Option<u64>) -> Option<ServerRequestHandler> {
        let own = related.and_then(|id| {
            let pending = self.lock();
            pending.requests.get(&id).and_then(|r| r.answerer.clone())
        });
        own.or_else(|| self.server_request_handler())
    }

    /// Answers a server request through `handler`, in its own task (the reader never waits).
    fn pass_on(
        &self,
        handler: ServerRequestHandler,
        id: Value,
        method: String,
        params: Option<Value>,
    ) {
        let outbox = self.outbox.clone();
        tokio::spawn(async move {
            let answer = match handler(method.clone(), params).await {
                Ok(result) => message::response(id, result),
                Err(error) => message::error_response(id, error.code, &error.message),
            };
            if outbox.send(answer).await.is_err() {
                tracing::debug!(%method, "the server closed before our answer to its request");
            }
        });
    }

    /// A token cancelled once the connection closes.
    pub(crate) fn closed(&self) -> CancellationToken {
        self.closed.clone()
    }

    /// The server's notifications from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Notice> {
        self.notices.subscribe()
    }

    /// Notifications received so far.
    pub(crate) fn notification_count(&self) -> u64 {
        self.notifications.load(Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        // A poisoned lock means a panic elsewhere already; the map itself is still coherent.
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::limits::OUTBOX_CAPACITY;

    #[tokio::test]
    async fn answers_server_requests_and_matches_ids() {
        let (tx, mut rx) = mpsc::channel(OUTBOX_CAPACITY);
        let peer = Peer::new(tx);
        let (id, reply) = peer
            .send_request("tools/list", None, later())
            .await
            .unwrap();
        let sent = rx.recv().await.unwrap();
        assert_eq!(sent["id"], json!(id));

        peer.handle(json!({"jsonrpc": "2.0", "id": "s1", "method": "ping"}));
        assert_eq!(
            rx.recv().await.unwrap(),
            json!({"jsonrpc": "2.0", "id": "s1", "result": {}})
        );
        peer.handle(json!({"jsonrpc": "2.0", "id": 9, "method": "roots/list"}));
        assert_eq!(rx.recv().await.unwrap()["result"], json!({"roots": []}));
        peer.handle(json!({"jsonrpc": "2.0", "id": 10, "method": "sampling/createMessage"}));
        assert_eq!(rx.recv().await.unwrap()["error"]["code"], json!(-32601));

        // A response with a string id equal to ours is not ours.
        peer.handle(json!({"jsonrpc": "2.0", "id": id.to_string(), "result": {"wrong": true}}));
        peer.handle(json!({"jsonrpc": "2.0", "id": id, "result": {"tools": []}}));
        assert_eq!(reply.await.unwrap().unwrap(), json!({"tools": []}));
    }

    /// A handler answering every request with `name`.
    fn answering(name: &'static str) -> ServerRequestHandler {
        std::sync::Arc::new(move |_method: String, _params: Option<Value>| {
            Box::pin(async move { Ok(json!({"by": name})) })
        })
    }

    /// A server request on the response stream of a pending request of ours goes to that
    /// request's own answerer; one on no stream, about a request without an answerer or about
    /// one already answered goes to the session's handler.
    #[tokio::test]
    async fn a_request_about_ours_is_answered_by_its_own_answerer_else_the_sessions() {
        let (tx, mut rx) = mpsc::channel(OUTBOX_CAPACITY);
        let peer = Peer::new(tx);
        peer.set_server_request_handler(answering("session"));
        let (own, reply) = peer
            .send_request_answered("tools/call", None, later(), Some(answering("call")))
            .await
            .unwrap();
        let (plain, _) = peer
            .send_request("tools/call", None, later())
            .await
            .unwrap();
        let _sent = (rx.recv().await.unwrap(), rx.recv().await.unwrap());
        let ask = |id: u64, related: Option<u64>| {
            let request = json!({"jsonrpc": "2.0", "id": id, "method": "sampling/createMessage"});
            peer.handle_related(request, related);
        };
        ask(1, Some(own));
        ask(2, None);
        ask(3, Some(plain));
        let mut answers = HashMap::new();
        for _ in 0..3 {
            let answer = rx.recv().await.unwrap();
            answers.insert(
                answer["id"].as_u64().unwrap(),
                answer["result"]["by"].clone(),
            );
        }
        assert_eq!(answers[&1], "call");
        assert_eq!(answers[&2], "session");
        assert_eq!(answers[&3], "session");

        peer.handle(json!({"jsonrpc": "2.0", "id": own, "result": {}}));
        reply.await.unwrap().unwrap();
        peer.handle_related(
            json!({"jsonrpc": "2.0", "id": 4, "method": "sampling/createMessage"}),
            Some(own),
        );
        assert_eq!(rx.recv().await.unwrap()["result"]["by"], "session");
    }

    #[tokio::test]
    async fn close_fails_pending_at_once_and_later_requests_too() {
        let (tx, _rx) = mpsc::channel(OUTBOX_CAPACITY);
        let peer = Peer::new(tx);
        let (_, a) = peer
            .send_request("tools/call", None, later())
            .await
            .unwrap();
        peer.close(CloseReason::Exited {
            exit: Some(crate::process::Exit::Code(7)),
            stderr_tail: "boom".into(),
        });
        let err = a.await.unwrap().unwrap_err();
        assert!(
            err.to_string()
                .contains("exited with code 7 during tools/call"),
            "{err}"
        );
        assert!(err.to_string().contains("boom"));
        assert!(peer.send_request("ping", None, later()).await.is_err());
    }

    fn later() -> tokio::time::Instant {
        tokio::time::Instant::now() + std::time::Duration::from_secs(5)
    }

    /// Nobody drains the queue (a server that stopped reading): requests wait for room until
    /// their deadline and fail as stalled; notifications and answers are dropped, never block.
    #[tokio::test(start_paused = true)]
    async fn a_full_queue_stalls_requests_and_drops_notifications() {
        let (tx, mut rx) = mpsc::channel(OUTBOX_CAPACITY);
        let peer = Peer::new(tx);
        for _ in 0..OUTBOX_CAPACITY {
            peer.send_request("tools/call", None, later())
                .await
                .unwrap();
        }
        let err = peer
            .send_request("tools/call", None, later())
            .await
            .unwrap_err();
        assert!(matches!(err, McpError::Stalled { .. }), "{err}");
        assert_eq!(err.kind(), "server_stalled");
        assert_eq!(
            peer.lock().requests.len(),
            OUTBOX_CAPACITY,
            "the stalled one is forgotten"
        );
        peer.notify("notifications/cancelled", None);
        peer.handle(json!({"jsonrpc": "2.0", "id": "s1", "method": "ping"}));
        assert_eq!(rx.len(), OUTBOX_CAPACITY, "bounded");
        // Room again: a request goes through.
        rx.recv().await.unwrap();
        peer.send_request("tools/call", None, later())
            .await
            .unwrap();
    }
}
