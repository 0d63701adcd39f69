//! Durations from flags and environment variables: one checked reader. Values that panicked
//! (`1e20` in `Duration::from_secs_f64`) or wrapped around (a TTL multiplied unchecked) are
//! refused with exit 2, naming the flag or variable and the accepted range.

use serde_json::json;

use crate::util::{fault, Cmd};

fn project() -> Cmd {
    Cmd::new().config_json(json!({"mcpServers": {"f": fault(&[])}}))
}

/// Checks the error envelope of a refused duration: exit 2, type, what and the range.
fn assert_refused(cmd: Cmd, name: &str, value: &str) {
    let out = cmd.status(2).run();
    let error = out.error();
    assert_eq!(error["type"], "invalid_duration", "{out}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!("{name} {value:?} is ")),
        "{out}"
    );
    let help = error["help"].as_str().unwrap();
    assert!(help.contains(name) && help.contains(" to "), "{out}");
}

#[test]
fn flags_out_of_range_exit_2_without_a_panic() {
    for command in [&["call", "f", "echo"][..], &["doctor"]] {
        let out = project()
            .args(command)
            .args(["--timeout", "1e20", "--json"])
            .status(2)
            .run();
        assert_eq!(out.error()["type"], "usage", "{out}");
        let message = out.error()["message"].as_str().unwrap().to_string();
        assert!(
            message.contains("--timeout \"1e20\" is out of range: it takes from 1ms to 1day"),
            "{out}"
        );
    }
}

#[test]
fn environment_durations_are_checked_before_anything_starts() {
    let cases = [
        ("MCP_INIT_TIMEOUT_SEC", "1e20", &["list"][..]),
        ("MCP_INIT_TIMEOUT_SEC", "soon", &["list"]),
        (
            "MCP_LAUNCH_READY_TIMEOUT",
            "1e20",
            &["up", "--tunnel", "none"],
        ),
        ("MCP_LAUNCH_CALL_TIMEOUT", "-5", &["up", "--tunnel", "none"]),
        (
            "MCP_LAUNCH_INDEX_TTL",
            "213503982334601d",
            &["search", "echo"],
        ),
        ("MCP_LAUNCH_INDEX_TTL", "5 weeks ago", &["list"]),
    ];
    for (name, value, command) in cases {
        let cmd = project().env(name, value).args(command).args(["--json"]);
        assert_refused(cmd, name, value);
    }
}

#[test]
fn durations_with_units_are_accepted() {
    let out = project()
        .env("MCP_INIT_TIMEOUT_SEC", "30s")
        .env("MCP_LAUNCH_INDEX_TTL", "1h 30m")
        .args([
            "call",
            "f",
            "echo",
            r#"{"message": "hi"}"#,
            "--timeout",
            "1m",
        ])
        .args(["--json"])
        .run()
        .json();
    assert_eq!(out["success"], true, "{out}");
}
