//! The Streamable HTTP transport: every message is a POST; an answer comes back as JSON or as
//! an SSE stream on that POST. The server's `Mcp-Session-Id` is echoed on every later request,
//! and the negotiated version travels in `MCP-Protocol-Version`.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::stream::{FuturesUnordered, StreamExt};
use reqwest::header::{
    HeaderMap, HeaderName, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE,
};
use reqwest::{RequestBuilder, Response, StatusCode};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::error::McpError;
use super::headers::ToolHeaders;
use super::limits::{read_capped, read_prefix, ERROR_BODY_BYTES};
use super::message::STATELESS_PROTOCOL_VERSION;
use super::peer::Peer;

#[cfg(test)]
mod standalone_tests;
mod streams;

use self::streams::revision_headers;

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
/// A POST's `Accept` (checked once, not per request).
const ACCEPT_BOTH: HeaderValue = HeaderValue::from_static("application/json, text/event-stream");

/// Limit for connecting to a remote server; an unreachable host must not hang preflight.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Default)]
struct SessionState {
    session_id: Option<String>,
    protocol_version: Option<String>,
    /// Speaking the 2026-07-28 revision: its headers go on every POST.
    stateless: bool,
    /// The listed tools' parameters mirrored into `Mcp-Param-*` headers (stateless only).
    tool_headers: ToolHeaders,
}

/// How many times a POST's event stream that ended without its answer is resumed by a GET
/// with `Last-Event-ID` (SEP-1699).
const RESUMES: usize = 3;

/// The wait before a resume when the server named none in `retry`.
const RESUME_WAIT: Duration = Duration::from_secs(1);

/// The longest a new session waits for its standalone stream's GET to be answered before it
/// sends on (see [`Post::write`]).
const LISTEN_WAIT: Duration = Duration::from_secs(2);

/// Where a POST's event stream stopped: its last event id and the wait the server asked for.
#[derive(Default)]
struct Resume {
    last_event_id: Option<String>,
    retry: Option<Duration>,
    answered: bool,
}

/// Owns the writer task; aborts it on drop.
pub(crate) struct Handle {
    writer: JoinHandle<()>,
    /// Ends the standalone stream's listener (see [`Post::listen`]).
    listening: CancellationToken,
    client: reqwest::Client,
    url: String,
    headers: HeaderMap,
    state: Arc<Mutex<SessionState>>,
}

impl Handle {
    /// Stops sending and deletes the session on the server (best effort, bounded).
    pub(crate) async fn shutdown(self) {
        self.writer.abort();
        self.listening.cancel();
        let session_id = lock(&self.state).session_id.clone();
        if let Some(id) = session_id {
            let _ = self
                .client
                .delete(&self.url)
                .headers(self.headers.clone())
                .header(SESSION_HEADER, id)
                .timeout(Duration::from_secs(2))
                .send()
                .await;
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.writer.abort();
        self.listening.cancel();
    }
}

/// Builds a header map from configured pairs, naming a bad one.
pub(crate) fn header_map(url: &str, headers: &[(String, String)]) -> Result<HeaderMap, McpError> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let invalid = |what: &str| McpError::Connect {
            url: url.to_string(),
            message: format!("invalid header {what} in the config: {name:?}"),
        };
        let name_h = HeaderName::from_bytes(name.as_bytes()).map_err(|_| invalid("name"))?;
        let value_h = HeaderValue::from_str(value).map_err(|_| invalid("value for"))?;
        map.insert(name_h, value_h);
    }
    Ok(map)
}

/// How long a pooled connection may sit idle before we drop it: under the keep-alive limit
/// servers commonly close idle connections at (Node's HTTP server, the transport of most
/// remote MCP servers: 5 s). A request sent on a connection the server is closing at that
/// moment fails (`connection closed before message completed`) and cannot be sent again
/// safely (a tool call may have run); reqwest's own default keeps idle connections 90 s.
const POOL_IDLE: Duration = Duration::from_secs(4);

/// A pooled client with our connect timeout, idle connections dropped at [`POOL_IDLE`].
pub(crate) fn client(url: &str) -> Result<reqwest::Client, McpError> {
    reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .pool_idle_timeout(POOL_IDLE)
        .build()
        .map_err(|e| McpError::Connect {
            url: url.to_string(),
            message: e.to_string(),
        })
}

