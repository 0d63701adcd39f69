//! The TUI without a terminal: update functions driven by messages, and every screen drawn on
//! ratatui's `TestBackend` at 80×24 and 120×40 and compared with its snapshot
//! (`src/tui/snapshots/`; review changes with `cargo insta review`).

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use serde_json::{json, Value};

use super::app::{App, Screen};
use super::model::{self, Badge, Check};
use super::msg::{Effect, Msg};
use super::theme::Theme;
use super::view;
use crate::catalog::{Edit, Overrides, ServerReport, Status};
use crate::config::{ServerEntry, ServerSpec};
use crate::mcp::McpError;
use crate::process::Exit;

mod approve;
mod collector;
mod commands;
mod consent;
mod describe;
mod effects;
mod launch;

fn entry(stack: &str, name: &str) -> ServerEntry {
    ServerEntry {
        name: name.into(),
        qualified: format!("{stack}/{name}"),
        stack: stack.into(),
        line: Some(3),
        disabled: false,
        spec: Ok(ServerSpec::Stdio {
            command: format!("/usr/bin/{name}"),
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
        }),
    }
}

fn tool(name: &str, description: &str) -> Value {
    json!({"name": name, "description": description, "inputSchema": {"type": "object"}})
}

fn connected(entry: &ServerEntry, tools: &[(&str, &str, usize)], init_ms: u64) -> ServerReport {
    let mut report = ServerReport::blank(entry, "stdio");
    report.status = Status::Connected;
    report.tools = tools.iter().map(|(n, d, _)| tool(n, d)).collect();
    report.tool_tokens = tools.iter().map(|(_, _, t)| *t).collect();
    report.init_time = Some(Duration::from_millis(init_ms));
    report.protocol_version = Some("2025-06-18".into());
    report
}

fn failed(entry: &ServerEntry) -> ServerReport {
    let mut report = ServerReport::blank(entry, "stdio");
    report.error = Some(
        McpError::Exited {
            method: "initialize".into(),
            exit: Some(Exit::Code(3)),
            stderr_tail: "Error: GITHUB_TOKEN is not set".into(),
        }
        .into(),
    );
    report
}

const EVERYTHING: &[(&str, &str, usize)] = &[
    ("echo", "Echoes back the input", 61),
    ("add", "Adds two numbers", 78),
    (
        "longRunningOperation",
        "Demonstrates a long running operation with progress updates",
        121,
    ),
    ("get_file_contents", "Reads a file", 70),
    ("getTinyImage", "Returns the MCP_TINY_IMAGE", 45),
];

/// Two stacks: `a` with a connected server and one still checking, `b` with a failed server
/// and one the overrides disable.
fn app(dir: &std::path::Path) -> App {
    let entries = vec![
        entry("a", "everything"),
        entry("a", "time"),
        entry("b", "github"),
        entry("b", "memory"),
    ];
    let chosen = [
        Edit::set_disabled(&entries[3], true),
        Edit::Deny {
            stack: "a".into(),
            server: "everything".into(),
            tools: vec!["add".into()],
        },
    ];
    let overrides = Overrides::update(dir, &chosen).unwrap().overrides;
    let (mut app, effects) = App::new(entries.clone(), overrides, Theme::monochrome());
    assert_eq!(effects.len(), 4, "one check per server");
    app.update(Msg::Checked {
        row: 0,
        report: Box::new(connected(&entries[0], EVERYTHING, 412)),
    });
    app.update(Msg::Checked {
        row: 2,
        report: Box::new(failed(&entries[2])),
    });
    app
}

/// Whether the server of `row` exposes `tool` under the app's overrides.
fn allowed(app: &App, row: usize, tool: &str) -> bool {
    let tools = app.rows[row].tools(&app.overrides);
    tools
        .iter()
        .find(|t| t.name == tool)
        .expect("a known tool")
        .allowed
}

fn key(code: KeyCode) -> Msg {
    Msg::Key(KeyEvent::from(code))
}

