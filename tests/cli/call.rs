//! `mcp-launch call SERVER TOOL [JSON | --stdin] [--timeout S]`.

use std::time::Duration;

use serde_json::{json, Value};

use crate::util::*;

fn echo_hi() -> Value {
    json!({"success": true, "result": {"content": [{"type": "text", "text": "Echo: hi"}]}})
}

#[test]
fn echo_returns_the_result_as_sent() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"everything": everything()}}))
        .args([
            "call",
            "everything",
            "echo",
            r#"{"message":"hi"}"#,
            "--json",
        ])
        .run();
    assert_eq!(out.json(), echo_hi(), "{out}");
}

#[test]
fn arguments_can_come_from_stdin() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"everything": everything()}}))
        .args(["call", "everything", "echo", "--stdin", "--json"])
        .stdin("{\n  \"message\": \"hi\"\n}\n")
        .run();
    assert_eq!(out.json(), echo_hi(), "{out}");
}

#[test]
fn human_output_prints_the_text() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"everything": everything()}}))
        .args(["call", "everything", "echo", r#"{"message":"hi"}"#])
        .run();
    assert_eq!(out.stdout, "Echo: hi\n", "{out}");
}

fn assert_tool_error(out: &Output, server_tool: &str, text: &str) {
    let json = out.json();
    let error = out.error();
    assert_eq!(error["type"], "tool_error", "{out}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!("{server_tool} returned an error: ")),
        "{out}"
    );
    assert!(message.contains(text), "{out}");
    assert_eq!(json["result"]["isError"], true, "{out}");
    let content = json["result"]["content"][0]["text"].as_str().unwrap();
    assert!(content.contains(text), "{out}");
}

#[test]
fn is_error_from_filesystem_exits_1_with_the_result() {
    let cmd = Cmd::new();
    let data = cmd.mkdir("data");
    let outside = cmd.path("secret.txt");
    let out = cmd
        .file("secret.txt", "top secret")
        .config_json(json!({"mcpServers": {"fs": filesystem(&data)}}))
        .args(["call", "fs", "read_text_file", "--json"])
        .args([json!({"path": outside}).to_string()])
        .status(1)
        .run();
    assert_tool_error(&out, "fs/read_text_file", "Access denied");
    assert!(!out.stdout.contains("top secret"), "{out}");
}

#[test]
fn is_error_from_time_exits_1_with_the_result() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"time": time()}}))
        .args([
            "call",
            "time",
            "get_current_time",
            r#"{"timezone":"Mars/Olympus"}"#,
            "--json",
        ])
        .status(1)
        .run();
    assert_tool_error(&out, "time/get_current_time", "Mars/Olympus");
}

#[test]
fn is_error_in_human_output_goes_to_stderr_and_exits_1() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"f": fault(&[])}}))
        .args(["call", "f", "fail"])
        .status(1)
        .stderr_has("error: the tool returned an error (isError: true)")
        .run();
    assert_eq!(out.stdout, "deliberate failure\n", "{out}");
}

