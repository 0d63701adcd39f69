//! Tool lists and results as the upstreams sent them, without copying large lists per
//! request. rmcp serialises typed results, whose `Tool` and `CallToolResult` drop what they do
//! not know (`execution`, new content kinds), and a `Value` answer would be a deep copy of the
//! whole catalog per `tools/list`. So the handler answers with small placeholders, and the
//! bytes on their way out are spliced ([`splice`]):
//! - a `tools/list` answer is marked ([`list_placeholder`]) and gets the catalog's serialised
//!   tools put in (the catalog keeps one serialised copy);
//! - a call result over HTTP carries the raw result, as its JSON text, under a private `_meta`
//!   key ([`carry_result`]) and gets it back whole; so does an `InputRequiredResult` on either
//!   transport ([`carry_input_required`]: rmcp's type would re-serialise its input requests).
//!   As text, the result is serialised once: rmcp and the splice copy a string through, where a
//!   carried value was rebuilt by rmcp's types, serialised, parsed and serialised again.
//!
//! - an `initialize` answer is marked by a private experimental capability ([`TASKS`]) and
//!   gets the 2025-11-25 `tasks` capability when that is the revision agreed (rmcp's
//!   capabilities have no `tasks` member; other revisions just lose the mark).
//!
//! The splice runs per message: on stdio in [`SplicingWriter`] (each message is one line), on
//! HTTP in the [`restore`] layer (a JSON body, or each SSE `data:` line). The private keys never
//! reach a client.

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::LazyLock;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::middleware::Next;
use axum::response::Response;
use futures_util::StreamExt;
use memchr::memmem;
use serde::de::IgnoredAny;
use serde_json::{json, Map, Value};
use tokio::io::AsyncWrite;

use crate::gateway::Gateway;

/// What every private key starts with: an outgoing message is looked through once, for it.
const PRIVATE: &str = "io.github.mcp-launch/";
/// The private `_meta` key a carried raw answer travels under.
pub(crate) const CARRIED: &str = "io.github.mcp-launch/raw";
/// The private `_meta` key that marks a `tools/list` answer to splice the tools into.
pub(crate) const LIST: &str = "io.github.mcp-launch/tools";
/// The private experimental capability that marks an `initialize` answer.
pub(crate) const TASKS: &str = "io.github.mcp-launch/tasks";
/// The revision whose session clients get the tasks utility.
const TASKS_REVISION: &str = "2025-11-25";
/// Stands for the tools array while the answer is serialised (JSON escapes the NULs).
const SLOT: &str = "\u{0}tools\u{0}";

/// The largest JSON body rewritten.
const MAX_JSON_BODY: usize = 256 * 1024 * 1024;
/// Output held back while the reader is slow, before writes wait.
const MAX_BUFFERED: usize = 1024 * 1024;

/// A `tools/list` placeholder: no tools, the mark.
pub fn list_placeholder() -> Value {
    json!({"tools": [], "_meta": {LIST: true}})
}

/// A call result's placeholder, carrying the raw result's JSON text (a result that is not an
/// object has no fields to put back: the placeholder alone is sent).
pub fn carry_result(result: Value) -> Value {
    if !result.is_object() {
        return json!({"content": []});
    }
    json!({"content": [], "_meta": {CARRIED: result.to_string()}})
}

/// An `InputRequiredResult`'s placeholder (SEP-2322), carrying the server's whole.
/// rmcp's type wants `inputRequests` or `requestState`: the placeholder has what the result
/// has (an empty map, the same state), all put back from the carried result.
pub fn carry_input_required(result: Value) -> Value {
    let mut placeholder = json!({"resultType": "input_required"});
    if result.get("inputRequests").is_some() {
        placeholder["inputRequests"] = json!({});
    }
    if let Some(state) = result.get("requestState") {
        placeholder["requestState"] = state.clone();
    }
    placeholder["_meta"] = json!({CARRIED: result.to_string()});
    placeholder
}

