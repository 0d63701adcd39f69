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
    let [Effect::Save(_), Effect::Launch(choice)] = effects.as_slice() else {
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
        app.logs
            .pinned
            .map(|i| app.logs.lines[i].clone())
            .as_deref(),
        Some("[mcpo#a] line 19")
    );
    snapshot("results_log_search", &app);
    press(&mut app, &[KeyCode::Char('f')]);
    assert_eq!(app.logs.pinned, None);

    let effects = press(&mut app, &[KeyCode::Char('S')]);
    assert!(
        matches!(effects.as_slice(), [Effect::SaveLog(lines)] if lines.len() == app.logs.lines.len())
    );
    press(&mut app, &[KeyCode::Char('l')]);
    assert!(!app.logs.visible);

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

#[test]
fn every_screen_draws_in_a_tiny_terminal_without_panicking() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    let sizes = [(1, 1), (10, 3), (30, 8)];
    let mut screens = Vec::new();
    screens.push(app.clone());
    press(&mut app, &[KeyCode::Enter]);
    screens.push(app.clone());
    press(&mut app, &[KeyCode::Char('d')]);
    screens.push(app.clone());
    press(&mut app, &[KeyCode::Esc, KeyCode::Esc, KeyCode::Char('L')]);
    screens.push(app.clone());
    press(&mut app, &[KeyCode::Enter]);
    launched(&mut app);
    screens.push(app.clone());
    screens.push(App::collecting(
        Overrides::load(dir.path()).unwrap(),
        Theme::monochrome(),
    ));
    for screen in &screens {
        for (w, h) in sizes {
            let mut with_help = screen.clone();
            with_help.help = true;
            draw(screen, w, h);
            draw(&with_help, w, h);
        }
    }
}
