//! The gateway's face, whatever its upstreams send: the 33 servers of the search bench
//! (`tests/fixtures/search-bench/tools/`, real servers' tool lists, among them
//! `@modelcontextprotocol/server-gitlab`'s nine tools without `"type": "object"`) replayed
//! behind it by the fault server, then
//! - every message it sends, in both revisions (2025-11-25 on a session, 2026-07-28 stateless),
//!   both modes and both transports, checked against the MCP JSON Schema of that revision
//!   (`tests/fixtures/mcp-schema/`, vendored from the specification repository);
//! - the newest official clients, which validate what they receive (the Python SDK 2.x and the
//!   TypeScript SDK, pinned by `scripts/install-test-deps.sh`), listing and calling in both
//!   modes over both transports;
//! - what was repaired, said once by the gateway and by `list` (directly and through a daemon).

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};

use crate::daemon::{start_daemon, view};
use crate::serve::{http_gateway, stdio_gateway};
use crate::util::*;

/// The bench's tool lists (a copy of the shared search bench's).
fn bench_dir() -> std::path::PathBuf {
    manifest_dir().join("tests/fixtures/search-bench/tools")
}

/// Every bench server by name (its file's stem) with its tools, in name order.
fn bench_servers() -> Vec<(String, Vec<Value>)> {
    let mut servers: Vec<(String, Vec<Value>)> = std::fs::read_dir(bench_dir())
        .expect("the search bench's tools")
        .filter_map(Result::ok)
        .map(|file| file.path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .map(|path| {
            let name = path
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into();
            let text = std::fs::read_to_string(&path).expect("a bench file");
            let tools: Vec<Value> = serde_json::from_str(&text).expect("a JSON list of tools");
            (name, tools)
        })
        .collect();
    servers.sort_by(|a, b| a.0.cmp(&b.0));
    servers
}

/// The tests here start 33 servers per gateway: one at a time, so that on a loaded machine
/// their handshakes stay within the windows.
static ONE_BENCH_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A project fronting every bench server, each replayed by the fault server from its file;
/// its tool index filled by a `list` (so every gateway starts with the whole catalog). The
/// slow window is widened: 33 Python servers start at once. Held with the guard of
/// [`ONE_BENCH_AT_A_TIME`].
fn bench_project() -> (std::sync::MutexGuard<'static, ()>, Cmd) {
    let one = ONE_BENCH_AT_A_TIME
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let servers: serde_json::Map<String, Value> = bench_servers()
        .into_iter()
        .map(|(name, _)| {
            let file = bench_dir()
                .join(format!("{name}.json"))
                .display()
                .to_string();
            (name, fault(&["--only-file-tools", "--tools-file", &file]))
        })
        .collect();
    let cmd = Cmd::new()
        .config_json(json!({"mcpServers": servers}))
        .env("MCP_INIT_TIMEOUT_SEC", "60");
    cmd.cmd()
        .args(["--config", "config.json", "list", "--json"])
        .run();
    (one, cmd)
}

/// The servers whose first tool each run calls (every server's tools are listed; a call's
/// answer takes the same path whichever replayed server gives it).
const CALLED: [&str; 4] = ["gitlab", "everything", "github", "time"];

/// One call per server of [`CALLED`]: its first tool, with example arguments built from its
/// schema.
fn calls() -> Vec<(String, Value)> {
    bench_servers()
        .into_iter()
        .filter(|(server, _)| CALLED.contains(&server.as_str()))
        .filter_map(|(server, tools)| {
            let tool = tools.first()?;
            let name = format!("{server}__{}", tool["name"].as_str()?);
            Some((name, mcp_launch::catalog::tool::example_arguments(tool)))
        })
        .collect()
}

/// The MCP JSON Schema of one revision, and validators of its definitions made on demand.
pub(crate) struct Revision {
    root: Value,
    validators: HashMap<String, jsonschema::Validator>,
}

impl Revision {
    pub(crate) fn load(version: &str) -> Revision {
        let path = manifest_dir().join(format!("tests/fixtures/mcp-schema/{version}/schema.json"));
        let text = std::fs::read_to_string(&path).expect("the vendored schema");
        Revision {
            root: serde_json::from_str(&text).expect("the schema is JSON"),
            validators: HashMap::new(),
        }
    }

    /// The violations of `value` against the definition `name` (`$defs/name`).
    pub(crate) fn violations(&mut self, name: &str, value: &Value) -> Vec<String> {
        assert!(
            self.root["$defs"].get(name).is_some(),
            "the schema defines no {name}"
        );
        let root = &self.root;
        let validator = self.validators.entry(name.to_string()).or_insert_with(|| {
            let mut schema = root.clone();
            schema["$ref"] = json!(format!("#/$defs/{name}"));
            jsonschema::validator_for(&schema).expect("the schema compiles")
        });
        validator
            .iter_errors(value)
            .map(|e| format!("{name} at {}: {e}", e.instance_path()))
            .collect()
    }
}

/// The result definition of a request's answer, by method.
fn result_definition(method: &str) -> Option<&'static str> {
    Some(match method {
        "initialize" => "InitializeResult",
        "ping" => "EmptyResult",
        "server/discover" => "DiscoverResult",
        "tools/list" => "ListToolsResult",
        "tools/call" => "CallToolResult",
        "resources/list" => "ListResourcesResult",
        "resources/templates/list" => "ListResourceTemplatesResult",
        "prompts/list" => "ListPromptsResult",
        _ => return None,
    })
}

