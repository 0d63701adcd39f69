//! Passing an upstream's own requests (sampling, elicitation, roots) on to a client: the
//! client whose call caused the request, or nobody.
//!
//! A server's request over Streamable HTTP that comes on the response stream of a call is
//! that call's: its client answers it ([`Callers::answering`]), however many other clients
//! are calling. Any other request (stdio has no correlation at all; an HTTP server may also
//! send on its standalone stream) is answered only when it can be attributed: by the one
//! client with calls to that server under way. With none, or with calls of several clients
//! under way, the upstream gets -32601 and the refusal is logged — never another client's
//! answer.
//!
//! Servers cache what they asked (server-everything asks `roots/list` once and keeps the answer
//! until `notifications/roots/list_changed`), and a cache holds one client's roots at a time.
//! So on an upstream whose server has asked for roots, the calls of different clients take
//! turns (first come, first served; one client's calls still run together): a client's call
//! waits until no other client's call is under way there, asks the client for its roots as
//! they are now, and when they differ from the roots the server last got (another client's,
//! or this client's before they changed), tells the server its roots changed and answers its
//! re-asking with them — an empty list for a client that offers none, never the previous
//! client's — before the call is sent. Servers that never ask for roots keep every client's
//! calls concurrent (a slow call holds up nobody), and their ambiguous requests are refused.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{json, Value};

use crate::mcp::message::{METHOD_NOT_FOUND, STATELESS_PROTOCOL_VERSION};
use crate::mcp::{RpcError, ServerRequestHandler, Session};
use crate::pool::SessionHook;

/// How long a switch waits for the server to re-ask `roots/list` after being told they
/// changed: servers that follow the notification ask at once (a local round trip).
const REASK_WAIT: Duration = Duration::from_secs(2);

/// After our answer to the re-asking, before the call is written: the server stores the answer
/// asynchronously after reading it, and a call read in the same chunk could overtake the store.
const STORE_SETTLE: Duration = Duration::from_millis(20);

/// How long a client may take to give its roots: a client that does not answer gives none
/// (the server must not go on with the previous client's).
const ROOTS_ANSWER_WAIT: Duration = Duration::from_secs(1);

/// How often a switch looks whether the server re-asked.
const REASK_POLL: Duration = Duration::from_millis(5);

/// The roots-list request and the notification that makes a server re-ask it.
const ROOTS_LIST: &str = "roots/list";
const ROOTS_CHANGED: &str = "notifications/roots/list_changed";

/// A client that can answer a server's requests.
pub trait ClientLink: Send + Sync {
    /// Who the client is: equal for two requests of one client (its HTTP session, the stdio
    /// peer), unique for a client of the stateless revision (each request stands alone).
    fn who(&self) -> &str;

    /// Asks the client `method` with `params`; `Err` is the JSON-RPC error to pass back.
    fn ask(
        &self,
        method: String,
        params: Option<Value>,
    ) -> BoxFuture<'static, Result<Value, RpcError>>;
}

/// What the gateway knows of one upstream session's context.
#[derive(Default)]
struct Upstream {
    /// The calls under way: an id each, and its client.
    calls: Vec<(u64, Arc<dyn ClientLink>)>,
    /// Whether the server has asked for roots (its calls then take turns).
    asks_roots: bool,
    /// The `roots/list` answer the server last got from us (`None`: none yet, or refused).
    roots: Option<Value>,
    /// The roots a switch answers the server's re-asking with.
    switching: Option<Value>,
    /// Whether the server did not re-ask within [`REASK_WAIT`] when told: then we do not wait.
    ignores_changes: bool,
}

/// The clients with a call under way, per upstream.
#[derive(Default)]
pub struct Callers {
    upstreams: Mutex<HashMap<String, Upstream>>,
    /// Turns on the upstreams that ask for roots: one client's calls at a time.
    turns: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Wakes the turns waiting for other clients' calls to end.
    ended: tokio::sync::Notify,
    next: AtomicU64,
}