/// The serialised tools a list answer gets.
pub(crate) type Tools<'a> = &'a dyn Fn() -> std::sync::Arc<str>;

/// One outgoing message, spliced: `None` when there is nothing to do.
pub(crate) fn splice(message: &[u8], tools: Tools<'_>) -> Option<Vec<u8>> {
    let found = marks(message);
    if !found.any() {
        return None;
    }
    if found.carried && !found.listed && !found.tasked {
        // A call result (every HTTP call's answer): put back in place, no tree built.
        if let Some(spliced) = in_place::splice_carried(message) {
            return Some(spliced);
        }
    }
    splice_tree(message, tools, found)
}

/// [`splice`] through a tree of the message: every case.
fn splice_tree(message: &[u8], tools: Tools<'_>, found: Marks) -> Option<Vec<u8>> {
    let Marks {
        listed,
        carried,
        tasked,
    } = found;
    let mut value: Value = serde_json::from_slice(message).ok()?;
    let result = value.get_mut("result")?;
    let carried = carried.then(|| take_carried(result)).flatten();
    if tasked {
        declare_tasks(result);
    }
    if let Some(whole) = carried {
        return Some(place(value, &["result"], &whole));
    }
    if !listed || take_mark(result, LIST).is_none() {
        return Some(value.to_string().into_bytes());
    }
    Some(place(value, &["result", "tools"], &tools()))
}

/// `value` serialised with `text` (JSON already) at `path`.
fn place(mut value: Value, path: &[&str], text: &str) -> Vec<u8> {
    // The slot must be found only where we put it: a client's id or an upstream's text may
    // hold the same characters, so a slot seen twice is made longer until it is unique.
    let mut slot = String::from(SLOT);
    loop {
        let target = path.iter().fold(&mut value, |at, key| &mut at[*key]);
        *target = Value::String(slot.clone());
        let serialised = value.to_string();
        let placed = Value::String(slot.clone()).to_string();
        if memmem::find_iter(serialised.as_bytes(), placed.as_bytes()).count() == 1 {
            return serialised.replacen(&placed, text, 1).into_bytes();
        }
        slot.push('\0');
    }
}

/// Which private keys a message holds.
#[derive(Default)]
struct Marks {
    listed: bool,
    carried: bool,
    tasked: bool,
}

impl Marks {
    /// Whether there is any.
    fn any(&self) -> bool {
        self.listed || self.carried || self.tasked
    }
}

/// The private keys in `message`, in one pass (every message on its way out goes through
/// here: the searcher is built once, and most messages hold none).
fn marks(message: &[u8]) -> Marks {
    static FINDER: LazyLock<memmem::Finder<'static>> =
        LazyLock::new(|| memmem::Finder::new(PRIVATE));
    let mut marks = Marks::default();
    for at in FINDER.find_iter(message) {
        let key = &message[at..];
        marks.listed |= key.starts_with(LIST.as_bytes());
        marks.carried |= key.starts_with(CARRIED.as_bytes());
        marks.tasked |= key.starts_with(TASKS.as_bytes());
    }
    marks
}

/// Removes `key` from `value._meta` (and `_meta` when left empty).
fn take_mark(value: &mut Value, key: &str) -> Option<Value> {
    let fields = value.as_object_mut()?;
    let taken = fields
        .get_mut("_meta")
        .and_then(Value::as_object_mut)
        .and_then(|meta| meta.remove(key));
    if fields
        .get("_meta")
        .and_then(Value::as_object)
        .is_some_and(Map::is_empty)
    {
        fields.remove("_meta");
    }
    taken
}

