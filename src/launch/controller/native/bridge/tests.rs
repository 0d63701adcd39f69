//! The bridge against real servers (the fault server and server-everything) over real HTTP.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::process::live_members;

const KEY: &str = "internal-test-key";

fn entry(name: &str, command: &str, args: Vec<String>) -> ServerEntry {
    ServerEntry::stdio("test", name, command, args)
}

fn manifest_path(relative: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    assert!(path.exists(), "{} is missing", path.display());
    path.display().to_string()
}

fn fault(flags: &[&str]) -> ServerEntry {
    let mut args = vec![manifest_path("tests/fixtures/fault_server.py")];
    args.extend(flags.iter().map(|f| f.to_string()));
    entry("fault", "python3", args)
}

fn everything() -> ServerEntry {
    let bin = manifest_path(".deps/npm/node_modules/.bin/mcp-server-everything");
    entry("everything", &bin, Vec::new())
}

/// The server's tools, listed live (what the preflight hands the bridge).
async fn listed_tools(entry: &ServerEntry) -> Vec<Value> {
    let session = crate::catalog::connect(entry, &ConnectOptions::default())
        .await
        .expect("the test server starts");
    let tools = session.list_tools(Duration::from_secs(20)).await;
    session.close().await;
    tools.expect("the test server lists its tools").tools
}

fn server(entry: ServerEntry, tools: Vec<Value>) -> BridgeServer {
    BridgeServer {
        name: entry.name.clone(),
        document: json!({"openapi": "3.1.0", "info": {"title": entry.name}, "paths": {}}),
        entry,
        tools,
        session: None,
    }
}

/// A bridge serving on a random port, and a client.
struct Running {
    url: String,
    bridge: Bridge,
    http: reqwest::Client,
    served: JoinHandle<std::io::Result<()>>,
}

impl Running {
    /// Lists each server's tools, then serves them with `call_timeout`.
    async fn start(entries: Vec<ServerEntry>, call_timeout: Duration) -> Running {
        let mut servers = Vec::new();
        for entry in entries {
            let tools = listed_tools(&entry).await;
            servers.push(server(entry, tools));
        }
        Running::serve(servers, call_timeout).await
    }

    async fn serve(servers: Vec<BridgeServer>, call_timeout: Duration) -> Running {
        let config = BridgeConfig {
            key: KEY.into(),
            call_timeout,
            connect: ConnectOptions::default(),
            outputs: None,
            login: Default::default(),
        };
        let bridge = Bridge::new(servers, config);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let served = tokio::spawn(bridge.clone().serve(listener, CancellationToken::new()));
        Running {
            url,
            bridge,
            http: reqwest::Client::new(),
            served,
        }
    }

    /// `POST path` with the key and `body`; the status, the JSON answer and `Retry-After`.
    async fn post(&self, path: &str, body: &str) -> (u16, Value, Option<String>) {
        let response = self
            .http
            .post(format!("{}{path}", self.url))
            .bearer_auth(KEY)
            .body(body.to_string())
            .send()
            .await
            .expect("the bridge answers");
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let json = response.json().await.expect("a JSON answer");
        (status, json, retry_after)
    }

    async fn call(&self, path: &str, arguments: Value) -> (u16, Value) {
        let (status, body, _) = self.post(path, &arguments.to_string()).await;
        (status, body)
    }

    async fn get(&self, path: &str, key: Option<&str>) -> reqwest::Response {
        let mut request = self.http.get(format!("{}{path}", self.url));
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        request.send().await.expect("the bridge answers")
    }

    fn status(&self, name: &str) -> ServerStatus {
        self.bridge
            .server_status()
            .into_iter()
            .find(|s| s.name == name)
            .expect("a known server")
    }

    async fn stop(self) {
        self.bridge.shutdown().await;
        let served = tokio::time::timeout(Duration::from_secs(10), self.served).await;
        served.expect("serve ends").unwrap().unwrap();
    }
}

