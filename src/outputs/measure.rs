//! Measuring text in o200k tokens without paying for the tokenizer when size alone answers.
//!
//! A token is at least one byte, so text of at most `limit` bytes fits `limit` tokens: the
//! common small result never loads the vocabulary (its index is ~3 MB; the gateway has an RSS
//! target). The tokenizer is loaded lazily, once per process and shared with the catalog
//! (`TokenCounter::shared`), the first time a result is too large to be judged by its size.

use crate::catalog::TokenCounter;

/// A piece of text this many times longer in bytes than the tokens left is not counted: it
/// cannot fit in practice (o200k averages ~4 bytes a token on code and prose; 32 leaves room
/// for long runs of spaces), and counting a 50 MB minified line to learn that would cost
/// seconds.
pub(crate) const BYTES_PER_TOKEN_CEILING: usize = 32;

/// Totals of texts larger than this are estimated (bytes / 4) rather than counted: the
/// figure is for the envelope, and counting 100 MB would cost far more than the call.
pub(crate) const EXACT_TOTAL_BYTES: usize = 1 << 20;

/// Whether this process has loaded the tokenizer (tests check the small path never does).
pub fn is_tokenizer_loaded() -> bool {
    TokenCounter::is_loaded()
}

thread_local! {
    /// Texts counted on this thread: tests prove the small path counts nothing.
    static COUNTED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How many texts this thread has counted with the tokenizer.
#[cfg(test)]
pub(crate) fn counted_on_this_thread() -> usize {
    COUNTED.with(|c| c.get())
}

/// The o200k tokens of `text` (loads the tokenizer when needed).
pub fn tokens(text: &str) -> usize {
    COUNTED.with(|c| c.set(c.get() + 1));
    // Without a vocabulary, bytes stand in for tokens (an upper bound: cuts are early).
    match TokenCounter::shared() {
        Some(counter) => counter.count(text),
        None => text.len(),
    }
}

/// The tokens of `text` if they are at most `limit`, else `None`; text too long to possibly
/// fit is refused by its size, without counting.
pub(crate) fn cost_within(text: &str, limit: usize) -> Option<usize> {
    if text.len()
        > limit
            .saturating_mul(BYTES_PER_TOKEN_CEILING)
            .saturating_add(64)
    {
        return None;
    }
    let count = tokens(text);
    (count <= limit).then_some(count)
}

/// A total for the envelope: exact up to [`EXACT_TOTAL_BYTES`], else estimated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Total {
    /// The tokens (exact or estimated).
    pub tokens: usize,
    /// True when `tokens` is an estimate (bytes / 4).
    pub is_estimate: bool,
}

impl Total {
    /// The total of `text`.
    pub fn of(text: &str) -> Total {
        if text.len() > EXACT_TOTAL_BYTES {
            Total {
                tokens: text.len().div_ceil(4),
                is_estimate: true,
            }
        } else {
            Total {
                tokens: tokens(text),
                is_estimate: false,
            }
        }
    }

    /// `1,234` or `~25,000,000`.
    pub fn display(&self) -> String {
        let n = crate::output::thousands(self.tokens);
        if self.is_estimate {
            format!("~{n}")
        } else {
            n
        }
    }
}

/// The largest prefix of `text` ending on a char boundary with at most `max` bytes.
pub(crate) fn floor_char_boundary(text: &str, max: usize) -> usize {
    if max >= text.len() {
        return text.len();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    end
}

/// `line` shortened to about `width` bytes around the match at `start..end`: the whole line
/// when short, else `…before MATCH after…` (on character boundaries), so a match deep in a
/// minified line is seen rather than the line's start.
pub fn window(line: &str, start: usize, end: usize, width: usize) -> String {
    if line.len() <= width {
        return line.to_string();
    }
    let start = floor_char_boundary(line, start.min(line.len()));
    let end = floor_char_boundary(line, end.max(start).min(line.len()));
    let side = width.saturating_sub(end - start) / 2;
    let from = floor_char_boundary(line, start.saturating_sub(side));
    let mut to = (end + side).min(line.len());
    while !line.is_char_boundary(to) {
        to += 1;
    }
    let mut shown = String::new();
    if from > 0 {
        shown.push('…');
    }
    shown.push_str(&line[from..to]);
    if to < line.len() {
        shown.push('…');
    }
    shown
}

/// The longest prefix of `text` (a byte length on a char boundary, preferring to end after
/// whitespace or punctuation) costing at most `limit` tokens. Binary search over the bytes:
/// never splits a UTF-8 character.
pub(crate) fn prefix_within(text: &str, limit: usize) -> usize {
    let ceiling = floor_char_boundary(text, limit.saturating_mul(BYTES_PER_TOKEN_CEILING));
    let (mut lo, mut hi) = (0usize, ceiling);
    // Invariant: text[..lo] fits; anything past hi does not (or was not considered).
    while lo < hi {
        let mid = floor_char_boundary(text, lo + (hi - lo).div_ceil(2));
        if mid <= lo {
            break;
        }
        if tokens(&text[..mid]) <= limit {
            lo = mid;
        } else {
            hi = floor_char_boundary(text, mid - 1);
        }
    }
    // Prefer a clean end within the last eighth of what fits.
    let window = lo - lo / 8;
    text[..lo]
        .char_indices()
        .rev()
        .take_while(|(i, _)| *i >= window)
        .find(|(_, c)| c.is_whitespace() || matches!(c, ',' | ';' | '.' | '}' | ']' | ')'))
        .map(|(i, c)| i + c.len_utf8())
        .unwrap_or(lo)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_never_split_a_character() {
        let text = "é".repeat(5000) + &"日本語".repeat(3000);
        for limit in [1, 7, 100, 999] {
            let end = prefix_within(&text, limit);
            assert!(text.is_char_boundary(end));
            assert!(tokens(&text[..end]) <= limit, "limit {limit}");
            assert!(end > 0);
        }
        assert_eq!(floor_char_boundary("aé", 2), 1);
        let line = format!("{}NEEDLE{}", "é".repeat(500), "x".repeat(500));
        let at = line.find("NEEDLE").unwrap();
        let shown = window(&line, at, at + 6, 40);
        assert!(shown.starts_with('…') && shown.ends_with('…') && shown.contains("NEEDLE"));
        assert!(shown.len() < 60, "{shown}");
        assert_eq!(window("short", 0, 1, 40), "short");
    }

    #[test]
    fn refuses_by_size_without_counting_what_cannot_fit() {
        let huge = "x".repeat(10_000);
        assert_eq!(cost_within(&huge, 10), None);
        assert_eq!(cost_within("hello world", 10), Some(2));
    }
}
