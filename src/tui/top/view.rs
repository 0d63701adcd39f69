//! Draws `top`'s state (reads it only): a header, one line per process and per upstream in
//! fixed columns (fits 80 columns), a footer with the keys or the last action's answer; the
//! log pane over the list when open.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;

use crate::observe::snapshot::{Process, Upstream};
use crate::tui::theme::Theme;

use super::app::{App, LogPane, KEYS};

/// The widths of the figure columns after the name (state, calls/s, p50, p99, errors,
/// restarts, idle, tokens cut).
const COLUMNS: [(&str, usize); 8] = [
    ("STATE", 12),
    ("CALL/S", 7),
    ("P50", 8),
    ("P99", 8),
    ("ERR", 5),
    ("RST", 4),
    ("IDLE", 6),
    ("CUT TOK", 7),
];

/// Draws the whole screen.
pub fn draw(app: &App, theme: &Theme, frame: &mut Frame) {
    let [header, body, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    frame.render_widget(Paragraph::new(header_line(app, theme)), header);
    match &app.log {
        Some(pane) => draw_log(pane, theme, frame, body),
        None => draw_list(app, theme, frame, body),
    }
    frame.render_widget(Paragraph::new(footer_line(app, theme)), footer);
}

fn header_line(app: &App, theme: &Theme) -> Line<'static> {
    let count = app.snapshot.as_ref().map(|s| s.processes.len());
    let what = match count {
        None => "reading…".to_string(),
        Some(1) => "1 process".to_string(),
        Some(n) => format!("{n} processes"),
    };
    let window = app.snapshot.as_ref().map_or(0, |s| s.latency_window_ms);
    let sort = app.sort.word();
    Line::from(vec![
        Span::styled("mcp-launch top", theme.title),
        Span::styled(
            format!(" · {what} · {} · sort: {sort}", latency_window(window)),
            theme.dim,
        ),
    ])
}

/// What the p50/p99 columns cover: the calls of the last `window_ms` (at most a minute).
fn latency_window(window_ms: u64) -> String {
    match window_ms {
        0 => "p50/p99 from the next sample".to_string(),
        ms => format!("p50/p99 of the last {} s", ms.div_ceil(1000)),
    }
}

fn footer_line(app: &App, theme: &Theme) -> Line<'static> {
    if app.log.is_some() {
        return Line::styled("↑↓ PgUp PgDn scroll · g/G top/end · Esc close", theme.dim);
    }
    match &app.notice {
        Some(Ok(text)) => Line::styled(text.clone(), theme.good),
        Some(Err(text)) => Line::styled(text.clone(), theme.bad),
        None => {
            let mut spans = Vec::new();
            for (key, what) in KEYS {
                spans.push(Span::styled(*key, theme.key));
                spans.push(Span::styled(format!(" {what}  "), theme.dim));
            }
            Line::from(spans)
        }
    }
}

fn draw_list(app: &App, theme: &Theme, frame: &mut Frame, area: Rect) {
    let name_width = usize::from(area.width)
        .saturating_sub(COLUMNS.iter().map(|(_, w)| w + 1).sum())
        .max(10);
    let mut lines = vec![column_heads(name_width, theme)];
    let rows = app.rows();
    let Some(snapshot) = &app.snapshot else {
        frame.render_widget(Paragraph::new(lines), area);
        return;
    };
    if rows.is_empty() {
        lines.push(Line::styled(
            "nothing runs (start `mcp-launch serve --daemon`, `serve --http` or `up`)",
            theme.dim,
        ));
    }
    let cursor = app.cursor(&rows);
    // From the row that keeps the cursor in view (the heads line takes one).
    let visible = usize::from(area.height).saturating_sub(1).max(1);
    let skip = (cursor + 1).saturating_sub(visible);
    for (at, row) in rows.iter().enumerate().skip(skip) {
        let process = &snapshot.processes[row.process];
        let mut line = match row.upstream {
            None => process_line(process, usize::from(area.width), theme),
            Some(u) => upstream_line(&process.upstreams[u], name_width, theme),
        };
        if at == cursor {
            line = line.style(theme.selected);
        }
        lines.push(line);
    }
    frame.render_widget(Paragraph::new(lines), area);
}

