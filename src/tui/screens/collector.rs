//! The config collector, shown when `up --tui` gets no `--config`: the config files discovery
//! knows (existing ones), a path input with `~` and `$VAR` expansion and Tab completion, the
//! files chosen so far. Every file is loaded before it is accepted; a file that does not parse
//! is shown with its error (file, line, what to fix) and left out. Enter on an empty input
//! goes on to the preflight.

use std::path::PathBuf;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

use super::super::app::App;
use super::super::msg::Effect;
use super::super::widgets::{key_hints, typing_hints};

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

/// The keys of this screen, for the help overlay.
pub const KEYS: &[(&str, &str)] = &[
    ("text", "type a config path (~ and $VAR expand)"),
    ("tab", "complete the path"),
    (
        "enter",
        "add the typed or selected file; on an empty input: continue",
    ),
    ("↑↓", "move between the input and the lists"),
    ("del", "remove the selected accepted file"),
    ("esc", "clear the input"),
];

const HINTS: &[(&str, &str)] = &[
    ("tab", "complete"),
    ("enter", "add / continue"),
    ("↑↓", "lists"),
    ("del", "remove"),
];

/// While typing, `?` and `q` are text: quitting is ctrl-c.
const TYPING_HINTS: &[(&str, &str)] = &[
    ("tab", "complete"),
    ("enter", "add / continue"),
    ("↑↓", "lists"),
    ("ctrl-c", "quit"),
];

pub(in crate::tui) fn on_key(app: &mut App, key: KeyEvent) -> Vec<Effect> {
    let view = &mut app.collector;
    match (key.code, view.focus) {
        (KeyCode::Up, focus) => view.focus = step(focus, view, false),
        (KeyCode::Down, focus) => view.focus = step(focus, view, true),
        (KeyCode::Tab, Focus::Input) => return vec![Effect::CompletePath(view.input.clone())],
        (KeyCode::Esc, _) => {
            view.input.clear();
            view.completions.clear();
            view.focus = Focus::Input;
        }
        (KeyCode::Backspace, Focus::Input) => {
            view.input.pop();
        }
        (KeyCode::Char(c), Focus::Input) => view.input.push(c),
        (KeyCode::Delete | KeyCode::Char('d'), Focus::Accepted(i)) if i < view.accepted.len() => {
            view.accepted.remove(i);
            view.focus = if view.accepted.is_empty() {
                Focus::Input
            } else {
                Focus::Accepted(i.min(view.accepted.len() - 1))
            };
        }
        (KeyCode::Enter, Focus::Discovered(i)) => {
            if let Some(path) = view.discovered.get(i) {
                view.checking = true;
                return vec![Effect::CheckConfig(path.display().to_string())];
            }
        }
        (KeyCode::Enter, Focus::Input) if !view.input.trim().is_empty() => {
            view.checking = true;
            return vec![Effect::CheckConfig(view.input.trim().to_string())];
        }
        (KeyCode::Enter, _) if !view.accepted.is_empty() => {
            let paths = view.accepted.iter().map(|a| a.path.clone()).collect();
            return vec![Effect::LoadConfigs(paths)];
        }
        (KeyCode::Enter, _) => {
            app.complain(
                "add a config file first (type its path, or pick a discovered one)".into(),
            );
        }
        _ => {}
    }
    Vec::new()
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

/// The runtime's answers.
pub(in crate::tui) fn on_news(app: &mut App, news: CollectorMsg) {
    let view = &mut app.collector;
    match news {
        CollectorMsg::Discovered(paths) => view.discovered = paths,
        CollectorMsg::Checked {
            input,
            path,
            result,
        } => {
            view.checking = false;
            match result {
                Ok(_) if view.accepted.iter().any(|a| a.path == path) => {
                    app.complain(format!("{} is already added", path.display()));
                }
                Ok(servers) => {
                    view.refused = None;
                    if view.input.trim() == input {
                        view.input.clear();
                    }
                    view.completions.clear();
                    let shown = path.display().to_string();
                    view.accepted.push(Accepted { path, servers });
                    app.say(format!(
                        "added {shown} ({servers} server(s)); enter on an empty input continues"
                    ));
                }
                Err(error) => view.refused = Some((input, error)),
            }
        }
        CollectorMsg::Completions { input, candidates } => {
            if view.input != input {
                return;
            }
            match candidates.as_slice() {
                [] => app.complain(format!("nothing matches {input:?}")),
                [one] => {
                    view.input.clone_from(one);
                    view.completions.clear();
                }
                many => {
                    let common = common_prefix(many);
                    if common.len() > view.input.len() {
                        view.input = common;
                    }
                    view.completions = many.to_vec();
                }
            }
        }
    }
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

pub(in crate::tui) fn render(frame: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let view = &app.collector;
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

pub(in crate::tui) fn hints(app: &App) -> Line<'static> {
    if app.collector.focus == Focus::Input {
        typing_hints(TYPING_HINTS, &app.theme)
    } else {
        key_hints(HINTS, &app.theme)
    }
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
