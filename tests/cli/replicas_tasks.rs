//! Gateway tasks across replicas of `serve --http --state redis://…` (Debian's `redis-server`
//! on loopback; the replicas addressed directly, no balancer): a task made by a `tools/call` on
//! replica A is polled, listed, read and cancelled through replica B, in both eras — the
//! 2025-11-25 tasks utility from the official Python SDK's session (its HTTP requests routed
//! to A or B per step, as a balancer would) and the 2026-07-28 tasks extension from raw HTTP.
//! Before, B answered every one of them "unknown task" (-32602). A task whose replica is
//! killed mid-call ends `failed` within its lease, seen from the other (before: `working` until
//! its ttl).

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::replicas::{mcp, programs};
use crate::replicas_more::{fleet, Fleet};
use crate::serve::{eventually, stateless, text_of};
use crate::util::*;

const SLOW: &str = "conf__slow_compute";

/// The project: the conformance fixture, whose `slow_compute` runs as a task (optional).
fn project() -> Cmd {
    let fixture = manifest_dir().join("tests/fixtures/conformance_server.py");
    Cmd::new().config_json(json!({"mcpServers": {
        "conf": {"command": sdk_python(), "args": [fixture.display().to_string()]},
    }}))
}

fn slow(seconds: u64, label: &str) -> Value {
    json!({"name": SLOW, "arguments": {"seconds": seconds, "label": label}})
}

/// A 2025-11-25 step sent to replica `at` ("a" or "b").
fn step25(at: &str, method: &str, params: Value) -> Value {
    json!({"method": method, "params": params, "at": at})
}

fn task_call25(at: &str, seconds: u64, label: &str) -> Value {
    let mut params = slow(seconds, label);
    params["task"] = json!({"ttl": 60_000});
    step25(at, "tools/call", params)
}

#[test]
fn a_2025_11_25_task_made_on_one_replica_is_polled_read_and_cancelled_through_another() {
    let Some(()) = programs() else { return };
    let cmd = project();
    let flags: &[&str] = &["--no-auth"];
    let fleet = fleet(&cmd, &[flags, flags]);
    let (a, b) = (mcp(fleet.ports[0]), mcp(fleet.ports[1]));
    let task = json!({"taskId": "$task"});
    let steps = json!([
        task_call25("a", 30, "long"),
        step25("b", "tasks/get", task.clone()),
        step25("b", "tasks/list", json!({})),
        step25("b", "tasks/cancel", task.clone()),
        step25("a", "tasks/get", task.clone()),
        task_call25("a", 1, "quick"),
        step25("b", "tasks/result", task.clone()),
        step25("b", "tasks/get", task.clone()),
    ]);
    let mut command = Command::new(sdk_python());
    command
        .arg(manifest_dir().join("tests/fixtures/tasks25_client.py"))
        .args(["--steps", &steps.to_string(), "--http", &a, "--http-b", &b])
        .env("MCP_INIT_TIMEOUT_SEC", "60");
    let seen = client_json(command, cmd.dir(), "the Python SDK tasks client");
    let shown = serde_json::to_string_pretty(&seen).unwrap();
    let a = seen["answers"].as_array().expect("answers");
    let long = a[0]["result"]["task"]["taskId"].as_str().expect(&shown);
    assert_eq!(a[1]["result"]["taskId"], long, "B polls A's task: {shown}");
    assert_eq!(a[1]["result"]["status"], "working", "{shown}");
    let listed = a[2]["result"]["tasks"].as_array().expect(&shown);
    assert!(listed.iter().any(|t| t["taskId"] == long), "{shown}");
    assert_eq!(a[3]["result"]["status"], "cancelled", "{shown}");
    assert_eq!(a[4]["result"]["status"], "cancelled", "A sees it: {shown}");
    let quick = a[5]["result"]["task"]["taskId"].as_str().expect(&shown);
    let result = &a[6]["result"];
    assert_eq!(text_of(&a[6]), "Computed quick after 1.0 s.", "{shown}");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], quick,
        "{shown}"
    );
    assert_eq!(a[7]["result"]["status"], "completed", "{shown}");
}

/// A 2026-07-28 step of the client with key `alice`, sent to `url`.
fn step26(url: &str, method: &str, params: Value) -> Value {
    json!({"method": method, "params": params, "url": url,
        "headers": {"Authorization": "Bearer alice"}})
}

