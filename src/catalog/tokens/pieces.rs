//! o200k_base pre-tokenisation: text split into the pieces byte-pair merging works within.
//!
//! The o200k pattern (tiktoken's, public) ends with `\s+(?!\S)|\s+`, a look-ahead the `regex`
//! crate does not have. We match `\s+` instead and give back what the look-ahead would: a
//! whitespace run followed by a non-space keeps its last character for the next piece when
//! the run is longer than one character (`\s+(?!\S)` backtracks one character; a run of one
//! falls through to `\s+` and is taken whole). Only that alternative yields a piece of
//! whitespace not ending in `\r` or `\n`: the letter, digit and punctuation alternatives end
//! on a non-space (or `\r`, `\n`, `/`), and `\s*[\r\n]+`, tried before it, takes any run
//! holding a line break. The counts are checked against tiktoken-rs on a corpus
//! (`o200k_tests.rs`).

use std::sync::OnceLock;

use regex::Regex;

/// tiktoken's o200k_base pattern with `\s+(?!\S)|\s+` as `\s+` (see the module doc).
const PATTERN: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n/]*",
    r"|\s*[\r\n]+",
    r"|\s+",
);

/// The compiled pattern, shared by every thread (the regex crate keeps a matching cache per
/// thread itself).
fn pattern() -> &'static Regex {
    static PIECES: OnceLock<Regex> = OnceLock::new();
    PIECES.get_or_init(|| Regex::new(PATTERN).expect("the o200k pattern compiles"))
}

/// The pieces of a text, in order; together they are the whole text.
pub struct Pieces<'t> {
    text: &'t str,
    at: usize,
}

impl<'t> Pieces<'t> {
    pub fn new(text: &'t str) -> Self {
        Self { text, at: 0 }
    }
}

impl<'t> Iterator for Pieces<'t> {
    type Item = &'t str;

    fn next(&mut self) -> Option<&'t str> {
        if self.at >= self.text.len() {
            return None;
        }
        // Every character starts some alternative, so the match starts here; a text the
        // pattern could not place would still be counted, one piece to the end.
        let end = match pattern().find_at(self.text, self.at) {
            Some(m) if m.start() == self.at && m.end() > m.start() => {
                lookahead_end(self.text, m.start(), m.end())
            }
            _ => self.text.len(),
        };
        let piece = &self.text[self.at..end];
        self.at = end;
        Some(piece)
    }
}

/// Where the piece `text[start..end]` ends once `\s+(?!\S)` has had its say: a run of two or
/// more whitespace characters matched by the final `\s+`, followed by more text (a non-space,
/// as the run is maximal), gives its last character back.
fn lookahead_end(text: &str, start: usize, end: usize) -> usize {
    let piece = &text[start..end];
    let Some(last) = piece.chars().next_back() else {
        return end;
    };
    let bare_run = last.is_whitespace() && last != '\r' && last != '\n';
    if bare_run && end < text.len() && piece.chars().nth(1).is_some() {
        end - last.len_utf8()
    } else {
        end
    }
}