#[test]
fn invalid_json_exits_2_before_any_server_starts() {
    let cmd = Cmd::new();
    let log = cmd.path("server.log");
    let out = cmd
        .config_json(json!({"mcpServers": {"f": fault(&["--log", log.to_str().unwrap()])}}))
        .args(["call", "f", "echo", r#"{"message": hi}"#, "--json"])
        .status(2)
        .run();
    let error = out.error();
    assert_eq!(error["type"], "invalid_json", "{out}");
    assert_eq!(
        error["message"],
        "arguments from the command line are not valid JSON: expected value at line 1, column 13",
        "{out}"
    );
    assert!(error["help"].as_str().unwrap().contains("--stdin"), "{out}");
    assert!(!log.exists(), "the server was started\n{out}");

    let stdin = out
        .cmd()
        .args([
            "--config",
            "config.json",
            "call",
            "f",
            "echo",
            "--stdin",
            "--json",
        ])
        .stdin("{\n  \"a\": 1,\n  \"b\": }\n")
        .status(2)
        .run();
    let error = stdin.error();
    assert_eq!(error["type"], "invalid_json", "{stdin}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.starts_with("arguments from stdin are not valid JSON: "),
        "{stdin}"
    );
    assert!(message.ends_with(" at line 3, column 8"), "{stdin}");
    assert!(!log.exists(), "the server was started\n{stdin}");
}

#[test]
fn arguments_that_are_not_an_object_exit_2() {
    let cmd = Cmd::new();
    let log = cmd.path("server.log");
    let out = cmd
        .config_json(json!({"mcpServers": {"f": fault(&["--log", log.to_str().unwrap()])}}))
        .args(["call", "f", "echo", "[1, 2]", "--json"])
        .status(2)
        .run();
    let error = out.error();
    assert_eq!(error["type"], "invalid_arguments", "{out}");
    assert_eq!(
        error["message"],
        r#"arguments must be a JSON object like '{"key": "value"}', not an array"#,
        "{out}"
    );
    assert!(!log.exists(), "the server was started\n{out}");

    let string = out
        .cmd()
        .args([
            "--config",
            "config.json",
            "call",
            "f",
            "echo",
            r#""hi""#,
            "--json",
        ])
        .status(2)
        .run();
    assert!(
        string.error()["message"]
            .as_str()
            .unwrap()
            .ends_with("not a string"),
        "{string}"
    );
}

#[test]
fn schema_violations_exit_2_and_show_the_expected_parameters() {
    let cmd = Cmd::new();
    let log = cmd.path("server.log");
    let out = cmd
        .config_json(json!({"mcpServers": {"f": fault(&["--log", log.to_str().unwrap()])}}))
        .args(["call", "f", "add", r#"{"a":"x"}"#, "--json"])
        .status(2)
        .run();
    let error = out.error();
    assert_eq!(error["type"], "invalid_arguments", "{out}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.starts_with("arguments for f/add do not fit its inputSchema:\n"),
        "{out}"
    );
    assert!(message.contains("  - at /a: "), "{out}");
    assert!(
        message.contains("\"x\" is not of type \"integer\""),
        "{out}"
    );
    assert!(message.contains("\"b\" is a required property"), "{out}");
    let help = error["help"].as_str().unwrap();
    assert!(
        help.starts_with(
            "expected parameters:\n  a: integer (required) — First addend\n  b: integer (required) — Second addend\n"
        ),
        "{out}"
    );
    assert!(help.contains("mcp-launch inspect f add --example"), "{out}");
    // The server was asked for its tools, but the bad call never reached it.
    let log = read_log(&log);
    assert_eq!(logged(&log, "tools/list").len(), 1, "{log:#?}");
    assert!(logged(&log, "tools/call").is_empty(), "{log:#?}");
}

#[test]
fn unknown_server_and_tool_exit_2() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"f": fault(&[]), "g": fault(&[])}}))
        .args(["call", "nosuch", "echo", "--json"])
        .status(2)
        .run();
    let error = out.error();
    assert_eq!(error["type"], "unknown_server", "{out}");
    assert_eq!(error["help"], "available servers: f, g", "{out}");

    let tool = out
        .cmd()
        .args(["--config", "config.json", "call", "f", "ech", "--json"])
        .status(2)
        .run();
    let error = tool.error();
    assert_eq!(error["type"], "unknown_tool", "{tool}");
    assert!(
        error["help"]
            .as_str()
            .unwrap()
            .contains("echo (requires message)"),
        "{tool}"
    );
}

#[test]
fn usage_errors_exit_2_as_json() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"f": fault(&[])}}))
        .args(["call", "f", "echo", "--timeout", "0", "--json"])
        .status(2)
        .run();
    let error = out.error();
    assert_eq!(error["type"], "usage", "{out}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("--timeout \"0\" is out of range: it takes from 1ms to 1day"),
        "{out}"
    );

    let conflict = out
        .cmd()
        .args([
            "--config",
            "config.json",
            "call",
            "f",
            "echo",
            "{}",
            "--stdin",
        ])
        .status(2)
        .stderr_has("cannot be used with")
        .run();
    assert_eq!(conflict.stdout, "", "{conflict}");
}

#[test]
fn a_hung_tool_times_out() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"f": fault(&[])}}))
        .args(["call", "f", "hang", "--timeout", "1", "--json"])
        .status(1)
        .run();
    let error = out.error();
    assert_eq!(error["type"], "timeout", "{out}");
    assert_eq!(
        error["message"], "server \"f\": tools/call got no answer within 1s",
        "{out}"
    );
    assert!(
        error["help"]
            .as_str()
            .unwrap()
            .contains("--timeout SECONDS"),
        "{out}"
    );
    assert!(out.elapsed >= Duration::from_secs(1), "{out}");
    assert!(out.elapsed < Duration::from_secs(3), "too slow\n{out}");
}

#[test]
fn a_crash_mid_call_fails_at_once() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"f": fault(&[])}}))
        .args(["call", "f", "crash", "--json"])
        .status(1)
        .run();
    let error = out.error();
    assert_eq!(error["type"], "server_exited", "{out}");
    let message = error["message"].as_str().unwrap();
    for part in [
        "exited with code 7 during tools/call",
        "boom: crashing mid-call",
    ] {
        assert!(message.contains(part), "{part:?}\n{out}");
    }
    // Not the 30 s call timeout: the death of the server ends the wait.
    assert!(out.elapsed < Duration::from_secs(3), "too slow\n{out}");
}

