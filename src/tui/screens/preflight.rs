//! The preflight: one row per server of every stack, filled in live as the parallel checks
//! finish, under a header with each stack's totals. Enter opens a server (or, for a failed
//! one, its error); `r` checks it again; space enables or disables it.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Block, Borders, Cell, HighlightSpacing, Paragraph, Row as TableRow, Table, TableState, Wrap,
};
use ratatui::Frame;

use unicode_width::UnicodeWidthStr;

use crate::catalog::trim_description;
use crate::error::Actionable;
use crate::output::clip;

use super::super::app::Screen;
use super::super::component::{Action, Command, Component, Ctx, Handled};
use super::super::model::{self, Badge, Row, ToolLine};
use super::super::widgets::badge_span;
use super::results::LaunchState;
use super::server::ServerView;
use crate::output::thousands;

/// The preflight screen's own state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreflightView {
    /// The selected row.
    pub selected: usize,
    /// The detail pane (the selected server's error or warnings) is open.
    pub detail: bool,
}

/// What the keys do (the help lists them all, the status bar the short ones).
const COMMANDS: &[Command] = &[
    Command::bar("↑↓ j k", "move", &[("↑↓", "move")]),
    Command::help("pgup pgdn", "page"),
    Command::help("g G home end", "first, last"),
    Command::bar(
        "enter → l",
        "open the server (its error, if it failed)",
        &[("enter", "open")],
    ),
    Command::bar(
        "d esc",
        "show or hide the details pane",
        &[("d", "details")],
    ),
    Command::bar(
        "space",
        "enable or disable the server",
        &[("space", "on/off")],
    ),
    Command::bar("r", "check the server again", &[("r", "retry")]),
    Command::help("R", "check every failed server again"),
    Command::bar(
        "L",
        "launch options (the results, once launched)",
        &[("L", "launch")],
    ),
];

impl Component for PreflightView {
    fn handle_key(&mut self, key: KeyEvent, ctx: &Ctx) -> Handled<Option<Action>> {
        let last = ctx.rows.len().saturating_sub(1);
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => self.selected = (self.selected + 1).min(last),
            KeyCode::PageUp => self.selected = self.selected.saturating_sub(10),
            KeyCode::PageDown => self.selected = (self.selected + 10).min(last),
            KeyCode::Home | KeyCode::Char('g') => self.selected = 0,
            KeyCode::End | KeyCode::Char('G') => self.selected = last,
            KeyCode::Char('d') => self.detail = !self.detail,
            KeyCode::Esc => self.detail = false,
            KeyCode::Enter | KeyCode::Right | KeyCode::Char('l') => return self.open(ctx),
            KeyCode::Char(' ') => return Handled::then(Action::ToggleServer(self.selected)),
            KeyCode::Char('r') => return Handled::then(Action::Retry(vec![self.selected])),
            KeyCode::Char('L') => return Handled::then(Action::Show(launch_or_results(ctx))),
            KeyCode::Char('R') => {
                let failed = (0..ctx.rows.len())
                    .filter(|&i| ctx.rows[i].badge(ctx.overrides) == Badge::Error)
                    .collect();
                return Handled::then(Action::Retry(failed));
            }
            _ => return Handled::Ignored,
        }
        Handled::done()
    }

    fn commands(&self) -> &'static [Command] {
        COMMANDS
    }

    fn is_typing(&self) -> bool {
        false
    }

    fn render(&self, frame: &mut Frame, area: Rect, ctx: &Ctx) {
        render(frame, area, self, ctx);
    }
}

/// `L`: launch again only when nothing runs (a first launch, or one where every stack
/// failed); otherwise show what runs.
fn launch_or_results(ctx: &Ctx) -> Screen {
    match ctx.launch {
        LaunchState::Idle => Screen::Launch,
        LaunchState::Done { stacks, .. } if stacks.is_empty() => Screen::Launch,
        _ => Screen::Results,
    }
}

impl PreflightView {
    /// Enter: a failed server shows its error; a checked one opens its tools.
    fn open(&mut self, ctx: &Ctx) -> Handled<Option<Action>> {
        let Some(row) = ctx.rows.get(self.selected) else {
            return Handled::done();
        };
        let action = match row.badge(ctx.overrides) {
            Badge::Error => {
                self.detail = !self.detail;
                return Handled::done();
            }
            Badge::Checking => Action::Say(format!("{} is still being checked", row.label())),
            Badge::NeedsLogin => Action::Say(format!(
                "{} needs login: run `{}`",
                row.label(),
                row.report().map_or_else(
                    || crate::auth::client::login_command(&row.entry.qualified, None, ctx.configs),
                    |report| report.login_command(ctx.configs)
                )
            )),
            _ if row.report().is_some_and(|r| r.has_tools()) => {
                Action::Show(Screen::Server(ServerView::new(self.selected)))
            }
            _ => Action::Say(format!(
                "{} has no tools to show (it is disabled)",
                row.label()
            )),
        };
        Handled::then(action)
    }
}

