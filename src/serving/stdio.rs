//! The stdio transport of our MCP servers (the gateway, the lean tools server): newline-delimited
//! JSON, and every line a client sends answered. rmcp's own transport skips a line that is not
//! JSON and drops one over its cap with only a log line, so the client waits for its own
//! timeout. Here, as JSON-RPC 2.0 says:
//! - a line that is not JSON (bad syntax, invalid UTF-8, nesting past serde_json's limit):
//!   -32700 with `id: null`;
//! - JSON that is not a message: -32600, with its `id` when it has one; a notification (a
//!   `method` without an `id`) gets no answer, as rmcp ignores notifications it does not know;
//! - a line over the message cap ([`MESSAGE_BYTES`], `MCP_LAUNCH_MAX_MESSAGE_BYTES`): -32600
//!   naming the cap and its variable, with the request's id when the line's first or last bytes
//!   show a numeric one, so that request fails at once.
//!
//! Answers and these errors leave through one writer task, whole messages in the order they were
//! queued; the messages queued while it wrote leave together in its next write (one system
//! call), a lone one at once ([`write_queued`]). A server may take some lines itself before rmcp
//! reads them ([`Intercept`]: the gateway's 2025-11-25 tasks, whose `task` member and methods
//! rmcp drops); their answers leave through the same writer ([`Outlet`]). Sending returns once
//! the message is queued, so the server waits for the writer ([`Written`]) before it exits.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use futures_util::{future, Sink, SinkExt, Stream};
use memchr::memmem;
use rmcp::model::{
    CallToolRequest, ClientNotification, ClientRequest, ClientResult, JsonRpcMessage,
    JsonRpcRequest,
};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::PollSender;

use crate::mcp::cap::bytes_text;
use crate::mcp::framing::{append_line, write_queued, Line, LineReader};
use crate::mcp::limits::MESSAGE_BYTES;

/// JSON-RPC: the line is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: the JSON is not a valid request (or it is over the cap).
pub const INVALID_REQUEST: i64 = -32600;

/// A UTF-8 byte order mark some clients put before their first line.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// What rmcp sends through.
pub type Outgoing = Pin<Box<dyn Sink<TxJsonRpcMessage<RoleServer>, Error = io::Error> + Send>>;
/// What rmcp reads from.
pub type Incoming = Pin<Box<dyn Stream<Item = RxJsonRpcMessage<RoleServer>> + Send>>;
/// What rmcp serves through.
pub type Transport = (Outgoing, Incoming);

/// Lines queued for stdout at most: past them a sender waits for the client to read.
const QUEUED: usize = 64;

/// How long [`Written::wait`] waits for the last lines to be written (a client that stopped
/// reading would hold the exit forever).
const WRITTEN_WAIT: Duration = Duration::from_secs(2);

/// The transport's writer task, which ends once the transport is dropped and what was queued is
/// written (or stdout is gone).
pub struct Written(JoinHandle<()>);

impl Written {
    /// Waits until the lines queued before rmcp let go of the transport are written (at most
    /// [`WRITTEN_WAIT`]).
    pub async fn wait(self) {
        if tokio::time::timeout(WRITTEN_WAIT, self.0).await.is_err() {
            tracing::debug!("the client stopped reading stdout: the last answers are dropped");
        }
    }
}

/// Lines a server answers itself, before rmcp reads them.
pub trait Intercept: Send + Sync + 'static {
    /// Whether `line` (one message) is taken: then its answer, and any message about it later,
    /// go to `outlet`.
    fn take(&self, line: &[u8], outlet: &Outlet) -> bool;
}

type SendFn = dyn Fn(Value) -> futures_util::future::BoxFuture<'static, ()> + Send + Sync;

/// Where a taken line's answers go: the transport's one writer (while the transport lives).
#[derive(Clone)]
pub struct Outlet(Arc<SendFn>);

impl Outlet {
    /// Writes `message` as one line (nothing when stdout is gone).
    pub async fn send(&self, message: Value) {
        (self.0)(message).await;
    }
}

/// The transport over `input` and `output`, lines capped by [`MESSAGE_BYTES`] (its variable,
/// or its default), and its writer.
pub fn transport<R, W>(input: R, output: W) -> (Transport, Written)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    transport_capped(input, output, MESSAGE_BYTES.from_env_or_default(), None)
}

