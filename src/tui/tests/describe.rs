//! The descriptions part of the TUI without a terminal: marks on the server screen, trim /
//! cut / clear / reset on one tool and on many, the descriptions screen's keys, the inline
//! editor, the external editor's messages, persistence, and snapshots of the editor, the diff
//! (unified and side by side, wrapped and clipped) and the multi-selection.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::super::app::{App, Screen};
use super::super::msg::{Effect, ExternalEdit, Msg};
use super::super::screens::describe::DescribeView;
use super::super::screens::server::ServerView;
use super::super::theme::Theme;
use super::super::widgets::diff::DiffLayout;
use super::{connected, entry, press, snapshot, type_text, write_saves};
use crate::catalog::{trim_description, Overrides, CHATGPT_DESCRIPTION_LIMIT};

/// 447 characters: over the limit, in sentences (a word-boundary trim has somewhere to cut).
const LONG: &str = "Runs a long operation and reports its progress while it works. Use it to \
    test how a client shows progress notifications: the server sends one notification per \
    step, and the call returns once every step is done. The duration in seconds and the \
    number of steps are arguments; both default to small values so that a test stays quick. \
    Cancelling the request stops the operation at the next step and returns what was done \
    so far, marked as cancelled.";

const MULTI_LINE: &str = "Read the complete contents of a file.\nHandles text encodings.\n\
    Only works within allowed directories.";

/// One connected server, `a/everything`, with a short, a long and a multi-line description,
/// its server screen open.
fn app(dir: &std::path::Path) -> App {
    let entries = vec![entry("a", "everything")];
    let tools = [
        ("echo", "Echoes back the input", 61),
        ("longRunningOperation", LONG, 121),
        ("get_file_contents", MULTI_LINE, 70),
        ("add", "Adds two numbers", 78),
    ];
    let overrides = Overrides::load(dir).unwrap();
    let (mut app, _) = App::new(entries.clone(), overrides, Theme::monochrome());
    app.update(Msg::Checked {
        row: 0,
        report: Box::new(connected(&entries[0], &tools, 412)),
    });
    press(&mut app, &[KeyCode::Enter]);
    assert!(matches!(app.screen, Screen::Server(_)));
    app
}

fn server_view(app: &App) -> &ServerView {
    match &app.screen {
        Screen::Server(view) => view,
        other => panic!("not on the server screen: {other:?}"),
    }
}

fn describe_view(app: &App) -> &DescribeView {
    match &app.screen {
        Screen::Describe(view) => view,
        other => panic!("not on the descriptions screen: {other:?}"),
    }
}

/// What clients see for `tool`, and whether it is overridden.
fn description(app: &App, tool: &str) -> (String, bool) {
    let tools = app.rows[0].tools(&app.overrides);
    let line = tools.iter().find(|t| t.name == tool).expect("a known tool");
    (line.description.clone(), line.overridden)
}

fn ctrl(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL))
}

fn saves(effects: &[Effect]) -> bool {
    matches!(effects, [Effect::Save(_)])
}

fn notice(app: &App) -> String {
    app.notice
        .as_ref()
        .map(|n| n.text.clone())
        .unwrap_or_default()
}

#[test]
fn v_marks_tools_and_capital_v_marks_all_or_none() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    press(&mut app, &[KeyCode::Char('v'), KeyCode::Char('v')]);
    let view = server_view(&app);
    assert_eq!(view.selected, 2, "v moves on");
    let marked: Vec<&str> = view.marked.iter().map(String::as_str).collect();
    assert_eq!(marked, ["echo", "longRunningOperation"]);
    snapshot("describe_marked_tools", &app);
    press(&mut app, &[KeyCode::Up, KeyCode::Char('v')]);
    assert_eq!(server_view(&app).marked.len(), 1, "v again unmarks");
    press(&mut app, &[KeyCode::Char('V')]);
    assert!(server_view(&app).marked.is_empty(), "V clears marks");
    press(&mut app, &[KeyCode::Char('V')]);
    assert_eq!(
        server_view(&app).marked.len(),
        4,
        "V marks every tool shown"
    );
}

#[test]
fn esc_clears_the_filter_then_the_marks_then_goes_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    press(&mut app, &[KeyCode::Char('V')]);
    type_text(&mut app, "/ech");
    press(&mut app, &[KeyCode::Enter, KeyCode::Esc]);
    let view = server_view(&app);
    assert!(view.filter.is_empty() && view.marked.len() == 4);
    press(&mut app, &[KeyCode::Esc]);
    assert!(server_view(&app).marked.is_empty());
    press(&mut app, &[KeyCode::Esc]);
    assert_eq!(app.screen, Screen::Preflight);
}

