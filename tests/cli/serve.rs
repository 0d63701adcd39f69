//! `mcp-launch serve`, the gateway, driven by a real client (the official Python SDK, through
//! `tests/fixtures/gateway_client.py`) over stdio and Streamable HTTP, in front of real servers
//! (server-everything) and the fault server, which writes its pid to a file at every start.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};

use crate::util::*;

fn driver() -> String {
    manifest_dir()
        .join("tests/fixtures/gateway_client.py")
        .display()
        .to_string()
}

/// A project whose config fronts server-everything and the fault server (counting its starts
/// in `starts`, logging what it receives in `fault.log`).
fn project() -> Cmd {
    let cmd = Cmd::new();
    let starts = cmd.path("starts").display().to_string();
    let log = cmd.path("fault.log").display().to_string();
    cmd.config_json(json!({"mcpServers": {
        "everything": everything(),
        "fault": fault(&["--starts", &starts, "--log", &log]),
    }}))
}

/// Runs the driver in `dir` and returns what it observed.
pub(crate) fn drive(dir: &Path, args: &[&str]) -> Value {
    let mut command = Command::new(sdk_python());
    command.arg(driver()).args(args);
    client_json(command, dir, "the Python client")
}

/// The gateway's stdio command line for the driver's `--stdio`.
pub(crate) fn stdio_gateway(dir: &Path, extra: &[&str]) -> Vec<String> {
    let config = dir.join("config.json").display().to_string();
    let mut argv = vec![
        "--stdio".to_string(),
        BIN.to_string(),
        "serve".into(),
        "--config".into(),
        config,
    ];
    argv.extend(extra.iter().map(|s| s.to_string()));
    argv
}

/// `serve --http` on a free loopback port, once it listens: the process and its `/mcp` URL.
/// Keyless (`--no-auth`): these tests drive the gateway, not its key (see `http_key`).
pub(crate) fn http_gateway(cmd: &Cmd, extra: &[&str]) -> (Running, String) {
    let addr = format!("127.0.0.1:{}", free_port());
    let running = cmd
        .cmd()
        .args([
            "--config",
            "config.json",
            "serve",
            "--http",
            &addr,
            "--no-auth",
        ])
        .args(extra)
        .stderr_any()
        .spawn();
    eventually(20, "the gateway listens", || {
        std::net::TcpStream::connect(&addr).is_ok()
    });
    (running, format!("http://{addr}/mcp"))
}

fn deny_command(dir: &Path) -> String {
    format!(
        "{BIN} --config {} tool deny fault add",
        dir.join("config.json").display()
    )
}

fn pids(file: &Path) -> Vec<i32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

