//! The legacy HTTP+SSE transport (protocol 2024-11-05): a long-lived GET stream carries the
//! server's messages; its first `endpoint` event names the URL we POST ours to.

use std::sync::Arc;

use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use reqwest::header::ACCEPT;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tracing::Instrument;

use super::error::McpError;
use super::http::{client, header_map, http_error, send_authorized};
use super::limits::cap_events;
use super::peer::{CloseReason, Peer};
use super::session::ConnectOptions;

/// Owns the reader and writer tasks; aborts both on drop.
pub(crate) struct Handle {
    tasks: Vec<JoinHandle<()>>,
}

impl Handle {
    /// Stops both tasks, which closes the stream.
    pub(crate) fn shutdown(self) {}
}

impl Drop for Handle {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Opens the event stream, waits for the `endpoint` event, then starts the reader and writer.
pub(crate) async fn start(
    url: &str,
    headers: &[(String, String)],
    peer: Arc<Peer>,
    outbox: mpsc::Receiver<Value>,
    opts: &ConnectOptions,
) -> Result<Handle, McpError> {
    let headers = header_map(url, headers)?;
    let client = client(url)?;
    let connect_error = |message: String| McpError::Connect {
        url: url.to_string(),
        message,
    };
    let stream = client
        .get(url)
        .headers(headers.clone())
        .header(ACCEPT, "text/event-stream");
    let resp = send_authorized(url, &headers, stream).await?;
    if !resp.status().is_success() {
        return Err(http_error(url, &headers, resp).await);
    }
    let mut events = cap_events(resp.bytes_stream(), url, opts.limits.message_bytes).eventsource();
    let wait = opts.fast_window + opts.slow_window;
    let endpoint = tokio::time::timeout(wait, endpoint_event(&mut events, url))
        .await
        .map_err(|_| connect_error(format!("no endpoint event within {}s", wait.as_secs())))??;
    let post_url = post_url(url, &endpoint)?;
    tracing::debug!(post_url = %super::redact::url(post_url.as_str()), "legacy SSE endpoint");
    let reader =
        tokio::spawn(read_messages(events, Arc::clone(&peer), url.to_string()).in_current_span());
    let posts = Posts {
        client,
        stream_url: url.to_string(),
        url: post_url,
        headers,
    };
    let writer = tokio::spawn(posts.send_all(outbox, peer).in_current_span());
    Ok(Handle {
        tasks: vec![reader, writer],
    })
}

/// Where messages are POSTed: the `endpoint` event's data, relative to the stream's `url`.
pub(crate) fn post_url(url: &str, endpoint: &str) -> Result<reqwest::Url, McpError> {
    let connect_error = |message: String| McpError::Connect {
        url: url.to_string(),
        message,
    };
    let base = reqwest::Url::parse(url).map_err(|e| connect_error(e.to_string()))?;
    let post = base
        .join(endpoint.trim())
        .map_err(|e| connect_error(format!("bad endpoint {endpoint:?}: {e}")))?;
    // Our messages (and the configured headers) go only where the stream came from.
    if post.origin() != base.origin() {
        return Err(connect_error(format!(
            "the endpoint event names another origin ({endpoint:?}); messages go only to the \
             stream's own"
        )));
    }
    Ok(post)
}

/// The first `endpoint` event's data: where messages are POSTed.
pub(crate) async fn endpoint_event<S, E>(events: &mut S, url: &str) -> Result<String, McpError>
where
    S: futures_util::Stream<Item = Result<eventsource_stream::Event, E>> + Unpin,
    E: std::fmt::Display,
{
    let connect_error = |message: String| McpError::Connect {
        url: url.to_string(),
        message,
    };
    while let Some(event) = events.next().await {
        match event {
            Ok(event) if event.event == "endpoint" => return Ok(event.data),
            Ok(_) => continue,
            Err(e) => return Err(connect_error(format!("SSE stream broke: {e}"))),
        }
    }
    Err(connect_error(
        "SSE stream ended before the endpoint event".into(),
    ))
}

/// Hands each `message` event to `peer` until the stream ends, then closes the peer.
async fn read_messages<S, E>(mut events: S, peer: Arc<Peer>, url: String)
where
    S: futures_util::Stream<Item = Result<eventsource_stream::Event, E>> + Unpin,
    E: std::fmt::Display,
{
    while let Some(event) = events.next().await {
        match event {
            Ok(event) if event.event == "message" || event.event.is_empty() => {
                match serde_json::from_str::<Value>(&event.data) {
                    Ok(value) => peer.handle(value),
                    Err(_) => tracing::debug!(data = %event.data, "skipped non-JSON SSE event"),
                }
            }
            Ok(_) => {}
            Err(e) => {
                tracing::debug!(error = %e, "SSE stream broke");
                break;
            }
        }
    }
    peer.close(CloseReason::Disconnected {
        url,
        message: "the SSE stream ended".into(),
    });
}

/// Where and how messages are POSTed.
struct Posts {
    client: reqwest::Client,
    /// The stream's URL: the MCP endpoint whose OAuth token the POSTs carry.
    stream_url: String,
    url: reqwest::Url,
    headers: reqwest::header::HeaderMap,
}

impl Posts {
    /// POSTs each message of `outbox`; a request whose POST fails fails at once.
    async fn send_all(self, mut outbox: mpsc::Receiver<Value>, peer: Arc<Peer>) {
        while let Some(msg) = outbox.recv().await {
            let request_id = msg.get("method").and(msg.get("id")).and_then(Value::as_u64);
            let post = (self.client.post(self.url.clone()))
                .headers(self.headers.clone())
                .json(&msg);
            let error = match send_authorized(&self.stream_url, &self.headers, post).await {
                Ok(resp) if resp.status().is_success() => continue,
                Ok(resp) => http_error(self.url.as_str(), &self.headers, resp).await,
                Err(e) => e,
            };
            match request_id {
                Some(id) => peer.fail(id, error),
                None => tracing::debug!(%error, "SSE POST failed"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the `sse` fuzz target: an endpoint event could name another scheme or host
    /// (`ple:80/x`, `http://elsewhere/`), where our messages and headers would have gone
    /// (`fuzz/corpus/sse/other-origin`).
    #[test]
    fn the_endpoint_keeps_the_streams_origin() {
        let url = "http://127.0.0.1:9/mcp/sse";
        let same = post_url(url, " /messages?session=1 ").expect("a relative endpoint");
        assert_eq!(same.as_str(), "http://127.0.0.1:9/messages?session=1");
        for other in [
            "ple:80/x",
            "http://elsewhere:9/x",
            "https://127.0.0.1:9/x",
            "//h/x",
        ] {
            assert!(post_url(url, other).is_err(), "{other}");
        }
    }
}