/// Starts the writer task that POSTs each outgoing message.
pub(crate) fn start(
    url: &str,
    headers: &[(String, String)],
    peer: Arc<Peer>,
    outbox: mpsc::Receiver<Value>,
    body_limit: usize,
    stateless: bool,
) -> Result<Handle, McpError> {
    let headers = header_map(url, headers)?;
    let client = client(url)?;
    let state = Arc::new(Mutex::new(SessionState {
        stateless,
        protocol_version: stateless.then(|| STATELESS_PROTOCOL_VERSION.to_string()),
        ..SessionState::default()
    }));
    let target = reqwest::Url::parse(url).map_err(|e| McpError::Connect {
        url: url.to_string(),
        message: format!("not a URL: {e}"),
    })?;
    let listening = CancellationToken::new();
    let post = Post {
        client: client.clone(),
        url: url.to_string(),
        target,
        headers: headers.clone(),
        state: Arc::clone(&state),
        peer,
        body_limit,
    };
    let writer = tokio::spawn(post.write(outbox, listening.clone()).in_current_span());
    Ok(Handle {
        writer,
        listening,
        client,
        url: url.to_string(),
        headers,
        state,
    })
}

struct Post {
    client: reqwest::Client,
    url: String,
    /// `url` parsed, once.
    target: reqwest::Url,
    headers: HeaderMap,
    state: Arc<Mutex<SessionState>>,
    peer: Arc<Peer>,
    /// The largest answer body or SSE event taken.
    body_limit: usize,
}

impl Post {
    /// POSTs each message of `outbox`. Requests are independent: each POST and its answer
    /// stream runs beside the others, so slow tool calls do not hold up the rest — all polled
    /// by this task (a task per POST cost its spawn and a hand-off between threads per call).
    /// Notifications and answers are acknowledged at once (202) and must reach the server in
    /// order: `tools/list` racing ahead of `notifications/initialized` misses tools a server
    /// registers on it; the requests in flight go on while one is sent.
    async fn write(self, mut outbox: mpsc::Receiver<Value>, listening: CancellationToken) {
        let mut requests = FuturesUnordered::new();
        loop {
            let msg = tokio::select! {
                msg = outbox.recv() => msg,
                Some(()) = requests.next(), if !requests.is_empty() => continue,
            };
            let Some(msg) = msg else {
                break;
            };
            if msg.get("method").is_some() && msg.get("id").is_some() {
                requests.push(self.send(msg));
                continue;
            }
            let opens_session = !lock(&self.state).stateless
                && msg.get("method").and_then(Value::as_str) == Some("notifications/initialized");
            beside(&mut requests, self.send(msg)).await;
            if opens_session {
                // A server sends what belongs to no request (TypeScript SDK servers: even a
                // tool's elicitation) on the standalone stream, and drops it while that stream
                // is not open: nothing more goes out before its GET is answered (a request
                // sent first could ask before anyone listens; a bounded wait, once a session).
                let (opened, listener) = self.sibling().listen(listening.clone());
                tokio::spawn(listener.in_current_span());
                let opened = tokio::time::timeout(LISTEN_WAIT, opened);
                beside(&mut requests, async { drop(opened.await) }).await;
            }
        }
        // Nothing more to send: the requests in flight still get their answers.
        while requests.next().await.is_some() {}
    }

