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

use crate::catalog::{Edit, CHATGPT_DESCRIPTION_LIMIT};

use super::super::app::{App, Screen};
use super::super::fuzzy;
use super::super::model::ToolLine;
use super::super::msg::Effect;
use super::super::rewrite::{self, Rewrite};
use super::super::widgets::{badge_span, key_hints, typing_hints};
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

/// The keys of this screen, for the help overlay.
pub const KEYS: &[(&str, &str)] = &[
    ("↑↓ j k", "move"),
    ("pgup pgdn g G", "page, first, last"),
    ("space", "allow or deny the tool"),
    ("a", "allow every tool shown"),
    ("n", "deny every tool shown"),
    ("/", "filter by name (fuzzy)"),
    ("v", "mark: t T x R d act on all marked"),
    ("V", "mark every tool shown, or none"),
    ("enter d", "descriptions: diff, edit, trim"),
    ("i", "edit the description here"),
    ("E", "edit it in $VISUAL / $EDITOR"),
    ("t", "trim to 300 chars at a word"),
    ("T", "cut to 300 chars"),
    ("x", "clear (an empty description)"),
    ("R", "reset to the server's description"),
    ("e", "enable or disable the server"),
    ("esc ← h", "clear filter, then marks; back"),
];

/// The few keys the status bar names.
const HINTS: &[(&str, &str)] = &[
    ("space", "allow/deny"),
    ("/", "filter"),
    ("v", "mark"),
    ("d", "describe"),
    ("esc", "back"),
];

/// The keys while typing a filter.
pub const FILTER_KEYS: &[(&str, &str)] = &[
    ("enter", "keep the filter"),
    ("esc", "clear the filter"),
    ("backspace", "delete a character"),
];

