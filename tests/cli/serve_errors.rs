//! What a client gets when it sends the gateway (and the lean tools server) something wrong:
//! always a JSON-RPC error, never silence or plain text. Over HTTP: 400 with -32700 for bytes
//! that are not JSON, -32600 for JSON that is no message or a batch a session cannot send, 415
//! for a wrong type, 404 for an unknown session; 2025-03-26 batches answered as arrays. Over
//! stdio: -32700 with `id: null` for a line that is not JSON, and a line over the message cap
//! answered with the cap and its variable. A call longer than the session idle time still gets
//! its answer.

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::{json, Value};

use crate::util::*;

/// `serve --http` in front of the time server, once it listens: the process and its URL.
fn gateway() -> (Running, String) {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"time": time()}}));
    crate::serve::http_gateway(&cmd, &[])
}

/// An answer: status, headers, body (JSON when it is JSON, else a string).
struct Answer {
    status: u16,
    headers: HeaderMap,
    body: Value,
}

impl Answer {
    /// The JSON-RPC error code of the body (panics with the answer when there is none).
    fn code(&self) -> i64 {
        self.body["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("no JSON-RPC error: {} {}", self.status, self.body))
    }
}

/// One request to `url` with MCP's Accept header, `headers` and `body`.
fn send(method: &str, url: &str, headers: &[(&str, &str)], body: Vec<u8>) -> Answer {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut request = reqwest::Client::new()
            .request(method.parse().unwrap(), url)
            .timeout(Duration::from_secs(30))
            .header("accept", "application/json, text/event-stream")
            .body(body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.expect("the gateway answers");
        let (status, headers) = (response.status().as_u16(), response.headers().clone());
        let text = response.text().await.unwrap_or_default();
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        Answer {
            status,
            headers,
            body,
        }
    })
}

const JSON: (&str, &str) = ("content-type", "application/json");

fn post(url: &str, headers: &[(&str, &str)], body: impl Into<Vec<u8>>) -> Answer {
    let mut all = vec![JSON];
    all.extend_from_slice(headers);
    send("POST", url, &all, body.into())
}

/// The JSON-RPC message in an answer: the body, or the first `data:` event of a stream.
fn message(answer: &Answer) -> Value {
    match &answer.body {
        Value::String(text) => text
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .find_map(|data| serde_json::from_str(data.trim()).ok())
            .unwrap_or_else(|| panic!("no message in {text:?}")),
        body => body.clone(),
    }
}

/// A 2025-03-26 session (initialized): its id.
fn session(url: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {},
        "clientInfo": {"name": "errors", "version": "1"}}});
    let answer = post(url, &[], init.to_string());
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(message(&answer)["result"]["protocolVersion"], "2025-03-26");
    let id = answer.headers["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let answer = post(url, &[("mcp-session-id", &id)], initialized.to_string());
    assert_eq!(answer.status, 202, "{}", answer.body);
    id
}

/// A call in flight keeps its session: rmcp's idle timer counted only messages, so a call
/// longer than `--session-idle` (120 s by default) lost its session under it and its stream
/// ended with no answer. An idle session still ends.
#[test]
fn a_call_longer_than_the_session_idle_time_gets_its_answer() {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"fault": fault(&[])}}));
    let extra = ["--mode", "full", "--session-idle", "1s"];
    let (_gateway, url) = crate::serve::http_gateway(&cmd, &extra);
    let id = session(&url);
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "fault__slow", "arguments": {"ms": 3000}}});
    let answer = post(&url, &[("mcp-session-id", &id)], call.to_string());
    let text = &message(&answer)["result"]["content"][0]["text"];
    assert_eq!(text, "done", "{}", answer.body);
    std::thread::sleep(Duration::from_millis(2500));
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    let answer = post(&url, &[("mcp-session-id", &id)], ping.to_string());
    assert_eq!(
        answer.status, 404,
        "the idle session ended: {}",
        answer.body
    );
}

