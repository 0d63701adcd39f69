//! One server's tools: allow or deny each (space; `a` all, `n` none), a `/` fuzzy filter,
//! each tool's token cost and a preview of the description clients see; stale tools (named by
//! the overrides or the index, no longer offered) are listed, marked, and cannot be toggled.
//!
//! Descriptions are rewritten from here too: `v` marks tools (a multi-selection that survives
//! filtering), and `t` trim, `T` cut, `x` clear and `R` reset act on the marked tools, else on
//! the selected one; `i` edits the selected description in place, `E` in `$VISUAL`/`$EDITOR`,
//! `enter`/`d` opens the descriptions screen (diff view) on the marked or selected tools.

use std::collections::BTreeSet;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Block, Borders, Cell, HighlightSpacing, Paragraph, Row as TableRow, Table, TableState, Wrap,
};
use ratatui::Frame;

use crate::catalog::CHATGPT_DESCRIPTION_LIMIT;

use super::super::app::Screen;
use super::super::component::{Action, Command, Component, Ctx, Handled};
use super::super::fuzzy;
use super::super::model::{Row, ToolLine};
use super::super::msg::Effect;
use super::super::rewrite::Rewrite;
use super::super::theme::Theme;
use super::super::widgets::badge_span;
use super::describe;
use crate::output::thousands;

/// The server screen's own state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerView {
    /// The server's row in the preflight.
    pub row: usize,
    /// The selected line among the filtered tools.
    pub selected: usize,
    /// The filter text.
    pub filter: String,
    /// Keys go to the filter.
    pub filtering: bool,
    /// Tools marked with `v`: what description rewrites and the descriptions screen act on.
    pub marked: BTreeSet<String>,
}

impl ServerView {
    /// The view of row `row`, nothing filtered.
    pub fn new(row: usize) -> ServerView {
        ServerView {
            row,
            selected: 0,
            filter: String::new(),
            filtering: false,
            marked: BTreeSet::new(),
        }
    }
}

/// What the keys do while the list has them.
const COMMANDS: &[Command] = &[
    Command::help("↑↓ j k", "move"),
    Command::help("pgup pgdn", "page"),
    Command::help("g G home end", "first, last"),
    Command::bar(
        "space",
        "allow or deny the tool",
        &[("space", "allow/deny")],
    ),
    Command::help("a", "allow every tool shown"),
    Command::help("n", "deny every tool shown"),
    Command::bar("/", "filter by name (fuzzy)", &[("/", "filter")]),
    Command::bar("v", "mark: t T x R d act on all marked", &[("v", "mark")]),
    Command::help("V", "mark every tool shown, or none"),
    Command::bar(
        "enter d",
        "descriptions: diff, edit, trim",
        &[("d", "describe")],
    ),
    Command::help("i", "edit the description here"),
    Command::help("E", "edit it in $VISUAL / $EDITOR"),
    Command::help("t", "trim to 300 chars at a word"),
    Command::help("T", "cut to 300 chars"),
    Command::help("x", "clear (an empty description)"),
    Command::help("R", "reset to the server's description"),
    Command::help("e", "enable or disable the server"),
    Command::help("A", "approve a changed definition (!)"),
    Command::bar(
        "esc ← h",
        "clear filter, then marks; back",
        &[("esc", "back")],
    ),
];

/// What the keys do while a filter is typed.
const FILTER_COMMANDS: &[Command] = &[
    Command::bar("enter", "keep the filter", &[("enter", "keep the filter")]),
    Command::bar("esc", "clear the filter", &[("esc", "clear the filter")]),
    Command::bar(
        "backspace",
        "delete a character",
        &[("backspace", "delete a character")],
    ),
];

/// The tools shown: all of the server's, or those matching the filter, best match first.
pub fn visible_tools(ctx: &Ctx, view: &ServerView) -> Vec<ToolLine> {
    let Some(row) = ctx.rows.get(view.row) else {
        return Vec::new();
    };
    let tools = row.tools(ctx.overrides);
    if view.filter.is_empty() {
        return tools;
    }
    let mut scored: Vec<(i64, ToolLine)> = tools
        .into_iter()
        .filter_map(|t| Some((fuzzy::score(&view.filter, &t.name)?, t)))
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name.cmp(&b.1.name)));
    scored.into_iter().map(|(_, t)| t).collect()
}

