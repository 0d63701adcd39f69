//! Newline-delimited JSON framing for stdio: whole messages out, everything else skipped.
//!
//! Servers print banners, dashboard URLs, colour codes, half-written JSON and invalid UTF-8
//! on stdout. None of it may reach the session: such lines are logged at debug level and
//! skipped. A line longer than the limit ([`MAX_LINE_BYTES`] unless `MCP_LAUNCH_MAX_MESSAGE_BYTES`
//! says otherwise) is discarded rather than buffered without bound. LSP-style `Content-Length`
//! framing is never used.

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// The largest line we keep in memory. Tool results of tens of megabytes are legitimate;
/// an endless line from a broken server must not exhaust memory.
pub const MAX_LINE_BYTES: usize = super::limits::MAX_MESSAGE_BYTES;

/// One message as a line for a server's stdin: compact JSON (which escapes every newline in
/// its strings) and one `\n`.
pub fn encode(message: &Value) -> Vec<u8> {
    let mut line = Vec::new();
    append_line(message, &mut line);
    line
}

/// `message` as a line (as [`encode`]) at the end of `batch`.
pub fn append_line(message: &Value, batch: &mut Vec<u8>) {
    // Writing a `Value` (string keys) into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *batch, message);
    batch.push(b'\n');
}

/// The bytes past which [`gather`] takes no more of the queue: one pipe's worth (Linux's
/// default 64 KiB). What a batch holds has left the bounded queue, so a peer that stopped
/// reading must not let a batch take much more than the pipe would: the queue, not the
/// batch, is where senders are told to wait (`mcp::session`'s stall test).
pub const BATCH_BYTES: usize = 64 * 1024;

/// Waits for the next queued message, then takes it and every message already queued behind
/// it (until `batch` holds [`BATCH_BYTES`]), each put at the end of `batch` in order; `false`
/// once the queue is closed and empty. Under load several messages then leave in one write
/// (one system call); a lone message is never held back for company.
async fn gather<T>(
    queue: &mut mpsc::Receiver<T>,
    batch: &mut Vec<u8>,
    mut put: impl FnMut(T, &mut Vec<u8>),
) -> bool {
    let Some(first) = queue.recv().await else {
        return false;
    };
    put(first, batch);
    while batch.len() < BATCH_BYTES {
        match queue.try_recv() {
            Ok(next) => put(next, batch),
            Err(_) => break,
        }
    }
    true
}

/// Writes what `queue` holds to `out`, each message put as its line by `put` and the messages
/// queued together in one write ([`gather`]), until the queue closes (all written) or a write
/// fails (its error).
pub async fn write_queued<T, W: AsyncWrite + Unpin>(
    out: &mut W,
    queue: &mut mpsc::Receiver<T>,
    mut put: impl FnMut(T, &mut Vec<u8>),
) -> std::io::Result<()> {
    let mut batch = Vec::new();
    while gather(queue, &mut batch, &mut put).await {
        out.write_all(&batch).await?;
        out.flush().await?;
        batch.clear();
    }
    Ok(())
}

/// Reads newline-delimited JSON values from a server's stdout.
pub struct LineReader<R> {
    inner: R,
    line: Vec<u8>,
    /// The longest line kept, in bytes.
    limit: usize,
    /// Non-JSON lines skipped so far (reported in verbose output).
    pub skipped: u64,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    /// Wraps a buffered reader.
    pub fn new(inner: R) -> Self {
        Self {
            inner,
            line: Vec::new(),
            limit: MAX_LINE_BYTES,
            skipped: 0,
        }
    }

    /// The same reader keeping lines of at most `limit` bytes.
    pub fn with_limit(self, limit: usize) -> Self {
        Self { limit, ..self }
    }

