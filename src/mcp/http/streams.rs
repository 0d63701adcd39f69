//! The event streams of a Streamable HTTP connection beyond a POST's own answer: resuming a
//! POST's stream that broke before its answer (SEP-1699), the standalone GET stream of the
//! handshake era, a JSON-RPC refusal carried by a failure status, and the 2026-07-28
//! revision's headers (SEP-2243).

use std::future::Future;
use std::sync::Arc;

use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use reqwest::header::ACCEPT;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::{
    error_chain, error_with_body, lock, Post, Resume, RESUMES, RESUME_WAIT, SESSION_HEADER,
    VERSION_HEADER,
};
use crate::mcp::error::McpError;
use crate::mcp::headers::{self, ToolHeaders};
use crate::mcp::limits::{cap_events, read_prefix, ERROR_BODY_BYTES};

impl Post {
    /// Reads a POST's (or a GET's) event stream, handing each event to the peer and noting
    /// where it stopped.
    pub(super) async fn read_events(
        &self,
        resp: reqwest::Response,
        method: &str,
        request_id: Option<u64>,
        resume: &mut Resume,
    ) {
        let body = cap_events(resp.bytes_stream(), &self.url, self.body_limit);
        let mut events = body.eventsource();
        while let Some(event) = events.next().await {
            let event = match event {
                Ok(event) => event,
                Err(e) => {
                    tracing::debug!(error = %e, "SSE response stream broke");
                    break;
                }
            };
            if !event.id.is_empty() {
                resume.last_event_id = Some(event.id.clone());
            }
            if event.retry.is_some() {
                resume.retry = event.retry;
            }
            if !event.data.trim().is_empty() {
                resume.answered |= self.deliver(&event.data, method, request_id);
            }
            if resume.answered {
                break;
            }
        }
    }

    /// Resumes a stream that ended without the answer: after the server's `retry` wait, a
    /// GET with `Last-Event-ID`, at most [`RESUMES`] times (only a stream that named event ids
    /// can be resumed).
    pub(super) async fn resume(&self, method: &str, request_id: Option<u64>, resume: &mut Resume) {
        for _ in 0..RESUMES {
            let Some(last) = resume.last_event_id.clone() else {
                return;
            };
            tokio::time::sleep(resume.retry.unwrap_or(RESUME_WAIT)).await;
            let Some(resp) = self.get_stream(Some(&last)).await else {
                return;
            };
            tracing::debug!(last_event_id = %last, "resumed the event stream");
            self.read_events(resp, method, request_id, resume).await;
            if resume.answered {
                return;
            }
        }
    }

    /// A GET for an event stream: the standalone one, or (with `last_event_id`) the rest of
    /// a broken one. `None` when the server has none to give.
    async fn get_stream(&self, last_event_id: Option<&str>) -> Option<reqwest::Response> {
        let mut req = self
            .client
            .get(&self.url)
            .headers(self.headers.clone())
            .header(ACCEPT, "text/event-stream");
        if let Some(last) = last_event_id {
            req = req.header("last-event-id", last);
        }
        {
            let state = lock(&self.state);
            if let Some(id) = &state.session_id {
                req = req.header(SESSION_HEADER, id.as_str());
            }
            if let Some(version) = &state.protocol_version {
                req = req.header(VERSION_HEADER, version.as_str());
            }
        }
        match req.send().await {
            Ok(resp) if resp.status().is_success() => Some(resp),
            Ok(resp) => {
                let status = resp.status().as_u16();
                tracing::debug!(status, "the server gives no event stream on GET");
                None
            }
            Err(e) => {
                let error = error_chain(&e.without_url());
                tracing::debug!(%error, "GET for an event stream failed");
                None
            }
        }
    }

    /// The standalone stream of the handshake era: a server sends on it the requests and
    /// notifications that belong to no POST (an elicitation outside a call's stream, list
    /// changes). Opened once the session is, reopened from its last event after the server's
    /// `retry` wait at most [`RESUMES`] times, ended with the session. The receiver resolves
    /// once the first GET was answered (with a stream or without).
    pub(super) fn listen(
        self,
        stop: CancellationToken,
    ) -> (oneshot::Receiver<()>, impl Future<Output = ()>) {
        let (opened, answered) = oneshot::channel();
        let listening = async move {
            let mut opened = Some(opened);
            let mut resume = Resume::default();
            for _ in 0..=RESUMES {
                let resp = self.get_stream(resume.last_event_id.as_deref()).await;
                opened.take();
                let Some(resp) = resp else {
                    return;
                };
                self.read_events(resp, "", None, &mut resume).await;
                tokio::time::sleep(resume.retry.unwrap_or(RESUME_WAIT)).await;
            }
        };
        let listener = async move {
            tokio::select! {
                () = listening => {}
                () = stop.cancelled() => {}
            }
        };
        (answered, listener)
    }

    /// Another Post over the same connection and session.
    pub(super) fn sibling(&self) -> Post {
        Post {
            client: self.client.clone(),
            url: self.url.clone(),
            target: self.target.clone(),
            headers: self.headers.clone(),
            state: Arc::clone(&self.state),
            peer: Arc::clone(&self.peer),
            body_limit: self.body_limit,
        }
    }

    /// A failure status whose body is a JSON-RPC error answer (the 2026-07-28 revision
    /// refuses a request so, e.g. an unsupported protocol version): handed to the peer like
    /// any answer. Otherwise the HTTP error.
    pub(super) async fn rpc_refusal(&self, resp: reqwest::Response) -> Result<(), McpError> {
        let status = resp.status().as_u16();
        let body = read_prefix(resp, ERROR_BODY_BYTES).await;
        let stateless = lock(&self.state).stateless;
        let answer = serde_json::from_str::<Value>(body.trim())
            .ok()
            .filter(|_| stateless)
            .filter(|v| v.get("error").is_some() && v.get("id").is_some_and(|id| !id.is_null()));
        match answer {
            Some(answer) => {
                self.peer.handle(answer);
                Ok(())
            }
            None => Err(error_with_body(&self.url, &self.headers, status, &body)),
        }
    }

    /// Notes the mirrored parameters of the tools a `tools/list` answer lists (a tool whose
    /// annotations break the rules is left out by the session; it gets none here).
    pub(super) fn remember_tool_headers(&self, answer: &Value) {
        let mut state = lock(&self.state);
        if !state.stateless {
            return;
        }
        let tools = answer.pointer("/result/tools").and_then(Value::as_array);
        for tool in tools.into_iter().flatten() {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            match headers::param_headers(tool) {
                Ok(params) if !params.is_empty() => {
                    state.tool_headers.insert(name.to_string(), params);
                }
                _ => {
                    state.tool_headers.remove(name);
                }
            }
        }
    }
}

/// `Mcp-Method`, `Mcp-Name` and the `Mcp-Param-*` headers of `msg`.
pub(super) fn revision_headers(
    mut req: reqwest::RequestBuilder,
    msg: &Value,
    tools: &ToolHeaders,
) -> reqwest::RequestBuilder {
    for (name, value) in headers::standard(msg)
        .into_iter()
        .chain(headers::mirrored(msg, tools))
    {
        req = req.header(name, value);
    }
    req
}
