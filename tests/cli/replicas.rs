//! Three replicas of `serve --http --state redis://…` behind a real HAProxy, sharing a real
//! Redis (Debian's `haproxy` and `redis-server`; scripts/install-test-deps.sh installs both):
//! a handle cut on one replica reads through another, a session begun on one goes on through
//! another, and a soak of both eras' clients through the balancer while one replica is killed
//! and restarted fails no call but those in flight on the killed replica.
//!
//! Each replica has a state directory of its own: what they share goes through Redis only.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};

use crate::launch_util::http;
use crate::serve::eventually;
use crate::util::*;

/// The key every replica shares (clients hold one key whatever replica answers).
pub(crate) const KEY: &str = "replicas-test-key-0123456789abcdef";

/// How long the soak runs: long enough for a kill, a restart and calls after both.
const SOAK_SECONDS: f64 = 20.0;

/// When the soak kills a replica, and when it starts it again (seconds into the soak).
const KILL_AT: Duration = Duration::from_secs(6);
const RESTART_AT: Duration = Duration::from_secs(10);

/// A program the test starts, killed on drop.
pub(crate) struct Started(Child);

impl Drop for Started {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `redis-server` and `haproxy`, or `None` (a note printed) when they are absent and this is
/// not CI; on CI their absence fails the test.
pub(crate) fn programs() -> Option<()> {
    let missing: Vec<_> = ["redis-server", "haproxy"]
        .into_iter()
        .filter(|p| Command::new(p).arg("-v").output().is_err())
        .collect();
    if missing.is_empty() {
        return Some(());
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{missing:?} missing on CI: scripts/install-test-deps.sh installs them"
    );
    eprintln!("skipped: {missing:?} not installed (apt-get install redis-server haproxy)");
    None
}

pub(crate) fn start_redis(dir: &Path, port: u16) -> Started {
    let child = Command::new("redis-server")
        .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
        .args(["--save", "", "--appendonly", "no", "--dir"])
        .arg(dir)
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server runs");
    eventually(10, "redis-server listens", || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    Started(child)
}

/// HAProxy in front of `replicas`: round robin (so a session's requests go to every replica),
/// `/readyz` checked every 300 ms, a refused connection retried on another replica — the
/// configuration docs/DEPLOY.md shows, read from `deploy/haproxy.cfg`.
pub(crate) fn start_haproxy(dir: &Path, port: u16, replicas: &[u16]) -> Started {
    let servers: String = replicas
        .iter()
        .enumerate()
        .map(|(n, p)| format!("  server r{n} 127.0.0.1:{p} check\n"))
        .collect();
    let config = include_str!("../../deploy/haproxy.cfg")
        .replace("FRONT", &format!("127.0.0.1:{port}"))
        .replace("SERVERS", &servers);
    run_haproxy(dir, port, &config)
}

/// HAProxy sending a session's POSTs to replica `posts` and its GETs (the SSE streams a
/// client opens and resumes) to replica `gets`.
fn start_split_haproxy(dir: &Path, port: u16, posts: u16, gets: u16) -> Started {
    let config = format!(
        "defaults\n  mode http\n  timeout connect 1s\n  timeout client 60s\n  \
         timeout server 60s\n\
         frontend mcp\n  bind 127.0.0.1:{port}\n  default_backend replicas\n\
         backend replicas\n  acl get method GET\n  use-server gets if get\n  \
         use-server posts if !get\n  \
         server posts 127.0.0.1:{posts}\n  server gets 127.0.0.1:{gets}\n"
    );
    run_haproxy(dir, port, &config)
}

fn run_haproxy(dir: &Path, port: u16, config: &str) -> Started {
    let path = dir.join(format!("haproxy-{port}.cfg"));
    std::fs::write(&path, config).unwrap();
    let log = std::fs::File::create(dir.join(format!("haproxy-{port}.log"))).unwrap();
    let child = Command::new("haproxy")
        .arg("-db")
        .arg("-f")
        .arg(&path)
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("haproxy runs");
    eventually(10, "haproxy listens", || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    Started(child)
}

/// One replica: `serve --http` on `port`, its own state directory, the shared Redis.
fn replica(cmd: &Cmd, n: usize, port: u16, redis: &str) -> Running {
    let state = cmd.path(&format!("replica-{n}"));
    let running = cmd
        .cmd()
        .args(["--config", "config.json", "serve", "--mode", "full"])
        .args(["--http", &format!("127.0.0.1:{port}"), "--api-key", KEY])
        .args(["--max-output-tokens", "300", "--state", redis])
        .env("XDG_STATE_HOME", &state.display().to_string())
        .stderr_any()
        .spawn();
    let ready = format!("http://127.0.0.1:{port}/readyz");
    eventually(30, "the replica is ready", || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
            && http("GET", &ready, &[], None).0 == 200
    });
    running
}

fn client(dir: &Path, args: &[&str]) -> Value {
    let script = manifest_dir().join("tests/fixtures/replicas_client.py");
    let mut command = Command::new(sdk_python());
    command.arg(script).args(args).args(["--key", KEY]);
    client_json(command, dir, "the replicas client")
}

pub(crate) fn mcp(port: u16) -> String {
    format!("http://127.0.0.1:{port}/mcp")
}

/// The cross-replica checks of `replicas_client.py cross`, through replicas `a`, `b`, `c`.
fn check_cross(dir: &Path, [a, b, c]: [u16; 3]) {
    let urls = [mcp(a), mcp(b), mcp(c)].join(",");
    let seen = client(dir, &["cross", "--urls", &urls]);
    let shown = serde_json::to_string_pretty(&seen).unwrap();
    assert_eq!(
        seen["initialized"],
        json!([200, true, "2025-11-25"]),
        "{shown}"
    );
    assert!(is_handle(&seen["session_handle"]), "no cut on {a}: {shown}");
    let read = &seen["session_read_elsewhere"];
    assert_eq!(read[0], 200, "{shown}");
    assert!(
        read[1].as_str().unwrap().contains("0123456789abc"),
        "a handle cut on {a} read on {b}: {shown}"
    );
    assert_eq!(
        seen["session_continued"],
        json!([200, "on c"]),
        "the session begun on {a} went on through {c}: {shown}"
    );
    assert_eq!(seen["made_up_session"], 404, "{shown}");
    assert!(is_handle(&seen["stateless_handle"]), "{shown}");
    let read = &seen["stateless_read_elsewhere"];
    assert_eq!(read[0], 200, "{shown}");
    assert!(
        read[1].as_str().unwrap().contains("0123456789abc"),
        "a 2026-07-28 handle cut on {a} read on {c}: {shown}"
    );
}

fn is_handle(value: &Value) -> bool {
    value
        .as_str()
        .is_some_and(|h| h.len() == 26 && h.starts_with("h_"))
}

fn epoch(time: SystemTime) -> f64 {
    time.duration_since(UNIX_EPOCH).unwrap().as_secs_f64()
}

#[test]
fn three_replicas_behind_haproxy_share_handles_sessions_and_survive_a_kill() {
    let Some(()) = programs() else { return };
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"fault": fault(&[])}}));
    let dir: PathBuf = cmd.dir().to_path_buf();
    let first = free_ports(5);
    let (redis_port, front) = (first, first + 1);
    let ports = [first + 2, first + 3, first + 4];
    let _redis = start_redis(&dir, redis_port);
    let redis = format!("redis://127.0.0.1:{redis_port}");
    let mut replicas: Vec<Running> = (0..3).map(|n| replica(&cmd, n, ports[n], &redis)).collect();
    let _haproxy = start_haproxy(&dir, front, &ports);

    check_cross(&dir, ports);

    // The soak, through HAProxy; replica 1 is killed, then started again.
    let soak_dir = dir.clone();
    let soak = std::thread::spawn(move || {
        let seconds = SOAK_SECONDS.to_string();
        client(
            &soak_dir,
            &["soak", "--url", &mcp(front), "--seconds", &seconds],
        )
    });
    let started = Instant::now();
    std::thread::sleep(KILL_AT);
    let killed = replicas.remove(1);
    let signalled_at = epoch(SystemTime::now());
    kill(Pid::from_raw(killed.pid()), Signal::SIGKILL).unwrap();
    // The replica is dead (its sockets closed) only once its process has exited: on a busy
    // machine that takes tens of milliseconds after the signal, and a call sent meanwhile is
    // as much in flight on it as one sent before.
    assert!(pid_gone(killed.pid()), "the killed replica exited");
    let killed_at = epoch(SystemTime::now());
    std::thread::sleep(RESTART_AT - started.elapsed().min(RESTART_AT));
    let restarted_at = epoch(SystemTime::now());
    replicas.insert(1, replica(&cmd, 1, ports[1], &redis));
    let seen = soak.join().expect("the soak ran");
    drop(killed);

    let calls = seen["calls"].as_array().unwrap();
    let failed: Vec<&Value> = calls.iter().filter(|c| c[3] != true).collect();
    let count = |era: &str, after: f64| {
        calls
            .iter()
            .filter(|c| c[0] == era && c[3] == true && c[1].as_f64().unwrap() > after)
            .count()
    };
    eprintln!(
        "soak: {} calls, {} failed, killed at {killed_at:.2}, restarted at {restarted_at:.2}",
        calls.len(),
        failed.len()
    );
    let broken: Vec<&str> = seen["broken"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_str().unwrap_or("?"))
        .collect();
    assert!(
        broken.is_empty(),
        "a client gave up:\n{}",
        broken.join("\n----\n")
    );
    // Both eras went on after the kill and after the restart.
    for era in ["2025", "2026"] {
        assert!(
            count(era, killed_at + 1.0) > 20,
            "{era} calls stopped after the kill"
        );
        assert!(
            count(era, restarted_at + 2.0) > 20,
            "{era} calls stopped after the restart"
        );
    }
    // Only calls in flight when the replica died failed: each started before the kill and
    // ended after it, at most one per client.
    for call in &failed {
        let (start, end) = (call[1].as_f64().unwrap(), call[2].as_f64().unwrap());
        assert!(
            start <= killed_at + 0.05 && end >= signalled_at - 0.05,
            "a call failed that was not in flight at the kill ({signalled_at:.3} to \
             {killed_at:.3}): {call}"
        );
    }
    assert!(
        failed.len() <= 8,
        "more failures than calls in flight: {failed:?}"
    );

    // The restarted replica takes sessions and handles of the others, and they of it.
    check_cross(&dir, [ports[1], ports[2], ports[0]]);
    // Nothing shared was kept in a replica's own files.
    for n in 0..3 {
        let outputs = dir.join(format!("replica-{n}/mcp-launch/outputs"));
        let files = std::fs::read_dir(&outputs).map(|d| d.count()).unwrap_or(0);
        assert_eq!(
            files,
            0,
            "replica {n} kept handles in {}",
            outputs.display()
        );
    }
}