/// Every violation of the recorded messages against `revision`: each is a JSON-RPC message;
/// an answer's result is the method's result, an error a JSON-RPC error response, a
/// notification a server notification, a request a server request.
fn check_messages(revision: &mut Revision, record: &[Value]) -> Vec<String> {
    let mut found = Vec::new();
    for entry in record {
        let message = &entry["message"];
        let mut seen = revision.violations("JSONRPCMessage", message);
        match (
            entry["answers"].as_str(),
            message.get("method"),
            message.get("id"),
        ) {
            (Some(method), _, _) if message.get("result").is_some() => {
                let def = result_definition(method).expect("a method the recorder sends");
                seen.extend(revision.violations(def, &message["result"]));
            }
            (Some(_), _, _) => seen.extend(revision.violations("JSONRPCErrorResponse", message)),
            (None, Some(_), None) => {
                seen.extend(revision.violations("ServerNotification", message))
            }
            (None, Some(_), Some(_)) => seen.extend(revision.violations("ServerRequest", message)),
            (None, None, _) => seen.push("a message that answers no request it was sent".into()),
        }
        let via = entry["via"].as_str().unwrap_or("?");
        let what = entry["answers"].as_str().unwrap_or("unasked");
        found.extend(seen.into_iter().map(|v| format!("{via} {what}: {v}")));
    }
    found
}

/// What the recorder saw of a gateway in `era`, over `transport` (`["--url", URL]` or
/// `["--", COMMAND...]`).
fn record(dir: &Path, era: &str, calls: &Value, transport: &[&str]) -> Vec<Value> {
    let mut command = Command::new(sdk_python());
    command
        .arg(manifest_dir().join("tests/fixtures/wire_recorder.py"))
        .args(["--era", era, "--calls", &calls.to_string()])
        .args(transport)
        .env("MCP_INIT_TIMEOUT_SEC", "60");
    let recorded = client_json(command, dir, "the wire recorder");
    recorded.as_array().cloned().unwrap_or_default()
}

/// The tools of the recorded `tools/list` answers.
fn listed_tools(record: &[Value]) -> Vec<&Value> {
    record
        .iter()
        .filter(|e| e["answers"] == "tools/list")
        .filter_map(|e| e["message"]["result"]["tools"].as_array())
        .flatten()
        .collect()
}

