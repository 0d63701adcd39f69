//! The pool against the fault server, which writes its pid to a file at every start: what
//! starts when, and what stops.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;

use super::*;
use crate::process::live_members;

const CALL: Duration = Duration::from_secs(20);

/// The fault server, counting its starts in `starts`.
fn fault(name: &str, starts: &Path) -> ServerEntry {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fault_server.py");
    let args = vec![
        script.display().to_string(),
        "--starts".into(),
        starts.display().to_string(),
    ];
    ServerEntry::stdio("test", name, "python3", args)
}

fn starts(file: &Path) -> usize {
    std::fs::read_to_string(file).map_or(0, |text| text.lines().count())
}

fn pool(servers: Vec<PoolServer>, idle: Option<Duration>) -> Pool {
    pool_of_eras(servers, idle, false)
}

fn pool_of_eras(servers: Vec<PoolServer>, idle: Option<Duration>, stateless: bool) -> Pool {
    let connect = ConnectOptions::default();
    let on_session = None;
    Pool::new(
        servers,
        PoolConfig {
            connect,
            idle,
            on_session,
            stateless,
        },
    )
}

struct Scratch {
    _dir: tempfile::TempDir,
    starts: PathBuf,
}

fn scratch() -> Scratch {
    let dir = tempfile::tempdir().expect("a temp dir");
    let starts = dir.path().join("starts");
    Scratch { _dir: dir, starts }
}

/// Polls `check` every 20 ms for up to 15 s.
async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn nothing_starts_until_a_call_and_concurrent_first_calls_share_one_start() {
    let s = scratch();
    let pool = pool(vec![PoolServer::lazy(fault("f", &s.starts))], None);
    assert_eq!(starts(&s.starts), 0, "a new pool starts nothing");
    let upstream = pool.upstream("f").unwrap();
    let calls = (0..8).map(|i| upstream.call("echo", json!({"message": format!("m{i}")}), CALL));
    let answers = futures_util::future::join_all(calls).await;
    assert!(answers.iter().all(Result::is_ok), "{answers:?}");
    assert_eq!(starts(&s.starts), 1, "eight first calls, one start");
    let status = &pool.status()[0];
    assert_eq!((status.state, status.calls), (ServerState::Up, 8));
    pool.shutdown().await;
}

#[tokio::test]
async fn an_idle_server_is_stopped_and_the_next_call_starts_it_again() {
    let s = scratch();
    let pool = pool(
        vec![PoolServer::lazy(fault("f", &s.starts))],
        Some(Duration::from_millis(300)),
    );
    pool.start_keepers();
    let upstream = pool.upstream("f").unwrap();
    upstream
        .call("echo", json!({"message": "a"}), CALL)
        .await
        .unwrap();
    let pgid = pool.status()[0]
        .pgid
        .expect("a stdio server has a process group");
    eventually("the idle server stops", || {
        pool.status()[0].state == ServerState::Down
    })
    .await;
    eventually("its process group is gone", || {
        live_members(pgid).is_empty()
    })
    .await;
    assert_eq!(
        pool.status()[0].restarts,
        0,
        "an idle stop is not a restart"
    );
    upstream
        .call("echo", json!({"message": "b"}), CALL)
        .await
        .unwrap();
    assert_eq!(starts(&s.starts), 2);
    pool.shutdown().await;
}

#[tokio::test]
async fn an_always_on_server_starts_at_once_and_comes_back_after_a_crash() {
    let s = scratch();
    let server = PoolServer {
        always_on: true,
        ..PoolServer::lazy(fault("f", &s.starts))
    };
    let pool = pool(vec![server], Some(Duration::from_millis(100)));
    pool.start_keepers();
    eventually("the always-on server is up", || {
        pool.status()[0].state == ServerState::Up
    })
    .await;
    let upstream = pool.upstream("f").unwrap();
    let crashed = upstream.call("crash", json!({}), CALL).await;
    assert!(
        matches!(crashed, Err(PoolError::Unavailable { .. })),
        "{crashed:?}"
    );
    // Restarted by its keeper after the first backoff (1 s), with no call needed; never
    // stopped for idleness.
    eventually("it is restarted", || {
        starts(&s.starts) == 2 && pool.status()[0].state == ServerState::Up
    })
    .await;
    assert_eq!(pool.status()[0].restarts, 1);
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        pool.status()[0].state,
        ServerState::Up,
        "always-on is never idle-stopped"
    );
    let pgid = pool.status()[0].pgid.unwrap();
    pool.shutdown().await;
    assert!(
        live_members(pgid).is_empty(),
        "shutdown ends the process group"
    );
    assert_eq!(starts(&s.starts), 2, "nothing starts after shutdown");
}

#[tokio::test]
async fn a_crash_backs_off_and_the_error_says_when_to_retry() {
    let s = scratch();
    let pool = pool(vec![PoolServer::lazy(fault("f", &s.starts))], None);
    let upstream = pool.upstream("f").unwrap();
    let crashed = upstream.call("crash", json!({}), CALL).await.unwrap_err();
    let again = upstream
        .call("echo", json!({"message": "x"}), CALL)
        .await
        .unwrap_err();
    let PoolError::Unavailable {
        failure, retry_at, ..
    } = &again
    else {
        panic!("a call during the backoff is refused: {again:?}");
    };
    assert!(retry_at.is_some(), "{crashed:?}");
    assert!(failure.message.contains("code 7"), "{}", failure.message);
    assert!(failure.stderr.contains("boom"), "{}", failure.stderr);
    assert!(crate::error::Actionable::help(&again).contains("UTC"));
    assert_eq!(starts(&s.starts), 1, "nothing restarts during the backoff");
    pool.shutdown().await;
}

