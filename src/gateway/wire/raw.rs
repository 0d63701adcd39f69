//! Raw tool lists and results over HTTP. rmcp's HTTP service takes a `ServerHandler`, whose
//! typed `Tool` and `CallToolResult` drop what they do not know (`execution`, new content
//! kinds). So over HTTP the handler answers with a typed placeholder that carries the raw
//! answer under a private `_meta` key ([`carry_tools`], [`carry_result`]), and a layer on the
//! response ([`restore`]) puts the raw answer back — in JSON bodies and in each SSE event —
//! before the bytes leave. The private key never reaches a client.

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::header::CONTENT_TYPE;
use axum::middleware::Next;
use axum::response::Response;
use futures_util::StreamExt;
use serde_json::{json, Map, Value};

/// The private `_meta` key the raw answer travels under.
const MARK: &str = "io.github.mcp-launch/raw";

/// The largest JSON body rewritten (larger ones cannot carry a mark: tool results are capped
/// below this by the message limit).
const MAX_JSON_BODY: usize = 256 * 1024 * 1024;

/// `{"tools": [...]}` of placeholders, each carrying its raw tool.
pub fn carry_tools(tools: Vec<Value>) -> Value {
    let placeholders: Vec<Value> = tools
        .into_iter()
        .map(|tool| {
            let name = tool.get("name").cloned().unwrap_or(Value::Null);
            json!({"name": name, "inputSchema": {"type": "object"}, "_meta": {MARK: tool}})
        })
        .collect();
    json!({ "tools": placeholders })
}

/// A call result's placeholder, carrying the raw result.
pub fn carry_result(result: Value) -> Value {
    json!({"content": [], "_meta": {MARK: result}})
}

/// The layer: the response with every carried answer restored.
pub async fn restore(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let kind = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let (parts, body) = response.into_parts();
    let body = if kind.starts_with("application/json") {
        match axum::body::to_bytes(body, MAX_JSON_BODY).await {
            Ok(bytes) => Body::from(restore_json(bytes)),
            Err(e) => {
                tracing::warn!(error = %e, "cannot read a response body");
                Body::empty()
            }
        }
    } else if kind.starts_with("text/event-stream") {
        restore_events(body)
    } else {
        body
    };
    let mut response = Response::from_parts(parts, body);
    response
        .headers_mut()
        .remove(axum::http::header::CONTENT_LENGTH);
    response
}

fn restore_json(bytes: Bytes) -> Bytes {
    if !contains_mark(&bytes) {
        return bytes;
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(mut message) => {
            restore_message(&mut message);
            Bytes::from(message.to_string())
        }
        Err(_) => bytes,
    }
}

/// An SSE body with each `data:` line's message restored, line by line as it streams.
fn restore_events(body: Body) -> Body {
    let mut pending: Vec<u8> = Vec::new();
    let lines = body.into_data_stream().map(move |chunk| {
        let chunk = chunk?;
        pending.extend_from_slice(&chunk);
        let Some(end) = pending.iter().rposition(|b| *b == b'\n') else {
            return Ok::<_, axum::Error>(Bytes::new());
        };
        let complete: Vec<u8> = pending.drain(..=end).collect();
        Ok(Bytes::from(restore_lines(&complete)))
    });
    Body::from_stream(lines)
}

/// Complete lines (ending in `\n`), each `data:` line with a mark restored.
fn restore_lines(text: &[u8]) -> Vec<u8> {
    if !contains_mark(text) {
        return text.to_vec();
    }
    let mut out = Vec::with_capacity(text.len());
    for line in text.split_inclusive(|b| *b == b'\n') {
        let restored = line
            .strip_prefix(b"data:")
            .filter(|data| contains_mark(data))
            .and_then(|data| serde_json::from_slice::<Value>(data.trim_ascii()).ok())
            .map(|mut message| {
                restore_message(&mut message);
                format!("data: {message}\n").into_bytes()
            });
        out.extend_from_slice(restored.as_deref().unwrap_or(line));
    }
    out
}

fn contains_mark(bytes: &[u8]) -> bool {
    bytes.windows(MARK.len()).any(|w| w == MARK.as_bytes())
}

/// A JSON-RPC message with its result's carried answers put back.
fn restore_message(message: &mut Value) {
    let Some(result) = message.get_mut("result") else {
        return;
    };
    if let Some(tools) = result.get_mut("tools").and_then(Value::as_array_mut) {
        tools.iter_mut().for_each(restore_one);
    }
    restore_one(result);
}

/// The placeholder's fields (what rmcp added: `resultType` for clients of the 2026 era) with
/// the raw answer's put over them.
fn restore_one(value: &mut Value) {
    let Some(fields) = value.as_object_mut() else {
        return;
    };
    let raw = fields
        .get_mut("_meta")
        .and_then(Value::as_object_mut)
        .and_then(|meta| meta.remove(MARK));
    if fields
        .get("_meta")
        .and_then(Value::as_object)
        .is_some_and(Map::is_empty)
    {
        fields.remove("_meta");
    }
    if let Some(Value::Object(raw)) = raw {
        for (key, field) in raw {
            fields.insert(key, field);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_carried_tool_comes_back_whole_and_the_mark_never_leaves() {
        let tool = json!({"name": "t", "inputSchema": {"type": "object"},
            "execution": {"taskSupport": "optional"}, "x-new": 1, "_meta": {"k": "v"}});
        let mut message =
            json!({"jsonrpc": "2.0", "id": 1, "result": carry_tools(vec![tool.clone()])});
        message["result"]["resultType"] = json!("complete");
        let text = restore_json(Bytes::from(message.to_string()));
        let back: Value = serde_json::from_slice(&text).unwrap();
        assert_eq!(back["result"]["tools"][0], tool);
        assert_eq!(back["result"]["resultType"], "complete");
        assert!(!String::from_utf8_lossy(&text).contains(MARK));
    }

    #[test]
    fn sse_events_are_restored_line_by_line() {
        let result = json!({"content": [{"type": "new-kind", "x": 1}], "isError": false});
        let message = json!({"jsonrpc": "2.0", "id": 2, "result": carry_result(result.clone())});
        let stream = format!("id: 0\nevent: message\ndata: {message}\n\n");
        let out = String::from_utf8(restore_lines(stream.as_bytes())).unwrap();
        let data = out.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
        let back: Value = serde_json::from_str(data).unwrap();
        assert_eq!(back["result"], result);
        assert!(out.starts_with("id: 0\nevent: message\n") && out.ends_with("\n\n"));
    }
}
