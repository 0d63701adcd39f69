//! The launch options and the results screen: keys, the effects they ask for, and snapshots.

use crossterm::event::KeyCode;

use super::*;
use crate::launch::events::StackEvent;
use crate::launch::launcher::ControllerChoice;
use crate::tui::msg::LaunchMsg;
use crate::tui::screens::launch::{Availability, TunnelChoice};
use crate::tui::screens::results::{LaunchState, StackResult};

fn news(app: &mut App, news: LaunchMsg) {
    app.update(Msg::Launch(news));
}

fn launched(app: &mut App) {
    news(
        app,
        LaunchMsg::Launched {
            stacks: vec![StackResult {
                name: "a".into(),
                openapi_url: "http://127.0.0.1:8000/openapi.json".into(),
                api_key: "KVzcEu0p5h5cxytfOlpibrAda911iPS99YKv7V28".into(),
                operations: 4,
                servers: vec![("everything".into(), 4)],
                warnings: vec!["server time is left out: it exited".into()],
                mcp: None,
            }],
            errors: vec![("b".into(), "every server failed".into())],
        },
    );
}

#[test]
fn launch_options_choose_and_launch() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    news(
        &mut app,
        LaunchMsg::Available(Availability {
            mcpo: false,
            cloudflared: false,
        }),
    );
    press(&mut app, &[KeyCode::Char('L')]);
    assert_eq!(app.screen, Screen::Launch);
    snapshot("launch_options", &app);

    // mcpo is not installed: refused with a notice, nothing launched.
    press(&mut app, &[KeyCode::Right, KeyCode::Right]);
    assert_eq!(app.launch_form.controller, ControllerChoice::Mcpo);
    assert!(press(&mut app, &[KeyCode::Enter]).is_empty());
    assert!(app.notice.as_ref().unwrap().is_error);

    press(&mut app, &[KeyCode::Left, KeyCode::Down, KeyCode::Left]);
    assert_eq!(app.launch_form.tunnel, TunnelChoice::Named);
    press(&mut app, &[KeyCode::Down, KeyCode::Backspace]);
    type_text(&mut app, "1");
    assert_eq!(app.launch_form.port, "8001");
    press(&mut app, &[KeyCode::Down]);
    type_text(&mut app, "https://q.example.com");
    assert_eq!(
        app.launch_form.public_url, "https://q.example.com",
        "q is typed, not quit"
    );
    snapshot("launch_options_named", &app);
    let effects = press(&mut app, &[KeyCode::Enter]);
    let [Effect::Save(_), Effect::Launch(choice, _)] = effects.as_slice() else {
        panic!("the choices saved, then one launch; got {effects:?}")
    };
    assert_eq!(choice.controller, ControllerChoice::Native);
    // Saved with the overrides, the next TUI offers the same choices.
    let (next, _) = App::new(
        Vec::new(),
        write_saves(dir.path(), std::slice::from_ref(&effects[0])),
        Theme::monochrome(),
    );
    assert_eq!(next.launch_form.tunnel, TunnelChoice::Named);
    assert_eq!(
        (
            next.launch_form.port.as_str(),
            next.launch_form.public_url.as_str()
        ),
        ("8001", "https://q.example.com")
    );
    assert_eq!(next.launch_form.controller, ControllerChoice::Native);
    assert_eq!(
        (choice.port, choice.public_url.as_deref()),
        (8001, Some("https://q.example.com"))
    );
    assert_eq!(app.screen, Screen::Results);
}

#[test]
fn results_show_progress_then_stacks_and_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    press(&mut app, &[KeyCode::Char('L'), KeyCode::Enter]);
    news(
        &mut app,
        LaunchMsg::Stack(StackEvent::Progress {
            stack: "a".into(),
            step: "starting the native bridge".into(),
            waited_secs: 0,
        }),
    );
    assert!(matches!(&app.launch, LaunchState::Starting(steps) if steps.len() == 1));
    snapshot("results_starting", &app);

    for i in 0..30 {
        news(&mut app, LaunchMsg::Log(format!("[mcpo#a] line {i}")));
    }
    news(
        &mut app,
        LaunchMsg::Stack(StackEvent::Warning {
            stack: "a".into(),
            message: "server broken is left out: it exited with code 3".into(),
        }),
    );
    launched(&mut app);
    snapshot("results", &app);
    assert!(draw(&app, 80, 24).contains("! server broken is left out"));

    press(&mut app, &[KeyCode::Char('v')]);
    assert!(draw(&app, 120, 40).contains("KVzcEu0p5h5cxytfOlpibrAda911iPS99YKv7V28"));
    let effects = press(&mut app, &[KeyCode::Char('c')]);
    let [Effect::Copy(text)] = effects.as_slice() else {
        panic!("a copy, got {effects:?}")
    };
    assert_eq!(
        text,
        "http://127.0.0.1:8000/openapi.json\nX-API-Key: KVzcEu0p5h5cxytfOlpibrAda911iPS99YKv7V28"
    );

    // Search: typed keys go to the search; Enter finds the newest older match.
    press(&mut app, &[KeyCode::Char('/')]);
    type_text(&mut app, "line 1");
    press(&mut app, &[KeyCode::Enter]);
    assert_eq!(
        app.results
            .logs
            .pinned
            .map(|i| app.results.logs.lines[i].clone())
            .as_deref(),
        Some("[mcpo#a] line 19")
    );
    snapshot("results_log_search", &app);
    press(&mut app, &[KeyCode::Char('f')]);
    assert_eq!(app.results.logs.pinned, None);

    let effects = press(&mut app, &[KeyCode::Char('S')]);
    assert!(
        matches!(effects.as_slice(), [Effect::SaveLog(lines)] if lines.len() == app.results.logs.lines.len())
    );
    press(&mut app, &[KeyCode::Char('l')]);
    assert!(!app.results.logs.visible);

    // Esc goes back to the preflight; L returns to what runs (no second launch).
    press(&mut app, &[KeyCode::Esc]);
    assert_eq!(app.screen, Screen::Preflight);
    press(&mut app, &[KeyCode::Char('L')]);
    assert_eq!(app.screen, Screen::Results);

    let effects = press(&mut app, &[KeyCode::Char('q'), KeyCode::Char('y')]);
    assert!(matches!(effects.as_slice(), [Effect::Quit]));
}