#[test]
fn trim_cut_clear_and_reset_the_selected_tool() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    press(&mut app, &[KeyCode::Down]);

    assert!(saves(&press(&mut app, &[KeyCode::Char('t')])));
    let (trimmed, overridden) = description(&app, "longRunningOperation");
    assert!(overridden);
    assert_eq!(trimmed, trim_description(LONG, CHATGPT_DESCRIPTION_LIMIT));
    assert!(trimmed.chars().count() <= CHATGPT_DESCRIPTION_LIMIT && trimmed.ends_with('…'));
    assert!(notice(&app).starts_with("longRunningOperation: trimmed ("));

    assert!(press(&mut app, &[KeyCode::Char('T')]).is_empty());
    assert!(notice(&app).contains("within 300 characters already"));

    assert!(saves(&press(&mut app, &[KeyCode::Char('R')])));
    assert_eq!(
        description(&app, "longRunningOperation"),
        (LONG.to_string(), false)
    );

    assert!(saves(&press(&mut app, &[KeyCode::Char('T')])));
    let (cut, _) = description(&app, "longRunningOperation");
    let first: String = LONG.chars().take(CHATGPT_DESCRIPTION_LIMIT).collect();
    assert_eq!(
        cut,
        first.trim_end(),
        "a hard cut keeps the first 300 characters"
    );

    assert!(saves(&press(&mut app, &[KeyCode::Char('x')])));
    assert_eq!(
        description(&app, "longRunningOperation"),
        (String::new(), true),
        "clear is an empty override, not the server's text"
    );
    press(&mut app, &[KeyCode::Char('R')]);
    assert!(!description(&app, "longRunningOperation").1);
    assert!(
        press(&mut app, &[KeyCode::Char('R')]).is_empty(),
        "nothing left to reset"
    );
}

#[test]
fn rewrites_act_on_every_marked_tool() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    press(
        &mut app,
        &[KeyCode::Char('v'), KeyCode::Char('v'), KeyCode::Char('v')],
    );
    // The cursor is on `add`, which is not marked: the marks win.
    let effects = press(&mut app, &[KeyCode::Char('x')]);
    assert!(saves(&effects), "one save for all: {effects:?}");
    for tool in ["echo", "longRunningOperation", "get_file_contents"] {
        assert_eq!(description(&app, tool), (String::new(), true), "{tool}");
    }
    assert!(!description(&app, "add").1);
    assert_eq!(notice(&app), "3 description(s) cleared");

    press(&mut app, &[KeyCode::Char('R')]);
    assert!(app.overrides.for_server("a", "everything").is_none());
    press(&mut app, &[KeyCode::Char('t')]);
    assert_eq!(
        notice(&app),
        "1 description(s) trimmed; 2 within 300 already"
    );
    assert!(description(&app, "longRunningOperation").1);
    assert!(!description(&app, "echo").1);
}

#[test]
fn the_descriptions_screen_keys() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    press(
        &mut app,
        &[KeyCode::Down, KeyCode::Char('v'), KeyCode::Char('v')],
    );
    press(&mut app, &[KeyCode::Up, KeyCode::Char('d')]);
    let view = describe_view(&app);
    assert_eq!(view.tools, ["longRunningOperation", "get_file_contents"]);
    assert_eq!(view.focused, 1, "the selected tool is in front");
    assert_eq!((view.layout, view.wrap), (DiffLayout::Unified, true));

    press(&mut app, &[KeyCode::Char('k'), KeyCode::Char('k')]);
    assert_eq!(describe_view(&app).focused, 0);
    press(&mut app, &[KeyCode::Char('j'), KeyCode::Char('j')]);
    assert_eq!(describe_view(&app).focused, 1, "stays on the last");

    press(&mut app, &[KeyCode::Right]);
    assert_eq!(describe_view(&app).hscroll, 0, "wrapped: nothing to scroll");
    assert!(notice(&app).contains("w clips"));
    press(
        &mut app,
        &[KeyCode::Char('w'), KeyCode::Right, KeyCode::Right],
    );
    assert_eq!(describe_view(&app).hscroll, 16);
    press(&mut app, &[KeyCode::Left]);
    assert_eq!(describe_view(&app).hscroll, 8);
    press(&mut app, &[KeyCode::Char('s')]);
    assert_eq!(describe_view(&app).layout, DiffLayout::SideBySide);
    press(&mut app, &[KeyCode::Char('s'), KeyCode::Char('w')]);
    let view = describe_view(&app);
    assert_eq!(
        (view.layout, view.wrap, view.hscroll),
        (DiffLayout::Unified, true, 0)
    );

    press(&mut app, &[KeyCode::Char('k'), KeyCode::PageDown]);
    assert!(describe_view(&app).scroll > 0, "the long diff scrolls");
    press(&mut app, &[KeyCode::PageUp]);
    assert_eq!(describe_view(&app).scroll, 0);

    // Rewrites here act on every listed tool.
    assert!(saves(&press(&mut app, &[KeyCode::Char('x')])));
    assert_eq!(notice(&app), "2 description(s) cleared");
    assert!(!description(&app, "echo").1);

    press(&mut app, &[KeyCode::Esc]);
    let back = server_view(&app);
    assert_eq!(back.selected, 2);
    assert_eq!(back.marked.len(), 2, "the marks survive the trip");
}

