//! Unit tests of the overrides file and the semantics of each mutation.

use std::collections::BTreeSet;

use super::server::change;
use super::*;
use crate::error::Actionable;
use serde_json::json;

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn tools() -> Vec<Value> {
    vec![
        json!({"name": "echo", "description": "Echo the message."}),
        json!({"name": "add", "description": "Add two numbers."}),
        json!({"name": "fail"}),
    ]
}

fn entry(stack: &str, name: &str, disabled: bool) -> ServerEntry {
    ServerEntry {
        name: name.into(),
        qualified: name.into(),
        stack: stack.into(),
        line: None,
        disabled,
        spec: Err(crate::config::ConfigError::NotFound { searched: vec![] }),
    }
}

fn overrides_file(dir: &Path) -> PathBuf {
    dir.join(OVERRIDES_FILE)
}

#[test]
fn a_missing_file_is_no_overrides_and_loading_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let o = Overrides::load(dir.path()).unwrap();
    assert_eq!(o.path(), overrides_file(dir.path()));
    assert!(o.for_server("mcp", "x").is_none());
    assert!(o.apply("mcp", "x", &tools()).iter().all(|v| v.is_allowed));
    assert!(!dir.path().join(".mcp-launch").exists());
    std::fs::create_dir_all(dir.path().join(".mcp-launch")).unwrap();
    std::fs::write(overrides_file(dir.path()), "  \n").unwrap();
    assert!(Overrides::load(dir.path())
        .unwrap()
        .for_server("a", "b")
        .is_none());
}

#[test]
fn the_file_round_trips_as_stable_pretty_json() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Overrides::load(dir.path()).unwrap();
    o.server_mut("mcp", "srv").deny(&names(&["zeta", "alpha"]));
    o.server_mut("mcp", "srv")
        .describe("echo", Some("Short.".into()));
    o.set_disabled(&entry("mcp", "other", false), true);
    o.server_mut("mcp", "untouched"); // empty: never written
    o.save().unwrap();

    let text = std::fs::read_to_string(overrides_file(dir.path())).unwrap();
    let expected = r#"{
  "version": 1,
  "stacks": {
    "mcp": {
      "other": {
        "disabled": true
      },
      "srv": {
        "deny": [
          "alpha",
          "zeta"
        ],
        "descriptions": {
          "echo": "Short."
        }
      }
    }
  }
}
"#;
    assert_eq!(text, expected);
    let back = Overrides::load(dir.path()).unwrap();
    assert_eq!(back, o);
    assert_eq!(
        back.for_server("mcp", "srv").unwrap().deny,
        ["alpha", "zeta"].map(String::from).into()
    );
    // Saving what was loaded writes the same bytes.
    back.save().unwrap();
    assert_eq!(
        std::fs::read_to_string(overrides_file(dir.path())).unwrap(),
        expected
    );
}

#[test]
fn saving_is_atomic_and_leaves_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Overrides::load(dir.path()).unwrap();
    for i in 0..3 {
        o.server_mut("s", "x").deny(&[format!("t{i}")]);
        o.save().unwrap();
    }
    let files: Vec<String> = std::fs::read_dir(dir.path().join(".mcp-launch"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files, ["overrides.json"]);
    assert_eq!(
        Overrides::load(dir.path())
            .unwrap()
            .for_server("s", "x")
            .unwrap()
            .deny
            .len(),
        3
    );
}

#[test]
fn a_write_failure_is_reported_with_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Overrides::load(dir.path()).unwrap();
    // `.mcp-launch` is now a file, so the directory cannot be created.
    std::fs::write(dir.path().join(".mcp-launch"), "").unwrap();
    o.server_mut("s", "x").deny(&names(&["t"]));
    let err = o.save().unwrap_err();
    assert_eq!(err.kind(), "overrides_write_failed");
    assert!(err.to_string().contains("overrides.json"), "{err}");
}

fn load_text(text: &str) -> (tempfile::TempDir, Result<Overrides, OverridesError>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".mcp-launch")).unwrap();
    std::fs::write(overrides_file(dir.path()), text).unwrap();
    let loaded = Overrides::load(dir.path());
    (dir, loaded)
}

