//! `/metrics`, `/healthz` and `/readyz` of `serve --http`, scraped by a real Prometheus
//! (Debian's package, installed by scripts/install-test-deps.sh) after real calls through the
//! gateway (the official Python SDK in front, server-everything behind); the answer read back
//! through Prometheus's own HTTP API.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::launch_util::{http, request};
use crate::serve::{drive, eventually};
use crate::util::*;

/// A key long enough for any address (the gateway refuses short keys off loopback).
const KEY: &str = "metrics-test-key-0123456789abcdef0123456789";

/// What a client passes in a call's arguments; it must never reach the exposition.
const SECRET: &str = "sk-live-DO-NOT-EXPORT-7f3a";

/// A Prometheus server of the test's own, stopped with the test.
struct Prometheus {
    child: Child,
    api: String,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    /// Starts Prometheus scraping `target`'s `/metrics` every second with `KEY` as its bearer
    /// token, and waits until its API answers.
    fn scraping(dir: &Path, target: &str) -> Prometheus {
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n\
             scrape_configs:\n  - job_name: mcp-launch\n    metrics_path: /metrics\n\
             \x20   authorization:\n      credentials: {KEY}\n\
             \x20   static_configs:\n      - targets: ['{target}']\n"
        );
        std::fs::write(dir.join("prometheus.yml"), config).unwrap();
        let listen = format!("127.0.0.1:{}", free_port());
        let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
        let child = Command::new("prometheus")
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("tsdb").display()
            ))
            .arg(format!("--web.listen-address={listen}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("prometheus runs (scripts/install-test-deps.sh installs Debian's package)");
        let prometheus = Prometheus {
            child,
            api: format!("http://{listen}/api/v1"),
        };
        let ready = format!("http://{listen}/-/ready");
        eventually(60, "Prometheus is ready", || {
            http("GET", &ready, &[], None).0 == 200
        });
        prometheus
    }

    /// The samples of an instant query (`data.result`).
    fn query(&self, promql: &str) -> Vec<Value> {
        let url = format!("{}/query?query={}", self.api, encode(promql));
        let (status, body) = http("GET", &url, &[], None);
        assert_eq!(status, 200, "{promql}: {body}");
        body["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Waits (bounded) until `promql` has a sample whose value passes `check`; that sample.
    fn wait_for(&self, promql: &str, check: impl Fn(f64) -> bool, dir: &Path) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let samples = self.query(promql);
            if let Some(found) = samples.iter().find(|s| check(value(s))) {
                return found.clone();
            }
            if Instant::now() > deadline {
                let log = std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default();
                let targets = http("GET", &format!("{}/targets", self.api), &[], None).1;
                panic!("Prometheus never saw {promql} as expected; last: {samples:?}\ntargets: {targets}\nlog tail: {}",
                    log.lines().rev().take(20).collect::<Vec<_>>().join("\n"));
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    }
}

fn value(sample: &Value) -> f64 {
    sample["value"][1]
        .as_str()
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN)
}

/// Percent-encodes a query for a URL.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The gateway with a key and a budget of 300 tokens, on a free loopback port, and a second
/// loopback port for `--metrics`: the process, its base URL and the metrics listener's.
fn keyed_gateway(cmd: &Cmd) -> (Running, String, String) {
    let addr = format!("127.0.0.1:{}", free_port());
    let metrics = format!("127.0.0.1:{}", free_port());
    let running = cmd
        .cmd()
        .args(["--config", "config.json", "serve", "--mode", "full"])
        .args(["--http", &addr, "--api-key", KEY, "--metrics", &metrics])
        .args(["--max-output-tokens", "300"])
        .stderr_any()
        .spawn();
    eventually(20, "the gateway listens", || {
        std::net::TcpStream::connect(&addr).is_ok()
            && std::net::TcpStream::connect(&metrics).is_ok()
    });
    (
        running,
        format!("http://{addr}"),
        format!("http://{metrics}"),
    )
}

#[test]
fn prometheus_scrapes_the_gateway_and_sees_the_calls_made_through_it() {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"everything": everything()}}));
    let dir = cmd.dir().to_path_buf();
    let (_running, base, side) = keyed_gateway(&cmd);
    let target = base.trim_start_matches("http://").to_string();
    let prometheus = Prometheus::scraping(&dir, &target);

    let arguments = json!({"message": SECRET}).to_string();
    let url = format!("{base}/mcp");
    let call = |tool: &str, arguments: &str| {
        let args = [
            "strict",
            "--http",
            &url,
            "--key",
            KEY,
            "--call",
            tool,
            "--arguments",
            arguments,
        ];
        drive(&dir, &args)
    };
    for _ in 0..3 {
        let seen = call("everything__echo", &arguments);
        assert!(seen.get("error").is_none(), "{seen}");
    }
    // A result over the budget (the echo of 2,000 words, ~2,000 tokens) is cut.
    let long = json!({"message": "word ".repeat(2000)}).to_string();
    let seen = call("everything__echo", &long);
    assert!(seen.get("error").is_none(), "{seen}");
    let seen = call("everything__no_such_tool", "{}");
    assert!(
        seen["error"]
            .as_str()
            .unwrap_or("")
            .contains("unknown tool"),
        "{seen}"
    );

    let calls = prometheus.wait_for(
        r#"mcp_launch_requests_total{method="tools/call",tool="echo",outcome="ok"}"#,
        |v| v >= 3.0,
        &dir,
    );
    assert!(
        calls["metric"]["server"]
            .as_str()
            .unwrap_or("")
            .ends_with("everything"),
        "{calls}"
    );
    prometheus.wait_for(
        r#"mcp_launch_requests_total{method="tools/call",tool="other",outcome="error"}"#,
        |v| v >= 1.0,
        &dir,
    );
    prometheus.wait_for(
        r#"mcp_launch_requests_total{method="tools/list"}"#,
        |v| v >= 4.0,
        &dir,
    );
    prometheus.wait_for(
        r#"mcp_launch_request_duration_seconds_count{method="tools/call"}"#,
        |v| v >= 4.0,
        &dir,
    );
    prometheus.wait_for(
        r#"sum(mcp_launch_upstream_request_duration_seconds_count{method="tools/call"})"#,
        |v| v >= 3.0,
        &dir,
    );
    prometheus.wait_for("sum(mcp_launch_upstream_up)", |v| v == 1.0, &dir);
    prometheus.wait_for("sum(mcp_launch_upstream_starts_total)", |v| v >= 1.0, &dir);
    prometheus.wait_for(r#"up{job="mcp-launch"}"#, |v| v == 1.0, &dir);
    // Tokens cut: the result's ~2,000 less the ≤300 sent; bytes cut beside them.
    prometheus.wait_for("sum(mcp_launch_output_cuts_total)", |v| v == 1.0, &dir);
    let tokens = prometheus.wait_for(
        "sum(mcp_launch_output_cut_tokens_total)",
        |v| (1500.0..2000.0).contains(&v),
        &dir,
    );
    let bytes = prometheus.wait_for("sum(mcp_launch_output_cut_bytes_total)", |v| v > 0.0, &dir);
    assert!(value(&bytes) > value(&tokens), "{bytes} {tokens}");

    // What Prometheus stored: no client's argument, no key, no unbounded label.
    let series = http(
        "GET",
        &format!(
            "{}/series?match[]={}",
            prometheus.api,
            encode(r#"{__name__=~"mcp_launch_.+"}"#)
        ),
        &[],
        None,
    )
    .1;
    let stored = series.to_string();
    assert!(
        !stored.contains(SECRET) && !stored.contains(KEY),
        "{stored}"
    );
    assert!(
        !stored.contains("no_such_tool"),
        "a tool the catalog does not know became a label: {stored}"
    );

    // The same page behind the key on the gateway's port, open on the --metrics listener;
    // health pages open on both.
    let page = request("GET", &format!("{base}/metrics"), &[], None);
    assert_eq!(page.status, 401, "/metrics answered without the key");
    let keyed = request(
        "GET",
        &format!("{base}/metrics"),
        &[("authorization", &format!("Bearer {KEY}"))],
        None,
    );
    assert_eq!(keyed.status, 200);
    assert!(keyed.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/openmetrics-text"));
    let open = request("GET", &format!("{side}/metrics"), &[], None);
    assert_eq!(open.status, 200);
    assert!(open
        .body
        .as_str()
        .unwrap_or("")
        .contains("mcp_launch_requests_total"));
    for base in [&base, &side] {
        assert_eq!(
            http("GET", &format!("{base}/healthz"), &[], None).0,
            200,
            "{base}/healthz"
        );
        let (status, body) = http("GET", &format!("{base}/readyz"), &[], None);
        assert_eq!(
            (status, body["status"].as_str()),
            (200, Some("ready")),
            "{base}/readyz: {body}"
        );
    }
}

#[test]
fn metrics_refuses_an_address_other_machines_reach() {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"everything": everything()}}));
    let out = cmd
        .args(["serve", "--metrics", "0.0.0.0:9464", "--json"])
        .status(2)
        .run();
    let text = out.error().to_string();
    assert!(text.contains("reachable from other machines"), "{text}");
}