#[test]
fn the_inline_editor_takes_every_key_and_saves_with_ctrl_s() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    press(&mut app, &[KeyCode::Char('i')]);
    let editor = describe_view(&app).editor.clone().expect("editing");
    assert_eq!(editor.text(), "Echoes back the input");
    assert_eq!(editor.char_count(), 21);

    type_text(&mut app, " ?q");
    assert!(
        !app.help && !app.confirm_quit,
        "? and q are text while editing"
    );
    press(&mut app, &[KeyCode::Enter]);
    type_text(&mut app, "é");
    let editor = describe_view(&app).editor.clone().unwrap();
    assert_eq!(editor.text(), "Echoes back the input ?q\né");
    assert_eq!(editor.char_count(), 26, "characters, not bytes");
    snapshot("describe_editor", &app);

    let effects = app.update(ctrl('s'));
    assert!(saves(&effects));
    assert!(!describe_view(&app).is_editing());
    assert_eq!(
        description(&app, "echo"),
        ("Echoes back the input ?q\né".to_string(), true)
    );
    assert_eq!(notice(&app), "echo: saved (26/300 characters)");
}

#[test]
fn esc_cancels_an_edit_and_an_edit_back_to_the_original_drops_the_override() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    press(&mut app, &[KeyCode::Char('i')]);
    type_text(&mut app, " and more");
    assert!(press(&mut app, &[KeyCode::Esc]).is_empty());
    assert!(!describe_view(&app).is_editing());
    assert!(!description(&app, "echo").1);
    assert!(notice(&app).contains("cancelled"));

    press(&mut app, &[KeyCode::Esc, KeyCode::Char('x')]);
    assert!(description(&app, "echo").1);
    press(&mut app, &[KeyCode::Char('i')]);
    type_text(&mut app, "Echoes back the input");
    app.update(ctrl('s'));
    assert!(
        !description(&app, "echo").1,
        "the server's own text is stored as no override"
    );
}

#[test]
fn the_live_count_shows_an_edit_over_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    press(&mut app, &[KeyCode::Down, KeyCode::Char('i')]);
    let editor = describe_view(&app).editor.clone().unwrap();
    assert_eq!(editor.char_count(), LONG.chars().count());
    assert!(editor.char_count() > CHATGPT_DESCRIPTION_LIMIT);
    snapshot("describe_editor_over_limit", &app);
    app.update(ctrl('s'));
    assert_eq!(notice(&app), "longRunningOperation: unchanged");
}

#[test]
fn the_diff_unified_and_side_by_side_wrapped_and_clipped() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    press(
        &mut app,
        &[KeyCode::Down, KeyCode::Char('t'), KeyCode::Char('d')],
    );
    assert_eq!(describe_view(&app).tools, ["longRunningOperation"]);
    snapshot("describe_diff_unified_wrapped", &app);
    press(&mut app, &[KeyCode::Char('w')]);
    snapshot("describe_diff_unified_clipped", &app);
    press(&mut app, &[KeyCode::Char('s')]);
    snapshot("describe_diff_side_by_side_clipped", &app);
    press(&mut app, &[KeyCode::Char('w')]);
    snapshot("describe_diff_side_by_side_wrapped", &app);
}

