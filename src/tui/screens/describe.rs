//! The descriptions screen: the tools picked on the server screen (the marked ones, else the
//! selected one), each description's diff against the server's original — unified or side by
//! side, wrapped or clipped — and what to do about them: trim, cut, clear or reset them all at
//! once, or edit one, here in a multi-line editor (with a live character count against the
//! 300 limit and a live diff) or in `$VISUAL` / `$EDITOR`.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, HighlightSpacing, Paragraph, Row as TableRow};
use ratatui::widgets::{Table, TableState};
use ratatui::Frame;
use ratatui_textarea::{CursorMove, TextArea, WrapMode};

use crate::catalog::CHATGPT_DESCRIPTION_LIMIT;

use super::super::app::{App, Screen};
use super::super::model::ToolLine;
use super::super::msg::{Effect, ExternalEdit};
use super::super::rewrite::{self, char_count, Rewrite};
use super::super::theme::Theme;
use super::super::widgets::diff::{DiffLayout, DiffView};
use super::super::widgets::{key_hints, typing_hints};
use super::server::ServerView;

/// Rows the diff scrolls per page key.
const PAGE: usize = 10;
/// Columns the clipped diff scrolls per ←/→.
const SIDESTEP: usize = 8;
/// The most tools the list above the diff shows at once (it scrolls beyond).
const LIST_ROWS: u16 = 5;

/// The descriptions screen's own state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeView {
    /// The server screen to go back to, its selection, filter and marks as they were.
    pub back: ServerView,
    /// The tools described here, in the server's order.
    pub tools: Vec<String>,
    /// The tool whose diff is shown (and which `enter`/`E` edit).
    pub focused: usize,
    /// Unified or side by side.
    pub layout: DiffLayout,
    /// Long lines wrapped (else clipped, scrolled with ←/→).
    pub wrap: bool,
    /// Rows scrolled down in the diff.
    pub scroll: usize,
    /// Columns scrolled right in the clipped diff.
    pub hscroll: usize,
    /// The inline editor, while a description is being edited (boxed: the widget is large
    /// and most of the time there is none).
    pub editor: Option<Box<InlineEditor>>,
}

impl DescribeView {
    /// The view of `tools` of the server `back` shows, the first one focused, unified and
    /// wrapped.
    pub fn new(back: ServerView, tools: Vec<String>) -> DescribeView {
        DescribeView {
            back,
            tools,
            focused: 0,
            layout: DiffLayout::default(),
            wrap: true,
            scroll: 0,
            hscroll: 0,
            editor: None,
        }
    }

    /// True while the inline editor takes the keys.
    pub fn is_editing(&self) -> bool {
        self.editor.is_some()
    }

    /// The focused tool's name.
    pub fn focused_tool(&self) -> Option<&str> {
        self.tools.get(self.focused).map(String::as_str)
    }
}

/// The multi-line editor of one description: `ratatui-textarea`'s widget (cursor moves, word
/// jumps, undo and redo, soft wrapping) and the tool it edits.
#[derive(Debug, Clone)]
pub struct InlineEditor {
    /// The tool whose description is edited.
    pub tool: String,
    area: TextArea<'static>,
}

impl InlineEditor {
    /// An editor on `text`, the cursor at its end.
    pub fn new(tool: &str, text: &str) -> InlineEditor {
        let mut area = TextArea::new(text.split('\n').map(str::to_string).collect());
        area.set_wrap_mode(WrapMode::WordOrGlyph);
        area.set_cursor_line_style(Style::default());
        area.set_placeholder_text("(empty: clients see no description)");
        area.move_cursor(CursorMove::Bottom);
        area.move_cursor(CursorMove::End);
        InlineEditor {
            tool: tool.to_string(),
            area,
        }
    }

    /// The text as it would be saved (trailing whitespace dropped).
    pub fn text(&self) -> String {
        self.area.lines().join("\n").trim_end().to_string()
    }

    /// Characters of [`InlineEditor::text`]: the live count against the limit.
    pub fn char_count(&self) -> usize {
        char_count(&self.text())
    }
}

impl PartialEq for InlineEditor {
    /// Same tool, text and cursor (the widget itself has no equality; its scroll position
    /// and undo history do not count).
    fn eq(&self, other: &Self) -> bool {
        self.tool == other.tool
            && self.area.lines() == other.area.lines()
            && self.area.cursor() == other.area.cursor()
    }
}

