//! `doctor`: each program ok / missing / broken, with a PATH the test controls (fake programs
//! are small shell scripts), timeouts that leave nothing behind, and the real mcpo.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::util::{assert_pid_gone, manifest_dir, read_pidfile, Cmd};

/// Writes an executable shell script `bin/NAME` with this body (coreutils reachable).
fn fake(cmd: &Cmd, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = cmd.mkdir("bin");
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\nPATH=/usr/bin:/bin\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A program that prints `output` whatever its arguments.
fn prints(cmd: &Cmd, name: &str, output: &str) {
    fake(cmd, name, &format!("echo '{output}'"));
}

/// Fakes of every required program and of uv, uvx and cloudflared.
fn all_but_mcpo() -> Cmd {
    let cmd = Cmd::new();
    prints(&cmd, "python3", "Python 3.12.3");
    prints(&cmd, "node", "v20.11.1");
    prints(&cmd, "npx", "10.2.4");
    prints(&cmd, "uv", "uv 0.13.9 (1a2b3c4 2025-10-01)");
    prints(&cmd, "uvx", "uvx 0.13.9");
    prints(
        &cmd,
        "cloudflared",
        "cloudflared version 2024.6.1 (built 2024-06-12-1334 UTC)",
    );
    cmd
}

fn with_path(cmd: Cmd) -> Cmd {
    let bin = cmd.mkdir("bin");
    cmd.env("PATH", &bin.display().to_string())
}

fn check(out: &crate::util::Output, name: &str) -> Value {
    out.json()["checks"]
        .as_array()
        .unwrap_or_else(|| panic!("no checks array\n{out}"))
        .iter()
        .find(|c| c["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no check {name:?}\n{out}"))
}

#[test]
fn every_program_present_is_ok() {
    let cmd = all_but_mcpo();
    prints(&cmd, "mcpo", "Usage: mcpo [OPTIONS]");
    let out = with_path(cmd).args(["doctor", "--json"]).run();
    let checks = out.json()["checks"].as_array().unwrap().clone();
    assert_eq!(checks.len(), 7, "{out}");
    for c in &checks {
        assert_eq!(c["status"], "ok", "{out}");
        assert!(c["path"]
            .as_str()
            .unwrap()
            .ends_with(c["name"].as_str().unwrap()));
        assert!(c.get("help").is_none(), "{out}");
    }
    assert_eq!(check(&out, "python3")["version"], "3.12.3");
    assert_eq!(check(&out, "node")["version"], "20.11.1");
    assert_eq!(check(&out, "npx")["version"], "10.2.4");
    assert_eq!(check(&out, "uv")["version"], "0.13.9");
    assert_eq!(check(&out, "cloudflared")["version"], "2024.6.1");
}

#[test]
fn human_report_lists_each_check() {
    let cmd = all_but_mcpo();
    let out = with_path(cmd).args(["doctor"]).run();
    for name in ["python3", "node", "npx", "uv", "uvx", "cloudflared", "mcpo"] {
        assert!(out.stdout.contains(name), "{out}");
    }
    assert!(out.stdout.contains("mcpo: missing"), "{out}");
    assert!(out.stdout.contains("mcpo==0.0.20"), "{out}");
}

#[test]
fn a_broken_mcpo_fails_with_its_error_and_the_pinned_install() {
    let cmd = all_but_mcpo();
    fake(
        &cmd,
        "mcpo",
        r#"cat >&2 <<'TRACE'
Traceback (most recent call last):
  File "/venv/bin/mcpo", line 5, in <module>
    from mcpo import app
  File "/venv/lib/python3.12/site-packages/mcpo/main.py", line 9, in <module>
    from mcp.client.session import ClientSession
ImportError: cannot import name 'ClientSession' from 'mcp.client.session'
TRACE
exit 1"#,
    );
    let out = with_path(cmd).args(["doctor", "--json"]).status(1).run();
    let mcpo = check(&out, "mcpo");
    assert_eq!(mcpo["status"], "broken", "{out}");
    let message = mcpo["message"].as_str().unwrap();
    assert!(
        message.contains("ImportError: cannot import name 'ClientSession'"),
        "{out}"
    );
    let help = mcpo["help"].as_str().unwrap();
    assert!(help.contains("mcpo==0.0.20"), "{out}");
    assert!(help.contains("--mcpo-constraints"), "{out}");
    assert!(help.contains("python3 -m venv"), "{out}");
    // Everything else is still fine.
    assert_eq!(check(&out, "node")["status"], "ok");
}

/// Issue 25, item 18: mcpo is optional (the native controller serves), the fix needs no build
/// checkout (the pins come from the binary), and the mcpo `up` would run is the one checked.
#[test]
fn mcpo_is_optional_its_pins_come_from_the_binary_and_mcp_launch_mcpo_is_seen() {
    let cmd = all_but_mcpo();
    let out = with_path(cmd.cmd()).args(["doctor", "--json"]).run();
    let mcpo = check(&out, "mcpo");
    assert_eq!(mcpo["status"], "missing", "{out}");
    let help = mcpo["help"].as_str().unwrap();
    assert!(help.starts_with("optional"), "{out}");
    assert!(help.contains("native controller"), "{out}");
    let checkout = manifest_dir().display().to_string();
    assert!(
        !help.contains(&checkout),
        "no path inside the build checkout\n{out}"
    );
    let pins = cmd.cmd().args(["doctor", "--mcpo-constraints"]).run();
    assert!(
        pins.stdout.lines().any(|l| l.starts_with("fastapi==")),
        "{pins}"
    );

    // An mcpo outside PATH, named as `up` takes it.
    let elsewhere = cmd.mkdir("venv/bin").join("mcpo");
    std::fs::write(&elsewhere, "#!/bin/sh\necho 'Usage: mcpo [OPTIONS]'\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = with_path(cmd.cmd())
        .env("MCP_LAUNCH_MCPO", &elsewhere.display().to_string())
        .args(["doctor", "--json"])
        .run();
    let mcpo = check(&out, "mcpo");
    assert_eq!(mcpo["status"], "ok", "{out}");
    assert_eq!(mcpo["path"], elsewhere.display().to_string(), "{out}");
}

#[test]
fn missing_optional_programs_only_warn() {
    let cmd = Cmd::new();
    prints(&cmd, "python3", "Python 3.12.3");
    prints(&cmd, "node", "v20.11.1");
    prints(&cmd, "npx", "10.2.4");
    let out = with_path(cmd).args(["doctor", "--json"]).run();
    for name in ["mcpo", "cloudflared", "uv", "uvx"] {
        let c = check(&out, name);
        assert_eq!(c["status"], "missing", "{out}");
        assert!(c.get("path").is_none(), "{out}");
        assert!(!c["help"].as_str().unwrap().is_empty(), "{out}");
    }
    let cloudflared = check(&out, "cloudflared")["help"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(cloudflared.contains("optional"), "{cloudflared}");
    assert!(cloudflared.contains("--tunnel"), "{cloudflared}");
}

#[test]
fn missing_node_fails() {
    let cmd = all_but_mcpo();
    std::fs::remove_file(cmd.path("bin/node")).unwrap();
    let out = with_path(cmd).args(["doctor", "--json"]).status(1).run();
    let node = check(&out, "node");
    assert_eq!(node["status"], "missing", "{out}");
    assert!(node["help"].as_str().unwrap().contains("Node.js"), "{out}");
}

#[test]
fn an_old_node_is_broken() {
    let cmd = all_but_mcpo();
    prints(&cmd, "node", "v16.20.0");
    let out = with_path(cmd).args(["doctor", "--json"]).status(1).run();
    let node = check(&out, "node");
    assert_eq!(node["status"], "broken", "{out}");
    assert_eq!(node["version"], "16.20.0", "{out}");
}

#[test]
fn a_hanging_program_is_broken_and_killed_with_its_children() {
    let cmd = all_but_mcpo();
    let pidfile = cmd.path("node.pids");
    fake(
        &cmd,
        "node",
        &format!(
            "sleep 100 &\necho $! > '{p}.tmp'\necho $$ >> '{p}.tmp'\nmv '{p}.tmp' '{p}'\nwait",
            p = pidfile.display()
        ),
    );
    let out = with_path(cmd)
        .args(["doctor", "--json", "--timeout", "1.5"])
        .status(1)
        .run();
    assert!(out.elapsed < Duration::from_secs(10), "{out}");
    let node = check(&out, "node");
    assert_eq!(node["status"], "broken", "{out}");
    assert!(
        node["message"].as_str().unwrap().contains("timed out"),
        "{out}"
    );
    let (grandchild, child) = read_pidfile(&pidfile);
    assert_pid_gone(child, "the hanging node");
    assert_pid_gone(grandchild, "the sleep it started");
}

fn mcpo_venv_bin() -> PathBuf {
    let bin = manifest_dir().join(".deps/venv-mcpo/bin");
    assert!(
        bin.join("mcpo").exists(),
        "{} is missing: run scripts/install-test-deps.sh",
        bin.display()
    );
    bin
}

#[test]
fn the_real_mcpo_installed_with_its_pins_is_ok() {
    let cmd = all_but_mcpo();
    let path = format!(
        "{}:{}",
        cmd.path("bin").display(),
        mcpo_venv_bin().display()
    );
    let out = cmd.env("PATH", &path).args(["doctor", "--json"]).run();
    let mcpo = check(&out, "mcpo");
    assert_eq!(mcpo["status"], "ok", "{out}");
    assert_eq!(mcpo["version"], "0.0.20", "{out}");
    assert_eq!(
        Path::new(mcpo["path"].as_str().unwrap()),
        mcpo_venv_bin().join("mcpo")
    );
}
