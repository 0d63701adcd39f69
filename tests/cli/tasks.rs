//! Tools a server runs only as tasks (`execution.taskSupport: "required"`; server-everything's
//! `simulate-research-query`) answer their result on every path that cannot hold a task itself:
//! `call` (direct and through the daemon's gateway) and `serve`'s clients, who see the tool
//! with `taskSupport: "required"` yet may call it plainly (the gateway then holds the task;
//! 2025-11-25 clients calling it as a task: `tasks25.rs`). The native bridge's path is a unit test
//! (`launch::controller::native::bridge`).
//!
//! A 2026-07-28 client that holds tasks (the `io.modelcontextprotocol/tasks` extension)
//! gets a gateway task for a task-supporting tool, seen and cancelled by it alone; the
//! conformance suite's tasks scenarios pass through the gateway (`conformance.rs`).

use std::process::Command;

use serde_json::{json, Value};

use crate::serve::{eventually, http_gateway, stateless, stdio_gateway, text_of};
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
    assert_eq!(
        listed.pointer("/execution/taskSupport"),
        Some(&json!("required")),
        "listed as its server lists it: {seen}"
    );
    assert_eq!(seen["result"]["isError"], false, "{seen}");
    assert!(
        report_of(&seen["result"]).contains("Research Report: gates"),
        "{seen}"
    );
}

/// The stateless client's step: `method` with `params`, as the client with `key`.
fn step(key: &str, method: &str, params: Value) -> Value {
    json!({"method": method, "params": params, "headers": {"Authorization": format!("Bearer {key}")}})
}

/// The client capabilities of a 2026-07-28 client that holds tasks.
const HOLDS_TASKS: &str = r#"{"extensions": {"io.modelcontextprotocol/tasks": {}}}"#;

#[test]
fn a_2026_client_holding_tasks_gets_its_own_task_which_no_other_client_sees() {
    let fixture = manifest_dir().join("tests/fixtures/conformance_server.py");
    let cmd = Cmd::new().config_json(json!({"mcpServers": {
        "conf": {"command": sdk_python(), "args": [fixture.display().to_string()]},
    }}));
    let (_running, url) = http_gateway(&cmd, &["--mode", "full"]);
    let run = |steps: Value| {
        let transport = ["--url", url.as_str(), "--capabilities", HOLDS_TASKS];
        stateless(cmd.dir(), &transport, steps)
    };
    let slow = |seconds: u64, label: &str| json!({"name": "conf__slow_compute", "arguments": {"seconds": seconds, "label": label}});
    let task = json!({"taskId": "$task"});
    let without = json!({"io.modelcontextprotocol/clientCapabilities": {}});
    let mut plain_call = slow(0, "plain");
    plain_call["_meta"] = without.clone();
    let answers = run(json!([
        step("alice", "tools/call", slow(30, "mine")),
        step("bob", "tasks/get", task.clone()),
        step("bob", "tasks/cancel", task.clone()),
        step("alice", "tasks/get", task.clone()),
        step("alice", "tasks/cancel", task.clone()),
        step("alice", "tasks/get", task.clone()),
        step("alice", "tasks/cancel", task.clone()),
        step("alice", "tools/call", plain_call),
        step(
            "alice",
            "tasks/get",
            json!({"taskId": "$task", "_meta": without})
        ),
        step("alice", "tasks/get", json!({"taskId": "no-such-task"})),
    ]));
    let created = &answers[0]["result"];
    assert_eq!(created["resultType"], "task", "{answers:?}");
    assert_eq!(created["status"], "working", "{answers:?}");
    let id = created["taskId"].as_str().expect("a task id");
    assert!(id.len() >= 32, "an unguessable id: {id}");
    assert!(
        created["ttlMs"].as_u64().is_some_and(|ttl| ttl > 0),
        "{created}"
    );
    for (n, seen) in answers[1..3].iter().enumerate() {
        assert_eq!(seen["error"]["code"], -32602, "bob's step {n}: {seen}");
    }
    assert_eq!(answers[3]["result"]["status"], "working", "{answers:?}");
    assert_eq!(answers[4]["result"], json!({"resultType": "complete"}));
    assert_eq!(answers[5]["result"]["status"], "cancelled", "{answers:?}");
    assert_eq!(
        answers[6]["result"],
        json!({"resultType": "complete"}),
        "idempotent"
    );
    // Without the extension: the call answers at once, tasks/* are refused.
    let plain = &answers[7]["result"];
    assert!(plain.get("taskId").is_none(), "{plain}");
    assert_eq!(
        text_of(&answers[7]),
        "Computed plain after 0.0 s.",
        "{plain}"
    );
    assert_eq!(answers[8]["error"]["code"], -32021, "{answers:?}");
    assert_eq!(answers[9]["error"]["code"], -32602, "{answers:?}");

    // A task's result is inlined once it has ended.
    let quick = run(json!([step("alice", "tools/call", slow(0, "quick"))]));
    let id = quick[0]["result"]["taskId"].clone();
    let mut ended = Value::Null;
    eventually(20, "the task completes", || {
        ended = run(json!([step("alice", "tasks/get", json!({"taskId": id}))]))[0].clone();
        ended["result"]["status"] == "completed"
    });
    let text = ended["result"]["result"]["content"][0]["text"].as_str();
    assert_eq!(text, Some("Computed quick after 0.0 s."), "{ended}");
}

#[test]
fn a_first_runs_call_becomes_a_task_once_its_servers_check_knows_the_tool() {
    // The server takes longer to start than the gateway waits before it listens: the first
    // call comes before the check has listed the tool.
    let fixture = manifest_dir().join("tests/fixtures/conformance_server.py");
    let slow_start = r#"sleep 6; exec "$0" "$1""#;
    let cmd = Cmd::new().config_json(json!({"mcpServers": {
        "conf": {"command": "sh", "args": ["-c", slow_start, sdk_python(),
            fixture.display().to_string()]},
    }}));
    let (_running, url) = http_gateway(&cmd, &["--mode", "full"]);
    let transport = ["--url", url.as_str(), "--capabilities", HOLDS_TASKS];
    let call = json!({"name": "conf__slow_compute", "arguments": {"seconds": 0}});
    let answers = stateless(
        cmd.dir(),
        &transport,
        json!([step("alice", "tools/call", call)]),
    );
    assert_eq!(answers[0]["result"]["resultType"], "task", "{answers:?}");
}