pub(crate) fn eventually(secs: u64, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !check() {
        assert!(
            Instant::now() < deadline,
            "timed out after {secs}s waiting until {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub(crate) fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// What every full-mode run must show, whatever the transport.
fn check_full(seen: &Value, dir: &Path) {
    assert_eq!(seen["server"], "mcp-launch");
    let tools = strings(&seen["tools"]);
    assert!(
        tools.contains(&"fault__echo".to_string())
            && tools.contains(&"everything__echo".to_string()),
        "{tools:?}"
    );
    assert_eq!(seen["echo"], json!(["hi"]));
    assert_eq!(
        seen["progress"],
        json!([1.0, 2.0, 3.0]),
        "every progress step, in order"
    );
    assert_eq!(
        seen["hang"], "MCPError",
        "the client's timeout cancels the call"
    );
    assert_eq!(seen["after_cancel"], json!(["still here"]));
    let log = std::fs::read_to_string(dir.join("fault.log")).unwrap_or_default();
    assert!(
        log.contains("notifications/cancelled"),
        "the cancel reached the server:\n{log}"
    );
    let resources = strings(&seen["resources"]);
    assert!(
        !resources.is_empty() && resources.iter().all(|u| u.starts_with("everything+")),
        "{resources:?}"
    );
    assert_eq!(seen["read_uri"], json!(resources[0]));
    assert!(strings(&seen["prompts"])
        .iter()
        .all(|p| p.starts_with("everything__")));
    assert!(seen["prompt_messages"].as_u64().unwrap_or(0) >= 1);
    assert_eq!(seen["list_changed"], true, "tool deny sends list_changed");
    assert!(!strings(&seen["tools_after_deny"]).contains(&"fault__add".to_string()));
    assert_eq!(
        seen["denied_call"]["is_error"], true,
        "{}",
        seen["denied_call"]
    );
    assert!(seen["denied_call"]["text"][0]
        .as_str()
        .unwrap_or("")
        .contains("denied"));
}

#[test]
fn full_mode_over_stdio_with_the_python_sdk() {
    let cmd = project();
    let dir = cmd.dir().to_path_buf();
    let deny = deny_command(&dir);
    let mut args = vec!["full", "--deny-cmd", &deny];
    let gateway = stdio_gateway(&dir, &["--mode", "full"]);
    args.extend(gateway.iter().map(String::as_str));
    let seen = drive(&dir, &args);
    check_full(&seen, &dir);
    // The client closed stdin: the gateway stopped every server it started.
    for pid in pids(&dir.join("starts")) {
        eventually(10, "the fault server is gone after stdin EOF", || {
            pid_gone(pid)
        });
    }
}

#[test]
fn full_mode_over_streamable_http_and_sigterm_stops_everything() {
    let cmd = project();
    let dir = cmd.dir().to_path_buf();
    let (running, url) = http_gateway(&cmd, &["--mode", "full"]);
    let deny = deny_command(&dir);
    let seen = drive(&dir, &["full", "--http", &url, "--deny-cmd", &deny]);
    check_full(&seen, &dir);
    let started = pids(&dir.join("starts"));
    kill(Pid::from_raw(running.pid()), Signal::SIGTERM).expect("signal the gateway");
    running.wait();
    for pid in started {
        assert_pid_gone(pid, "the fault server after SIGTERM");
    }
}

#[test]
fn sparse_mode_search_describe_then_call_fixed_from_the_validation_message() {
    let cmd = project();
    let dir = cmd.dir().to_path_buf();
    let mut args = vec!["sparse"];
    let gateway = stdio_gateway(&dir, &["--mode", "sparse"]);
    args.extend(gateway.iter().map(String::as_str));
    let seen = drive(&dir, &args);
    assert_eq!(
        seen["tools"],
        json!([
            "search_tools",
            "describe_tool",
            "call_tool",
            "discover",
            "read_output"
        ])
    );
    assert!(
        strings(&seen["search"]).contains(&"fault__add".to_string()),
        "{}",
        seen["search"]
    );
    assert_eq!(seen["described"], "fault__add");
    assert_eq!(seen["wrong"]["is_error"], true);
    let wrong = seen["wrong"]["text"][0].as_str().unwrap_or("");
    assert!(
        wrong.contains("\"b\" is a required property") && wrong.contains("expected"),
        "{wrong}"
    );
    assert_eq!(seen["right"], json!(["3"]));
    assert_eq!(seen["discover"], json!(["everything", "fault"]));
    // Issue 25 item 1: every bad name or input inside a meta-tool (and read_output) comes
    // back as a tool error the model can read; the SDK raised on each before.
    let bad = seen["bad_names"].as_object().expect("bad_names");
    assert_eq!(bad.len(), 8, "{bad:?}");
    for (call, answer) in bad {
        assert_eq!(answer["is_error"], true, "{call}: {answer}");
        assert!(answer.get("raised").is_none(), "{call}: {answer}");
    }
    for typo in [
        r#"call_tool {"arguments": {"a": 1, "b": 2}, "name": "fault__ad"}"#,
        r#"describe_tool {"name": "fault__ad"}"#,
    ] {
        let text = bad[typo]["text"][0].as_str().unwrap_or("");
        assert!(
            text.contains("fault__ad") && text.contains("did you mean `fault__add`"),
            "{typo}: {text}"
        );
    }
    let server = &bad[r#"search_tools {"query": "add", "server": "faul"}"#]["text"][0];
    assert!(
        server
            .as_str()
            .unwrap_or("")
            .contains("did you mean `fault`"),
        "{server}"
    );
}

#[test]
fn listing_starts_nothing_and_the_first_call_starts_exactly_one_server() {
    let cmd = project();
    let dir = cmd.dir().to_path_buf();
    // Fill the tool index, as any earlier `list` does (the fault server starts once).
    cmd.cmd()
        .args(["--config", "config.json", "list"])
        .stderr_any()
        .run();
    let starts = dir.join("starts");
    assert_eq!(pids(&starts).len(), 1);
    let mut args = vec!["list"];
    let gateway = stdio_gateway(&dir, &[]);
    args.extend(gateway.iter().map(String::as_str));
    let listed = drive(&dir, &args);
    assert!(strings(&listed["tools"]).contains(&"fault__echo".to_string()));
    assert_eq!(pids(&starts).len(), 1, "tools/list started nothing");
    args[0] = "call";
    drive(&dir, &args);
    assert_eq!(
        pids(&starts).len(),
        2,
        "the first call started the fault server, once"
    );
}

#[test]
fn idle_servers_stop_and_always_on_ones_start_at_once_and_come_back_after_a_kill() {
    let cmd = Cmd::new();
    let (lazy, kept) = (cmd.path("lazy-starts"), cmd.path("kept-starts"));
    let cmd = cmd.config_json(json!({"mcpServers": {
        "fault": fault(&["--starts", &lazy.display().to_string()]),
        "kept": fault(&["--starts", &kept.display().to_string()]),
    }}));
    let dir = cmd.dir().to_path_buf();
    let addr = format!("127.0.0.1:{}", free_port());
    let running = cmd
        .cmd()
        .args([
            "--config",
            "config.json",
            "serve",
            "--http",
            &addr,
            "--no-auth",
            "--idle",
            "1s",
            "--always-on",
            "kept",
        ])
        .stderr_any()
        .spawn();
    eventually(20, "the always-on server starts with no call", || {
        pids(&kept).len() == 1
    });
    eventually(20, "the gateway listens", || {
        std::net::TcpStream::connect(&addr).is_ok()
    });
    let url = format!("http://{addr}/mcp");
    drive(&dir, &["call", "--http", &url]);
    let lazy_pid = *pids(&lazy)
        .last()
        .expect("the call started the fault server");
    eventually(15, "the idle server is stopped", || pid_gone(lazy_pid));
    let kept_pid = pids(&kept)[0];
    assert!(
        pid_alive(kept_pid),
        "always-on servers are never stopped for idleness"
    );
    kill(Pid::from_raw(kept_pid), Signal::SIGKILL).expect("kill the always-on server");
    eventually(20, "the always-on server is restarted", || {
        pids(&kept).len() == 2
    });
    let restarted = pids(&kept)[1];
    kill(Pid::from_raw(running.pid()), Signal::SIGTERM).expect("signal the gateway");
    running.wait();
    assert_pid_gone(restarted, "the always-on server after SIGTERM");
}

#[test]
fn a_crash_is_a_tool_error_then_a_backoff_then_a_restart() {
    let cmd = project();
    let dir = cmd.dir().to_path_buf();
    let mut args = vec!["crash"];
    let gateway = stdio_gateway(&dir, &["--mode", "full"]);
    args.extend(gateway.iter().map(String::as_str));
    let seen = drive(&dir, &args);
    assert_eq!(seen["crash"]["is_error"], true, "{seen}");
    let during = &seen["during_backoff"];
    assert_eq!(during["is_error"], true, "{during}");
    let text = during["text"][0].as_str().unwrap_or("");
    assert!(
        text.contains("unavailable") && text.contains("UTC"),
        "says when to retry: {text}"
    );
    assert!(
        !text.contains("boom"),
        "the server's stderr stays in the log: {text}"
    );
    assert_eq!(
        seen["after_backoff"],
        json!({"is_error": false, "text": ["back"]})
    );
}

#[test]
fn an_open_address_without_a_key_is_refused() {
    Cmd::new()
        .config_json(json!({"mcpServers": {"fault": fault(&[])}}))
        .args(["serve", "--http", "0.0.0.0:0"])
        .status(2)
        .stderr_has("no key is set")
        .stderr_has("--api-key")
        .run();
}

#[test]
fn print_config_writes_a_client_entry_once() {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"fault": fault(&[])}}));
    let printed = cmd
        .cmd()
        .args([
            "--config",
            "config.json",
            "serve",
            "--print-config",
            "codex",
        ])
        .stderr_any()
        .run();
    assert!(
        printed.stdout.contains("[mcp_servers.mcp-launch]"),
        "{}",
        printed.stdout
    );
    let write = || {
        cmd.cmd()
            .args([
                "--config",
                "config.json",
                "serve",
                "--print-config",
                "cursor",
                "--write",
            ])
            .stderr_any()
            .run()
    };
    write();
    let file: PathBuf = cmd.path(".cursor/mcp.json");
    let first = std::fs::read_to_string(&file).expect("the client file was written");
    let entry: Value = serde_json::from_str(&first).unwrap();
    assert_eq!(entry["mcpServers"]["mcp-launch"]["command"], BIN);
    let again = write();
    assert!(
        again.stderr.contains("already up to date"),
        "{}",
        again.stderr
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), first);
}

