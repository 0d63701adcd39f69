//! `top`'s keys through `App::update`, its screen at 80×24 through `TestBackend`.

use std::path::PathBuf;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use super::app::{App, Effect, Msg, Sort};
use super::view;
use crate::observe::snapshot::{Process, Snapshot, Upstream};
use crate::tui::theme::Theme;

fn upstream(name: &str, state: &str, per_s: f64, p99: f64, errors: u64) -> Upstream {
    Upstream {
        name: name.into(),
        state: state.into(),
        calls: 120,
        calls_per_s: Some(per_s),
        p50_ms: Some(p99 / 4.0),
        p99_ms: Some(p99),
        errors,
        restarts: 1,
        idle_s: Some(75),
        cuts: 2,
        cut_bytes: 48_000,
        cut_tokens: 11_500,
        last_error: None,
    }
}

fn snapshot() -> Snapshot {
    let daemon = Process {
        kind: "daemon".into(),
        pid: 4242,
        configs: vec![PathBuf::from("/home/u/project/config.json")],
        channel: "/run/d-1.sock".into(),
        mode: Some("full".into()),
        controls: true,
        requests_per_s: Some(3.5),
        upstreams: vec![
            upstream("everything", "up", 2.5, 12.0, 0),
            upstream("fault", "stopped", 0.0, 3400.0, 4),
        ],
        ..Process::default()
    };
    let up = Process {
        kind: "up".into(),
        pid: 77,
        stacks: vec!["a".into()],
        address: Some("http://127.0.0.1:8800".into()),
        channel: "http://127.0.0.1:8800/metrics".into(),
        log: Some(PathBuf::from("/tmp/up.log")),
        upstreams: vec![upstream("time", "up", 0.5, 0.8, 1)],
        ..Process::default()
    };
    Snapshot {
        taken_unix_ms: 1,
        interval_ms: 1000,
        latency_window_ms: 60_000,
        processes: vec![daemon, up],
    }
}

fn key(code: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn app() -> App {
    let mut app = App::new();
    app.update(Msg::Snapshot(snapshot()));
    app
}

fn screen(app: &App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    let theme = Theme::monochrome();
    terminal.draw(|f| view::draw(app, &theme, f)).unwrap();
    terminal.backend().to_string()
}

#[test]
fn s_on_a_server_asks_its_process_to_stop_it_and_on_a_process_line_says_why_not() {
    let mut app = app();
    assert!(
        app.update(key(KeyCode::Char('s'))).is_empty(),
        "a process line"
    );
    assert!(matches!(app.notice, Some(Err(_))));
    app.update(key(KeyCode::Down));
    let effects = app.update(key(KeyCode::Char('s')));
    let [Effect::Control {
        process,
        server,
        is_stop,
    }] = effects.as_slice()
    else {
        panic!("{effects:?}");
    };
    assert_eq!(
        (process.pid, server.as_str(), *is_stop),
        (4242, "everything", true)
    );
    let effects = app.update(key(KeyCode::Char('r')));
    assert!(matches!(
        &effects[..],
        [Effect::Control { is_stop: false, .. }]
    ));
}

#[test]
fn the_selection_follows_its_server_across_samples_and_sorts() {
    let mut app = app();
    app.update(key(KeyCode::Down));
    app.update(key(KeyCode::Down));
    assert_eq!(app.selection().unwrap().1.unwrap().name, "fault");
    app.update(key(KeyCode::Char('o')));
    assert_eq!(app.sort, Sort::Rate);
    app.update(Msg::Snapshot(snapshot()));
    assert_eq!(app.selection().unwrap().1.unwrap().name, "fault");
    app.update(key(KeyCode::Char('o')));
    let rows = app.rows();
    let first = rows[1].upstream.unwrap();
    assert_eq!(
        app.snapshot.as_ref().unwrap().processes[0].upstreams[first].name,
        "fault",
        "p99 sort puts the slowest first"
    );
}

#[test]
fn l_reads_the_log_of_a_process_that_has_one_and_says_why_not_otherwise() {
    let mut app = app();
    assert!(app.update(key(KeyCode::Char('l'))).is_empty());
    assert!(
        app.log.as_ref().unwrap().lines.is_err(),
        "the daemon logs to a terminal"
    );
    app.update(key(KeyCode::Esc));
    assert!(app.log.is_none(), "Esc closes the pane, not top");
    for _ in 0..3 {
        app.update(key(KeyCode::Down));
    }
    let effects = app.update(key(KeyCode::Char('l')));
    assert_eq!(
        effects,
        vec![Effect::ReadLog(
            "up 77".into(),
            PathBuf::from("/tmp/up.log")
        )]
    );
    assert_eq!(app.update(key(KeyCode::Char('q'))), vec![Effect::Quit]);
}

#[test]
fn the_screen_at_80_by_24() {
    let app = app();
    insta::assert_snapshot!(screen(&app, 80, 24));
}

#[test]
fn the_log_pane_shows_the_end_and_scrolls_up() {
    let mut app = app();
    let lines = (1..=40).map(|n| format!("line {n}")).collect();
    app.update(Msg::Log("daemon 4242".into(), Ok(lines)));
    let text = screen(&app, 80, 24);
    assert!(
        text.contains("line 40") && !text.contains("line 10 "),
        "{text}"
    );
    app.update(key(KeyCode::PageUp));
    let text = screen(&app, 80, 24);
    assert!(
        text.contains("line 30") && !text.contains("line 40"),
        "{text}"
    );
}

#[test]
fn a_log_tail_drops_control_characters() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.log");
    std::fs::write(&path, "ok\n\x1b[31mred\x07\n").unwrap();
    let lines = super::read_tail(&path).unwrap();
    assert_eq!(lines, vec!["ok".to_string(), "·[31mred·".to_string()]);
}