    async fn send(&self, msg: Value) {
        let request_id = msg.get("method").and(msg.get("id")).and_then(Value::as_u64);
        let method = msg
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut req = self.client.post(self.target.clone());
        if !self.headers.is_empty() {
            req = req.headers(self.headers.clone());
        }
        let mut req = req.header(ACCEPT, ACCEPT_BOTH).json(&msg);
        {
            let state = lock(&self.state);
            if let Some(id) = &state.session_id {
                req = req.header(SESSION_HEADER, id.as_str());
            }
            if let Some(version) = &state.protocol_version {
                req = req.header(VERSION_HEADER, version.as_str());
            }
            if state.stateless {
                req = revision_headers(req, &msg, &state.tool_headers);
            }
        }
        for (name, value) in trace_context(&msg) {
            req = req.header(name, value);
        }
        let resp = match send_authorized(&self.url, &self.headers, req).await {
            Ok(resp) => resp,
            Err(error) => return self.fail(request_id, error),
        };
        if !resp.status().is_success() {
            let error = match self.rpc_refusal(resp).await {
                Ok(()) => return,
                Err(error) => error,
            };
            return self.fail(request_id, error);
        }
        if let Some(id) = resp
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
        {
            lock(&self.state).session_id = Some(id.to_string());
        }
        let is_sse = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.starts_with("text/event-stream"));
        if is_sse {
            let mut resume = Resume::default();
            self.read_events(resp, method, request_id, &mut resume)
                .await;
            if !resume.answered && request_id.is_some() {
                self.resume(method, request_id, &mut resume).await;
            }
            if resume.answered {
                return;
            }
        } else {
            match read_capped(resp, &self.url, self.body_limit).await {
                Ok(body) if !body.is_empty() => {
                    self.deliver(&String::from_utf8_lossy(&body), method, request_id);
                }
                Ok(_) => {}
                Err(error) => return self.fail(request_id, error),
            }
        }
        // A stream that ended without our answer would otherwise leave the caller waiting for
        // its timeout.
        self.fail(
            request_id,
            McpError::Protocol("the server's HTTP response ended without an answer".into()),
        );
    }

    /// Hands the messages of one body or event to the peer; true when one was the answer to
    /// `request_id`.
    fn deliver(&self, text: &str, method: &str, request_id: Option<u64>) -> bool {
        let Ok(value) = serde_json::from_str::<Value>(text) else {
            tracing::debug!(text = %text.chars().take(200).collect::<String>(), "skipped non-JSON HTTP payload");
            return false;
        };
        let messages = match value {
            Value::Array(batch) => batch,
            one => vec![one],
        };
        let mut answered = false;
        for message in messages {
            let is_answer = message.get("method").is_none()
                && request_id.is_some()
                && message.get("id").and_then(Value::as_u64) == request_id;
            answered |= is_answer;
            if is_answer && method == "tools/list" {
                self.remember_tool_headers(&message);
            }
            if method == "initialize" {
                if let Some(version) = message
                    .pointer("/result/protocolVersion")
                    .and_then(Value::as_str)
                {
                    lock(&self.state).protocol_version = Some(version.to_string());
                }
            }
            self.peer.handle_related(message, request_id);
        }
        answered
    }

    fn fail(&self, request_id: Option<u64>, error: McpError) {
        match request_id {
            Some(id) => self.peer.fail(id, error),
            None => tracing::debug!(%error, "HTTP notification or answer failed"),
        }
    }
}

/// Runs `first` to its end while the requests in flight go on.
async fn beside<F: Future<Output = ()>>(
    requests: &mut FuturesUnordered<impl Future<Output = ()>>,
    first: F,
) {
    tokio::pin!(first);
    loop {
        tokio::select! {
            () = &mut first => return,
            Some(()) = requests.next(), if !requests.is_empty() => {}
        }
    }
}

/// The Bearer challenge of a 401 or 403 answer, if it carries one.
fn bearer_challenge(resp: &Response) -> Option<crate::auth::challenge::BearerChallenge> {
    let status = resp.status();
    if status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN {
        return None;
    }
    let header = resp.headers().get(WWW_AUTHENTICATE)?.to_str().ok()?;
    crate::auth::challenge::BearerChallenge::parse(header)
}

fn lock(state: &Mutex<SessionState>) -> std::sync::MutexGuard<'_, SessionState> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// The error for a response with a failure status: its status and the start of its body,
/// with the credentials we sent masked (an upstream may echo its request, and the error
/// reaches logs, tool errors and the front's answers).
pub(crate) async fn http_error(
    url: &str,
    headers: &HeaderMap,
    resp: reqwest::Response,
) -> McpError {
    let status = resp.status().as_u16();
    let body = read_prefix(resp, ERROR_BODY_BYTES).await;
    error_with_body(url, headers, status, &body)
}

/// [`http_error`] for a body already read.
fn error_with_body(url: &str, headers: &HeaderMap, status: u16, body: &str) -> McpError {
    let body: String = body.chars().take(ERROR_BODY_BYTES).collect();
    McpError::Http {
        url: url.to_string(),
        status,
        body: sent_credentials(url, headers).mask(body.trim()),
    }
}

/// The W3C trace context a request carries in `params._meta` (SEP-414), also sent as the
/// `traceparent` / `tracestate` headers so HTTP infrastructure in between joins the trace.
fn trace_context(msg: &Value) -> impl Iterator<Item = (&'static str, &str)> {
    let meta = msg.get("params").and_then(|params| params.get("_meta"));
    ["traceparent", "tracestate"]
        .into_iter()
        .filter_map(move |name| {
            let value = meta?.get(name)?.as_str()?;
            // A value that cannot be a header (a control character) is not sent as one.
            reqwest::header::HeaderValue::from_str(value).ok()?;
            Some((name, value))
        })
}

/// A masker of what a request to `url` with `headers` carried.
fn sent_credentials(url: &str, headers: &HeaderMap) -> crate::process::Masker {
    let masker = crate::process::Masker::new();
    let values = headers.values().filter_map(|v| v.to_str().ok());
    super::redact::add_remote(&masker, url, values);
    masker
}