#[test]
fn a_huge_result_arrives_intact() {
    const SIZE: usize = 5_000_000;
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"f": fault(&[])}}))
        .args(["call", "f", "huge", r#"{"bytes": 5000000}"#, "--json"])
        // Whole: not cut to an output budget.
        .args(["--max-output-tokens", "0"])
        .run();
    let json = out.json();
    assert_eq!(json["success"], true, "{out}");
    let text = json["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(text.len(), SIZE, "{out}");
    let pattern = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let first_bad = text
        .bytes()
        .enumerate()
        .find(|(i, b)| *b != pattern[i % pattern.len()]);
    assert_eq!(first_bad, None, "corrupted result");
}

#[test]
fn structured_content_passes_through_untouched() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"everything": everything()}}))
        .args([
            "call",
            "everything",
            "get-structured-content",
            r#"{"location":"New York"}"#,
        ])
        .args(["--json"])
        .run();
    let json = out.json();
    assert_eq!(json["success"], true, "{out}");
    let result = &json["result"];
    let structured = &result["structuredContent"];
    assert!(structured.is_object(), "{out}");
    for key in ["temperature", "conditions", "humidity"] {
        assert!(structured.get(key).is_some(), "{key}\n{out}");
    }
    // The server also sends the same object as JSON text: byte for byte the same, key order
    // included, so nothing was re-shaped on the way.
    let text = result["content"][0]["text"].as_str().unwrap();
    assert_eq!(serde_json::to_string(structured).unwrap(), text, "{out}");
}

/// Kills a leaked process group when a test fails before its own checks.
struct GroupReaper(i32);

impl Drop for GroupReaper {
    fn drop(&mut self) {
        use nix::sys::signal::{killpg, Signal};
        let _ = killpg(nix::unistd::Pid::from_raw(self.0), Signal::SIGKILL);
    }
}

#[test]
fn ctrl_c_during_a_call_ends_the_server_group() {
    use nix::sys::signal::{kill, Signal};
    let cmd = Cmd::new();
    let pidfile = cmd.path("pids");
    let log = cmd.path("server.log");
    let running = cmd
        .config_json(json!({"mcpServers": {"f": fault(&[
            "--grandchild", pidfile.to_str().unwrap(), "--log", log.to_str().unwrap(),
        ])}}))
        .args(["call", "f", "hang"])
        .status(130)
        .stderr_any()
        .spawn();
    let (grandchild, server) = read_pidfile(&pidfile);
    let _reaper = GroupReaper(server);
    // Wait until the call is in flight.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while logged(&read_log(&log), "tools/call").is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the call never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    kill(nix::unistd::Pid::from_raw(running.pid()), Signal::SIGINT).expect("send SIGINT");
    let interrupted = std::time::Instant::now();
    let _out = running.wait();
    assert!(interrupted.elapsed() < Duration::from_secs(3));
    assert_pid_gone(server, "the server after Ctrl-C");
    assert_pid_gone(grandchild, "the grandchild after Ctrl-C");
}

/// Issue 25 item 12: what the fresh tool index knows settles a wrong call before any server
/// starts (a typo, invalid arguments); a right one still runs live.
#[test]
fn a_wrong_call_is_answered_from_the_fresh_index_without_starting_the_server() {
    let cmd = Cmd::new();
    let starts = cmd.path("starts");
    let cmd = cmd.config_json(json!({"mcpServers": {
        "f": fault(&["--starts", starts.to_str().unwrap()]),
    }}));
    cmd.cmd()
        .args(["--config", "config.json", "list"])
        .stderr_any()
        .run();
    let count = || {
        std::fs::read_to_string(&starts)
            .unwrap_or_default()
            .lines()
            .count()
    };
    assert_eq!(count(), 1, "`list` filled the index");
    let call = |tool: &str, arguments: &str| {
        cmd.cmd()
            .args([
                "--config",
                "config.json",
                "call",
                "f",
                tool,
                arguments,
                "--json",
            ])
            .stderr_any()
    };
    let typo = call("ech", r#"{"message": "hi"}"#).status(2).run();
    assert_eq!(typo.error()["type"], "unknown_tool", "{typo}");
    assert!(
        typo.error()["help"]
            .as_str()
            .unwrap_or("")
            .contains("echo (requires message)"),
        "{typo}"
    );
    let invalid = call("add", r#"{"a": "one"}"#).status(2).run();
    assert_eq!(invalid.error()["type"], "invalid_arguments", "{invalid}");
    assert_eq!(count(), 1, "neither started the server");
    let right = call("add", r#"{"a": 1, "b": 2}"#).run();
    assert_eq!(right.json()["success"], true, "{right}");
    assert_eq!(count(), 2, "a right call runs live");
}
