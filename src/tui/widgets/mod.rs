//! Small pieces every screen uses: the status badge with its spinner, the key hints, the
//! status bar and the help overlay; the description diff in `diff` (its text fitting in
//! `wrap`).

pub mod diff;
pub mod log_pane;
mod wrap;

use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Row as TableRow, Table};
use ratatui::Frame;
use unicode_width::UnicodeWidthStr;

use super::app::App;
use super::component::Command;
use super::model::Badge;
use super::theme::Theme;

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// The spinner's frame at `tick`.
pub fn spinner(tick: u64) -> &'static str {
    SPINNER[(tick % SPINNER.len() as u64) as usize]
}

/// `⠙ checking`, `ok`, `error`… in its style.
pub fn badge_span(badge: Badge, tick: u64, t: &Theme) -> Span<'static> {
    match badge {
        Badge::Checking => Span::styled(format!("{} {}", spinner(tick), badge.label()), t.warn),
        Badge::Ok => Span::styled(badge.label(), t.good),
        Badge::Slow | Badge::NeedsLogin => Span::styled(badge.label(), t.warn),
        Badge::Error => Span::styled(badge.label(), t.bad),
        Badge::Disabled => Span::styled(badge.label(), t.dim),
    }
}

/// The status bar's hints: what `commands` name for it, then `? help · q quit` — except while
/// text is `typing`: `?` and `q` are letters then, so naming them as commands would mislead.
pub fn status_hints(commands: &[Command], typing: bool, t: &Theme) -> Line<'static> {
    let always: &[(&str, &str)] = if typing {
        &[]
    } else {
        &[("?", "help"), ("q", "quit")]
    };
    let named = commands.iter().flat_map(|c| c.bar.iter());
    hints_line(named.chain(always), t)
}

fn hints_line<'k>(keys: impl Iterator<Item = &'k (&'k str, &'k str)>, t: &Theme) -> Line<'static> {
    let mut spans = vec![Span::raw(" ")];
    for (i, (key, action)) in keys.enumerate() {
        if i > 0 {
            spans.push(Span::styled(" · ", t.dim));
        }
        spans.push(Span::styled(key.to_string(), t.key));
        spans.push(Span::raw(format!(" {action}")));
    }
    Line::from(spans)
}

/// A box of `width` × `height` (cut to fit) in the middle of `area`, for an overlay.
pub fn popup(area: Rect, width: u16, height: u16) -> Rect {
    let [popup] = Layout::horizontal([Constraint::Length(width.min(area.width))])
        .flex(Flex::Center)
        .areas(area);
    let [popup] = Layout::vertical([Constraint::Length(height.min(area.height))])
        .flex(Flex::Center)
        .areas(popup);
    popup
}

/// The last line: the quit question, a notice, or the screen's keys.
pub fn render_status_bar(frame: &mut Frame, area: Rect, app: &App, hints: Line<'static>) {
    let t = &app.theme;
    let line = if app.confirm_quit {
        Line::from(vec![
            Span::styled(" Quit and stop everything we started? ", t.warn),
            Span::styled("y", t.key),
            Span::raw("/"),
            Span::styled("enter", t.key),
            Span::raw(" yes · any other key no"),
        ])
    } else if let Some(notice) = &app.notice {
        let style = if notice.is_error { t.bad } else { t.good };
        Line::styled(format!(" {}", notice.text), style)
    } else {
        hints
    };
    frame.render_widget(Paragraph::new(line), area);
}

/// The help's keys column.
const HELP_KEYS_WIDTH: u16 = 15;

/// The `?` overlay: the current screen's keys and the global ones, centred.
pub fn render_help(frame: &mut Frame, area: Rect, t: &Theme, commands: &[Command]) {
    let global: &[(&str, &str)] = &[
        ("?", "close this help"),
        ("q / ctrl-c", "quit (asks first)"),
    ];
    let entries: Vec<(&str, &str)> = commands
        .iter()
        .map(|c| (c.keys, c.help))
        .chain(global.iter().copied())
        .collect();
    // As wide as the longest line needs (keys column, gap, text, borders), at least 60.
    let widest = entries
        .iter()
        .map(|(_, action)| HELP_KEYS_WIDTH + 1 + action.width() as u16 + 2)
        .max()
        .unwrap_or(0);
    let rows: Vec<TableRow> = entries
        .into_iter()
        .map(|(key, action)| {
            TableRow::new(vec![
                Span::styled(key.to_string(), t.key),
                Span::raw(action.to_string()),
            ])
        })
        .collect();
    let popup = popup(area, widest.max(60), rows.len() as u16 + 2);
    frame.render_widget(Clear, popup);
    let table = Table::new(
        rows,
        [Constraint::Length(HELP_KEYS_WIDTH), Constraint::Fill(1)],
    )
    .block(
        Block::new()
            .borders(Borders::ALL)
            .border_style(t.dim)
            .title(Span::styled(" keys ", t.title)),
    );
    frame.render_widget(table, popup);
}