/// The carried answer's JSON text with the placeholder's fields it lacks (what rmcp added:
/// `resultType` for clients of the 2026 era) after its own; the mark taken either way. `None`
/// when nothing is carried, or the carried text is not a JSON object (only ours is).
fn take_carried(result: &mut Value) -> Option<String> {
    let Value::String(text) = take_mark(result, CARRIED)? else {
        return None;
    };
    // Its keys only: the values are skipped, not built.
    let own: HashMap<String, IgnoredAny> = serde_json::from_str(&text).ok()?;
    let text = text.trim_ascii();
    let mut whole = String::with_capacity(text.len() + 32);
    whole.push_str(text.strip_suffix('}')?);
    let mut first = own.is_empty();
    for (key, field) in result.as_object()?.iter() {
        if own.contains_key(key) {
            continue;
        }
        if !first {
            whole.push(',');
        }
        first = false;
        whole.push_str(&Value::String(key.clone()).to_string());
        whole.push(':');
        whole.push_str(&field.to_string());
    }
    whole.push('}');
    Some(whole)
}

/// An `initialize` answer without the mark, with the `tasks` capability (`tasks/list`,
/// `tasks/cancel`, task-augmented `tools/call`) when the revision agreed is 2025-11-25.
fn declare_tasks(result: &mut Value) {
    let era = result.get("protocolVersion").and_then(Value::as_str) == Some(TASKS_REVISION);
    let Some(capabilities) = result.get_mut("capabilities") else {
        return;
    };
    if take_experimental(capabilities, TASKS).is_none() {
        return;
    }
    if era {
        capabilities["tasks"] =
            json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}});
    }
}

/// Removes `key` from `capabilities.experimental` (and `experimental` when left empty).
fn take_experimental(capabilities: &mut Value, key: &str) -> Option<Value> {
    let fields = capabilities.as_object_mut()?;
    let experimental = fields.get_mut("experimental")?.as_object_mut()?;
    let taken = experimental.remove(key);
    if experimental.is_empty() {
        fields.remove("experimental");
    }
    taken
}

/// The HTTP layer: the response with every placeholder spliced.
pub async fn restore(State(gateway): State<Gateway>, request: Request, next: Next) -> Response {
    let reach = crate::gateway::Reach::of(request.extensions());
    let response = next.run(request).await;
    let kind = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let (mut parts, body) = response.into_parts();
    let body = if kind.starts_with("application/json") {
        match axum::body::to_bytes(body, MAX_JSON_BODY).await {
            Ok(bytes) => {
                let tools = || gateway.tools_json_for(&reach);
                Body::from(splice(&bytes, &tools).map_or(bytes, Bytes::from))
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot read a response body");
                Body::empty()
            }
        }
    } else if kind.starts_with("text/event-stream") {
        splice_events(body, gateway, reach)
    } else {
        return Response::from_parts(parts, body);
    };
    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
    Response::from_parts(parts, body)
}

/// An SSE body with each `data:` line spliced, line by line as it streams.
fn splice_events(body: Body, gateway: Gateway, reach: crate::gateway::Reach) -> Body {
    let mut lines = Lines::default();
    let stream = body.into_data_stream().map(move |chunk| {
        let chunk = chunk?;
        if lines.partial.is_empty() && chunk.ends_with(b"\n") && !marks(&chunk).any() {
            // Whole lines and nothing to splice (keep-alives, notices): passed on as they are.
            return Ok(chunk);
        }
        let mut out = Vec::with_capacity(chunk.len());
        let tools = || gateway.tools_json_for(&reach);
        lines.push(&chunk, &mut out, |line| {
            let data = line.strip_prefix(b"data:")?;
            let mut spliced = b"data: ".to_vec();
            spliced.extend(splice(data.trim_ascii(), &tools)?);
            spliced.push(b'\n');
            Some(spliced)
        });
        Ok::<_, axum::Error>(Bytes::from(out))
    });
    Body::from_stream(stream)
}

/// Bytes cut into complete lines, each passed to a splice.
#[derive(Default)]
struct Lines {
    partial: Vec<u8>,
}