#[test]
fn bytes_that_are_not_json_are_a_400_parse_error_with_a_null_id() {
    let (gateway, url) = gateway();
    let deep = "[".repeat(100_000) + &"]".repeat(100_000);
    let bodies: [(&str, Vec<u8>); 4] = [
        ("not JSON", b"{\"jsonrpc\": \"2.0\", nope".to_vec()),
        (
            "invalid UTF-8",
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\xfe\"}".to_vec(),
        ),
        ("100k-deep nesting", deep.into_bytes()),
        ("empty", Vec::new()),
    ];
    for (what, body) in bodies {
        let answer = post(&url, &[], body);
        assert_eq!(answer.status, 400, "{what}: {}", answer.body);
        assert_eq!(answer.code(), -32700, "{what}: {}", answer.body);
        assert_eq!(answer.body["id"], Value::Null, "{what}");
        assert_eq!(answer.body["jsonrpc"], "2.0", "{what}");
    }
    drop(gateway);
}

#[test]
fn json_that_is_no_message_a_wrong_type_and_an_unknown_session_are_json_rpc_errors() {
    let (gateway, url) = gateway();
    let answer = post(&url, &[], r#"{"hello": "world"}"#);
    assert_eq!(
        (answer.status, answer.code()),
        (400, -32600),
        "{}",
        answer.body
    );

    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let plain = send("POST", &url, &[("content-type", "text/plain")], ping.into());
    assert_eq!(
        (plain.status, plain.code()),
        (415, -32600),
        "{}",
        plain.body
    );
    assert!(plain.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("application/json"));

    let unknown = [("mcp-session-id", "no-such-session")];
    let answer = send("DELETE", &url, &unknown, Vec::new());
    assert_eq!(
        (answer.status, answer.code()),
        (404, -32001),
        "{}",
        answer.body
    );

    let id = session(&url);
    let ours = [("mcp-session-id", id.as_str())];
    let answer = send("DELETE", &url, &ours, Vec::new());
    // 200: the official Python SDK warns "Session termination failed" on rmcp's 202.
    assert_eq!(answer.status, 200, "{}", answer.body);
    let answer = send("DELETE", &url, &ours, Vec::new());
    assert_eq!(
        (answer.status, answer.code()),
        (404, -32001),
        "ended: {}",
        answer.body
    );
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}).to_string();
    let answer = post(&url, &ours, ping);
    assert_eq!(
        (answer.status, answer.code()),
        (404, -32001),
        "{}",
        answer.body
    );
    drop(gateway);
}