/// Draws the screen into `area`.
fn render(frame: &mut Frame, area: Rect, view: &PreflightView, app: &Ctx) {
    let header_height = app.stacks.len() as u16 + 1;
    let detail_height = if view.detail {
        (area.height / 3).max(6)
    } else {
        0
    };
    let [header, table, detail] = Layout::vertical([
        Constraint::Length(header_height),
        Constraint::Min(3),
        Constraint::Length(detail_height),
    ])
    .areas(area);
    render_header(frame, header, app);
    render_table(frame, table, app, view.selected);
    if view.detail {
        if let Some(row) = app.rows.get(view.selected) {
            render_detail(frame, detail, app, row);
        }
    }
}

fn render_header(frame: &mut Frame, area: Rect, app: &Ctx) {
    let t = app.theme;
    let checking = app
        .rows
        .iter()
        .filter(|r| r.badge(app.overrides) == Badge::Checking)
        .count();
    let mut title = vec![
        Span::styled(" mcp-launch · preflight ", t.title),
        Span::styled(
            format!(
                "{} stack(s) · {} server(s)",
                app.stacks.len(),
                app.rows.len()
            ),
            t.dim,
        ),
    ];
    if checking > 0 {
        title.push(Span::styled(format!(" · checking {checking}"), t.warn));
    }
    let mut lines = vec![Line::from(title)];
    let width = app
        .stacks
        .iter()
        .map(|s| s.chars().count())
        .max()
        .unwrap_or(0);
    for stack in app.stacks {
        let s = model::totals(app.stack_rows(stack), app.overrides);
        let mut spans = vec![
            Span::styled(format!(" {stack:width$}  "), t.title),
            Span::raw(format!(
                "{} server(s) · {}/{} tools · {} → {} tokens",
                s.servers,
                s.allowed,
                s.tools,
                thousands(s.tokens_before),
                thousands(s.tokens_after)
            )),
        ];
        if s.errors > 0 {
            spans.push(Span::styled(format!(" · {} error(s)", s.errors), t.bad));
        }
        let duplicates = model::duplicate_names(app.stack_rows(stack), app.overrides);
        if !duplicates.is_empty() {
            spans.push(Span::styled(
                format!(" · {} duplicate name(s)", duplicates.len()),
                t.warn,
            ));
        }
        if s.allowed > crate::launch::spec::CHATGPT_OPERATION_LIMIT {
            spans.push(Span::styled(
                format!(
                    " · over {} operations",
                    crate::launch::spec::CHATGPT_OPERATION_LIMIT
                ),
                t.warn,
            ));
        }
        lines.push(Line::from(spans));
    }
    frame.render_widget(Paragraph::new(lines), area);
}

/// Columns of the table that do not depend on the content: badge, transport, tools, tokens,
/// init time.
const FIXED_COLUMNS: [u16; 5] = [10, 9, 6, 6, 7];

/// The highlight symbol (`▸ `) and the one-column gaps between the seven columns.
const TABLE_CHROME: u16 = 2 + 6;

/// The SERVER column: as wide as the longest name, at most a quarter of the screen (longer names
/// are cut with `…`), so the notes get the rest.
fn server_width(app: &Ctx, width: u16) -> u16 {
    let longest = app
        .rows
        .iter()
        .map(|r| r.label().width())
        .chain(["SERVER".len()])
        .max()
        .unwrap_or(0);
    let cap = (width / 4).max(16);
    (longest as u16).min(cap)
}

/// `text` in at most `width` columns: whole when it fits, else cut at a word boundary (or
/// inside a long word) with `…`. The detail pane (`d`) shows it whole.
fn fit(text: &str, width: usize) -> String {
    if text.width() <= width {
        return text.to_string();
    }
    let trimmed = trim_description(text, width);
    if trimmed.width() <= width {
        return trimmed;
    }
    clip(text, width)
}

