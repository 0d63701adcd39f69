//! A step-up through the gateway (issue 26): a server that answers a tool's call with 403
//! `insufficient_scope` gives the agent a tool error naming the exact command a person runs —
//! the scopes to ask for, and the gateway's config and env files as absolute paths, so it works
//! when pasted anywhere. The Python SDK's protected server (tests/fixtures/oauth_server.py
//! `--step-up admin`), the Python SDK's client driving `serve` over stdio.

use serde_json::json;

use crate::oauth::{login, OAuthServer};
use crate::serve::{drive, stdio_gateway, text_of};
use crate::util::*;

#[test]
fn a_step_up_through_the_gateway_names_the_exact_login_command() {
    let server = OAuthServer::start_with(&["--step-up", "admin"]);
    let setup = Cmd::new()
        .config_json(json!({"mcpServers": {"prot": {"type": "http", "url": server.url()}}}))
        .file("vars.env", "UNUSED=1\n");
    let dir = setup.dir().to_path_buf();
    login(&dir, "prot");

    let mut args = vec!["strict", "--call", "prot__admin_echo"];
    args.extend(["--arguments", r#"{"message": "hi"}"#]);
    let env_file = dir.join("vars.env").display().to_string();
    let gateway = stdio_gateway(&dir, &["--mode", "full", "--env-file", &env_file]);
    args.extend(gateway.iter().map(String::as_str));
    let seen = drive(&dir, &args);
    let result = &seen["result"];
    assert_eq!(result["isError"], true, "{seen}");
    let text = text_of(&seen);
    let config = dir.join("config.json").display().to_string();
    let command = format!(
        "mcp-launch auth login prot --scope 'mcp admin' --config {config} --env-file {env_file}"
    );
    assert!(text.contains(&command), "{text}");
    assert!(text.contains("needs a login"), "{text}");

    // Logged out (revoked): the tools are still listed from the index, and a call names the
    // first login's command.
    setup
        .cmd()
        .args(["--config", "config.json", "auth", "logout", "prot"])
        .run();
    let mut args = vec!["strict", "--call", "prot__echo"];
    args.extend(["--arguments", r#"{"message": "hi"}"#]);
    args.extend(gateway.iter().map(String::as_str));
    let seen = drive(&dir, &args);
    assert_eq!(seen["result"]["isError"], true, "{seen}");
    let text = text_of(&seen);
    let command = format!("mcp-launch auth login prot --config {config} --env-file {env_file}");
    assert!(text.contains(&command), "{text}");
}

/// `up --controller native` of `setup`'s config, once ready: the process, its front's URL
/// and key.
pub(crate) fn native_stack(setup: &Cmd) -> (Running, String, String) {
    native_stack_with(setup, &[])
}

/// [`native_stack`] with more arguments for `up` (`--env-file F`).
fn native_stack_with(setup: &Cmd, more: &[&str]) -> (Running, String, String) {
    use crate::launch_util::{stack, wait_ready};
    let up = setup
        .cmd()
        .args(["up", "--config", "config.json", "--tunnel", "none"])
        .args(["--controller", "native"])
        .args(more)
        .stderr_any()
        .spawn();
    let state = wait_ready(&up, setup.dir(), 1);
    let running = stack(&state, "config");
    let key = running["api_key"].as_str().unwrap().to_string();
    let front = format!("http://127.0.0.1:{}", running["port"]);
    (up, front, key)
}

/// The same through a native stack's REST front: a step-up's 403 is a 502 `needs_login` whose
/// help names the exact command, with the stack's config and `up`'s env file as absolute paths.
#[test]
fn a_step_up_through_a_native_stack_names_the_exact_login_command() {
    let server = OAuthServer::start_with(&["--step-up", "admin"]);
    let setup = Cmd::new()
        .config_json(json!({"mcpServers": {"prot": {"type": "http", "url": server.url()}}}))
        .file("vars.env", "UNUSED=1\n");
    login(setup.dir(), "prot");
    let env_file = setup.dir().join("vars.env").display().to_string();
    let (up, front, key) = native_stack_with(&setup, &["--env-file", &env_file]);
    let (status, body) = crate::launch_util::http(
        "POST",
        &format!("{front}/prot/admin_echo"),
        &[("X-API-Key", &key)],
        Some(json!({"message": "hi"})),
    );
    setup.cmd().args(["down", "--json"]).run();
    up.wait();
    assert_eq!(status, 502, "{body}");
    let config = setup.dir().join("config.json").display().to_string();
    let command = format!(
        "mcp-launch auth login prot --scope 'mcp admin' --config {config} --env-file {env_file}"
    );
    assert!(body.to_string().contains("needs_login"), "{body}");
    assert!(body.to_string().contains(&command), "{body}");
}

/// A server whose every request needs a scope the login lacks (a step-up even for listing):
/// `list` names the scopes in its command, directly and through a daemon alike (the daemon's
/// report carries them).
#[test]
fn list_through_a_daemon_names_a_step_ups_scopes() {
    let server = OAuthServer::start_with(&["--step-up", "admin", "--step-up-everywhere"]);
    let setup = Cmd::new()
        .config_json(json!({"mcpServers": {"prot": {"type": "http", "url": server.url()}}}));
    login(setup.dir(), "prot");
    let list = |how: &str| {
        let args = ["--config", "config.json", "list", "--json", "--daemon", how];
        setup.cmd().args(args).run()
    };
    let expected = "mcp-launch auth login prot --scope 'mcp admin' --config config.json";
    let direct = list("off");
    assert_eq!(direct.server("prot")["status"], "needs_login", "{direct}");
    assert_eq!(direct.server("prot")["help"], expected, "{direct}");

    let daemon = crate::daemon::start_daemon(&setup, setup.cmd());
    let relayed = list("use");
    setup
        .cmd()
        .args(["--config", "config.json", "daemon", "stop"])
        .stderr_any()
        .run();
    daemon.wait();
    assert_eq!(relayed.server("prot")["status"], "needs_login", "{relayed}");
    assert_eq!(relayed.server("prot")["help"], expected, "{relayed}");
}
