//! A bounded byte ring for a child's stderr: keeps the newest bytes, drops the oldest.

use std::collections::VecDeque;

/// The newest `capacity` bytes a child wrote to stderr.
#[derive(Debug)]
pub struct StderrRing {
    bytes: VecDeque<u8>,
    capacity: usize,
    /// Total bytes ever pushed, so callers can tell that output was dropped.
    total: u64,
}

impl StderrRing {
    /// An empty ring that keeps at most `capacity` bytes.
    pub fn new(capacity: usize) -> Self {
        Self {
            bytes: VecDeque::with_capacity(capacity.min(8192)),
            capacity,
            total: 0,
        }
    }

    /// Appends `chunk`, dropping the oldest bytes beyond capacity.
    pub fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        let chunk = if chunk.len() > self.capacity {
            &chunk[chunk.len() - self.capacity..]
        } else {
            chunk
        };
        let overflow = (self.bytes.len() + chunk.len()).saturating_sub(self.capacity);
        self.bytes.drain(..overflow);
        self.bytes.extend(chunk);
    }

    /// Total bytes pushed since creation (kept or not).
    pub fn total_bytes(&self) -> u64 {
        self.total
    }

    /// The last `n` non-empty lines, lossily decoded, without ANSI colour codes, joined by `\n`.
    pub fn tail_lines(&self, n: usize) -> String {
        let (a, b) = self.bytes.as_slices();
        let mut joined = Vec::with_capacity(a.len() + b.len());
        joined.extend_from_slice(a);
        joined.extend_from_slice(b);
        let text = String::from_utf8_lossy(&joined);
        let lines: Vec<String> = text
            .lines()
            .map(|l| strip_ansi(l).trim_end().to_string())
            .filter(|l| !l.is_empty())
            .collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }
}

/// Removes ANSI escape sequences (CSI `ESC [ … letter`) so tails read cleanly in messages.
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_only_the_newest_bytes() {
        let mut ring = StderrRing::new(10);
        ring.push(b"0123456789abc");
        assert_eq!(ring.tail_lines(5), "3456789abc");
        ring.push(b"\nxy");
        assert_eq!(ring.tail_lines(5), "6789abc\nxy");
        assert_eq!(ring.total_bytes(), 16);
    }

    #[test]
    fn tail_skips_blank_lines_and_colour() {
        let mut ring = StderrRing::new(1024);
        ring.push(b"one\n\n\x1b[31merror:\x1b[0m bad\n\n");
        assert_eq!(ring.tail_lines(1), "error: bad");
        assert_eq!(ring.tail_lines(9), "one\nerror: bad");
    }

    #[test]
    fn a_flood_costs_no_more_than_capacity() {
        let mut ring = StderrRing::new(64);
        for _ in 0..10_000 {
            ring.push(b"line of noise\n");
        }
        assert!(ring.bytes.len() <= 64);
        assert_eq!(ring.tail_lines(1), "line of noise");
    }
}