/// Writes the edits of every [`Effect::Save`] in `effects`, as the runtime would; the file's
/// content after.
fn write_saves(dir: &std::path::Path, effects: &[Effect]) -> Overrides {
    let mut on_disk = Overrides::load(dir).unwrap();
    for effect in effects {
        if let Effect::Save(edits) = effect {
            on_disk = Overrides::update(dir, edits).unwrap().overrides;
        }
    }
    on_disk
}

fn press(app: &mut App, codes: &[KeyCode]) -> Vec<Effect> {
    codes.iter().flat_map(|c| app.update(key(*c))).collect()
}

/// Types `text`, one key per character.
fn type_text(app: &mut App, text: &str) -> Vec<Effect> {
    let keys: Vec<KeyCode> = text.chars().map(KeyCode::Char).collect();
    press(app, &keys)
}

fn draw(app: &App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|frame| view::draw(frame, app)).unwrap();
    terminal.backend().to_string()
}

/// Snapshots of `app` at both sizes.
fn snapshot(name: &str, app: &App) {
    insta::assert_snapshot!(format!("{name}_80x24"), draw(app, 80, 24));
    insta::assert_snapshot!(format!("{name}_120x40"), draw(app, 120, 40));
}

#[test]
fn preflight_screen() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path());
    snapshot("preflight", &app);
}

#[test]
fn preflight_with_the_error_detail() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    press(&mut app, &[KeyCode::Down, KeyCode::Down, KeyCode::Enter]);
    assert!(app.preflight.detail);
    snapshot("preflight_error_detail", &app);
}

/// Issue 11: at 120 columns the SERVER column took ~50 columns and cut the note mid-word.
#[test]
fn preflight_columns_fit_their_content_and_the_detail_shows_the_whole_note() {
    let dir = tempfile::tempdir().unwrap();
    let long_name = "a-server-with-a-remarkably-long-name-for-a-config-key-indeed";
    let entries = vec![entry("a", "github"), entry("a", long_name)];
    let (mut app, _) = App::new(
        entries.clone(),
        Overrides::load(dir.path()).unwrap(),
        Theme::monochrome(),
    );
    app.update(Msg::Checked {
        row: 0,
        report: Box::new(failed(&entries[0])),
    });
    let mut slow = connected(&entries[1], EVERYTHING, 7_000);
    slow.used_slow_window = true;
    slow.warnings = vec![format!(
        "{} duplicate name(s): {}",
        2,
        "echo, add ".repeat(12)
    )];
    app.update(Msg::Checked {
        row: 1,
        report: Box::new(slow),
    });
    let screen = draw(&app, 120, 40);
    let line = |needle: &str| {
        screen
            .lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no {needle}:\n{screen}"))
            .to_string()
    };
    // The server column is as wide as the names, capped at a quarter of the screen.
    let header = line("SERVER");
    assert_eq!(
        header.find("TRANSPORT").unwrap() - header.find("SERVER").unwrap(),
        31
    );
    assert!(line("a/a-server-with").contains("…"), "{screen}");
    // The notes take the rest, cut at a word boundary.
    assert!(
        line("a/github").contains(" server exited with code 3 during… "),
        "{screen}"
    );
    let cut = line("a/a-server-with");
    assert!(cut.contains("add…") || cut.contains("echo…"), "{cut}");

    // The detail pane shows every note whole.
    press(&mut app, &[KeyCode::Down, KeyCode::Char('d')]);
    let screen = draw(&app, 120, 40);
    assert!(screen.contains("answered in the slow window"), "{screen}");
    assert!(screen.contains(&"echo, add ".repeat(6)), "{screen}");
    press(&mut app, &[KeyCode::Up]);
    let screen = draw(&app, 120, 40);
    assert!(
        screen.contains("during initialize; last stderr lines:"),
        "{screen}"
    );
}

