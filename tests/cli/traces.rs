//! Traces (`--otlp`, issue 28): the gateway's spans reach an OTLP/HTTP receiver here in the
//! test, which decodes them with the official OpenTelemetry protobuf definitions
//! (`opentelemetry-proto`); the client is the official Python SDK sending W3C trace context,
//! the upstream the fault server, whose log shows the `_meta` it got. Checked: client →
//! gateway → upstream parentage, the semantic conventions' attributes, and nothing secret.
//! The tests that need the exporter need the cargo feature `otel` (default); built without it,
//! asking for traces is an error.
#![cfg_attr(not(feature = "otel"), allow(dead_code, unused_imports))]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::{json, Value};

use crate::serve::{drive, eventually, http_gateway, stdio_gateway};
use crate::util::*;

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

fn traceparent() -> String {
    format!("00-{TRACE}-{CLIENT_SPAN}-01")
}

/// One span as received, with its resource's `service.name`.
#[derive(Clone, Debug)]
struct Received {
    service: String,
    span: Span,
}

/// An OTLP/HTTP receiver on a loopback port: every `POST /v1/traces` decoded and kept.
struct Receiver {
    port: u16,
    spans: Arc<Mutex<Vec<Received>>>,
}

impl Receiver {
    fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the receiver");
        let port = listener.local_addr().unwrap().port();
        let spans = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&spans);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let kept = Arc::clone(&kept);
                std::thread::spawn(move || serve_exports(stream, &kept));
            }
        });
        Receiver { port, spans }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn spans(&self) -> Vec<Received> {
        self.spans.lock().unwrap().clone()
    }

    /// The span named `name`, once it has arrived (10 s at most).
    fn span_named(&self, name: &str) -> Received {
        let mut found = None;
        eventually(10, &format!("the span {name:?} is exported"), || {
            found = self.spans().into_iter().find(|r| r.span.name == name);
            found.is_some()
        });
        found.unwrap()
    }
}

/// Answers each export on one connection (keep-alive), keeping its spans.
fn serve_exports(stream: TcpStream, kept: &Mutex<Vec<Received>>) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone the stream"));
    let mut writer = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        assert!(
            line.starts_with("POST /v1/traces "),
            "unexpected request {line:?}"
        );
        let mut length = 0;
        loop {
            let mut header = String::new();
            reader.read_line(&mut header).expect("read a header");
            if header.trim().is_empty() {
                break;
            }
            let (name, value) = header.split_once(':').expect("a header line");
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().expect("a length");
            }
            if name.eq_ignore_ascii_case("content-type") {
                assert_eq!(value.trim(), "application/x-protobuf");
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).expect("read the body");
        let export = ExportTraceServiceRequest::decode(&body[..]).expect("a protobuf export");
        for resource in export.resource_spans {
            let attributes = resource.resource.map(|r| r.attributes).unwrap_or_default();
            let service = text(&attributes, "service.name").unwrap_or_default();
            for scope in resource.scope_spans {
                for span in scope.spans {
                    kept.lock().unwrap().push(Received {
                        service: service.clone(),
                        span,
                    });
                }
            }
        }
        let answer =
            "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

fn text(attributes: &[KeyValue], key: &str) -> Option<String> {
    let value = attributes.iter().find(|kv| kv.key == key)?.value.as_ref()?;
    match value.value.as_ref()? {
        Any::StringValue(s) => Some(s.clone()),
        other => Some(format!("{other:?}")),
    }
}

