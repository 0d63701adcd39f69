//! The config collector, shown when `up --tui` gets no `--config`: the config files discovery
//! knows (existing ones), a path input with `~` and `$VAR` expansion and Tab completion, the
//! files chosen so far. Every file is loaded before it is accepted; a file that does not parse
//! is shown with its error (file, line, what to fix) and left out. Enter on an empty input
//! goes on to the preflight.

use std::path::PathBuf;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

use super::super::component::{Action, Command, Component, Ctx, Handled};
use super::super::msg::Effect;

/// A config file the collector accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// The file, absolute.
    pub path: PathBuf,
    /// Its servers.
    pub servers: usize,
}

/// Where the keys go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Focus {
    /// The path input.
    #[default]
    Input,
    /// The n-th discovered file.
    Discovered(usize),
    /// The n-th accepted file.
    Accepted(usize),
}

/// The collector's state.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CollectorView {
    /// Existing files from discovery's list.
    pub discovered: Vec<PathBuf>,
    /// Files accepted, in order (one stack each).
    pub accepted: Vec<Accepted>,
    /// The path being typed.
    pub input: String,
    /// Where the keys go.
    pub focus: Focus,
    /// The last Tab's candidates when there were several.
    pub completions: Vec<String>,
    /// The last file refused, and why.
    pub refused: Option<(String, String)>,
    /// A file is being loaded.
    pub checking: bool,
}

/// What the runtime answers the collector.
#[derive(Debug, Clone)]
pub enum CollectorMsg {
    /// The existing files of discovery's list.
    Discovered(Vec<PathBuf>),
    /// `input` loaded as `path` with this many servers, or the error.
    Checked {
        /// What was typed (or chosen).
        input: String,
        /// The expanded, absolute path.
        path: PathBuf,
        /// Its servers, or the load error.
        result: Result<usize, String>,
    },
    /// Completions of `input`: the paths it could continue to.
    Completions {
        /// What was typed.
        input: String,
        /// The candidates (directories end with `/`).
        candidates: Vec<String>,
    },
}

const COMPLETE: Command = Command::bar("tab", "complete the path", &[("tab", "complete")]);
const ENTER: Command = Command::bar(
    "enter",
    "add the typed or selected file; on an empty input: continue",
    &[("enter", "add / continue")],
);
const MOVE: Command = Command::bar(
    "↑↓",
    "move between the input and the lists",
    &[("↑↓", "lists")],
);
const CLEAR: Command = Command::help("esc", "clear the input");
const EDIT: Command = Command::help("ctrl-u ctrl-w", "clear the path / delete its last part");

/// What the keys do while the lists have them.
const COMMANDS: &[Command] = &[
    Command::help("text", "type a config path (~ and $VAR expand)"),
    COMPLETE,
    ENTER,
    MOVE,
    Command::bar(
        "del d",
        "remove the selected accepted file",
        &[("del", "remove")],
    ),
    CLEAR,
];

/// What the keys do while a path is typed: `?` and `q` are text, quitting is ctrl-c.
const TYPING_COMMANDS: &[Command] = &[
    COMPLETE,
    ENTER,
    MOVE,
    CLEAR,
    EDIT,
    Command::bar("ctrl-c", "quit (asks first)", &[("ctrl-c", "quit")]),
];

