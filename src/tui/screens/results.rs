//! Results, live while the stacks start and after: per stack the spec URL, the key (masked;
//! `v` reveals), `c` copies URL and key to the clipboard (OSC 52), the servers with their
//! operation counts and the warnings; below, the log pane fed by every process we run.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

use super::super::app::Screen;
use super::super::component::{Action, Command, Component, Ctx, Handled};
use super::super::msg::{Effect, LaunchMsg};
use super::super::theme::Theme;
use super::super::widgets::log_pane::LogPane;
use super::super::widgets::spinner;
use crate::launch::events::StackEvent;
use crate::launch::mask::displayed_key;

/// One stack that runs, as the results show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackResult {
    /// The stack.
    pub name: String,
    /// Its merged spec's URL.
    pub openapi_url: String,
    /// The key clients send (`X-API-Key`).
    pub api_key: String,
    /// Operations in the spec.
    pub operations: usize,
    /// Servers with their operation counts.
    pub servers: Vec<(String, usize)>,
    /// Warnings of the merge and the launch.
    pub warnings: Vec<String>,
    /// `/mcp`'s URL and how clients prove who they are there (`oauth`, `key`, `oidc`,
    /// `none`), when the front serves it.
    pub mcp: Option<(String, String)>,
}

/// Where the launch stands.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum LaunchState {
    /// Not launched yet.
    #[default]
    Idle,
    /// Starting (with the latest step per stack).
    Starting(Vec<(String, String)>),
    /// Done: the stacks that run and the `(stack, message)` of those that did not.
    Done {
        /// The running stacks.
        stacks: Vec<StackResult>,
        /// The stacks that failed, with why.
        errors: Vec<(String, String)>,
    },
}

/// The results screen's own state.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResultsView {
    /// The selected stack (for `c`).
    pub selected: usize,
    /// Keys are shown in full.
    pub reveal: bool,
    /// `(stack, message)` of the warnings stacks reported while starting and running.
    pub warnings: Vec<(String, String)>,
    /// The log pane (fed from the start, shown here).
    pub logs: LogPane,
}

/// What the keys do.
const COMMANDS: &[Command] = &[
    Command::help("tab", "select the next stack"),
    Command::bar("v", "reveal or mask the keys", &[("v", "key")]),
    Command::bar("c", "copy the spec URL and key (OSC 52)", &[("c", "copy")]),
    Command::bar("l", "show or hide the log", &[("l", "log")]),
    Command::help("↑↓ j k", "scroll the log a line"),
    Command::help("pgup pgdn", "scroll the log a page"),
    Command::help("f end", "follow the end of the log"),
    Command::help("w", "wrap or clip long lines"),
    Command::bar(
        "/ n N",
        "search the log, next older / newer match",
        &[("/", "search")],
    ),
    Command::bar("S", "save the log to ./.mcp-launch/", &[("S", "save")]),
    Command::help("esc", "back to the preflight (L returns here)"),
];

/// What the keys do while a search is typed.
const SEARCH_COMMANDS: &[Command] = &[
    Command::bar("enter", "find", &[("enter", "find")]),
    Command::bar("esc", "cancel", &[("esc", "cancel")]),
];

impl Component for ResultsView {
    fn handle_key(&mut self, key: KeyEvent, ctx: &Ctx) -> Handled<Option<Action>> {
        if self.logs.searching {
            return Handled::Consumed(self.on_search_key(key));
        }
        if let Some(handled) = self.on_log_key(key.code) {
            return handled;
        }
        let action = match key.code {
            KeyCode::Tab => {
                if let LaunchState::Done { stacks, .. } = ctx.launch {
                    if !stacks.is_empty() {
                        self.selected = (self.selected + 1) % stacks.len();
                    }
                }
                None
            }
            KeyCode::Char('v') => {
                self.reveal = !self.reveal;
                None
            }
            KeyCode::Esc => Some(Action::Show(Screen::Preflight)),
            KeyCode::Char('c') => self.copy(ctx),
            KeyCode::Char('S') => Some(Action::Run(Effect::SaveLog(
                self.logs.lines.iter().cloned().collect(),
            ))),
            _ => return Handled::Ignored,
        };
        Handled::Consumed(action)
    }