/// Removes its caller when the call ends (dropped).
pub struct CallerGuard {
    callers: Arc<Callers>,
    key: String,
    id: u64,
}

impl Drop for CallerGuard {
    fn drop(&mut self) {
        let mut upstreams = self.callers.lock();
        if let Some(upstream) = upstreams.get_mut(&self.key) {
            upstream.calls.retain(|(id, _)| *id != self.id);
        }
        drop(upstreams);
        self.callers.ended.notify_waiters();
    }
}

/// The key of an upstream: its server, and the era it speaks (a stdio server runs one process
/// per era, each with its own cache).
fn key(server: &str, stateless: bool) -> String {
    if stateless {
        format!("{server}#{STATELESS_PROTOCOL_VERSION}")
    } else {
        server.to_string()
    }
}

/// A client's roots as a server gets them: its answer, or none when it offers none, refuses
/// or does not answer within [`ROOTS_ANSWER_WAIT`].
async fn roots_of(link: &dyn ClientLink) -> Value {
    let asked = link.ask(ROOTS_LIST.to_string(), None);
    match tokio::time::timeout(ROOTS_ANSWER_WAIT, asked).await {
        Ok(Ok(roots)) => roots,
        Ok(Err(_)) => json!({"roots": []}),
        Err(_) => {
            tracing::info!("a client did not give its roots in time: none given");
            json!({"roots": []})
        }
    }
}

impl Callers {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Upstream>> {
        self.upstreams
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers `link`'s call to `server` (its upstream of the stateless revision when
    /// `stateless`) until the guard drops. On an upstream whose server asks for roots, first
    /// waits its turn and gives the server `link`'s roots (see the module doc).
    pub async fn enter(
        self: &Arc<Self>,
        server: &str,
        stateless: bool,
        link: Arc<dyn ClientLink>,
        session: &Session,
    ) -> CallerGuard {
        let key = key(server, stateless);
        let turn = match self.asks_roots(&key) {
            true => Some(self.take_turn(&key, &link, session).await),
            false => None,
        };
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock()
            .entry(key.clone())
            .or_default()
            .calls
            .push((id, link));
        drop(turn);
        CallerGuard {
            callers: Arc::clone(self),
            key,
            id,
        }
    }

    fn asks_roots(&self, key: &str) -> bool {
        self.lock().get(key).is_some_and(|u| u.asks_roots)
    }

    /// Waits for `link`'s turn on `key`'s upstream (first come, first served) and gives the
    /// server `link`'s roots when it holds others; the guard ends the turn.
    async fn take_turn(
        &self,
        key: &str,
        link: &Arc<dyn ClientLink>,
        session: &Session,
    ) -> tokio::sync::OwnedMutexGuard<()> {
        let gate = Arc::clone(
            self.turns
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(key.to_string())
                .or_default(),
        );
        let turn = gate.lock_owned().await;
        self.wait_until_alone(key, link.who()).await;
        let roots = roots_of(link.as_ref()).await;
        let held = self.lock().get(key).and_then(|u| u.roots.clone());
        if held.as_ref() != Some(&roots) {
            self.switch_roots(key, roots, session).await;
        }
        turn
    }

    /// Waits until no call of a client other than `who` is under way on `key`'s upstream.
    async fn wait_until_alone(&self, key: &str, who: &str) {
        loop {
            let ended = self.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            let others = self
                .lock()
                .get(key)
                .is_some_and(|u| u.calls.iter().any(|(_, l)| l.who() != who));
            if !others {
                return;
            }
            ended.await;
        }
    }