fn column_heads(name_width: usize, theme: &Theme) -> Line<'static> {
    let mut text = format!("{:name_width$}", "SERVER");
    for (head, width) in COLUMNS {
        text.push_str(&format!(" {head:>width$}"));
    }
    Line::styled(text, theme.title)
}

/// `daemon 4242 · sparse · 1.5 req/s · config.json`, across the whole line.
fn process_line(process: &Process, width: usize, theme: &Theme) -> Line<'static> {
    let mut parts = vec![format!("{} {}", process.kind, process.pid)];
    if !process.stacks.is_empty() {
        parts.push(process.stacks.join(","));
    }
    parts.extend(process.address.clone());
    parts.extend(process.mode.clone());
    if let Some(rate) = process.requests_per_s {
        parts.push(format!("{rate} req/s"));
    }
    let configs: Vec<String> = process
        .configs
        .iter()
        .filter_map(|c| c.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    if !configs.is_empty() {
        parts.push(configs.join(","));
    }
    if let Some(error) = &process.error {
        parts.push(error.clone());
    }
    let text: String = parts.join(" · ").chars().take(width).collect();
    let style = if process.error.is_some() {
        theme.warn
    } else {
        theme.title
    };
    Line::styled(text, style)
}

fn upstream_line(upstream: &Upstream, name_width: usize, theme: &Theme) -> Line<'static> {
    let name: String = upstream.name.chars().take(name_width - 2).collect();
    let state_style = match upstream.state.as_str() {
        "up" => theme.good,
        "down" | "exited" => theme.bad,
        "restarting" => theme.warn,
        _ => theme.dim,
    };
    let figures = [
        rate(upstream.calls_per_s),
        millis(upstream.p50_ms),
        millis(upstream.p99_ms),
        upstream.errors.to_string(),
        upstream.restarts.to_string(),
        upstream.idle_s.map_or("-".into(), seconds),
        count(upstream.cut_tokens),
    ];
    let mut spans = vec![
        Span::raw(format!("  {name:w$}", w = name_width - 2)),
        Span::styled(format!(" {:>12}", clip(&upstream.state, 12)), state_style),
    ];
    for (text, (_, width)) in figures.iter().zip(&COLUMNS[1..]) {
        spans.push(Span::raw(format!(" {text:>width$}")));
    }
    Line::from(spans)
}

fn clip(text: &str, width: usize) -> String {
    text.chars().take(width).collect()
}

fn rate(per_s: Option<f64>) -> String {
    match per_s {
        None => "-".into(),
        Some(r) if r >= 100.0 => format!("{r:.0}"),
        Some(r) => format!("{r:.1}"),
    }
}

fn millis(ms: Option<f64>) -> String {
    match ms {
        None => "-".into(),
        Some(ms) if ms >= 10_000.0 => format!("{:.0}s", ms / 1000.0),
        Some(ms) if ms >= 1000.0 => format!("{:.1}s", ms / 1000.0),
        Some(ms) if ms >= 10.0 => format!("{ms:.0}ms"),
        Some(ms) => format!("{ms:.2}ms"),
    }
}

fn seconds(s: u64) -> String {
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        _ => format!("{}h", s / 3600),
    }
}

/// `812`, `12K`, `1.5M`.
fn count(n: u64) -> String {
    match n {
        0..1000 => n.to_string(),
        1000..1_000_000 => format!("{}K", n / 1000),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

fn draw_log(pane: &LogPane, theme: &Theme, frame: &mut Frame, area: Rect) {
    let block = Block::default()
        .borders(Borders::ALL)
        .title(Span::styled(format!(" log · {} ", pane.title), theme.title));
    let inner = usize::from(block.inner(area).height).max(1);
    let lines: Vec<Line> = match &pane.lines {
        Err(why) => vec![Line::styled(why.clone(), theme.warn)],
        Ok(lines) => {
            let end = lines.len().saturating_sub(pane.from_end);
            let start = end.saturating_sub(inner);
            lines[start..end]
                .iter()
                .map(|l| Line::raw(l.clone()))
                .collect()
        }
    };
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_read_short() {
        assert_eq!(millis(Some(0.4213)), "0.42ms");
        assert_eq!(millis(Some(1534.0)), "1.5s");
        assert_eq!(seconds(125), "2m");
        assert_eq!(count(12_345), "12K");
        assert_eq!(rate(Some(2.25)), "2.2");
    }
}