/// `/readyz` says 503 `state_unreachable` while Redis is down, and 200 again once it is back;
/// a bad `--state` URL is refused at start, naming it without its password.
#[test]
fn readyz_follows_the_state_store_and_a_bad_url_is_refused() {
    let Some(()) = programs() else { return };
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"fault": fault(&[])}}));
    let dir = cmd.dir().to_path_buf();
    let first = free_ports(2);
    let redis = start_redis(&dir, first);
    let url = format!("redis://127.0.0.1:{first}");
    let _replica = replica(&cmd, 0, first + 1, &url);
    let ready = format!("http://127.0.0.1:{}/readyz", first + 1);
    drop(redis);
    eventually(10, "/readyz says the store is unreachable", || {
        let (status, body) = http("GET", &ready, &[], None);
        status == 503 && body["status"] == "state_unreachable"
    });
    let _redis = start_redis(&dir, first);
    eventually(10, "/readyz is 200 again", || {
        http("GET", &ready, &[], None).0 == 200
    });

    let refused = cmd
        .cmd()
        .args(["--config", "config.json", "serve", "--http", "127.0.0.1:0"])
        .args(["--api-key", KEY, "--state", "http://:hunter2@h", "--json"])
        .status(2)
        .stderr_any()
        .run();
    let error = refused.error();
    assert_eq!(error["type"], "invalid_state_url", "{error}");
    let text = error.to_string();
    assert!(
        text.contains("http://:***@h") && !text.contains("hunter2"),
        "{text}"
    );
}