#[test]
fn the_diff_of_several_tools_lists_them_with_their_counts() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    // A multi-line edit of get_file_contents, then all three marked.
    press(
        &mut app,
        &[KeyCode::Down, KeyCode::Down, KeyCode::Char('i')],
    );
    press(&mut app, &[KeyCode::Up, KeyCode::End]);
    type_text(&mut app, " Never follows symlinks.");
    app.update(ctrl('s'));
    press(&mut app, &[KeyCode::Esc, KeyCode::Home]);
    press(
        &mut app,
        &[KeyCode::Char('v'), KeyCode::Char('v'), KeyCode::Char('v')],
    );
    press(&mut app, &[KeyCode::Char('d'), KeyCode::Char('j')]);
    assert_eq!(describe_view(&app).tools.len(), 3);
    snapshot("describe_list_over_limit", &app);
    press(&mut app, &[KeyCode::Char('j'), KeyCode::Char('s')]);
    snapshot("describe_multi_line_side_by_side", &app);
    press(&mut app, &[KeyCode::Char('?')]);
    snapshot("describe_help", &app);
}

#[test]
fn the_external_editor_is_an_effect_and_its_text_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    let effects = press(&mut app, &[KeyCode::Char('E')]);
    let [Effect::EditExternally(edit)] = effects.as_slice() else {
        panic!("an editor effect: {effects:?}")
    };
    assert_eq!(
        edit,
        &ExternalEdit {
            row: 0,
            tool: "echo".into(),
            text: "Echoes back the input".into(),
        }
    );
    let effects = app.update(Msg::EditedExternally {
        row: 0,
        tool: "echo".into(),
        result: Ok("Says the input back.\n".into()),
    });
    assert!(saves(&effects));
    assert_eq!(
        description(&app, "echo"),
        ("Says the input back.".to_string(), true)
    );

    let effects = app.update(Msg::EditedExternally {
        row: 0,
        tool: "echo".into(),
        result: Err(crate::tui::external_editor::NO_EDITOR.into()),
    });
    assert!(effects.is_empty());
    let notice = app.notice.clone().unwrap();
    assert!(notice.is_error && notice.text.contains("$VISUAL and $EDITOR are unset"));
    assert_eq!(description(&app, "echo").0, "Says the input back.");

    // From the descriptions screen, `E` edits the focused tool.
    press(&mut app, &[KeyCode::Down, KeyCode::Char('d')]);
    let effects = press(&mut app, &[KeyCode::Char('E')]);
    assert!(
        matches!(effects.as_slice(), [Effect::EditExternally(e)] if e.tool == "longRunningOperation")
    );
}

#[test]
fn edits_persist_through_save_and_load() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    let mut effects = press(&mut app, &[KeyCode::Down, KeyCode::Char('t')]);
    effects.extend(press(&mut app, &[KeyCode::Up, KeyCode::Char('x')]));
    press(
        &mut app,
        &[KeyCode::Down, KeyCode::Down, KeyCode::Char('i')],
    );
    type_text(&mut app, "!");
    let saved: Vec<Effect> = app.update(ctrl('s'));
    assert!(matches!(saved.as_slice(), [Effect::Save(_)]), "{saved:?}");
    effects.extend(saved);

    let loaded = write_saves(dir.path(), &effects);
    let choices = loaded.for_server("a", "everything").unwrap();
    assert_eq!(
        choices.descriptions.get("longRunningOperation"),
        Some(&trim_description(LONG, CHATGPT_DESCRIPTION_LIMIT))
    );
    assert_eq!(choices.descriptions.get("echo"), Some(&String::new()));
    assert_eq!(
        choices.descriptions.get("get_file_contents"),
        Some(&format!("{MULTI_LINE}!"))
    );
    assert!(!choices.descriptions.contains_key("add"));

    // The next run starts from them.
    let (mut next, _) = App::new(vec![entry("a", "everything")], loaded, Theme::monochrome());
    next.rows[0].check = app.rows[0].check.clone();
    assert_eq!(description(&next, "echo"), (String::new(), true));

    // A reset is saved as the override gone.
    let mut effects = press(&mut app, &[KeyCode::Char('R'), KeyCode::Esc]);
    let second = press(&mut app, &[KeyCode::Up, KeyCode::Char('R')]);
    assert!(matches!(second.as_slice(), [Effect::Save(_)]), "saved");
    effects.extend(second);
    let loaded = write_saves(dir.path(), &effects);
    let left: Vec<&String> = loaded
        .for_server("a", "everything")
        .unwrap()
        .descriptions
        .keys()
        .collect();
    assert_eq!(left, ["echo"]);
}

#[test]
fn the_server_help_lists_the_description_keys() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    press(&mut app, &[KeyCode::Char('?')]);
    assert!(app.help);
    snapshot("describe_server_help", &app);
}
