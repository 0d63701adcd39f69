//! The gateway's framing: JSON-RPC batches on its HTTP face, and the writers that frame our
//! messages on stdio (the splicing writer of `serve`'s stdout, a child's stdin lines).

use std::cell::RefCell;
use std::io;
use std::pin::{pin, Pin};
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use axum::body::Bytes;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderValue, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};
use tokio::io::{AsyncWrite, AsyncWriteExt, BufReader};

use super::wire::answer_is_json_rpc;
use super::{ready, split_first};
use crate::gateway::wire::batch;
use crate::gateway::wire::guard::check_json;
use crate::gateway::wire::raw::{splice, SplicingWriter};
use crate::mcp::framing::{encode, Frame, LineReader};

/// The tools a list answer gets.
const TOOLS: &str = r#"[{"name":"t","inputSchema":{"type":"object"}}]"#;

/// A JSON-RPC batch POSTed to `/mcp`, as the guard hands it on (JSON, an array), with the
/// first byte choosing the `MCP-Protocol-Version` and `Mcp-Session-Id` headers. Behind it, a
/// stand-in for rmcp's service that answers as rmcp does (JSON, SSE with a request of its own,
/// 202, plain-text refusals). The answer is a JSON-RPC error (400), nothing (202) or an array
/// with one answer per request and per invalid element, each with a string, number or null id:
/// the request's own when it has one.
pub fn http_batch(data: &[u8]) {
    let (knobs, body) = split_first(data);
    if check_json(body).is_err() || !body.trim_ascii_start().starts_with(b"[") {
        return;
    }
    let mut request = Request::post("/mcp").body(()).expect("a request");
    let headers = request.headers_mut();
    // None, the batches' revision, a later one, one that is not text.
    let versions: [&[u8]; 4] = [b"", b"2025-03-26", b"2025-06-18", b"\xff"];
    let version = versions[usize::from(knobs % 4)];
    if let (false, Ok(value)) = (version.is_empty(), HeaderValue::from_bytes(version)) {
        headers.insert("mcp-protocol-version", value);
    }
    let has_session = knobs & 4 != 0;
    if has_session {
        headers.insert("mcp-session-id", HeaderValue::from_static("s-1"));
    }
    let (parts, ()) = request.into_parts();
    let upstream = Router::new().fallback(upstream);
    let response = ready(batch::answer(&upstream, parts, body));
    let status = response.status();
    let text = ready(axum::body::to_bytes(response.into_body(), usize::MAX)).expect("a body");
    let allowed = has_session && matches!(knobs % 4, 0 | 1);
    let elements: Vec<Value> = serde_json::from_slice(body).unwrap_or_default();
    if !allowed || elements.is_empty() {
        assert_eq!(status, StatusCode::BAD_REQUEST);
        let refusal: Value = serde_json::from_slice(&text).expect("a refusal is JSON");
        return answer_is_json_rpc(&refusal);
    }
    let mut expected: Vec<String> = elements.iter().filter_map(expected_answer).collect();
    if expected.is_empty() {
        assert_eq!(status, StatusCode::ACCEPTED);
        return assert!(text.is_empty());
    }
    assert_eq!(status, StatusCode::OK);
    let answers: Vec<Value> = serde_json::from_slice(&text).expect("the answers are an array");
    answers.iter().for_each(answer_is_json_rpc);
    let mut ids: Vec<String> = answers.iter().map(|a| a["id"].to_string()).collect();
    ids.sort();
    expected.sort();
    assert_eq!(
        ids,
        expected,
        "answers to {}",
        String::from_utf8_lossy(body)
    );
}

/// The id (as JSON) of the answer an element gets, `None` when it gets none.
fn expected_answer(element: &Value) -> Option<String> {
    let Some(fields) = element.as_object() else {
        return Some("null".into());
    };
    let id = match fields.get("id") {
        Some(id) if id.is_string() || id.is_number() => id.to_string(),
        _ => "null".into(),
    };
    let method = fields.get("method");
    if method.and_then(Value::as_str) == Some("initialize") {
        return Some(id);
    }
    let (asks, notifies) = (fields.contains_key("id"), method.is_some());
    match (is_message(element), asks, notifies) {
        (true, true, true) => Some(id),
        (true, _, _) => None,
        (false, false, true) => None, // a notification is never answered
        (false, _, _) => Some(id),
    }
}