/// A 2025-era call whose replica dies mid-call: the official SDK resumes its stream at another
/// replica (here HAProxy sends every GET there), which cannot replay it. The call must end
/// at once with an error saying its outcome is unknown — not be answered with another
/// stream's events, and not reconnect to an empty stream until the client's timeout.
#[test]
fn a_call_whose_replica_dies_is_answered_with_an_error_where_its_stream_is_resumed() {
    let Some(()) = programs() else { return };
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"fault": fault(&[])}}));
    let dir = cmd.dir().to_path_buf();
    let first = free_ports(4);
    let (redis_port, front, posts, gets) = (first, first + 1, first + 2, first + 3);
    let _redis = start_redis(&dir, redis_port);
    let redis = format!("redis://127.0.0.1:{redis_port}");
    let dying = replica(&cmd, 0, posts, &redis);
    let _other = replica(&cmd, 1, gets, &redis);
    let _haproxy = start_split_haproxy(&dir, front, posts, gets);

    let pid = dying.pid().to_string();
    let seen = client(&dir, &["resume", "--url", &mcp(front), "--kill-pid", &pid]);
    drop(dying);
    let shown = serde_json::to_string_pretty(&seen).unwrap();
    let error = seen["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("outcome is unknown"),
        "the cut call was not answered by the gateway's error: {shown}"
    );
    // Killed 1 s into the call; the SDK waits the stream's 3 s retry hint, then resumes.
    let elapsed = seen["elapsed"].as_f64().unwrap();
    assert!(
        elapsed < 10.0,
        "the cut call took {elapsed:.1} s to end (the client's timeout is 20 s): {shown}"
    );
}