/// The tools shown: all of the server's, or those matching the filter, best match first.
pub fn visible_tools(app: &App, view: &ServerView) -> Vec<ToolLine> {
    let Some(row) = app.rows.get(view.row) else {
        return Vec::new();
    };
    let tools = row.tools(&app.overrides);
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
pub fn targets(app: &App, view: &ServerView) -> Vec<String> {
    if view.marked.is_empty() {
        return visible_tools(app, view)
            .into_iter()
            .nth(view.selected)
            .filter(|t| !t.stale)
            .map(|t| t.name)
            .into_iter()
            .collect();
    }
    let Some(row) = app.rows.get(view.row) else {
        return Vec::new();
    };
    row.tools(&app.overrides)
        .into_iter()
        .filter(|t| !t.stale && view.marked.contains(&t.name))
        .map(|t| t.name)
        .collect()
}

pub(in crate::tui) fn on_key(app: &mut App, key: KeyEvent) -> Vec<Effect> {
    let Screen::Server(view) = &app.screen else {
        return Vec::new();
    };
    let mut view = view.clone();
    let effects = if view.filtering {
        on_filter_key(&mut view, key);
        Vec::new()
    } else {
        on_list_key(app, &mut view, key)
    };
    let count = visible_tools(app, &view).len();
    view.selected = view.selected.min(count.saturating_sub(1));
    if let Screen::Server(current) = &mut app.screen {
        *current = view;
    }
    effects
}

fn on_filter_key(view: &mut ServerView, key: KeyEvent) {
    match key.code {
        KeyCode::Enter => view.filtering = false,
        KeyCode::Esc => {
            view.filtering = false;
            view.filter.clear();
        }
        KeyCode::Backspace => {
            view.filter.pop();
        }
        KeyCode::Char(c) => {
            view.filter.push(c);
            view.selected = 0;
        }
        _ => {}
    }
}

fn on_list_key(app: &mut App, view: &mut ServerView, key: KeyEvent) -> Vec<Effect> {
    let tools = visible_tools(app, view);
    match key.code {
        KeyCode::Up | KeyCode::Char('k') => view.selected = view.selected.saturating_sub(1),
        KeyCode::Down | KeyCode::Char('j') => view.selected += 1,
        KeyCode::PageUp => view.selected = view.selected.saturating_sub(10),
        KeyCode::PageDown => view.selected += 10,
        KeyCode::Home | KeyCode::Char('g') => view.selected = 0,
        KeyCode::End | KeyCode::Char('G') => view.selected = tools.len().saturating_sub(1),
        KeyCode::Char('/') => view.filtering = true,
        KeyCode::Esc if !view.filter.is_empty() => view.filter.clear(),
        KeyCode::Esc if !view.marked.is_empty() => view.marked.clear(),
        KeyCode::Esc | KeyCode::Backspace | KeyCode::Left | KeyCode::Char('h') => {
            app.screen = Screen::Preflight;
        }
        KeyCode::Char(' ') => {
            let Some(tool) = tools.get(view.selected) else {
                return Vec::new();
            };
            if tool.stale {
                app.say(format!(
                    "{} is stale: the server no longer offers it",
                    tool.name
                ));
                return Vec::new();
            }
            return set_allowed(
                app,
                view.row,
                std::slice::from_ref(&tool.name),
                !tool.allowed,
            );
        }
        KeyCode::Char('a') | KeyCode::Char('n') => {
            let names: Vec<String> = tools
                .iter()
                .filter(|t| !t.stale)
                .map(|t| t.name.clone())
                .collect();
            return set_allowed(app, view.row, &names, key.code == KeyCode::Char('a'));
        }
        KeyCode::Char('e') => return app.toggle_server(view.row),
        KeyCode::Char('v') => match tools.get(view.selected) {
            Some(tool) if tool.stale => app.say(format!("{} is stale: nothing to mark", tool.name)),
            Some(tool) => {
                if !view.marked.remove(&tool.name) {
                    view.marked.insert(tool.name.clone());
                }
                view.selected += 1;
            }
            None => {}
        },
        KeyCode::Char('V') if view.marked.is_empty() => {
            view.marked = tools
                .iter()
                .filter(|t| !t.stale)
                .map(|t| t.name.clone())
                .collect();
        }
        KeyCode::Char('V') => view.marked.clear(),
        KeyCode::Enter | KeyCode::Char('d') => {
            let targets = targets(app, view);
            if targets.is_empty() {
                app.say("no tool to describe here".into());
            } else {
                let focused = tools
                    .get(view.selected)
                    .and_then(|t| targets.iter().position(|n| *n == t.name))
                    .unwrap_or(0);
                describe::open(app, view.clone(), targets, focused, false);
            }
        }
        KeyCode::Char('i') | KeyCode::Char('E') => match tools.get(view.selected) {
            Some(tool) if tool.stale => app.say(format!(
                "{} is stale: the server no longer offers it",
                tool.name
            )),
            Some(tool) if key.code == KeyCode::Char('E') => {
                return describe::edit_externally(view.row, tool)
            }
            Some(tool) => {
                // The marked tools stay listed when the selected one is among them.
                let mut targets = targets(app, view);
                if !targets.contains(&tool.name) {
                    targets = vec![tool.name.clone()];
                }
                let focused = targets.iter().position(|n| *n == tool.name).unwrap_or(0);
                describe::open(app, view.clone(), targets, focused, true);
            }
            None => {}
        },
        // t T x R: on the marked tools, else the selected one.
        KeyCode::Char(c) => {
            if let Some(rewrite) = Rewrite::for_key(c) {
                let targets = targets(app, view);
                return rewrite::rewrite(app, view.row, &targets, &rewrite);
            }
        }
        _ => {}
    }
    Vec::new()
}

/// Allows or denies `names` of the server in row `row`; asks to save.
fn set_allowed(app: &mut App, row: usize, names: &[String], allow: bool) -> Vec<Effect> {
    let Some(r) = app.rows.get(row) else {
        return Vec::new();
    };
    if names.is_empty() {
        return Vec::new();
    }
    let (stack, server, tools) = (r.entry.stack.clone(), r.entry.name.clone(), names.to_vec());
    let edit = if allow {
        Edit::Allow {
            stack,
            server,
            tools,
            only: false,
        }
    } else {
        Edit::Deny {
            stack,
            server,
            tools,
        }
    };
    let (changes, save) = app.edit(vec![edit]);
    let changed = changes.iter().filter(|c| c.changed).count();
    let verb = if allow { "allowed" } else { "denied" };
    app.say(match names {
        [one] => format!("{one} {verb}"),
        _ => format!("{changed} tool(s) {verb}"),
    });
    vec![save]
}

pub(in crate::tui) fn render(frame: &mut Frame, area: Rect, app: &App, view: &ServerView) {
    let t = &app.theme;
    let Some(row) = app.rows.get(view.row) else {
        return;
    };
    let tools = visible_tools(app, view);
    let all = row.tools(&app.overrides);
    let live: Vec<&ToolLine> = all.iter().filter(|l| !l.stale).collect();
    let allowed: Vec<&&ToolLine> = live.iter().filter(|l| l.allowed).collect();
    let before: usize = live.iter().filter_map(|l| l.tokens).sum();
    let after: usize = allowed.iter().filter_map(|l| l.tokens).sum();
    let disabled = app.overrides.is_disabled(&row.entry);
    let [header, filter, body] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Min(3),
    ])
    .areas(area);
    let title = Line::from(vec![
        Span::styled(format!(" {} ", row.label()), t.title),
        badge_span(row.badge(&app.overrides), app.tick, t),
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
    ]);
    frame.render_widget(Paragraph::new(title), header);
    let mut filter_line = if view.filtering || !view.filter.is_empty() {
        let cursor = if view.filtering { "▏" } else { "" };
        Line::from(vec![
            Span::styled(" filter /", t.key),
            Span::raw(format!("{}{cursor}", view.filter)),
            Span::styled(format!("  {} match(es)", tools.len()), t.dim),
        ])
    } else {
        Line::styled(" / to filter", t.dim)
    };
    if !view.marked.is_empty() {
        filter_line.push_span(Span::styled(
            format!(" · {} marked (esc unmarks)", view.marked.len()),
            t.warn,
        ));
    }
    frame.render_widget(Paragraph::new(filter_line), filter);

    let [list, preview] =
        Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(body);
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
    frame.render_stateful_widget(table, list, &mut state);

    let preview_lines = match tools.get(view.selected) {
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
            let mut lines = vec![Line::from(vec![
                Span::styled(
                    format!("{count}/{CHATGPT_DESCRIPTION_LIMIT} chars"),
                    count_style,
                ),
                Span::styled(
                    if tool.overridden {
                        " · overridden"
                    } else {
                        ""
                    },
                    t.warn,
                ),
            ])];
            lines.extend(tool.description.lines().map(|l| Line::raw(l.to_string())));
            lines
        }
    };
    let block = Block::new()
        .borders(Borders::TOP)
        .border_style(t.dim)
        .title(Span::styled(" description ", t.dim));
    frame.render_widget(
        Paragraph::new(preview_lines)
            .block(block)
            .wrap(Wrap { trim: false }),
        preview,
    );
}

pub(in crate::tui) fn hints(app: &App, view: &ServerView) -> Line<'static> {
    if view.filtering {
        typing_hints(FILTER_KEYS, &app.theme)
    } else {
        key_hints(HINTS, &app.theme)
    }
}
