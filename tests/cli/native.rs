//! `up --controller native` end to end: the built-in bridge behind the front, serving real
//! servers (server-everything, filesystem, time, git) and the fault server, checked with the
//! real openapi-spec-validator.
//!
//! `launch` runs its two-stack scenario with this controller too (keys, a denied tool refused
//! and left out of the spec, a server that cannot start, `status`, `share`, `openapi`,
//! `down`). These tests cover what the bridge adds: the spec keeps the tools' own schemas,
//! arguments are checked before the call, `isError` is a 424, a killed server is restarted by
//! a later call, one session answers many concurrent calls without mixing them up, and a
//! disabled server is refused. Each test runs `up` in its own directory on ports it picked and
//! ends by checking that every recorded process and every server the bridge ran is gone.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use mcp_launch::catalog::{trim_description, CHATGPT_DESCRIPTION_LIMIT as LIMIT};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};

use crate::launch_util::{
    assert_valid_openapi, http, paths, project, request, stack, terminate, wait_ready, Reply,
};
use crate::util::{
    assert_pid_gone, disabled, everything, fault, filesystem, free_ports, logged, manifest_dir,
    read_log, time, within, Cmd, Output, Running,
};

/// Writes the project's `a.json` with these servers.
pub(crate) fn config(cmd: &Cmd, servers: Value) {
    let text = json!({"mcpServers": servers}).to_string();
    std::fs::write(cmd.path("a.json"), text).unwrap();
}

/// A running native stack: `up` (taken by `stop`), its state, and its front's URL and key.
pub(crate) struct Native {
    up: Option<Running>,
    pub(crate) state: Value,
    url: String,
    key: String,
}

/// Runs `up --controller native` on the project's `a.json` until its front answers.
pub(crate) fn launch(cmd: &Cmd) -> Native {
    launch_with(cmd, &[])
}

/// [`launch`] with more flags for `up`.
pub(crate) fn launch_with(cmd: &Cmd, extra: &[&str]) -> Native {
    let port = free_ports(2);
    let up = cmd
        .cmd()
        .args(["up", "--config", "a.json", "--controller", "native"])
        .args(["--tunnel", "none", "--port", &port.to_string()])
        .args(["--mcpo-port", &(port + 1).to_string()])
        .args(extra)
        .stderr_any()
        .spawn();
    let state = wait_ready(&up, cmd.dir(), 1);
    let a = stack(&state, "a");
    assert_eq!(a["controller"], "native", "{state}");
    Native {
        url: format!("http://127.0.0.1:{}", a["port"]),
        key: a["api_key"].as_str().unwrap().to_string(),
        up: Some(up),
        state,
    }
}

impl Native {
    /// `POST /<route>` with the key and this body, JSON or not.
    pub(crate) fn post_raw(&self, route: &str, body: &str) -> Reply {
        let url = format!("{}/{route}", self.url);
        request("POST", &url, &[("X-API-Key", &self.key)], Some(body.into()))
    }

    /// `POST /<route>` with the key and these arguments.
    pub(crate) fn post(&self, route: &str, arguments: Value) -> Reply {
        self.post_raw(route, &arguments.to_string())
    }

    /// The published spec, fetched with the key (it would be served without).
    pub(crate) fn spec(&self) -> Value {
        let url = format!("{}/openapi.json", self.url);
        let (status, spec) = http("GET", &url, &[("X-API-Key", &self.key)], None);
        assert_eq!(status, 200, "{spec}");
        spec
    }

    /// The server processes under `up` whose command line contains `needle`.
    pub(crate) fn servers(&self, needle: &str) -> Vec<i32> {
        mcp_launch::process::descendants(self.up_pid())
            .into_iter()
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|line| String::from_utf8_lossy(&line).contains(needle))
            })
            .collect()
    }

    /// The one server process whose command line contains `needle`.
    pub(crate) fn server(&self, needle: &str) -> i32 {
        match self.servers(needle)[..] {
            [pid] => pid,
            ref pids => panic!("expected one {needle} process under up, found {pids:?}"),
        }
    }

    pub(crate) fn up_pid(&self) -> i32 {
        self.up.as_ref().map_or(0, Running::pid)
    }

    /// SIGTERM to `up`; then every recorded process and every server it ran must be gone.
    pub(crate) fn stop(mut self) -> Output {
        let servers = mcp_launch::process::descendants(self.up_pid());
        let out = terminate(self.up.take().unwrap(), &self.state);
        for pid in servers {
            assert_pid_gone(pid, "a server the bridge ran");
        }
        out
    }
}