fn attribute(span: &Span, key: &str) -> String {
    text(&span.attributes, key)
        .unwrap_or_else(|| panic!("span {:?} has no {key}: {:?}", span.name, span.attributes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A project fronting the fault server, which logs what it receives in `fault.log`.
fn project() -> Cmd {
    let cmd = Cmd::new();
    let log = cmd.path("fault.log").display().to_string();
    cmd.config_json(json!({"mcpServers": {"fault": fault(&["--log", &log])}}))
        // Spans leave within 100 ms rather than the default 5 s.
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
}

/// The `_meta` the fault server got with its (only) `tools/call`.
fn upstream_meta(cmd: &Cmd) -> Value {
    let log = read_log(&cmd.path("fault.log"));
    let calls = logged(&log, "tools/call");
    assert_eq!(calls.len(), 1, "{log:?}");
    calls[0]["params"]["_meta"].clone()
}

/// The Python client's `traced` call through the HTTP gateway at `url`, with `extra` flags.
fn traced_call(cmd: &Cmd, url: &str, extra: &[&str]) -> Value {
    let tp = traceparent();
    let mut args = vec!["traced", "--http", url, "--traceparent", &tp];
    args.extend(extra);
    drive(cmd.dir(), &args)
}

/// The gateway's span (server) and the upstream call's (client), with the checks both
/// transports share: one trace from the client's span to the upstream's `_meta`.
fn check_the_chain(cmd: &Cmd, receiver: &Receiver, transport: &str) -> (Span, Span) {
    let gateway = receiver.span_named("tools/call fault__echo");
    let upstream = receiver.span_named("tools/call echo");
    let (server, client) = (&gateway.span, &upstream.span);
    assert_eq!(gateway.service, "mcp-launch");
    assert_eq!(
        hex(&server.trace_id),
        TRACE,
        "the gateway joins the client's trace"
    );
    assert_eq!(
        hex(&server.parent_span_id),
        CLIENT_SPAN,
        "the client's span is its parent"
    );
    assert_eq!(server.kind, 2, "SERVER");
    assert_eq!(attribute(server, "mcp.method.name"), "tools/call");
    assert_eq!(attribute(server, "gen_ai.tool.name"), "fault__echo");
    assert_eq!(attribute(server, "gen_ai.operation.name"), "execute_tool");
    assert_eq!(attribute(server, "network.transport"), transport);
    assert!(!attribute(server, "jsonrpc.request.id").is_empty());

    assert_eq!(hex(&client.trace_id), TRACE);
    assert_eq!(
        hex(&client.parent_span_id),
        hex(&server.span_id),
        "the upstream call is the gateway span's child"
    );
    assert_eq!(client.kind, 3, "CLIENT");
    assert_eq!(attribute(client, "gen_ai.tool.name"), "echo");
    assert_eq!(attribute(client, "mcp_launch.server"), "fault");
    assert_eq!(attribute(client, "network.transport"), "pipe");

    let meta = upstream_meta(cmd);
    assert_eq!(
        meta["traceparent"],
        format!("00-{TRACE}-{}-01", hex(&client.span_id)),
        "the upstream's parent is our client span: {meta}"
    );
    // Nothing the call carried (its arguments, "traced") is an attribute.
    for received in receiver.spans() {
        let values = format!("{:?}", received.span.attributes);
        assert!(!values.contains("\"traced\""), "{values}");
    }
    (server.clone(), client.clone())
}

#[cfg(feature = "otel")]
#[test]
fn a_call_through_the_http_gateway_continues_the_clients_trace_to_the_upstream() {
    let receiver = Receiver::start();
    let cmd = project();
    let (_gateway, url) = http_gateway(&cmd, &["--otlp", &receiver.url()]);
    let tp = traceparent();
    let out = drive(cmd.dir(), &["traced", "--http", &url, "--traceparent", &tp]);
    assert_eq!(out["echo"], json!(["traced"]), "{out}");
    let (server, _) = check_the_chain(&cmd, &receiver, "tcp");
    let session = attribute(&server, "mcp.session.id");
    assert!(
        session.len() == 16 && session.chars().all(|c| c.is_ascii_hexdigit()),
        "the session id is exported as a digest: {session}"
    );
    assert_eq!(upstream_meta(&cmd)["tracestate"], "client=1");
    // Every request has its span, not only calls.
    let listed = receiver.span_named("tools/list").span;
    assert_eq!(listed.kind, 2, "SERVER");
    assert_eq!(attribute(&listed, "mcp.method.name"), "tools/list");
    assert_eq!(attribute(&listed, "network.transport"), "tcp");
    assert_eq!(attribute(&listed, "mcp.session.id"), session);
}

#[cfg(feature = "otel")]
#[test]
fn the_http_traceparent_header_is_taken_when_meta_carries_none() {
    let receiver = Receiver::start();
    let cmd = project();
    let (_gateway, url) = http_gateway(&cmd, &["--otlp", &receiver.url()]);
    let out = traced_call(&cmd, &url, &["--trace-header"]);
    assert_eq!(out["echo"], json!(["traced"]), "{out}");
    check_the_chain(&cmd, &receiver, "tcp");
}

#[cfg(feature = "otel")]
#[test]
fn over_stdio_the_variables_turn_traces_on_and_the_last_spans_leave_at_exit() {
    let receiver = Receiver::start();
    let cmd = Cmd::new();
    let log = cmd.path("fault.log").display().to_string();
    let cmd = cmd.config_json(json!({"mcpServers": {"fault": fault(&["--log", &log])}}));
    let tp = traceparent();
    // The SDK passes a stdio server only a default environment: `env` sets the variables.
    // No schedule delay: only the flush when the gateway exits sends the spans in time.
    let mut gateway = stdio_gateway(cmd.dir(), &[]);
    let variables = [
        "env".to_string(),
        format!("OTEL_EXPORTER_OTLP_ENDPOINT={}", receiver.url()),
        "OTEL_SERVICE_NAME=gateway-under-test".into(),
    ];
    gateway.splice(1..1, variables);
    let mut command = Command::new(sdk_python());
    command
        .arg(manifest_dir().join("tests/fixtures/gateway_client.py"))
        .args(["traced", "--traceparent", &tp])
        .args(gateway);
    let out = client_json(command, cmd.dir(), "the Python client");
    assert_eq!(out["echo"], json!(["traced"]), "{out}");
    let (server, _) = check_the_chain_named(&cmd, &receiver);
    assert_eq!(attribute(&server, "network.transport"), "pipe");
}

/// [`check_the_chain`] for a gateway that names itself by `OTEL_SERVICE_NAME`.
fn check_the_chain_named(cmd: &Cmd, receiver: &Receiver) -> (Span, Span) {
    let gateway = receiver.span_named("tools/call fault__echo");
    assert_eq!(gateway.service, "gateway-under-test");
    let (server, client) = (gateway.span, receiver.span_named("tools/call echo").span);
    assert_eq!(hex(&server.parent_span_id), CLIENT_SPAN);
    assert_eq!(hex(&client.parent_span_id), hex(&server.span_id));
    let meta = upstream_meta(cmd);
    assert_eq!(
        meta["traceparent"],
        format!("00-{TRACE}-{}-01", hex(&client.span_id))
    );
    (server, client)
}

/// Towards an HTTP upstream the trace context travels in the W3C headers: the upstream (a
/// server on the official Python SDK, which reports the headers its call came with) gets a
/// `traceparent` whose parent is our client span.
#[cfg(feature = "otel")]
#[test]
fn an_http_upstream_gets_the_trace_context_in_its_request_headers() {
    let receiver = Receiver::start();
    let upstream = crate::remote_2026::Fixture::serve("header_server.py");
    let cmd = Cmd::new()
        .config_json(json!({"mcpServers": {"remote": {"type": "http", "url": upstream.url()}}}))
        .env("OTEL_BSP_SCHEDULE_DELAY", "100");
    let (_gateway, url) = http_gateway(&cmd, &["--otlp", &receiver.url()]);
    let out = traced_call(&cmd, &url, &["--call", "remote__trace_headers"]);
    let seen: Value = serde_json::from_str(out["echo"][0].as_str().unwrap_or("null"))
        .unwrap_or_else(|e| panic!("the upstream's answer is its headers ({e}): {out}"));
    let client = receiver.span_named("tools/call trace_headers").span;
    assert_eq!(client.kind, 3, "CLIENT");
    assert_eq!(attribute(&client, "network.transport"), "tcp");
    assert_eq!(
        seen["traceparent"],
        format!("00-{TRACE}-{}-01", hex(&client.span_id)),
        "the upstream's parent is our client span: {seen}"
    );
    assert_eq!(seen["tracestate"], "client=1", "{seen}");
    let gateway = receiver.span_named("tools/call remote__trace_headers").span;
    assert_eq!(hex(&client.parent_span_id), hex(&gateway.span_id));
    assert_eq!(hex(&gateway.parent_span_id), CLIENT_SPAN);
}

/// A tool's error (`isError`) marks both spans failed: `error.type = tool_error`, status
/// `ERROR` with its description; parentage as for a call that succeeds.
#[cfg(feature = "otel")]
#[test]
fn a_tools_error_marks_the_gateway_and_upstream_spans_failed() {
    let receiver = Receiver::start();
    let cmd = project();
    let (_gateway, url) = http_gateway(&cmd, &["--otlp", &receiver.url()]);
    let out = traced_call(&cmd, &url, &["--call", "fault__fail"]);
    assert_eq!(out["echo"], json!(["deliberate failure"]), "{out}");
    let gateway = receiver.span_named("tools/call fault__fail").span;
    let upstream = receiver.span_named("tools/call fail").span;
    assert_eq!(hex(&gateway.parent_span_id), CLIENT_SPAN);
    assert_eq!(hex(&upstream.parent_span_id), hex(&gateway.span_id));
    for span in [&gateway, &upstream] {
        assert_eq!(attribute(span, "error.type"), "tool_error", "{}", span.name);
        let status = span.status.clone().unwrap_or_default();
        assert_eq!(status.code, 2, "{}: ERROR, {status:?}", span.name);
        assert_eq!(status.message, "the tool answered with isError");
    }
    let listed = receiver.span_named("tools/list").span;
    assert_eq!(listed.status.unwrap_or_default().code, 0, "UNSET");
    assert!(text(&listed.attributes, "error.type").is_none());
}

#[test]
fn a_bad_otlp_url_is_a_usage_error_naming_what_to_give() {
    Cmd::new()
        .args(["--otlp", "grpc://127.0.0.1:4317", "list"])
        .status(2)
        .stderr_has("--otlp grpc://127.0.0.1:4317")
        .stderr_has("OTEL_EXPORTER_OTLP_ENDPOINT")
        .run();
}

/// Traces off (no `--otlp`, no variables): the client's trace context reaches the upstream
/// as it came, from `_meta` or from the HTTP header (before, the gateway's new request carried
/// none: the upstream's spans began a trace of their own).
#[test]
fn with_traces_off_the_clients_traceparent_reaches_the_upstream_unchanged() {
    let tp = traceparent();
    for header in [false, true] {
        let cmd = project();
        let (_gateway, url) = http_gateway(&cmd, &[]);
        let mut args = vec!["traced", "--http", &url, "--traceparent", &tp];
        if header {
            args.push("--trace-header");
        }
        let out = drive(cmd.dir(), &args);
        assert_eq!(out["echo"], json!(["traced"]), "{out}");
        let meta = upstream_meta(&cmd);
        assert_eq!(meta["traceparent"], tp, "header {header}: {meta}");
        let state = if header {
            Value::Null
        } else {
            json!("client=1")
        };
        assert_eq!(meta["tracestate"], state, "header {header}: {meta}");
    }
}

/// A 2026-07-28 client's task: the call the gateway spawns for it runs in the `tools/call`
/// request's span, so the upstream call is that span's child in the client's trace (before,
/// the request had no span and the upstream call began a trace of its own).
#[cfg(feature = "otel")]
#[test]
fn a_2026_task_call_is_a_child_of_its_requests_span() {
    let receiver = Receiver::start();
    let fixture = manifest_dir().join("tests/fixtures/conformance_server.py");
    let cmd = Cmd::new()
        .config_json(json!({"mcpServers": {
            "conf": {"command": sdk_python(), "args": [fixture.display().to_string()]},
        }}))
        .env("OTEL_BSP_SCHEDULE_DELAY", "100");
    let (_gateway, url) = http_gateway(&cmd, &["--otlp", &receiver.url()]);
    let holds_tasks = r#"{"extensions": {"io.modelcontextprotocol/tasks": {}}}"#;
    let call = json!({"method": "tools/call", "params": {"name": "conf__slow_compute",
        "arguments": {"seconds": 0}, "_meta": {"traceparent": traceparent()}}});
    let transport = ["--url", url.as_str(), "--capabilities", holds_tasks];
    let answers = crate::serve::stateless(cmd.dir(), &transport, json!([call]));
    assert_eq!(answers[0]["result"]["resultType"], "task", "{answers:?}");
    let request = receiver.span_named("tools/call conf__slow_compute").span;
    let upstream = receiver.span_named("tools/call slow_compute").span;
    assert_eq!(hex(&request.trace_id), TRACE);
    assert_eq!(hex(&request.parent_span_id), CLIENT_SPAN);
    assert_eq!(
        hex(&upstream.trace_id),
        TRACE,
        "the task's call joins the trace"
    );
    assert_eq!(
        hex(&upstream.parent_span_id),
        hex(&request.span_id),
        "the task's upstream call is the request span's child"
    );
}

/// Built without the cargo feature `otel`: `--otlp` or the standard variables are refused with
/// what to do, never ignored.
#[cfg(not(feature = "otel"))]
#[test]
fn without_the_otel_feature_asking_for_traces_is_an_error() {
    let said = |cmd: Cmd| {
        cmd.status(2)
            .stderr_has("built without traces (cargo feature `otel`)")
            .stderr_has("rebuild with default features")
            .run();
    };
    said(Cmd::new().args(["--otlp", "http://127.0.0.1:4318", "list"]));
    said(
        Cmd::new()
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
            .args(["list"]),
    );
}
