//! `serve --http --auth oauth` with a client nobody here wrote: the official Python SDK's
//! OAuthClientProvider discovers our metadata, registers, is let in by the operator (`auth
//! approve`), calls a tool, refreshes its token and calls again; `auth clients` lists it and
//! `auth revoke` ends it at once (issue 27).

use std::process::Command;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};

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

/// A read-only tool and a destructive one, besides nothing else (`--only-file-tools`).
pub(crate) fn scoped_tools(cmd: &Cmd) -> Value {
    let file = cmd.path("tools.json");
    let lookup = json!({"name": "lookup", "description": "Looks a record up",
        "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}});
    let erase = json!({"name": "erase", "description": "Erases every record",
        "inputSchema": {"type": "object"}});
    std::fs::write(&file, json!([lookup, erase]).to_string()).unwrap();
    let file = file.display().to_string();
    fault(&["--only-file-tools", "--tools-file", &file])
}

/// What the Python SDK's OAuth client saw, granted `scope`, of a gateway in `mode` over the
/// scoped tools: it calls `tool`, then each of `probes`.
fn seen_with_scope(mode: &str, scope: &str, tool: &str, probes: Value) -> Value {
    let cmd = Cmd::new();
    let entry = scoped_tools(&cmd);
    let cmd = cmd.config_json(json!({"mcpServers": {"fault": entry}}));
    let addr = format!("127.0.0.1:{}", free_port());
    let running = cmd
        .cmd()
        .args(["--config", "config.json", "serve", "--mode", mode])
        .args(["--http", &addr, "--auth", "oauth"])
        .stderr_any()
        .spawn();
    eventually(20, "the gateway listens", || {
        std::net::TcpStream::connect(&addr).is_ok()
    });
    let mut client = Command::new(sdk_python());
    client
        .arg(manifest_dir().join("tests/fixtures/oauth_client.py"))
        .arg(format!("http://{addr}/mcp"))
        .args([BIN, tool, scope, &probes.to_string()]);
    let seen = client_json(client, cmd.dir(), "the Python SDK's OAuth client");
    kill(Pid::from_raw(running.pid()), Signal::SIGTERM).expect("signal the gateway");
    running.wait();
    seen
}

fn listed(seen: &Value, name: &str) -> bool {
    seen["tools"].as_array().unwrap().iter().any(|t| t == name)
}

#[test]
fn a_read_scope_lists_and_calls_only_read_only_tools() {
    let probes = json!([["fault__erase", {}]]);
    let seen = seen_with_scope("full", "tools:read", "fault__lookup", probes);
    assert!(listed(&seen, "fault__lookup"), "{seen}");
    assert!(
        !listed(&seen, "fault__erase"),
        "a tools:read client learns of erase: {seen}"
    );
    assert_eq!(seen["first_call_error"], false, "{seen}");
    let refused = &seen["probes"][0];
    let message = refused["rpc_error"].as_str().unwrap_or_default();
    assert!(message.contains("needs scope `tools:all`"), "{seen}");
}

#[test]
fn an_all_scope_lists_and_calls_every_tool() {
    let probes = json!([["fault__erase", {}]]);
    let seen = seen_with_scope("full", "tools:all", "fault__lookup", probes);
    assert!(
        listed(&seen, "fault__lookup") && listed(&seen, "fault__erase"),
        "{seen}"
    );
    assert_eq!(seen["probes"][0]["is_error"], false, "{seen}");
    assert!(
        seen["probes"][0]["text"]
            .as_str()
            .unwrap()
            .contains("erase called"),
        "{seen}"
    );
}

#[test]
fn sparse_search_and_calls_follow_the_scope() {
    let probes = json!([
        ["search_tools", {"query": "erase every record"}],
        ["call_tool", {"name": "fault__erase", "arguments": {}}],
        ["describe_tool", {"name": "fault__erase"}],
    ]);
    let read = seen_with_scope("sparse", "tools:read", "search_tools", probes.clone());
    let found = read["probes"][0]["text"].as_str().unwrap();
    assert!(
        !found.contains("fault__erase"),
        "search told of erase: {read}"
    );
    let call = read["probes"][1]["rpc_error"].as_str().unwrap_or_default();
    assert!(call.contains("needs scope `tools:all`"), "{read}");
    assert!(
        !read["probes"][2]["text"]
            .as_str()
            .unwrap()
            .contains("Erases"),
        "{read}"
    );
    let all = seen_with_scope("sparse", "tools:all", "search_tools", probes);
    let found = all["probes"][0]["text"].as_str().unwrap();
    assert!(
        found.contains("fault__erase"),
        "the search itself misses erase: {all}"
    );
    assert_eq!(all["probes"][1]["is_error"], false, "{all}");
}
