//! Newline-delimited JSON framing for stdio: whole messages out, everything else skipped.
//!
//! Servers print banners, dashboard URLs, colour codes, half-written JSON and invalid UTF-8
//! on stdout. None of it may reach the session: such lines are logged at debug level and
//! skipped. A line longer than the limit ([`MAX_LINE_BYTES`] unless `MCP_LAUNCH_MAX_MESSAGE_BYTES`
//! says otherwise) is discarded rather than buffered without bound. LSP-style `Content-Length`
//! framing is never used.

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// The largest line we keep in memory. Tool results of tens of megabytes are legitimate;
/// an endless line from a broken server must not exhaust memory.
pub const MAX_LINE_BYTES: usize = super::limits::MAX_MESSAGE_BYTES;

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

    /// The next JSON value, skipping non-JSON lines; `Ok(None)` at end of stream.
    pub async fn next_value(&mut self) -> std::io::Result<Option<Value>> {
        loop {
            let Some(line) = self.next_line().await? else {
                return Ok(None);
            };
            let trimmed = line.trim_ascii();
            if trimmed.is_empty() {
                continue;
            }
            match serde_json::from_slice::<Value>(trimmed) {
                Ok(value) => return Ok(Some(value)),
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

    /// The next raw line without its terminator; `Ok(None)` at end of stream.
    async fn next_line(&mut self) -> std::io::Result<Option<Vec<u8>>> {
        self.line.clear();
        let mut overflowed = false;
        loop {
            let buf = self.inner.fill_buf().await?;
            if buf.is_empty() {
                // End of stream: a final unterminated line still counts.
                return Ok(
                    (!self.line.is_empty() && !overflowed).then(|| std::mem::take(&mut self.line))
                );
            }
            let (chunk, found) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (&buf[..i], Some(i + 1)),
                None => (buf, None),
            };
            if !overflowed && self.line.len() + chunk.len() > self.limit {
                overflowed = true;
                self.line = Vec::new();
                tracing::warn!(
                    limit = self.limit,
                    "discarding an over-long stdout line ({} raises the cap)",
                    super::limits::MESSAGE_BYTES.name
                );
            }
            if !overflowed {
                self.line.extend_from_slice(chunk);
            }
            let used = found.unwrap_or(buf.len());
            self.inner.consume(used);
            if found.is_some() {
                if overflowed {
                    self.skipped += 1;
                    overflowed = false;
                    continue;
                }
                return Ok(Some(std::mem::take(&mut self.line)));
            }
        }
    }
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
}