impl Lines {
    /// Appends `bytes`; each complete line (with its `\n`) goes to `out`, spliced when `edit`
    /// returns a replacement.
    fn push(
        &mut self,
        bytes: &[u8],
        out: &mut Vec<u8>,
        mut edit: impl FnMut(&[u8]) -> Option<Vec<u8>>,
    ) {
        if self.partial.is_empty() {
            // The usual case, whole lines and nothing held back: read in place, not copied.
            let whole = memchr::memrchr(b'\n', bytes).map_or(0, |end| end + 1);
            each_line(&bytes[..whole], out, &mut edit);
            self.partial.extend_from_slice(&bytes[whole..]);
            return;
        }
        self.partial.extend_from_slice(bytes);
        let Some(end) = memchr::memrchr(b'\n', &self.partial) else {
            return;
        };
        let complete: Vec<u8> = self.partial.drain(..=end).collect();
        each_line(&complete, out, &mut edit);
    }

    /// What is left (a line without its `\n`), taken.
    fn rest(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.partial)
    }
}

/// Each line of `complete` (whole lines) to `out`, spliced when `edit` returns a replacement.
fn each_line(complete: &[u8], out: &mut Vec<u8>, edit: &mut impl FnMut(&[u8]) -> Option<Vec<u8>>) {
    for line in complete.split_inclusive(|b| *b == b'\n') {
        match edit(line) {
            Some(spliced) => out.extend_from_slice(&spliced),
            None => out.extend_from_slice(line),
        }
    }
}

/// stdout for stdio: each message (one line) spliced before it is written.
pub struct SplicingWriter<W> {
    inner: W,
    tools: Box<dyn Fn() -> std::sync::Arc<str> + Send + Sync>,
    lines: Lines,
    out: Vec<u8>,
    sent: usize,
}

impl<W> SplicingWriter<W> {
    /// Wraps `inner`.
    pub fn new(inner: W, gateway: Gateway) -> Self {
        Self::with_tools(inner, move || gateway.tools_json_now())
    }

    /// Wraps `inner`, splicing the serialised tools `tools` gives (the fuzz target's own).
    pub(crate) fn with_tools(
        inner: W,
        tools: impl Fn() -> std::sync::Arc<str> + Send + Sync + 'static,
    ) -> Self {
        SplicingWriter {
            inner,
            tools: Box::new(tools),
            lines: Lines::default(),
            out: Vec::new(),
            sent: 0,
        }
    }
}

impl<W: AsyncWrite + Unpin> SplicingWriter<W> {
    /// Writes what is buffered; `Pending` when the reader is slow.
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.sent < self.out.len() {
            match Pin::new(&mut self.inner).poll_write(cx, &self.out[self.sent..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => self.sent += n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        self.out.clear();
        self.sent = 0;
        Poll::Ready(Ok(()))
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for SplicingWriter<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if let Poll::Ready(Err(e)) = this.drain(cx) {
            return Poll::Ready(Err(e));
        }
        if this.out.len() - this.sent > MAX_BUFFERED {
            // `drain` was Pending: the waker is registered.
            return Poll::Pending;
        }
        let tools = &this.tools;
        this.lines
            .push(buf, &mut this.out, |line| splice_line(line, tools));
        if let Poll::Ready(Err(e)) = this.drain(cx) {
            return Poll::Ready(Err(e));
        }
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let rest = this.lines.rest();
        this.out.extend_from_slice(&rest);
        match this.drain(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut this.inner).poll_flush(cx),
            other => other,
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut *this).poll_flush(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut this.inner).poll_shutdown(cx),
            other => other,
        }
    }
}

/// A stdio line (a message and its `\n`), spliced.
fn splice_line(line: &[u8], tools: Tools<'_>) -> Option<Vec<u8>> {
    let message = line.strip_suffix(b"\n").unwrap_or(line);
    let mut spliced = splice(message, tools)?;
    spliced.push(b'\n');
    Some(spliced)
}

mod in_place;
#[cfg(test)]
mod tests;