    /// Tells the server its roots changed and waits until its re-asking got `roots`.
    async fn switch_roots(&self, key: &str, roots: Value, session: &Session) {
        let ignores_changes = {
            let mut upstreams = self.lock();
            let upstream = upstreams.entry(key.to_string()).or_default();
            upstream.switching = Some(roots.clone());
            upstream.ignores_changes
        };
        session.notify(ROOTS_CHANGED, None);
        let reasked = !ignores_changes && self.wait_for(key, &roots).await;
        let mut upstreams = self.lock();
        let upstream = upstreams.entry(key.to_string()).or_default();
        upstream.switching = None;
        if !ignores_changes && !reasked {
            tracing::info!(
                upstream = key,
                "the server did not re-ask its roots when told they changed"
            );
            upstream.ignores_changes = true;
        }
    }

    /// Waits (at most [`REASK_WAIT`]) until the server got `roots`.
    async fn wait_for(&self, key: &str, roots: &Value) -> bool {
        let deadline = tokio::time::Instant::now() + REASK_WAIT;
        while tokio::time::Instant::now() < deadline {
            if self.lock().get(key).and_then(|u| u.roots.as_ref()) == Some(roots) {
                tokio::time::sleep(STORE_SETTLE).await;
                return true;
            }
            tokio::time::sleep(REASK_POLL).await;
        }
        false
    }

    /// Whether a client's call to `server` is under way.
    pub fn is_calling(&self, server: &str) -> bool {
        let upstreams = self.lock();
        [false, true].iter().any(|&stateless| {
            upstreams
                .get(&key(server, stateless))
                .is_some_and(|u| !u.calls.is_empty())
        })
    }

    /// The roots a switch gives `key`'s server (its re-asking), if one is under way.
    fn switching(&self, key: &str) -> Option<Value> {
        self.lock().get(key).and_then(|u| u.switching.clone())
    }

    /// The client that answers a request of `key`'s server, or why nobody does.
    fn answerer(&self, key: &str) -> Result<Arc<dyn ClientLink>, &'static str> {
        let upstreams = self.lock();
        let calls = upstreams
            .get(key)
            .map(|u| u.calls.as_slice())
            .unwrap_or(&[]);
        let Some((_, latest)) = calls.last() else {
            return Err("no client call is under way");
        };
        if calls.iter().any(|(_, l)| l.who() != latest.who()) {
            return Err("calls of several clients are under way and it cannot tell whose");
        }
        Ok(Arc::clone(latest))
    }

    /// Records that `key`'s server asked for roots and got `roots` (`None`: refused).
    fn gave_roots(&self, key: &str, roots: Option<Value>) {
        let mut upstreams = self.lock();
        let upstream = upstreams.entry(key.to_string()).or_default();
        upstream.asks_roots = true;
        upstream.roots = roots;
    }

    /// The pool hook that makes each new session pass its server's requests on (a new
    /// session's server holds nobody's roots yet).
    pub fn hook(self: &Arc<Self>) -> SessionHook {
        let callers = Arc::clone(self);
        Arc::new(move |server: &str, session: &Session| {
            let stateless = session.info().protocol_version == STATELESS_PROTOCOL_VERSION;
            let key = key(server, stateless);
            if let Some(upstream) = callers.lock().get_mut(&key) {
                upstream.roots = None;
                upstream.ignores_changes = false;
            }
            session.on_server_request(callers.handler(key));
        })
    }

    fn handler(self: &Arc<Self>, key: String) -> ServerRequestHandler {
        let callers = Arc::clone(self);
        Arc::new(move |method: String, params: Option<Value>| {
            let callers = Arc::clone(&callers);
            let key = key.clone();
            Box::pin(async move { callers.answer(&key, method, params).await })
        })
    }

    /// Answers the requests `server`'s upstream (of the stateless revision when `stateless`)
    /// makes about one call of `link`'s (see the module doc): `link` answers them.
    pub fn answering(
        self: &Arc<Self>,
        server: &str,
        stateless: bool,
        link: Arc<dyn ClientLink>,
    ) -> ServerRequestHandler {
        let callers = Arc::clone(self);
        let key = key(server, stateless);
        Arc::new(move |method: String, params: Option<Value>| {
            let (callers, key, link) = (Arc::clone(&callers), key.clone(), Arc::clone(&link));
            Box::pin(async move { callers.answer_by(&key, link, method, params).await })
        })
    }

