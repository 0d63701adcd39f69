//! One client's context never answers another's call: server-everything's `get-roots-list`
//! (it asks `roots/list` once and keeps the answer until told the roots changed) called through
//! `mcp-launch serve` by clients with roots of their own — the official Python SDK
//! (`tests/fixtures/context_client.py`) and the raw 2026-07-28 client
//! (`tests/fixtures/stateless_client.py`) — over Streamable HTTP (several sessions on one
//! gateway) and stdio (one client whose roots change). And a server's sampling requests sent on
//! a call's own response stream (server-everything over Streamable HTTP) reach the client whose
//! call it is, while other clients' calls are under way.

use std::path::Path;
use std::process::Command;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};

use crate::remote::RemoteServer;
use crate::serve::{http_gateway, stateless, stdio_gateway, text_of};
use crate::util::*;

/// The roots the SDK clients offer (`file:///NAME`).
const ROOTS: [&str; 4] = ["alpha-root", "beta-root", "first-root", "second-root"];

fn context_client(dir: &Path, args: &[String]) -> Value {
    let mut command = Command::new(sdk_python());
    command
        .arg(manifest_dir().join("tests/fixtures/context_client.py"))
        .args(args);
    client_json(command, dir, "the context client")
}

/// The roots of [`ROOTS`] a text names.
fn roots_in(text: &str) -> Vec<&'static str> {
    ROOTS
        .into_iter()
        .filter(|root| text.contains(&format!("file:///{root}")))
        .collect()
}

/// The root the 2026-07-28 client gives when asked.
const STATELESS_ROOT: &str = "file:///stateless-root";

/// A 2026-07-28 client's call of get-roots-list: the server's request for roots reaches it as
/// an `InputRequiredResult` (it cannot be asked mid-call), and its retry with its own roots is
/// answered with them — never a session's. The text of the final answer.
fn stateless_roots(dir: &Path, transport: &[&str]) -> String {
    let params = json!({"name": "everything__get-roots-list", "arguments": {}});
    let mut retry = params.clone();
    retry["inputResponses"] =
        json!({"r1": {"roots": [{"uri": STATELESS_ROOT, "name": "stateless-root"}]}});
    retry["requestState"] = json!("$state");
    let steps = json!([{"method": "tools/call", "params": params},
        {"method": "tools/call", "params": retry}]);
    let answers = stateless(dir, transport, steps);
    let asked = &answers[0]["result"];
    assert_eq!(asked["resultType"], "input_required", "{answers:?}");
    assert_eq!(
        asked["inputRequests"]["r1"]["method"], "roots/list",
        "{answers:?}"
    );
    let text = text_of(&answers[1]).to_string();
    assert!(
        text.contains(STATELESS_ROOT),
        "the retry is answered with the client's own roots: {answers:?}"
    );
    text
}

#[test]
fn sessions_on_one_http_gateway_see_only_their_own_roots_in_both_eras() {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"everything": everything()}}));
    let dir = cmd.dir().to_path_buf();
    let (running, url) = http_gateway(&cmd, &["--mode", "full"]);
    let seen = context_client(&dir, &["--http".into(), url.clone()]);
    let own = |client: &str| match client {
        "alpha" => vec!["alpha-root"],
        "beta" => vec!["beta-root"],
        _ => vec![],
    };
    for call in seen["interleaved"].as_array().into_iter().flatten() {
        let (client, text) = (
            call[0].as_str().unwrap_or(""),
            call[1].as_str().unwrap_or(""),
        );
        assert_eq!(
            roots_in(text),
            own(client),
            "one after another, {client} sees its own roots: {seen}"
        );
    }
    let concurrent = seen["concurrent"].as_array().cloned().unwrap_or_default();
    assert_eq!(concurrent.len(), 9, "{seen}");
    for call in &concurrent {
        let (client, text) = (
            call[0].as_str().unwrap_or(""),
            call[1].as_str().unwrap_or(""),
        );
        let roots = roots_in(text);
        assert!(
            roots.is_empty() || roots == own(client),
            "at once, {client} sees its own roots or none (a refusal), never another's: {seen}"
        );
    }
    // A 2026 client after them: not the roots of the sessions before it.
    let text = stateless_roots(&dir, &["--url", &url]);
    assert_eq!(roots_in(&text), Vec::<&str>::new(), "{text}");
    kill(Pid::from_raw(running.pid()), Signal::SIGTERM).expect("signal the gateway");
    running.wait();
}