    /// The next JSON value, skipping non-JSON and over-long lines; `Ok(None)` at end of
    /// stream.
    pub async fn next_value(&mut self) -> std::io::Result<Option<Value>> {
        loop {
            match self.next_frame().await? {
                None => return Ok(None),
                Some(Frame::Value(value)) => return Ok(Some(value)),
                Some(Frame::Oversized { .. }) => {}
            }
        }
    }

    /// The next JSON value or over-long line, skipping non-JSON lines; `Ok(None)` at end of
    /// stream.
    pub async fn next_frame(&mut self) -> std::io::Result<Option<Frame>> {
        loop {
            let line = match self.next_line().await? {
                None => return Ok(None),
                Some(Line::Oversized(id)) => return Ok(Some(Frame::Oversized { id })),
                Some(Line::Whole(line)) => line,
            };
            let trimmed = line.trim_ascii();
            if trimmed.is_empty() {
                continue;
            }
            match serde_json::from_slice::<Value>(trimmed) {
                Ok(value) => return Ok(Some(Frame::Value(value))),
                Err(_) => {
                    self.skipped += 1;
                    tracing::debug!(
                        line = %String::from_utf8_lossy(&trimmed[..trimmed.len().min(200)]),
                        "skipped non-JSON line on stdout"
                    );
                }
            }
        }
    }

    /// The longest line kept, in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The next raw line without its terminator (or what is kept of one over the limit);
    /// `Ok(None)` at end of stream.
    pub async fn next_line(&mut self) -> std::io::Result<Option<Line>> {
        self.line.clear();
        let mut overflow: Option<Overflow> = None;
        loop {
            let buf = self.inner.fill_buf().await?;
            if buf.is_empty() {
                // End of stream: a final unterminated line still counts.
                return Ok(match overflow {
                    Some(overflow) => Some(self.discard(overflow)),
                    None => {
                        (!self.line.is_empty()).then(|| Line::Whole(std::mem::take(&mut self.line)))
                    }
                });
            }
            let (chunk, found) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (&buf[..i], Some(i + 1)),
                None => (buf, None),
            };
            if overflow.is_none() && self.line.len() + chunk.len() > self.limit {
                tracing::warn!(
                    limit = self.limit,
                    "discarding an over-long line ({} raises the cap)",
                    super::limits::MESSAGE_BYTES.name
                );
                overflow = Some(Overflow::starting_with(std::mem::take(&mut self.line)));
            }
            match overflow.as_mut() {
                Some(overflow) => overflow.feed(chunk),
                None => self.line.extend_from_slice(chunk),
            }
            let used = found.unwrap_or(buf.len());
            self.inner.consume(used);
            if found.is_some() {
                return Ok(Some(match overflow {
                    Some(overflow) => self.discard(overflow),
                    None => Line::Whole(std::mem::take(&mut self.line)),
                }));
            }
        }
    }

    /// Counts an over-long line as skipped; what is left of it is the id it answered.
    fn discard(&mut self, overflow: Overflow) -> Line {
        self.skipped += 1;
        Line::Oversized(overflow.response_id())
    }
}

/// What one line of a server's stdout held.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// A JSON value.
    Value(Value),
    /// A line over the limit, discarded. `id` is the id of the response it carried when its
    /// first or last bytes show one at the top level (`{"jsonrpc":"2.0","id":7,…` or
    /// `…,"id":7}`), so the request can fail at once instead of at its timeout.
    Oversized {
        /// Our request's id, when the line shows it.
        id: Option<u64>,
    },
}

/// A raw line, or what is kept of one over the limit.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// A line within the limit, without its `\n`.
    Whole(Vec<u8>),
    /// A line over the limit, discarded: the id it shows at either end (as in
    /// [`Frame::Oversized`]).
    Oversized(Option<u64>),
}

/// Bytes kept of each end of an over-long line: enough for `{"jsonrpc":"2.0","id":N` and
/// `"jsonrpc":"2.0","id":N}` with spaces.
const END_BYTES: usize = 256;