/// Redis and two replicas of the project, and their `/mcp` URLs.
fn pair(cmd: &Cmd) -> (Fleet, String, String) {
    let flags: &[&str] = &["--no-auth"];
    let fleet = fleet(cmd, &[flags, flags]);
    let (a, b) = (mcp(fleet.ports[0]), mcp(fleet.ports[1]));
    (fleet, a, b)
}

/// `steps` of a 2026-07-28 client holding the tasks extension (its transport opened on `a`).
fn run26(cmd: &Cmd, a: &str, steps: Value) -> Vec<Value> {
    let holds_tasks = r#"{"extensions": {"io.modelcontextprotocol/tasks": {}}}"#;
    let transport = ["--url", a, "--capabilities", holds_tasks];
    stateless(cmd.dir(), &transport, steps)
}

#[test]
fn a_2026_task_made_on_one_replica_is_polled_and_cancelled_through_another() {
    let Some(()) = programs() else { return };
    let cmd = project();
    let (_fleet, a, b) = pair(&cmd);
    let run = |steps: Value| run26(&cmd, &a, steps);
    let task = json!({"taskId": "$task"});
    let mut bob = step26(&b, "tasks/get", task.clone());
    bob["headers"]["Authorization"] = json!("Bearer bob");
    let answers = run(json!([
        step26(&a, "tools/call", slow(30, "long")),
        step26(&b, "tasks/get", task.clone()),
        bob,
        step26(&b, "tasks/cancel", task.clone()),
        step26(&a, "tasks/get", task.clone()),
    ]));
    let shown = serde_json::to_string_pretty(&answers).unwrap();
    assert_eq!(answers[0]["result"]["resultType"], "task", "{shown}");
    assert_eq!(answers[1]["result"]["status"], "working", "{shown}");
    assert_eq!(answers[2]["error"]["code"], -32602, "not bob's: {shown}");
    assert_eq!(answers[3]["result"], json!({"resultType": "complete"}));
    assert_eq!(answers[4]["result"]["status"], "cancelled", "{shown}");

    let quick = run(json!([step26(&a, "tools/call", slow(0, "quick"))]));
    let id = quick[0]["result"]["taskId"].clone();
    let mut ended = Value::Null;
    eventually(20, "the task completes, seen through B", || {
        let get = step26(&b, "tasks/get", json!({"taskId": id}));
        ended = run(json!([get]))[0].clone();
        ended["result"]["status"] == "completed"
    });
    let text = ended["result"]["result"]["content"][0]["text"].as_str();
    assert_eq!(text, Some("Computed quick after 0.0 s."), "{ended}");
}

/// Replica A runs a 2026-07-28 task's call and is killed (SIGKILL); polled through B, the task
/// ends `failed` within the lease (10 s) and a poll, its error naming the stopped replica —
/// not `working` for the rest of its ttl (10 min).
#[test]
fn a_task_whose_replica_is_killed_ends_failed_within_its_lease_seen_from_another() {
    let Some(()) = programs() else { return };
    let cmd = project();
    let (fleet, a, b) = pair(&cmd);
    let run = |steps: Value| run26(&cmd, &a, steps);
    let call = step26(&a, "tools/call", slow(50, "orphan"));
    let task = json!({"taskId": "$task"});
    let answers = run(json!([call, step26(&b, "tasks/get", task)]));
    let shown = serde_json::to_string_pretty(&answers).unwrap();
    assert_eq!(answers[1]["result"]["status"], "working", "{shown}");
    let id = answers[0]["result"]["taskId"].clone();

    fleet.kill(0);
    let killed = Instant::now();
    let mut seen = Value::Null;
    eventually(30, "the orphaned task ends, seen through B", || {
        let get = step26(&b, "tasks/get", json!({"taskId": id}));
        seen = run(json!([get]))[0].clone();
        seen["result"]["status"] != "working"
    });
    let took = killed.elapsed();
    assert_eq!(seen["result"]["status"], "failed", "{seen}");
    let message = seen["result"]["error"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        message.contains("replica that ran this task stopped"),
        "{seen}"
    );
    assert!(
        took < Duration::from_secs(15),
        "ended after {took:?}: {seen}"
    );
}