/// [`transport`] with the lines `intercept` takes answered by it.
pub fn transport_with<R, W>(
    input: R,
    output: W,
    intercept: Arc<dyn Intercept>,
) -> (Transport, Written)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let cap = MESSAGE_BYTES.from_env_or_default();
    transport_capped(input, output, cap, Some(intercept))
}

/// [`transport`] with lines of at most `cap` bytes.
pub fn transport_capped<R, W>(
    input: R,
    output: W,
    cap: usize,
    intercept: Option<Arc<dyn Intercept>>,
) -> (Transport, Written)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (queue, queued) = mpsc::channel(QUEUED);
    let written = Written(tokio::spawn(write_lines(output, queued)));
    let outgoing = PollSender::new(queue.clone())
        .sink_map_err(|_| stdout_gone())
        .with(|message: TxJsonRpcMessage<RoleServer>| future::ready(line_of(&message)));
    let lines = LineReader::new(BufReader::with_capacity(64 * 1024, input)).with_limit(cap);
    let taken = intercept.map(|intercept| (intercept, outlet(queue.downgrade())));
    let reader = Reader {
        lines,
        queue,
        taken,
    };
    let incoming = futures_util::stream::unfold(reader, |mut reader| async move {
        let message = reader.next().await?;
        Some((message, reader))
    });
    ((Box::pin(outgoing), Box::pin(incoming)), written)
}

fn stdout_gone() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "stdout is gone")
}

/// rmcp's message as one line.
fn line_of(message: &TxJsonRpcMessage<RoleServer>) -> io::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(message).map_err(io::Error::other)?;
    line.push(b'\n');
    Ok(line)
}

/// Writes the queued lines to `output`, those queued together in one write, until every sender
/// is gone (and all is written) or a write fails.
async fn write_lines<W: AsyncWrite + Unpin>(mut output: W, mut queued: mpsc::Receiver<Vec<u8>>) {
    let put = |line: Vec<u8>, batch: &mut Vec<u8>| batch.extend_from_slice(&line);
    if let Err(e) = write_queued(&mut output, &mut queued, put).await {
        tracing::debug!(error = %e, "cannot write: stdout is gone");
    }
}

/// Waits until `serving` (rmcp serving over a [`transport`]) ends, then until the lines it
/// queued (an answer to a bad `initialize` too) are written.
pub async fn served<S: rmcp::Service<RoleServer>>(
    serving: impl std::future::Future<
        Output = Result<
            rmcp::service::RunningService<RoleServer, S>,
            rmcp::service::ServerInitializeError,
        >,
    >,
    written: Written,
) -> io::Result<()> {
    let ended = match serving.await {
        Ok(running) => running.waiting().await.map(drop).map_err(io::Error::other),
        Err(e) => Err(io::Error::other(e.to_string())),
    };
    written.wait().await;
    ended
}

/// The transport's writer for taken lines; it does not keep the writer alive.
fn outlet(queue: mpsc::WeakSender<Vec<u8>>) -> Outlet {
    Outlet(Arc::new(move |message: Value| {
        let queue = queue.upgrade();
        Box::pin(async move {
            let sent = match queue {
                Some(queue) => queue_line(&queue, &message).await,
                None => false,
            };
            if !sent {
                tracing::debug!("cannot answer: stdout is gone");
            }
        })
    }))
}

/// Queues `message` as one line; `false` when stdout is gone.
async fn queue_line(queue: &mpsc::Sender<Vec<u8>>, message: &Value) -> bool {
    let mut line = Vec::new();
    append_line(message, &mut line);
    queue.send(line).await.is_ok()
}

/// The client's lines, read into messages; what is not one is answered.
struct Reader<R> {
    lines: LineReader<BufReader<R>>,
    /// The writer's queue.
    queue: mpsc::Sender<Vec<u8>>,
    /// What takes lines first, and where their answers go.
    taken: Option<(Arc<dyn Intercept>, Outlet)>,
}

