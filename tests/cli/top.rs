//! `mcp-launch top`: a daemon serving server-everything is found, its calls counted, and `s`
//! pressed in a real terminal (tmux) stops the server through the daemon; `--json`'s shape;
//! an `up` stack found through its record; stale records and sockets removed.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::daemon::start_daemon;
use crate::tui::Tmux;
use crate::util::{everything, pid_alive, time, Cmd, BIN};

/// A project of server-everything and mcp-server-time behind a daemon, with `calls` echo calls
/// made through it.
fn daemon_with_calls(calls: usize) -> (Cmd, crate::util::Running) {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {
        "everything": everything(),
        "time": time(),
    }}));
    let daemon = start_daemon(&cmd, cmd.cmd());
    for n in 0..calls {
        call_echo(&cmd, n);
    }
    (cmd, daemon)
}

/// One echo call through the daemon of `cmd`.
fn call_echo(cmd: &Cmd, n: usize) {
    cmd.cmd()
        .args(["--config", "config.json", "call", "everything", "echo"])
        .args([json!({"message": format!("call {n}")}).to_string()])
        .run();
}

fn top_json(cmd: &Cmd) -> Value {
    let out = cmd
        .cmd()
        .args(["top", "--json", "--interval", "200ms"])
        .run();
    out.json()
}

/// The process of `kind` in a snapshot, and its upstream `name`.
fn upstream<'a>(snapshot: &'a Value, kind: &str, name: &str) -> &'a Value {
    let processes = snapshot["processes"].as_array().unwrap();
    let process = processes
        .iter()
        .find(|p| p["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind}: {snapshot}"));
    let upstreams = process["upstreams"].as_array().unwrap();
    upstreams
        .iter()
        .find(|u| u["name"] == name)
        .unwrap_or_else(|| panic!("no {name}: {snapshot}"))
}

fn keys(value: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys
}

/// The snapshot's fields; p50/p99 cover the calls between its two readings (two calls made
/// while `top --json --interval 6s` waits), not the three made before it started.
#[test]
fn json_prints_one_snapshot_with_the_documented_fields() {
    let (cmd, daemon) = daemon_with_calls(3);
    let top = cmd
        .cmd()
        .args(["top", "--json", "--interval", "6s"])
        .spawn();
    std::thread::sleep(Duration::from_millis(500));
    call_echo(&cmd, 3);
    call_echo(&cmd, 4);
    let snapshot = top.wait().json();
    assert_eq!(snapshot["success"], true);
    assert!(
        snapshot["interval_ms"].as_u64().unwrap() >= 6000,
        "{snapshot}"
    );
    assert_eq!(snapshot["latency_window_ms"], snapshot["interval_ms"]);
    let process = &snapshot["processes"][0];
    assert_eq!(
        keys(process),
        [
            "address",
            "channel",
            "configs",
            "controls",
            "cwd",
            "error",
            "kind",
            "log",
            "mode",
            "pid",
            "requests_per_s",
            "sessions",
            "sparse_tokens_saved",
            "stacks",
            "started_unix",
            "upstreams"
        ]
    );
    assert_eq!(process["kind"], "daemon");
    assert_eq!(process["pid"], json!(daemon.pid()));
    assert_eq!(process["controls"], true);
    let everything = upstream(&snapshot, "daemon", "everything");
    assert_eq!(
        keys(everything),
        [
            "calls",
            "calls_per_s",
            "cut_bytes",
            "cut_tokens",
            "cuts",
            "errors",
            "idle_s",
            "last_error",
            "name",
            "p50_ms",
            "p99_ms",
            "restarts",
            "state"
        ]
    );
    assert_eq!(everything["state"], "up");
    assert_eq!(everything["calls"], 5, "{snapshot}");
    assert_eq!(everything["errors"], 0);
    let per_s = everything["calls_per_s"].as_f64().unwrap();
    assert!(per_s > 0.0, "2 calls between the readings: {snapshot}");
    let (p50, p99) = (everything["p50_ms"].as_f64(), everything["p99_ms"].as_f64());
    assert!(
        p50.unwrap() > 0.0 && p99.unwrap() >= p50.unwrap(),
        "{snapshot}"
    );
    let time = upstream(&snapshot, "daemon", "time");
    assert_eq!(time["calls"], 0);
    assert_eq!(time["p50_ms"], Value::Null, "no calls in the window");
}

