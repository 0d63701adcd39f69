//! Results, live while the stacks start and after: per stack the spec URL, the key (masked;
//! `v` reveals), `c` copies URL and key to the clipboard (OSC 52), the servers with their
//! operation counts and the warnings; below, the log pane fed by every process we run.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

use super::super::app::{App, Screen};
use super::super::msg::{Effect, LaunchMsg};
use super::super::widgets::{key_hints, spinner};
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
}

/// The keys of this screen, for the help overlay.
pub const KEYS: &[(&str, &str)] = &[
    ("tab", "select the next stack"),
    ("v", "reveal or mask the keys"),
    ("c", "copy the spec URL and key (OSC 52)"),
    ("l", "show or hide the log"),
    ("↑↓ pgup pgdn", "scroll the log"),
    ("f", "follow the end of the log"),
    ("w", "wrap or clip long lines"),
    ("/ n N", "search the log, next older / newer match"),
    ("S", "save the log to ./.mcp-launch/"),
    ("esc", "back to the preflight (L returns here)"),
];

const HINTS: &[(&str, &str)] = &[
    ("v", "key"),
    ("c", "copy"),
    ("l", "log"),
    ("/", "search"),
    ("S", "save"),
];

/// The keys while typing a search.
pub const SEARCH_KEYS: &[(&str, &str)] = &[("enter", "find"), ("esc", "cancel")];

pub(in crate::tui) fn on_key(app: &mut App, key: KeyEvent) -> Vec<Effect> {
    if app.logs.searching {
        match key.code {
            KeyCode::Enter => {
                app.logs.searching = false;
                if !app.logs.find(true) {
                    app.complain(format!("no line matches {:?}", app.logs.search));
                }
            }
            KeyCode::Esc => {
                app.logs.searching = false;
                app.logs.search.clear();
            }
            KeyCode::Backspace => {
                app.logs.search.pop();
            }
            KeyCode::Char(c) => app.logs.search.push(c),
            _ => {}
        }
        return Vec::new();
    }
    let count = match &app.launch {
        LaunchState::Done { stacks, .. } => stacks.len(),
        _ => 0,
    };
    match key.code {
        KeyCode::Tab if count > 0 => app.results.selected = (app.results.selected + 1) % count,
        KeyCode::Char('v') => app.results.reveal = !app.results.reveal,
        KeyCode::Esc => app.screen = Screen::Preflight,
        KeyCode::Char('c') => return copy(app),
        KeyCode::Char('l') => app.logs.visible = !app.logs.visible,
        KeyCode::Up | KeyCode::Char('k') => app.logs.scroll(-1),
        KeyCode::Down | KeyCode::Char('j') => app.logs.scroll(1),
        KeyCode::PageUp => app.logs.scroll(-20),
        KeyCode::PageDown => app.logs.scroll(20),
        KeyCode::Char('f') | KeyCode::End => app.logs.follow(),
        KeyCode::Char('w') => app.logs.wrap = !app.logs.wrap,
        KeyCode::Char('/') => {
            app.logs.searching = true;
            app.logs.search.clear();
        }
        KeyCode::Char('n') | KeyCode::Char('N')
            if !app.logs.find(key.code == KeyCode::Char('n')) =>
        {
            app.complain("no further match".into());
        }
        KeyCode::Char('S') => {
            return vec![Effect::SaveLog(app.logs.lines.iter().cloned().collect())];
        }
        _ => {}
    }
    Vec::new()
}

/// Launch, log and clipboard news.
pub(in crate::tui) fn on_news(app: &mut App, news: LaunchMsg) {
    match news {
        LaunchMsg::Available(available) => app.available = available,
        LaunchMsg::Log(line) => app.logs.push(line),
        LaunchMsg::Stack(event) => {
            if let StackEvent::Progress { stack, step, .. } = &event {
                if let LaunchState::Starting(steps) = &mut app.launch {
                    match steps.iter_mut().find(|(s, _)| s == stack) {
                        Some(entry) => entry.1.clone_from(step),
                        None => steps.push((stack.clone(), step.clone())),
                    }
                }
            }
            if let StackEvent::Warning { stack, message } = &event {
                app.results.warnings.push((stack.clone(), message.clone()));
            }
            app.logs.push(describe_event(&event));
        }
        LaunchMsg::Launched { stacks, errors } => {
            app.launch = LaunchState::Done { stacks, errors };
            app.results.selected = 0;
        }
        LaunchMsg::LogSaved(Ok(path)) => app.say(format!("log saved to {path}")),
        LaunchMsg::LogSaved(Err(e)) => app.complain(format!("could not save the log: {e}")),
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

/// `c`: the selected stack's spec URL and key header, to the clipboard.
fn copy(app: &mut App) -> Vec<Effect> {
    let LaunchState::Done { stacks, .. } = &app.launch else {
        app.complain("nothing to copy yet".into());
        return Vec::new();
    };
    let Some(stack) = stacks.get(app.results.selected) else {
        return Vec::new();
    };
    let text = format!("{}\nX-API-Key: {}", stack.openapi_url, stack.api_key);
    let name = stack.name.clone();
    app.say(format!("copied the spec URL and key of {name} (OSC 52)"));
    vec![Effect::Copy(text)]
}

pub(in crate::tui) fn render(frame: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let mut lines = vec![Line::styled(" mcp-launch · results", t.title)];
    match &app.launch {
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
                let marker = if i == app.results.selected {
                    "▸"
                } else {
                    " "
                };
                lines.push(Line::from(vec![
                    Span::styled(format!("{marker} {} ", stack.name), t.title),
                    Span::styled(stack.openapi_url.clone(), t.good),
                ]));
                lines.push(Line::from(vec![
                    Span::styled("    key  ", t.dim),
                    Span::raw(format!(
                        "X-API-Key: {}",
                        displayed_key(&stack.api_key, app.results.reveal)
                    )),
                ]));
                let servers: Vec<String> = stack
                    .servers
                    .iter()
                    .map(|(name, ops)| format!("{name} ({ops})"))
                    .collect();
                lines.push(Line::from(vec![
                    Span::styled("    ops  ", t.dim),
                    Span::raw(format!("{} — {}", stack.operations, servers.join(", "))),
                ]));
                let reported = app
                    .results
                    .warnings
                    .iter()
                    .filter(|(s, _)| *s == stack.name);
                for warning in stack.warnings.iter().chain(reported.map(|(_, w)| w)) {
                    lines.push(Line::styled(format!("    ! {warning}"), t.warn));
                }
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
        Constraint::Length(if app.logs.visible {
            top_height
        } else {
            area.height
        }),
        Constraint::Fill(1),
    ])
    .areas(area);
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), top);
    if app.logs.visible {
        app.logs.render(frame, bottom, t);
    }
}

pub(in crate::tui) fn hints(app: &App) -> Line<'static> {
    key_hints(
        if app.logs.searching {
            SEARCH_KEYS
        } else {
            HINTS
        },
        &app.theme,
    )
}