impl Drop for Native {
    /// A failed test still stops its stack: `up` ends its servers on SIGTERM.
    fn drop(&mut self) {
        if let Some(up) = &self.up {
            let _ = nix::sys::signal::kill(Pid::from_raw(up.pid()), Signal::SIGTERM);
        }
    }
}

/// The `error` object of an answer, after checking its status and `error.type`.
fn error_of(reply: &Reply, status: u16, kind: &str) -> Value {
    assert_eq!(
        (reply.status, reply.body["error"]["type"].as_str()),
        (status, Some(kind)),
        "{}",
        reply.body
    );
    reply.body["error"].clone()
}

/// The fault server, logging what it receives to `log` in the project.
fn logging_fault(cmd: &Cmd, log: &str) -> Value {
    fault(&["--log", &cmd.path(log).display().to_string()])
}

/// The same, also serving `plan_trip` (tests/fixtures/trip_tools.json): a tool no installed
/// server has, with `$defs`, a `$ref` and `oneOf` in its inputSchema (the real servers use
/// `$defs` only in outputs, and none uses `oneOf`).
fn fault_with_trip(cmd: &Cmd, log: &str) -> Value {
    let mut server = logging_fault(cmd, log);
    let tools = manifest_dir().join("tests/fixtures/trip_tools.json");
    let args = server["args"].as_array_mut().unwrap();
    args.extend([json!("--tools-file"), json!(tools.display().to_string())]);
    server
}

const COMPONENTS: &str = "#/components/schemas/";

/// `schema` with every `$ref` (which must start with `prefix`) replaced by the member of
/// `definitions` it names, and the `dropped` keywords left out: a self-contained schema, to
/// compare or to validate with.
fn inline(schema: &Value, prefix: &str, definitions: &Value, dropped: &[&str]) -> Value {
    let recurse = |schema| inline(schema, prefix, definitions, dropped);
    match schema {
        Value::Object(map) => match map.get("$ref").and_then(Value::as_str) {
            Some(reference) => {
                assert_eq!(map.len(), 1, "a $ref with siblings: {schema}");
                let name = reference.strip_prefix(prefix);
                let target = &definitions[name.unwrap_or_else(|| panic!("$ref {reference}"))];
                assert!(target.is_object(), "{reference} resolves to nothing");
                recurse(target)
            }
            None => map
                .iter()
                .filter(|(key, _)| !dropped.contains(&key.as_str()))
                .map(|(key, value)| (key.clone(), recurse(value)))
                .collect(),
        },
        Value::Array(items) => items.iter().map(recurse).collect(),
        other => other.clone(),
    }
}

/// A schema of the spec with its references into `components.schemas` inlined.
fn inline_spec(spec: &Value, schema: &Value) -> Value {
    inline(schema, COMPONENTS, &spec["components"]["schemas"], &[])
}

/// A tool's own schema with its `#/$defs/…` references inlined, without `$defs` and
/// `$schema` (the spec has the definitions as components and speaks 2020-12 throughout).
fn inline_tool(schema: &Value) -> Value {
    inline(schema, "#/$defs/", &schema["$defs"], &["$defs", "$schema"])
}

/// The component a `{"$ref": "#/components/schemas/…"}` names.
fn component<'a>(spec: &'a Value, reference: &Value) -> &'a Value {
    let name = reference["$ref"]
        .as_str()
        .unwrap_or_else(|| panic!("not a $ref: {reference}"));
    let component = &spec["components"]["schemas"][name.strip_prefix(COMPONENTS).unwrap()];
    assert!(component.is_object(), "{name} resolves to nothing");
    component
}

/// The published JSON schema of `POST <path>`'s `part`: `requestBody` or `responses/<status>`
/// (error answers are references to the shared `components.responses`).
fn published<'a>(spec: &'a Value, path: &str, part: &str) -> &'a Value {
    let operation = &spec["paths"][path]["post"];
    let mut holder = operation
        .pointer(&format!("/{part}"))
        .unwrap_or_else(|| panic!("{path} has no {part}: {operation}"));
    if let Some(reference) = holder["$ref"].as_str() {
        let pointer = reference.strip_prefix('#').expect("a local $ref");
        holder = (spec.pointer(pointer)).unwrap_or_else(|| panic!("{reference} resolves nowhere"));
    }
    let pointer = "/content/application~1json/schema";
    holder
        .pointer(pointer)
        .unwrap_or_else(|| panic!("{path} has no {part}{pointer}: {operation}"))
}