const LONG: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_results_map_to_json() {
    let bridge = Running::start(vec![everything()], LONG).await;
    let echo = bridge
        .call("/everything/echo", json!({"message": "hi"}))
        .await;
    assert_eq!(echo, (200, json!("Echo: hi")));
    // Integers stay integers (mcpo turns every `number` into a float).
    let sum = bridge
        .call("/everything/get-sum", json!({"a": 2, "b": 3}))
        .await;
    assert_eq!(sum, (200, json!("The sum of 2 and 3 is 5.")));
    // structuredContent is the body, not the text that repeats it.
    let (status, weather) = bridge
        .call(
            "/everything/get-structured-content",
            json!({"location": "Chicago"}),
        )
        .await;
    assert_eq!(status, 200);
    assert!(weather["temperature"].is_number(), "{weather}");
    assert!(weather["conditions"].is_string(), "{weather}");
    bridge.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn images_resource_links_and_embedded_resources_stay_typed() {
    let bridge = Running::start(vec![everything()], LONG).await;
    let (status, image) = bridge.call("/everything/get-tiny-image", json!({})).await;
    assert_eq!(status, 200);
    let image = image
        .as_array()
        .and_then(|items| items.iter().find(|i| i["type"] == "image"))
        .unwrap_or_else(|| panic!("an image item in {image}"));
    assert_eq!(image["mimeType"], "image/png");
    assert!(image["data"].as_str().is_some_and(|d| d.len() > 100));

    let (status, links) = bridge
        .call("/everything/get-resource-links", json!({"count": 2}))
        .await;
    assert_eq!(status, 200);
    let links: Vec<&Value> = links
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == "resource_link")
        .collect();
    assert_eq!(links.len(), 2, "resource links are kept");
    assert!(links[0]["uri"]
        .as_str()
        .is_some_and(|u| u.starts_with("demo://")));

    let (status, reference) = bridge
        .call("/everything/get-resource-reference", json!({}))
        .await;
    assert_eq!(status, 200);
    let embedded = reference
        .as_array()
        .and_then(|items| items.iter().find(|i| i["type"] == "resource"))
        .unwrap_or_else(|| panic!("an embedded resource in {reference}"));
    assert!(embedded["resource"]["uri"].is_string());
    bridge.stop().await;
}

#[tokio::test]
async fn numbers_reach_the_server_exactly_as_sent() {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools.json");
    let record = json!([{"name": "record", "inputSchema": {"type": "object", "properties": {
        "a": {"type": "number"}, "b": {"type": "number"}, "c": {"type": "number"}}}}]);
    std::fs::write(&tools, record.to_string()).unwrap();
    let flags = ["--tools-file", tools.to_str().unwrap()];
    let bridge = Running::start(vec![fault(&flags)], LONG).await;
    let (status, text, _) = bridge
        .post(
            "/fault/record",
            r#"{"a": 2, "b": 9007199254740993, "c": 0.5}"#,
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        text,
        r#"record called with {"a": 2, "b": 9007199254740993, "c": 0.5}"#
    );
    bridge.stop().await;
}