#[test]
fn a_launch_where_every_stack_failed_can_be_tried_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    press(&mut app, &[KeyCode::Char('L'), KeyCode::Enter]);
    news(
        &mut app,
        LaunchMsg::Launched {
            stacks: Vec::new(),
            errors: vec![("a".into(), "front port 8000 is taken".into())],
        },
    );
    press(&mut app, &[KeyCode::Esc, KeyCode::Char('L')]);
    assert_eq!(
        app.screen,
        Screen::Launch,
        "nothing runs: the options again"
    );
}

/// The lines of `draw`'s output, without the quotes.
fn lines(app: &App, width: u16, height: u16) -> Vec<String> {
    draw(app, width, height)
        .lines()
        .map(|l| l.trim_matches('"').to_string())
        .collect()
}

#[test]
fn every_screen_draws_in_a_tiny_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    // Each screen as reached by keys, with its title and the start of its key hints.
    let mut screens = vec![(app.clone(), " mcp-launch · preflight", " ↑↓ move ·")];
    press(&mut app, &[KeyCode::Enter]);
    assert!(matches!(app.screen, Screen::Server(_)));
    screens.push((app.clone(), " a/everything ok", " space all"));
    press(&mut app, &[KeyCode::Char('d')]);
    assert!(matches!(&app.screen, Screen::Describe(v) if v.tools == ["echo"]));
    screens.push((app.clone(), " a/everything · descriptions", " i edit · "));
    press(&mut app, &[KeyCode::Esc, KeyCode::Esc, KeyCode::Char('L')]);
    assert_eq!(app.screen, Screen::Launch);
    screens.push((app.clone(), " mcp-launch · launch", " ↑↓ field "));
    press(&mut app, &[KeyCode::Enter]);
    launched(&mut app);
    assert_eq!(app.screen, Screen::Results);
    screens.push((app.clone(), " mcp-launch · results", " v key · c"));
    let collecting = App::collecting(Overrides::load(dir.path()).unwrap(), Theme::monochrome());
    assert_eq!(collecting.screen, Screen::Collector);
    screens.push((collecting, " mcp-launch · config files", " tab compl"));

    for (app, title, hints) in &screens {
        let mut with_help = app.clone();
        with_help.help = true;
        // 30×8: the title on top, the key hints at the bottom; help covers the middle.
        let small = lines(app, 30, 8);
        assert!(small[0].starts_with(title), "{title}: {small:#?}");
        assert!(small[7].starts_with(hints), "{title}: {small:#?}");
        let help = lines(&with_help, 30, 8);
        assert!(help[0].starts_with("┌ keys"), "{title}: {help:#?}");
        assert!(help[7].starts_with(hints), "{title}: {help:#?}");
        // 10×3: the key hints still show; 1×1: one cell, drawn without a panic.
        let tiny = lines(app, 10, 3);
        assert_eq!(tiny.len(), 3);
        assert!(hints.starts_with(&tiny[2]), "{title}: {tiny:#?}");
        assert_eq!(lines(&with_help, 10, 3)[1], "└────────┘");
        assert_eq!(lines(app, 1, 1).len(), 1);
        assert_eq!(lines(&with_help, 1, 1), ["┌"]);
    }
}

/// Issue 25, item 20: a warning's fix names the TUI's keys, and a warning of several lines (a
/// crash's stderr tail) shows every line.
#[test]
fn results_warnings_speak_in_keys_and_keep_every_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    press(&mut app, &[KeyCode::Char('L'), KeyCode::Enter]);
    news(
        &mut app,
        LaunchMsg::Stack(StackEvent::Warning {
            stack: "a".into(),
            message: "fs/read_file: description cut from 400 to 300 characters; set a shorter \
                      one with `mcp-launch tool describe fs read_file --text \"…\"`"
                .into(),
        }),
    );
    news(
        &mut app,
        LaunchMsg::Stack(StackEvent::Warning {
            stack: "a".into(),
            message: "server db exited; last stderr lines:\n    cannot open database".into(),
        }),
    );
    launched(&mut app);
    let screen = draw(&app, 200, 40);
    // The stacks' pane, above the log (which keeps each event as it was said).
    let pane = screen.split(" log ·").next().unwrap();
    assert!(
        pane.contains("t (trim) or i (edit) on read_file"),
        "{screen}"
    );
    assert!(!pane.contains("`mcp-launch tool describe"), "{screen}");
    assert!(pane.contains("      cannot open database"), "{screen}");
}