/// Panics unless the answer to a call of `route` has a status its operation documents and a
/// body that fits the schema the spec gives for it (references inlined).
fn assert_fits_spec(spec: &Value, route: &str, reply: &Reply) {
    let answer = format!("responses/{}", reply.status);
    let schema = inline_spec(spec, published(spec, &format!("/{route}"), &answer));
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<_> = validator
        .iter_errors(&reply.body)
        .map(|e| e.to_string())
        .collect();
    assert!(
        errors.is_empty(),
        "{route}: {} does not fit {schema}: {errors:?}",
        reply.body
    );
}

/// Whether `key` is a key of some object anywhere in `value`.
fn has_key(value: &Value, key: &str) -> bool {
    match value {
        Value::Object(map) => map.contains_key(key) || map.values().any(|v| has_key(v, key)),
        Value::Array(items) => items.iter().any(|v| has_key(v, key)),
        _ => false,
    }
}

#[test]
fn the_spec_publishes_each_tools_own_schemas_and_descriptions() {
    let cmd = project(&[]);
    let root = cmd.mkdir("root");
    config(
        &cmd,
        json!({
            "everything": everything(),
            "filesystem": filesystem(&root),
            "time": time(),
            "git": {"command": manifest_dir().join(".deps/venv-git/bin/mcp-server-git")},
            "fault": fault_with_trip(&cmd, "fault.log"),
        }),
    );
    let front = launch(&cmd);
    let spec = front.spec();
    assert_valid_openapi(&cmd, &spec);

    // Every tool, compared with its definition as `inspect` shows it: the request body means
    // exactly its inputSchema, the 200 answer its outputSchema (any JSON without one).
    let mut expected = BTreeSet::new();
    for server in ["everything", "filesystem", "time", "git", "fault"] {
        let listed = cmd
            .cmd()
            .args(["list", server, "--json", "--config", "a.json"]);
        for tool in listed.run().json()["tools"].as_array().unwrap() {
            let name = tool["name"].as_str().unwrap();
            let path = format!("/{server}/{name}");
            let inspect = cmd.cmd().args(["inspect", server, name, "--json"]);
            let def = inspect.args(["--config", "a.json"]).run().json()["definition"].clone();
            let input = published(&spec, &path, "requestBody");
            let output = published(&spec, &path, "responses/200");
            assert_eq!(
                inline_spec(&spec, input),
                inline_tool(&def["inputSchema"]),
                "{path}: the request body is not the tool's inputSchema"
            );
            match def.get("outputSchema") {
                Some(schema) => assert_eq!(
                    inline_spec(&spec, output),
                    inline_tool(schema),
                    "{path}: the 200 schema is not the tool's outputSchema"
                ),
                None => assert_eq!(output, &json!({}), "{path}"),
            }
            let operation = &spec["paths"][&path]["post"];
            if let Some(title) = def["title"].as_str() {
                assert_eq!(operation["summary"], title, "{path}");
            }
            assert_eq!(operation["x-mcp-annotations"], def["annotations"], "{path}");
            // Cut only when over the ChatGPT limit (up warns about each cut).
            let own = trim_description(def["description"].as_str().unwrap_or_default(), LIMIT);
            assert_eq!(
                operation["description"].as_str().unwrap_or_default(),
                own,
                "{path}"
            );
            expected.insert(path);
        }
    }
    assert_eq!(paths(&spec), expected);

    // That comparison would pass vacuously without them: what a lossy conversion drops, and
    // the tools whose request bodies have it (`oldText`: in the objects of the `edits` array).
    for (path, keyword) in [
        ("/everything/get-structured-content", "enum"),
        ("/everything/get-resource-reference", "default"),
        ("/everything/get-resource-links", "maximum"),
        ("/everything/gzip-file-as-resource", "format"),
        ("/filesystem/edit_file", "oldText"),
        ("/git/git_log", "anyOf"),
        ("/fault/plan_trip", "oneOf"),
        ("/fault/plan_trip", "const"),
    ] {
        let body = inline_spec(&spec, published(&spec, path, "requestBody"));
        assert!(
            has_key(&body["properties"], keyword),
            "{path} lost {keyword}: {body}"
        );
    }
    // `$defs` become components that references follow, in an input and in an output:
    let trip = component(&spec, published(&spec, "/fault/plan_trip", "requestBody"));
    let stop = component(&spec, &trip["properties"]["stops"]["items"]);
    assert_eq!(stop["description"], "One stop of the trip.");
    let conversion = component(
        &spec,
        published(&spec, "/time/convert_time", "responses/200"),
    );
    let [source, target] = [
        &conversion["properties"]["source"],
        &conversion["properties"]["target"],
    ];
    assert_eq!(source, target, "one component for both");
    let required = &component(&spec, source)["required"];
    assert_eq!(
        required,
        &json!(["timezone", "datetime", "day_of_week", "is_dst"])
    );
    // Nothing is left that would resolve against the wrong document or dialect.
    for keyword in ["$defs", "definitions", "$schema", "$id"] {
        assert!(!has_key(&spec, keyword), "the spec still holds {keyword}");
    }

    // The spec tells the truth: real answers fit the schemas it publishes for them.
    let weather = json!({"location": "Chicago"});
    let reply = front.post("everything/get-structured-content", weather);
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_fits_spec(&spec, "everything/get-structured-content", &reply);
    let times = json!({"source_timezone": "Europe/Oslo", "time": "12:00",
                       "target_timezone": "Asia/Tokyo"});
    let reply = front.post("time/convert_time", times);
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_fits_spec(&spec, "time/convert_time", &reply);
    let reply = front.post("fault/plan_trip", json!({"stops": []}));
    error_of(&reply, 422, "invalid_arguments");
    assert_fits_spec(&spec, "fault/plan_trip", &reply);
    front.stop();
}