/// The tools description rewrites act on: the marked ones (in the server's order, whether the
/// filter shows them or not), else the selected one. Stale tools have no description.
pub fn targets(ctx: &Ctx, view: &ServerView) -> Vec<String> {
    if view.marked.is_empty() {
        return visible_tools(ctx, view)
            .into_iter()
            .nth(view.selected)
            .filter(|t| !t.stale)
            .map(|t| t.name)
            .into_iter()
            .collect();
    }
    let Some(row) = ctx.rows.get(view.row) else {
        return Vec::new();
    };
    row.tools(ctx.overrides)
        .into_iter()
        .filter(|t| !t.stale && view.marked.contains(&t.name))
        .map(|t| t.name)
        .collect()
}

impl Component for ServerView {
    fn handle_key(&mut self, key: KeyEvent, ctx: &Ctx) -> Handled<Option<Action>> {
        let handled = if self.filtering {
            self.on_filter_key(key);
            Handled::done()
        } else {
            self.on_list_key(key, ctx)
        };
        let count = visible_tools(ctx, self).len();
        self.selected = self.selected.min(count.saturating_sub(1));
        handled
    }

    fn commands(&self) -> &'static [Command] {
        if self.filtering {
            FILTER_COMMANDS
        } else {
            COMMANDS
        }
    }

    fn is_typing(&self) -> bool {
        self.filtering
    }

    fn render(&self, frame: &mut Frame, area: Rect, ctx: &Ctx) {
        render(frame, area, ctx, self);
    }
}

/// A stale tool cannot be changed.
fn stale(tool: &ToolLine) -> Action {
    Action::Say(format!(
        "{} is stale: the server no longer offers it",
        tool.name
    ))
}

impl ServerView {
    fn on_filter_key(&mut self, key: KeyEvent) {
        match key.code {
            KeyCode::Enter => self.filtering = false,
            KeyCode::Esc => {
                self.filtering = false;
                self.filter.clear();
            }
            KeyCode::Backspace => {
                self.filter.pop();
            }
            KeyCode::Char(c) => {
                self.filter.push(c);
                self.selected = 0;
            }
            _ => {}
        }
    }

    fn on_list_key(&mut self, key: KeyEvent, ctx: &Ctx) -> Handled<Option<Action>> {
        let tools = visible_tools(ctx, self);
        if self.move_selection(key.code, tools.len()) {
            return Handled::done();
        }
        let action = match key.code {
            KeyCode::Char('/') => {
                self.filtering = true;
                None
            }
            KeyCode::Esc if !self.filter.is_empty() => {
                self.filter.clear();
                None
            }
            KeyCode::Esc if !self.marked.is_empty() => {
                self.marked.clear();
                None
            }
            KeyCode::Esc | KeyCode::Backspace | KeyCode::Left | KeyCode::Char('h') => {
                Some(Action::Show(Screen::Preflight))
            }
            KeyCode::Char(' ' | 'a' | 'n') => self.allow_or_deny(key.code, &tools),
            KeyCode::Char('e') => Some(Action::ToggleServer(self.row)),
            KeyCode::Char('A') => self.approve(ctx),
            KeyCode::Char('v' | 'V') => self.mark(key.code, &tools),
            KeyCode::Enter | KeyCode::Char('d' | 'i' | 'E') => self.describe(key.code, &tools, ctx),
            // t T x R: on the marked tools, else the selected one.
            KeyCode::Char(c) => match Rewrite::for_key(c) {
                Some(rewrite) => Some(Action::Rewrite {
                    row: self.row,
                    tools: targets(ctx, self),
                    rewrite,
                }),
                None => return Handled::Ignored,
            },
            _ => return Handled::Ignored,
        };
        Handled::Consumed(action)
    }

    /// ↑↓ j k, pages, first and last among `count` tools; false for any other key.
    fn move_selection(&mut self, code: KeyCode, count: usize) -> bool {
        match code {
            KeyCode::Up | KeyCode::Char('k') => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => self.selected += 1,
            KeyCode::PageUp => self.selected = self.selected.saturating_sub(10),
            KeyCode::PageDown => self.selected += 10,
            KeyCode::Home | KeyCode::Char('g') => self.selected = 0,
            KeyCode::End | KeyCode::Char('G') => self.selected = count.saturating_sub(1),
            _ => return false,
        }
        true
    }

    /// space: the selected tool; `a` allows and `n` denies every tool shown.
    fn allow_or_deny(&self, code: KeyCode, tools: &[ToolLine]) -> Option<Action> {
        let (names, allow) = if code == KeyCode::Char(' ') {
            let tool = tools.get(self.selected)?;
            if tool.stale {
                return Some(stale(tool));
            }
            (vec![tool.name.clone()], !tool.allowed)
        } else {
            let names = tools
                .iter()
                .filter(|t| !t.stale)
                .map(|t| t.name.clone())
                .collect();
            (names, code == KeyCode::Char('a'))
        };
        Some(Action::SetAllowed {
            row: self.row,
            tools: names,
            allow,
        })
    }

