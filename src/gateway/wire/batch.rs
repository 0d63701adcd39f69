//! JSON-RPC batches over HTTP. The 2025-03-26 revision lets a POST carry "an array batching
//! one or more requests and/or notifications" (or responses); 2025-06-18 removed batching.
//! rmcp reads one message per POST, so a batch on a 2025-03-26 session is split here: each
//! element goes to rmcp as its own POST on the same session, all at once, and the answers come
//! back as one `application/json` array (202 with no body when the batch held no request).
//!
//! Which revision a request speaks is its `MCP-Protocol-Version` header: clients of 2025-06-18
//! and later must send it, and without it "the server SHOULD assume protocol version
//! 2025-03-26" (Streamable HTTP, protocol version header). A batch with another version is a
//! -32600 that says so; so is one without a session (initialize "MUST NOT be part of a JSON-RPC
//! batch"), and an empty one.
//!
//! A batched request is answered as JSON, so nothing else of its stream reaches the client: its
//! notifications (progress, logs) are dropped, and a request the server makes while answering
//! it (sampling, elicitation, roots) is refused with an error rather than left waiting.

use axum::body::Body;
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::request::Parts;
use axum::http::{Request, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde_json::{json, Value};

use super::guard::{forward, plain_text, refusal, INVALID_REQUEST};

/// The revision that allowed batches, and the one a request without the header speaks.
const BATCH_REVISION: &str = "2025-03-26";

/// The answer to a batch POST (`body` is a JSON array, already checked).
pub async fn answer(inner: &Router, parts: Parts, body: &[u8]) -> Response {
    if let Err(why) = allowed(&parts) {
        return refusal(StatusCode::BAD_REQUEST, INVALID_REQUEST, why, Value::Null);
    }
    let elements: Vec<Value> = match serde_json::from_slice(body) {
        Ok(elements) => elements,
        Err(e) => {
            let why = format!("Invalid Request: the batch is not an array ({e})");
            return refusal(StatusCode::BAD_REQUEST, INVALID_REQUEST, why, Value::Null);
        }
    };
    if elements.is_empty() {
        let why = "Invalid Request: an empty batch (send at least one message)";
        return refusal(StatusCode::BAD_REQUEST, INVALID_REQUEST, why, Value::Null);
    }
    let answers = elements
        .into_iter()
        .map(|element| one(inner, &parts, element));
    let answers: Vec<Value> = futures_util::future::join_all(answers)
        .await
        .into_iter()
        .flatten()
        .collect();
    if answers.is_empty() {
        return StatusCode::ACCEPTED.into_response();
    }
    axum::Json(Value::Array(answers)).into_response()
}

/// Why a batch is refused here, if it is.
fn allowed(parts: &Parts) -> Result<(), String> {
    let version = parts
        .headers
        .get("mcp-protocol-version")
        .map(|v| v.to_str().unwrap_or("?"));
    if let Some(version) = version.filter(|v| *v != BATCH_REVISION) {
        return Err(format!(
            "Invalid Request: JSON-RPC batches were removed in MCP 2025-06-18 and this request \
             speaks {version}: send one message per POST"
        ));
    }
    if !parts.headers.contains_key("mcp-session-id") {
        return Err(
            "Invalid Request: a batch needs a session (Mcp-Session-Id): send \
                    `initialize` alone first, it cannot be batched"
                .into(),
        );
    }
    Ok(())
}

/// One element's answer (`None` for a notification or a response).
async fn one(inner: &Router, parts: &Parts, element: Value) -> Option<Value> {
    // An id we cannot answer with (an object, an array) is answered with null, as JSON-RPC 2.0
    // answers a request it cannot read.
    let id = element
        .get("id")
        .filter(|id| id.is_string() || id.is_number())
        .cloned()
        .unwrap_or(Value::Null);
    let is_request = element.get("method").is_some() && element.get("id").is_some();
    let is_notification = element.get("method").is_some() && element.get("id").is_none();
    if !element.is_object() {
        return Some(error(
            Value::Null,
            "Invalid Request: a batch element is not an object",
        ));
    }
    if element.get("method").and_then(Value::as_str) == Some("initialize") {
        return Some(error(id, "Invalid Request: `initialize` cannot be batched"));
    }
    let response = forward(inner, post(parts, &element)).await;
    let status = response.status();
    if status == StatusCode::ACCEPTED {
        return None;
    }
    if !status.is_success() {
        let text = plain_text(response).await;
        if is_notification {
            // JSON-RPC never answers a notification, not even its failure.
            tracing::debug!(%status, text, "a batched notification was refused");
            return None;
        }
        let answer = serde_json::from_str::<Value>(&text)
            .ok()
            .filter(|v| v.get("error").is_some());
        return Some(answer.unwrap_or_else(|| error(id, &text)));
    }
    let answer = match content_type(&response).as_str() {
        "text/event-stream" => from_events(inner, parts, response, &id).await,
        _ => serde_json::from_str(&plain_text(response).await).ok(),
    };
    match (answer, is_request) {
        (Some(answer), _) => Some(answer),
        (None, true) => Some(error(id, "the request ended without an answer")),
        (None, false) => None,
    }
}

/// `element` as its own POST, with the batch's headers.
fn post(parts: &Parts, element: &Value) -> Request<Body> {
    let mut request = Request::new(Body::from(element.to_string()));
    *request.method_mut() = parts.method.clone();
    *request.uri_mut() = parts.uri.clone();
    *request.headers_mut() = parts.headers.clone();
    request.headers_mut().remove(CONTENT_LENGTH);
    request
}

fn content_type(response: &Response) -> String {
    let value = response.headers().get(CONTENT_TYPE);
    let value = value.and_then(|v| v.to_str().ok()).unwrap_or_default();
    value
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// The answer with `id` in an SSE stream; the server's own requests on it refused.
async fn from_events(
    inner: &Router,
    parts: &Parts,
    response: Response,
    id: &Value,
) -> Option<Value> {
    let mut events = response.into_body().into_data_stream().eventsource();
    while let Some(Ok(event)) = events.next().await {
        let Ok(message) = serde_json::from_str::<Value>(&event.data) else {
            continue;
        };
        match (message.get("method"), message.get("id")) {
            (Some(_), Some(asked)) => refuse_server_request(inner, parts, asked.clone()).await,
            (None, Some(answered)) if answered == id => return Some(message),
            _ => {}
        }
    }
    None
}

/// Answers a server's request made during a batched call with an error.
async fn refuse_server_request(inner: &Router, parts: &Parts, asked: Value) {
    let message = "the client sent this call in a JSON-RPC batch: it cannot answer requests";
    let answer = json!({"jsonrpc": "2.0", "id": asked,
        "error": {"code": INVALID_REQUEST, "message": message}});
    let response = forward(inner, post(parts, &answer)).await;
    if response.status() != StatusCode::ACCEPTED {
        tracing::debug!(status = %response.status(), "refusing a server request in a batch");
    }
}

/// A JSON-RPC error answer.
fn error(id: Value, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": INVALID_REQUEST, "message": message}})
}
