//! Bounds on what a server can make us hold in memory: a message (a stdio line, an HTTP body,
//! an SSE event), the queue of messages waiting to be written to a server, and the pages of a
//! `tools/list`.
//!
//! A server is third-party code. One that streams an endless body, an event without an end,
//! pages forever or stops reading its input must cost a clear error, never unbounded memory.
//! Each bound has a default and an environment variable ([`Limits::from_env`]), checked at the
//! CLI's edge like every other (`cli::ENV_CAPS`).

use bytes::{Bytes, BytesMut};
use futures_util::{Stream, StreamExt};

use super::cap::{Cap, Unit};
use super::error::McpError;

/// The largest message taken from a server: a stdio line, an HTTP response body or one SSE
/// event. Far above any real tool result (the largest seen are a few MB of page text).
pub const MAX_MESSAGE_BYTES: usize = 128 * 1024 * 1024;

/// Messages waiting to be written to one server. A server that stops reading its stdin (or an
/// endpoint that stops accepting POSTs) holds up at most this many; further requests wait for
/// room until their own timeout and then fail with [`McpError::Stalled`].
pub const OUTBOX_CAPACITY: usize = 256;

/// `tools/list` pages we follow at most; a server that pages forever is cut off here.
pub const MAX_TOOL_PAGES: usize = 1000;

/// The message cap as a user sets it: 1 MiB (a large tool list) to 2 GiB.
pub const MESSAGE_BYTES: Cap = Cap::new(
    "MCP_LAUNCH_MAX_MESSAGE_BYTES",
    MAX_MESSAGE_BYTES,
    1 << 20,
    1 << 31,
    Unit::Bytes,
);

/// The queue bound as a user sets it: 16 to 65,536 messages.
pub const QUEUED_MESSAGES: Cap = Cap::new(
    "MCP_LAUNCH_MAX_QUEUED_MESSAGES",
    OUTBOX_CAPACITY,
    16,
    65_536,
    Unit::Items,
);

/// The page cap as a user sets it: 1 to 100,000 pages.
pub const TOOL_PAGES: Cap = Cap::new(
    "MCP_LAUNCH_MAX_TOOL_PAGES",
    MAX_TOOL_PAGES,
    1,
    100_000,
    Unit::Items,
);

/// Every cap of this module, for the CLI's check of the environment.
pub const CAPS: [&Cap; 3] = [&MESSAGE_BYTES, &QUEUED_MESSAGES, &TOOL_PAGES];

/// The bounds one session works under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest message taken from the server ([`MAX_MESSAGE_BYTES`]).
    pub message_bytes: usize,
    /// Messages queued to the server at most ([`OUTBOX_CAPACITY`]).
    pub queued_messages: usize,
    /// `tools/list` pages followed at most ([`MAX_TOOL_PAGES`]).
    pub tool_pages: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            message_bytes: MAX_MESSAGE_BYTES,
            queued_messages: OUTBOX_CAPACITY,
            tool_pages: MAX_TOOL_PAGES,
        }
    }
}

impl Limits {
    /// The bounds from their variables ([`CAPS`]), defaults where unset.
    pub fn from_env() -> Limits {
        Limits {
            message_bytes: MESSAGE_BYTES.from_env_or_default(),
            queued_messages: QUEUED_MESSAGES.from_env_or_default(),
            tool_pages: TOOL_PAGES.from_env_or_default(),
        }
    }
}

/// Bytes of an error response's body kept for the message.
pub(crate) const ERROR_BODY_BYTES: usize = 500;

