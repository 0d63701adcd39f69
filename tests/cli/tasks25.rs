//! The 2025-11-25 tasks utility for session clients through the gateway, driven from the
//! official Python SDK (2.x) in the handshake era (`tests/fixtures/tasks25_client.py`): the
//! gateway declares `capabilities.tasks`, lists task-supporting tools with their
//! `execution.taskSupport`, makes a task of a `tools/call` with `task`, and answers `tasks/get`,
//! `tasks/result`, `tasks/list` and `tasks/cancel` for the client's own tasks only; every
//! answer and `notifications/tasks/status` is checked against the 2025-11-25 JSON Schema.

use std::process::Command;

use serde_json::{json, Value};

use crate::serve::{http_gateway, stdio_gateway};
use crate::strict_clients::Revision;
use crate::util::*;

const RESEARCH: &str = "everything__simulate-research-query";

/// What the client saw of the gateway, after `steps` (`transport`: `--stdio …` or `--http URL`).
fn drive(dir: &std::path::Path, steps: Value, transport: &[String]) -> Value {
    let mut command = Command::new(sdk_python());
    command
        .arg(manifest_dir().join("tests/fixtures/tasks25_client.py"))
        .args(["--steps", &steps.to_string(), "--list", "--linger", "1"])
        .args(transport)
        .env("MCP_INIT_TIMEOUT_SEC", "60");
    client_json(command, dir, "the Python SDK tasks client")
}

fn step(method: &str, params: Value) -> Value {
    json!({"method": method, "params": params})
}

fn as_b(method: &str, params: Value) -> Value {
    json!({"method": method, "params": params, "as": "b"})
}

fn task_call(name: &str, arguments: Value) -> Value {
    step(
        "tools/call",
        json!({"name": name, "arguments": arguments, "task": {"ttl": 60_000}}),
    )
}

/// The schema definition of each method's result (2025-11-25).
fn result_definition(method: &str, result: &Value) -> &'static str {
    match method {
        "tools/call" if result.get("task").is_some() => "CreateTaskResult",
        "tools/call" => "CallToolResult",
        "tasks/get" => "GetTaskResult",
        "tasks/list" => "ListTasksResult",
        "tasks/cancel" => "CancelTaskResult",
        "tasks/result" => "GetTaskPayloadResult",
        other => panic!("a method the client does not send: {other}"),
    }
}

/// Every violation of the 2025-11-25 schema in what the gateway sent the client.
fn violations(seen: &Value) -> Vec<String> {
    let mut revision = Revision::load("2025-11-25");
    let mut found = revision.violations("ServerCapabilities", &seen["capabilities"]);
    for tool in seen["tools"]
        .as_object()
        .into_iter()
        .flat_map(|t| t.values())
    {
        found.extend(revision.violations("Tool", tool));
    }
    for answer in seen["answers"].as_array().into_iter().flatten() {
        let method = answer["method"].as_str().unwrap_or("?");
        match answer.get("result") {
            Some(result) => {
                found.extend(revision.violations(result_definition(method, result), result));
                if method == "tasks/result" {
                    found.extend(revision.violations("CallToolResult", result));
                }
            }
            None => found.extend(revision.violations("Error", &answer["error"])),
        }
    }
    for params in seen["notifications"].as_array().into_iter().flatten() {
        let message =
            json!({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": params});
        found.extend(revision.violations("ServerNotification", &message));
    }
    found
}

fn answers(seen: &Value) -> &Vec<Value> {
    seen["answers"].as_array().expect("answers")
}

fn error_code(answer: &Value) -> Option<i64> {
    answer["error"]["code"].as_i64()
}

#[test]
fn a_2025_11_25_client_runs_a_task_only_tool_as_its_own_task_over_stdio() {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"everything": everything()}}));
    let steps = json!([
        task_call(RESEARCH, json!({"topic": "tides"})),
        step("tasks/get", json!({"taskId": "$task"})),
        step("tasks/list", json!({})),
        step("tasks/result", json!({"taskId": "$task"})),
        step("tasks/get", json!({"taskId": "$task"})),
        step("tasks/get", json!({"taskId": "no-such-task"})),
        task_call("everything__echo", json!({"message": "hi"})),
        task_call(RESEARCH, json!({"topic": "gates"})),
        step("tasks/cancel", json!({"taskId": "$task"})),
        step("tasks/result", json!({"taskId": "$task"})),
    ]);
    let seen = drive(
        cmd.dir(),
        steps,
        &stdio_gateway(cmd.dir(), &["--mode", "full"]),
    );
    assert_eq!(seen["protocol"], "2025-11-25", "{seen}");
    assert!(
        seen["capabilities"]
            .pointer("/tasks/requests/tools/call")
            .is_some(),
        "the tasks capability is declared: {seen}"
    );
    assert_eq!(
        seen["tools"][RESEARCH].pointer("/execution/taskSupport"),
        Some(&json!("required")),
        "{seen}"
    );
    let a = answers(&seen);
    let created = &a[0]["result"]["task"];
    assert_eq!(created["status"], "working", "{seen}");
    assert_eq!(created["ttl"], 60_000, "{seen}");
    let id = created["taskId"].as_str().expect("a task id");
    assert_eq!(a[1]["result"]["taskId"], id, "{seen}");
    assert!(
        a[2]["result"]["tasks"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["taskId"] == id)),
        "tasks/list holds it: {seen}"
    );
    let result = &a[3]["result"];
    let report = result["content"][0]["text"].as_str().unwrap_or("");
    assert!(report.contains("Research Report: tides"), "{seen}");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id
    );
    assert_eq!(a[4]["result"]["status"], "completed", "{seen}");
    assert_eq!(error_code(&a[5]), Some(-32602), "unknown task: {seen}");
    assert_eq!(error_code(&a[6]), Some(-32601), "echo runs no task: {seen}");
    let cancelled = a[7]["result"]["task"]["taskId"].clone();
    assert_eq!(a[8]["result"]["status"], "cancelled", "{seen}");
    assert!(
        error_code(&a[9]).is_some(),
        "a cancelled task has no result: {seen}"
    );
    let told: Vec<(Value, Value)> = seen["notifications"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|n| (n["taskId"].clone(), n["status"].clone()))
        .collect();
    assert!(told.contains(&(json!(id), json!("completed"))), "{seen}");
    assert!(told.contains(&(cancelled, json!("cancelled"))), "{seen}");
    assert_eq!(violations(&seen), Vec::<String>::new(), "{seen}");
}

