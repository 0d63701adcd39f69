//! `serve --http` on loopback has a key by default (issue 24, Medium 3: loopback is not a user
//! boundary; another local user called a tool). Made on first use, shown once, kept 0600 in the
//! state directory and reused; `--print-config` gives clients the header; `--no-auth` is an
//! explicit, warned choice.

use std::os::unix::fs::PermissionsExt;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::json;

use crate::serve::eventually;
use crate::util::*;

/// An `initialize` POSTed to `url` with these extra headers: the status.
fn initialize(url: &str, extra: &[(&str, &str)]) -> u16 {
    let mut headers = vec![
        ("Accept", "application/json, text/event-stream"),
        ("Content-Type", "application/json"),
    ];
    headers.extend_from_slice(extra);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    crate::launch_util::http("POST", url, &headers, Some(body)).0
}

/// `serve --http` on a free loopback port with `extra` flags, once it listens; stopped, its
/// output.
fn serve_and(cmd: &Cmd, extra: &[&str], check: impl FnOnce(&str)) -> Output {
    let addr = format!("127.0.0.1:{}", free_port());
    let running = cmd
        .cmd()
        .args(["--config", "config.json", "serve", "--http", &addr])
        .args(extra)
        .stderr_any()
        .spawn();
    eventually(20, "the gateway listens", || {
        std::net::TcpStream::connect(&addr).is_ok()
    });
    check(&format!("http://{addr}/mcp"));
    kill(Pid::from_raw(running.pid()), Signal::SIGTERM).expect("signal the gateway");
    running.wait()
}

#[test]
fn a_loopback_gateway_has_a_key_by_default_kept_owner_only_and_reused() {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"time": time()}}));
    let key_file = cmd.path(".local/state/mcp-launch/serve-key");
    let first = serve_and(&cmd, &[], |url| {
        assert_eq!(initialize(url, &[]), 401, "no key, no call");
        let key = std::fs::read_to_string(&key_file).expect("the key is kept");
        let bearer = format!("Bearer {key}");
        assert_eq!(initialize(url, &[("Authorization", &bearer)]), 200);
    });
    let key = std::fs::read_to_string(&key_file).unwrap();
    let mode = std::fs::metadata(&key_file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "owner-only");
    assert!(first.stderr.contains(&key), "shown once: {first}");
    let second = serve_and(&cmd, &[], |url| {
        let bearer = format!("Bearer {key}");
        assert_eq!(
            initialize(url, &[("Authorization", &bearer)]),
            200,
            "reused"
        );
    });
    assert!(!second.stderr.contains(&key), "shown only once: {second}");
    assert!(second.stderr.contains("serve-key"), "{second}");

    // A client's entry carries the header.
    let printed = cmd
        .cmd()
        .args([
            "serve",
            "--http",
            "127.0.0.1:8931",
            "--print-config",
            "claude-code",
        ])
        .stderr_any()
        .run();
    let entry: serde_json::Value = serde_json::from_str(&printed.stdout).unwrap();
    assert_eq!(
        entry["mcpServers"]["mcp-launch"],
        json!({"type": "http", "url": "http://127.0.0.1:8931/mcp",
               "headers": {"Authorization": format!("Bearer {key}")}}),
        "{printed}"
    );
    cmd.cmd()
        .args([
            "serve",
            "--http",
            "127.0.0.1:8931",
            "--print-config",
            "codex",
        ])
        .status(2)
        .stderr_has("stdio only")
        .run();
}

#[test]
fn no_auth_is_an_explicit_warned_choice_for_loopback_only() {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"time": time()}}));
    let out = serve_and(&cmd, &["--no-auth"], |url| {
        assert_eq!(initialize(url, &[]), 200);
    });
    assert!(
        out.stderr.contains("--no-auth: any user of this machine"),
        "{out}"
    );
    assert!(!cmd.path(".local/state/mcp-launch/serve-key").exists());
    cmd.cmd()
        .args(["serve", "--http", "0.0.0.0:0", "--no-auth"])
        .status(2)
        .stderr_has("no key is set")
        .run();
}