#[test]
fn bad_arguments_get_422_naming_the_field_and_never_reach_the_server() {
    let cmd = project(&[]);
    config(&cmd, json!({"fault": fault_with_trip(&cmd, "fault.log")}));
    let front = launch(&cmd);
    // (body, what a violation must name): add takes {a, b: integer >= 0}, both required.
    let add = [
        (r#"{"a": "two", "b": 1}"#, "at /a:"),
        (r#"{"a": 1}"#, r#""b" is a required property"#),
        (r#"{"a": -1, "b": 1}"#, "at /a:"),
        ("[1, 2]", "one JSON object"),
        (r#""a=1&b=2""#, "one JSON object"),
    ];
    // plan_trip: through the `$ref` into the definition, its `oneOf`, the root's `enum`.
    let trip = [
        ("", r#""stops" is a required property"#),
        (
            r#"{"stops": [{"city": "Oslo", "stay": 0}]}"#,
            "at /stops/0/stay:",
        ),
        (r#"{"stops": [{"stay": 2}]}"#, r#"at /stops/0: "city""#),
        (
            r#"{"stops": [{"city": "Oslo", "stay": 2}], "mode": "x"}"#,
            "at /mode:",
        ),
    ];
    let expected_add = ["a: integer (required)", "b: integer (required)"];
    let expected_trip = ["stops: array (required)", "mode: one of \"train\", \"car\""];
    let cases = (add.map(|c| ("fault/add", c, expected_add)))
        .into_iter()
        .chain(trip.map(|c| ("fault/plan_trip", c, expected_trip)));
    for (route, (body, named), expected) in cases {
        let reply = front.post_raw(route, body);
        let error = error_of(&reply, 422, "invalid_arguments");
        let violations = error["violations"].as_array().into_iter().flatten();
        let violations: Vec<&str> = violations.filter_map(Value::as_str).collect();
        let listed = error["expected"].as_str().unwrap_or_default();
        assert!(
            violations.iter().any(|v| v.contains(named)),
            "{route} {body}: no violation names {named:?}: {}",
            reply.body
        );
        assert!(
            expected.iter().all(|p| listed.contains(p)),
            "{route} {body}: {listed:?}"
        );
    }
    let reply = front.post_raw("fault/add", r#"{"a": 1,"#);
    let message = error_of(&reply, 400, "invalid_json")["message"].to_string();
    assert!(message.contains("line 1 column 8"), "{message}");

    // Valid calls still work, and they are the only calls the server ever saw.
    let sum = front.post("fault/add", json!({"a": 2, "b": 40}));
    assert_eq!((sum.status, &sum.body), (200, &json!(42)));
    let trip = json!({"stops": [{"city": "Oslo", "stay": "day-trip"}]});
    let planned = front.post("fault/plan_trip", trip.clone());
    assert_eq!(planned.status, 200, "{}", planned.body);
    let log = read_log(&cmd.path("fault.log"));
    let calls: Vec<_> = logged(&log, "tools/call")
        .iter()
        .map(|m| &m["params"])
        .collect();
    assert_eq!(
        calls,
        [
            &json!({"name": "add", "arguments": {"a": 2, "b": 40}}),
            &json!({"name": "plan_trip", "arguments": trip}),
        ]
    );
    front.stop();
}

#[test]
fn a_tool_reporting_is_error_answers_424_with_its_own_text() {
    let cmd = project(&[]);
    let root = cmd.mkdir("root");
    std::fs::write(root.join("inside.txt"), "allowed text").unwrap();
    let outside = cmd.path("outside.txt");
    std::fs::write(&outside, "top secret").unwrap();
    config(&cmd, json!({"filesystem": filesystem(&root)}));
    let front = launch(&cmd);
    let server = front.server("mcp-server-filesystem");

    let reply = front.post("filesystem/read_text_file", json!({"path": outside}));
    let error = error_of(&reply, 424, "tool_error");
    let result = &reply.body["result"];
    assert_eq!(result["isError"], true, "{}", reply.body);
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert_eq!(error["message"], text, "the message is the tool's own text");
    assert!(
        text.contains("outside allowed directories") && text.contains("outside.txt"),
        "{text}"
    );
    assert!(!reply.body.to_string().contains("top secret"));

    // The tool failed, not the server: the same process answers the next call.
    let inside = json!({"path": root.join("inside.txt")});
    let reply = front.post("filesystem/read_text_file", inside);
    let structured = json!({"content": "allowed text"});
    assert_eq!((reply.status, &reply.body), (200, &structured));
    assert_eq!(front.server("mcp-server-filesystem"), server);
    front.stop();
}

#[test]
fn a_killed_server_answers_502_until_a_later_call_restarts_it() {
    let cmd = project(&[]);
    config(&cmd, json!({"everything": everything(), "time": time()}));
    let front = launch(&cmd);
    let echo = |message: &str| front.post("everything/echo", json!({"message": message}));
    assert_eq!(echo("before").status, 200);
    let killed = front.server("mcp-server-everything");
    let bystander = front.server("mcp-server-time");
    killpg(Pid::from_raw(killed), Signal::SIGKILL).unwrap();
    assert_pid_gone(killed, "the killed everything server");
    let crashed = Instant::now();

    // The next call learns of the crash (unless the bridge has already reconnected): a 502
    // naming the cause, with when to retry.
    let reply = echo("right after the crash");
    if reply.status != 200 {
        let error = error_of(&reply, 502, "upstream_unavailable");
        assert_eq!(error["cause"], "server_exited", "{}", reply.body);
        let retry_after = reply.headers.get("retry-after");
        let seconds = retry_after.and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        assert!(
            seconds.is_some_and(|s| (1..=30).contains(&s)),
            "Retry-After: {retry_after:?}"
        );
    }
    // The other server is not disturbed.
    let reply = front.post("time/get_current_time", json!({"timezone": "UTC"}));
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(front.server("mcp-server-time"), bystander);

    // After the backoff (1 s the first time) a call restarts it; until then, 502s.
    let reply = loop {
        let reply = echo("back again");
        if reply.status == 200 {
            break reply;
        }
        error_of(&reply, 502, "upstream_unavailable");
        assert!(
            crashed.elapsed() < Duration::from_secs(30),
            "everything was not restarted within 30 s: {}",
            reply.body
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(reply.body, "Echo: back again");
    assert_ne!(front.server("mcp-server-everything"), killed);
    let out = front.stop();
    assert!(out.stderr.contains("session lost"), "{}", out.stderr);
}

#[test]
fn two_hundred_concurrent_calls_each_get_their_own_answer() {
    let cmd = project(&[]);
    config(&cmd, json!({"everything": everything()}));
    let front = launch(&cmd);
    let server = front.server("mcp-server-everything");
    // Echoes and sums interleaved, each with its own argument and the one right answer.
    let echo = |i| {
        let message = format!("call {i} of 200");
        let answer = json!(format!("Echo: {message}"));
        ("everything/echo", json!({ "message": message }), answer)
    };
    let sum = |i| {
        let answer = json!(format!("The sum of {i} and 1000 is {}.", i + 1000));
        ("everything/get-sum", json!({"a": i, "b": 1000}), answer)
    };
    let calls: Vec<_> = (0..200)
        .map(|i| if i % 4 == 3 { sum(i) } else { echo(i) })
        .collect();
    let client = reqwest::Client::new();
    let requests = calls.iter().map(|(route, arguments, _)| {
        let request = client
            .post(format!("{}/{route}", front.url))
            .header("X-API-Key", &front.key)
            .json(arguments)
            .timeout(Duration::from_secs(60));
        async move {
            match request.send().await {
                Ok(resp) => (
                    resp.status().as_u16(),
                    resp.json().await.unwrap_or(Value::Null),
                ),
                Err(e) => (0, json!(e.to_string())),
            }
        }
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let answers: Vec<(u16, Value)> = rt.block_on(within(120, join_all(requests)));
    let wrong: Vec<String> = calls
        .iter()
        .zip(&answers)
        .filter(|((_, _, expected), (status, body))| (*status, body) != (200, expected))
        .map(|((route, arguments, expected), (status, body))| {
            format!("{route} {arguments}: {status} {body}, expected {expected}")
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "{} of 200 calls got a wrong answer:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert_eq!(
        front.servers("mcp-server-everything"),
        [server],
        "one session served all"
    );
    front.stop();
}

#[test]
fn disabled_servers_answer_404_are_left_out_of_the_spec_and_never_called() {
    let cmd = project(&[]);
    config(
        &cmd,
        json!({
            "time": time(),
            "off": disabled(logging_fault(&cmd, "off.log")),
            "fault": logging_fault(&cmd, "fault.log"),
        }),
    );
    cmd.cmd()
        .args(["server", "disable", "fault", "--config", "a.json"])
        .run();
    let front = launch(&cmd);

    for server in ["off", "fault"] {
        for tool in ["echo", "no-such-tool"] {
            let reply = front.post(&format!("{server}/{tool}"), json!({"message": "hi"}));
            let error = error_of(&reply, 404, "server_disabled");
            let help = error["help"].as_str().unwrap_or_default();
            assert!(help.contains(&format!("server enable {server}")), "{help}");
            assert!(help.contains("restart the stack"), "not running: {help}");
        }
    }
    let published: Vec<String> = paths(&front.spec()).into_iter().collect();
    assert_eq!(published, ["/time/convert_time", "/time/get_current_time"]);
    let reply = front.post("time/get_current_time", json!({"timezone": "UTC"}));
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(front.servers("fault_server.py").is_empty());
    assert!(
        !cmd.path("off.log").exists(),
        "the disabled server was started"
    );
    assert!(
        !cmd.path("fault.log").exists(),
        "the server the overrides disable was started"
    );
    front.stop();
}

#[test]
fn a_server_disabled_while_running_is_refused_until_enabled_again() {
    let cmd = project(&[]);
    config(&cmd, json!({"time": time(), "everything": everything()}));
    let front = launch(&cmd);
    let echo = || front.post("everything/echo", json!({"message": "hi"}));
    assert_eq!(echo().status, 200);

    cmd.cmd()
        .args(["server", "disable", "everything", "--config", "a.json"])
        .run();
    cmd.cmd().args(["openapi"]).run();
    let reply = echo();
    let error = error_of(&reply, 404, "server_disabled");
    let help = error["help"].as_str().unwrap_or_default();
    assert!(
        help.contains("server enable everything") && help.contains("mcp-launch openapi"),
        "{help}"
    );
    let published: Vec<String> = paths(&front.spec()).into_iter().collect();
    assert_eq!(published, ["/time/convert_time", "/time/get_current_time"]);

    cmd.cmd()
        .args(["server", "enable", "everything", "--config", "a.json"])
        .run();
    cmd.cmd().args(["openapi"]).run();
    assert_eq!(echo().status, 200, "enabled again without a restart");
    assert!(paths(&front.spec()).contains("/everything/echo"));
    front.stop();
}

/// `up` shows no token counts, so it never loads the tokenizer (~50 MB while it counts, about
/// half of it kept by the allocator for the life of `up`); the servers it recorded in the tool
/// index are then listed from the index with their counts filled in.
#[test]
fn up_never_loads_the_tokenizer_and_list_fills_in_the_counts() {
    let cmd = Cmd::new();
    config(&cmd, json!({"time": time()}));
    let counts = cmd.path(".cache/mcp-launch/token-counts.json");
    let native = launch(&cmd);
    assert!(
        cmd.path(".cache/mcp-launch/tool-index.json").exists(),
        "up recorded its live check"
    );
    assert!(
        !counts.exists(),
        "up counted tokens (it loaded the tokenizer)"
    );
    native.stop();

    let out = cmd
        .cmd()
        .args(["--config", "a.json", "list", "--json"])
        .run();
    let time = out.server("time");
    assert_eq!(time["status"], "cached", "answered from up's entry\n{out}");
    assert!(time["tokens"].as_u64().unwrap() > 0, "{out}");
    assert!(counts.exists(), "list counted and cached them");
}

#[test]
fn results_are_budgeted_only_when_asked_and_read_on_behind_the_front_key() {
    let cmd = project(&[]).trusted_overrides(
        r#"{"version": 1, "stacks": {"a": {"fault": {"max_output_tokens": {"echo": 60}}}}}"#,
    );
    config(&cmd, json!({"fault": fault(&[])}));
    let long = "a few words of an echo ".repeat(40);

    // Off by default: results pass whole, no read route, none in the spec.
    let front = launch(&cmd);
    let whole = front.post("fault/huge", json!({"bytes": 40_000}));
    assert_eq!(whole.status, 200, "{}", whole.body);
    assert_eq!(whole.body.as_str().map(str::len), Some(40_000));
    assert!(whole.headers.get("x-mcp-launch-handle").is_none());
    let echoed = front.post("fault/echo", json!({"message": long}));
    assert_eq!(echoed.body, json!(long), "the tool's own budget too");
    assert!(!paths(&front.spec()).contains("/read_output"));
    let refused = front.post("read_output", json!({"handle": "h_0"}));
    assert_eq!(refused.status, 405, "{}", refused.body);
    front.stop();

    // Asked: cut with the envelope, the handle named in a header too, read on through the
    // front with its key; the route is in the spec.
    let front = launch_with(&cmd, &["--max-output-tokens", "500"]);
    let cut = front.post("fault/huge", json!({"bytes": 40_000}));
    assert_eq!(cut.status, 200, "{}", cut.body);
    let parts = cut.body.as_array().expect("the cut text and the envelope");
    let kept = parts[0].as_str().unwrap_or_default();
    assert!(
        !kept.is_empty() && kept.len() < 5_000,
        "{} bytes kept",
        kept.len()
    );
    let envelope = parts[1].as_str().unwrap_or_default();
    let handle = cut.headers["x-mcp-launch-handle"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        handle.starts_with("h_") && envelope.contains(&handle),
        "{envelope}"
    );
    let read = front.post("read_output", json!({"handle": handle, "grep": "xyz0123"}));
    assert_eq!(read.status, 200, "{}", read.body);
    assert!(read.body.to_string().contains("xyz0123"), "{}", read.body);
    let gone = front.post(
        "read_output",
        json!({"handle": "h_000000000000000000000000"}),
    );
    error_of(&gone, 404, "unknown_handle");
    let wrong = front.post("read_output", json!({"offset": 3}));
    error_of(&wrong, 422, "invalid_read");

    // The project's budget for echo (60 tokens) binds it, under the run's 500.
    let echoed = front.post("fault/echo", json!({"message": long}));
    assert!(
        echoed.headers.get("x-mcp-launch-handle").is_some(),
        "{}",
        echoed.body
    );

    let spec = front.spec();
    let operation = &spec["paths"]["/read_output"]["post"];
    assert_eq!(operation["operationId"], "read_output", "{spec}");
    assert_valid_openapi(&cmd, &spec);

    // The handles belong to the front's key: the user's own CLI scope does not read them.
    let mine = cmd
        .cmd()
        .args(["output", &handle, "--json"])
        .status(2)
        .run();
    assert_eq!(mine.error()["type"], "unknown_handle", "{mine}");
    front.stop();
}
