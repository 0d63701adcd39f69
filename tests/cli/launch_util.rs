//! Helpers shared by the `up` tests (`launch`, `native`): a project with config files, HTTP
//! to the front, waiting for stacks, and stopping `up` with a check that every process it
//! recorded is gone.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use reqwest::header::{HeaderMap, CONTENT_TYPE};
use serde_json::{json, Value};

use crate::util::{assert_pid_gone, manifest_dir, pid_alive, Cmd, Output, Running};

pub(crate) fn mcpo_bin() -> String {
    let path = manifest_dir().join(".deps/venv-mcpo/bin/mcpo");
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-test-deps.sh",
        path.display()
    );
    path.display().to_string()
}

/// A `Cmd` in a fresh directory with config files and mcpo configured.
pub(crate) fn project(files: &[(&str, Value)]) -> Cmd {
    let mut cmd = Cmd::new().env("MCP_LAUNCH_MCPO", &mcpo_bin());
    for (name, servers) in files {
        cmd = cmd.file(name, &json!({"mcpServers": servers}).to_string());
    }
    cmd
}

/// An HTTP answer: status (0 when the request failed), headers, body as JSON or string.
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Value,
}

/// One HTTP request with a current-thread runtime; `body` is sent as `application/json`.
pub(crate) fn request(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<Vec<u8>>,
) -> Reply {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = reqwest::Client::new();
        let mut req = client
            .request(method.parse().unwrap(), url)
            .timeout(Duration::from_secs(30));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(body) = body {
            req = req.header(CONTENT_TYPE, "application/json").body(body);
        }
        match req.send().await {
            Ok(resp) => {
                let status = resp.status().as_u16();
                let headers = resp.headers().clone();
                let text = resp.text().await.unwrap_or_default();
                Reply {
                    status,
                    headers,
                    body: serde_json::from_str(&text).unwrap_or(Value::String(text)),
                }
            }
            Err(e) => Reply {
                status: 0,
                headers: HeaderMap::new(),
                body: Value::String(e.to_string()),
            },
        }
    })
}

/// One HTTP request with a JSON body: (status, body as JSON or string).
pub(crate) fn http(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> (u16, Value) {
    let reply = request(
        method,
        url,
        headers,
        body.map(|b| b.to_string().into_bytes()),
    );
    (reply.status, reply.body)
}

pub(crate) fn read_state(dir: &Path) -> Value {
    std::fs::read_to_string(dir.join(".mcp-launch/state.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null)
}

/// Waits until the state file lists `count` stacks whose fronts answer `/healthz` with 200.
pub(crate) fn wait_ready(running: &Running, dir: &Path, count: usize) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let state = read_state(dir);
        let stacks = state["stacks"].as_array().cloned().unwrap_or_default();
        if stacks.len() == count
            && stacks.iter().all(|s| {
                let url = format!("http://127.0.0.1:{}/healthz", s["port"]);
                http("GET", &url, &[], None).0 == 200
            })
        {
            return state;
        }
        assert!(
            pid_alive(running.pid()),
            "up exited before {count} stacks were ready; state: {state}"
        );
        assert!(
            Instant::now() < deadline,
            "stacks not ready within 120 s; state: {state}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

pub(crate) fn stack<'a>(state: &'a Value, name: &str) -> &'a Value {
    state["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stack"] == name || s["name"] == name)
        .unwrap_or_else(|| panic!("no stack {name} in {state}"))
}

/// Every process group and pid the state records for its stacks.
pub(crate) fn recorded_pids(state: &Value) -> Vec<(String, i32)> {
    let mut pids = Vec::new();
    for s in state["stacks"].as_array().into_iter().flatten() {
        for key in ["controller_process", "tunnel_process", "supervisor"] {
            if let Some(pid) = s[key]["pgid"].as_i64() {
                pids.push((format!("{} {key}", s["name"]), pid as i32));
            }
        }
        for server in s["bridge_servers"].as_array().into_iter().flatten() {
            if let Some(pid) = server["process"]["pgid"].as_i64() {
                pids.push((
                    format!("{} server {}", s["name"], server["name"]),
                    pid as i32,
                ));
            }
        }
    }
    pids
}

/// Sends SIGTERM to `up`, waits for it to exit (with the checks its `Cmd` set) and asserts
/// that every process `state` recorded is gone.
pub(crate) fn terminate(up: Running, state: &Value) -> Output {
    let pids = recorded_pids(state);
    signal(up.pid(), nix::sys::signal::Signal::SIGTERM);
    let out = up.wait();
    for (what, pid) in pids {
        assert_pid_gone(pid, &what);
    }
    out
}

pub(crate) fn signal(pid: i32, sig: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig).unwrap();
}

/// Runs the real OpenAPI validator on `spec`.
pub(crate) fn assert_valid_openapi(cmd: &Cmd, spec: &Value) {
    let validator = manifest_dir().join(".deps/venv-openapi/bin/openapi-spec-validator");
    assert!(
        validator.exists(),
        "{} is missing: run scripts/install-test-deps.sh",
        validator.display()
    );
    let file = cmd.path("merged-openapi.json");
    std::fs::write(&file, spec.to_string()).unwrap();
    let out = std::process::Command::new(validator)
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "openapi-spec-validator rejected the merged spec:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The spec's paths.
pub(crate) fn paths(spec: &Value) -> BTreeSet<String> {
    spec["paths"].as_object().unwrap().keys().cloned().collect()
}