/// `initialize` and `ping` are counted as any request (rmcp answered them before our
/// handler: neither appeared in `mcp_launch_requests_total`).
#[test]
fn initialize_and_ping_are_counted_in_the_request_metrics() {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"fault": fault(&[])}}));
    let (_running, base, side) = keyed_gateway(&cmd);
    let url = format!("{base}/mcp");
    let bearer = format!("Bearer {KEY}");
    let mut headers = vec![
        ("authorization", bearer.as_str()),
        ("accept", "application/json, text/event-stream"),
    ];
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "counted", "version": "1"}}});
    let opened = request("POST", &url, &headers, Some(init.to_string().into_bytes()));
    assert_eq!(opened.status, 200, "{:?}", opened.body);
    let session = opened.headers["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    headers.push(("mcp-session-id", &session));
    headers.push(("mcp-protocol-version", "2025-11-25"));
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    request(
        "POST",
        &url,
        &headers,
        Some(initialized.to_string().into_bytes()),
    );
    for id in 2..4 {
        let ping = json!({"jsonrpc": "2.0", "id": id, "method": "ping"});
        let pinged = request("POST", &url, &headers, Some(ping.to_string().into_bytes()));
        assert_eq!(pinged.status, 200, "{:?}", pinged.body);
    }
    let page = request("GET", &format!("{side}/metrics"), &[], None);
    let page = page.body.as_str().unwrap_or_default().to_string();
    let count = |method: &str| -> f64 {
        let prefix = format!("mcp_launch_requests_total{{method=\"{method}\"");
        let line = page
            .lines()
            .find(|l| l.starts_with(&prefix) && l.contains("ok"));
        line.and_then(|l| l.rsplit(' ').next()?.parse().ok())
            .unwrap_or(0.0)
    };
    assert_eq!(count("initialize"), 1.0, "{page}");
    assert_eq!(count("ping"), 2.0, "{page}");
}
