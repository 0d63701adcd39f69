//! `mcp-launch output HANDLE`: reading a kept output by lines, grep and JSONPath, from the
//! store in the user state dir (`$HOME/.local/state/mcp-launch/outputs` here).

use mcp_launch::outputs::{ClientScope, Kind, Store};

use crate::util::*;

/// A handle of the local user holding `body`, in the test's state dir.
fn keep(cmd: &Cmd, kind: Kind, body: &str) -> String {
    let store = Store::open(&cmd.path(".local/state/mcp-launch/outputs")).unwrap();
    store
        .put(&ClientScope::local(), kind, body.as_bytes())
        .unwrap()
}

#[test]
fn reads_a_range_grep_and_jsonpath() {
    let cmd = Cmd::new();
    let text: String = (1..=1000).map(|i| format!("row {i}\n")).collect();
    let handle = keep(&cmd, Kind::Text, &text);
    let out = cmd
        .cmd()
        .args(["output", &handle, "--range", "3:5"])
        .stderr_any()
        .run();
    assert_eq!(out.stdout, "row 3\nrow 4\nrow 5\n");
    assert!(
        out.stderr.contains("[lines 3-5 of 1,000; more: offset 5]"),
        "{out}"
    );

    let out = cmd
        .cmd()
        .args(["output", &handle, "--grep", "^row 99\\d$", "--json"])
        .run();
    let json = out.json();
    assert_eq!(json["success"], true);
    assert_eq!(json["text"].as_str().unwrap().lines().count(), 10);
    assert!(json["text"].as_str().unwrap().starts_with("990:row 990\n"));

    let doc = serde_json::json!({"items": (0..100).map(|i| serde_json::json!({"i": i})).collect::<Vec<_>>()});
    let handle = keep(&cmd, Kind::Json, &doc.to_string());
    let out = cmd
        .cmd()
        .args(["output", &handle, "--jsonpath", "$.items[98:]", "--json"])
        .run();
    assert_eq!(out.json()["text"], r#"[{"i":98},{"i":99}]"#);
}

#[test]
fn unknown_handles_and_bad_requests_are_usage_errors() {
    let cmd = Cmd::new();
    let out = cmd
        .cmd()
        .args(["output", "h_000000000000000000000000", "--json"])
        .status(2)
        .run();
    assert_eq!(out.error()["type"], "unknown_handle");
    let handle = keep(&cmd, Kind::Text, "a\n");
    let out = cmd
        .cmd()
        .args(["output", &handle, "--grep", "(", "--json"])
        .status(2)
        .run();
    assert_eq!(out.error()["type"], "invalid_read");
    let out = cmd
        .cmd()
        .args(["output", &handle, "--range", "9:1", "--json"])
        .status(2)
        .run();
    assert_eq!(out.error()["type"], "usage");
}
