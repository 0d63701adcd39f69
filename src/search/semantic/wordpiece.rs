//! BERT's uncased WordPiece tokenizer, read from the model's `vocab.txt`.
//!
//! The steps of the reference tokenizer, in order: drop control characters and turn every
//! whitespace into a space; put spaces around CJK ideographs; lowercase and strip accents
//! (NFD, then drop non-spacing marks); split on whitespace and cut every punctuation
//! character into a word of its own; then each word greedily into the longest vocabulary
//! pieces (`##` marks a piece inside a word), a word that cannot be cut becoming `[UNK]`.
//! Checked token for token against the reference on the evaluation set's tools and queries
//! (`tests.rs`).

use std::collections::HashMap;

use unicode_normalization::UnicodeNormalization;

/// A word longer than this (in characters) is `[UNK]`, as in the reference.
const MAX_WORD_CHARS: usize = 100;

pub struct WordPiece {
    ids: HashMap<String, u32>,
    unknown: u32,
    start: u32,
    end: u32,
}

impl WordPiece {
    /// Reads a vocabulary of one token per line (its id is its line number). `None` when a
    /// special token the encoder needs is missing.
    pub fn from_vocab(text: &str) -> Option<Self> {
        let ids: HashMap<String, u32> = text
            .lines()
            .enumerate()
            .map(|(i, token)| (token.to_string(), i as u32))
            .collect();
        Some(Self {
            unknown: *ids.get("[UNK]")?,
            start: *ids.get("[CLS]")?,
            end: *ids.get("[SEP]")?,
            ids,
        })
    }

    /// The largest id a text can be encoded to, plus one.
    pub fn id_bound(&self) -> usize {
        self.ids.values().max().map_or(0, |&id| id as usize + 1)
    }

    /// `[CLS] pieces… [SEP]`, cut to at most `max` ids (the end marker always kept).
    pub fn encode(&self, text: &str, max: usize) -> Vec<u32> {
        let mut ids = vec![self.start];
        let room = max.saturating_sub(1);
        for word in words(&normalise(text)) {
            if ids.len() >= room {
                break;
            }
            self.pieces(&word, &mut ids);
        }
        ids.truncate(room.max(1));
        ids.push(self.end);
        ids
    }

    fn pieces(&self, word: &str, out: &mut Vec<u32>) {
        if word.chars().count() > MAX_WORD_CHARS {
            out.push(self.unknown);
            return;
        }
        let mark = out.len();
        let mut start = 0;
        let mut piece = String::new();
        while start < word.len() {
            let mut end = word.len();
            let found = loop {
                piece.clear();
                if start > 0 {
                    piece.push_str("##");
                }
                piece.push_str(&word[start..end]);
                if let Some(&id) = self.ids.get(&piece) {
                    break Some((id, end));
                }
                match word[start..end].char_indices().next_back() {
                    Some((last, _)) if last > 0 => end = start + last,
                    _ => break None,
                }
            };
            let Some((id, next)) = found else {
                out.truncate(mark);
                out.push(self.unknown);
                return;
            };
            out.push(id);
            start = next;
        }
    }
}

/// Cleaning, CJK spacing, lowercasing and accent stripping.
fn normalise(text: &str) -> String {
    let mut spaced = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '\0' || c == '\u{fffd}' || is_control(c) {
            continue;
        }
        if is_whitespace(c) {
            spaced.push(' ');
        } else if is_cjk(c) {
            spaced.push(' ');
            spaced.push(c);
            spaced.push(' ');
        } else {
            spaced.push(c);
        }
    }
    spaced
        .to_lowercase()
        .nfd()
        .filter(|&c| c.is_ascii() || !Category::NonspacingMark.has(c))
        .collect()
}

/// Whitespace-separated words, each punctuation character a word of its own.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for chunk in text.split(' ').filter(|w| !w.is_empty()) {
        let mut word = String::new();
        for c in chunk.chars() {
            if is_punctuation(c) {
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
                out.push(c.to_string());
            } else {
                word.push(c);
            }
        }
        if !word.is_empty() {
            out.push(word);
        }
    }
    out
}

fn is_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || c.is_whitespace()
}

/// Unicode's "other" categories (Cc, Cf, Cs, Co, Cn) but for tabs and line ends.
fn is_control(c: char) -> bool {
    !matches!(c, '\t' | '\n' | '\r') && Category::Other.has(c)
}

/// ASCII symbols count as punctuation (as in the reference), and Unicode's punctuation
/// categories (Pc, Pd, Ps, Pe, Pi, Pf, Po).
fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation() || (!c.is_ascii() && Category::Punctuation.has(c))
}

/// The general categories the reference consults, looked up through `regex`'s Unicode
/// tables.
#[derive(Clone, Copy)]
enum Category {
    Other,
    Punctuation,
    NonspacingMark,
}

impl Category {
    fn has(self, c: char) -> bool {
        use std::sync::OnceLock;
        if c.is_ascii() {
            return match self {
                Category::Other => c.is_ascii_control(),
                Category::Punctuation => c.is_ascii_punctuation(),
                Category::NonspacingMark => false,
            };
        }
        static CLASSES: OnceLock<[regex::Regex; 3]> = OnceLock::new();
        let classes = CLASSES.get_or_init(|| {
            [r"^\p{C}$", r"^\p{P}$", r"^\p{Mn}$"]
                .map(|class| regex::Regex::new(class).expect("a valid class"))
        });
        let mut buf = [0u8; 4];
        classes[self as usize].is_match(c.encode_utf8(&mut buf))
    }
}

/// The CJK Unified Ideographs blocks the reference spaces out (not Hiragana, Katakana or
/// Hangul).
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F | 0x2B920..=0x2CEAF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}
