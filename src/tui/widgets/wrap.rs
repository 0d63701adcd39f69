//! Styled text fitted to a width for the diff's columns: wrapped at word boundaries (a word
//! longer than a row cut by character) or clipped from a column on, by display width (CJK and
//! emoji take two columns). `Paragraph`'s own wrapping cannot be used: side by side, each
//! column's rows must be known to line the two columns up.

use ratatui::style::Style;
use ratatui::text::Span;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// Pads `spans` with spaces to `width` columns (or cuts nothing: rows are built to fit).
pub(super) fn pad(spans: &mut Vec<Span<'_>>, width: usize) {
    let used: usize = spans.iter().map(|s| s.content.width()).sum();
    if used < width {
        spans.push(Span::raw(" ".repeat(width - used)));
    }
}

fn char_width(c: char) -> usize {
    c.width().unwrap_or(0)
}

/// Appends `text` in `style` to `row`, joining the last span when the style is the same.
fn push_text(row: &mut Vec<Span<'static>>, text: &str, style: Style) {
    match row.last_mut() {
        Some(last) if last.style == style => last.content.to_mut().push_str(text),
        _ => row.push(Span::styled(text.to_string(), style)),
    }
}

/// Runs of whitespace and of anything else, in order; together they are `text`.
fn tokens(text: &str) -> Vec<&str> {
    let mut tokens = Vec::new();
    let mut start = 0;
    let mut blank: Option<bool> = None;
    for (i, c) in text.char_indices() {
        let is_blank = c.is_whitespace();
        if blank.is_some_and(|b| b != is_blank) {
            tokens.push(&text[start..i]);
            start = i;
        }
        blank = Some(is_blank);
    }
    if start < text.len() {
        tokens.push(&text[start..]);
    }
    tokens
}

/// Styled text wrapped into rows of at most `width` columns: breaks fall at whitespace (which
/// is dropped there); a word longer than a row is cut by character. Always one row at least.
pub(super) fn wrap_runs(runs: &[(String, Style)], width: usize) -> Vec<Vec<Span<'static>>> {
    let mut rows: Vec<Vec<Span<'static>>> = vec![Vec::new()];
    if width == 0 {
        return rows;
    }
    let mut used = 0;
    for (text, style) in runs {
        for token in tokens(text) {
            let w = token.width();
            let blank = token.chars().all(char::is_whitespace);
            let row = rows.last_mut().expect("rows starts with one row");
            if used + w <= width {
                push_text(row, token, *style);
                used += w;
            } else if blank {
                // The break falls here; a row never starts with the spaces that caused it.
                if used > 0 {
                    rows.push(Vec::new());
                    used = 0;
                }
            } else if w <= width {
                rows.push(Vec::new());
                push_text(rows.last_mut().expect("just pushed"), token, *style);
                used = w;
            } else {
                // Longer than a row: it starts on a row of its own, cut by character.
                if used > 0 {
                    rows.push(Vec::new());
                    used = 0;
                }
                for c in token.chars() {
                    let cw = char_width(c);
                    if used + cw > width {
                        rows.push(Vec::new());
                        used = 0;
                    }
                    let mut buf = [0u8; 4];
                    push_text(
                        rows.last_mut().expect("rows is never empty"),
                        c.encode_utf8(&mut buf),
                        *style,
                    );
                    used += cw;
                }
            }
        }
    }
    rows
}

/// Styled text from column `offset` on, at most `width` columns of it, on one row.
pub(super) fn clip_runs(
    runs: &[(String, Style)],
    offset: usize,
    width: usize,
) -> Vec<Span<'static>> {
    let mut row = Vec::new();
    let mut column = 0;
    for (text, style) in runs {
        for c in text.chars() {
            let cw = char_width(c);
            let starts = column;
            column += cw;
            if starts < offset {
                continue;
            }
            if column > offset + width {
                return row;
            }
            let mut buf = [0u8; 4];
            push_text(&mut row, c.encode_utf8(&mut buf), *style);
        }
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_breaks_at_spaces_and_cuts_long_words() {
        let style = Style::default();
        let rows = wrap_runs(&[("ab cdefghij k".into(), style)], 4);
        let rows: Vec<String> = rows
            .iter()
            .map(|r| r.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        assert_eq!(rows, ["ab ", "cdef", "ghij", "k"]);
        assert_eq!(wrap_runs(&[(String::new(), style)], 4).len(), 1);
        let wide = clip_runs(&[("日本語テキスト".into(), style)], 2, 5);
        assert_eq!(wide[0].content, "本語");
    }
}
