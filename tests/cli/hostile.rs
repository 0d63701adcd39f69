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
