//! 2026-07-28 clients get what legacy clients get (issue 23 §4): a handshake-era server's
//! mid-call requests (elicitation, sampling) reach a client of the stateless revision as
//! `InputRequiredResult` round trips, and resource updates reach its `subscriptions/listen`
//! stream. Driven by the official Python SDK's high-level `Client`, which negotiates 2026-07-28
//! with the gateway by default, over stdio and Streamable HTTP, in front of server-everything
//! (a handshake-era server).

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use crate::serve::{http_gateway, stdio_gateway};
use crate::util::*;

fn driver() -> String {
    manifest_dir()
        .join("tests/fixtures/input_client.py")
        .display()
        .to_string()
}

fn project() -> Cmd {
    Cmd::new().config_json(json!({"mcpServers": {"everything": everything()}}))
}

fn drive(dir: &Path, args: &[&str], target: &[String]) -> Value {
    let mut command = Command::new(sdk_python());
    command.arg(driver()).args(args).args(target);
    client_json(command, dir, "the Python client")
}

fn texts(result: &Value) -> String {
    result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Elicitation and sampling asked by the server mid-call are answered by this client, in
/// the 2026-07-28 revision, call after call.
fn check_round_trips(dir: &Path, target: &[String]) {
    let seen = drive(
        dir,
        &[
            "--tool",
            "everything__trigger-elicitation-request",
            "--elicit",
            r#"{"name": "Ada Lovelace"}"#,
            "--calls",
            "2",
        ],
        target,
    );
    assert_eq!(seen["protocol"], "2026-07-28", "{seen}");
    assert_eq!(
        seen["asked"],
        json!(["elicitation/create", "elicitation/create"]),
        "{seen}"
    );
    for result in seen["results"].as_array().expect("results") {
        assert_eq!(result["isError"], false, "{seen}");
        assert!(texts(result).contains("Ada Lovelace"), "{seen}");
    }
    let seen = drive(
        dir,
        &[
            "--tool",
            "everything__trigger-sampling-request",
            "--args",
            r#"{"prompt": "say hi"}"#,
            "--sample",
            "the test client's sample",
        ],
        target,
    );
    assert_eq!(seen["asked"], json!(["sampling/createMessage"]), "{seen}");
    assert!(
        texts(&seen["result"]).contains("the test client's sample"),
        "{seen}"
    );
}

/// A client that does not offer elicitation gets a tool error saying so, at once.
fn check_refusal(dir: &Path, target: &[String]) {
    let seen = drive(
        dir,
        &[
            "--tool",
            "everything__trigger-elicitation-request",
            "--no-elicitation",
        ],
        target,
    );
    assert_eq!(seen["asked"], json!([]), "{seen}");
    assert_eq!(seen["result"]["isError"], true, "{seen}");
    assert!(
        texts(&seen["result"]).contains("does not offer it"),
        "{seen}"
    );
}

/// A resource named on `subscriptions/listen` has its updates heard (server-everything sends
/// one every 5 s once `toggle-subscriber-updates` ran).
fn check_listen(dir: &Path, target: &[String]) {
    let seen = drive(
        dir,
        &[
            "--tool",
            "everything__toggle-subscriber-updates",
            "--listen",
            "8",
        ],
        target,
    );
    let uri = seen["uri"].as_str().expect("a resource listed");
    let updates = seen["updates"].as_array().expect("updates");
    assert!(!updates.is_empty(), "no update heard: {seen}");
    assert!(updates.iter().all(|u| u == uri), "{seen}");
}

#[test]
fn a_2026_client_answers_a_handshake_era_servers_requests_over_stdio() {
    let cmd = project();
    let target = stdio_gateway(cmd.dir(), &["--mode", "full"]);
    check_round_trips(cmd.dir(), &target);
    check_refusal(cmd.dir(), &target);
}

#[test]
fn a_2026_client_answers_a_handshake_era_servers_requests_over_http() {
    let cmd = project();
    let (_gateway, url) = http_gateway(&cmd, &["--mode", "full"]);
    let target = vec!["--http".to_string(), url];
    check_round_trips(cmd.dir(), &target);
    check_refusal(cmd.dir(), &target);
}

#[test]
fn a_2026_client_hears_resource_updates_on_its_listen_stream() {
    let cmd = project();
    let target = stdio_gateway(cmd.dir(), &["--mode", "full"]);
    check_listen(cmd.dir(), &target);
    let (_gateway, url) = http_gateway(&cmd, &["--mode", "full"]);
    check_listen(cmd.dir(), &["--http".to_string(), url]);
}
