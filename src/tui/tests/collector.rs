//! The config collector: typing, completion, accepting and refusing files, going on to the
//! preflight; snapshots of its states.

use std::path::PathBuf;

use crossterm::event::KeyCode;

use super::*;
use crate::tui::screens::collector::{CollectorMsg, Focus};

fn collecting(dir: &std::path::Path) -> App {
    let mut app = App::collecting(Overrides::load(dir).unwrap(), Theme::monochrome());
    app.update(Msg::Collector(CollectorMsg::Discovered(vec![
        PathBuf::from("/home/ann/.claude/mcp.json"),
    ])));
    app
}

#[test]
fn files_are_checked_before_they_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = collecting(dir.path());
    assert_eq!(app.screen, Screen::Collector);
    snapshot("collector_empty", &app);

    // q and ? are typed into the path, not taken as keys.
    let effects = type_text(&mut app, "~/q?.json");
    assert!(effects.is_empty() && !app.confirm_quit && !app.help);
    press(&mut app, &[KeyCode::Esc]);
    assert!(app.collector.input.is_empty());

    app.update(Msg::Collector(CollectorMsg::Checked {
        input: "/home/ann/.claude/mcp.json".into(),
        path: "/home/ann/.claude/mcp.json".into(),
        result: Ok(3),
    }));
    assert_eq!(app.collector.accepted.len(), 1);

    type_text(&mut app, "$WORK/bad.json");
    let effects = press(&mut app, &[KeyCode::Enter]);
    assert!(
        matches!(effects.as_slice(), [Effect::CheckConfig(input)] if input == "$WORK/bad.json")
    );
    app.update(Msg::Collector(CollectorMsg::Checked {
        input: "$WORK/bad.json".into(),
        path: "/srv/work/bad.json".into(),
        result: Err(
            "/srv/work/bad.json:3:5: expected `,` or `}`\nfix the JSON at that line".into(),
        ),
    }));
    assert_eq!(
        app.collector.accepted.len(),
        1,
        "a broken file is not accepted"
    );
    snapshot("collector_refused_and_accepted", &app);

    // Enter on a discovered file checks it; del removes an accepted one.
    press(&mut app, &[KeyCode::Esc, KeyCode::Down]);
    assert_eq!(app.collector.focus, Focus::Discovered(0));
    let effects = press(&mut app, &[KeyCode::Enter]);
    assert!(
        matches!(effects.as_slice(), [Effect::CheckConfig(p)] if p == "/home/ann/.claude/mcp.json")
    );
    press(&mut app, &[KeyCode::Down, KeyCode::Delete]);
    assert!(app.collector.accepted.is_empty());
    assert_eq!(app.collector.focus, Focus::Input);
    let effects = press(&mut app, &[KeyCode::Enter]);
    assert!(effects.is_empty(), "nothing to continue with");
    assert!(app.notice.as_ref().unwrap().is_error);
}

#[test]
fn tab_completes_to_the_common_prefix_and_lists_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = collecting(dir.path());
    type_text(&mut app, "conf");
    let effects = press(&mut app, &[KeyCode::Tab]);
    assert!(matches!(effects.as_slice(), [Effect::CompletePath(input)] if input == "conf"));
    let candidates = vec![
        "configs/work.json".to_string(),
        "configs/home.json".to_string(),
    ];
    app.update(Msg::Collector(CollectorMsg::Completions {
        input: "conf".into(),
        candidates,
    }));
    assert_eq!(app.collector.input, "configs/");
    snapshot("collector_completions", &app);
    app.update(Msg::Collector(CollectorMsg::Completions {
        input: "configs/".into(),
        candidates: vec!["configs/work.json".into()],
    }));
    assert_eq!(app.collector.input, "configs/work.json");
}

#[test]
fn continuing_loads_the_files_and_starts_the_preflight() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = collecting(dir.path());
    app.update(Msg::Collector(CollectorMsg::Checked {
        input: "a.json".into(),
        path: "/p/a.json".into(),
        result: Ok(2),
    }));
    let effects = press(&mut app, &[KeyCode::Enter]);
    assert!(
        matches!(effects.as_slice(), [Effect::LoadConfigs(paths)] if paths == &[PathBuf::from("/p/a.json")])
    );
    let effects = app.update(Msg::ConfigsLoaded(Ok(vec![
        entry("a", "everything"),
        entry("a", "time"),
    ])));
    assert_eq!(effects.len(), 2, "one check per server");
    assert_eq!(app.screen, Screen::Preflight);
    assert_eq!(app.rows.len(), 2);
    assert_eq!(app.stacks, ["a"]);
}

/// Issue 25, item 20: ctrl-u and ctrl-w edit the path as a shell would; no control key is
/// typed in as a letter.
#[test]
fn ctrl_u_clears_and_ctrl_w_deletes_the_last_part_of_the_path() {
    use crossterm::event::{KeyEvent, KeyModifiers};
    let dir = tempfile::tempdir().unwrap();
    let mut app = collecting(dir.path());
    let ctrl = |c| Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL));
    type_text(&mut app, "~/work/configs/a.json");
    app.update(ctrl('w'));
    assert_eq!(app.collector.input, "~/work/configs/");
    app.update(ctrl('w'));
    assert_eq!(app.collector.input, "~/work/");
    app.update(ctrl('x'));
    assert_eq!(app.collector.input, "~/work/");
    app.update(ctrl('u'));
    assert_eq!(app.collector.input, "");
}

/// Issue 26: the login hint of a server that needs login is the command `list` prints — the
/// scopes a step-up needs and the config files chosen — not a bare `auth login SERVER`, which
/// finds no config outside the project directory.
#[test]
fn the_login_hint_names_the_chosen_config_and_the_step_up_scopes() {
    use crate::auth::client::AuthError;
    let dir = tempfile::tempdir().unwrap();
    let mut app = collecting(dir.path());
    let chosen = PathBuf::from("/p/my dir/a.json");
    app.update(Msg::Collector(CollectorMsg::Checked {
        input: "a.json".into(),
        path: chosen.clone(),
        result: Ok(1),
    }));
    press(&mut app, &[KeyCode::Enter]);
    let prot = entry("a", "prot");
    app.update(Msg::ConfigsLoaded(Ok(vec![prot.clone()])));
    let mut report = ServerReport::blank(&prot, "http");
    report.status = Status::NeedsLogin;
    report.error = Some(
        McpError::Auth(AuthError::NeedsScope {
            resource: "https://h/mcp".into(),
            scope: "mcp admin".into(),
            challenged: "admin".into(),
        })
        .into(),
    );
    let list_prints = report.login_command(std::slice::from_ref(&chosen));
    app.update(Msg::Checked {
        row: 0,
        report: Box::new(report),
    });
    press(&mut app, &[KeyCode::Enter]);
    let said = app
        .notice
        .as_ref()
        .map(|n| n.text.clone())
        .unwrap_or_default();
    assert_eq!(
        list_prints,
        "mcp-launch auth login a/prot --scope 'mcp admin' --config '/p/my dir/a.json'"
    );
    assert!(said.contains(&format!("`{list_prints}`")), "{said}");
}