fn render_table(frame: &mut Frame, area: Rect, app: &Ctx, selected: usize) {
    let t = app.theme;
    let server = server_width(app, area.width);
    let fixed: u16 = FIXED_COLUMNS.iter().sum();
    let notes_width = area.width.saturating_sub(TABLE_CHROME + fixed + server) as usize;
    let header = TableRow::new([
        "",
        "SERVER",
        "TRANSPORT",
        "TOOLS",
        "TOKENS",
        "INIT",
        "NOTES",
    ])
    .style(t.dim);
    let rows: Vec<TableRow> = app
        .rows
        .iter()
        .map(|row| {
            let badge = row.badge(app.overrides);
            let report = row.report();
            let tools = row.tools(app.overrides);
            let live: Vec<_> = tools.iter().filter(|l| !l.stale).collect();
            let (tool_cell, token_cell) = match report {
                Some(r) if r.has_tools() => {
                    let allowed: Vec<_> = live.iter().filter(|l| l.allowed).collect();
                    let tokens: usize = allowed.iter().filter_map(|l| l.tokens).sum();
                    (
                        format!("{}/{}", allowed.len(), live.len()),
                        thousands(tokens),
                    )
                }
                _ => ("-".into(), "-".into()),
            };
            let init = report
                .and_then(|r| r.init_time)
                .map(|d| format!("{}ms", d.as_millis()))
                .unwrap_or_else(|| "-".into());
            let notes = fit(&notes(row, &tools), notes_width);
            let notes_style = if badge == Badge::Error { t.bad } else { t.warn };
            TableRow::new(vec![
                Cell::from(badge_span(badge, app.tick, t)),
                Cell::from(fit(&row.label(), server as usize)),
                Cell::from(report.map(|r| r.transport).unwrap_or("-")),
                Cell::from(tool_cell),
                Cell::from(token_cell),
                Cell::from(init),
                Cell::from(Span::styled(notes, notes_style)),
            ])
        })
        .collect();
    let [badge, transport, tool_count, tokens, init] = FIXED_COLUMNS.map(Constraint::Length);
    let widths = [
        badge,
        Constraint::Length(server),
        transport,
        tool_count,
        tokens,
        init,
        Constraint::Fill(1),
    ];
    let table = Table::new(rows, widths)
        .header(header)
        .row_highlight_style(t.selected)
        .highlight_symbol("▸ ")
        .highlight_spacing(HighlightSpacing::Always)
        .block(Block::new().borders(Borders::TOP).border_style(t.dim));
    let mut state = TableState::new().with_selected(Some(selected));
    frame.render_stateful_widget(table, area, &mut state);
}

/// The NOTES cell: a retry under way, the error's first line, else warnings and stale tools.
fn notes(row: &Row, tools: &[ToolLine]) -> String {
    let Some(report) = row.report() else {
        return if row.checks > 1 {
            format!("retry {}", row.checks - 1)
        } else {
            String::new()
        };
    };
    if let Some(error) = &report.error {
        return crate::tui::words::one_line(&error.to_string());
    }
    findings(row, tools).join("; ")
}

/// What a connected server's check found worth a note: warnings, stale tools, a slow answer.
fn findings(row: &Row, tools: &[ToolLine]) -> Vec<String> {
    let mut notes = row.warnings_of(tools);
    let stale = tools.iter().filter(|l| l.stale).count();
    if stale > 0 {
        notes.push(format!("{stale} stale tool(s)"));
    }
    if row.report().is_some_and(|r| r.used_slow_window) {
        notes.push("answered in the slow window".into());
    }
    notes
}

fn render_detail(frame: &mut Frame, area: Rect, app: &Ctx, row: &Row) {
    let t = app.theme;
    let mut lines: Vec<Line> = Vec::new();
    match row.report() {
        None => lines.push(Line::styled("still checking…", t.dim)),
        Some(report) => {
            if let Some(error) = &report.error {
                lines.push(Line::from(vec![
                    Span::styled("type     ", t.dim),
                    Span::styled(error.kind(), t.bad),
                ]));
                for (i, text) in error.to_string().lines().enumerate() {
                    let label = if i == 0 { "message  " } else { "         " };
                    lines.push(Line::from(vec![
                        Span::styled(label, t.dim),
                        Span::raw(text.to_string()),
                    ]));
                }
                for (i, text) in error.help().lines().enumerate() {
                    let label = if i == 0 { "help     " } else { "         " };
                    lines.push(Line::from(vec![
                        Span::styled(label, t.dim),
                        Span::styled(text.to_string(), t.good),
                    ]));
                }
            } else {
                let warnings = findings(row, &row.tools(app.overrides));
                if warnings.is_empty() {
                    lines.push(Line::styled("no problems", t.good));
                }
                for warning in warnings {
                    lines.push(Line::styled(format!("• {warning}"), t.warn));
                }
                if let Some(version) = &report.protocol_version {
                    lines.push(Line::styled(format!("protocol {version}"), t.dim));
                }
            }
        }
    }
    let block = Block::new()
        .borders(Borders::TOP)
        .border_style(t.dim)
        .title(Span::styled(format!(" {} ", row.label()), t.title));
    frame.render_widget(
        Paragraph::new(lines)
            .block(block)
            .wrap(Wrap { trim: false }),
        area,
    );
}