    fn commands(&self) -> &'static [Command] {
        if self.logs.searching {
            SEARCH_COMMANDS
        } else {
            COMMANDS
        }
    }

    fn is_typing(&self) -> bool {
        self.logs.searching
    }

    fn render(&self, frame: &mut Frame, area: Rect, ctx: &Ctx) {
        render(frame, area, ctx, self);
    }
}

impl ResultsView {
    fn on_search_key(&mut self, key: KeyEvent) -> Option<Action> {
        let logs = &mut self.logs;
        match key.code {
            KeyCode::Enter => {
                logs.searching = false;
                if !logs.find(true) {
                    return Some(Action::Complain(format!(
                        "no line matches {:?}",
                        logs.search
                    )));
                }
            }
            KeyCode::Esc => {
                logs.searching = false;
                logs.search.clear();
            }
            KeyCode::Backspace => {
                logs.search.pop();
            }
            KeyCode::Char(c) => logs.search.push(c),
            _ => {}
        }
        None
    }

    /// The log pane's keys; `None` for the others.
    fn on_log_key(&mut self, code: KeyCode) -> Option<Handled<Option<Action>>> {
        let logs = &mut self.logs;
        match code {
            KeyCode::Char('l') => logs.visible = !logs.visible,
            KeyCode::Up | KeyCode::Char('k') => logs.scroll(-1),
            KeyCode::Down | KeyCode::Char('j') => logs.scroll(1),
            KeyCode::PageUp => logs.scroll(-20),
            KeyCode::PageDown => logs.scroll(20),
            KeyCode::Char('f') | KeyCode::End => logs.follow(),
            KeyCode::Char('w') => logs.wrap = !logs.wrap,
            KeyCode::Char('/') => {
                logs.searching = true;
                logs.search.clear();
            }
            KeyCode::Char('n' | 'N') if !logs.find(code == KeyCode::Char('n')) => {
                return Some(Handled::then(Action::Complain("no further match".into())));
            }
            KeyCode::Char('n' | 'N') => {}
            _ => return None,
        }
        Some(Handled::done())
    }

    /// `c`: the selected stack's spec URL and key header, to the clipboard.
    fn copy(&self, ctx: &Ctx) -> Option<Action> {
        let LaunchState::Done { stacks, .. } = ctx.launch else {
            return Some(Action::Complain("nothing to copy yet".into()));
        };
        let stack = stacks.get(self.selected)?;
        Some(Action::Copy {
            stack: stack.name.clone(),
            text: format!("{}\nX-API-Key: {}", stack.openapi_url, stack.api_key),
        })
    }

    /// Launch and log news.
    pub(in crate::tui) fn on_news(&mut self, launch: &mut LaunchState, news: LaunchMsg) {
        match news {
            LaunchMsg::Log(line) => self.logs.push(line),
            LaunchMsg::Stack(event) => {
                if let StackEvent::Progress { stack, step, .. } = &event {
                    if let LaunchState::Starting(steps) = launch {
                        match steps.iter_mut().find(|(s, _)| s == stack) {
                            Some(entry) => entry.1.clone_from(step),
                            None => steps.push((stack.clone(), step.clone())),
                        }
                    }
                }
                if let StackEvent::Warning { stack, message } = &event {
                    self.warnings.push((stack.clone(), message.clone()));
                }
                self.logs.push(describe_event(&event));
            }
            LaunchMsg::Launched { stacks, errors } => {
                *launch = LaunchState::Done { stacks, errors };
                self.selected = 0;
            }
            // The app's own.
            LaunchMsg::Available(_) | LaunchMsg::LogSaved(_) => {}
        }
    }
}