/// Reads a response body, refusing it once it grows past `limit` bytes.
pub async fn read_capped(
    resp: reqwest::Response,
    url: &str,
    limit: usize,
) -> Result<Bytes, McpError> {
    let mut body = BytesMut::new();
    let mut chunks = resp.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|e| McpError::Connect {
            url: url.to_string(),
            message: super::http::error_chain(&e.without_url()),
        })?;
        if body.len() + chunk.len() > limit {
            return Err(too_large(url, limit));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

/// The first `limit` bytes of a body (for error messages); the rest is never read.
pub(crate) async fn read_prefix(resp: reqwest::Response, limit: usize) -> String {
    let mut body = Vec::new();
    let mut chunks = resp.bytes_stream();
    while let Some(Ok(chunk)) = chunks.next().await {
        body.extend_from_slice(&chunk);
        if body.len() >= limit {
            body.truncate(limit);
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// `stream` (an SSE body) failing once one event grows past `limit` bytes. Events end at a
/// blank line (`\n\n`, `\r\n\r\n`); the count starts again after each.
pub(crate) fn cap_events<S, E>(
    stream: S,
    url: &str,
    limit: usize,
) -> impl Stream<Item = Result<Bytes, CappedError<E>>>
where
    S: Stream<Item = Result<Bytes, E>>,
{
    let url = url.to_string();
    let mut meter = EventMeter::default();
    stream.map(move |chunk| {
        let chunk = chunk.map_err(CappedError::Stream)?;
        if meter.feed(&chunk) > limit {
            return Err(CappedError::TooLarge(too_large(&url, limit)));
        }
        Ok(chunk)
    })
}

/// An SSE stream's error, or an event over the cap.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CappedError<E> {
    /// The body stream broke.
    #[error("{0}")]
    Stream(E),
    /// One event grew past the cap.
    #[error("{0}")]
    TooLarge(McpError),
}

/// Bytes of the current SSE event, across chunks.
#[derive(Debug, Default)]
struct EventMeter {
    event: usize,
    line: usize,
}

impl EventMeter {
    /// Feeds a chunk; the size of the event still open at its end (or the largest seen in it).
    fn feed(&mut self, chunk: &[u8]) -> usize {
        let mut largest = 0;
        for &byte in chunk {
            self.event += 1;
            match byte {
                b'\n' if self.line == 0 => {
                    largest = largest.max(self.event);
                    self.event = 0;
                }
                b'\n' => self.line = 0,
                b'\r' => {}
                _ => self.line += 1,
            }
        }
        largest.max(self.event)
    }
}

fn too_large(url: &str, limit: usize) -> McpError {
    McpError::TooLarge {
        origin: url.to_string(),
        limit,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_lie_in_their_ranges() {
        for cap in CAPS {
            assert!((cap.min..=cap.max).contains(&cap.default), "{}", cap.name);
        }
        assert_eq!(MESSAGE_BYTES.parse("64MiB"), Ok(64 << 20));
    }

    #[test]
    fn events_are_measured_between_blank_lines() {
        let mut meter = EventMeter::default();
        assert_eq!(meter.feed(b"data: 1234\n"), 11);
        assert_eq!(meter.feed(b"\n"), 12, "the event ends here");
        assert_eq!(meter.feed(b"data: x"), 7, "a new event");
        assert_eq!(meter.feed(b"\r\n\r\ndata: y\n"), 11);
        assert_eq!(meter.event, 8);
    }

    #[tokio::test]
    async fn an_endless_event_fails_while_separate_ones_pass() {
        let chunks = |parts: Vec<&'static [u8]>| {
            futures_util::stream::iter(
                parts
                    .into_iter()
                    .map(|p| Ok::<_, std::io::Error>(Bytes::from_static(p))),
            )
        };
        let fine = cap_events(
            chunks(vec![b"data: 12345\n\n", b"data: 12345\n\n"]),
            "u",
            16,
        );
        assert!(fine.collect::<Vec<_>>().await.iter().all(Result::is_ok));
        let endless = cap_events(chunks(vec![b"data: 12345", b"67890", b"12345"]), "u", 16);
        let results = endless.collect::<Vec<_>>().await;
        assert!(matches!(
            results.last(),
            Some(Err(CappedError::TooLarge(McpError::TooLarge {
                limit: 16,
                ..
            })))
        ));
    }
}