#[tokio::test]
async fn invalid_arguments_are_refused_before_the_call() {
    let bridge = Running::start(vec![fault(&[])], LONG).await;
    let (status, body) = bridge.call("/fault/add", json!({"a": "x"})).await;
    assert_eq!(status, 422, "{body}");
    let error = &body["error"];
    assert_eq!(error["type"], "invalid_arguments");
    let violations: Vec<&str> = error["violations"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(violations
        .iter()
        .any(|v| v.contains("\"b\" is a required property")));
    assert!(violations.iter().any(|v| v.starts_with("at /a:")));
    assert!(error["expected"]
        .as_str()
        .unwrap()
        .contains("a: integer (required) — First addend"));

    let (status, body, _) = bridge.post("/fault/echo", "[1]").await;
    assert_eq!(
        (status, &body["error"]["type"]),
        (422, &json!("invalid_arguments"))
    );
    let (status, body, _) = bridge.post("/fault/echo", "{\"message\": ").await;
    assert_eq!(
        (status, &body["error"]["type"]),
        (400, &json!("invalid_json"))
    );
    // An empty body is `{}`: accepted by a tool without parameters, refused by echo.
    assert_eq!(bridge.post("/fault/fail", "").await.0, 424);
    assert_eq!(bridge.post("/fault/echo", "").await.0, 422);
    bridge.stop().await;
}

#[tokio::test]
async fn unknown_routes_get_json_404s() {
    let bridge = Running::start(vec![fault(&[])], LONG).await;
    let (status, body) = bridge.call("/fault/ecko", json!({})).await;
    assert_eq!(status, 404);
    assert_eq!(body["error"]["type"], "unknown_tool");
    assert!(body["error"]["help"].as_str().unwrap().contains("`echo`"));
    let (status, body) = bridge.call("/nope/echo", json!({})).await;
    assert_eq!(
        (status, &body["error"]["type"]),
        (404, &json!("unknown_server"))
    );
    assert!(body["error"]["help"].as_str().unwrap().contains("`fault`"));
    let wrong_method = bridge.get("/fault/echo", Some(KEY)).await;
    assert_eq!(wrong_method.status().as_u16(), 405);
    assert_eq!(wrong_method.headers()["allow"], "POST");
    assert_eq!(
        bridge.get("/elsewhere", Some(KEY)).await.status().as_u16(),
        404
    );
    bridge.stop().await;
}

#[tokio::test]
async fn every_route_needs_the_key() {
    let bridge = Running::start(vec![fault(&[])], LONG).await;
    for key in [None, Some("wrong"), Some("")] {
        let response = bridge.get("/openapi.json", key).await;
        assert_eq!(response.status().as_u16(), 401, "{key:?}");
        assert_eq!(response.headers()["www-authenticate"], "Bearer");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["type"], "unauthorized");
    }
    let call = bridge
        .http
        .post(format!("{}/fault/echo", bridge.url))
        .header("x-api-key", KEY)
        .body(r#"{"message": "x"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(call.status().as_u16(), 401, "only the Bearer header counts");
    bridge.stop().await;
}

#[tokio::test]
async fn documents_and_docs_pages_are_served() {
    let bridge = Running::start(vec![fault(&[])], LONG).await;
    let root: Value = bridge
        .get("/openapi.json", Some(KEY))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(root["paths"], json!({}));
    assert!(root["info"]["description"]
        .as_str()
        .unwrap()
        .contains("(/fault/docs)"));
    let document: Value = bridge
        .get("/fault/openapi.json", Some(KEY))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        document["info"]["title"], "fault",
        "the given document, as is"
    );
    let docs = bridge.get("/fault/docs", Some(KEY)).await;
    assert!(docs.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    let page = docs.text().await.unwrap();
    assert!(page.contains("href=\"openapi.json\""), "{page}");
    assert!(page.contains("POST /fault/echo"), "{page}");
    assert!(!page.contains("http"), "no external assets: {page}");
    let index = bridge.get("/docs", Some(KEY)).await.text().await.unwrap();
    assert!(index.contains("href=\"fault/docs\""), "{index}");
    bridge.stop().await;
}

#[tokio::test]
async fn a_tool_error_is_a_424_with_its_message_and_result() {
    let bridge = Running::start(vec![fault(&[])], LONG).await;
    let (status, body) = bridge.call("/fault/fail", json!({})).await;
    assert_eq!(status, 424, "a tool's own failure is no server error");
    assert_eq!(body["error"]["type"], "tool_error");
    assert_eq!(body["error"]["message"], "deliberate failure");
    assert_eq!(body["result"]["isError"], true);
    assert_eq!(bridge.status("fault").state, ServerState::Up);
    bridge.stop().await;
}

#[tokio::test]
async fn a_hung_call_times_out_and_the_session_lives_on() {
    let bridge = Running::start(vec![fault(&[])], Duration::from_millis(500)).await;
    let (status, body) = bridge.call("/fault/hang", json!({})).await;
    assert_eq!(status, 504, "{body}");
    assert_eq!(body["error"]["type"], "timeout");
    assert!(body["error"]["help"]
        .as_str()
        .unwrap()
        .contains(CALL_TIMEOUT_ENV));
    let echo = bridge
        .call("/fault/echo", json!({"message": "still here"}))
        .await;
    assert_eq!(echo, (200, json!("still here")));
    let status = bridge.status("fault");
    assert_eq!((status.state, status.restarts), (ServerState::Up, 0));
    bridge.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_is_a_502_then_one_restart_after_the_backoff() {
    let bridge = Running::start(vec![fault(&[])], LONG).await;
    assert!(bridge.bridge.connect_all().await[0].1.is_ok());
    let first_pgid = bridge.status("fault").pgid.expect("a stdio server");

    let (status, body) = bridge.call("/fault/crash", json!({})).await;
    assert_eq!(status, 502, "{body}");
    let error = &body["error"];
    assert_eq!(error["type"], "upstream_unavailable");
    assert_eq!(error["cause"], "server_exited");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("exited with code 7"),
        "{error}"
    );
    // The server's stderr stays with the operator: the client gets an incident id.
    assert!(
        !error.to_string().contains("boom: crashing mid-call"),
        "{error}"
    );
    assert!(
        error["incident"].as_str().unwrap().starts_with("i-"),
        "{error}"
    );

    // Backing off: refused at once, with the time of the next attempt.
    let (status, body, retry_after) = bridge.post("/fault/echo", r#"{"message": "x"}"#).await;
    assert_eq!(status, 502);
    assert!(
        body["error"]["help"].as_str().unwrap().contains("UTC (in "),
        "{body}"
    );
    assert_eq!(retry_after.as_deref(), Some("1"));
    let down = bridge.status("fault");
    assert_eq!(down.state, ServerState::Down);
    let wait = down.next_attempt.expect("a scheduled attempt");
    assert!(wait <= Duration::from_secs(1));
    assert!(down.last_error.unwrap().contains("exited with code 7"));

    // After the backoff (a deadline the bridge states, not an event to order), concurrent
    // callers share one restart.
    tokio::time::sleep(wait + Duration::from_millis(100)).await;
    let calls = (0..20).map(|i| bridge.call("/fault/echo", json!({"message": format!("m{i}")})));
    for (i, answer) in futures_util::future::join_all(calls)
        .await
        .into_iter()
        .enumerate()
    {
        assert_eq!(answer, (200, json!(format!("m{i}"))));
    }
    let up = bridge.status("fault");
    assert_eq!((up.state, up.restarts), (ServerState::Up, 1));
    assert_ne!(up.pgid, Some(first_pgid));
    assert!(
        live_members(first_pgid).is_empty(),
        "the crashed group is gone"
    );
    bridge.stop().await;
}

#[tokio::test]
async fn a_server_that_cannot_start_stays_down_and_the_others_serve() {
    let broken = {
        let mut e = fault(&["--crash-at-start", "no API token"]);
        e.name = "broken".into();
        e
    };
    let echo = json!({"name": "echo", "inputSchema": {"type": "object"}});
    let servers = vec![
        server(fault(&[]), listed_tools(&fault(&[])).await),
        server(broken, vec![echo]),
    ];
    let bridge = Running::serve(servers, LONG).await;
    let connected = bridge.bridge.connect_all().await;
    assert!(connected[0].1.is_ok());
    let reason = connected[1].1.as_ref().unwrap_err().to_string();
    assert!(reason.contains("no API token"), "{reason}");
    assert!(bridge.call("/fault/echo", json!({"message": "ok"})).await.0 == 200);
    let (status, body) = bridge.call("/broken/echo", json!({})).await;
    assert_eq!(status, 502);
    assert!(!body.to_string().contains("fatal: giving up"), "{body}");
    assert!(body["error"]["incident"].is_string(), "{body}");
    let down = bridge.status("broken");
    assert_eq!((down.state, down.pgid), (ServerState::Down, None));
    bridge.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_calls_get_their_own_answers() {
    let bridge = Running::start(vec![fault(&[])], LONG).await;
    let calls = (0..200).map(|i| {
        let message = format!("message {i} {}", "x".repeat(i));
        let bridge = &bridge;
        async move {
            let answer = bridge
                .call("/fault/echo", json!({"message": message}))
                .await;
            (message, answer)
        }
    });
    let answers = futures_util::future::join_all(calls).await;
    for (message, answer) in answers {
        assert_eq!(answer, (200, json!(message)), "no lost or crossed answers");
    }
    assert_eq!(bridge.status("fault").restarts, 0);
    bridge.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_calls_and_leaves_no_server_process() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("received.jsonl");
    let fault = fault(&["--log", log.to_str().unwrap()]);
    let bridge = Running::start(vec![fault, everything()], LONG).await;
    let connected = bridge.bridge.connect_all().await;
    assert!(connected.iter().all(|(_, r)| r.is_ok()), "{connected:?}");
    let pgids: Vec<i32> = bridge
        .bridge
        .server_status()
        .iter()
        .filter_map(|s| s.pgid)
        .collect();
    assert_eq!(pgids.len(), 2);
    let hung = {
        let http = bridge.http.clone();
        let url = format!("{}/fault/hang", bridge.url);
        tokio::spawn(async move { http.post(url).bearer_auth(KEY).send().await })
    };
    // Stop only once the call is in flight: the server has received it.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(&log).is_ok_and(|t| t.contains("\"hang\"")) {
        assert!(
            std::time::Instant::now() < deadline,
            "the hang never reached the server"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    bridge.stop().await;
    let hung = hung
        .await
        .unwrap()
        .expect("an answer, not a dropped connection");
    assert_eq!(hung.status().as_u16(), 503);
    for pgid in pgids {
        assert!(
            live_members(pgid).is_empty(),
            "group {pgid} outlived the bridge"
        );
    }
}

#[test]
fn call_timeout_is_a_positive_duration() {
    assert_eq!(CALL_TIMEOUT.parse("2.5"), Ok(Duration::from_millis(2500)));
    assert_eq!(CALL_TIMEOUT.parse(" 600 "), Ok(Duration::from_secs(600)));
    assert_eq!(CALL_TIMEOUT.parse("10m"), Ok(Duration::from_secs(600)));
    for bad in ["0", "-1", "NaN", "inf", "soon", "", "1e20"] {
        assert!(CALL_TIMEOUT.parse(bad).is_err(), "{bad}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adopted_session_serves_without_a_second_start() {
    let entry = fault(&[]);
    let session = crate::catalog::connect(&entry, &ConnectOptions::default())
        .await
        .expect("the fault server starts");
    let adopted_pgid = session.pgid().expect("a stdio server");
    let tools = session.list_tools(LONG).await.unwrap().tools;
    let mut served = server(entry, tools);
    served.session = Some(session);
    let bridge = Running::serve(vec![served], LONG).await;
    let up = bridge.status("fault");
    assert_eq!(
        (up.state, up.restarts, up.pgid),
        (ServerState::Up, 0, Some(adopted_pgid))
    );

    let (status, body) = bridge.call("/fault/echo", json!({"message": "hi"})).await;
    assert_eq!((status, body), (200, json!("hi")));
    assert_eq!(
        bridge.status("fault").pgid,
        Some(adopted_pgid),
        "no second start"
    );
    bridge.stop().await;
    assert!(
        live_members(adopted_pgid).is_empty(),
        "shutdown ends the adopted server"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replaced_tools_change_the_routes_and_the_document() {
    let entry = fault(&[]);
    let mut tools = listed_tools(&entry).await;
    let echo = tools
        .iter()
        .position(|t| t["name"] == "echo")
        .expect("the fault server has echo");
    let echo = tools.remove(echo);
    // Started as if from an index that does not know echo yet.
    let bridge = Running::serve(vec![server(entry, tools.clone())], LONG).await;
    let (status, body) = bridge.call("/fault/echo", json!({"message": "hi"})).await;
    assert_eq!(
        (status, &body["error"]["type"]),
        (404, &json!("unknown_tool")),
        "{body}"
    );

    let mut changes = bridge.bridge.changes();
    let (_, listed) = bridge
        .bridge
        .list_live_tools("fault", LONG)
        .await
        .expect("the server lists its tools live");
    assert!(listed.tools.contains(&echo), "the live list has echo");
    changes.changed().await.expect("the connect is announced");
    assert_eq!(bridge.status("fault").state, ServerState::Up);

    let document = json!({"openapi": "3.1.0", "info": {"title": "new"}, "paths": {}});
    assert!(bridge
        .bridge
        .replace_tools("fault", listed.tools, &document));
    assert!(!bridge.bridge.replace_tools("nobody", Vec::new(), &document));
    let (status, body) = bridge.call("/fault/echo", json!({"message": "hi"})).await;
    assert_eq!((status, body), (200, json!("hi")));
    let served: Value = bridge
        .get("/fault/openapi.json", Some(KEY))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(served, document);
    bridge.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_its_server_runs_only_as_a_task_answers_its_result() {
    // server-everything's simulate-research-query has `taskSupport: "required"`: called
    // plainly it answers -32601; the bridge calls it as a task and waits for the report.
    let bridge = Running::start(vec![everything()], LONG).await;
    let (status, body) = bridge
        .call(
            "/everything/simulate-research-query",
            json!({"topic": "bridges"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.to_string().contains("Research Report: bridges"),
        "{body}"
    );
    bridge.stop().await;
}
