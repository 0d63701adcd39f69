//! The diff of a tool's description: the server's original against the text clients see (or
//! the text being edited). Lines are compared first; within a line replaced by another, words
//! are — descriptions are mostly one long line, so a line diff alone would show two walls of
//! text with nothing to say which words changed.
//!
//! Two layouts: unified (`-` rows, then `+` rows) and side by side (original left, current
//! right, rows aligned). Long lines are wrapped at word boundaries, or clipped and scrolled
//! sideways. Every row carries its `-`/`+` marker, and changed words are reversed, so the diff
//! reads without colour (`NO_COLOR`) as well as in the text snapshots.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};
use similar::{ChangeTag, DiffOp, TextDiff};
use unicode_width::UnicodeWidthStr;

use super::super::theme::Theme;
use super::wrap::{clip_runs, pad, wrap_runs};

/// How the two texts are laid out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DiffLayout {
    /// Removed rows (`-`), then added rows (`+`), in one column.
    #[default]
    Unified,
    /// The original on the left, the current text on the right.
    SideBySide,
}

impl DiffLayout {
    /// The other layout (the toggle key).
    pub fn toggled(self) -> DiffLayout {
        match self {
            DiffLayout::Unified => DiffLayout::SideBySide,
            DiffLayout::SideBySide => DiffLayout::Unified,
        }
    }

    /// The name shown in headers.
    pub fn label(self) -> &'static str {
        match self {
            DiffLayout::Unified => "unified",
            DiffLayout::SideBySide => "side by side",
        }
    }
}

/// A stretch of one side's line, and whether the other side lacks it (shown emphasised).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Piece {
    text: String,
    changed: bool,
}

/// One line of the diff.
#[derive(Debug, Clone, PartialEq, Eq)]
enum DiffLine {
    /// The same on both sides.
    Same(String),
    /// A line only the original has (`new: None`), only the current text has (`old: None`),
    /// or one replaced by another (both, words marked).
    Changed {
        old: Option<Vec<Piece>>,
        new: Option<Vec<Piece>>,
    },
}

/// Compares `old` with `new`: lines first, then words within lines replaced one for one.
fn diff_lines(old: &str, new: &str) -> Vec<DiffLine> {
    // A last line without its newline would differ from the same line with one.
    let (old, new) = (ending_in_newline(old), ending_in_newline(new));
    let diff = TextDiff::from_lines(old.as_str(), new.as_str());
    let olds: Vec<&str> = diff.old_slices().iter().map(|l| without_eol(l)).collect();
    let news: Vec<&str> = diff.new_slices().iter().map(|l| without_eol(l)).collect();
    let whole = |text: &str| {
        Some(vec![Piece {
            text: text.to_string(),
            changed: false,
        }])
    };
    let mut lines = Vec::new();
    for op in diff.ops() {
        match *op {
            DiffOp::Equal { old_index, len, .. } => lines.extend(
                olds[old_index..old_index + len]
                    .iter()
                    .map(|l| DiffLine::Same(l.to_string())),
            ),
            DiffOp::Delete {
                old_index, old_len, ..
            } => lines.extend(olds[old_index..old_index + old_len].iter().map(|l| {
                DiffLine::Changed {
                    old: whole(l),
                    new: None,
                }
            })),
            DiffOp::Insert {
                new_index, new_len, ..
            } => lines.extend(news[new_index..new_index + new_len].iter().map(|l| {
                DiffLine::Changed {
                    old: None,
                    new: whole(l),
                }
            })),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                for i in 0..old_len.max(new_len) {
                    let o = (i < old_len).then(|| olds[old_index + i]);
                    let n = (i < new_len).then(|| news[new_index + i]);
                    lines.push(match (o, n) {
                        (Some(o), Some(n)) => {
                            let (old, new) = word_diff(o, n);
                            DiffLine::Changed {
                                old: Some(old),
                                new: Some(new),
                            }
                        }
                        (o, n) => DiffLine::Changed {
                            old: o.and_then(whole),
                            new: n.and_then(whole),
                        },
                    });
                }
            }
        }
    }
    lines
}

