//! The public `mcp_launch::mcp` API against the fault server: init windows in milliseconds,
//! multiplexed calls on one connection, failure of pending requests, process-group cleanup.

use std::time::{Duration, Instant};

use futures_util::future::join_all;
use mcp_launch::mcp::{ConnectOptions, McpError, Session};
use serde_json::{json, Value};

use crate::util::*;

/// Windows small enough that a test of the slow path costs well under a second.
fn small_windows() -> ConnectOptions {
    ConnectOptions {
        fast_window: Duration::from_millis(200),
        slow_window: Duration::from_secs(3),
        list_timeout: Duration::from_secs(3),
        ..ConnectOptions::default()
    }
}

const CALL: Duration = Duration::from_secs(10);

async fn connect(flags: &[&str]) -> Session {
    Session::connect(&fault_endpoint(flags), &ConnectOptions::default())
        .await
        .unwrap_or_else(|e| panic!("connect with {flags:?}: {e}"))
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {result}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fast_answer_uses_the_fast_window() {
    let session = within(10, connect(&[])).await;
    let info = session.info();
    assert!(!info.used_slow_window);
    assert_eq!(info.protocol_version, "2025-06-18");
    assert_eq!(
        info.server_info,
        json!({"name": "fault-server", "version": "1.0"})
    );
    assert_eq!(info.capabilities, json!({"tools": {}}));
    assert!(
        info.init_time < Duration::from_secs(3),
        "{:?}",
        info.init_time
    );
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_init_is_taken_in_the_slow_window() {
    let started = Instant::now();
    let session = within(
        10,
        Session::connect(&fault_endpoint(&["--init-delay", "0.6"]), &small_windows()),
    )
    .await
    .expect("connects in the slow window");
    let info = session.info().clone();
    assert!(info.used_slow_window);
    assert!(
        info.init_time >= Duration::from_millis(600),
        "{:?}",
        info.init_time
    );
    assert!(started.elapsed() < Duration::from_secs(3));
    // The session works normally afterwards.
    let tools = session.list_tools(CALL).await.expect("list");
    assert_eq!(tools.tools.len(), 8);
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_answer_in_both_windows_is_an_init_timeout() {
    let opts = ConnectOptions {
        fast_window: Duration::from_millis(200),
        slow_window: Duration::from_millis(300),
        list_timeout: Duration::from_secs(1),
        ..ConnectOptions::default()
    };
    let started = Instant::now();
    let result = within(
        10,
        Session::connect(&fault_endpoint(&["--no-answer"]), &opts),
    )
    .await;
    let elapsed = started.elapsed();
    let Err(error) = result else {
        panic!("connected to a mute server")
    };
    assert!(
        matches!(error, McpError::InitTimeout { fast, slow, .. }
            if fast == opts.fast_window && slow == opts.slow_window),
        "{error:?}"
    );
    assert_eq!(error.kind(), "init_timeout");
    assert!(
        error.help().contains("MCP_INIT_TIMEOUT_SEC"),
        "{}",
        error.help()
    );
    assert!(elapsed >= Duration::from_millis(500), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_at_start_fails_at_once_with_its_stderr() {
    let started = Instant::now();
    let result = within(
        10,
        Session::connect(
            &fault_endpoint(&["--crash-at-start", "no such database: prod"]),
            &ConnectOptions::default(),
        ),
    )
    .await;
    let Err(error) = result else {
        panic!("connected to a crashing server")
    };
    assert_eq!(error.kind(), "server_exited", "{error}");
    let message = error.to_string();
    assert!(
        message.contains("exited with code 3 during initialize"),
        "{message}"
    );
    assert!(message.contains("no such database: prod"), "{message}");
    // Not the 6 s fast window: a dead server ends the wait.
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_slow_calls_overlap_on_one_connection() {
    let session = within(10, connect(&[])).await;
    let started = Instant::now();
    let calls = (0..50).map(|_| session.call_tool("slow", json!({"ms": 300}), CALL));
    let results = within(20, join_all(calls)).await;
    let elapsed = started.elapsed();
    for result in &results {
        assert_eq!(text(result.as_ref().expect("slow call")), "done");
    }
    // Serially this would take 15 s.
    assert!(elapsed < Duration::from_secs(4), "{elapsed:?}");
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_answers_never_cross() {
    let session = within(10, connect(&["--noisy"])).await;
    let messages: Vec<String> = (0..200).map(|i| format!("message number {i}")).collect();
    // Slow calls interleaved, so answers come back out of order.
    let calls = messages.iter().enumerate().map(|(i, m)| {
        let session = &session;
        async move {
            if i % 10 == 0 {
                let slow = session.call_tool("slow", json!({"ms": 50 + i}), CALL).await;
                assert_eq!(text(&slow.expect("slow")), "done");
            }
            session.call_tool("echo", json!({"message": m}), CALL).await
        }
    });
    let results = within(30, join_all(calls)).await;
    for (message, result) in messages.iter().zip(&results) {
        let result = result.as_ref().expect("echo");
        assert_eq!(text(result), message);
    }
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dying_server_fails_pending_requests_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("received.jsonl");
    let session = within(10, connect(&["--log", log.to_str().unwrap()])).await;
    let started = Instant::now();
    let hang = session.call_tool("hang", json!({}), Duration::from_secs(30));
    let crash = async {
        // The crash must come while the hang is pending: once the server has it.
        until(10, "the server received the hang", || {
            std::fs::read_to_string(&log).is_ok_and(|t| t.contains("\"hang\""))
        })
        .await;
        session
            .call_tool("crash", json!({}), Duration::from_secs(30))
            .await
    };
    let (hang, crash) = within(10, async { tokio::join!(hang, crash) }).await;
    let elapsed = started.elapsed();
    for (name, result) in [("hang", hang), ("crash", crash)] {
        let error = result.expect_err(name);
        assert_eq!(error.kind(), "server_exited", "{name}: {error}");
        let message = error.to_string();
        assert!(
            message.contains("exited with code 7 during tools/call"),
            "{name}: {message}"
        );
        assert!(
            message.contains("boom: crashing mid-call"),
            "{name}: {message}"
        );
    }
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");

    // Later requests fail immediately too.
    let started = Instant::now();
    let error = session
        .call_tool(
            "echo",
            json!({"message": "anyone?"}),
            Duration::from_secs(30),
        )
        .await
        .expect_err("a dead server answered");
    assert_eq!(error.kind(), "server_exited", "{error}");
    assert!(started.elapsed() < Duration::from_millis(500));
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_request_is_cancelled_and_the_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("server.log");
    let session = within(10, connect(&["--log", log_path.to_str().unwrap()])).await;
    let error = session
        .call_tool("hang", json!({}), Duration::from_millis(300))
        .await
        .expect_err("hang answered");
    assert!(
        matches!(&error, McpError::Timeout { method, after }
            if method == "tools/call" && *after == Duration::from_millis(300)),
        "{error:?}"
    );
    assert_eq!(error.kind(), "timeout");
    let echo = session
        .call_tool("echo", json!({"message": "still here"}), CALL)
        .await
        .expect("echo after a timeout");
    assert_eq!(text(&echo), "still here");
    session.close().await;

    let log = read_log(&log_path);
    let hang_id = logged(&log, "tools/call")
        .iter()
        .find(|m| m["params"]["name"] == "hang")
        .map(|m| m["id"].clone())
        .expect("hang was sent");
    let cancelled = logged(&log, "notifications/cancelled");
    assert_eq!(cancelled.len(), 1, "{log:#?}");
    assert_eq!(cancelled[0]["params"]["requestId"], hang_id, "{log:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_requests_are_answered_and_notifications_counted() {
    let session = within(10, connect(&["--server-requests"])).await;
    // notifications/message was sent before the initialize answer.
    assert_eq!(session.notification_count(), 1);
    let roots = session
        .call_tool("roots", json!({}), CALL)
        .await
        .expect("roots");
    assert_ne!(roots["isError"], true, "{roots}");
    let answer: Value = serde_json::from_str(text(&roots)).unwrap();
    assert_eq!(answer, json!({"roots": []}));
    // A plain request of ours that the server does not know is an RPC error, not a hang.
    let error = session
        .request("resources/list", None, CALL)
        .await
        .expect_err("the fault server has no resources");
    assert_eq!(error.kind(), "server_error", "{error}");
    assert!(error.to_string().contains("-32601"), "{error}");
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_tools_pages_and_warns() {
    let session = within(
        10,
        connect(&[
            "--first-page-shape",
            "absent",
            "--tools",
            "25",
            "--page-size",
            "7",
        ]),
    )
    .await;
    let list = session.list_tools(CALL).await.expect("list");
    assert_eq!(list.tools.len(), 33);
    assert!(list.warnings.is_empty(), "{:?}", list.warnings);
    session.close().await;

    let session = within(10, connect(&["--endless-cursor"])).await;
    let list = session.list_tools(CALL).await.expect("list");
    assert_eq!(list.tools.len(), 8);
    assert_eq!(list.warnings.len(), 1, "{:?}", list.warnings);
    assert!(
        list.warnings[0].contains("repeated cursor"),
        "{:?}",
        list.warnings
    );
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_ends_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pids");
    let session = within(10, connect(&["--grandchild", pidfile.to_str().unwrap()])).await;
    let (grandchild, server) = read_pidfile(&pidfile);
    assert_eq!(session.pgid(), Some(server));
    assert!(!pid_gone_now(grandchild), "the grandchild never ran");
    within(10, session.close()).await;
    assert_pid_gone(server, "the server");
    assert_pid_gone(grandchild, "the grandchild");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_session_ends_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pids");
    let session = within(10, connect(&["--grandchild", pidfile.to_str().unwrap()])).await;
    let (grandchild, server) = read_pidfile(&pidfile);
    drop(session);
    assert_pid_gone(server, "the server");
    assert_pid_gone(grandchild, "the grandchild");
}

fn pid_gone_now(pid: i32) -> bool {
    !std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stderr_tail_is_bounded_and_recent() {
    let session = within(10, connect(&["--stderr-flood", "2"])).await;
    // The flood was written before the initialize answer; the drain may lag behind it.
    until(5, "the stderr tail holds 12 lines", || {
        session.stderr_tail().lines().count() == 12
    })
    .await;
    let tail = session.stderr_tail();
    let lines: Vec<&str> = tail.lines().collect();
    assert!(!lines.is_empty() && lines.len() <= 12, "{tail}");
    // The flood's very last line may be cut short by its byte budget.
    let whole = &lines[..lines.len() - 1];
    assert!(
        whole.iter().all(|l| l.contains("stderr flood line")),
        "{tail}"
    );
    assert!(
        !tail.contains("stderr flood line 00000000"),
        "not the tail: {tail}"
    );
    session.close().await;
}