/// The MCP Inspector's CLI (Node 22, installed beside the conformance suite).
fn inspector(args: &[&str], dir: &Path) -> Value {
    let bin = manifest_dir().join(".deps/conformance/node_modules/.bin");
    assert!(
        bin.join("mcp-inspector").exists(),
        "run scripts/install-test-deps.sh"
    );
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new(bin.join("mcp-inspector"));
    command.arg("--cli").args(args).env("PATH", path);
    client_json(command, dir, "the Inspector CLI")
}

#[test]
fn the_mcp_inspector_cli_lists_and_calls_over_stdio_and_http() {
    let cmd = project();
    let dir = cmd.dir().to_path_buf();
    let config = dir.join("config.json").display().to_string();
    let called = inspector(
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "fault__echo",
            "--tool-arg",
            "message=hello",
            "--",
            BIN,
            "--config",
            &config,
            "serve",
        ],
        &dir,
    );
    assert_eq!(called["content"][0]["text"], "hello", "{called}");
    let addr = format!("127.0.0.1:{}", free_port());
    let running = cmd
        .cmd()
        .args([
            "--config",
            "config.json",
            "serve",
            "--mode",
            "sparse",
            "--http",
            &addr,
            "--no-auth",
        ])
        .stderr_any()
        .spawn();
    eventually(20, "the gateway listens", || {
        std::net::TcpStream::connect(&addr).is_ok()
    });
    let url = format!("http://{addr}/mcp");
    let listed = inspector(
        &[&url, "--transport", "http", "--method", "tools/list"],
        &dir,
    );
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "search_tools",
            "describe_tool",
            "call_tool",
            "discover",
            "read_output"
        ]
    );
    kill(Pid::from_raw(running.pid()), Signal::SIGTERM).expect("signal the gateway");
    running.wait();
}