impl Eq for InlineEditor {}

/// The keys of this screen, for the help overlay.
pub const KEYS: &[(&str, &str)] = &[
    ("↑↓ j k", "previous, next tool"),
    ("enter i", "edit the description here"),
    ("E", "edit it in $VISUAL / $EDITOR"),
    ("t", "trim all listed to 300 at a word"),
    ("T", "cut all listed to 300 characters"),
    ("x", "clear all listed (empty text)"),
    ("R", "reset all listed to the server's"),
    ("s", "unified or side by side"),
    ("w", "wrap long lines or clip them"),
    ("pgup pgdn", "scroll the diff"),
    ("← → h l", "scroll sideways (clipped)"),
    ("esc", "back to the tools"),
];

/// The keys while editing (every other key edits the text).
pub const EDIT_KEYS: &[(&str, &str)] = &[
    ("ctrl-s", "save the description"),
    ("esc", "cancel the edit"),
    ("enter", "new line"),
    ("ctrl-u ctrl-r", "undo, redo"),
];

/// The keys the status bar names while editing.
const EDIT_HINTS: &[(&str, &str)] = &[
    ("ctrl-s", "save"),
    ("esc", "cancel"),
    ("ctrl-u", "undo"),
    ("ctrl-r", "redo"),
];

/// The few keys the status bar names.
const HINTS: &[(&str, &str)] = &[
    ("i", "edit"),
    ("t", "trim"),
    ("R", "reset"),
    ("s", "layout"),
    ("w", "wrap"),
    ("esc", "back"),
];

/// Opens the screen on `tools` of the server `back` shows, `focused` in front; with `edit`,
/// straight into the editor on it.
pub(in crate::tui) fn open(
    app: &mut App,
    back: ServerView,
    tools: Vec<String>,
    focused: usize,
    edit: bool,
) {
    let mut view = DescribeView::new(back, tools);
    view.focused = focused.min(view.tools.len().saturating_sub(1));
    if edit {
        view.editor =
            focused_line(app, &view).map(|t| Box::new(InlineEditor::new(&t.name, &t.description)));
    }
    app.screen = Screen::Describe(view);
}

/// The focused tool as the server screen lists it.
fn focused_line(app: &App, view: &DescribeView) -> Option<ToolLine> {
    let name = view.focused_tool()?;
    app.rows
        .get(view.back.row)?
        .tools(&app.overrides)
        .into_iter()
        .find(|t| t.name == name && !t.stale)
}

/// The external editor on `tool`'s description (what clients see now).
pub(in crate::tui) fn edit_externally(row: usize, tool: &ToolLine) -> Vec<Effect> {
    vec![Effect::EditExternally(ExternalEdit {
        row,
        tool: tool.name.clone(),
        text: tool.description.clone(),
    })]
}

pub(in crate::tui) fn on_key(app: &mut App, key: KeyEvent) -> Vec<Effect> {
    let Screen::Describe(view) = &app.screen else {
        return Vec::new();
    };
    let mut view = view.clone();
    let effects = if view.editor.is_some() {
        on_edit_key(app, &mut view, key)
    } else {
        on_diff_key(app, &mut view, key)
    };
    if let Screen::Describe(current) = &mut app.screen {
        *current = view;
    }
    effects
}

fn on_edit_key(app: &mut App, view: &mut DescribeView, key: KeyEvent) -> Vec<Effect> {
    let Some(editor) = &mut view.editor else {
        return Vec::new();
    };
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    match key.code {
        KeyCode::Char('s') if ctrl => {
            let (tool, text) = (editor.tool.clone(), editor.text());
            view.editor = None;
            rewrite::rewrite(app, view.back.row, &[tool], &Rewrite::Replace(text))
        }
        KeyCode::Esc => {
            app.say(format!("{}: edit cancelled, nothing saved", editor.tool));
            view.editor = None;
            Vec::new()
        }
        _ => {
            editor.area.input(key);
            Vec::new()
        }
    }
}