    /// `A`: approves the current definitions of the marked (else the selected) tools that
    /// changed since they were approved.
    fn approve(&self, ctx: &Ctx) -> Option<Action> {
        let row = ctx.rows.get(self.row)?;
        let report = row.report()?;
        let names = targets(ctx, self);
        let tools: Vec<serde_json::Value> = (report.tools.iter())
            .filter(|t| report.changed.contains_key(crate::catalog::tool::name(t)))
            .filter(|t| names.iter().any(|n| n == crate::catalog::tool::name(t)))
            .cloned()
            .collect();
        if tools.is_empty() {
            return Some(Action::Say("no changed definition to approve here".into()));
        }
        Some(Action::Run(Effect::Approve {
            row: self.row,
            stack: row.entry.stack.clone(),
            server: row.entry.name.clone(),
            tools,
        }))
    }

    /// `v` marks or unmarks the selected tool and moves on; `V` marks every tool shown, or
    /// none.
    fn mark(&mut self, code: KeyCode, tools: &[ToolLine]) -> Option<Action> {
        if code == KeyCode::Char('V') {
            self.marked = if self.marked.is_empty() {
                tools
                    .iter()
                    .filter(|t| !t.stale)
                    .map(|t| t.name.clone())
                    .collect()
            } else {
                BTreeSet::new()
            };
            return None;
        }
        let tool = tools.get(self.selected)?;
        if tool.stale {
            return Some(Action::Say(format!(
                "{} is stale: nothing to mark",
                tool.name
            )));
        }
        if !self.marked.remove(&tool.name) {
            self.marked.insert(tool.name.clone());
        }
        self.selected += 1;
        None
    }

    /// enter/`d`: the descriptions screen on the marked or selected tools; `i` straight into
    /// its editor on the selected one; `E` the external editor on it.
    fn describe(&self, code: KeyCode, tools: &[ToolLine], ctx: &Ctx) -> Option<Action> {
        let selected = tools.get(self.selected);
        let mut targets = targets(ctx, self);
        let edit = match code {
            KeyCode::Char('i' | 'E') => {
                let tool = selected?;
                if tool.stale {
                    return Some(stale(tool));
                }
                if code == KeyCode::Char('E') {
                    return Some(describe::edit_externally(self.row, tool));
                }
                // The marked tools stay listed when the selected one is among them.
                if !targets.contains(&tool.name) {
                    targets = vec![tool.name.clone()];
                }
                true
            }
            _ if targets.is_empty() => return Some(Action::Say("no tool to describe here".into())),
            _ => false,
        };
        let focused = selected
            .and_then(|t| targets.iter().position(|n| *n == t.name))
            .unwrap_or(0);
        let view = describe::open(ctx, self.clone(), targets, focused, edit);
        Some(Action::Show(Screen::Describe(view)))
    }
}

fn render(frame: &mut Frame, area: Rect, app: &Ctx, view: &ServerView) {
    let Some(row) = app.rows.get(view.row) else {
        return;
    };
    let tools = visible_tools(app, view);
    let [header, filter, body] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Min(3),
    ])
    .areas(area);
    frame.render_widget(Paragraph::new(title(app, row)), header);
    frame.render_widget(
        Paragraph::new(filter_line(app.theme, view, tools.len())),
        filter,
    );
    let [list, preview] =
        Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(body);
    render_list(frame, list, app.theme, view, &tools);
    let block = Block::new()
        .borders(Borders::TOP)
        .border_style(app.theme.dim)
        .title(Span::styled(" description ", app.theme.dim));
    frame.render_widget(
        Paragraph::new(preview_lines(app.theme, view, tools.get(view.selected)))
            .block(block)
            .wrap(Wrap { trim: false }),
        preview,
    );
}

