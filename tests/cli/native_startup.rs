//! How the native controller starts: the preflight's sessions are adopted (no server starts
//! twice), servers fresh in the tool index are served at once and started in the background,
//! a server whose tools changed since the index is followed, and the servers' process groups
//! are recorded so `down` ends them after `up` was killed.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::launch_util::{paths, read_state, signal, stack};
use crate::native::{config, launch};
use crate::util::{assert_pid_gone, fault, logged, read_log, read_pidfile, Cmd};

/// Polls `probe` every 100 ms until it returns `Some`, for at most `secs`.
fn eventually<T>(secs: u64, what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(Instant::now() < deadline, "{what}: not within {secs} s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The state's record of server `name` of stack `a`.
fn bridge_server(cmd: &Cmd, name: &str) -> Value {
    let state = read_state(cmd.dir());
    stack(&state, "a")["bridge_servers"]
        .as_array()
        .and_then(|servers| servers.iter().find(|s| s["name"] == name).cloned())
        .unwrap_or(Value::Null)
}

#[test]
fn a_checked_server_is_adopted_and_an_indexed_one_is_served_at_once() {
    let cmd = Cmd::new();
    let log = cmd.path("fault.log").display().to_string();
    config(&cmd, json!({"fault": fault(&["--log", &log])}));

    // Cold index: the preflight starts the server and the bridge keeps its session.
    let front = launch(&cmd);
    let reply = front.post("fault/echo", json!({"message": "one"}));
    assert_eq!((reply.status, &reply.body), (200, &json!("one")));
    assert_eq!(bridge_server(&cmd, "fault")["state"], "up");
    let starts = logged(&read_log(&cmd.path("fault.log")), "initialize").len();
    assert_eq!(starts, 1, "the preflight's session serves the calls");
    front.stop();

    // Warm index: served before the server is up; it starts once, in the background.
    std::fs::remove_file(cmd.path("fault.log")).unwrap();
    let front = launch(&cmd);
    assert!(paths(&front.spec()).contains("/fault/echo"));
    let reply = front.post("fault/echo", json!({"message": "two"}));
    assert_eq!((reply.status, &reply.body), (200, &json!("two")));
    let up = eventually(20, "the server recorded up", || {
        let server = bridge_server(&cmd, "fault");
        (server["state"] == "up" && server["process"]["pgid"].is_i64()).then_some(server)
    });
    assert_eq!(up["restarts"], 0, "{up}");
    let log = read_log(&cmd.path("fault.log"));
    assert_eq!(logged(&log, "initialize").len(), 1, "one start: {log:?}");
    let status = cmd.cmd().args(["status", "--json"]).run();
    let servers = &status.json()["stacks"][0]["servers"];
    assert_eq!(servers[0]["state"], "up", "{servers}");
    front.stop();
}

#[test]
fn a_server_whose_tools_changed_since_the_index_is_followed() {
    let cmd = Cmd::new();
    let tools_file = cmd.path("tools.json");
    let tool = |name: &str| json!({"name": name, "description": format!("{name} tool"), "inputSchema": {"type": "object"}});
    std::fs::write(&tools_file, json!([tool("early")]).to_string()).unwrap();
    let file = tools_file.display().to_string();
    config(&cmd, json!({"fault": fault(&["--tools-file", &file])}));
    cmd.cmd().args(["list", "--config", "a.json"]).run();

    // Same definition (so the index answers), other tools.
    std::fs::write(&tools_file, json!([tool("late")]).to_string()).unwrap();
    let front = launch(&cmd);
    let published = eventually(20, "the spec following the server", || {
        let published = paths(&front.spec());
        published.contains("/fault/late").then_some(published)
    });
    assert!(!published.contains("/fault/early"), "{published:?}");
    let reply = front.post("fault/late", json!({}));
    assert_eq!(reply.status, 200, "{}", reply.body);
    let reply = front.post("fault/early", json!({}));
    assert_eq!(reply.status, 404, "{}", reply.body);
    let out = front.stop();
    assert!(
        out.stderr
            .contains("offers other tools than the tool index said (added late; removed early)"),
        "{}",
        out.stderr
    );
    // The index now knows: `list` answers from it with the new tool.
    let listed = cmd
        .cmd()
        .args(["list", "fault", "--config", "a.json", "--json"])
        .run();
    let listed = listed.json();
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"late") && !names.contains(&"early"),
        "{names:?}"
    );
}

#[test]
fn down_ends_the_servers_of_a_killed_up() {
    let cmd = Cmd::new();
    let pidfile = cmd.path("grandchild.pid");
    let pidfile_arg = pidfile.display().to_string();
    config(
        &cmd,
        json!({"fault": fault(&["--grandchild", &pidfile_arg])}),
    );
    let front = launch(&cmd);
    let (grandchild, server) = read_pidfile(&pidfile);
    let recorded = eventually(20, "the server's process group recorded", || {
        bridge_server(&cmd, "fault")["process"]["pgid"].as_i64()
    });
    assert_eq!(recorded as i32, server, "the server leads its group");

    // The server exits on stdin EOF; the `sleep` it started stays in its group.
    signal(front.up_pid(), nix::sys::signal::Signal::SIGKILL);
    assert_pid_gone(server, "the server after stdin EOF");
    assert!(
        crate::util::pid_alive(grandchild),
        "the grandchild outlives a killed up"
    );

    let status = cmd.cmd().args(["status", "--json"]).status(1).run();
    assert_eq!(status.json()["stacks"][0]["status"], "stale");
    let down = cmd.cmd().args(["down"]).stderr_any().run();
    assert!(
        down.stdout.contains("server fault"),
        "{}\n{}",
        down.stdout,
        down.stderr
    );
    assert_pid_gone(grandchild, "the grandchild after down");
    // `front` drops here: its SIGTERM finds `up` already gone.
}