#[test]
fn preflight_with_no_servers() {
    let dir = tempfile::tempdir().unwrap();
    let (app, effects) = App::new(
        Vec::new(),
        Overrides::load(dir.path()).unwrap(),
        Theme::monochrome(),
    );
    assert!(effects.is_empty());
    snapshot("preflight_empty", &app);
}

#[test]
fn preflight_overflows_into_a_scrolled_table() {
    let dir = tempfile::tempdir().unwrap();
    let entries: Vec<ServerEntry> = (0..40)
        .map(|i| entry("big", &format!("server{i:02}")))
        .collect();
    let (mut app, _) = App::new(
        entries.clone(),
        Overrides::load(dir.path()).unwrap(),
        Theme::monochrome(),
    );
    for (row, e) in entries.iter().enumerate() {
        app.update(Msg::Checked {
            row,
            report: Box::new(connected(e, EVERYTHING, 100 + row as u64)),
        });
    }
    press(&mut app, &[KeyCode::End]);
    assert_eq!(app.preflight.selected, 39);
    snapshot("preflight_overflow", &app);
}

#[test]
fn server_screen_with_a_filter() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    press(&mut app, &[KeyCode::Enter]);
    assert!(matches!(app.screen, Screen::Server(_)));
    snapshot("server", &app);
    type_text(&mut app, "/gfc");
    snapshot("server_filtering", &app);
}

#[test]
fn help_and_quit_prompt_overlays() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    press(&mut app, &[KeyCode::Char('?')]);
    assert!(app.help);
    snapshot("help_preflight", &app);
    press(&mut app, &[KeyCode::Esc, KeyCode::Char('q')]);
    assert!(!app.help && app.confirm_quit);
    snapshot("quit_prompt", &app);
}

#[test]
fn badges_and_totals_follow_the_checks_and_overrides() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path());
    let badges: Vec<Badge> = app.rows.iter().map(|r| r.badge(&app.overrides)).collect();
    assert_eq!(
        badges,
        [Badge::Ok, Badge::Checking, Badge::Error, Badge::Disabled]
    );
    let a = model::totals(app.stack_rows("a"), &app.overrides);
    assert_eq!((a.servers, a.checking, a.tools, a.allowed), (2, 1, 5, 4));
    assert_eq!((a.tokens_before, a.tokens_after), (375, 297));
    let b = model::totals(app.stack_rows("b"), &app.overrides);
    assert_eq!((b.servers, b.errors, b.tools), (2, 1, 0));
}

#[test]
fn space_toggles_a_tool_and_saves() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    press(&mut app, &[KeyCode::Enter, KeyCode::Down]);
    let effects = press(&mut app, &[KeyCode::Char(' ')]);
    assert!(matches!(effects.as_slice(), [Effect::Save(_)]));
    assert!(allowed(&app, 0, "add"));
    let again = press(&mut app, &[KeyCode::Char(' ')]);
    assert!(!allowed(&app, 0, "add"));
    // Saved, the choice is what the next run loads.
    let loaded = write_saves(dir.path(), &effects);
    assert!(loaded
        .for_server("a", "everything")
        .is_none_or(|s| s.is_allowed("add")));
    assert!(loaded.for_server("b", "memory").unwrap().disabled == Some(true));
    let loaded = write_saves(dir.path(), &again);
    assert!(!loaded
        .for_server("a", "everything")
        .unwrap()
        .is_allowed("add"));
}

/// Denies `tool` of `a/everything` as another process would (`mcp-launch tool deny`).
fn deny_outside(dir: &std::path::Path, tool: &str) -> Overrides {
    let edit = Edit::Deny {
        stack: "a".into(),
        server: "everything".into(),
        tools: vec![tool.into()],
    };
    Overrides::update(dir, &[edit]).unwrap().overrides
}

