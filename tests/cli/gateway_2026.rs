//! The gateway relays a 2026-07-28 client to a 2026-07-28 HTTP server in that revision (issue
//! 26): the call reaches the server with the client's `_meta` and the revision's headers, an
//! `InputRequiredResult` goes to the client and its retry back, and a tool the server adds at
//! runtime reaches the client's `subscriptions/listen` stream and its list. The server is the
//! official Python SDK's (tests/fixtures/era_server.py), the client the SDK's `Client`
//! (tests/fixtures/era_client.py), in front of `serve` over HTTP and stdio. A server of the
//! handshake era (server-everything) refuses the revision once and serves those clients.

use std::path::Path;
use std::process::Command;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};

use crate::remote::RemoteServer;
use crate::remote_2026::Fixture;
use crate::serve::{http_gateway, stdio_gateway};
use crate::util::*;

/// era_server.py running, and a project whose one server (`era`) is it over HTTP.
fn era_project() -> (Fixture, Cmd) {
    let fixture = Fixture::serve("era_server.py");
    let cmd = Cmd::new().config_json(json!({"mcpServers": {
        "era": {"type": "http", "url": fixture.url()},
    }}));
    (fixture, cmd)
}

/// The SDK client against `target` (`--http URL` or `--stdio COMMAND…`), adding `grow`.
fn drive(dir: &Path, grow: &str, target: &[String]) -> Value {
    drive_with(dir, grow, &[], target)
}

/// [`drive`], with more of era_client.py's options (`extra`).
fn drive_with(dir: &Path, grow: &str, extra: &[&str], target: &[String]) -> Value {
    let mut command = Command::new(sdk_python());
    command
        .arg(manifest_dir().join("tests/fixtures/era_client.py"))
        .args(["--prefix", "era__", "--grow", grow, "--name", "Grace"])
        .args(extra)
        .args(target);
    client_json(command, dir, "the Python SDK client")
}

/// What the client saw went through in the 2026-07-28 revision end to end.
fn check(seen: &Value, grown: &str) {
    assert_eq!(seen.get("error"), None, "{seen}");
    assert_eq!(seen["protocol"], "2026-07-28", "{seen}");
    let server = &seen["whoami"];
    assert_eq!(server["protocol"], "2026-07-28", "the server's era: {seen}");
    let meta = &server["meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/clientInfo"]["name"], "era-client",
        "the client's own _meta reaches the server: {seen}"
    );
    assert!(
        meta["io.modelcontextprotocol/clientCapabilities"]
            .get("elicitation")
            .is_some(),
        "{seen}"
    );
    assert_eq!(server["mcpMethod"], "tools/call", "{seen}");
    assert_eq!(server["mcpName"], "whoami", "{seen}");
    assert_eq!(seen["asked"], json!(["elicitation/create"]), "{seen}");
    assert_eq!(seen["greeting"], "Hello, Grace!", "{seen}");
    assert_eq!(seen["changed"], true, "no tools change heard: {seen}");
    let tools = seen["tools"].as_array().expect("tools listed");
    assert!(
        tools.iter().any(|t| t == &format!("era__{grown}")),
        "{seen}"
    );
}

#[test]
fn a_2026_client_reaches_a_2026_http_server_in_that_revision_over_http_and_stdio() {
    let (_fixture, cmd) = era_project();
    let (_gateway, url) = http_gateway(&cmd, &["--mode", "full"]);
    let seen = drive(cmd.dir(), "grown_one", &["--http".to_string(), url]);
    check(&seen, "grown_one");

    let target = stdio_gateway(cmd.dir(), &["--mode", "full"]);
    let seen = drive(cmd.dir(), "grown_two", &target);
    check(&seen, "grown_two");
}

/// The tool index is older than the server: a tool added after `list` filled it (and before
/// the gateway listened) is listed to clients once the gateway's listen stream to the server
/// is acknowledged — the changes a server announced before that stream are not replayed. The
/// client closing its own listen stream logs no error.
#[test]
fn a_tool_added_before_the_gateway_listened_is_listed_all_the_same() {
    let (fixture, cmd) = era_project();
    cmd.cmd()
        .args(["--config", "config.json", "list"])
        .stderr_any()
        .run();
    // Straight to the server: neither the index nor any gateway hears of it.
    let direct = ["--http".to_string(), fixture.url()];
    let seen = drive_with(cmd.dir(), "unannounced", &["--prefix", ""], &direct);
    assert_eq!(seen.get("error"), None, "{seen}");

    let (gateway, url) = http_gateway(&cmd, &["--mode", "full"]);
    // Listed before anything through the gateway changes a tool (that would list all anew).
    let awaited = ["--await-tool", "era__unannounced", "--wait", "8"];
    let seen = drive_with(
        cmd.dir(),
        "announced",
        &awaited,
        &["--http".to_string(), url],
    );
    check(&seen, "announced");
    assert_eq!(
        seen["awaited"], true,
        "the tool added before the gateway listened is not listed: {seen}"
    );
    // A client that closed its listen stream is routine, not an error to show the operator.
    kill(Pid::from_raw(gateway.pid()), Signal::SIGTERM).expect("signal the gateway");
    let stopped = gateway.wait();
    assert!(!stopped.stderr.contains("ERROR"), "{stopped}");
}

/// The server ends the gateway's own `subscriptions/listen` stream while its session lives
/// and adds a tool at once, before the gateway listens again (a second later): the new
/// stream's acknowledgement makes the gateway list again, so the tool reaches the client; a
/// tool added later is heard on the new stream itself.
#[test]
fn a_listen_stream_the_server_ends_is_opened_again_and_nothing_missed() {
    let (_fixture, cmd) = era_project();
    let (_gateway, url) = http_gateway(&cmd, &["--mode", "full"]);
    let target = ["--http".to_string(), url];
    let in_the_gap = ["--end-listens", "--settle", "0"];
    let seen = drive_with(cmd.dir(), "in_the_gap", &in_the_gap, &target);
    check(&seen, "in_the_gap");
    let seen = drive(cmd.dir(), "on_the_new_stream", &target);
    check(&seen, "on_the_new_stream");
}

#[test]
fn a_handshake_era_http_server_refuses_the_revision_once_and_serves_2026_clients() {
    let everything = RemoteServer::start(
        "streamableHttp",
        "MCP Streamable HTTP Server listening on port",
    );
    let url = format!("http://127.0.0.1:{}/mcp", everything.port);
    let cmd =
        Cmd::new().config_json(json!({"mcpServers": {"everything": {"type": "http", "url": url}}}));
    let (running, gateway) = http_gateway(&cmd, &["--mode", "full", "-v"]);
    let mut command = Command::new(sdk_python());
    command
        .arg(manifest_dir().join("tests/fixtures/input_client.py"))
        .args([
            "--tool",
            "everything__echo",
            "--args",
            r#"{"message": "hi"}"#,
        ])
        .args(["--calls", "2", "--http", &gateway]);
    let seen = client_json(command, cmd.dir(), "the Python SDK client");
    assert_eq!(seen["protocol"], "2026-07-28", "{seen}");
    let results = seen["results"].as_array().expect("results");
    assert_eq!(results.len(), 2, "{seen}");
    for result in results {
        assert!(result.to_string().contains("hi"), "{seen}");
    }
    kill(Pid::from_raw(running.pid()), Signal::SIGTERM).expect("signal the gateway");
    let out = running.wait();
    let refusals = out
        .stderr
        .matches("does not speak the stateless revision")
        .count();
    assert_eq!(refusals, 1, "{}", out.stderr);
}