#[test]
fn a_batch_is_answered_as_an_array_on_a_2025_03_26_session_and_refused_after() {
    let (gateway, url) = gateway();
    let id = session(&url);
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
        {"jsonrpc": "2.0", "id": "two", "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "time__get_current_time", "arguments": {"timezone": "UTC"}}},
    ]);
    let answer = post(&url, &[("mcp-session-id", &id)], batch.to_string());
    assert_eq!(answer.status, 200, "{}", answer.body);
    let answers = answer.body.as_array().expect("an array");
    let ids: Vec<&Value> = answers.iter().map(|a| &a["id"]).collect();
    assert_eq!(
        ids,
        [&json!(1), &json!("two"), &json!(3)],
        "{}",
        answer.body
    );
    assert_eq!(answers[0]["result"], json!({}));
    assert!(answers[1]["result"]["tools"]
        .as_array()
        .is_some_and(|t| !t.is_empty()));
    assert_eq!(answers[2]["result"]["isError"], false, "{}", answers[2]);

    let notifications = json!([{"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}]);
    let answer = post(&url, &[("mcp-session-id", &id)], notifications.to_string());
    assert_eq!(answer.status, 202, "only notifications: {}", answer.body);

    let answer = post(&url, &[("mcp-session-id", &id)], "[]");
    assert_eq!(
        (answer.status, answer.code()),
        (400, -32600),
        "{}",
        answer.body
    );

    let later = [
        ("mcp-session-id", id.as_str()),
        ("mcp-protocol-version", "2025-06-18"),
    ];
    let answer = post(&url, &later, batch.to_string());
    assert_eq!(
        (answer.status, answer.code()),
        (400, -32600),
        "{}",
        answer.body
    );
    let why = answer.body["error"]["message"].as_str().unwrap();
    assert!(why.contains("2025-06-18"), "{why}");

    let init = json!([{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}]);
    let answer = post(&url, &[], init.to_string());
    assert_eq!(
        (answer.status, answer.code()),
        (400, -32600),
        "{}",
        answer.body
    );
    drop(gateway);
}

/// Found by the `http_batch` fuzz target: a batched element whose id was an object (or an
/// array) was answered with that id; JSON-RPC 2.0 answers a request it cannot read with null.
#[test]
fn a_batched_element_whose_id_is_no_string_or_number_is_answered_with_null() {
    let (gateway, url) = gateway();
    let id = session(&url);
    let batch = json!([
        {"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"},
        {"jsonrpc": "2.0", "id": [2], "method": "initialize", "params": {}},
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
    ]);
    let answer = post(&url, &[("mcp-session-id", &id)], batch.to_string());
    assert_eq!(answer.status, 200, "{}", answer.body);
    let answers = answer.body.as_array().expect("an array");
    let ids: Vec<&Value> = answers.iter().map(|a| &a["id"]).collect();
    assert_eq!(
        ids,
        [&Value::Null, &Value::Null, &json!(3)],
        "{}",
        answer.body
    );
    assert_eq!(answers[0]["error"]["code"], -32600, "{}", answer.body);
    drop(gateway);
}

/// The lines stdio `serve` answered, in order.
fn stdio_answers(command: &[&str], env: &[(&str, &str)], input: &str) -> Vec<Value> {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"time": time()}}));
    let mut run = cmd.cmd().args(command).stdin(input).stderr_any();
    for (key, value) in env {
        run = run.env(key, value);
    }
    let out = run.run();
    out.stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}\n{out}")))
        .collect()
}

/// An initialize after the bad line: the session goes on.
const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"errors","version":"1"}}}"#;

/// The two answers: the bad line's error, then initialize's result (the session went on).
fn error_then_initialized(command: &[&str], answers: &[Value]) -> Value {
    assert_eq!(answers.len(), 2, "{command:?}: {answers:?}");
    assert_eq!(answers[1]["id"], 0, "{command:?}: {answers:?}");
    assert!(
        answers[1]["result"]["protocolVersion"].is_string(),
        "{command:?}"
    );
    answers[0].clone()
}

#[test]
fn over_stdio_a_line_that_is_not_json_is_answered_with_a_parse_error() {
    for command in [
        &["--config", "config.json", "serve"][..],
        &["tools", "serve"],
    ] {
        let answers = stdio_answers(command, &[], &format!("this is not JSON\n{INIT}\n"));
        let error = error_then_initialized(command, &answers);
        assert_eq!(error["id"], Value::Null, "{command:?}");
        assert_eq!(error["error"]["code"], -32700, "{command:?}: {error}");
    }
}

#[test]
fn over_stdio_a_line_over_the_cap_is_answered_with_the_cap_and_its_variable() {
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{{"name":"x","arguments":{{"x":"{}"}}}}}}"#,
        "a".repeat(2 << 20)
    );
    let cap = [("MCP_LAUNCH_MAX_MESSAGE_BYTES", "1MiB")];
    for command in [
        &["--config", "config.json", "serve"][..],
        &["tools", "serve"],
    ] {
        let answers = stdio_answers(command, &cap, &format!("{big}\n{INIT}\n"));
        let error = error_then_initialized(command, &answers);
        assert_eq!(error["id"], 8, "{command:?}: the request fails at once");
        assert_eq!(error["error"]["code"], -32600, "{command:?}");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("1MiB") && message.contains("MCP_LAUNCH_MAX_MESSAGE_BYTES"),
            "{command:?}: {message}"
        );
    }
}
