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

use super::super::app::Screen;
use super::super::component::{Action, Command, Component, Ctx, Handled};
use super::super::model::ToolLine;
use super::super::msg::{Effect, ExternalEdit};
use super::super::rewrite::{char_count, Rewrite};
use super::super::theme::Theme;
use super::super::widgets::diff::{DiffLayout, DiffView};
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

/// What the keys do while the diff has them.
const COMMANDS: &[Command] = &[
    Command::help("↑↓ j k", "previous, next tool"),
    Command::help("g G home end", "first, last tool"),
    Command::bar("enter i", "edit the description here", &[("i", "edit")]),
    Command::help("E", "edit it in $VISUAL / $EDITOR"),
    Command::bar("t", "trim all listed to 300 at a word", &[("t", "trim")]),
    Command::help("T", "cut all listed to 300 characters"),
    Command::help("x", "clear all listed (empty text)"),
    Command::bar("R", "reset all listed to the server's", &[("R", "reset")]),
    Command::bar("s", "unified or side by side", &[("s", "layout")]),
    Command::bar("w", "wrap long lines or clip them", &[("w", "wrap")]),
    Command::help("pgup pgdn", "scroll the diff"),
    Command::help("← → h l", "scroll sideways (clipped)"),
    Command::bar("esc backspace", "back to the tools", &[("esc", "back")]),
];

/// What the keys do while editing (every other key edits the text).
const EDIT_COMMANDS: &[Command] = &[
    Command::bar("ctrl-s", "save the description", &[("ctrl-s", "save")]),
    Command::bar("esc", "cancel the edit", &[("esc", "cancel")]),
    Command::help("enter", "new line"),
    Command::bar(
        "ctrl-u ctrl-r",
        "undo, redo",
        &[("ctrl-u", "undo"), ("ctrl-r", "redo")],
    ),
];

/// The screen on `tools` of the server `back` shows, `focused` in front; with `edit`,
/// straight into the editor on it.
pub(in crate::tui) fn open(
    ctx: &Ctx,
    back: ServerView,
    tools: Vec<String>,
    focused: usize,
    edit: bool,
) -> DescribeView {
    let mut view = DescribeView::new(back, tools);
    view.focused = focused.min(view.tools.len().saturating_sub(1));
    if edit {
        view.editor =
            focused_line(ctx, &view).map(|t| Box::new(InlineEditor::new(&t.name, &t.description)));
    }
    view
}

/// The focused tool as the server screen lists it.
fn focused_line(ctx: &Ctx, view: &DescribeView) -> Option<ToolLine> {
    let name = view.focused_tool()?;
    ctx.rows
        .get(view.back.row)?
        .tools(ctx.overrides)
        .into_iter()
        .find(|t| t.name == name && !t.stale)
}

/// The external editor on `tool`'s description (what clients see now).
pub(in crate::tui) fn edit_externally(row: usize, tool: &ToolLine) -> Action {
    Action::Run(Effect::EditExternally(ExternalEdit {
        row,
        tool: tool.name.clone(),
        text: tool.description.clone(),
    }))
}

impl Component for DescribeView {
    fn handle_key(&mut self, key: KeyEvent, ctx: &Ctx) -> Handled<Option<Action>> {
        if self.editor.is_some() {
            Handled::Consumed(self.on_edit_key(key))
        } else {
            self.on_diff_key(key, ctx)
        }
    }

    fn commands(&self) -> &'static [Command] {
        if self.is_editing() {
            EDIT_COMMANDS
        } else {
            COMMANDS
        }
    }

    fn is_typing(&self) -> bool {
        self.is_editing()
    }

    fn render(&self, frame: &mut Frame, area: Rect, ctx: &Ctx) {
        render(frame, area, ctx, self);
    }
}

