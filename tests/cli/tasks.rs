//! Tools a server runs only as tasks (`execution.taskSupport: "required"`; server-everything's
//! `simulate-research-query`) answer their result on every path that cannot hold a task itself:
//! `call` (direct and through the daemon's gateway) and `serve`'s clients, who see the tool
//! without `taskSupport` (the gateway holds the task). The native bridge's path is a unit test
//! (`launch::controller::native::bridge`).

use std::process::Command;

use serde_json::{json, Value};

use crate::serve::stdio_gateway;
use crate::util::*;

const TOOL: &str = "simulate-research-query";

fn project() -> Cmd {
    Cmd::new().config_json(json!({"mcpServers": {"everything": everything()}}))
}

fn report_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

#[test]
fn call_answers_a_task_only_tool_with_its_result() {
    let cmd = project();
    let out = cmd
        .cmd()
        .args(["--config", "config.json", "call", "everything", TOOL])
        .args([r#"{"topic": "tides"}"#, "--json", "--daemon", "off"])
        .run()
        .json();
    assert_eq!(out["success"], true, "{out}");
    assert!(
        report_of(&out["result"]).contains("Research Report: tides"),
        "{out}"
    );
}

#[test]
fn a_gateway_client_calls_a_task_only_tool_as_any_other() {
    let cmd = project();
    let mut command = Command::new(sdk_python());
    command
        .arg(manifest_dir().join("tests/fixtures/input_client.py"))
        .args(["--tool", &format!("everything__{TOOL}")])
        .args(["--args", r#"{"topic": "gates"}"#, "--list"])
        .args(stdio_gateway(cmd.dir(), &["--mode", "full"]));
    let seen = client_json(command, cmd.dir(), "the Python client");
    let listed = &seen["tools"][format!("everything__{TOOL}")];
    assert!(listed.is_object(), "the tool is listed: {seen}");
    assert!(
        listed.pointer("/execution/taskSupport").is_none(),
        "the gateway holds the task: {seen}"
    );
    assert_eq!(seen["result"]["isError"], false, "{seen}");
    assert!(
        report_of(&seen["result"]).contains("Research Report: gates"),
        "{seen}"
    );
}