#[test]
fn malformed_json_names_file_line_and_column_and_is_left_alone() {
    let text =
        "{\n  \"version\": 1,\n  \"stacks\": {\n    \"mcp\": {\"x\": {\"deny\": [\"a\",]}}\n";
    let (dir, loaded) = load_text(text);
    let err = loaded.unwrap_err();
    let OverridesError::Invalid {
        path, line, column, ..
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(path, &overrides_file(dir.path()));
    assert_eq!((*line, *column), (4, 32));
    assert_eq!(err.kind(), "invalid_overrides");
    assert!(err.to_string().contains("overrides.json:4:32"), "{err}");
    assert!(err.help().contains("never overwrites"), "{}", err.help());
    assert_eq!(std::fs::read_to_string(path).unwrap(), text);
}

#[test]
fn unknown_fields_and_wrong_types_are_errors_with_positions() {
    let (_d, loaded) = load_text("{\"version\": 1, \"stacks\": {\"s\": {\"x\": {\"alow\": []}}}}");
    let err = loaded.unwrap_err();
    assert!(
        matches!(err, OverridesError::Invalid { line: 1, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("alow"), "{err}");

    let (_d, loaded) = load_text("{\"stacks\": {\"s\": {\"x\": {\"disabled\": \"yes\"}}}}");
    assert!(matches!(loaded, Err(OverridesError::Invalid { .. })));
    let (_d, loaded) = load_text("[1, 2]");
    assert!(matches!(loaded, Err(OverridesError::Invalid { .. })));
}

#[test]
fn an_unknown_version_is_a_clear_error() {
    for version in ["2", "\"1\"", "0"] {
        let (_d, loaded) = load_text(&format!("{{\"version\": {version}, \"stacks\": {{}}}}"));
        let err = loaded.unwrap_err();
        assert_eq!(err.kind(), "unsupported_overrides_version", "{version}");
        assert!(
            err.to_string().contains(&format!("version {version}")),
            "{err}"
        );
        assert!(err.help().contains("upgrade"), "{}", err.help());
    }
    let (_d, loaded) = load_text("{\"stacks\": {}}");
    assert!(loaded.is_ok(), "a missing version reads as version 1");
}

#[test]
fn allow_and_deny_without_an_allow_list() {
    let mut o = ServerOverrides::default();
    let changes = o.deny(&names(&["echo", "add"]));
    assert!(changes
        .iter()
        .all(|c| c.changed && c.action == Action::Denied));
    assert!(!o.is_allowed("echo") && o.is_allowed("fail"));
    assert!(!o.deny(&names(&["echo"]))[0].changed, "already denied");

    let changes = o.allow(&names(&["echo", "fail"]));
    assert_eq!(
        changes.iter().map(|c| c.changed).collect::<Vec<_>>(),
        [true, false],
        "fail was never denied"
    );
    assert!(o.allow.is_none(), "allow does not start an allow list");
    assert_eq!(o.deny, ["add".to_string()].into());
    assert!(o.is_allowed("echo") && o.is_allowed("a_new_tool"));
}

#[test]
fn with_an_allow_list_only_listed_tools_pass_and_allow_adds_to_it() {
    let mut o = ServerOverrides::default();
    let changes = o.allow_only(&names(&["echo"]));
    assert_eq!(changes, vec![change("echo", Action::Allowed, true)]);
    assert!(o.is_allowed("echo") && !o.is_allowed("add") && !o.is_allowed("brand_new"));

    assert!(o.allow(&names(&["add"]))[0].changed);
    assert!(o.is_allowed("add"));

    // deny takes the tool out of the allow list as well.
    assert!(o.deny(&names(&["echo"]))[0].changed);
    assert_eq!(o.allow, Some(["add".to_string()].into()));
    assert!(!o.is_allowed("echo"));

    // allow puts it back in both senses.
    o.allow(&names(&["echo"]));
    assert!(o.is_allowed("echo") && o.deny.is_empty());

    // allow --only replaces the list and reports who left it.
    let changes = o.allow_only(&names(&["fail", "echo"]));
    assert_eq!(
        changes,
        vec![
            change("fail", Action::Allowed, true),
            change("echo", Action::Allowed, false),
            change("add", Action::Unlisted, true),
        ]
    );
    assert!(!o.is_allowed("add"));
}

#[test]
fn reset_forgets_every_choice_about_a_tool() {
    let mut o = ServerOverrides::default();
    o.deny(&names(&["add"]));
    o.describe("add", Some("Adds.".into()));
    o.describe("echo", Some("Echoes.".into()));
    let changes = o.reset(&names(&["add", "never_mentioned"]));
    assert_eq!(
        changes,
        vec![
            change("add", Action::Reset, true),
            change("never_mentioned", Action::Reset, false)
        ]
    );
    assert!(o.deny.is_empty() && !o.descriptions.contains_key("add"));
    assert!(o.descriptions.contains_key("echo"));

    // With an allow list, a reset tool leaves it (and so is hidden).
    o.allow_only(&names(&["echo", "add"]));
    o.reset(&names(&["add"]));
    assert!(!o.is_allowed("add"));
    assert_eq!(
        o.clear(),
        Change {
            tool: None,
            action: Action::Reset,
            changed: true
        }
    );
    assert!(o.is_empty());
    assert!(!o.clear().changed);
}

#[test]
fn describe_sets_and_clears_overrides() {
    let mut o = ServerOverrides::default();
    assert!(o.describe("echo", Some("Mine.".into())).changed);
    assert!(!o.describe("echo", Some("Mine.".into())).changed);
    assert!(o.describe("echo", Some("Other.".into())).changed);
    let cleared = o.describe("echo", None);
    assert_eq!(cleared, change("echo", Action::DescriptionCleared, true));
    assert!(!o.describe("echo", None).changed);
    assert!(o.is_empty());
}

#[test]
fn apply_gives_effective_descriptions_and_exposure_in_server_order() {
    let tools = tools();
    let mut o = ServerOverrides::default();
    o.deny(&names(&["add"]));
    o.describe("fail", Some("Fails on purpose.".into()));
    let views = o.apply(&tools);
    let summary: Vec<(usize, &str, &str, bool, bool)> = views
        .iter()
        .map(|v| {
            (
                v.index,
                v.name,
                v.description.as_str(),
                v.is_overridden,
                v.is_allowed,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (0, "echo", "Echo the message.", false, true),
            (1, "add", "Add two numbers.", false, false),
            (2, "fail", "Fails on purpose.", true, true),
        ]
    );
    assert_eq!(views[2].original_description(), "");
    assert!(
        std::ptr::eq(views[1].def, &tools[1]),
        "definitions are borrowed untouched"
    );
}

#[test]
fn choices_about_vanished_tools_are_kept_and_reported_stale() {
    let mut o = Overrides::load(Path::new("/nonexistent-project")).unwrap();
    let s = o.server_mut("mcp", "srv");
    s.allow_only(&names(&["echo", "gone_a"]));
    s.deny(&names(&["gone_b"]));
    s.describe("gone_c", Some("x".into()));
    s.describe("echo", Some("y".into()));
    assert_eq!(
        o.stale_names("mcp", "srv", &tools()),
        ["gone_a", "gone_b", "gone_c"]
    );
    assert!(o.stale_names("mcp", "other", &tools()).is_empty());
    // Applying never drops them from the file.
    let _ = o.apply("mcp", "srv", &tools());
    assert!(o
        .for_server("mcp", "srv")
        .unwrap()
        .allow
        .as_ref()
        .unwrap()
        .contains("gone_a"));
}

#[test]
fn the_disabled_override_wins_either_way() {
    let mut o = Overrides::load(Path::new("/nonexistent-project")).unwrap();
    let on = entry("mcp", "on", false);
    let off = entry("mcp", "off", true);
    assert!(!o.is_disabled(&on) && o.is_disabled(&off));

    assert!(o.set_disabled(&on, true).changed);
    assert!(o.set_disabled(&off, false).changed);
    assert!(o.is_disabled(&on) && !o.is_disabled(&off));
    assert!(!o.set_disabled(&on, true).changed, "already disabled");

    // Same stack, other server; other stack, same server: untouched.
    assert!(!o.is_disabled(&entry("mcp", "third", false)));
    assert!(!o.is_disabled(&entry("work", "on", false)));

    // A choice matching the config is still kept (so a config edit does not undo it).
    let mut o2 = o.clone();
    let change = o2.set_disabled(&on, false);
    assert_eq!(change.action, Action::Enabled);
    assert_eq!(o2.for_server("mcp", "on").unwrap().disabled, Some(false));
}

#[test]
fn equality_ignores_empty_entries() {
    let a = Overrides::load(Path::new("/nonexistent-project")).unwrap();
    let mut b = a.clone();
    b.server_mut("s", "x");
    assert_eq!(a, b);
    b.server_mut("s", "x").deny(&names(&["t"]));
    assert_ne!(a, b);
}

#[test]
fn changes_serialize_compactly() {
    assert_eq!(
        serde_json::to_value(change("echo", Action::DescriptionCleared, true)).unwrap(),
        json!({"tool": "echo", "action": "description_cleared"})
    );
    let server = Change {
        tool: None,
        action: Action::Disabled,
        changed: true,
    };
    assert_eq!(
        serde_json::to_value(server).unwrap(),
        json!({"action": "disabled"})
    );
    assert_eq!(Action::DescriptionCleared.as_str(), "description_cleared");
}

#[test]
fn launch_choices_round_trip_and_leave_the_fingerprint_alone() {
    let dir = tempfile::tempdir().unwrap();
    let mut overrides = Overrides::load(dir.path()).unwrap();
    overrides
        .server_mut("a", "fs")
        .deny(&names(&["write_file"]));
    let before = overrides.fingerprint();
    let choices = LaunchChoices {
        controller: Some("native".into()),
        tunnel: Some("named".into()),
        port: Some(9100),
        public_url: Some("https://tools.example.com".into()),
    };
    overrides.set_launch_choices(choices.clone());
    assert_eq!(
        overrides.fingerprint(),
        before,
        "caches keyed by the tool choices stay valid"
    );
    overrides.save().unwrap();
    let text = std::fs::read_to_string(overrides_file(dir.path())).unwrap();
    let saved: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(saved["launch"]["port"], 9100, "{text}");
    let loaded = Overrides::load(dir.path()).unwrap();
    assert_eq!(loaded.launch_choices(), Some(&choices));
    assert_eq!(loaded, overrides);
    std::fs::write(
        overrides_file(dir.path()),
        r#"{"version": 1, "launch": {"colour": "red"}}"#,
    )
    .unwrap();
    let err = Overrides::load(dir.path()).unwrap_err();
    assert!(err.to_string().contains("colour"), "{err}");
}

fn deny(tool: &str) -> Edit {
    Edit::Deny {
        stack: "mcp".into(),
        server: "gh".into(),
        tools: names(&[tool]),
    }
}

#[test]
fn an_update_keeps_what_another_writer_saved_since_we_loaded() {
    let dir = tempfile::tempdir().unwrap();
    // The TUI loaded the file long ago; then the CLI denied echo.
    let stale = Overrides::load(dir.path()).unwrap();
    Overrides::update(dir.path(), &[deny("echo")]).unwrap();
    // The TUI's edit goes onto the file as it is now, not onto its stale copy.
    let describe = Edit::Describe {
        stack: "mcp".into(),
        server: "gh".into(),
        tool: "add".into(),
        text: Some("Adds.".into()),
    };
    let updated = Overrides::update(dir.path(), &[describe]).unwrap();
    assert!(updated.saved);
    assert!(stale.for_server("mcp", "gh").is_none());
    let loaded = Overrides::load(dir.path()).unwrap();
    assert_eq!(loaded, updated.overrides);
    let gh = loaded.for_server("mcp", "gh").unwrap();
    assert_eq!(gh.deny, BTreeSet::from(["echo".to_string()]));
    assert_eq!(gh.descriptions["add"], "Adds.");
}

#[test]
fn concurrent_writers_lose_no_choice() {
    let dir = tempfile::tempdir().unwrap();
    let (writers, each) = (8, 12);
    std::thread::scope(|scope| {
        for w in 0..writers {
            let dir = dir.path();
            scope.spawn(move || {
                for i in 0..each {
                    Overrides::update(dir, &[deny(&format!("t{w}_{i}"))]).unwrap();
                }
            });
        }
    });
    let loaded = Overrides::load(dir.path()).unwrap();
    let denied = &loaded.for_server("mcp", "gh").unwrap().deny;
    assert_eq!(denied.len(), writers * each, "{denied:?}");
}

#[test]
fn edits_apply_like_the_mutations_and_unchanged_files_are_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let gh = entry("mcp", "gh", true);
    let updated = Overrides::update(dir.path(), &[Edit::set_disabled(&gh, true)]).unwrap();
    assert!(
        !updated.changes[0].changed,
        "the config says disabled already"
    );
    assert!(updated.saved, "the choice is kept all the same");
    let allow = Edit::Allow {
        stack: "mcp".into(),
        server: "gh".into(),
        tools: names(&["echo"]),
        only: true,
    };
    let launch = Edit::SetLaunchChoices(LaunchChoices {
        port: Some(8100),
        ..LaunchChoices::default()
    });
    let updated = Overrides::update(dir.path(), &[allow.clone(), launch]).unwrap();
    let choices = updated.overrides.for_server("mcp", "gh").unwrap();
    assert_eq!(choices.allow, Some(BTreeSet::from(["echo".to_string()])));
    assert_eq!(updated.overrides.launch_choices().unwrap().port, Some(8100));

    let before = std::fs::metadata(overrides_file(dir.path()))
        .unwrap()
        .modified();
    let again = Overrides::update(dir.path(), &[allow]).unwrap();
    assert!(!again.saved && again.changes.iter().all(|c| !c.changed));
    let after = std::fs::metadata(overrides_file(dir.path()))
        .unwrap()
        .modified();
    assert_eq!(before.unwrap(), after.unwrap());

    let clear = Edit::ClearServer {
        stack: "mcp".into(),
        server: "gh".into(),
    };
    let updated = Overrides::update(dir.path(), &[clear]).unwrap();
    assert!(updated.overrides.for_server("mcp", "gh").is_none());
}

#[test]
fn an_update_never_overwrites_a_file_that_does_not_load() {
    let dir = tempfile::tempdir().unwrap();
    let path = overrides_file(dir.path());
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, "{\"version\": 1,").unwrap();
    let err = Overrides::update(dir.path(), &[deny("echo")]).unwrap_err();
    assert_eq!(err.kind(), "invalid_overrides");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"version\": 1,");
}

#[test]
fn a_trim_cuts_the_description_as_the_file_has_it_then() {
    let dir = tempfile::tempdir().unwrap();
    let trim = |max| Edit::Trim {
        stack: "mcp".into(),
        server: "gh".into(),
        tool: "echo".into(),
        original: "Echo the message back.".into(),
        max,
    };
    let fits = Overrides::update(dir.path(), &[trim(100)]).unwrap();
    assert!(!fits.saved && !fits.changes[0].changed, "nothing to store");
    // Another writer overrode the text meanwhile: the trim cuts that one.
    let describe = Edit::Describe {
        stack: "mcp".into(),
        server: "gh".into(),
        tool: "echo".into(),
        text: Some("Sends the very same message back to the caller.".into()),
    };
    Overrides::update(dir.path(), &[describe]).unwrap();
    let cut = Overrides::update(dir.path(), &[trim(20)]).unwrap();
    let gh = cut.overrides.for_server("mcp", "gh").unwrap();
    assert_eq!(gh.descriptions["echo"], "Sends the very same…");
}

#[test]
fn budgets_are_set_cleared_reset_and_stale_like_other_choices() {
    let mut o = ServerOverrides::default();
    assert_eq!(
        o.set_budget("echo", Some(2000)),
        change("echo", Action::Budgeted, true)
    );
    assert!(!o.set_budget("echo", Some(2000)).changed, "same budget");
    assert!(o.set_budget(ALL_TOOLS, Some(0)).changed);
    assert_eq!(o.output_budget("echo"), Some(2000));
    assert_eq!(o.output_budget("add"), Some(0), "the server's `*`");
    assert!(o.set_budget("gone", Some(5)).changed);
    assert_eq!(o.stale_names(&tools()), ["gone"], "never `*`");

    assert_eq!(
        o.reset(&names(&["gone"])),
        [change("gone", Action::Reset, true)]
    );
    assert_eq!(
        o.set_budget(ALL_TOOLS, None),
        change(ALL_TOOLS, Action::BudgetCleared, true)
    );
    assert!(!o.set_budget(ALL_TOOLS, None).changed);
    o.set_budget("echo", None);
    assert!(o.is_empty());
    assert_eq!(Action::Budgeted.as_str(), "budgeted");
    assert_eq!(Action::BudgetCleared.as_str(), "budget_cleared");
}