/// A stack event as a log line.
fn describe_event(event: &StackEvent) -> String {
    if event.is_warning() {
        format!("warning: {event}")
    } else {
        event.to_string()
    }
}

fn render(frame: &mut Frame, area: Rect, app: &Ctx, view: &ResultsView) {
    let t = app.theme;
    let mut lines = vec![Line::styled(" mcp-launch · results", t.title)];
    match app.launch {
        LaunchState::Idle => lines.push(Line::styled(" not launched", t.dim)),
        LaunchState::Starting(steps) => {
            for (stack, step) in steps {
                lines.push(Line::from(vec![
                    Span::raw(" "),
                    Span::styled(spinner(app.tick), t.warn),
                    Span::styled(format!(" {stack}: "), t.title),
                    Span::raw(step.clone()),
                ]));
            }
            if steps.is_empty() {
                lines.push(Line::from(vec![
                    Span::raw(" "),
                    Span::styled(spinner(app.tick), t.warn),
                    Span::raw(" launching…"),
                ]));
            }
        }
        LaunchState::Done { stacks, errors } => {
            for (i, stack) in stacks.iter().enumerate() {
                lines.extend(stack_lines(stack, i == view.selected, view, t));
            }
            for (stack, message) in errors {
                lines.push(Line::from(vec![
                    Span::styled(format!("  {stack} "), t.title),
                    Span::styled(format!("did not start: {message}"), t.bad),
                ]));
            }
        }
    }
    let top_height = (lines.len() as u16 + 1).min(area.height / 2).max(3);
    let [top, bottom] = Layout::vertical([
        Constraint::Length(if view.logs.visible {
            top_height
        } else {
            area.height
        }),
        Constraint::Fill(1),
    ])
    .areas(area);
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), top);
    if view.logs.visible {
        view.logs.render(frame, bottom, t);
    }
}

/// A running stack: its spec URL, its key (masked unless revealed), its operations per
/// server and its warnings.
fn stack_lines(
    stack: &StackResult,
    selected: bool,
    view: &ResultsView,
    t: &Theme,
) -> Vec<Line<'static>> {
    let marker = if selected { "▸" } else { " " };
    let servers: Vec<String> = stack
        .servers
        .iter()
        .map(|(name, ops)| format!("{name} ({ops})"))
        .collect();
    let mut lines = vec![
        Line::from(vec![
            Span::styled(format!("{marker} {} ", stack.name), t.title),
            Span::styled(stack.openapi_url.clone(), t.good),
        ]),
        Line::from(vec![
            Span::styled("    key  ", t.dim),
            Span::raw(format!(
                "X-API-Key: {}",
                displayed_key(&stack.api_key, view.reveal)
            )),
        ]),
        Line::from(vec![
            Span::styled("    ops  ", t.dim),
            Span::raw(format!("{} — {}", stack.operations, servers.join(", "))),
        ]),
    ];
    if let Some((url, auth)) = &stack.mcp {
        let how = match auth.as_str() {
            "oauth" => "OAuth: you consent to each client here",
            "key" => "Authorization: Bearer <the key>",
            "oidc" => "OAuth: your OpenID provider's tokens",
            _ => "no authentication",
        };
        lines.push(Line::from(vec![
            Span::styled("    mcp  ", t.dim),
            Span::raw(format!("{url}  ({how})")),
        ]));
    }
    let reported = view.warnings.iter().filter(|(s, _)| *s == stack.name);
    for warning in stack.warnings.iter().chain(reported.map(|(_, w)| w)) {
        // Every line of it (a crash note's stderr tail follows its first line), in TUI keys.
        let warning = crate::tui::words::in_tui_words(warning);
        for (i, text) in warning.lines().enumerate() {
            let mark = if i == 0 { "    ! " } else { "      " };
            lines.push(Line::styled(format!("{mark}{text}"), t.warn));
        }
    }
    lines
}
