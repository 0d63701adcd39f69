//! The commands each screen lists are the keys it handles and what its help and status bar
//! show: checked for every screen in each of its states, so neither can drift from the keys.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::text::Line;

use super::*;
use crate::tui::component::{Action, Component, Ctx, Handled};
use crate::tui::screens::collector::CollectorMsg;
use crate::tui::screens::launch::{Availability, LaunchForm};
use crate::tui::screens::preflight::PreflightView;
use crate::tui::screens::server::ServerView;
use crate::tui::widgets::status_hints;

/// The keys a command's `keys` names (`↑↓ j k`, `pgup pgdn`, `ctrl-s`, `0-9 / text`…).
fn parse_keys(keys: &str) -> Vec<KeyEvent> {
    let mut parsed = Vec::new();
    for token in keys.split_whitespace() {
        let codes: Vec<KeyCode> = match token {
            "↑↓" => vec![KeyCode::Up, KeyCode::Down],
            "←→" => vec![KeyCode::Left, KeyCode::Right],
            "↑" => vec![KeyCode::Up],
            "↓" => vec![KeyCode::Down],
            "←" => vec![KeyCode::Left],
            "→" => vec![KeyCode::Right],
            "pgup" => vec![KeyCode::PageUp],
            "home" => vec![KeyCode::Home],
            "end" => vec![KeyCode::End],
            "⇧tab" => vec![KeyCode::BackTab],
            "pgdn" => vec![KeyCode::PageDown],
            "enter" => vec![KeyCode::Enter],
            "esc" => vec![KeyCode::Esc],
            "tab" => vec![KeyCode::Tab],
            "space" => vec![KeyCode::Char(' ')],
            "del" => vec![KeyCode::Delete],
            "backspace" => vec![KeyCode::Backspace],
            // Typed text: a letter, a digit.
            "text" => vec![KeyCode::Char('x')],
            "0-9" => ('0'..='9').map(KeyCode::Char).collect(),
            _ => match token.strip_prefix("ctrl-") {
                Some(key) => {
                    let c = key.chars().next().expect("ctrl- and a key");
                    parsed.push(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL));
                    continue;
                }
                None => {
                    let mut chars = token.chars();
                    let c = chars.next().unwrap();
                    assert!(chars.next().is_none(), "unknown key name {token:?}");
                    vec![KeyCode::Char(c)]
                }
            },
        };
        parsed.extend(codes.into_iter().map(KeyEvent::from));
    }
    parsed
}

/// Every screen, in each state that changes its commands (and those that bind more keys).
fn screens(dir: &std::path::Path) -> Vec<(&'static str, Vec<App>)> {
    let preflight = app(dir);
    let after = |from: &App, codes: &[KeyCode]| {
        let mut next = from.clone();
        press(&mut next, codes);
        next
    };
    let server = after(&preflight, &[KeyCode::Enter]);
    let launch = after(&preflight, &[KeyCode::Char('L')]);
    let results = after(&launch, &[KeyCode::Enter]);
    let mut collecting = App::collecting(Overrides::load(dir).unwrap(), Theme::monochrome());
    collecting.update(Msg::Collector(CollectorMsg::Discovered(vec![
        "/home/ann/.claude/mcp.json".into(),
    ])));
    collecting.update(Msg::Collector(CollectorMsg::Checked {
        input: "a.json".into(),
        path: "/work/a.json".into(),
        result: Ok(2),
    }));
    vec![
        ("preflight", vec![preflight.clone()]),
        (
            "server",
            vec![server.clone(), after(&server, &[KeyCode::Char('/')])],
        ),
        (
            "describe",
            vec![
                after(&server, &[KeyCode::Char('d')]),
                after(&server, &[KeyCode::Char('i')]),
            ],
        ),
        (
            "launch",
            vec![
                launch.clone(),
                after(&launch, &[KeyCode::Down, KeyCode::Down]),
                after(
                    &launch,
                    &[KeyCode::Down, KeyCode::Left, KeyCode::Down, KeyCode::Down],
                ),
            ],
        ),
        (
            "collector",
            vec![
                collecting.clone(),
                after(&collecting, &[KeyCode::Down]),
                after(&collecting, &[KeyCode::Down, KeyCode::Down]),
            ],
        ),
        (
            "results",
            vec![results.clone(), after(&results, &[KeyCode::Char('/')])],
        ),
    ]
}

fn text_of(line: &Line) -> String {
    line.spans.iter().map(|s| s.content.as_ref()).collect()
}

#[test]
fn every_key_a_screen_lists_is_one_it_handles() {
    let dir = tempfile::tempdir().unwrap();
    for (screen, states) in screens(dir.path()) {
        for state in &states {
            for command in state.front().commands() {
                for key in parse_keys(command.keys) {
                    // App-wide: the app takes ctrl-c before any screen.
                    if key.code == KeyCode::Char('c') && key.modifiers == KeyModifiers::CONTROL {
                        continue;
                    }
                    let handled = states
                        .iter()
                        .any(|s| matches!(s.clone().screen_key(key), Handled::Consumed(_)));
                    assert!(
                        handled,
                        "{screen}: {:?} ({}) is listed but no state of the screen takes {key:?}",
                        command.keys, command.help
                    );
                }
            }
        }
    }
}