#[test]
fn an_outside_change_shows_at_once_and_survives_the_next_save() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    press(&mut app, &[KeyCode::Enter, KeyCode::Down]);
    // Allow add: asked to be written, not written yet.
    let effects = press(&mut app, &[KeyCode::Char(' ')]);
    assert_eq!(app.unsaved.len(), 1);

    // Meanwhile another terminal denies echo: shown, with add still allowed.
    let outside = deny_outside(dir.path(), "echo");
    app.update(Msg::OverridesChanged(Ok(outside)));
    assert!(!allowed(&app, 0, "echo"), "the outside change shows");
    assert!(allowed(&app, 0, "add"), "the pending change still shows");

    // The runtime writes the TUI's edit: both choices in the file, both shown.
    let on_disk = write_saves(dir.path(), &effects);
    app.update(Msg::Saved(Ok(on_disk.clone())));
    assert!(app.unsaved.is_empty());
    let everything = on_disk.for_server("a", "everything").unwrap();
    assert!(!everything.is_allowed("echo") && everything.is_allowed("add"));
    assert!(!allowed(&app, 0, "echo") && allowed(&app, 0, "add"));
}

#[test]
fn a_failed_save_shows_the_file_again_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    press(
        &mut app,
        &[KeyCode::Enter, KeyCode::Down, KeyCode::Char(' ')],
    );
    assert!(allowed(&app, 0, "add"));
    app.update(Msg::Saved(Err("disk full".into())));
    assert!(!allowed(&app, 0, "add"), "back to what the file says");
    let notice = app.notice.clone().unwrap();
    assert!(
        notice.is_error && notice.text.contains("disk full"),
        "{notice:?}"
    );
    // A file broken by hand is reported; the choices shown stay.
    app.update(Msg::OverridesChanged(Err("overrides.json:1:2: bad".into())));
    assert!(app.notice.unwrap().text.contains("overrides.json:1:2"));
}

#[test]
fn all_and_none_apply_to_the_filtered_tools_only() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    press(&mut app, &[KeyCode::Enter]);
    type_text(&mut app, "/get");
    press(&mut app, &[KeyCode::Enter]);
    press(&mut app, &[KeyCode::Char('n')]);
    assert!(!allowed(&app, 0, "get_file_contents") && !allowed(&app, 0, "getTinyImage"));
    assert!(allowed(&app, 0, "echo"), "not matched by the filter");
    press(&mut app, &[KeyCode::Esc, KeyCode::Char('a')]);
    for name in ["echo", "add", "get_file_contents", "getTinyImage"] {
        assert!(allowed(&app, 0, name), "{name}");
    }
}

#[test]
fn the_filter_takes_every_key_until_enter_or_esc() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    press(&mut app, &[KeyCode::Enter]);
    type_text(&mut app, "/q?");
    assert!(!app.confirm_quit && !app.help);
    let Screen::Server(view) = &app.screen else {
        panic!("on the server screen")
    };
    assert_eq!(view.filter, "q?");
    press(&mut app, &[KeyCode::Esc]);
    let Screen::Server(view) = &app.screen else {
        panic!("still on the server screen")
    };
    assert!(view.filter.is_empty() && !view.filtering);
    press(&mut app, &[KeyCode::Esc]);
    assert_eq!(app.screen, Screen::Preflight);
}

#[test]
fn retry_checks_a_finished_server_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    press(&mut app, &[KeyCode::Down]);
    assert!(
        press(&mut app, &[KeyCode::Char('r')]).is_empty(),
        "time is still being checked"
    );
    press(&mut app, &[KeyCode::Down]);
    let effects = press(&mut app, &[KeyCode::Char('r')]);
    assert!(matches!(effects.as_slice(), [Effect::Check { row: 2, .. }]));
    assert!(matches!(app.rows[2].check, Check::Running));
    assert_eq!(app.rows[2].checks, 2);
    assert!(draw(&app, 120, 40).contains("retry 1"), "a retry says so");
    assert!(
        press(&mut app, &[KeyCode::Char('R')]).is_empty(),
        "nothing else failed"
    );
}

