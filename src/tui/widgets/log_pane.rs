//! The log pane of the results screen: every line our processes and stacks report, kept up to
//! a bound, scrolled (following the end unless the operator scrolls up), wrapped or clipped,
//! searched with `/`, `n` and `N`.

use std::collections::VecDeque;

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use ratatui::Frame;

use super::super::theme::Theme;

/// Lines kept; older ones are dropped (a long-running stack must not grow without bound).
pub const MAX_LINES: usize = 10_000;

/// The pane's lines and view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogPane {
    /// The lines, oldest first.
    pub lines: VecDeque<String>,
    /// The last line shown (an index into `lines`), when not following the end.
    pub pinned: Option<usize>,
    /// Long lines wrap (else they are clipped).
    pub wrap: bool,
    /// The pane is shown.
    pub visible: bool,
    /// The search text.
    pub search: String,
    /// Keys go to the search text.
    pub searching: bool,
}

impl Default for LogPane {
    fn default() -> Self {
        LogPane {
            lines: VecDeque::new(),
            pinned: None,
            wrap: true,
            visible: true,
            search: String::new(),
            searching: false,
        }
    }
}

impl LogPane {
    /// Appends a line (dropping the oldest beyond [`MAX_LINES`]).
    pub fn push(&mut self, line: String) {
        if self.lines.len() == MAX_LINES {
            self.lines.pop_front();
            self.pinned = self.pinned.map(|p| p.saturating_sub(1));
        }
        self.lines.push_back(line);
    }

    /// The index of the last line shown.
    pub fn last_shown(&self) -> usize {
        self.pinned
            .unwrap_or(self.lines.len().saturating_sub(1))
            .min(self.lines.len().saturating_sub(1))
    }

    /// Scrolls by `delta` lines (negative: up, towards older lines); reaching the end follows
    /// it again.
    pub fn scroll(&mut self, delta: isize) {
        let end = self.lines.len().saturating_sub(1);
        let at = self.last_shown().saturating_add_signed(delta).min(end);
        self.pinned = (at < end).then_some(at);
    }

    /// Follows the end again.
    pub fn follow(&mut self) {
        self.pinned = None;
    }

    /// Moves to the next line matching the search, older (`backwards`) or newer than the last
    /// one shown. False when nothing matches.
    pub fn find(&mut self, backwards: bool) -> bool {
        if self.search.is_empty() {
            return false;
        }
        let needle = self.search.to_lowercase();
        let matches = |i: &usize| self.lines[*i].to_lowercase().contains(&needle);
        let from = self.last_shown();
        let found = if backwards {
            (0..from).rev().find(matches)
        } else {
            (from + 1..self.lines.len()).find(matches)
        };
        match found {
            Some(i) => {
                self.pinned = Some(i);
                true
            }
            None => false,
        }
    }

    /// Draws the lines that end at the last one shown.
    pub fn render(&self, frame: &mut Frame, area: Rect, theme: &Theme) {
        let height = area.height.saturating_sub(1) as usize;
        let end = if self.lines.is_empty() {
            0
        } else {
            self.last_shown() + 1
        };
        let start = end.saturating_sub(height);
        let needle = self.search.to_lowercase();
        let lines: Vec<Line> = self
            .lines
            .range(start..end)
            .map(|text| {
                let hit = !needle.is_empty() && text.to_lowercase().contains(&needle);
                let style = if hit {
                    theme.selected
                } else if text.contains("WARN") || text.contains("warning") {
                    theme.warn
                } else if text.contains("ERROR") {
                    theme.bad
                } else {
                    ratatui::style::Style::new()
                };
                Line::styled(text.clone(), style)
            })
            .collect();
        let mode = match (self.pinned, self.searching) {
            (_, true) => format!(" log · search /{}▏ ", self.search),
            (None, _) => " log · following ".to_string(),
            (Some(at), _) => format!(" log · line {} of {} ", at + 1, self.lines.len()),
        };
        let block = Block::new()
            .borders(Borders::TOP)
            .border_style(theme.dim)
            .title(Span::styled(mode, theme.dim));
        let mut paragraph = Paragraph::new(lines).block(block);
        if self.wrap {
            paragraph = paragraph.wrap(Wrap { trim: false });
        }
        frame.render_widget(paragraph, area);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pane(n: usize) -> LogPane {
        let mut pane = LogPane::default();
        for i in 0..n {
            pane.push(format!("line {i}"));
        }
        pane
    }

    #[test]
    fn scrolling_up_pins_and_reaching_the_end_follows() {
        let mut p = pane(10);
        assert_eq!(p.last_shown(), 9);
        p.scroll(-3);
        assert_eq!((p.pinned, p.last_shown()), (Some(6), 6));
        p.push("new".into());
        assert_eq!(p.last_shown(), 6, "pinned lines stay put");
        p.scroll(100);
        assert_eq!(p.pinned, None, "back at the end: following");
    }

    #[test]
    fn search_moves_between_matches_both_ways() {
        let mut p = pane(20);
        p.search = "line 1".into();
        assert!(p.find(true), "older: line 19 is shown, line 18… match");
        assert_eq!(p.last_shown(), 19 - 1);
        assert!(p.find(true));
        assert_eq!(p.last_shown(), 17);
        assert!(p.find(false));
        assert_eq!(p.last_shown(), 18);
        p.search = "nothing".into();
        assert!(!p.find(true));
    }

    #[test]
    fn the_oldest_lines_go_beyond_the_bound() {
        let p = pane(MAX_LINES + 5);
        assert_eq!(p.lines.len(), MAX_LINES);
        assert_eq!(p.lines.front().unwrap(), "line 5");
    }
}
