//! Passing an upstream's own requests (sampling, elicitation, roots) on to a client: the
//! client whose call to that server is under way (the latest, when several are), since the
//! request is part of answering it. With none, or a client that did not declare the
//! capability, the upstream gets -32601 and the refusal is logged.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::future::BoxFuture;
use serde_json::Value;

use crate::mcp::message::METHOD_NOT_FOUND;
use crate::mcp::{RpcError, ServerRequestHandler, Session};
use crate::pool::SessionHook;

/// A client that can answer a server's requests.
pub trait ClientLink: Send + Sync {
    /// Asks the client `method` with `params`; `Err` is the JSON-RPC error to pass back.
    fn ask(
        &self,
        method: String,
        params: Option<Value>,
    ) -> BoxFuture<'static, Result<Value, RpcError>>;
}

/// The calls under way to one server: an id each, and its client.
type Calls = Vec<(u64, Arc<dyn ClientLink>)>;

/// The clients with a call under way, per server.
#[derive(Default)]
pub struct Callers {
    by_server: Mutex<HashMap<String, Calls>>,
    next: AtomicU64,
}

/// Removes its caller when the call ends (dropped).
pub struct CallerGuard {
    callers: Arc<Callers>,
    server: String,
    id: u64,
}

impl Drop for CallerGuard {
    fn drop(&mut self) {
        let mut by_server = self
            .callers
            .by_server
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(list) = by_server.get_mut(&self.server) {
            list.retain(|(id, _)| *id != self.id);
            if list.is_empty() {
                by_server.remove(&self.server);
            }
        }
    }
}

impl Callers {
    /// Registers `link` as calling `server` until the guard drops.
    pub fn enter(self: &Arc<Self>, server: &str, link: Arc<dyn ClientLink>) -> CallerGuard {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.by_server
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(server.to_string())
            .or_default()
            .push((id, link));
        CallerGuard {
            callers: Arc::clone(self),
            server: server.to_string(),
            id,
        }
    }

    /// Whether a client's call to `server` is under way.
    pub fn is_calling(&self, server: &str) -> bool {
        self.latest(server).is_some()
    }

    fn latest(&self, server: &str) -> Option<Arc<dyn ClientLink>> {
        let by_server = self
            .by_server
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        by_server
            .get(server)?
            .last()
            .map(|(_, link)| Arc::clone(link))
    }

    /// The pool hook that makes each new session pass its server's requests on.
    pub fn hook(self: &Arc<Self>) -> SessionHook {
        let callers = Arc::clone(self);
        Arc::new(move |server: &str, session: &Session| {
            session.on_server_request(callers.handler(server));
        })
    }

    fn handler(self: &Arc<Self>, server: &str) -> ServerRequestHandler {
        let callers = Arc::clone(self);
        let server = server.to_string();
        Arc::new(move |method: String, params: Option<Value>| {
            let link = callers.latest(&server);
            let server = server.clone();
            Box::pin(async move {
                match link {
                    Some(link) => link.ask(method, params).await,
                    None => {
                        tracing::info!(
                            server,
                            method,
                            "refused a server request: no client call is under way"
                        );
                        Err(RpcError {
                            code: METHOD_NOT_FOUND,
                            message: format!("{method}: no client of mcp-launch can answer it now"),
                            data: None,
                        })
                    }
                }
            })
        })
    }
}