#[test]
fn space_on_the_preflight_disables_and_enables_a_server() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    let effects = press(&mut app, &[KeyCode::Char(' ')]);
    assert!(matches!(effects.as_slice(), [Effect::Save(_)]));
    assert_eq!(app.rows[0].badge(&app.overrides), Badge::Disabled);
    press(&mut app, &[KeyCode::Char(' ')]);
    assert_eq!(app.rows[0].badge(&app.overrides), Badge::Ok);
}

#[test]
fn quitting_asks_first() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    assert!(press(&mut app, &[KeyCode::Char('q'), KeyCode::Char('n')]).is_empty());
    assert!(!app.confirm_quit);
    let effects = press(&mut app, &[KeyCode::Char('q'), KeyCode::Enter]);
    assert!(matches!(effects.as_slice(), [Effect::Quit]));
    let ctrl_c = Msg::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    app.update(ctrl_c);
    assert!(app.confirm_quit);
    assert!(matches!(
        app.update(key(KeyCode::Char('y'))).as_slice(),
        [Effect::Quit]
    ));
}

#[test]
fn stale_tools_are_listed_and_cannot_be_toggled() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    if let Check::Done(report) = &mut app.rows[0].check {
        report.stale = vec!["removedTool".into()];
    }
    let tools = app.rows[0].tools(&app.overrides);
    let stale: Vec<_> = tools
        .iter()
        .filter(|t| t.stale)
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(stale, ["removedTool"]);
    press(&mut app, &[KeyCode::Enter, KeyCode::End]);
    assert!(press(&mut app, &[KeyCode::Char(' ')]).is_empty());
    assert!(app.notice.as_ref().unwrap().text.contains("stale"));
    snapshot("server_stale_tool", &app);
}

/// Issue 23: a tool a strict client would refuse is listed repaired; the TUI says so.
#[test]
fn repaired_tools_are_noted_on_the_preflight_and_in_the_server_screen() {
    let dir = tempfile::tempdir().unwrap();
    let entries = vec![entry("a", "gitlab")];
    let (mut app, _) = App::new(
        entries.clone(),
        Overrides::load(dir.path()).unwrap(),
        Theme::monochrome(),
    );
    let tools = [
        ("create_repository", "Create a new GitLab project", 40),
        ("search_repositories", "Search for GitLab projects", 30),
    ];
    let mut report = connected(&entries[0], &tools, 300);
    report.tools[0]["inputSchema"] = json!({"$schema": "http://json-schema.org/draft-07/schema#"});
    app.update(Msg::Checked {
        row: 0,
        report: Box::new(report),
    });
    let screen = draw(&app, 120, 40);
    assert!(
        screen.contains("1 tool repaired for strict clients"),
        "{screen}"
    );
    press(&mut app, &[KeyCode::Enter]);
    let screen = draw(&app, 120, 40);
    assert!(
        screen.contains("repaired for strict clients: inputSchema: added"),
        "{screen}"
    );
    press(&mut app, &[KeyCode::Down]);
    let screen = draw(&app, 120, 40);
    assert!(!screen.contains("repaired for strict"), "{screen}");
}

/// Issue 25, item 20: a crash's note is not cut after "last stderr lines:" — it ends with the
/// last thing the server said.
#[test]
fn a_crash_note_ends_with_the_servers_last_stderr_line() {
    let dir = tempfile::tempdir().unwrap();
    let entries = vec![entry("a", "github")];
    let (mut app, _) = App::new(
        entries.clone(),
        Overrides::load(dir.path()).unwrap(),
        Theme::monochrome(),
    );
    app.update(Msg::Checked {
        row: 0,
        report: Box::new(failed(&entries[0])),
    });
    let screen = draw(&app, 200, 40);
    let row = screen.lines().find(|l| l.contains("a/github")).unwrap();
    assert!(
        row.contains("during initialize: Error: GITHUB_TOKEN is not set"),
        "{screen}"
    );
}
