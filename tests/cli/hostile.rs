//! Hostile inputs of issue 24 (security round two) that only the real binary shows: bytes that
//! are not UTF-8 on the command line, a log file that exists with loose permissions, planted
//! symlinks in a checkout's `.mcp-launch/`.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;

use serde_json::json;

use crate::util::{everything, Cmd, BIN};

/// Issue 24 (Low 17): an argument that is not UTF-8 made the usage-error path panic (it read
/// `std::env::args()`). Now: exit 2, a usage error, as JSON with `--json`, no panic.
#[test]
fn an_argument_that_is_not_utf8_is_a_usage_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let bad = std::ffi::OsStr::from_bytes(b"caf\xe9");
    for json in [false, true] {
        let mut command = std::process::Command::new(BIN);
        command.current_dir(dir.path()).env("HOME", dir.path());
        command.arg("list").arg(bad);
        if json {
            command.arg("--json");
        }
        let out = command.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        if json {
            let envelope: serde_json::Value = serde_json::from_str(&stdout).unwrap();
            assert_eq!(envelope["error"]["type"], "usage", "{envelope}");
        }
    }
}

/// Issue 24 (Low 21): a `--log-file` that already existed kept its mode (0644: anyone could
/// read what servers said). It is made owner-only.
#[test]
fn an_existing_readable_log_file_is_made_owner_only() {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"everything": everything()}}));
    let log = cmd.path("run.log");
    std::fs::write(&log, "earlier\n").unwrap();
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o644)).unwrap();
    cmd.cmd()
        .args(["list", "--config", "config.json", "--log-file", "run.log"])
        .stderr_any()
        .run();
    let mode = std::fs::metadata(&log).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{:o}", mode & 0o777);
    assert!(std::fs::read_to_string(&log)
        .unwrap()
        .starts_with("earlier\n"));
}

/// `up --controller mcpo` of the project's `a.json` with `--json`, on free ports, expected to
/// fail its one stack (exit 1): the JSON report.
fn up_failing(cmd: &Cmd) -> serde_json::Value {
    let port = crate::util::free_ports(2);
    cmd.cmd()
        .args(["up", "--config", "a.json", "--tunnel", "none", "--json"])
        .args(["--controller", "mcpo", "--port", &port.to_string()])
        .args(["--mcpo-port", &(port + 1).to_string()])
        .status(1)
        .stderr_any()
        .run()
        .json()
}

/// Issue 24 (Low 11): a planted `.mcp-launch/stacks` symlink was followed, and mcpo's config
/// (the servers' resolved secrets) written wherever it pointed. Refused, nothing written.
#[test]
fn a_planted_stacks_symlink_is_refused_and_nothing_is_written_through_it() {
    let cmd = crate::launch_util::project(&[("a.json", json!({"everything": everything()}))]);
    let elsewhere = cmd.mkdir("elsewhere");
    std::fs::create_dir_all(cmd.path(".mcp-launch")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, cmd.path(".mcp-launch/stacks")).unwrap();
    let out = up_failing(&cmd);
    let error = &out["errors"][0]["error"];
    assert_eq!(error["type"], "state_dir_escapes", "{out}");
    assert!(
        error["message"].as_str().unwrap().contains("symlink"),
        "{out}"
    );
    let written: Vec<_> = walkdir(&elsewhere);
    assert!(
        written.is_empty(),
        "written through the symlink: {written:?}"
    );
}

/// Issue 24 (Low 11): mcpo's config stayed on disk when mcpo failed to start.
#[test]
fn mcpo_config_is_removed_when_mcpo_fails_to_start() {
    let cmd = Cmd::new()
        .file(
            "a.json",
            &json!({"mcpServers": {"everything": everything()}}).to_string(),
        )
        .file(
            "fail-mcpo",
            "#!/bin/sh\necho 'mcpo: broken on purpose' >&2\nexit 3\n",
        );
    let fake = cmd.path("fail-mcpo");
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cmd = cmd.env("MCP_LAUNCH_MCPO", &fake.display().to_string());
    let out = up_failing(&cmd);
    assert_eq!(out["errors"][0]["error"]["type"], "mcpo_exited", "{out}");
    let config = cmd.path(".mcp-launch/stacks/a/mcpo.json");
    assert!(!config.exists(), "mcpo's config outlived the failed start");
}

/// Every file under `dir`, recursively.
fn walkdir(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walkdir(&path));
        } else {
            found.push(path);
        }
    }
    found
}

/// Issue 24 (Low 18): terminal escapes in a result (OSC 52 clipboard write, window title,
/// screen clear) were printed raw on a terminal. Shown escaped in human output (colour forced
/// on, as on a terminal); `--json` stays the exact JSON.
#[test]
fn terminal_escapes_in_a_result_are_shown_not_obeyed() {
    let message = "hi\u{1b}]52;c;cGF5bG9hZA==\u{7}\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}1A";
    let arguments = json!({ "message": message }).to_string();
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"everything": everything()}}));
    let human = cmd
        .cmd()
        .args([
            "--config",
            "config.json",
            "call",
            "everything",
            "echo",
            &arguments,
        ])
        .env("CLICOLOR_FORCE", "1")
        .stderr_any()
        .run();
    assert!(!human.stdout.contains('\u{1b}'), "{human}");
    assert!(
        !human.stdout.contains('\u{7}') && !human.stdout.contains('\u{9b}'),
        "{human}"
    );
    assert!(
        human.stdout.contains("\\x1b]52;c;cGF5bG9hZA==\\x07"),
        "{human}"
    );
    let json = cmd
        .cmd()
        .args([
            "--config",
            "config.json",
            "call",
            "everything",
            "echo",
            &arguments,
            "--json",
        ])
        .stderr_any()
        .run()
        .json();
    let text = json["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains(message), "{json}");
}