fn on_diff_key(app: &mut App, view: &mut DescribeView, key: KeyEvent) -> Vec<Effect> {
    let last = view.tools.len().saturating_sub(1);
    let focus = |view: &mut DescribeView, to: usize| {
        view.focused = to.min(last);
        view.scroll = 0;
        view.hscroll = 0;
    };
    match key.code {
        KeyCode::Up | KeyCode::Char('k') => focus(view, view.focused.saturating_sub(1)),
        KeyCode::Down | KeyCode::Char('j') => focus(view, view.focused + 1),
        KeyCode::Home | KeyCode::Char('g') => focus(view, 0),
        KeyCode::End | KeyCode::Char('G') => focus(view, last),
        KeyCode::PageUp => view.scroll = view.scroll.saturating_sub(PAGE),
        KeyCode::PageDown => view.scroll = (view.scroll + PAGE).min(scroll_limit(app, view)),
        KeyCode::Left | KeyCode::Char('h') if !view.wrap => {
            view.hscroll = view.hscroll.saturating_sub(SIDESTEP)
        }
        KeyCode::Right | KeyCode::Char('l') if !view.wrap => {
            view.hscroll = (view.hscroll + SIDESTEP).min(longest_line(app, view))
        }
        KeyCode::Left | KeyCode::Right | KeyCode::Char('h') | KeyCode::Char('l') => {
            app.say("lines are wrapped: w clips them, then ←/→ scroll".into())
        }
        KeyCode::Char('s') => view.layout = view.layout.toggled(),
        KeyCode::Char('w') => {
            view.wrap = !view.wrap;
            view.hscroll = 0;
        }
        KeyCode::Enter | KeyCode::Char('i') => match focused_line(app, view) {
            Some(tool) => {
                view.editor = Some(Box::new(InlineEditor::new(&tool.name, &tool.description)))
            }
            None => app.say("no tool to edit".into()),
        },
        KeyCode::Char('E') => {
            if let Some(tool) = focused_line(app, view) {
                return edit_externally(view.back.row, &tool);
            }
        }
        KeyCode::Esc | KeyCode::Backspace => {
            app.screen = Screen::Server(view.back.clone());
        }
        // t T x R: on every tool listed.
        KeyCode::Char(c) => {
            if let Some(rewrite) = Rewrite::for_key(c) {
                return rewrite::rewrite(app, view.back.row, &view.tools, &rewrite);
            }
        }
        _ => {}
    }
    Vec::new()
}

/// How far the diff may scroll: its rows at 40 columns, the narrowest it is drawn at in
/// practice (drawing clamps again to the real size).
fn scroll_limit(app: &App, view: &DescribeView) -> usize {
    focused_line(app, view).map_or(0, |tool| {
        DiffView::new(
            &tool.original,
            &tool.description,
            Default::default(),
            &app.theme,
        )
        .layout(view.layout)
        .wrap(view.wrap, 0)
        .rows(40)
        .len()
    })
}

/// Characters in the longest line of the focused tool's two texts: how far the clipped diff
/// may scroll sideways.
fn longest_line(app: &App, view: &DescribeView) -> usize {
    focused_line(app, view).map_or(0, |tool| {
        tool.original
            .lines()
            .chain(tool.description.lines())
            .map(char_count)
            .max()
            .unwrap_or(0)
    })
}

/// `287/300 chars`, or `445/300 chars (145 over)` in the bad style (the words make it read
/// without colour too).
fn count_span(count: usize, t: &Theme) -> Span<'static> {
    let limit = CHATGPT_DESCRIPTION_LIMIT;
    if count > limit {
        Span::styled(
            format!("{count}/{limit} chars ({} over)", count - limit),
            t.bad,
        )
    } else {
        Span::styled(format!("{count}/{limit} chars"), t.dim)
    }
}

pub(in crate::tui) fn render(frame: &mut Frame, area: Rect, app: &App, view: &DescribeView) {
    let t = &app.theme;
    let Some(row) = app.rows.get(view.back.row) else {
        return;
    };
    let tools = row.tools(&app.overrides);
    let listed: Vec<&ToolLine> = view
        .tools
        .iter()
        .filter_map(|name| tools.iter().find(|t| &t.name == name && !t.stale))
        .collect();
    let show_list = view.editor.is_none() && listed.len() > 1;
    let list_height = if show_list {
        (listed.len() as u16).min(LIST_ROWS) + 1
    } else {
        0
    };
    let [header, list, body] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(list_height),
        Constraint::Min(3),
    ])
    .areas(area);
    let mode = match &view.editor {
        Some(editor) => format!("· editing {}", editor.tool),
        None => format!(
            "· {} tool(s) · {} · {}",
            listed.len(),
            view.layout.label(),
            if view.wrap { "wrapped" } else { "clipped" }
        ),
    };
    let title = Line::from(vec![
        Span::styled(format!(" {} · descriptions ", row.label()), t.title),
        Span::styled(mode, t.dim),
    ]);
    frame.render_widget(Paragraph::new(title), header);
    if show_list {
        render_list(frame, list, t, &listed, view.focused);
    }
    let Some(tool) = listed.get(view.focused) else {
        frame.render_widget(
            Paragraph::new(Line::styled(" no tool to describe", t.dim)),
            body,
        );
        return;
    };
    match &view.editor {
        Some(editor) => render_editor(frame, body, t, tool, editor, view),
        None => {
            let block = Block::new()
                .borders(Borders::TOP)
                .border_style(t.dim)
                .title(Span::styled(format!(" {} ", tool.name), t.title));
            let inner = block.inner(body);
            frame.render_widget(block, body);
            let now = if tool.overridden {
                "clients see"
            } else {
                "clients see (not overridden)"
            };
            let diff = diff_view(tool, &tool.description, now, view, t);
            frame.render_widget(diff.scroll(view.scroll), inner);
        }
    }
}

