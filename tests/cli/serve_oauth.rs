//! `serve --http --auth oauth` with a client nobody here wrote: the official Python SDK's
//! OAuthClientProvider discovers our metadata, registers, is let in by the operator (`auth
//! approve`), calls a tool, refreshes its token and calls again; `auth clients` lists it and
//! `auth revoke` ends it at once (issue 27).

use std::process::Command;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::json;

use crate::serve::eventually;
use crate::util::*;

#[test]
fn the_python_sdk_logs_in_calls_refreshes_and_is_revoked() {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"fault": fault(&[])}}));
    let addr = format!("127.0.0.1:{}", free_port());
    let url = format!("http://{addr}/mcp");
    let running = cmd
        .cmd()
        .args([
            "--config",
            "config.json",
            "serve",
            "--mode",
            "full",
            "--http",
            &addr,
            "--auth",
            "oauth",
        ])
        .stderr_any()
        .spawn();
    eventually(20, "the gateway listens", || {
        std::net::TcpStream::connect(&addr).is_ok()
    });
    let mut client = Command::new(sdk_python());
    client
        .arg(manifest_dir().join("tests/fixtures/oauth_client.py"))
        .args([&url, BIN, "fault__echo"]);
    let seen = client_json(client, cmd.dir(), "the Python SDK's OAuth client");
    assert_eq!(seen["consent_status"], 303, "{seen}");
    assert_eq!(seen["frame_options"], "DENY", "{seen}");
    assert!(
        seen["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "fault__echo"),
        "{seen}"
    );
    assert_eq!(seen["first_call_error"], false, "{seen}");
    assert_eq!(seen["second_call_error"], false, "{seen}");
    assert_eq!(seen["token_sets"], 2, "no refresh happened: {seen}");
    assert_eq!(
        seen["refresh_tokens"], 2,
        "the refresh token was not rotated: {seen}"
    );
    let listed = cmd.cmd().args(["auth", "clients", "--json"]).run().json();
    let clients = listed["clients"].as_array().unwrap().clone();
    assert_eq!(clients.len(), 1, "{listed}");
    assert_eq!(clients[0]["name"], "python sdk test");
    // The SDK asks for the scopes our 401's challenge names (the MCP spec's scope selection).
    let scope = clients[0]["scope"].as_str().unwrap_or_default();
    assert!(scope.split(' ').any(|s| s == "tools:all"), "{listed}");
    assert!(clients[0]["last_used"].is_u64(), "{listed}");
    let id = clients[0]["client_id"].as_str().unwrap();
    cmd.cmd().args(["auth", "revoke", id]).run();
    let state =
        std::fs::read_to_string(cmd.path(".local/state/mcp-launch/oauth-server.json")).unwrap();
    assert!(!state.contains(id), "revoked but kept: {state}");
    kill(Pid::from_raw(running.pid()), Signal::SIGTERM).expect("signal the gateway");
    let output = running.wait();
    assert!(
        output.stderr.contains("asks for tools:read tools:all"),
        "{output}"
    );
}