impl<R: AsyncRead + Unpin> Reader<R> {
    /// The next message; `None` once stdin ends (or fails, or stdout is gone).
    async fn next(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let answer = match self.lines.next_line().await {
                Ok(Some(Line::Whole(line))) if self.takes(&line) => continue,
                Ok(Some(Line::Whole(line))) => match parse(&line) {
                    Ok(Some(message)) => return Some(message),
                    Ok(None) => continue,
                    Err(answer) => answer,
                },
                Ok(Some(Line::Oversized(id))) => over_cap(id, self.lines.limit()),
                Ok(None) => return None,
                Err(e) => {
                    tracing::error!(error = %e, "cannot read stdin");
                    return None;
                }
            };
            if !queue_line(&self.queue, &answer).await {
                tracing::debug!("cannot answer a bad line: stdout is gone");
                return None;
            }
        }
    }
}

impl<R> Reader<R> {
    fn takes(&self, line: &[u8]) -> bool {
        self.taken
            .as_ref()
            .is_some_and(|(intercept, outlet)| intercept.take(line, outlet))
    }
}

/// A line as a message; `Ok(None)` for a blank line or an unknown notification; else the
/// error answer it gets.
pub(crate) fn parse(line: &[u8]) -> Result<Option<RxJsonRpcMessage<RoleServer>>, Value> {
    let line = line.strip_prefix(BOM).unwrap_or(line).trim_ascii();
    if line.is_empty() {
        return Ok(None);
    }
    if let Some(call) = parse_call(line) {
        return Ok(Some(call));
    }
    let error = match serde_json::from_slice(line) {
        Ok(message) => return Ok(Some(message)),
        Err(e) => e,
    };
    let Ok(value) = serde_json::from_slice::<Value>(line) else {
        tracing::debug!(error = %error, "a line that is not JSON");
        return Err(answer(
            Value::Null,
            PARSE_ERROR,
            format!("Parse error: {error}"),
        ));
    };
    let id = value.get("id").cloned();
    if value.get("method").is_some() && id.is_none() {
        tracing::debug!(error = %error, "ignoring a notification that is not MCP");
        return Ok(None);
    }
    let message = format!("Invalid Request: not a JSON-RPC message of MCP ({error})");
    // An id that is neither a string nor a number was not detected (JSON-RPC 2.0, section 5).
    let id = id.filter(|id| id.is_string() || id.is_number());
    Err(answer(id.unwrap_or(Value::Null), INVALID_REQUEST, message))
}

/// A `tools/call` request, parsed as one. rmcp's client request is an untagged union of every
/// kind: a call is tried as each of the 13 kinds listed before it, each failure an error value
/// built and dropped — ~15 % of the gateway's instructions per stdio call. A line naming
/// `tools/call` is parsed with rmcp's own message type (its shape checks included) whose only
/// request kind is the call; anything else, or what this does not parse as a request, goes
/// through the whole parse, which decides as before.
fn parse_call(line: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
    static CALL: LazyLock<memmem::Finder<'static>> =
        LazyLock::new(|| memmem::Finder::new(b"\"tools/call\""));
    CALL.find(line)?;
    type CallOnly = JsonRpcMessage<CallToolRequest, ClientResult, ClientNotification>;
    match serde_json::from_slice::<CallOnly>(line).ok()? {
        JsonRpcMessage::Request(JsonRpcRequest {
            jsonrpc,
            id,
            request,
        }) => Some(JsonRpcMessage::Request(JsonRpcRequest {
            jsonrpc,
            id,
            request: ClientRequest::CallToolRequest(request),
        })),
        _ => None,
    }
}

/// The answer to a line over the cap.
fn over_cap(id: Option<u64>, cap: usize) -> Value {
    let message = format!(
        "Invalid Request: the message is over the {} cap, so it was dropped; send less, or \
         raise the cap with {} (up to 2GiB)",
        bytes_text(cap),
        MESSAGE_BYTES.name
    );
    answer(
        id.map_or(Value::Null, Value::from),
        INVALID_REQUEST,
        message,
    )
}

