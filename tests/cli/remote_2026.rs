//! A remote server of the 2026-07-28 revision over Streamable HTTP: the official Python SDK's
//! server (our conformance fixture on `mcp` 2.3.0, which serves both eras at one URL) is
//! reached by `list` and `call` in that revision, chosen by `server/discover`.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_launch::mcp::{ConnectOptions, Endpoint, ServerRequestHandler, Session};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};

use crate::util::*;

/// A server of the Python SDK over HTTP on a free port, in its own process group; killed on
/// drop.
pub(crate) struct Fixture {
    child: Child,
    port: u16,
}

impl Fixture {
    /// The conformance fixture.
    fn start() -> Fixture {
        Fixture::serve("conformance_server.py")
    }

    /// `tests/fixtures/SCRIPT --http PORT`, once it listens.
    pub(crate) fn serve(script: &str) -> Fixture {
        let port = free_port();
        let child = Command::new(sdk_python())
            .arg(manifest_dir().join("tests/fixtures").join(script))
            .args(["--http", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("start the fixture");
        let fixture = Fixture { child, port };
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "the fixture never listened on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        fixture
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = killpg(Pid::from_raw(self.child.id() as i32), Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

#[test]
fn list_and_call_reach_a_2026_http_server_in_its_revision() {
    let fixture = Fixture::start();
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"conf": {"type": "http", "url": fixture.url()}}}))
        .args(["list", "--json"])
        .run();
    let server = out.server("conf");
    assert_eq!(server["status"], "connected", "{out}");
    assert_eq!(server["protocolVersion"], "2026-07-28", "{out}");

    let called = out
        .again()
        .args(["call", "conf", "test_simple_text", "{}", "--json"])
        .run();
    let answer = called.json();
    assert_eq!(answer["success"], true, "{called}");
    assert_eq!(
        answer["result"]["content"][0]["text"], "This is a simple text response for testing.",
        "{called}"
    );

    // The server asks for input in its result (SEP-2322); the CLI has no user to ask.
    let asking = out
        .again()
        .args([
            "call",
            "conf",
            "test_input_required_result_elicitation",
            "{}",
            "--json",
        ])
        .status(1)
        .run();
    let error = asking.error();
    assert_eq!(error["type"], "input_required", "{asking}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("elicitation/create"),
        "{asking}"
    );
}

/// SEP-2322 against the SDK's server: two rounds of `InputRequiredResult`, the second carrying
/// the first answer in `requestState`; `call_tool_answering` answers each with the session's
/// handler and echoes the state, and the call completes. Also the era probe: the session
/// speaks 2026-07-28.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_required_result_is_answered_and_the_call_completes() {
    let fixture = Fixture::start();
    let endpoint = Endpoint::StreamableHttp {
        url: fixture.url(),
        headers: Vec::new(),
    };
    let opts = ConnectOptions {
        forwards_client_requests: true,
        ..ConnectOptions::from_env()
    };
    let session = Session::connect_either(&endpoint, &opts)
        .await
        .expect("connect to the fixture");
    assert_eq!(session.info().protocol_version, "2026-07-28");
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&asked);
    let handler: ServerRequestHandler = Arc::new(move |method: String, params: Option<Value>| {
        seen.lock().unwrap().push((method, params));
        Box::pin(async {
            Ok(json!({"action": "accept", "content": {"name": "ada", "color": "green"}}))
        })
    });
    session.on_server_request(handler);
    let result = session
        .call_tool_answering(
            "test_input_required_result_multi_round",
            json!({}),
            Duration::from_secs(20),
        )
        .await
        .expect("the call completes");
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert_eq!(text, "ada likes green.", "{result}");
    session.close().await;
    let asked = asked.lock().unwrap();
    let methods: Vec<&str> = asked.iter().map(|(method, _)| method.as_str()).collect();
    assert_eq!(methods, ["elicitation/create"; 2], "{asked:?}");
}

/// The era is chosen once and remembered in the tool index: a later connect goes straight to
/// the era recorded. The fixture speaks both, so the index is made to say 2025-11-25: the
/// next call then comes in the handshake era (no `serverInfo` in the result's `_meta`, which
/// the fixture adds only in 2026-07-28).
#[test]
fn a_later_connect_reuses_the_era_the_index_recorded() {
    let fixture = Fixture::start();
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"conf": {"type": "http", "url": fixture.url()}}}))
        .args(["list", "--json"])
        .run();
    assert_eq!(out.server("conf")["protocolVersion"], "2026-07-28", "{out}");
    let call = || {
        let called = out
            .again()
            .args(["call", "conf", "test_simple_text", "{}", "--json"])
            .run();
        called.json()["result"]["_meta"]["io.modelcontextprotocol/serverInfo"].clone()
    };
    assert!(call().is_object(), "a 2026-07-28 answer names its server");
    let index = out.path(".cache/mcp-launch/tool-index.json");
    let text = std::fs::read_to_string(&index).expect("the index was written");
    assert!(text.contains("2026-07-28"), "{text}");
    std::fs::write(&index, text.replace("2026-07-28", "2025-11-25")).unwrap();
    assert!(
        call().is_null(),
        "the recorded era (2025-11-25) was not reused"
    );
}