/// The server, its badge, the tools allowed and their tokens before and after.
fn title(app: &Ctx, row: &Row) -> Line<'static> {
    let t = app.theme;
    let all = row.tools(app.overrides);
    let live: Vec<&ToolLine> = all.iter().filter(|l| !l.stale).collect();
    let allowed: Vec<&&ToolLine> = live.iter().filter(|l| l.allowed).collect();
    let before: usize = live.iter().filter_map(|l| l.tokens).sum();
    let after: usize = allowed.iter().filter_map(|l| l.tokens).sum();
    let disabled = app.overrides.is_disabled(&row.entry);
    Line::from(vec![
        Span::styled(format!(" {} ", row.label()), t.title),
        badge_span(row.badge(app.overrides), app.tick, t),
        Span::raw(format!(
            " {}/{} tools allowed · {} → {} tokens",
            allowed.len(),
            live.len(),
            thousands(before),
            thousands(after)
        )),
        if disabled {
            Span::styled(" · server disabled (e enables)", t.warn)
        } else {
            Span::raw("")
        },
    ])
}

/// The filter (or how to start one) and the marks.
fn filter_line(t: &Theme, view: &ServerView, matches: usize) -> Line<'static> {
    let mut line = if view.filtering || !view.filter.is_empty() {
        let cursor = if view.filtering { "▏" } else { "" };
        Line::from(vec![
            Span::styled(" filter /", t.key),
            Span::raw(format!("{}{cursor}", view.filter)),
            Span::styled(format!("  {matches} match(es)"), t.dim),
        ])
    } else {
        Line::styled(" / to filter", t.dim)
    };
    if !view.marked.is_empty() {
        line.push_span(Span::styled(
            format!(" · {} marked (esc unmarks)", view.marked.len()),
            t.warn,
        ));
    }
    line
}

/// The tools shown: allowed or not, marked, overridden or stale, their tokens.
fn render_list(frame: &mut Frame, area: Rect, t: &Theme, view: &ServerView, tools: &[ToolLine]) {
    let rows: Vec<TableRow> = tools
        .iter()
        .map(|tool| {
            let (mark, style) = match (tool.stale, tool.allowed) {
                (true, _) => ("[~]", t.warn),
                (false, true) => ("[x]", t.good),
                (false, false) => ("[ ]", t.bad),
            };
            let mut name = if view.marked.contains(&tool.name) {
                format!("● {}", tool.name)
            } else {
                tool.name.clone()
            };
            if tool.stale {
                name.push_str(" (stale)");
            } else if tool.overridden {
                name.push_str(" *");
            }
            if tool.approved.is_some() {
                name.push_str(" !");
            }
            TableRow::new(vec![
                Cell::from(Span::styled(mark, style)),
                Cell::from(name),
                Cell::from(tool.tokens.map(thousands).unwrap_or_else(|| "-".into())),
            ])
        })
        .collect();
    let table = Table::new(
        rows,
        [
            Constraint::Length(3),
            Constraint::Fill(1),
            Constraint::Length(6),
        ],
    )
    .header(TableRow::new(["", "TOOL", "TOKENS"]).style(t.dim))
    .row_highlight_style(t.selected)
    .highlight_symbol("▸ ")
    .highlight_spacing(HighlightSpacing::Always)
    .block(
        Block::new()
            .borders(Borders::TOP | Borders::RIGHT)
            .border_style(t.dim),
    );
    let mut state = TableState::new().with_selected(Some(view.selected));
    frame.render_stateful_widget(table, area, &mut state);
}

/// The selected tool's description as clients see it, with its count against the limit.
fn preview_lines(t: &Theme, view: &ServerView, selected: Option<&ToolLine>) -> Vec<Line<'static>> {
    match selected {
        None if view.filter.is_empty() => vec![Line::styled("no tools", t.dim)],
        None => vec![Line::styled("no tool matches the filter", t.dim)],
        Some(tool) if tool.stale => vec![Line::styled(
            "The overrides or the tool index name this tool, but the server no longer offers it.",
            t.warn,
        )],
        Some(tool) => {
            let count = tool.description.chars().count();
            let count_style = if count > CHATGPT_DESCRIPTION_LIMIT {
                t.bad
            } else {
                t.dim
            };
            let overridden = if tool.overridden {
                " · overridden"
            } else {
                ""
            };
            let mut lines = vec![Line::from(vec![
                Span::styled(
                    format!("{count}/{CHATGPT_DESCRIPTION_LIMIT} chars"),
                    count_style,
                ),
                Span::styled(overridden, t.warn),
            ])];
            lines.extend(tool.description.lines().map(|l| Line::raw(l.to_string())));
            if !tool.repairs.is_empty() {
                lines.push(Line::styled(
                    format!("repaired for strict clients: {}", tool.repairs.join("; ")),
                    t.warn,
                ));
            }
            if tool.approved.is_some() {
                lines.push(Line::styled(
                    "! changed since approved: d shows the diff, A approves it",
                    t.warn,
                ));
            }
            lines
        }
    }
}
