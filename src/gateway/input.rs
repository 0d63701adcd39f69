//! A 2026-07-28 client is never sent a request: a server that needs input answers the call
//! with an `InputRequiredResult` (SEP-2322) and the client retries it with the answers. A
//! handshake-era server instead asks in the middle of the call (`elicitation/create`,
//! `sampling/createMessage`, `roots/list` as JSON-RPC requests) and waits on its connection.
//!
//! For a 2026 client calling such a server the gateway translates: the call runs on in a task
//! of its own (it is *parked*), the server's request goes back to the client as an
//! `InputRequiredResult` whose `requestState` names the parked call, and the retry's
//! `inputResponses` answer the waiting server; whatever the call does next — its result, or
//! another request — answers the retry. Only the client that started a call can resume it (the
//! state is a fresh key, ~238 random bits, bound to the client's scope), each round waits at most the call
//! timeout for the client, and a call nobody resumes is cancelled on its server.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::error::GatewayError;
use super::{Caller, ClientLink, Gateway, Stateless};
use crate::mcp::message::{META_PREFIX, METHOD_NOT_FOUND};
use crate::mcp::RpcError;
use crate::outputs::ClientScope;

/// How our `requestState` values begin (a server's own state never reaches this path: the
/// calls of a server that speaks the revision go to it verbatim).
const STATE_PREFIX: &str = "mcpl-input.";

/// Calls parked at once, in all; past it the oldest is given up (its server is told no).
const MAX_PARKED: usize = 256;

/// Requests a server may have waiting on one call before the client's next round.
const MAX_ASKS: usize = 16;

/// Numbers the calls round trips serve (each is a client of its own).
static NEXT_CALL: AtomicU64 = AtomicU64::new(1);

/// JSON-RPC "internal error": the client went away without answering.
const INTERNAL_ERROR: i64 = -32603;

/// One request of a server, waiting for the client's answer.
struct Ask {
    method: String,
    params: Option<Value>,
    answer: oneshot::Sender<Result<Value, RpcError>>,
}

/// A call under way on a handshake-era server for a 2026 client.
struct Running {
    call: JoinHandle<Result<Value, GatewayError>>,
    asks: mpsc::Receiver<Ask>,
    /// The requests the client was last asked, by the key it answers under.
    waiting: HashMap<String, oneshot::Sender<Result<Value, RpcError>>>,
    /// Whose call it is.
    scope: ClientScope,
    /// Cancels the call on its server.
    cancel: CancellationToken,
}

impl Drop for Running {
    fn drop(&mut self) {
        // Given up (expired, evicted, the gateway stopping): the server hears of it, and its
        // waiting requests fail as their senders drop.
        self.cancel.cancel();
    }
}

/// The parked calls, by their `requestState`.
#[derive(Default)]
pub(super) struct Parked {
    calls: Mutex<Vec<(String, Running)>>,
}

impl Parked {
    fn park(&self, state: String, running: Running) {
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        if calls.len() >= MAX_PARKED {
            let (oldest, _) = calls.remove(0);
            tracing::warn!(
                state = %oldest,
                "gave up a call waiting for its client's input: too many waiting"
            );
        }
        calls.push((state, running));
    }

    /// The call parked under `state`, when it is `scope`'s.
    fn take(&self, state: &str, scope: &ClientScope) -> Option<Running> {
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        let at = calls
            .iter()
            .position(|(s, r)| s == state && r.scope.hash() == scope.hash())?;
        Some(calls.remove(at).1)
    }

    /// Drops the call parked under `state` (its round expired).
    fn expire(&self, state: &str) {
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        calls.retain(|(s, _)| s != state);
    }
}

/// Asks a 2026 client through the round trip: a server's request waits in the channel.
struct RoundTrip {
    /// A client of its own (a 2026 call stands alone: see `ClientLink::who`).
    who: String,
    asks: mpsc::Sender<Ask>,
    /// The capabilities the client declared in its request's `_meta`.
    capabilities: Value,
}

impl ClientLink for RoundTrip {
    fn who(&self) -> &str {
        &self.who
    }