#[test]
fn a_stdio_client_whose_roots_change_is_seen_with_the_new_ones_in_both_eras() {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"everything": everything()}}));
    let dir = cmd.dir().to_path_buf();
    let gateway = stdio_gateway(&dir, &["--mode", "full"]);
    let seen = context_client(&dir, &gateway);
    let first = seen["first"].as_str().unwrap_or("");
    assert_eq!(roots_in(first), ["first-root"], "{seen}");
    let second = seen["second"].as_str().unwrap_or("");
    assert_eq!(
        roots_in(second),
        ["second-root"],
        "the changed roots reach the server: {seen}"
    );
    let mut stdio = vec!["--"];
    stdio.extend(gateway[1..].iter().map(String::as_str));
    let text = stateless_roots(&dir, &stdio);
    assert_eq!(roots_in(&text), Vec::<&str>::new(), "{text}");
}

/// One session's calls of server-everything's `trigger-sampling-request` through `url`, each
/// sampling answered with `sample` after a pause (so the two clients' calls overlap).
fn sampling_client(dir: &Path, url: &str, sample: &str, calls: usize) -> Value {
    let mut command = Command::new(sdk_python());
    command
        .arg(manifest_dir().join("tests/fixtures/input_client.py"))
        .args(["--legacy", "--tool", "everything__trigger-sampling-request"])
        .args(["--args", r#"{"prompt": "say hi"}"#, "--sample", sample])
        .args(["--sample-delay", "0.4", "--calls", &calls.to_string()])
        .args(["--http", url]);
    client_json(command, dir, "the sampling client")
}

/// Two clients sample at once through one gateway in front of an HTTP server: the server
/// sends each sampling request on the response stream of the call it belongs to, so each
/// reaches the client whose call it is — none refused for "calls of several clients", none
/// answered by the other client.
#[test]
fn sampling_requests_of_an_http_server_reach_their_own_callers_while_both_call() {
    let everything = RemoteServer::start(
        "streamableHttp",
        "MCP Streamable HTTP Server listening on port",
    );
    let upstream = format!("http://127.0.0.1:{}/mcp", everything.port);
    let cmd = Cmd::new()
        .config_json(json!({"mcpServers": {"everything": {"type": "http", "url": upstream}}}));
    let (running, url) = http_gateway(&cmd, &["--mode", "full"]);
    let calls = 5;
    let seen: Vec<(&str, Value)> = std::thread::scope(|scope| {
        let started: Vec<_> = ["sample-of-alpha", "sample-of-beta"]
            .into_iter()
            .map(|sample| {
                let (dir, url) = (cmd.dir(), url.as_str());
                scope.spawn(move || (sample, sampling_client(dir, url, sample, calls)))
            })
            .collect();
        started
            .into_iter()
            .map(|t| t.join().expect("client thread"))
            .collect()
    });
    for (sample, seen) in &seen {
        assert_eq!(seen.get("error"), None, "{seen}");
        let asked = seen["asked"].as_array().map_or(0, Vec::len);
        assert_eq!(
            asked, calls,
            "each call's sampling reached {sample}'s client: {seen}"
        );
        let results = seen["results"].as_array().expect("results");
        assert_eq!(results.len(), calls, "{seen}");
        for result in results {
            let text = result.to_string();
            assert!(
                text.contains(sample) && !text.contains("refused") && !text.contains("-32601"),
                "{sample}'s call got its own client's sample: {seen}"
            );
        }
    }
    kill(Pid::from_raw(running.pid()), Signal::SIGTERM).expect("signal the gateway");
    let out = running.wait();
    assert!(
        !out.stderr.contains("refused a server request"),
        "{}",
        out.stderr
    );
}