impl Component for CollectorView {
    fn handle_key(&mut self, key: KeyEvent, _: &Ctx) -> Handled<Option<Action>> {
        let run = |effect| Handled::then(Action::Run(effect));
        match (key.code, self.focus) {
            (KeyCode::Up, focus) => self.focus = step(focus, self, false),
            (KeyCode::Down, focus) => self.focus = step(focus, self, true),
            (KeyCode::Tab, Focus::Input) => return run(Effect::CompletePath(self.input.clone())),
            (KeyCode::Esc, _) => {
                self.input.clear();
                self.completions.clear();
                self.focus = Focus::Input;
            }
            (KeyCode::Backspace, Focus::Input) => {
                self.input.pop();
            }
            // The shell's line editing: ctrl-u clears, ctrl-w deletes the last part of the path.
            (KeyCode::Char('u'), Focus::Input) if key.modifiers == KeyModifiers::CONTROL => {
                self.input.clear()
            }
            (KeyCode::Char('w'), Focus::Input) if key.modifiers == KeyModifiers::CONTROL => {
                delete_last_part(&mut self.input)
            }
            // Other control keys are not text.
            (KeyCode::Char(_), Focus::Input) if key.modifiers.contains(KeyModifiers::CONTROL) => {
                return Handled::Ignored
            }
            (KeyCode::Char(c), Focus::Input) => self.input.push(c),
            (KeyCode::Delete | KeyCode::Char('d'), Focus::Accepted(i))
                if i < self.accepted.len() =>
            {
                self.remove(i)
            }
            (KeyCode::Enter, focus) => return self.on_enter(focus),
            _ => return Handled::Ignored,
        }
        Handled::done()
    }

    fn commands(&self) -> &'static [Command] {
        if self.is_typing() {
            TYPING_COMMANDS
        } else {
            COMMANDS
        }
    }

    fn is_typing(&self) -> bool {
        self.focus == Focus::Input
    }

    fn render(&self, frame: &mut Frame, area: Rect, ctx: &Ctx) {
        render(frame, area, ctx, self);
    }
}

/// Ctrl-W in a path: the last component and the separators after it (`~/a/b.json` → `~/a/`,
/// `~/a/` → `~/`), or the last word after a space.
fn delete_last_part(input: &mut String) {
    let kept = input.trim_end_matches(['/', ' ']).len();
    input.truncate(kept);
    let start = input.rfind(['/', ' ']).map_or(0, |i| i + 1);
    input.truncate(start);
}

impl CollectorView {
    /// Removes the `i`-th accepted file; the focus stays in that list while it has files.
    fn remove(&mut self, i: usize) {
        self.accepted.remove(i);
        self.focus = if self.accepted.is_empty() {
            Focus::Input
        } else {
            Focus::Accepted(i.min(self.accepted.len() - 1))
        };
    }

    /// Enter: load the file picked or typed; on an empty input, go on with the files added.
    fn on_enter(&mut self, focus: Focus) -> Handled<Option<Action>> {
        let action = match focus {
            Focus::Discovered(i) => {
                let Some(path) = self.discovered.get(i) else {
                    return Handled::done();
                };
                self.checking = true;
                Action::Run(Effect::CheckConfig(path.display().to_string()))
            }
            Focus::Input if !self.input.trim().is_empty() => {
                self.checking = true;
                Action::Run(Effect::CheckConfig(self.input.trim().to_string()))
            }
            _ if !self.accepted.is_empty() => {
                let paths = self.accepted.iter().map(|a| a.path.clone()).collect();
                Action::Run(Effect::LoadConfigs(paths))
            }
            _ => Action::Complain(
                "add a config file first (type its path, or pick a discovered one)".into(),
            ),
        };
        Handled::then(action)
    }

    /// The runtime's answers; what to say about them.
    pub(in crate::tui) fn on_news(&mut self, news: CollectorMsg) -> Option<Action> {
        match news {
            CollectorMsg::Discovered(paths) => {
                self.discovered = paths;
                None
            }
            CollectorMsg::Checked {
                input,
                path,
                result,
            } => self.on_checked(input, path, result),
            CollectorMsg::Completions { input, candidates } => {
                self.on_completions(input, candidates)
            }
        }
    }

    fn on_checked(
        &mut self,
        input: String,
        path: PathBuf,
        result: Result<usize, String>,
    ) -> Option<Action> {
        self.checking = false;
        match result {
            Ok(_) if self.accepted.iter().any(|a| a.path == path) => Some(Action::Complain(
                format!("{} is already added", path.display()),
            )),
            Ok(servers) => {
                self.refused = None;
                if self.input.trim() == input {
                    self.input.clear();
                }
                self.completions.clear();
                let shown = path.display().to_string();
                self.accepted.push(Accepted { path, servers });
                Some(Action::Say(format!(
                    "added {shown} ({servers} server(s)); enter on an empty input continues"
                )))
            }
            Err(error) => {
                self.refused = Some((input, error));
                None
            }
        }
    }