/// What a raw client (no SDK types) sees of `tool`, over `--http URL` or stdio.
fn raw_client(dir: &Path, tool: &str, transport: &[&str]) -> Value {
    let mut command = Command::new(sdk_python());
    command
        .arg(manifest_dir().join("tests/fixtures/raw_client.py"))
        .args(["--tool", tool])
        .args(transport);
    client_json(command, dir, "the raw client")
}

#[test]
fn every_field_of_upstream_tools_and_results_passes_over_http_and_stdio() {
    let cmd = Cmd::new().file(
        "tools.json",
        &json!([{
            "name": "future",
            "description": "A tool from a later revision.",
            "inputSchema": {"type": "object"},
            "execution": {"taskSupport": "optional"},
            "x-later": {"a": 1},
            "_meta": {"vendor/key": "v"},
            "x-result": {
                "content": [{"type": "text", "text": "t"}, {"type": "hologram", "depth": 3}],
                "x-extra": true,
            },
        }])
        .to_string(),
    );
    let tools = cmd.path("tools.json").display().to_string();
    let cmd = cmd.config_json(json!({"mcpServers": {
        "up": fault(&["--only-file-tools", "--tools-file", &tools]),
    }}));
    let dir = cmd.dir().to_path_buf();
    let check = |seen: &Value, how: &str| {
        let tool = &seen["tools"][0];
        assert_eq!(tool["name"], "up__future", "{how}: {seen}");
        assert_eq!(
            tool["execution"],
            json!({"taskSupport": "optional"}),
            "{how}: {tool}"
        );
        assert_eq!(tool["x-later"], json!({"a": 1}), "{how}: {tool}");
        assert_eq!(tool["_meta"], json!({"vendor/key": "v"}), "{how}: {tool}");
        let result = &seen["result"];
        assert_eq!(
            result["content"][1],
            json!({"type": "hologram", "depth": 3}),
            "{how}: {result}"
        );
        assert_eq!(result["x-extra"], true, "{how}: {result}");
        assert!(
            !seen.to_string().contains("mcp-launch/raw"),
            "{how}: {seen}"
        );
    };
    let gateway = stdio_gateway(&dir, &["--mode", "full"]);
    let mut stdio = vec!["--"];
    // Its command line, without the driver's `--stdio` flag.
    stdio.extend(gateway[1..].iter().map(String::as_str));
    check(&raw_client(&dir, "up__future", &stdio), "stdio");

    let (running, url) = http_gateway(&cmd, &["--mode", "full"]);
    check(&raw_client(&dir, "up__future", &["--http", &url]), "http");
    kill(Pid::from_raw(running.pid()), Signal::SIGTERM).expect("signal the gateway");
    running.wait();
}