/// The two ends of an over-long line.
struct Overflow {
    head: Vec<u8>,
    tail: Vec<u8>,
}

impl Overflow {
    fn starting_with(line: Vec<u8>) -> Overflow {
        let mut overflow = Overflow {
            head: Vec::new(),
            tail: Vec::new(),
        };
        overflow.feed(&line);
        overflow
    }

    fn feed(&mut self, chunk: &[u8]) {
        let room = END_BYTES.saturating_sub(self.head.len());
        self.head.extend_from_slice(&chunk[..chunk.len().min(room)]);
        self.tail
            .extend_from_slice(&chunk[chunk.len().saturating_sub(END_BYTES)..]);
        let excess = self.tail.len().saturating_sub(END_BYTES);
        self.tail.drain(..excess);
    }

    fn response_id(&self) -> Option<u64> {
        let head = String::from_utf8_lossy(&self.head);
        let tail = String::from_utf8_lossy(&self.tail);
        id_at_start(&head).or_else(|| id_at_end(&tail))
    }
}

/// `text` after optional whitespace and `token`.
fn after<'t>(text: &'t str, token: &str) -> Option<&'t str> {
    text.trim_start().strip_prefix(token)
}

/// `text` before `token` and optional whitespace.
fn before<'t>(text: &'t str, token: &str) -> Option<&'t str> {
    text.trim_end().strip_suffix(token)
}

/// The id of `{"jsonrpc":"2.0","id":N,…` or `{"id":N,…`: right after the opening brace, so at
/// the top level.
fn id_at_start(head: &str) -> Option<u64> {
    let rest = after(head, "{")?;
    let rest = after(rest, "\"jsonrpc\"")
        .and_then(|r| after(r, ":"))
        .and_then(|r| after(r, "\"2.0\""))
        .and_then(|r| after(r, ","))
        .unwrap_or(rest);
    let rest = after(after(rest, "\"id\"")?, ":")?.trim_start();
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let follows = rest[digits..].trim_start();
    (follows.starts_with(',') || follows.starts_with('}'))
        .then(|| rest[..digits].parse().ok())
        .flatten()
}

