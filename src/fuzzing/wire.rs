//! Bytes off the wire: a server's stdout, its SSE streams, a client's lines and bodies.

use bytes::Bytes;
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde_json::Value;
use tokio::io::BufReader;
use tokio::sync::mpsc;

use super::{ready, split_first};
use crate::gateway::wire::guard::{check_json, MAX_DEPTH};
use crate::gateway::wire::raw::{splice, CARRIED, LIST};
use crate::mcp::framing::{Frame, LineReader};
use crate::mcp::limits::cap_events;
use crate::mcp::peer::Peer;
use crate::mcp::sse::{endpoint_event, post_url};

/// The URL an SSE stream is read from.
const STREAM_URL: &str = "http://127.0.0.1:9/mcp/sse";

/// A server's stdout: the line reader (a line cap and read sizes from the first byte) and each
/// JSON value it yields handled by a session's peer (responses, server requests, notices).
pub fn stdio(data: &[u8]) {
    let (knobs, rest) = split_first(data);
    let limit = 8 + usize::from(knobs) * 4;
    let capacity = 1 + usize::from(knobs % 13);
    let (outbox, mut sent) = mpsc::channel(8);
    let peer = Peer::new(outbox);
    let mut lines = LineReader::new(BufReader::with_capacity(capacity, rest)).with_limit(limit);
    while let Some(frame) = ready(lines.next_frame()).expect("reading memory cannot fail") {
        if let Frame::Value(value) = frame {
            peer.handle(value);
            while let Ok(answer) = sent.try_recv() {
                answer_is_json_rpc(&answer);
            }
        }
    }
}

/// An SSE stream (legacy transport and Streamable HTTP responses), cut into chunks of a size
/// taken from the first byte: events capped, the endpoint event resolved against the stream's
/// URL, every message handled by a peer.
pub fn sse(data: &[u8]) {
    let (knobs, rest) = split_first(data);
    let chunk = 1 + usize::from(knobs % 31);
    let cap = 64 + usize::from(knobs) * 8;
    let chunks: Vec<Result<Bytes, std::io::Error>> = rest
        .chunks(chunk)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    let mut events = cap_events(futures_util::stream::iter(chunks), STREAM_URL, cap).eventsource();
    if let Ok(endpoint) = ready(endpoint_event(&mut events, STREAM_URL)) {
        if let Ok(url) = post_url(STREAM_URL, &endpoint) {
            let stream = reqwest::Url::parse(STREAM_URL).expect("the stream's URL");
            assert_eq!(url.origin(), stream.origin(), "{url}");
        }
    }
    let (outbox, _sent) = mpsc::channel(64);
    let peer = Peer::new(outbox);
    while let Some(Ok(event)) = ready(events.next()) {
        if let Ok(value) = serde_json::from_str::<Value>(&event.data) {
            peer.handle(value);
        }
    }
}

/// A client's message to the gateway: the HTTP guard's check, the stdio transport's answer to
/// a line it cannot pass on, and the splice of raw answers on their way out.
pub fn gateway_wire(data: &[u8]) {
    if check_json(data).is_ok() {
        let value: Value = serde_json::from_slice(data).expect("the guard passed unreadable JSON");
        assert!(depth(&value) <= MAX_DEPTH + 1, "the guard passed deep JSON");
    }
    if let Err(answer) = crate::serving::stdio::parse(data) {
        answer_is_json_rpc(&answer);
    }
    let tools = || std::sync::Arc::<str>::from(r#"[{"name":"t","inputSchema":{}}]"#);
    if let Some(spliced) = splice(data, &tools) {
        let value: Value = serde_json::from_slice(&spliced).expect("a splice broke the JSON");
        if is_list_answer(data) {
            let listed = value.pointer("/result/tools");
            assert_eq!(
                listed,
                Some(&serde_json::json!([{"name":"t","inputSchema":{}}]))
            );
        }
    }
}

/// A `tools/list` answer marked for the splice, carrying nothing.
fn is_list_answer(data: &[u8]) -> bool {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return false;
    };
    let meta = value.pointer("/result/_meta").and_then(Value::as_object);
    meta.is_some_and(|meta| meta.contains_key(LIST) && !meta.contains_key(CARRIED))
}

/// What we send back is a JSON-RPC response whose id is a string, a number or null.
pub(super) fn answer_is_json_rpc(answer: &Value) {
    assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
    let id = &answer["id"];
    assert!(
        id.is_string() || id.is_number() || id.is_null(),
        "an answer's id must be a string, a number or null: {answer}"
    );
}

/// Nesting of arrays and objects (a scalar is 0).
fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(fields) => 1 + fields.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}