/// What the stand-in takes as a JSON-RPC message.
fn is_message(element: &Value) -> bool {
    let id_ok = element
        .get("id")
        .is_none_or(|id| id.is_string() || id.is_number());
    let method = element.get("method");
    element["jsonrpc"] == "2.0"
        && id_ok
        && method.is_none_or(Value::is_string)
        && (method.is_some() || element.get("id").is_some())
}

/// rmcp's service as a batch sees it: a request answered in JSON, or (`stream…`) as SSE after
/// a request of the server's own; `fail…` a 500 in plain text; a notification or a response
/// 202; what is not a message refused in plain text, as rmcp does.
async fn upstream(body: Bytes) -> Response {
    let Ok(message) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "Bad Request: not JSON").into_response();
    };
    if !is_message(&message) {
        let refusal = "Unsupported Media Type: not a JSON-RPC message";
        return (StatusCode::UNSUPPORTED_MEDIA_TYPE, refusal).into_response();
    }
    let (Some(method), Some(id)) = (message["method"].as_str(), message.get("id")) else {
        return StatusCode::ACCEPTED.into_response();
    };
    let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"method": method}});
    if method.starts_with("fail") {
        return (StatusCode::INTERNAL_SERVER_ERROR, "upstream failed").into_response();
    }
    if !method.starts_with("stream") {
        return axum::Json(answer).into_response();
    }
    let ask = json!({"jsonrpc": "2.0", "id": "srv-1", "method": "roots/list"});
    let events = format!(
        "data: {ask}\n\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"n\"}}\n\ndata: {answer}\n\n"
    );
    ([(CONTENT_TYPE, "text/event-stream")], events).into_response()
}

/// `serve`'s stdout on stdio: the messages our side writes (the rest of the input, lines), in
/// pieces of a size from the first byte, through the splicing writer to a reader that takes a
/// few bytes per write and is slow every other time. Every line comes out as one line, in
/// order: untouched, or spliced as alone. And a child's stdin: each message that parses is
/// framed as one line that reads back the same.
pub fn stdio_splice(data: &[u8]) {
    let (knobs, rest) = split_first(data);
    let piece = 1 + usize::from(knobs % 17);
    let taken = Rc::new(RefCell::new(Vec::new()));
    let reader = Slow {
        out: taken.clone(),
        accepts: 1 + usize::from(knobs / 17),
        stalled: false,
    };
    let mut writer = SplicingWriter::with_tools(reader, || TOOLS.into());
    for chunk in rest.chunks(piece) {
        let written = patiently(writer.write(chunk)).expect("writing memory cannot fail");
        assert_eq!(written, chunk.len());
    }
    patiently(writer.flush()).expect("flushing memory cannot fail");
    let tools = || std::sync::Arc::<str>::from(TOOLS);
    let expected: Vec<u8> = rest
        .split_inclusive(|b| *b == b'\n')
        .flat_map(|line| match line.strip_suffix(b"\n") {
            Some(message) => splice(message, &tools)
                .map(|mut spliced| {
                    spliced.push(b'\n');
                    spliced
                })
                .unwrap_or_else(|| line.to_vec()),
            None => line.to_vec(),
        })
        .collect();
    let out = taken.borrow();
    assert_eq!(
        count_lines(&out),
        count_lines(rest),
        "lines merged or split"
    );
    assert!(*out == expected, "the pieces changed the output");
    for line in rest.split(|b| *b == b'\n') {
        if let Ok(message) = serde_json::from_slice::<Value>(line) {
            child_stdin_line(&message);
        }
    }
}

/// A message framed for a child's stdin is one line, read back by our reader as the same value.
fn child_stdin_line(message: &Value) {
    let line = encode(message);
    assert_eq!(count_lines(&line), 1, "{message}");
    let mut lines = LineReader::new(BufReader::new(line.as_slice()));
    let frame = ready(lines.next_frame()).expect("reading memory cannot fail");
    assert_eq!(frame, Some(Frame::Value(message.clone())));
}

fn count_lines(bytes: &[u8]) -> usize {
    memchr::memchr_iter(b'\n', bytes).count()
}

/// Polls `future` until it is ready (a slow reader wakes nobody: it is polled again).
fn patiently<F: std::future::Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
    }
}

/// A reader that takes at most `accepts` bytes per write and is not ready every other time.
struct Slow {
    out: Rc<RefCell<Vec<u8>>>,
    accepts: usize,
    stalled: bool,
}

impl AsyncWrite for Slow {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.stalled = !this.stalled;
        if this.stalled {
            return Poll::Pending;
        }
        let n = buf.len().min(this.accepts);
        this.out.borrow_mut().extend_from_slice(&buf[..n]);
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