    /// Answers a request of `key`'s server (see the module doc).
    async fn answer(
        &self,
        key: &str,
        method: String,
        params: Option<Value>,
    ) -> Result<Value, RpcError> {
        if method == ROOTS_LIST {
            if let Some(roots) = self.switching(key) {
                self.gave_roots(key, Some(roots.clone()));
                return Ok(roots);
            }
        }
        let link = match self.answerer(key) {
            Ok(link) => link,
            Err(why) => {
                if method == ROOTS_LIST {
                    self.gave_roots(key, None);
                }
                tracing::info!(upstream = key, method, "refused a server request: {why}");
                return Err(RpcError {
                    code: METHOD_NOT_FOUND,
                    message: format!("{method}: mcp-launch cannot answer it now: {why}"),
                    data: None,
                });
            }
        };
        self.answer_by(key, link, method, params).await
    }

    /// Has `link` answer a request of `key`'s server.
    async fn answer_by(
        &self,
        key: &str,
        link: Arc<dyn ClientLink>,
        method: String,
        params: Option<Value>,
    ) -> Result<Value, RpcError> {
        if method != ROOTS_LIST {
            return link.ask(method, params).await;
        }
        // The server keeps what it gets: a client without roots gives none, so the previous
        // client's cannot stay.
        let roots = roots_of(link.as_ref()).await;
        self.gave_roots(key, Some(roots.clone()));
        Ok(roots)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client that answers every request with `answer` (or refuses, for `None`).
    struct Client {
        who: &'static str,
        answer: Option<Value>,
    }

    impl ClientLink for Client {
        fn who(&self) -> &str {
            self.who
        }

        fn ask(&self, _: String, _: Option<Value>) -> BoxFuture<'static, Result<Value, RpcError>> {
            let answer = self.answer.clone().ok_or(RpcError {
                code: METHOD_NOT_FOUND,
                message: "not offered".into(),
                data: None,
            });
            Box::pin(async move { answer })
        }
    }

    fn calling(callers: &Callers, clients: &[(&'static str, Option<Value>)]) {
        let mut upstreams = callers.lock();
        let upstream = upstreams.entry("s".into()).or_default();
        for (id, (who, answer)) in clients.iter().enumerate() {
            let link: Arc<dyn ClientLink> = Arc::new(Client {
                who,
                answer: answer.clone(),
            });
            upstream.calls.push((id as u64, link));
        }
    }

    #[tokio::test]
    async fn a_request_is_answered_by_the_one_client_calling_else_refused() {
        let callers = Callers::default();
        let asked = || callers.answer("s", "sampling/createMessage".into(), None);
        assert_eq!(
            asked().await.unwrap_err().code,
            METHOD_NOT_FOUND,
            "nobody calls"
        );
        let reply = json!({"content": {"type": "text", "text": "a"}});
        calling(
            &callers,
            &[("a", Some(reply.clone())), ("a", Some(reply.clone()))],
        );
        assert_eq!(asked().await.unwrap(), reply, "two calls of one client");
        calling(&callers, &[("b", Some(json!({"from": "b"})))]);
        let refused = asked().await.unwrap_err();
        assert_eq!(refused.code, METHOD_NOT_FOUND, "two clients: whose is it?");
        assert!(
            refused.message.contains("several clients"),
            "{}",
            refused.message
        );
    }

    #[tokio::test]
    async fn a_client_without_roots_gives_none_and_the_server_is_known_to_ask() {
        let callers = Callers::default();
        calling(&callers, &[("plain", None)]);
        let roots = callers.answer("s", ROOTS_LIST.into(), None).await;
        assert_eq!(roots.unwrap(), json!({"roots": []}));
        let upstreams = callers.lock();
        assert!(upstreams["s"].asks_roots);
        assert_eq!(upstreams["s"].roots, Some(json!({"roots": []})));
    }
}