#[test]
fn the_help_and_the_status_bar_show_the_screens_commands() {
    let dir = tempfile::tempdir().unwrap();
    for (screen, states) in screens(dir.path()) {
        for mut state in states {
            state.notice = None;
            let front = state.front();
            let (commands, typing) = (front.commands(), front.is_typing());
            let drawn = draw(&state, 120, 40);
            let bar = drawn.lines().last().unwrap().trim_matches('"').trim_end();
            let hints = text_of(&status_hints(commands, typing, &state.theme));
            assert_eq!(bar, hints.trim_end(), "{screen}: the status bar");
            for command in commands.iter().filter(|c| !c.bar.is_empty()) {
                for (keys, word) in command.bar {
                    assert!(bar.contains(&format!("{keys} {word}")), "{screen}: {bar}");
                }
            }
            if typing {
                // `?` is text here: no help to open.
                press(&mut state, &[KeyCode::Char('?')]);
                assert!(!state.help, "{screen}: ? is typed");
                continue;
            }
            press(&mut state, &[KeyCode::Char('?')]);
            assert!(state.help, "{screen}: ? opens the help");
            let help = draw(&state, 120, 40);
            for command in commands {
                // The keys' column is 15 wide, then a one-column gap.
                let row = format!("{:<16}{}", command.keys, command.help);
                assert!(
                    help.contains(&row),
                    "{screen}: the help lacks {row:?}:\n{help}"
                );
            }
        }
    }
}

fn ctx<'a>(rows: &'a [model::Row], overrides: &'a Overrides, theme: &'a Theme) -> Ctx<'a> {
    Ctx {
        stacks: &[],
        configs: &[],
        rows,
        overrides,
        available: Availability::default(),
        launch: &crate::tui::screens::results::LaunchState::Idle,
        theme,
        tick: 0,
    }
}

#[test]
fn keys_become_actions_without_an_app() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = app(dir.path());
    let (rows, overrides, theme) = (fixture.rows, fixture.overrides, Theme::monochrome());
    let ctx = ctx(&rows, &overrides, &theme);

    let mut preflight = PreflightView::default();
    let r = KeyEvent::from(KeyCode::Char('r'));
    assert!(matches!(
        preflight.handle_key(r, &ctx),
        Handled::Consumed(Some(Action::Retry(rows))) if rows == [0]
    ));
    let failed = preflight.handle_key(KeyEvent::from(KeyCode::Char('R')), &ctx);
    assert!(matches!(failed, Handled::Consumed(Some(Action::Retry(rows))) if rows == [2]));
    let opened = preflight.handle_key(KeyEvent::from(KeyCode::Enter), &ctx);
    assert!(matches!(
        opened,
        Handled::Consumed(Some(Action::Show(Screen::Server(ServerView {
            row: 0,
            ..
        }))))
    ));
    let question = preflight.handle_key(KeyEvent::from(KeyCode::Char('?')), &ctx);
    assert!(matches!(question, Handled::Ignored), "the app's key");

    // `add` is denied in the fixture: space on it asks to allow it.
    let mut server = ServerView::new(0);
    server.handle_key(KeyEvent::from(KeyCode::Down), &ctx);
    let space = server.handle_key(KeyEvent::from(KeyCode::Char(' ')), &ctx);
    assert!(
        matches!(&space, Handled::Consumed(Some(Action::SetAllowed { row: 0, tools, allow: true })) if tools == &["add"]),
        "{space:?}"
    );

    // Nothing installed: an mcpo launch is refused with why; an auto one goes ahead.
    let mut form = LaunchForm::default();
    let enter = KeyEvent::from(KeyCode::Enter);
    assert!(matches!(
        form.handle_key(enter, &ctx),
        Handled::Consumed(Some(Action::Launch(_)))
    ));
    form.handle_key(KeyEvent::from(KeyCode::Left), &ctx);
    assert!(matches!(
        form.handle_key(enter, &ctx),
        Handled::Consumed(Some(Action::Complain(why))) if why.contains("mcpo")
    ));
}

/// Keys a screen might bind: every printable ASCII character and the named keys.
fn candidate_keys() -> Vec<KeyEvent> {
    let named = [
        KeyCode::Up,
        KeyCode::Down,
        KeyCode::Left,
        KeyCode::Right,
        KeyCode::PageUp,
        KeyCode::PageDown,
        KeyCode::Home,
        KeyCode::End,
        KeyCode::Enter,
        KeyCode::Esc,
        KeyCode::Tab,
        KeyCode::BackTab,
        KeyCode::Backspace,
        KeyCode::Delete,
    ];
    let chars = (' '..='~').map(KeyCode::Char);
    named.into_iter().chain(chars).map(KeyEvent::from).collect()
}

#[test]
fn every_key_a_screen_takes_is_listed() {
    let dir = tempfile::tempdir().unwrap();
    let mut unlisted = Vec::new();
    for (screen, states) in screens(dir.path()) {
        let listed: Vec<KeyEvent> = states
            .iter()
            .flat_map(|s| s.front().commands())
            .flat_map(|c| parse_keys(c.keys))
            .collect();
        for state in states.iter().filter(|s| !s.front().is_typing()) {
            for key in candidate_keys() {
                let taken = matches!(state.clone().screen_key(key), Handled::Consumed(_));
                if taken && !listed.contains(&key) && !unlisted.contains(&(screen, key.code)) {
                    unlisted.push((screen, key.code));
                }
            }
        }
    }
    assert!(
        unlisted.is_empty(),
        "taken but listed by no command: {unlisted:?}"
    );
}