#[test]
fn every_message_the_gateway_sends_is_valid_in_both_revisions_modes_and_transports() {
    let (_one, cmd) = bench_project();
    let dir = cmd.dir().to_path_buf();
    let calls = calls();
    assert_eq!(calls.len(), CALLED.len(), "{calls:?}");
    let mut problems = Vec::new();
    for mode in ["full", "sparse"] {
        let calls: Value = match mode {
            "full" => calls
                .iter()
                .map(|(name, args)| json!([name, args]))
                .collect(),
            _ => json!([
                ["search_tools", {"query": "create a gitlab repository"}],
                ["describe_tool", {"name": "gitlab__create_repository"}],
                ["call_tool", {"name": "gitlab__create_repository", "arguments": {"name": "x"}}],
                ["discover", {"jsonpath": "$.servers[*].name"}],
            ]),
        };
        let gateway = stdio_gateway(&dir, &["--mode", mode]);
        let mut stdio = vec!["--"];
        stdio.extend(gateway[1..].iter().map(String::as_str));
        for era in ["2025-11-25", "2026-07-28"] {
            let mut revision = Revision::load(era);
            let (running, url) = http_gateway(&cmd, &["--mode", mode]);
            for transport in [&["--url", url.as_str()][..], &stdio[..]] {
                let seen = record(&dir, era, &calls, transport);
                let how = format!("{mode} mode, {era}, {}", transport[0]);
                let answered = seen.iter().filter(|e| e["answers"].is_string()).count();
                assert!(answered >= 6, "{how}: too few answers: {seen:?}");
                if mode == "full" {
                    let tools = listed_tools(&seen);
                    assert!(tools.len() > 450, "{how}: {} tools listed", tools.len());
                    let gitlab = tools
                        .iter()
                        .find(|t| t["name"] == "gitlab__create_repository");
                    assert!(gitlab.is_some(), "{how}: gitlab's tools are listed");
                }
                let found = check_messages(&mut revision, &seen);
                problems.extend(found.into_iter().map(|p| format!("{how}: {p}")));
            }
            kill(Pid::from_raw(running.pid()), Signal::SIGTERM).expect("signal the gateway");
            running.wait();
        }
    }
    assert!(
        problems.is_empty(),
        "{} messages break the MCP schema; the first ones:\n{}",
        problems.len(),
        problems
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// What one official client saw: `client` is `python` or `typescript`.
fn strict_client(dir: &Path, client: &str, call: &(&str, Value), transport: &[&str]) -> Value {
    let (name, arguments) = call;
    let command = match client {
        "python" => {
            let mut command = Command::new(sdk_python());
            command
                .arg(manifest_dir().join("tests/fixtures/gateway_client.py"))
                .args([
                    "strict",
                    "--call",
                    name,
                    "--arguments",
                    &arguments.to_string(),
                ]);
            match transport {
                ["--url", url] => command.args(["--http", url]),
                [_, gateway @ ..] => command.arg("--stdio").args(gateway),
                [] => unreachable!("a transport"),
            };
            command
        }
        _ => {
            let mut command = Command::new(node22());
            command
                .arg(manifest_dir().join("tests/fixtures/ts_client.mjs"))
                .args([
                    "--sdk",
                    &manifest_dir().join(".deps/sdk-ts").display().to_string(),
                ])
                .args(["--call", name, "--arguments", &arguments.to_string()]);
            match transport {
                ["--url", url] => command.args(["--http", url]),
                stdio => command.args(stdio),
            };
            command
        }
    };
    let mut command = command;
    command.env("MCP_INIT_TIMEOUT_SEC", "60");
    client_json(command, dir, client)
}

/// Node 22 (installed beside the conformance suite), with the TypeScript SDK present.
pub(crate) fn node22() -> String {
    let sdk = manifest_dir().join(".deps/sdk-ts/node_modules/@modelcontextprotocol/sdk");
    assert!(
        sdk.exists(),
        "{} is missing: run scripts/install-test-deps.sh",
        sdk.display()
    );
    manifest_dir()
        .join(".deps/conformance/node_modules/.bin/node")
        .display()
        .to_string()
}

#[test]
fn the_newest_python_and_typescript_sdks_list_and_call_in_both_modes_over_both_transports() {
    let (_one, cmd) = bench_project();
    let dir = cmd.dir().to_path_buf();
    let target = "gitlab__create_repository";
    for mode in ["full", "sparse"] {
        let call = match mode {
            "full" => (target, json!({"name": "strict"})),
            _ => (
                "call_tool",
                json!({"name": target, "arguments": {"name": "strict"}}),
            ),
        };
        let (running, url) = http_gateway(&cmd, &["--mode", mode]);
        let gateway = stdio_gateway(&dir, &["--mode", mode]);
        let mut stdio = vec!["--"];
        stdio.extend(gateway[1..].iter().map(String::as_str));
        for client in ["python", "typescript"] {
            for transport in [&["--url", url.as_str()][..], &stdio[..]] {
                let how = format!("{client}, {mode} mode, {}", transport[0]);
                let seen = strict_client(&dir, client, &call, transport);
                assert!(seen.get("error").is_none(), "{how}: {seen}");
                let tools: Vec<&str> = (seen["tools"].as_array().into_iter().flatten())
                    .filter_map(Value::as_str)
                    .collect();
                let expected = if mode == "full" { target } else { "call_tool" };
                assert!(tools.contains(&expected), "{how}: {tools:?}");
                let text = seen["result"]["content"][0]["text"].as_str().unwrap_or("");
                assert!(
                    text.contains("create_repository called with"),
                    "{how}: {seen}"
                );
            }
        }
        kill(Pid::from_raw(running.pid()), Signal::SIGTERM).expect("signal the gateway");
        running.wait();
    }
}

#[test]
fn repaired_tools_are_said_once_by_the_gateway_and_by_list_directly_and_through_a_daemon() {
    // @modelcontextprotocol/server-gitlab's real list: nine input schemas without a type.
    let gitlab = manifest_dir().join("tests/fixtures/search-bench/tools/gitlab.json");
    let gitlab = gitlab.display().to_string();
    let cmd = Cmd::new().config_json(json!({"mcpServers": {
        "gitlab": fault(&["--only-file-tools", "--tools-file", &gitlab]),
    }}));
    let direct = view(cmd.cmd(), "off", &["list", "--json"]).json();
    let repairs = &direct["servers"][0]["repairs"];
    assert_eq!(
        repairs["note"],
        "9 tools repaired for strict clients (inputSchema: added \"type\": \"object\" ×9)",
        "{direct}"
    );
    assert_eq!(
        repairs["tools"]["create_repository"],
        json!(["inputSchema: added \"type\": \"object\""]),
        "{direct}"
    );
    assert_eq!(repairs["skipped"], 0, "{direct}");
    let tools = view(cmd.cmd(), "off", &["list", "gitlab", "--json"]).json();
    let tool = &tools["tools"][0];
    assert_eq!(
        tool["repairs"],
        json!(["inputSchema: added \"type\": \"object\""]),
        "{tools}"
    );
    let human = view(cmd.cmd(), "off", &["list"]).stdout;
    assert!(
        human.contains("note: gitlab: 9 tools repaired for strict clients"),
        "{human}"
    );

    // Through a daemon the reports travel with their definitions: the same words.
    let daemon = start_daemon(&cmd, cmd.cmd().args(["-v"]));
    for args in [
        &["list", "--json"][..],
        &["list"],
        &["list", "gitlab", "--json"],
    ] {
        let direct = view(cmd.cmd(), "off", args).stdout;
        assert_eq!(view(cmd.cmd(), "use", args).stdout, direct, "{args:?}");
    }
    kill(Pid::from_raw(daemon.pid()), Signal::SIGTERM).unwrap();
    let stderr = daemon.wait().stderr;
    assert_eq!(
        stderr
            .matches("9 tools repaired for strict clients")
            .count(),
        1,
        "the gateway says it once:\n{stderr}"
    );
}