#[test]
fn top_in_a_terminal_shows_the_calls_and_s_stops_the_server_through_the_daemon() {
    let (cmd, _daemon) = daemon_with_calls(3);
    let dir = cmd.dir().display().to_string();
    let command = format!(
        "cd {dir} && env -u XDG_RUNTIME_DIR -u XDG_STATE_HOME HOME={dir} \
         XDG_CACHE_HOME={dir}/.cache NO_COLOR=1 {BIN} top; echo $? > {dir}/exit.txt; sleep 60"
    );
    let tmux = Tmux::start(cmd.dir(), &command);
    tmux.wait_for(&["mcp-launch top", "p50/p99 of the last", "everything", "P99"]);
    // p50/p99 cover the last minute's calls: one made while top watches shows.
    call_echo(&cmd, 3);
    let screen = wait_row(&tmux, "everything", "ms");
    let line = row(&screen, "everything");
    assert!(line.contains(" up ") && line.contains("ms"), "{screen}");
    // The first row is the daemon; the next its first server by name: everything.
    tmux.keys(&["Down"]);
    tmux.keys(&["s"]);
    let screen = wait_row(&tmux, "everything", "stopped");
    assert!(
        screen.contains("everything stopped (its next call starts it)"),
        "{screen}"
    );
    let status = cmd.cmd().args(["daemon", "status", "--json"]).run().json();
    let upstreams = status["gateways"][0]["upstreams"]
        .as_array()
        .unwrap()
        .clone();
    let everything = upstreams
        .iter()
        .find(|u| u["name"] == "everything")
        .unwrap();
    assert_eq!(
        everything["state"], "down",
        "the daemon stopped it: {status}"
    );
    // A stop asked for (like the stop after a first check) is not an idle stop.
    let metrics = cmd
        .cmd()
        .args(["--config", "config.json", "daemon", "metrics", "--json"]);
    let metrics = metrics.run().json();
    let text = metrics["metrics"].as_str().unwrap_or_default();
    let idle_stops: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("mcp_launch_upstream_idle_stops_total{") && !l.ends_with(" 0"))
        .collect();
    assert_eq!(idle_stops, Vec::<&str>::new(), "{text}");
    tmux.keys(&["r"]);
    tmux.wait_for(&["everything restarted"]);
    wait_row(&tmux, "everything", " up ");
    tmux.keys(&["q"]);
    let exit = cmd.path("exit.txt");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::read_to_string(&exit)
        .unwrap_or_default()
        .trim()
        .is_empty()
    {
        assert!(
            Instant::now() < deadline,
            "top did not exit:\n{}",
            tmux.screen()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(std::fs::read_to_string(exit).unwrap().trim(), "0");
}

/// Waits until `name`'s row holds `wanted`; the screen then.
fn wait_row(tmux: &Tmux, name: &str, wanted: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let screen = tmux.screen();
        if screen
            .lines()
            .any(|l| l.starts_with(&format!("  {name} ")) && l.contains(wanted))
        {
            return screen;
        }
        assert!(
            Instant::now() < deadline,
            "{name} never showed {wanted:?}:\n{screen}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The screen's line holding `name` as a server row.
fn row<'a>(screen: &'a str, name: &str) -> &'a str {
    let prefix = format!("  {name} ");
    screen
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no row for {name}:\n{screen}"))
}

/// Its calls, and the tokens its budget cut from a result of server-everything's over it.
#[test]
fn an_up_stack_is_found_through_its_record_and_its_calls_read_from_its_front() {
    let cmd = crate::launch_util::project(&[("a.json", json!({"everything": everything()}))]);
    let stack = crate::native::launch_with(&cmd, &["--max-output-tokens", "300"]);
    for n in 0..2 {
        let reply = stack.post("everything/echo", json!({"message": format!("{n}")}));
        assert_eq!(reply.status, 200, "{}", reply.body);
    }
    // The echo of 2,000 words: ~2,000 tokens, over the budget of 300.
    let reply = stack.post("everything/echo", json!({"message": "word ".repeat(2000)}));
    assert_eq!(reply.status, 200, "{}", reply.body);
    let snapshot = top_json(&cmd);
    let process = snapshot["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == "up")
        .unwrap_or_else(|| panic!("no up: {snapshot}"));
    assert_eq!(process["stacks"], json!(["a"]));
    assert!(process["error"].is_null(), "{snapshot}");
    let everything = upstream(&snapshot, "up", "everything");
    assert_eq!(everything["calls"], 3, "{snapshot}");
    assert_eq!(everything["state"], "up");
    assert_eq!(everything["cuts"], 1, "{snapshot}");
    let tokens = everything["cut_tokens"].as_u64().unwrap();
    assert!((1500..2000).contains(&tokens), "{snapshot}");
    assert!(everything["cut_bytes"].as_u64().unwrap() > tokens);
}

/// An `up` with mcpo (which runs the servers, so no upstream of ours is counted): its row
/// shows the calls, errors and latency of the front's REST requests to the server, made while
/// `top --json` waits between its two readings. Issue 28.
#[test]
fn an_mcpo_stacks_server_shows_the_calls_its_front_answered() {
    use crate::launch_util::{project, request, stack, terminate, wait_ready};
    let cmd = project(&[("a.json", json!({"everything": everything()}))]);
    let port = crate::util::free_ports(2);
    let up = cmd
        .cmd()
        .args(["up", "--config", "a.json", "--tunnel", "none"])
        .args(["--port", &port.to_string()])
        .args(["--mcpo-port", &(port + 1).to_string()])
        .stderr_any()
        .spawn();
    let state = wait_ready(&up, cmd.dir(), 1);
    let a = stack(&state, "a");
    assert_eq!(a["controller"], "mcpo", "{state}");
    let url = format!("http://127.0.0.1:{}/everything/echo", a["port"]);
    let key = [("X-API-Key", a["api_key"].as_str().unwrap())];
    let post = |body: Value| request("POST", &url, &key, Some(body.to_string().into_bytes()));
    let top = cmd
        .cmd()
        .args(["top", "--json", "--interval", "6s"])
        .spawn();
    std::thread::sleep(Duration::from_millis(1000));
    for n in 0..2 {
        let reply = post(json!({"message": format!("{n}")}));
        assert_eq!(reply.status, 200, "{}", reply.body);
    }
    // No `message`: mcpo refuses it (422), an error.
    let reply = post(json!({}));
    assert_eq!(reply.status, 422, "{}", reply.body);
    let snapshot = top.wait().json();
    let everything = upstream(&snapshot, "up", "everything");
    assert_eq!(everything["calls"], 3, "{snapshot}");
    assert_eq!(everything["errors"], 1, "{snapshot}");
    assert!(
        everything["state"].as_str().unwrap().contains("mcpo"),
        "{snapshot}"
    );
    assert!(
        everything["calls_per_s"].as_f64().unwrap() > 0.0,
        "{snapshot}"
    );
    let (p50, p99) = (everything["p50_ms"].as_f64(), everything["p99_ms"].as_f64());
    assert!(
        p50.unwrap() > 0.0 && p99.unwrap() >= p50.unwrap(),
        "{snapshot}"
    );
    terminate(up, &state);
}

/// `r` and `s` on an `up` stack's native bridge server act through the stack front's admin
/// route on the bridge's pool: `r` starts it again at once (a new process group), `s` ends
/// its session as a stop asked for (not a crash: the next call starts it, no backoff's 502).
#[test]
fn r_and_s_on_an_up_stacks_server_restart_and_stop_it_through_its_front() {
    let cmd = crate::launch_util::project(&[("a.json", json!({"everything": everything()}))]);
    let stack = crate::native::launch(&cmd);
    let reply = stack.post("everything/echo", json!({"message": "before"}));
    assert_eq!(reply.status, 200, "{}", reply.body);
    let group = || bridge_group(&cmd, "everything");
    let first = group().expect("the server's process group is recorded");
    let dir = cmd.dir().display().to_string();
    let command = format!(
        "cd {dir} && env -u XDG_RUNTIME_DIR -u XDG_STATE_HOME HOME={dir} \
         XDG_CACHE_HOME={dir}/.cache NO_COLOR=1 {BIN} top; sleep 60"
    );
    let tmux = Tmux::start(cmd.dir(), &command);
    tmux.wait_for(&["up ", "everything"]);
    wait_row(&tmux, "everything", " up ");
    tmux.keys(&["Down"]);
    tmux.keys(&["r"]);
    tmux.wait_for(&["everything restarted"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while group() == Some(first) || group().is_none() {
        assert!(Instant::now() < deadline, "the server was not started anew");
        std::thread::sleep(Duration::from_millis(200));
    }
    tmux.keys(&["s"]);
    tmux.wait_for(&["everything stopped (its next call starts it)"]);
    let reply = stack.post("everything/echo", json!({"message": "after"}));
    assert_eq!(reply.status, 200, "{}", reply.body);
    wait_row(&tmux, "everything", " up ");
}

/// The process group the state file records for the bridge server `name` of `cmd`'s stack.
fn bridge_group(cmd: &Cmd, name: &str) -> Option<i64> {
    let state: Value =
        serde_json::from_slice(&std::fs::read(cmd.path(".mcp-launch/state.json")).ok()?).ok()?;
    let stacks = state["stacks"].as_array()?;
    let servers = stacks
        .iter()
        .flat_map(|s| s["bridge_servers"].as_array())
        .flatten();
    let server = servers.into_iter().find(|b| b["name"] == name)?;
    server["process"]["pgid"].as_i64()
}

#[test]
fn watching_a_daemon_does_not_keep_it_from_its_idle_exit() {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"everything": everything()}}));
    let daemon = cmd
        .cmd()
        .args([
            "--config",
            "config.json",
            "serve",
            "--daemon",
            "--idle-exit",
            "3s",
        ])
        .stderr_any()
        .spawn();
    let pid = daemon.pid();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut was_seen = false;
    // `top` samples it every 0.5 s, run after run, for longer than its idle exit.
    while pid_alive(pid) {
        let snapshot = top_json(&cmd);
        was_seen |= snapshot["processes"][0]["pid"] == json!(pid);
        assert!(
            Instant::now() < deadline,
            "the daemon watched by top never reached its idle exit (3 s)"
        );
    }
    assert!(was_seen, "top never saw the daemon");
    daemon.wait();
}