fn ending_in_newline(text: &str) -> String {
    let mut text = text.to_string();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

fn without_eol(line: &str) -> &str {
    line.strip_suffix('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .unwrap_or(line)
}

/// The two lines as pieces, the words only one of them has marked.
fn word_diff(old: &str, new: &str) -> (Vec<Piece>, Vec<Piece>) {
    let diff = TextDiff::from_words(old, new);
    let (mut left, mut right) = (Vec::new(), Vec::new());
    for change in diff.iter_all_changes() {
        let text = change.value();
        match change.tag() {
            ChangeTag::Equal => {
                push_piece(&mut left, text, false);
                push_piece(&mut right, text, false);
            }
            ChangeTag::Delete => push_piece(&mut left, text, true),
            ChangeTag::Insert => push_piece(&mut right, text, true),
        }
    }
    (bridge_spaces(left), bridge_spaces(right))
}

/// Marks the spaces between two changed stretches as changed too: "`new words`" reads as one
/// change, not as two with an unchanged space between.
fn bridge_spaces(pieces: Vec<Piece>) -> Vec<Piece> {
    let mut bridged: Vec<Piece> = Vec::with_capacity(pieces.len());
    for (i, piece) in pieces.iter().enumerate() {
        let between_changes =
            i > 0 && pieces.get(i + 1).is_some_and(|next| next.changed) && pieces[i - 1].changed;
        let changed = piece.changed || (between_changes && piece.text.trim().is_empty());
        push_piece(&mut bridged, &piece.text, changed);
    }
    bridged
}

fn push_piece(pieces: &mut Vec<Piece>, text: &str, changed: bool) {
    match pieces.last_mut() {
        Some(last) if last.changed == changed => last.text.push_str(text),
        _ => pieces.push(Piece {
            text: text.to_string(),
            changed,
        }),
    }
}

/// Draws the diff of two texts, with a header naming each side.
#[derive(Debug, Clone)]
pub struct DiffView<'a> {
    lines: Vec<DiffLine>,
    labels: [Line<'a>; 2],
    layout: DiffLayout,
    wrap: bool,
    scroll: usize,
    hscroll: usize,
    styles: Styles,
}

/// The styles of the three kinds of rows.
#[derive(Debug, Clone, Copy)]
struct Styles {
    same: Style,
    removed: Style,
    added: Style,
    dim: Style,
}

impl<'a> DiffView<'a> {
    /// The diff of `old` against `new`, unified and wrapped, headed by `old_label` and
    /// `new_label`.
    pub fn new(old: &str, new: &str, labels: [Line<'a>; 2], theme: &Theme) -> DiffView<'a> {
        DiffView {
            lines: diff_lines(old, new),
            labels,
            layout: DiffLayout::Unified,
            wrap: true,
            scroll: 0,
            hscroll: 0,
            styles: Styles {
                same: Style::default(),
                removed: theme.bad,
                added: theme.good,
                dim: theme.dim,
            },
        }
    }

    /// Lays it out as `layout`.
    pub fn layout(mut self, layout: DiffLayout) -> Self {
        self.layout = layout;
        self
    }

    /// Wraps long lines (`true`) or clips them, `hscroll` columns in.
    pub fn wrap(mut self, wrap: bool, hscroll: usize) -> Self {
        self.wrap = wrap;
        self.hscroll = hscroll;
        self
    }

    /// Starts `rows` rows down (clamped when drawn, so the last row stays at the bottom).
    pub fn scroll(mut self, rows: usize) -> Self {
        self.scroll = rows;
        self
    }

    /// The rows below the header at `width` columns, before scrolling.
    pub fn rows(&self, width: u16) -> Vec<Line<'static>> {
        let width = usize::from(width);
        if self.lines.is_empty() {
            return vec![Line::styled("(both empty)", self.styles.dim)];
        }
        match self.layout {
            DiffLayout::Unified => self.unified_rows(width),
            DiffLayout::SideBySide => self.side_by_side_rows(width),
        }
    }

    fn unified_rows(&self, width: usize) -> Vec<Line<'static>> {
        let s = self.styles;
        let mut rows = Vec::new();
        let mut emit = |marker: &'static str, style: Style, pieces: &[Piece]| {
            for row in self.fit(pieces, style, marker, width) {
                rows.push(Line::from(row));
            }
        };
        let mut i = 0;
        while i < self.lines.len() {
            if let DiffLine::Same(text) = &self.lines[i] {
                emit("  ", s.same, &[unchanged(text)]);
                i += 1;
                continue;
            }
            // A run of changed lines: all removed rows, then all added ones.
            let end = self.lines[i..]
                .iter()
                .position(|l| matches!(l, DiffLine::Same(_)))
                .map_or(self.lines.len(), |p| i + p);
            let run = &self.lines[i..end];
            for line in run {
                if let DiffLine::Changed { old: Some(old), .. } = line {
                    emit("- ", s.removed, old);
                }
            }
            for line in run {
                if let DiffLine::Changed { new: Some(new), .. } = line {
                    emit("+ ", s.added, new);
                }
            }
            i = end;
        }
        rows
    }

    fn side_by_side_rows(&self, width: usize) -> Vec<Line<'static>> {
        let s = self.styles;
        // Columns of equal width, so that a line the same on both sides wraps the same.
        let left_width = width.saturating_sub(SEPARATOR.width()) / 2;
        let right_width = left_width;
        let mut rows = Vec::new();
        for line in &self.lines {
            let (left, right) = match line {
                DiffLine::Same(text) => {
                    let pieces = [unchanged(text)];
                    (
                        self.fit(&pieces, s.same, "  ", left_width),
                        self.fit(&pieces, s.same, "  ", right_width),
                    )
                }
                DiffLine::Changed { old, new } => (
                    old.as_ref()
                        .map(|p| self.fit(p, s.removed, "- ", left_width))
                        .unwrap_or_default(),
                    new.as_ref()
                        .map(|p| self.fit(p, s.added, "+ ", right_width))
                        .unwrap_or_default(),
                ),
            };
            for k in 0..left.len().max(right.len()) {
                let mut spans = left.get(k).cloned().unwrap_or_default();
                pad(&mut spans, left_width);
                spans.push(Span::styled(SEPARATOR, s.dim));
                spans.extend(right.get(k).cloned().unwrap_or_default());
                rows.push(Line::from(spans));
            }
        }
        rows
    }

    /// `pieces` in `style` (changed ones reversed) as rows of `width` columns, each starting
    /// with `marker`: wrapped at word boundaries, or one row clipped `hscroll` columns in.
    fn fit(
        &self,
        pieces: &[Piece],
        style: Style,
        marker: &'static str,
        width: usize,
    ) -> Vec<Vec<Span<'static>>> {
        let runs: Vec<(String, Style)> = pieces
            .iter()
            .map(|p| {
                let text = p.text.replace('\t', "    ");
                let style = if p.changed {
                    style.add_modifier(Modifier::REVERSED)
                } else {
                    style
                };
                (text, style)
            })
            .collect();
        let content = width.saturating_sub(marker.len());
        let rows = if self.wrap {
            wrap_runs(&runs, content)
        } else {
            vec![clip_runs(&runs, self.hscroll, content)]
        };
        rows.into_iter()
            .map(|row| {
                let mut spans = vec![Span::styled(marker, style)];
                spans.extend(row);
                spans
            })
            .collect()
    }

    fn header(&self, width: usize) -> Vec<Line<'a>> {
        let [old, new] = self.labels.clone();
        match self.layout {
            DiffLayout::Unified => vec![
                prefixed("--- ", self.styles.removed, old),
                prefixed("+++ ", self.styles.added, new),
            ],
            DiffLayout::SideBySide => {
                let left_width = width.saturating_sub(SEPARATOR.width()) / 2;
                let mut spans = old.spans;
                pad(&mut spans, left_width);
                spans.push(Span::styled(SEPARATOR, self.styles.dim));
                spans.extend(new.spans);
                vec![Line::from(spans)]
            }
        }
    }
}