#[test]
fn a_result_over_the_budget_is_cut_and_read_on_by_its_handle_by_its_client_only() {
    let log: String = (1..=6000)
        .map(|n| format!("line {n} of the log\n"))
        .collect();
    let cmd = Cmd::new().file(
        "tools.json",
        &json!([{
            "name": "log",
            "description": "A long log.",
            "inputSchema": {"type": "object"},
            "x-result": {"content": [{"type": "text", "text": log}]},
        }])
        .to_string(),
    );
    let tools = cmd.path("tools.json").display().to_string();
    let cmd = cmd.config_json(json!({"mcpServers": {
        "up": fault(&["--only-file-tools", "--tools-file", &tools]),
    }}));
    let dir = cmd.dir().to_path_buf();
    let read = r#"{"offset": 3000, "limit": 2}"#;
    let check = |seen: &Value, how: &str| {
        let names = strings(&json!(seen["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].clone())
            .collect::<Vec<_>>()));
        assert!(
            names.contains(&"read_output".to_string()),
            "{how}: {names:?}"
        );
        let result = &seen["result"];
        let sent = result.to_string().len();
        assert!(
            sent < log.len() / 2,
            "{how}: {sent} bytes sent of {}",
            log.len()
        );
        let handle = result["_meta"]["mcp-launch/outputs"]["cuts"][0]["handle"]
            .as_str()
            .unwrap_or_default();
        assert!(handle.starts_with("h_"), "{how}: {result}");
        let text = seen["read"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(
            text.contains("line 3001 of the log") && !text.contains("line 2999 of"),
            "{how}: {}",
            seen["read"]
        );
        handle.to_string()
    };
    let gateway = stdio_gateway(&dir, &["--mode", "full"]);
    let mut stdio = vec!["--read", read, "--"];
    stdio.extend(gateway[1..].iter().map(String::as_str));
    check(&raw_client(&dir, "up__log", &stdio), "stdio");

    let (running, url) = http_gateway(&cmd, &["--mode", "full"]);
    let handle = check(
        &raw_client(&dir, "up__log", &["--read", read, "--http", &url]),
        "http",
    );
    // Another session may not read it.
    let other = format!(r#"{{"handle": "{handle}"}}"#);
    let seen = raw_client(&dir, "up__log", &["--read", &other, "--http", &url]);
    assert_eq!(seen["read"]["isError"], true, "{}", seen["read"]);
    kill(Pid::from_raw(running.pid()), Signal::SIGTERM).expect("signal the gateway");
    running.wait();
}

#[test]
fn prompts_seen_once_are_listed_by_the_next_gateway_before_their_server_runs() {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"everything": everything()}}));
    let dir = cmd.dir().to_path_buf();
    // The tool index knows the server: a gateway starts nothing until a call.
    cmd.cmd()
        .args(["--config", "config.json", "list"])
        .stderr_any()
        .run();
    let gateway = stdio_gateway(&dir, &["--mode", "full"]);
    let over_stdio = |extra: &[&str]| {
        let mut args: Vec<&str> = extra.to_vec();
        args.extend(["--list", "prompts", "--"]);
        args.extend(gateway[1..].iter().map(String::as_str));
        args.iter().map(|a| a.to_string()).collect::<Vec<_>>()
    };
    let names = |seen: &Value| {
        strings(&json!(seen["listed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].clone())
            .collect::<Vec<_>>()))
    };
    // No server runs yet and no gateway has seen one: the prompts `list` recorded in the tool
    // index.
    let first = raw_client(&dir, "", &first_args(&over_stdio(&[])));
    let recorded = names(&first);
    assert!(
        !recorded.is_empty() && recorded.iter().all(|n| n.starts_with("everything__")),
        "{first}"
    );
    // A call starts the server; its prompts are listed live and remembered.
    let arguments = over_stdio(&["--arguments", r#"{"message": "hi"}"#]);
    let live = names(&raw_client(
        &dir,
        "everything__echo",
        &first_args(&arguments),
    ));
    assert!(
        !live.is_empty() && live.iter().all(|n| n.starts_with("everything__")),
        "{live:?}"
    );
    // A new gateway lists them before anything starts the server.
    let later = raw_client(&dir, "", &first_args(&over_stdio(&[])));
    assert_eq!(names(&later), live);
    // A changed definition forgets them: what its own check records is listed.
    let changed = cmd.config_json(json!({"mcpServers": {"everything": {
        "command": everything_bin(), "env": {"CHANGED": "1"},
    }}}));
    changed
        .cmd()
        .args(["--config", "config.json", "list"])
        .stderr_any()
        .run();
    let after = raw_client(changed.dir(), "", &first_args(&over_stdio(&[])));
    assert_eq!(names(&after), recorded, "{after}");
}

/// Borrowed arguments.
fn first_args(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// Tools with an `outputSchema` (and results that conform to it) for the budget tests:
/// `hits` (cut-tolerant: its arrays may be shortened) with a big result, `pairs` (not: a
/// `minItems`) with a small one, `whole` (not) with a big one and a budget of 0.
fn schema_tools() -> Value {
    let hits: Vec<Value> = (0..3000)
        .map(|i| json!({"path": format!("src/module_{i}/file.rs"), "line": i}))
        .collect();
    // A required member after the array: cutting as any JSON would drop it.
    let hits = json!({"query": "fn budget", "hits": hits, "total": 3000});
    let tolerant = json!({"type": "object", "required": ["query", "hits", "total"],
        "additionalProperties": false,
        "properties": {"query": {"type": "string"}, "total": {"type": "integer"},
            "hits": {"type": "array", "items": {"$ref": "#/$defs/hit"}}},
        "$defs": {"hit": {"type": "object", "required": ["path", "line"],
            "properties": {"path": {"type": "string"}, "line": {"type": "integer"}}}}});
    let intolerant = json!({"type": "object", "required": ["pair"],
        "properties": {"pair": {"type": "array", "minItems": 2},
            "rows": {"type": "array"}}});
    let result = |structured: &Value| {
        json!({"content": [{"type": "text", "text": structured.to_string()}],
            "structuredContent": structured})
    };
    let rows = json!({"pair": [1, 2], "rows": vec!["a row of the table"; 3000]});
    json!([
        {"name": "hits", "inputSchema": {"type": "object"}, "outputSchema": tolerant,
            "x-result": result(&hits)},
        {"name": "pairs", "inputSchema": {"type": "object"}, "outputSchema": intolerant,
            "x-result": result(&json!({"pair": [1, 2]}))},
        {"name": "whole", "inputSchema": {"type": "object"}, "outputSchema": intolerant,
            "x-result": result(&rows)},
    ])
}

#[test]
fn output_schemas_are_kept_only_where_cut_results_still_conform() {
    let cmd = Cmd::new()
        .file("tools.json", &schema_tools().to_string())
        .trusted_overrides(
            r#"{"version": 1, "stacks": {"config": {"up": {"max_output_tokens": {"whole": 0}}}}}"#,
        );
    let tools = cmd.path("tools.json").display().to_string();
    let cmd = cmd.config_json(json!({"mcpServers": {
        "up": fault(&["--only-file-tools", "--tools-file", &tools]),
    }}));
    let dir = cmd.dir().to_path_buf();
    let defined = schema_tools();
    let schema_of = |i: usize| defined[i]["outputSchema"].clone();
    let calls = [
        "--call",
        "up__hits",
        "--call",
        "up__pairs",
        "--call",
        "up__whole",
    ];
    let mut args = vec!["schemas"];
    args.extend(calls);
    let gateway = stdio_gateway(&dir, &["--mode", "full", "--max-output-tokens", "1000"]);
    args.extend(gateway.iter().map(String::as_str));
    let seen = drive(&dir, &args);

    // (i) Cut-tolerant: advertised with its schema; the big result arrives cut, and the SDK
    // (which checks every result against the schema it listed) took it.
    let listed = &seen["tools"];
    assert_eq!(listed["up__hits"]["outputSchema"], schema_of(0), "{listed}");
    let hits = &seen["calls"]["up__hits"];
    assert!(hits.get("error").is_none(), "{hits}");
    let kept = hits["structuredContent"]["hits"].as_array().unwrap().len();
    assert!(kept > 0 && kept < 3000, "{kept} hits kept");
    assert_eq!(hits["structuredContent"]["query"], "fn budget");
    assert_eq!(hits["structuredContent"]["total"], 3000);
    assert!(
        hits.to_string().len() < 20_000,
        "{} bytes",
        hits.to_string().len()
    );
    let cut = &hits["_meta"]["mcp-launch/outputs"]["cuts"][0];
    assert_eq!(cut["part"], "structuredContent", "{hits}");
    assert!(cut["handle"].as_str().unwrap().starts_with("h_"));

    // (ii) Not cut-tolerant, budget on: advertised without the schema, kept under _meta.
    let pairs = &listed["up__pairs"];
    assert!(pairs.get("outputSchema").is_none(), "{pairs}");
    assert_eq!(pairs["_meta"]["mcp-launch/outputSchema"], schema_of(1));
    assert_eq!(
        seen["calls"]["up__pairs"]["structuredContent"],
        json!({"pair": [1, 2]})
    );

    // (iii) A budget of 0: the schema and the big result untouched.
    assert_eq!(
        listed["up__whole"]["outputSchema"],
        schema_of(2),
        "{listed}"
    );
    let whole = &seen["calls"]["up__whole"];
    assert_eq!(
        whole["structuredContent"],
        defined[2]["x-result"]["structuredContent"],
        "{}",
        whole.get("error").unwrap_or(&Value::Null)
    );
    assert!(whole["_meta"].get("mcp-launch/outputs").is_none());

    // Sparse mode: describe_tool says the same.
    let mut args = vec!["schemas"];
    args.extend(calls);
    let gateway = stdio_gateway(&dir, &["--mode", "sparse", "--max-output-tokens", "1000"]);
    args.extend(gateway.iter().map(String::as_str));
    let described = &drive(&dir, &args)["calls"];
    assert_eq!(
        described["up__hits"]["outputSchema"],
        schema_of(0),
        "{described}"
    );
    assert!(
        described["up__pairs"].get("outputSchema").is_none(),
        "{described}"
    );
    assert_eq!(
        described["up__pairs"]["_meta"]["mcp-launch/outputSchema"],
        schema_of(1)
    );
    assert_eq!(described["up__whole"]["outputSchema"], schema_of(2));
}

/// Steps of the stateless client against `url`, and its answers.
/// `transport` is `["--url", URL]` or `["--", COMMAND...]`.
pub(crate) fn stateless(dir: &Path, transport: &[&str], steps: Value) -> Vec<Value> {
    let mut command = Command::new(sdk_python());
    command
        .arg(manifest_dir().join("tests/fixtures/stateless_client.py"))
        .args(["--steps", &steps.to_string()])
        .args(transport);
    let answers = client_json(command, dir, "the stateless client");
    answers.as_array().cloned().unwrap_or_default()
}

pub(crate) fn text_of(answer: &Value) -> &str {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

#[test]
fn a_2026_client_gets_input_requests_verbatim_and_its_retry_reaches_the_same_server_over_http_and_stdio(
) {
    let fixture = manifest_dir().join("tests/fixtures/conformance_server.py");
    let cmd = Cmd::new();
    let log = cmd.path("fault.log");
    let cmd = cmd.config_json(json!({"mcpServers": {
        "conf": {"command": sdk_python(), "args": [fixture.display().to_string()]},
        "fault": fault(&["--log", &log.display().to_string()]),
    }}));
    let dir = cmd.dir().to_path_buf();
    let (running, url) = http_gateway(&cmd, &["--mode", "full"]);
    let call = |name: &str, extra: Value| {
        let mut params = json!({"name": name, "arguments": {}});
        for (key, value) in extra.as_object().into_iter().flatten() {
            params[key] = value.clone();
        }
        json!({"method": "tools/call", "params": params})
    };
    let confirm = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
    let tampered = "conf__test_input_required_result_tampered_state";
    let steps = json!([
        call("conf__test_input_required_result_elicitation", json!({})),
        call(
            "conf__test_input_required_result_elicitation",
            json!({"inputResponses": {"user_name": {"action": "accept", "content": {"name": "Alice"}}}})
        ),
        call(tampered, json!({})),
        call(
            tampered,
            json!({"inputResponses": confirm, "requestState": "$tampered"})
        ),
        call(
            tampered,
            json!({"inputResponses": confirm, "requestState": "$state"})
        ),
    ]);
    let check = |answers: Vec<Value>, how: &str| {
        let asked = &answers[0]["result"];
        assert_eq!(asked["resultType"], "input_required", "{how}: {answers:?}");
        assert_eq!(
            asked["inputRequests"]["user_name"]["method"], "elicitation/create",
            "{how}: {asked}"
        );
        assert!(
            !asked.to_string().contains("mcp-launch/raw"),
            "{how}: {asked}"
        );
        assert_eq!(text_of(&answers[1]), "Hello, Alice!", "{how}: {answers:?}");
        let state = answers[2]["result"]["requestState"].as_str().unwrap_or("");
        assert!(!state.is_empty(), "{how}: {answers:?}");
        assert!(
            answers[3].get("error").is_some(),
            "{how}: a tampered state is refused: {answers:?}"
        );
        assert_eq!(
            text_of(&answers[4]),
            "State verified.",
            "{how}: {answers:?}"
        );
    };
    check(stateless(&dir, &["--url", &url], steps.clone()), "http");
    let gateway = stdio_gateway(&dir, &["--mode", "full"]);
    let mut stdio = vec!["--"];
    stdio.extend(gateway[1..].iter().map(String::as_str));
    check(stateless(&dir, &stdio, steps), "stdio");

    // A server that does not speak the revision refuses `server/discover` once, then serves
    // the 2026 client through its handshake session.
    let echo = |message: &str| json!({"method": "tools/call", "params": {"name": "fault__echo", "arguments": {"message": message}}});
    let answers = stateless(&dir, &["--url", &url], json!([echo("one"), echo("two")]));
    assert_eq!(text_of(&answers[0]), "one", "{answers:?}");
    assert_eq!(text_of(&answers[1]), "two", "{answers:?}");
    let received = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(received.matches("server/discover").count(), 1, "{received}");

    // `daemon status` shows the second process, and only where the server speaks the revision.
    let status = cmd.cmd().args(["daemon", "status", "--json"]).run().json();
    let upstreams = status["gateways"][0]["upstreams"].clone();
    let eras: Vec<(&str, &str)> = upstreams
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|u| Some((u["name"].as_str()?, u["era"].as_str()?)))
        .collect();
    assert_eq!(eras, [("conf", "2026-07-28")], "{upstreams}");
    kill(Pid::from_raw(running.pid()), Signal::SIGTERM).expect("signal the gateway");
    running.wait();
}