/// The diff of `tool`'s original against `current`, labelled with both counts.
fn diff_view<'a>(
    tool: &ToolLine,
    current: &str,
    label: &'static str,
    view: &DescribeView,
    t: &Theme,
) -> DiffView<'a> {
    let labels = [
        Line::from(vec![
            Span::raw("the server's · "),
            Span::styled(format!("{} chars", char_count(&tool.original)), t.dim),
        ]),
        Line::from(vec![
            Span::raw(format!("{label} · ")),
            count_span(char_count(current), t),
        ]),
    ];
    DiffView::new(&tool.original, current, labels, t)
        .layout(view.layout)
        .wrap(view.wrap, view.hscroll)
}

fn render_list(frame: &mut Frame, area: Rect, t: &Theme, listed: &[&ToolLine], focused: usize) {
    let rows: Vec<TableRow> = listed
        .iter()
        .map(|tool| {
            let note = match (tool.overridden, tool.description.is_empty()) {
                (true, true) => "cleared",
                (true, false) => "overridden",
                (false, _) => "",
            };
            TableRow::new(vec![
                Cell::from(tool.name.clone()),
                Cell::from(Line::from(count_span(char_count(&tool.description), t))),
                Cell::from(Span::styled(note, t.warn)),
            ])
        })
        .collect();
    let table = Table::new(
        rows,
        [
            Constraint::Fill(1),
            Constraint::Length(24),
            Constraint::Length(10),
        ],
    )
    .row_highlight_style(t.selected)
    .highlight_symbol("▸ ")
    .highlight_spacing(HighlightSpacing::Always)
    .block(Block::new().borders(Borders::TOP).border_style(t.dim));
    let mut state = TableState::new().with_selected(Some(focused));
    frame.render_stateful_widget(table, area, &mut state);
}

/// The editor above, the live diff against the server's original below.
fn render_editor(
    frame: &mut Frame,
    area: Rect,
    t: &Theme,
    tool: &ToolLine,
    editor: &InlineEditor,
    view: &DescribeView,
) {
    let [top, bottom] =
        Layout::vertical([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(area);
    let block = Block::new()
        .borders(Borders::TOP)
        .border_style(t.dim)
        .title(Line::from(vec![
            Span::styled(format!(" {} · ", editor.tool), t.title),
            count_span(editor.char_count(), t),
            Span::styled(" · ctrl-s saves, esc cancels ", t.dim),
        ]));
    let inner = block.inner(top);
    frame.render_widget(block, top);
    frame.render_widget(&editor.area, inner);
    let block = Block::new()
        .borders(Borders::TOP)
        .border_style(t.dim)
        .title(Span::styled(" diff ", t.dim));
    let inner = block.inner(bottom);
    frame.render_widget(block, bottom);
    let text = editor.text();
    frame.render_widget(diff_view(tool, &text, "edited", view, t), inner);
}

/// The status bar's key hints for this screen.
pub(in crate::tui) fn hints(app: &App, view: &DescribeView) -> Line<'static> {
    if view.is_editing() {
        typing_hints(EDIT_HINTS, &app.theme)
    } else {
        key_hints(HINTS, &app.theme)
    }
}

/// The keys the help overlay lists.
pub(in crate::tui) fn keys(view: &DescribeView) -> &'static [(&'static str, &'static str)] {
    if view.is_editing() {
        EDIT_KEYS
    } else {
        KEYS
    }
}
