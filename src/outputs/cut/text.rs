//! Text cut after a whole line, or inside the first line on a character boundary when that
//! line alone is over the budget.

use crate::outputs::measure::{cost_within, prefix_within, tokens};

/// Where a text was cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextCut {
    /// Bytes kept (a prefix of the text, ending on a character boundary).
    pub end: usize,
    /// Whole lines kept.
    pub kept_lines: usize,
    /// True when the first line alone was over and only its beginning is kept.
    pub is_mid_line: bool,
}

/// Cuts `text` to at most `limit` tokens after a whole line; `None` when it fits.
pub fn cut_text(text: &str, limit: usize) -> Option<TextCut> {
    if text.len() <= limit {
        return None;
    }
    let (mut used, mut end, mut lines) = (0usize, 0usize, 0usize);
    for line in text.split_inclusive('\n') {
        match cost_within(line, limit - used) {
            Some(cost) => {
                used += cost;
                end += line.len();
                lines += 1;
            }
            None => break,
        }
    }
    if end == text.len() {
        return None;
    }
    // Lines counted one by one may tokenize a little differently joined: check, drop lines.
    while lines > 0 && tokens(&text[..end]) > limit {
        end = text[..end - 1].rfind('\n').map_or(0, |i| i + 1);
        lines -= 1;
    }
    if lines == 0 {
        return Some(TextCut {
            end: prefix_within(text, limit),
            kept_lines: 0,
            is_mid_line: true,
        });
    }
    Some(TextCut {
        end,
        kept_lines: lines,
        is_mid_line: false,
    })
}

/// The lines of `text` (a last line without a newline counts).
pub fn count_lines(text: &[u8]) -> usize {
    let newlines = text.iter().filter(|b| **b == b'\n').count();
    newlines + usize::from(!text.is_empty() && !text.ends_with(b"\n"))
}