    fn on_completions(&mut self, input: String, candidates: Vec<String>) -> Option<Action> {
        if self.input != input {
            return None;
        }
        match candidates.as_slice() {
            [] => return Some(Action::Complain(format!("nothing matches {input:?}"))),
            [one] => {
                self.input.clone_from(one);
                self.completions.clear();
            }
            many => {
                let common = common_prefix(many);
                if common.len() > self.input.len() {
                    self.input = common;
                }
                self.completions = many.to_vec();
            }
        }
        None
    }
}

/// The focus after ↑ or ↓: input, then the discovered files, then the accepted ones.
fn step(focus: Focus, view: &CollectorView, down: bool) -> Focus {
    let mut order = vec![Focus::Input];
    order.extend((0..view.discovered.len()).map(Focus::Discovered));
    order.extend((0..view.accepted.len()).map(Focus::Accepted));
    let at = order.iter().position(|f| *f == focus).unwrap_or(0);
    let next = if down {
        (at + 1).min(order.len() - 1)
    } else {
        at.saturating_sub(1)
    };
    order[next]
}

fn common_prefix(items: &[String]) -> String {
    let first = &items[0];
    let mut end = first.len();
    for item in &items[1..] {
        end = end.min(
            first
                .char_indices()
                .zip(item.chars())
                .take_while(|((_, a), b)| a == b)
                .last()
                .map_or(0, |((i, c), _)| i + c.len_utf8()),
        );
    }
    first[..end].to_string()
}

fn render(frame: &mut Frame, area: Rect, app: &Ctx, view: &CollectorView) {
    let t = app.theme;
    let focus = |f: Focus| {
        if view.focus == f {
            t.selected
        } else {
            ratatui::style::Style::new()
        }
    };
    let mut lines = vec![
        Line::styled(" mcp-launch · config files", t.title),
        Line::raw(""),
        Line::from(vec![
            Span::styled(" path  ", t.dim),
            Span::styled(format!("{}▏", view.input), focus(Focus::Input)),
            Span::styled(if view.checking { "  loading…" } else { "" }, t.warn),
        ]),
    ];
    if !view.completions.is_empty() {
        let shown: Vec<&str> = view
            .completions
            .iter()
            .take(8)
            .map(String::as_str)
            .collect();
        let more = view.completions.len().saturating_sub(8);
        let tail = if more > 0 {
            format!("  (+{more})")
        } else {
            String::new()
        };
        lines.push(Line::styled(
            format!("       {}{tail}", shown.join("  ")),
            t.dim,
        ));
    }
    if let Some((input, error)) = &view.refused {
        lines.push(Line::styled(format!(" not added: {input}"), t.bad));
        for text in error.lines() {
            lines.push(Line::styled(format!("   {text}"), t.bad));
        }
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled(" discovered", t.dim));
    if view.discovered.is_empty() {
        lines.push(Line::styled("   none of ./.mcp.json, ./mcp.config.json, ./.claude/mcp.json, ~/.claude/mcp.json exists", t.dim));
    }
    for (i, path) in view.discovered.iter().enumerate() {
        lines.push(Line::styled(
            format!("   {}", path.display()),
            focus(Focus::Discovered(i)),
        ));
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled(" added (one stack each)", t.dim));
    if view.accepted.is_empty() {
        lines.push(Line::styled("   none yet", t.dim));
    }
    for (i, accepted) in view.accepted.iter().enumerate() {
        lines.push(Line::from(vec![
            Span::styled(
                format!("   {}", accepted.path.display()),
                focus(Focus::Accepted(i)),
            ),
            Span::styled(format!("  {} server(s)", accepted.servers), t.good),
        ]));
    }
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), area);
}

#[cfg(test)]
mod tests {
    use super::common_prefix;

    #[test]
    fn common_prefixes() {
        let items = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            common_prefix(&items(&["conf/a.json", "conf/ab.json"])),
            "conf/a"
        );
        assert_eq!(common_prefix(&items(&["x", "y"])), "");
        assert_eq!(common_prefix(&items(&["één", "éénx"])), "één");
    }
}