/// The id of `…,"id":N}` or `…,"id":N,"jsonrpc":"2.0"}`: right before the closing brace of
/// a complete line, so at the top level.
fn id_at_end(tail: &str) -> Option<u64> {
    let rest = before(tail, "}")?;
    let rest = before(rest, "\"2.0\"")
        .and_then(|r| before(r, ":"))
        .and_then(|r| before(r, "\"jsonrpc\""))
        .and_then(|r| before(r, ","))
        .unwrap_or(rest)
        .trim_end();
    let number = &rest[rest.trim_end_matches(|c: char| c.is_ascii_digit()).len()..];
    let rest = before(before(&rest[..rest.len() - number.len()], ":")?, "\"id\"")?.trim_end();
    (rest.ends_with(',') || rest.ends_with('{'))
        .then(|| number.parse().ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    async fn values(input: &[u8]) -> (Vec<Value>, u64) {
        let mut reader = LineReader::new(input);
        let mut out = Vec::new();
        while let Some(v) = reader.next_value().await.unwrap() {
            out.push(v);
        }
        (out, reader.skipped)
    }

    /// What is queued leaves in one batch, whole lines in order; a lone message is not held
    /// back; a closed queue ends.
    #[tokio::test]
    async fn gather_takes_what_is_queued_in_order_and_never_waits_for_more() {
        let (queue, mut queued) = mpsc::channel(8);
        for id in 1..=3 {
            queue.send(json!({"id": id})).await.unwrap();
        }
        let mut batch = Vec::new();
        let put = |message: Value, batch: &mut Vec<u8>| append_line(&message, batch);
        assert!(gather(&mut queued, &mut batch, put).await);
        assert_eq!(batch, b"{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n");
        batch.clear();
        queue.send(json!({"id": 4})).await.unwrap();
        assert!(gather(&mut queued, &mut batch, put).await);
        assert_eq!(batch, b"{\"id\":4}\n");
        drop(queue);
        assert!(!gather(&mut queued, &mut batch, put).await);
    }

    /// A batch stops taking once it holds [`BATCH_BYTES`]; the rest is the next batch's.
    #[tokio::test]
    async fn a_batch_stops_at_its_size() {
        let (queue, mut queued) = mpsc::channel(8);
        let big = json!("x".repeat(BATCH_BYTES));
        queue.send(big.clone()).await.unwrap();
        queue.send(json!(1)).await.unwrap();
        let mut batch = Vec::new();
        let put = |message: Value, batch: &mut Vec<u8>| append_line(&message, batch);
        assert!(gather(&mut queued, &mut batch, put).await);
        assert_eq!(batch, encode(&big));
        batch.clear();
        assert!(gather(&mut queued, &mut batch, put).await);
        assert_eq!(batch, b"1\n");
    }

    #[tokio::test]
    async fn skips_noise_between_messages() {
        let input = b"Server listening on http://localhost:3000\n\x1b[32mready\x1b[0m\n{\"jsonrpc\": \"2.0\", \"id\":\n\xff\xfe bad utf8\n\n{\"id\":1,\"result\":{}}\r\n{\"id\":2,\"result\":{}}";
        let (vals, skipped) = values(input).await;
        assert_eq!(
            vals,
            vec![json!({"id":1,"result":{}}), json!({"id":2,"result":{}})]
        );
        assert_eq!(skipped, 4);
    }

    #[tokio::test]
    async fn reads_lines_split_across_buffers() {
        let data = format!("{{\"text\":\"{}\"}}\n", "x".repeat(100_000));
        let reader = tokio::io::BufReader::with_capacity(64, data.as_bytes());
        let mut lines = LineReader::new(reader);
        let v = lines.next_value().await.unwrap().unwrap();
        assert_eq!(v["text"].as_str().unwrap().len(), 100_000);
        assert!(lines.next_value().await.unwrap().is_none());
    }

    #[tokio::test]
    async fn lines_over_the_limit_are_discarded() {
        let data = format!("{{\"text\":\"{}\"}}\n{{\"id\":1}}\n", "x".repeat(100));
        let reader = tokio::io::BufReader::with_capacity(16, data.as_bytes());
        let mut lines = LineReader::new(reader).with_limit(64);
        assert_eq!(lines.next_value().await.unwrap(), Some(json!({"id": 1})));
        assert_eq!(lines.skipped, 1);
    }

    #[tokio::test]
    async fn an_over_long_answer_names_its_request() {
        let big = "x".repeat(1000);
        let lines = [
            format!("{{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{{\"t\":\"{big}\"}}}}\n"),
            format!("{{\"result\": {{\"t\": \"{big}\"}}, \"jsonrpc\": \"2.0\", \"id\": 8}}\n"),
            format!("{{\"result\":{{\"t\":\"{big}\",\"id\":9}}}}\n"),
            format!("{{\"method\":\"log\",\"params\":{{\"id\":10,\"t\":\"{big}\"}}}}\n"),
            "{\"id\":1}\n".to_string(),
        ];
        let data = lines.concat();
        let reader = tokio::io::BufReader::with_capacity(64, data.as_bytes());
        let mut frames = LineReader::new(reader).with_limit(500);
        let mut seen = Vec::new();
        while let Some(frame) = frames.next_frame().await.unwrap() {
            seen.push(frame);
        }
        assert_eq!(
            seen,
            [
                Frame::Oversized { id: Some(7) },
                Frame::Oversized { id: Some(8) },
                Frame::Oversized { id: None },
                Frame::Oversized { id: None },
                Frame::Value(json!({"id": 1})),
            ]
        );
        assert_eq!(frames.skipped, 4);
    }
}