    fn ask(
        &self,
        method: String,
        params: Option<Value>,
    ) -> BoxFuture<'static, Result<Value, RpcError>> {
        let offered = capability_of(&method)
            .is_some_and(|c| self.capabilities.get(c).is_some_and(|v| !v.is_null()));
        let asks = self.asks.clone();
        Box::pin(async move {
            if !offered {
                return Err(rpc(
                    METHOD_NOT_FOUND,
                    format!("{method}: the client does not offer it"),
                ));
            }
            let (answer, answered) = oneshot::channel();
            let ask = Ask {
                method: method.clone(),
                params,
                answer,
            };
            if asks.send(ask).await.is_err() {
                return Err(rpc(INTERNAL_ERROR, format!("{method}: the call has ended")));
            }
            answered.await.unwrap_or_else(|_| {
                Err(rpc(
                    INTERNAL_ERROR,
                    format!("{method}: the client did not answer in time"),
                ))
            })
        })
    }
}

/// The client capability a server request needs.
fn capability_of(method: &str) -> Option<&'static str> {
    match method {
        "sampling/createMessage" => Some("sampling"),
        "elicitation/create" => Some("elicitation"),
        "roots/list" => Some("roots"),
        _ => None,
    }
}

fn rpc(code: i64, message: String) -> RpcError {
    RpcError {
        code,
        message,
        data: None,
    }
}

impl Gateway {
    /// A 2026 client's call of `name` on a handshake-era server: a new call, or the retry of
    /// one parked for the client's input.
    pub(super) async fn forward_asking(
        &self,
        name: &str,
        arguments: Value,
        caller: Caller,
        stateless: &Stateless,
        timeout: Duration,
    ) -> Result<Value, GatewayError> {
        let client_cancel = caller.cancel.clone();
        let running = match stateless
            .request_state()
            .filter(|s| s.starts_with(STATE_PREFIX))
        {
            Some(state) => self.resume(state, stateless, &caller.scope)?,
            None => self.start_asking(name, arguments, caller, stateless, timeout),
        };
        self.next_round(running, &client_cancel, timeout).await
    }

    fn start_asking(
        &self,
        name: &str,
        arguments: Value,
        caller: Caller,
        stateless: &Stateless,
        timeout: Duration,
    ) -> Running {
        let (asks, asked) = mpsc::channel(MAX_ASKS);
        let link = RoundTrip {
            who: format!("input-call:{}", NEXT_CALL.fetch_add(1, Ordering::Relaxed)),
            asks,
            capabilities: stateless
                .meta(&format!("{META_PREFIX}clientCapabilities"))
                .cloned()
                .unwrap_or(Value::Null),
        };
        let cancel = CancellationToken::new();
        let scope = caller.scope.clone();
        // The call outlives this request: its own cancel token, and no stateless part (its
        // server is of the handshake era: it gets the call as any session client's).
        let inner = Caller {
            link: Some(Arc::new(link)),
            cancel: cancel.clone(),
            stateless: None,
            ..caller
        };
        let gateway = self.clone();
        let name = name.to_string();
        let call = tokio::spawn(async move {
            gateway
                .forward(&name, arguments, inner, Some(timeout))
                .await
        });
        Running {
            call,
            asks: asked,
            waiting: HashMap::new(),
            scope,
            cancel,
        }
    }

    /// The parked call a retry names, its server's waiting requests answered.
    fn resume(
        &self,
        state: &str,
        stateless: &Stateless,
        scope: &ClientScope,
    ) -> Result<Running, GatewayError> {
        let mut running =
            self.inner
                .parked
                .take(state, scope)
                .ok_or_else(|| GatewayError::BadInput {
                    message: "this call's requestState is unknown or has expired".into(),
                    help: "call the tool again without inputResponses/requestState (a call waits \
                       for its input at most the gateway's call timeout)"
                        .into(),
                })?;
        let responses = stateless.input_responses();
        for (key, answer) in running.waiting.drain() {
            let response = match responses.and_then(|r| r.get(&key)) {
                Some(response) => Ok(response.clone()),
                None => Err(rpc(
                    INTERNAL_ERROR,
                    format!("the client sent no answer for `{key}`"),
                )),
            };
            let _ = answer.send(response);
        }
        Ok(running)
    }