impl DescribeView {
    fn on_edit_key(&mut self, key: KeyEvent) -> Option<Action> {
        let editor = self.editor.as_mut()?;
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('s') if ctrl => {
                let (tool, text) = (editor.tool.clone(), editor.text());
                self.editor = None;
                Some(Action::Rewrite {
                    row: self.back.row,
                    tools: vec![tool],
                    rewrite: Rewrite::Replace(text),
                })
            }
            KeyCode::Esc => {
                let said = format!("{}: edit cancelled, nothing saved", editor.tool);
                self.editor = None;
                Some(Action::Say(said))
            }
            _ => {
                editor.area.input(key);
                None
            }
        }
    }

    /// Focuses the tool at `to` (clamped), its diff scrolled back.
    fn focus(&mut self, to: usize) {
        self.focused = to.min(self.tools.len().saturating_sub(1));
        self.scroll = 0;
        self.hscroll = 0;
    }

    fn on_diff_key(&mut self, key: KeyEvent, ctx: &Ctx) -> Handled<Option<Action>> {
        let action = match key.code {
            KeyCode::Up | KeyCode::Char('k') => {
                self.focus(self.focused.saturating_sub(1));
                None
            }
            KeyCode::Down | KeyCode::Char('j') => {
                self.focus(self.focused + 1);
                None
            }
            KeyCode::Home | KeyCode::Char('g') => {
                self.focus(0);
                None
            }
            KeyCode::End | KeyCode::Char('G') => {
                self.focus(self.tools.len());
                None
            }
            KeyCode::PageUp | KeyCode::PageDown => {
                self.scroll_by(key.code == KeyCode::PageDown, ctx);
                None
            }
            KeyCode::Left | KeyCode::Right | KeyCode::Char('h' | 'l') => {
                self.sidestep(matches!(key.code, KeyCode::Right | KeyCode::Char('l')), ctx)
            }
            KeyCode::Char('s') => {
                self.layout = self.layout.toggled();
                None
            }
            KeyCode::Char('w') => {
                self.wrap = !self.wrap;
                self.hscroll = 0;
                None
            }
            KeyCode::Enter | KeyCode::Char('i') => match focused_line(ctx, self) {
                Some(tool) => {
                    self.editor = Some(Box::new(InlineEditor::new(&tool.name, &tool.description)));
                    None
                }
                None => Some(Action::Say("no tool to edit".into())),
            },
            KeyCode::Char('E') => {
                focused_line(ctx, self).map(|tool| edit_externally(self.back.row, &tool))
            }
            KeyCode::Esc | KeyCode::Backspace => {
                Some(Action::Show(Screen::Server(self.back.clone())))
            }
            // t T x R: on every tool listed.
            KeyCode::Char(c) => match Rewrite::for_key(c) {
                Some(rewrite) => Some(Action::Rewrite {
                    row: self.back.row,
                    tools: self.tools.clone(),
                    rewrite,
                }),
                None => return Handled::Ignored,
            },
            _ => return Handled::Ignored,
        };
        Handled::Consumed(action)
    }

    /// pgup / pgdn: a page of the diff.
    fn scroll_by(&mut self, down: bool, ctx: &Ctx) {
        self.scroll = if down {
            (self.scroll + PAGE).min(scroll_limit(ctx, self))
        } else {
            self.scroll.saturating_sub(PAGE)
        };
    }

    /// ← → h l: sideways in the clipped diff; wrapped lines have nowhere to go.
    fn sidestep(&mut self, right: bool, ctx: &Ctx) -> Option<Action> {
        if self.wrap {
            return Some(Action::Say(
                "lines are wrapped: w clips them, then ←/→ scroll".into(),
            ));
        }
        self.hscroll = if right {
            (self.hscroll + SIDESTEP).min(longest_line(ctx, self))
        } else {
            self.hscroll.saturating_sub(SIDESTEP)
        };
        None
    }
}

/// How far the diff may scroll: its rows at 40 columns, the narrowest it is drawn at in
/// practice (drawing clamps again to the real size).
fn scroll_limit(app: &Ctx, view: &DescribeView) -> usize {
    focused_line(app, view).map_or(0, |tool| {
        let (old, new) = sides(&tool);
        DiffView::new(old, new, Default::default(), app.theme)
            .layout(view.layout)
            .wrap(view.wrap, 0)
            .rows(40)
            .len()
    })
}

/// Characters in the longest line of the focused tool's two texts: how far the clipped diff
/// may scroll sideways.
fn longest_line(app: &Ctx, view: &DescribeView) -> usize {
    focused_line(app, view).map_or(0, |tool| {
        let (old, new) = sides(&tool);
        old.lines()
            .chain(new.lines())
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

fn render(frame: &mut Frame, area: Rect, app: &Ctx, view: &DescribeView) {
    let t = app.theme;
    let Some(row) = app.rows.get(view.back.row) else {
        return;
    };
    let tools = row.tools(app.overrides);
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
            let mut title = vec![Span::styled(format!(" {} ", tool.name), t.title)];
            if tool.approved.is_some() {
                let note = "! changed since approved (A on the tool list approves it) ";
                title.push(Span::styled(note, t.warn));
            }
            let block = Block::new()
                .borders(Borders::TOP)
                .border_style(t.dim)
                .title(Line::from(title));
            let inner = block.inner(body);
            frame.render_widget(block, body);
            let diff = match &tool.approved {
                Some(approved) => approval_diff(tool, approved, view, t),
                None if tool.overridden => {
                    diff_view(tool, &tool.description, "clients see", view, t)
                }
                None => diff_view(
                    tool,
                    &tool.description,
                    "clients see (not overridden)",
                    view,
                    t,
                ),
            };
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

/// A changed tool's diff: the description approved against the one its server sends now.
fn approval_diff<'a>(
    tool: &'a ToolLine,
    approved: &'a str,
    view: &DescribeView,
    t: &Theme,
) -> DiffView<'a> {
    let labels = [
        Line::from(vec![
            Span::raw("approved · "),
            Span::styled(format!("{} chars", char_count(approved)), t.dim),
        ]),
        Line::from(vec![
            Span::styled("the server's now · ", t.warn),
            count_span(char_count(&tool.original), t),
        ]),
    ];
    DiffView::new(approved, &tool.original, labels, t)
        .layout(view.layout)
        .wrap(view.wrap, view.hscroll)
}

/// The two texts the focused tool's diff compares (approved and now, for a changed tool).
fn sides(tool: &ToolLine) -> (&str, &str) {
    match &tool.approved {
        Some(approved) => (approved, &tool.original),
        None => (&tool.original, &tool.description),
    }
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