/// Between the two columns of the side-by-side layout.
const SEPARATOR: &str = " │ ";

fn unchanged(text: &str) -> Piece {
    Piece {
        text: text.to_string(),
        changed: false,
    }
}

fn prefixed<'a>(prefix: &'static str, style: Style, line: Line<'a>) -> Line<'a> {
    let mut spans = vec![Span::styled(prefix, style)];
    spans.extend(line.spans);
    Line::from(spans)
}

impl Widget for DiffView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let header = self.header(usize::from(area.width));
        let header_height = (header.len() as u16).min(area.height);
        let [head, body] = ratatui::layout::Layout::vertical([
            ratatui::layout::Constraint::Length(header_height),
            ratatui::layout::Constraint::Fill(1),
        ])
        .areas(area);
        Paragraph::new(header).render(head, buf);
        let rows = self.rows(area.width);
        let scroll = self
            .scroll
            .min(rows.len().saturating_sub(usize::from(body.height)));
        let visible: Vec<Line> = rows
            .into_iter()
            .skip(scroll)
            .take(usize::from(body.height))
            .collect();
        Paragraph::new(visible).render(body, buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(line: &Line) -> String {
        line.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    fn view(old: &str, new: &str) -> DiffView<'static> {
        DiffView::new(
            old,
            new,
            [Line::raw("original"), Line::raw("current")],
            &Theme::monochrome(),
        )
    }

    #[test]
    fn a_replaced_line_marks_the_words_that_changed() {
        let lines = diff_lines("Reads a file from disk", "Reads a file…");
        let [DiffLine::Changed {
            old: Some(old),
            new: Some(new),
        }] = lines.as_slice()
        else {
            panic!("one replaced line: {lines:?}")
        };
        let changed = |pieces: &[Piece]| -> String {
            pieces
                .iter()
                .filter(|p| p.changed)
                .map(|p| p.text.as_str())
                .collect()
        };
        assert_eq!(changed(old), "file from disk");
        assert_eq!(changed(new), "file…");
        assert!(old[0].text.starts_with("Reads a ") && !old[0].changed);
        let (_, new) = word_diff("Echoes back the input", "Says the input back");
        assert_eq!(
            new[0],
            Piece {
                text: "Says".into(),
                changed: true
            }
        );
        let (old, _) = word_diff("one two three four", "one 2 3 four");
        assert_eq!(
            old[1].text, "two three",
            "the space between is part of the change"
        );
    }

    #[test]
    fn lines_only_one_side_has_are_whole() {
        let lines = diff_lines("one\ntwo\nthree", "one\nthree\nfour");
        assert_eq!(lines[0], DiffLine::Same("one".into()));
        assert!(matches!(
            &lines[1],
            DiffLine::Changed {
                old: Some(_),
                new: None
            }
        ));
        assert_eq!(lines[2], DiffLine::Same("three".into()));
        assert!(matches!(
            &lines[3],
            DiffLine::Changed {
                old: None,
                new: Some(_)
            }
        ));
        assert!(diff_lines("", "").is_empty());
    }

    #[test]
    fn unified_rows_remove_then_add_with_a_marker_on_every_row() {
        let rows: Vec<String> = view("alpha beta gamma delta", "alpha beta")
            .rows(14)
            .iter()
            .map(|l| text(l).trim_end().to_string())
            .collect();
        assert_eq!(
            rows,
            ["- alpha beta", "- gamma delta", "+ alpha beta"],
            "wrapped at 12 columns of text"
        );
        let clipped: Vec<String> = view("alpha beta gamma delta", "alpha beta")
            .wrap(false, 6)
            .rows(14)
            .iter()
            .map(text)
            .collect();
        assert_eq!(clipped, ["- beta gamma d", "+ beta"]);
    }

    #[test]
    fn side_by_side_rows_line_up() {
        let v = view("one two three four five six seven", "one two").layout(DiffLayout::SideBySide);
        let rows: Vec<String> = v.rows(33).iter().map(text).collect();
        assert_eq!(rows.len(), 3, "{rows:#?}");
        for row in &rows {
            assert_eq!(row.find('│'), rows[0].find('│'), "{rows:#?}");
        }
        assert!(rows[0].starts_with("- one two three") && rows[0].ends_with("+ one two"));
        assert_eq!(rows[2].trim_end(), format!("{:<15} │", "- seven"));
        let header = v.header(33);
        assert_eq!(text(&header[0]).find('│'), rows[0].find('│'));
    }

    #[test]
    fn the_scroll_is_clamped_to_the_last_page() {
        let old = (0..30).map(|i| format!("line {i}\n")).collect::<String>();
        let mut buf = Buffer::empty(Rect::new(0, 0, 20, 6));
        view(&old, &old)
            .scroll(1_000)
            .render(Rect::new(0, 0, 20, 6), &mut buf);
        let last_row: String = (0..20).map(|x| buf[(x, 5)].symbol().to_string()).collect();
        assert_eq!(last_row.trim_end(), "  line 29");
    }
}