fn answer(id: Value, code: i64, message: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

    /// Sends `lines` to the transport and returns what it answered by itself and the messages
    /// it passed on.
    async fn exchange(input: &[u8], cap: usize) -> (Vec<Value>, usize) {
        let (mut client, server_in) = tokio::io::duplex(1 << 22);
        let (server_out, client_out) = tokio::io::duplex(1 << 22);
        let ((outgoing, mut incoming), written) =
            transport_capped(server_in, server_out, cap, None);
        client.write_all(input).await.unwrap();
        drop(client);
        let mut passed = 0;
        while incoming.next().await.is_some() {
            passed += 1;
        }
        drop(incoming);
        drop(outgoing);
        written.wait().await;
        let mut answers = Vec::new();
        let mut lines = tokio::io::BufReader::new(client_out).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            answers.push(serde_json::from_str(&line).unwrap());
        }
        (answers, passed)
    }

    const PING: &str = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;

    /// stdout that keeps each write it was given.
    #[derive(Clone, Default)]
    struct Writes(Arc<std::sync::Mutex<Vec<Vec<u8>>>>);

    impl Writes {
        fn taken(&self) -> Vec<Vec<u8>> {
            self.0.lock().unwrap().clone()
        }
    }

    impl AsyncWrite for Writes {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &[u8],
        ) -> std::task::Poll<io::Result<usize>> {
            self.0.lock().unwrap().push(buf.to_vec());
            std::task::Poll::Ready(Ok(buf.len()))
        }

        fn poll_flush(
            self: Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }

        fn poll_shutdown(
            self: Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
    }

    fn answer_to(id: u64) -> TxJsonRpcMessage<RoleServer> {
        serde_json::from_value(json!({"jsonrpc": "2.0", "id": id, "result": {}})).unwrap()
    }

    /// Messages queued while the writer had not run leave in one write, whole and in order.
    #[tokio::test(flavor = "current_thread")]
    async fn messages_queued_together_leave_in_one_write_in_order() {
        let writes = Writes::default();
        let ((mut outgoing, incoming), written) =
            transport_capped(tokio::io::empty(), writes.clone(), 1 << 20, None);
        for id in 1..=5 {
            outgoing.feed(answer_to(id)).await.unwrap();
        }
        // As rmcp's `send` does: the last message leaves the sink (queued, not yet written).
        outgoing.flush().await.unwrap();
        assert!(writes.taken().is_empty(), "the writer has not run yet");
        drop((outgoing, incoming));
        written.wait().await;
        let writes = writes.taken();
        assert_eq!(writes.len(), 1, "one write: {writes:?}");
        let ids: Vec<Value> = writes[0]
            .split_inclusive(|b| *b == b'\n')
            .map(|line| {
                assert!(line.ends_with(b"\n"));
                serde_json::from_slice::<Value>(line).unwrap()["id"].clone()
            })
            .collect();
        assert_eq!(ids, [1, 2, 3, 4, 5].map(Value::from));
    }

    /// A lone message is written as soon as the writer runs: no timer, no wait for company,
    /// the transport still open.
    #[tokio::test(flavor = "current_thread")]
    async fn a_lone_message_is_written_at_once() {
        let writes = Writes::default();
        let ((mut outgoing, _incoming), _written) =
            transport_capped(tokio::io::empty(), writes.clone(), 1 << 20, None);
        outgoing.send(answer_to(7)).await.unwrap();
        tokio::task::yield_now().await;
        let line = serde_json::to_vec(&answer_to(7)).unwrap();
        assert_eq!(writes.taken(), [[line, b"\n".to_vec()].concat()]);
    }

    /// Once stdout is gone the writer ends and sending fails, as writing did.
    #[tokio::test(flavor = "current_thread")]
    async fn sending_fails_once_stdout_is_gone() {
        let (client_out, server_out) = tokio::io::duplex(1 << 16);
        drop(client_out);
        let ((mut outgoing, _incoming), _written) =
            transport_capped(tokio::io::empty(), server_out, 1 << 20, None);
        let _ = outgoing.send(answer_to(1)).await;
        tokio::task::yield_now().await;
        let error = outgoing.send(answer_to(2)).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::BrokenPipe);
    }

    /// The `tools/call` parse gives what rmcp's whole parse gives, for calls of every shape
    /// (ids, `_meta`, a progress token, a task, nested and numeric arguments), and leaves to
    /// it what is not a call (a response quoting one, a call with a stray `result`, bad params).
    #[test]
    fn a_call_parsed_as_a_call_is_what_the_whole_parse_makes_of_it() {
        let calls = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__echo","arguments":{"message":"hi"}}}"#,
            r#"{"method":"tools/call","params":{"name":"x","arguments":{"n":1.5,"big":18446744073709551615,"neg":-3,"deep":{"a":[1,{"b":null}]}},"_meta":{"progressToken":"p-1","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}},"id":"s-9","jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","task":{"ttl":1000}}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
        ];
        for line in calls {
            let whole: RxJsonRpcMessage<RoleServer> = serde_json::from_str(line).unwrap();
            let fast = parse_call(line.as_bytes()).expect("parsed as a call");
            assert_eq!(
                serde_json::to_value(&fast).unwrap(),
                serde_json::to_value(&whole).unwrap(),
                "{line}"
            );
            assert_eq!(format!("{fast:?}"), format!("{whole:?}"), "{line}");
        }
        let not_calls = [
            r#"{"jsonrpc":"2.0","id":4,"result":{"content":[],"structuredContent":{"method":"tools/call"}}}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x"},"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":7}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"ping","params":{"_meta":{"x":"tools/call"}}}"#,
        ];
        for line in not_calls {
            assert!(parse_call(line.as_bytes()).is_none(), "{line}");
        }
    }

    #[tokio::test]
    async fn a_line_that_is_not_json_is_a_parse_error_with_a_null_id() {
        let deep = "[".repeat(100_000);
        let input = format!("not json\n{{\"a\": \"\u{0}\n{deep}\n{PING}\n");
        let mut bytes = input.into_bytes();
        bytes.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"\xff\"}\n");
        let (answers, passed) = exchange(&bytes, 1 << 20).await;
        assert_eq!(passed, 1, "the ping is passed on");
        assert_eq!(answers.len(), 4, "{answers:?}");
        for answer in &answers {
            assert_eq!(answer["id"], Value::Null);
            assert_eq!(answer["error"]["code"], PARSE_ERROR, "{answer}");
        }
    }

    #[tokio::test]
    async fn json_that_is_no_message_is_an_invalid_request_and_notifications_get_nothing() {
        let input = "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"nope\":1}\n42\n\
                     {\"jsonrpc\":\"2.0\",\"method\":\"lsp/whatever\"}\n";
        let (answers, _) = exchange(input.as_bytes(), 1 << 20).await;
        // The notification goes to rmcp (a custom one) or is dropped: never answered.
        let ids: Vec<_> = answers.iter().map(|a| a["id"].clone()).collect();
        assert_eq!(ids, [json!("a"), Value::Null]);
        assert!(answers
            .iter()
            .all(|a| a["error"]["code"] == INVALID_REQUEST));
    }

    /// Found by the `gateway_wire` fuzz target: an Invalid Request answer echoed an object id
    /// (`fuzz/corpus/gateway_wire/object-id`); JSON-RPC 2.0 says null.
    #[tokio::test]
    async fn an_id_that_is_no_string_or_number_is_answered_with_null() {
        let input = "{\"jsonrpc\":\"2.0\",\"id\":{\"x\":1},\"method\":\"nope\"}\n\
                     {\"jsonrpc\":\"2.0\",\"id\":[1],\"result\":7}\n";
        let (answers, _) = exchange(input.as_bytes(), 1 << 20).await;
        let ids: Vec<_> = answers.iter().map(|a| a["id"].clone()).collect();
        assert_eq!(ids, [Value::Null, Value::Null], "{answers:?}");
    }

    #[tokio::test]
    async fn a_line_over_the_cap_is_answered_with_the_cap_and_its_variable() {
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{{\"x\":\"{}\"}}}}\n",
            "a".repeat(2 << 20)
        );
        let (answers, passed) = exchange(format!("{big}{PING}\n").as_bytes(), 1 << 20).await;
        assert_eq!(passed, 1, "the line after is still read");
        assert_eq!(answers.len(), 1);
        assert_eq!(answers[0]["id"], 7);
        let message = answers[0]["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("1MiB") && message.contains(MESSAGE_BYTES.name),
            "{message}"
        );
    }
}