#[test]
fn a_2025_11_25_task_is_its_sessions_alone_and_tasks_list_pages_over_http() {
    let fixture = manifest_dir().join("tests/fixtures/conformance_server.py");
    let cmd = Cmd::new().config_json(json!({"mcpServers": {
        "conf": {"command": sdk_python(), "args": [fixture.display().to_string()]},
    }}));
    let (_running, url) = http_gateway(&cmd, &["--mode", "full"]);
    let quick = task_call("conf__slow_compute", json!({"seconds": 0, "label": "q"}));
    let mut steps: Vec<Value> = (0..16).map(|_| quick.clone()).collect();
    steps.extend([
        task_call(
            "conf__slow_compute",
            json!({"seconds": 30, "label": "mine"}),
        ),
        as_b("tasks/get", json!({"taskId": "$task"})),
        as_b("tasks/result", json!({"taskId": "$task"})),
        as_b("tasks/cancel", json!({"taskId": "$task"})),
        as_b("tasks/list", json!({})),
        step("tasks/get", json!({"taskId": "$task"})),
        step("tasks/list", json!({})),
        step("tasks/list", json!({"cursor": "$cursor"})),
        step("tasks/cancel", json!({"taskId": "$task"})),
        step("tasks/get", json!({"taskId": "$task"})),
    ]);
    let transport = ["--http".to_string(), url];
    let seen = drive(cmd.dir(), Value::Array(steps), &transport);
    assert_eq!(
        seen["tools"]["conf__slow_compute"].pointer("/execution/taskSupport"),
        Some(&json!("optional")),
        "{seen}"
    );
    let a = &answers(&seen)[16..];
    let id = a[0]["result"]["task"]["taskId"]
        .as_str()
        .expect("a task id");
    for (n, theirs) in a[1..4].iter().enumerate() {
        assert_eq!(error_code(theirs), Some(-32602), "b's step {n}: {seen}");
    }
    assert_eq!(
        a[4]["result"]["tasks"],
        json!([]),
        "b lists none of a's: {seen}"
    );
    assert_eq!(a[5]["result"]["status"], "working", "{seen}");
    let first = a[6]["result"]["tasks"].as_array().expect("a page");
    assert_eq!(first.len(), 16, "{seen}");
    assert!(a[6]["result"]["nextCursor"].is_string(), "{seen}");
    let rest = a[7]["result"]["tasks"].as_array().expect("a page");
    assert_eq!(rest.len(), 1, "{seen}");
    assert_eq!(rest[0]["taskId"], id, "the newest comes last: {seen}");
    assert!(a[7]["result"].get("nextCursor").is_none(), "{seen}");
    assert_eq!(a[8]["result"]["status"], "cancelled", "{seen}");
    assert_eq!(a[9]["result"]["status"], "cancelled", "{seen}");
    assert_eq!(violations(&seen), Vec::<String>::new(), "{seen}");
}

#[test]
fn sparse_call_tool_runs_as_a_2025_11_25_task() {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"everything": everything()}}));
    let call = json!({"name": "everything__echo", "arguments": {"message": "through a task"}});
    let steps = json!([
        task_call("call_tool", call),
        step("tasks/result", json!({"taskId": "$task"})),
    ]);
    let seen = drive(
        cmd.dir(),
        steps,
        &stdio_gateway(cmd.dir(), &["--mode", "sparse"]),
    );
    assert_eq!(
        seen["tools"]["call_tool"].pointer("/execution/taskSupport"),
        Some(&json!("optional")),
        "{seen}"
    );
    let a = answers(&seen);
    assert_eq!(a[0]["result"]["task"]["status"], "working", "{seen}");
    let text = a[1]["result"]["content"][0]["text"].as_str().unwrap_or("");
    assert!(text.contains("through a task"), "{seen}");
    assert_eq!(violations(&seen), Vec::<String>::new(), "{seen}");
}
