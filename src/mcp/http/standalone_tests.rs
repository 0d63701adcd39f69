//! A server's question on the standalone stream mid-call, against the official TypeScript SDK
//! server (tests/fixtures/standalone_ask_server.mjs), which drops what it has to send there
//! while no GET stream is open: the session's first request must not go out before it is.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::mcp::{ConnectOptions, Endpoint, ServerRequestHandler, Session};

/// The fixture on a free port, in its own process group; killed on drop.
struct AskServer {
    child: Child,
    url: String,
}

impl AskServer {
    fn start() -> AskServer {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut child = Command::new("node")
            .arg(root.join("tests/fixtures/standalone_ask_server.mjs"))
            .arg("--sdk")
            .arg(root.join(".deps/sdk-ts"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("start standalone_ask_server.mjs (node)");
        let stdout = child.stdout.take().expect("its stdout");
        let mut url = String::new();
        BufReader::new(stdout)
            .read_line(&mut url)
            .expect("its URL (scripts/install-test-deps.sh installs the SDK)");
        let url = url.trim().to_string();
        assert!(
            url.starts_with("http://"),
            "no URL from the fixture: {url:?}"
        );
        AskServer { child, url }
    }
}

impl Drop for AskServer {
    fn drop(&mut self) {
        let group = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

/// Accepts every elicitation with the name "Ada".
fn accepting() -> ServerRequestHandler {
    Arc::new(|method: String, _params: Option<Value>| {
        Box::pin(async move {
            assert_eq!(method, "elicitation/create");
            Ok(json!({"action": "accept", "content": {"name": "Ada"}}))
        })
    })
}

/// The fixture answers its GET late: a writer that POSTs `tools/list` and `tools/call` before
/// the listener's GET is answered (perf23's, reverted for it: on one thread, as the
/// conformance client runs, the GET's new connection lost the race to the pooled one) has
/// the SDK drop the question, and the call waits for its timeout.
#[tokio::test]
async fn a_question_on_the_standalone_stream_mid_call_is_answered() {
    let server = AskServer::start();
    let endpoint = Endpoint::StreamableHttp {
        url: server.url.clone(),
        headers: Vec::new(),
    };
    let opts = ConnectOptions {
        forwards_client_requests: true,
        ..ConnectOptions::default()
    };
    let session = Session::connect(&endpoint, &opts).await.expect("connect");
    session.on_server_request(accepting());
    let timeout = Duration::from_secs(5);
    let listed = session.list_tools(timeout).await.expect("tools/list");
    assert_eq!(listed.tools.len(), 1);
    let result = session.call_tool("ask", json!({}), timeout).await;
    session.close().await;
    let result = result.expect("the call ends once its question is answered");
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    let answer: Value = serde_json::from_str(text).expect("the answer as JSON");
    assert_eq!(answer["content"]["name"], "Ada", "{result}");
}