/// The error and its causes, e.g. "error sending request: connection refused". Callers pass
/// reqwest's errors `without_url()`: the URL may carry a key, and errors reach logs and
/// clients (it is shown masked by `McpError` instead).
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Sends `req` with the OAuth token stored for the MCP endpoint `url` — Streamable HTTP's, or
/// a legacy SSE stream's, whose POSTs go to its `endpoint` — (none when the config's `headers`
/// set `Authorization`); on a 401, one refresh and one retry — unless the server's metadata
/// now names another authorization server. A 401 that no stored token can answer,
/// a server that moved, and a 403 `insufficient_scope` are "needs login" errors (the last
/// naming the scopes to ask for), never plain HTTP failures.
pub(crate) async fn send_authorized(
    url: &str,
    headers: &HeaderMap,
    req: RequestBuilder,
) -> Result<Response, McpError> {
    use crate::auth::client::{challenged, store, AuthError};
    let connect = |e: reqwest::Error| McpError::Connect {
        url: url.to_string(),
        message: error_chain(&e.without_url()),
    };
    if headers.contains_key(AUTHORIZATION) {
        return req.send().await.map_err(connect);
    }
    let token = store::token_for(url).await?;
    // Only a sent token can be refreshed and the request sent again (a copy costs its body).
    let retry = token.as_ref().and_then(|_| req.try_clone());
    let req = match &token {
        Some(token) => req.bearer_auth(token),
        None => req,
    };
    let resp = req.send().await.map_err(connect)?;
    let Some(challenge) = bearer_challenge(&resp) else {
        return Ok(resp);
    };
    let shown = super::redact::url(url);
    match (resp.status(), token, retry) {
        (StatusCode::FORBIDDEN, Some(_), _) => {
            match challenged::insufficient_scope(url, &shown, &challenge).await {
                Some(step_up) => Err(step_up.into()),
                None => Ok(resp),
            }
        }
        (StatusCode::UNAUTHORIZED, Some(rejected), Some(retry)) => {
            if let Some(moved) = challenged::moved(url, &shown, &challenge).await {
                return Err(moved.into());
            }
            let fresh = store::refresh(url, &rejected).await?;
            retry.bearer_auth(fresh).send().await.map_err(connect)
        }
        (StatusCode::UNAUTHORIZED, None, _) => Err(AuthError::NeedsLogin {
            resource: shown,
            reason: "it asks for an OAuth login and no token is stored".into(),
        }
        .into()),
        _ => Ok(resp),
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// An upstream that answers every request 500 with the request itself as the body.
    async fn echoing_upstream() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = vec![0u8; 8192];
            let n = socket.read(&mut request).await.unwrap();
            let head = format!(
                "HTTP/1.1 500 Internal Server Error\r\ncontent-length: {n}\r\nconnection: close\r\n\r\n"
            );
            socket.write_all(head.as_bytes()).await.unwrap();
            socket.write_all(&request[..n]).await.unwrap();
        });
        format!("http://{addr}/mcp?api_key=url-k3y-secret")
    }

    /// Medium 4 of issue 24: the error of an upstream that echoes its request carried our
    /// header values and the URL's key to the log, the gateway's tool error and the front.
    #[test]
    fn trace_context_in_meta_is_also_sent_as_headers() {
        let msg = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "t", "_meta": {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                "tracestate": "a=b", "progressToken": "p"}}});
        let headers: Vec<_> = trace_context(&msg).collect();
        assert_eq!(
            headers,
            [
                (
                    "traceparent",
                    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
                ),
                ("tracestate", "a=b")
            ]
        );
        let bad = serde_json::json!({"params": {"_meta": {"traceparent": "x\ny"}}});
        assert_eq!(trace_context(&bad).count(), 0);
        assert_eq!(
            trace_context(&serde_json::json!({"method": "ping"})).count(),
            0
        );
    }

    #[tokio::test]
    async fn an_echoed_request_in_an_error_body_is_masked() {
        let url = echoing_upstream().await;
        let configured = [
            ("X-Token".to_string(), "x-t0ken-secret".to_string()),
            (
                "Authorization".to_string(),
                "Bearer bearer-s3cret".to_string(),
            ),
        ];
        let headers = header_map(&url, &configured).unwrap();
        let resp = client(&url)
            .unwrap()
            .post(&url)
            .headers(headers.clone())
            .body("{}")
            .send()
            .await
            .unwrap();
        let shown = http_error(&url, &headers, resp).await.to_string();
        assert!(shown.contains("HTTP 500"), "{shown}");
        assert!(shown.contains("x-token"), "the echo is kept: {shown}");
        for secret in ["x-t0ken-secret", "bearer-s3cret", "url-k3y-secret"] {
            assert!(!shown.contains(secret), "{secret} relayed: {shown}");
        }
    }
}