#[test]
fn stale_records_and_sockets_are_removed_and_not_shown() {
    let cmd = Cmd::new();
    let run = cmd.dir().join(".local/state/mcp-launch/run");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
    let me = std::process::id();
    let started = start_time(me);
    let record = |pid: u32, started: u64| {
        json!({"kind": "up", "pid": pid, "started": started, "cwd": cmd.dir()}).to_string()
    };
    // A dead pid, and a live pid (ours) whose start time is another process's.
    std::fs::write(run.join("up-999999.json"), record(999_999, started)).unwrap();
    std::fs::write(run.join(format!("up-{me}.json")), record(me, started + 1)).unwrap();
    // A socket its gateway left behind when it died.
    drop(std::os::unix::net::UnixListener::bind(run.join("g-999999.sock")).unwrap());
    assert!(run.join("g-999999.sock").exists());
    let snapshot = top_json(&cmd);
    assert_eq!(snapshot["processes"], json!([]), "{snapshot}");
    let left: Vec<_> = std::fs::read_dir(&run)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "stale files left: {left:?}");
}

/// A process's start time in clock ticks since boot (`/proc/PID/stat`, field 22).
fn start_time(pid: u32) -> u64 {
    let stat =
        std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("stat")).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    after_name.split(' ').nth(19).unwrap().parse().unwrap()
}