    /// Waits for what the call does next: its result answers, a request of its server parks
    /// it and asks the client.
    async fn next_round(
        &self,
        mut running: Running,
        client_cancel: &CancellationToken,
        timeout: Duration,
    ) -> Result<Value, GatewayError> {
        let first = tokio::select! {
            done = &mut running.call => return finished(done),
            ask = running.asks.recv() => ask,
            () = client_cancel.cancelled() => {
                running.cancel.cancel();
                return finished((&mut running.call).await);
            }
        };
        let Some(first) = first else {
            // The call dropped its link: its result is coming.
            return finished((&mut running.call).await);
        };
        let mut requests = Map::new();
        let mut ask = Some(first);
        while let Some(Ask {
            method,
            params,
            answer,
        }) = ask
        {
            let key = format!("r{}", running.waiting.len() + 1);
            let mut request = json!({"method": method});
            if let Some(params) = params {
                request["params"] = params;
            }
            requests.insert(key.clone(), request);
            running.waiting.insert(key, answer);
            ask = running.asks.try_recv().ok();
        }
        let state = format!("{STATE_PREFIX}{}", crate::auth::generate_key());
        self.inner.parked.park(state.clone(), running);
        self.expire_later(state.clone(), timeout);
        Ok(json!({
            "resultType": "input_required",
            "inputRequests": requests,
            "requestState": state,
        }))
    }

    /// Gives the call parked under `state` up when the client has not resumed it in `after`.
    fn expire_later(&self, state: String, after: Duration) {
        let gateway = self.clone();
        self.spawn(async move {
            tokio::select! {
                () = tokio::time::sleep(after) => gateway.inner.parked.expire(&state),
                () = gateway.stopping() => {}
            }
        });
    }
}

fn finished(
    done: Result<Result<Value, GatewayError>, tokio::task::JoinError>,
) -> Result<Value, GatewayError> {
    done.unwrap_or_else(|e| {
        Err(GatewayError::BadInput {
            message: format!("the call ended abnormally: {e}"),
            help: "call the tool again".into(),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running(scope: &str) -> Running {
        let (_asks, asked) = mpsc::channel(1);
        Running {
            call: tokio::spawn(async { Ok(Value::Null) }),
            asks: asked,
            waiting: HashMap::new(),
            scope: ClientScope::new(scope),
            cancel: CancellationToken::new(),
        }
    }

    #[tokio::test]
    async fn only_the_client_that_started_a_call_resumes_it() {
        let parked = Parked::default();
        parked.park("s1".into(), running("alice"));
        assert!(parked.take("s1", &ClientScope::new("mallory")).is_none());
        assert!(parked.take("s2", &ClientScope::new("alice")).is_none());
        assert!(parked.take("s1", &ClientScope::new("alice")).is_some());
        assert!(
            parked.take("s1", &ClientScope::new("alice")).is_none(),
            "a state resumes once"
        );
    }

    #[tokio::test]
    async fn a_call_given_up_is_cancelled_on_its_server() {
        let parked = Parked::default();
        let first = running("a");
        let cancelled = first.cancel.clone();
        parked.park("first".into(), first);
        for n in 1..MAX_PARKED {
            parked.park(format!("s{n}"), running("a"));
        }
        assert!(!cancelled.is_cancelled());
        parked.park("one too many".into(), running("a"));
        assert!(cancelled.is_cancelled(), "the oldest is given up");
        assert!(parked.take("first", &ClientScope::new("a")).is_none());
        let last = parked.take("s1", &ClientScope::new("a")).expect("kept");
        let last_cancel = last.cancel.clone();
        parked.park("again".into(), last);
        parked.expire("again");
        assert!(last_cancel.is_cancelled(), "an expired round is given up");
    }

    #[tokio::test]
    async fn a_server_request_waits_for_the_clients_answer() {
        let (asks, mut asked) = mpsc::channel(1);
        let link = RoundTrip {
            who: "test".into(),
            asks,
            capabilities: json!({"elicitation": {}}),
        };
        let refused = link.ask("sampling/createMessage".into(), None).await;
        assert_eq!(refused.unwrap_err().code, METHOD_NOT_FOUND);
        let question = tokio::spawn(link.ask("elicitation/create".into(), Some(json!({}))));
        let ask = asked.recv().await.expect("asked");
        assert_eq!(ask.method, "elicitation/create");
        ask.answer.send(Ok(json!({"action": "decline"}))).unwrap();
        assert_eq!(
            question.await.unwrap().unwrap(),
            json!({"action": "decline"})
        );
        let unanswered = tokio::spawn(link.ask("elicitation/create".into(), None));
        drop(asked.recv().await.expect("asked"));
        assert_eq!(unanswered.await.unwrap().unwrap_err().code, INTERNAL_ERROR);
    }
}