#[tokio::test]
async fn an_unknown_server_is_named() {
    let pool = pool(Vec::new(), None);
    let error = pool.upstream("nope").err().unwrap();
    assert_eq!(error.to_string(), "no server `nope`");
}

#[tokio::test]
async fn a_server_of_the_handshake_era_refuses_the_stateless_upstream_once() {
    let s = scratch();
    let pool = pool_of_eras(vec![PoolServer::lazy(fault("f", &s.starts))], None, true);
    let modern = pool
        .stateless("f")
        .expect("a stdio server has a stateless upstream");
    assert!(modern.is_stateless() && !modern.refused());
    assert!(!pool.upstream("f").unwrap().is_stateless());
    assert_eq!(starts(&s.starts), 0, "nothing starts before a request");
    // The fault server answers `server/discover` with -32601.
    assert!(modern.session().await.is_err());
    assert!(modern.refused(), "its first connect tells");
    assert_eq!(
        pool.status()[0].state,
        ServerState::Down,
        "the handshake one is untouched"
    );
    let answer = pool
        .upstream("f")
        .unwrap()
        .call("echo", json!({"message": "hi"}), CALL);
    assert!(answer.await.is_ok());
    assert_eq!(starts(&s.starts), 2, "one start per era");
    pool.shutdown().await;
}

/// The official Python SDK's server of both eras over Streamable HTTP
/// (tests/fixtures/era_server.py) on a free port, in its own process group; killed on drop.
struct EraServer {
    child: std::process::Child,
    url: String,
}

impl EraServer {
    fn start() -> EraServer {
        use std::os::unix::process::CommandExt;
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let child = std::process::Command::new(root.join(".deps/venv-sdk/bin/python"))
            .arg(root.join("tests/fixtures/era_server.py"))
            .args(["--http", &port.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .spawn()
            .expect("start era_server.py (scripts/install-test-deps.sh)");
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "era_server.py never listened");
            std::thread::sleep(Duration::from_millis(50));
        }
        let url = format!("http://127.0.0.1:{port}/mcp");
        EraServer { child, url }
    }
}

impl Drop for EraServer {
    fn drop(&mut self) {
        let group = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

fn remote(name: &str, url: &str, sse: bool) -> ServerEntry {
    let mut entry = ServerEntry::stdio("test", name, "unused", Vec::new());
    entry.spec = Ok(match sse {
        false => crate::config::ServerSpec::Http {
            url: url.to_string(),
            headers: Vec::new(),
            oauth: None,
        },
        true => crate::config::ServerSpec::Sse {
            url: url.to_string(),
            headers: Vec::new(),
        },
    });
    entry
}

/// The text of a tool result's first block, as JSON.
fn seen(answer: &serde_json::Value) -> serde_json::Value {
    let text = answer["content"][0]["text"].as_str().unwrap_or("null");
    serde_json::from_str(text).expect("whoami answers JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_of_the_2026_revision_is_reached_in_it_beside_its_handshake_session() {
    let server = EraServer::start();
    let pool = pool_of_eras(
        vec![PoolServer::lazy(remote("e", &server.url, false))],
        None,
        true,
    );
    let modern = pool
        .stateless("e")
        .expect("an HTTP server has a stateless upstream");
    assert!(modern.is_stateless() && modern.is_remote());
    let answer = modern.call("whoami", json!({}), CALL).await.unwrap();
    let told = seen(&answer);
    assert_eq!(told["protocol"], "2026-07-28", "{told}");
    assert_eq!(told["mcpName"], "whoami", "{told}");
    assert_eq!(
        told["meta"]["io.modelcontextprotocol/clientInfo"]["name"], "mcp-launch",
        "{told}"
    );
    assert!(!modern.refused());
    let legacy = pool.upstream("e").unwrap();
    let answer = legacy.call("whoami", json!({}), CALL).await.unwrap();
    assert_ne!(
        seen(&answer)["protocol"],
        "2026-07-28",
        "the handshake session stays"
    );
    assert_eq!(
        pool.stateless_status().len(),
        1,
        "{:?}",
        pool.stateless_status()
    );
    pool.shutdown().await;
}

#[tokio::test]
async fn an_unreachable_http_server_is_not_taken_for_one_of_the_handshake_era() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let pool = pool_of_eras(
        vec![
            PoolServer::lazy(remote("gone", &url, false)),
            PoolServer::lazy(remote("old", &url, true)),
        ],
        None,
        true,
    );
    assert!(pool.stateless("old").is_none(), "legacy SSE has one era");
    let modern = pool.stateless("gone").expect("a stateless upstream");
    assert!(modern.session().await.is_err());
    assert!(
        !modern.refused(),
        "not reached is not refused: once it is up, its 2026 clients reach it in their era"
    );
    pool.shutdown().await;
}
