//! Daemon mode: `serve --daemon` keeps warm sessions for the command line; `call` (and
//! `call --batch`), `list`, `inspect` and `search` ride it when it runs (printing what the
//! direct path prints) and take the direct path when none does; `status` and
//! `daemon status` list every gateway with its upstreams; `daemon stop` ends it and its
//! servers. Real servers: the fault server (counting its starts) and server-everything.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};

use crate::util::*;

/// A project of the fault server (its starts counted in `starts`) and server-everything, with
/// the tool index filled by one `list` (so no check starts anything later).
fn project() -> Cmd {
    let cmd = Cmd::new();
    let starts = cmd.path("starts").display().to_string();
    let cmd = cmd.config_json(json!({"mcpServers": {
        "fault": fault(&["--starts", &starts]),
        "everything": everything(),
    }}));
    cmd.cmd()
        .args(["--config", "config.json", "list"])
        .stderr_any()
        .run();
    cmd
}

fn starts(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("starts"))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

fn eventually(secs: u64, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The fault server alone (its starts counted in `starts`), with a variable of its
/// environment from `TOKEN`: another TOKEN is another config set.
fn token_project() -> Cmd {
    let cmd = Cmd::new();
    let counted = cmd.path("starts").display().to_string();
    let mut entry = fault(&["--starts", &counted]);
    entry["env"] = json!({"T": "${TOKEN}"});
    cmd.config_json(json!({"mcpServers": {"fault": entry}}))
}

/// `daemon status --json`'s gateways.
fn gateways(cmd: &Cmd) -> Vec<Value> {
    let out = cmd.cmd().args(["daemon", "status", "--json"]).run();
    out.json()["gateways"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// `call fault TOOL ARGUMENTS` on the project's config, as `run` (add flags, then run it).
fn call_fault(run: Cmd, tool: &str, arguments: &str) -> Cmd {
    run.args(["--config", "config.json", "call", "fault", tool, arguments])
}

/// `serve --daemon` for the project's config, run as `run`, once it answers.
pub(super) fn start_daemon(project: &Cmd, run: Cmd) -> Running {
    let daemon = run
        .args(["--config", "config.json", "serve", "--daemon"])
        .stderr_any()
        .spawn();
    // A readiness wait, not a figure: a loaded 2-core CI machine once needed more than 20 s.
    eventually(60, "the daemon answers", || !gateways(project).is_empty());
    daemon
}

/// The socket directory of a fresh HOME (no XDG_RUNTIME_DIR).
fn state_run_dir(dir: &Path) -> PathBuf {
    dir.join(".local/state/mcp-launch/run")
}

#[test]
fn call_rides_the_daemon_over_one_warm_session_and_daemon_stop_ends_it_all() {
    let cmd = project();
    let dir = cmd.dir().to_path_buf();
    assert_eq!(starts(&dir), 1, "the list started the fault server once");
    let daemon = start_daemon(&cmd, cmd.cmd());

    let run = state_run_dir(&dir);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&run), 0o700, "the socket directory is private");
    let socket: PathBuf = gateways(&cmd)[0]["socket"].as_str().unwrap().into();
    assert!(socket.starts_with(&run), "{}", socket.display());
    assert_eq!(mode(&socket), 0o600, "the socket is private");

    for i in 0..3 {
        let message = format!(r#"{{"message": "m{i}"}}"#);
        let out = call_fault(cmd.cmd(), "echo", &message)
            .args(["--json"])
            .run();
        assert_eq!(out.json()["result"]["content"][0]["text"], format!("m{i}"));
    }
    assert_eq!(
        starts(&dir),
        2,
        "three calls through the daemon started the server once"
    );
    // The direct path is still there, and starts its own server.
    call_fault(cmd.cmd(), "echo", r#"{"message": "d"}"#)
        .args(["--daemon", "off"])
        .run();
    assert_eq!(starts(&dir), 3);

    // The daemon's answers keep the direct path's shape: a tool error, bad arguments.
    let failed = call_fault(cmd.cmd(), "fail", "{}")
        .args(["--json"])
        .status(1)
        .run();
    assert_eq!(failed.json()["error"]["type"], "tool_error");
    assert_eq!(failed.json()["result"]["isError"], true);
    let wrong = call_fault(cmd.cmd(), "add", r#"{"a": 1}"#)
        .args(["--json"])
        .status(2)
        .run();
    assert_eq!(wrong.json()["error"]["type"], "invalid_arguments");
    assert!(wrong.json()["error"]["help"]
        .as_str()
        .unwrap()
        .contains("b: integer"));

    let status = cmd.cmd().args(["status", "--json"]).run().json();
    let gateway = &status["gateways"][0];
    assert_eq!(gateway["kind"], "daemon");
    assert_eq!(gateway["pid"], json!(daemon.pid()));
    let fault = gateway["upstreams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["name"] == "fault")
        .cloned()
        .unwrap();
    assert_eq!(fault["state"], "up", "{fault}");
    // The tool index was filled by `list`, which offers servers no client capabilities: the
    // daemon re-lists the tools once the server runs, for the capabilities it relays.
    assert_eq!(
        fault["calls"], 5,
        "three echoes, a fail and the one re-listing: {fault}"
    );
    let human = cmd.cmd().args(["status"]).run();
    assert!(human.stdout.contains("daemon"), "{}", human.stdout);

    let fault_pid: i32 = std::fs::read_to_string(dir.join("starts"))
        .unwrap()
        .lines()
        .nth(1)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let stopped = cmd
        .cmd()
        .args(["--config", "config.json", "daemon", "stop", "--json"])
        .run();
    assert_eq!(stopped.json()["stopped"].as_array().unwrap().len(), 1);
    daemon.wait();
    assert_pid_gone(fault_pid, "the daemon's server after `daemon stop`");
    assert!(!socket.exists(), "the socket is removed");
    assert!(gateways(&cmd).is_empty());
}

#[test]
fn call_batch_runs_every_line_and_reports_each_with_or_without_a_daemon() {
    let cmd = project();
    cmd.cmd()
        .args(["--config", "config.json", "tool", "deny", "fault", "crash"])
        .stderr_any()
        .run();
    let batch = [
        r#"{"server": "fault", "tool": "echo", "arguments": {"message": "one"}, "id": "a"}"#,
        r#"{"server": "everything", "tool": "echo", "arguments": {"message": "two"}}"#,
        r#"{"server": "fault", "tool": "slow", "arguments": {"ms": 300}}"#,
        r#"{"server": "nope", "tool": "echo"}"#,
        r#"not json"#,
        r#"{"server": "fault", "tool": "add", "arguments": {"a": -1, "b": 2}}"#,
        r#"{"server": "fault", "tool": "crash"}"#,
        r#"{"server": "fault", "tool": "fail"}"#,
    ]
    .join("\n");
    let check = |out: &Output| {
        let answers: Vec<Value> = out
            .stdout
            .lines()
            .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
            .collect();
        assert_eq!(answers.len(), 8, "{}", out.stdout);
        let by_line = |n: u64| answers.iter().find(|a| a["line"] == n).cloned().unwrap();
        assert_eq!(by_line(1)["result"]["content"][0]["text"], "one");
        assert_eq!(by_line(1)["id"], "a");
        assert_eq!(by_line(2)["result"]["content"][0]["text"], "Echo: two");
        assert_eq!(by_line(3)["success"], true);
        assert_eq!(by_line(4)["error"]["type"], "unknown_server");
        assert_eq!(by_line(5)["error"]["type"], "invalid_json");
        assert!(by_line(5)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("line 5"));
        assert_eq!(by_line(6)["error"]["type"], "invalid_arguments");
        assert_eq!(by_line(7)["error"]["type"], "tool_denied");
        assert_eq!(by_line(8)["error"]["type"], "tool_error");
    };
    let direct = cmd
        .cmd()
        .args(["--config", "config.json", "call", "--batch", "-"])
        .stdin(&batch)
        .status(1)
        .run();
    check(&direct);

    let daemon = start_daemon(&cmd, cmd.cmd());
    let file = cmd.path("batch.jsonl");
    std::fs::write(&file, &batch).unwrap();
    let ridden = cmd
        .cmd()
        .args(["--config", "config.json", "call", "--batch", "batch.jsonl"])
        .status(1)
        .run();
    check(&ridden);
    let calls = gateways(&cmd)[0]["upstreams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["calls"].as_u64().unwrap())
        .sum::<u64>();
    assert!(
        calls >= 5,
        "the batch went through the daemon ({calls} calls)"
    );
    kill(Pid::from_raw(daemon.pid()), Signal::SIGTERM).unwrap();
    daemon.wait();
}

#[test]
fn auto_starts_one_daemon_a_second_is_refused_and_a_killed_ones_socket_is_taken_over() {
    let cmd = project();
    let dir = cmd.dir().to_path_buf();
    // XDG_RUNTIME_DIR, when set, is where the sockets go.
    let runtime = dir.join("rt");
    std::fs::create_dir(&runtime).unwrap();
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    let rt = runtime.display().to_string();
    let with_rt = || cmd.cmd().env("XDG_RUNTIME_DIR", &rt);
    let echo =
        |message: &str| call_fault(with_rt(), "echo", &format!(r#"{{"message": "{message}"}}"#));
    echo("x").args(["--daemon", "auto"]).run();
    let listed = with_rt().args(["daemon", "status", "--json"]).run().json();
    let daemon = listed["gateways"][0].clone();
    assert_eq!(daemon["kind"], "daemon", "{listed}");
    let pid = daemon["pid"].as_i64().unwrap() as i32;
    assert!(daemon["socket"].as_str().unwrap().starts_with(&rt));
    // One per config set.
    let second = with_rt()
        .args(["--config", "config.json", "serve", "--daemon", "--json"])
        .status(2)
        .run();
    assert_eq!(second.error()["type"], "daemon_running");
    // A daemon killed outright leaves its socket file: `call` takes the direct path, and a
    // new daemon takes the socket over.
    kill(Pid::from_raw(pid), Signal::SIGKILL).unwrap();
    eventually(10, "the daemon is gone", || pid_gone(pid));
    echo("y").run();
    echo("z").args(["--daemon", "auto"]).run();
    let again = with_rt().args(["daemon", "status", "--json"]).run().json();
    let new_pid = again["gateways"][0]["pid"].as_i64().unwrap() as i32;
    assert_ne!(new_pid, pid);
    with_rt().args(["daemon", "stop", "--all"]).run();
    eventually(10, "the new daemon stops", || pid_gone(new_pid));
    // Its server was in the killed daemon's process group of its own: end it here.
    for line in std::fs::read_to_string(dir.join("starts")).unwrap().lines() {
        if let Ok(server) = line.trim().parse::<i32>() {
            let _ = kill(Pid::from_raw(server), Signal::SIGKILL);
        }
    }
}

#[test]
fn a_changed_variable_means_another_config_set_and_the_old_daemon_is_not_ridden() {
    let cmd = token_project();
    let dir = cmd.dir().to_path_buf();
    let with = |token: &str| cmd.cmd().env("TOKEN", token);
    with("a")
        .args(["--config", "config.json", "list"])
        .stderr_any()
        .run();
    let daemon = start_daemon(&cmd, with("a"));
    let echo = |token: &str| {
        call_fault(with(token), "echo", r#"{"message": "m"}"#).run();
    };
    echo("a");
    echo("a");
    assert_eq!(
        starts(&dir),
        2,
        "the daemon started the server once for both calls"
    );
    echo("b");
    assert_eq!(
        starts(&dir),
        3,
        "another TOKEN: the direct path, not the old daemon"
    );
    kill(Pid::from_raw(daemon.pid()), Signal::SIGTERM).unwrap();
    daemon.wait();
}

/// The project's tool index and search indexes, removed: a `list` or `search` that answers
/// without starting a server from then on answers from a daemon's memory.
fn forget_the_indexes(dir: &Path) {
    let cache = dir.join(".cache/mcp-launch");
    let index = cache.join("tool-index.json");
    assert!(
        index.is_file(),
        "{} is where the tool index lives",
        index.display()
    );
    for file in std::fs::read_dir(&cache).unwrap().flatten() {
        let name = file.file_name().to_string_lossy().into_owned();
        if name == "tool-index.json" || name.starts_with("search-") {
            std::fs::remove_file(file.path()).unwrap();
        }
    }
}

/// `ARGS` on the project's config, as `run`, through whatever `--daemon HOW` says.
pub(super) fn view(run: Cmd, how: &str, args: &[&str]) -> Output {
    run.args(["--config", "config.json"])
        .args(args)
        .args(["--daemon", how])
        .stderr_any()
        .run()
}

/// The views compared between the direct path and a daemon: listings, searches (with
/// schemas and parts), an inspection — human and JSON.
const VIEWS: &[&[&str]] = &[
    &["list", "--json"],
    &["list"],
    &["list", "fault", "--json"],
    &["list", "fault", "--all"],
    &["search", "echo", "--json"],
    &[
        "search",
        "add two numbers",
        "--schema",
        "--explain",
        "--json",
    ],
    &["search", "add two numbers", "--explain"],
    &[
        "search",
        "^e",
        "--method",
        "regex",
        "--server",
        "everything",
        "--json",
    ],
    &["inspect", "fault", "add", "--json"],
    &["inspect", "everything", "echo"],
];

#[test]
fn list_inspect_and_search_through_a_daemon_print_what_the_direct_path_prints() {
    let cmd = project();
    let dir = cmd.dir().to_path_buf();
    // The overrides touch one server (its definitions travel), not the other (its counts do).
    cmd.cmd()
        .args(["--config", "config.json", "tool", "deny", "fault", "crash"])
        .stderr_any()
        .run();
    let direct: Vec<String> = VIEWS
        .iter()
        .map(|args| {
            let out = view(cmd.cmd(), "off", args);
            out.stdout
        })
        .collect();
    assert_eq!(
        starts(&dir),
        1,
        "the direct views answered from the tool index"
    );
    let daemon = start_daemon(&cmd, cmd.cmd());
    // From here a direct answer would have to start the servers again.
    forget_the_indexes(&dir);
    for (args, direct) in VIEWS.iter().zip(&direct) {
        // `inspect` lists the server over the daemon's session: its status is no part of it.
        let ridden = cmd.cmd().args(["--config", "config.json"]).args(*args);
        let ridden = ridden.stderr_any().run();
        assert_eq!(&ridden.stdout, direct, "{args:?} through the daemon");
    }
    assert_eq!(
        starts(&dir),
        2,
        "only `inspect fault` started the fault server, in the daemon"
    );
    let fault = |gateways: &[Value]| {
        (gateways[0]["upstreams"].as_array().unwrap().iter())
            .find(|u| u["name"] == "fault")
            .cloned()
            .unwrap()
    };
    assert_eq!(
        fault(&gateways(&cmd))["state"],
        "up",
        "inspect left it warm"
    );
    // The next call is warm: no start.
    call_fault(cmd.cmd(), "echo", r#"{"message": "warm"}"#).run();
    assert_eq!(starts(&dir), 2);
    // `list` now reads the running server's tools over its session: live, nothing started.
    let listed = view(cmd.cmd(), "use", &["list", "--json"]).json();
    let server = |name: &str| {
        (listed["servers"].as_array().unwrap().iter())
            .find(|s| s["name"] == name)
            .cloned()
            .unwrap()
    };
    assert_eq!(server("fault")["status"], "connected", "{listed}");
    assert_eq!(
        server("everything")["status"],
        "connected",
        "inspected too: {listed}"
    );
    assert_eq!(starts(&dir), 2, "list through the daemon started nothing");

    // --refresh checks live here: the direct path, whatever runs.
    view(cmd.cmd(), "use", &["list", "fault", "--refresh", "--json"]);
    assert_eq!(starts(&dir), 3, "--refresh took the direct path");
    // So does an index that never answers: the daemon's copy of it does not either.
    let live = cmd.cmd().env("MCP_LAUNCH_INDEX_TTL", "0");
    view(
        live,
        "use",
        &["search", "echo", "--server", "fault", "--json"],
    );
    assert_eq!(
        starts(&dir),
        4,
        "MCP_LAUNCH_INDEX_TTL=0 took the direct path"
    );

    // Input errors read as on the direct path.
    for args in [
        &["list", "nope", "--json"][..],
        &["inspect", "fault", "nope", "--json"],
        &["search", "(", "--method", "regex", "--json"],
    ] {
        let run = |how: &str| {
            cmd.cmd()
                .args(["--config", "config.json"])
                .args(args)
                .args(["--daemon", how])
                .status(2)
                .stderr_any()
                .run()
                .stdout
        };
        assert_eq!(run("use"), run("off"), "{args:?}");
    }
    kill(Pid::from_raw(daemon.pid()), Signal::SIGTERM).unwrap();
    daemon.wait();
}

#[test]
fn views_take_the_direct_path_without_a_daemon_past_a_broken_one_and_for_another_config_set() {
    let cmd = token_project();
    let dir = cmd.dir().to_path_buf();
    let with = |token: &str| cmd.cmd().env("TOKEN", token);
    // No daemon: the direct path (the first list checks the server live).
    let first = view(with("a"), "use", &["list", "--json"]).json();
    assert_eq!(first["servers"][0]["status"], "connected", "{first}");
    assert_eq!(starts(&dir), 1);
    let direct = view(with("a"), "use", &["list", "--json"]).stdout;
    assert_eq!(starts(&dir), 1, "then the tool index answers");

    // Killed below: the exit status of SIGKILL.
    let daemon = start_daemon(&cmd, with("a").status(137));
    let socket: PathBuf = gateways(&cmd)[0]["socket"].as_str().unwrap().into();
    forget_the_indexes(&dir);
    assert_eq!(view(with("a"), "use", &["list", "--json"]).stdout, direct);
    assert_eq!(starts(&dir), 1, "the daemon answered");
    // Another TOKEN is another config set: not this daemon's to answer.
    let other = view(with("b"), "use", &["list", "--json"]).json();
    assert_eq!(other["servers"][0]["status"], "connected", "{other}");
    assert_eq!(
        starts(&dir),
        2,
        "another TOKEN: the direct path, not the old daemon"
    );
    let searched = view(with("b"), "use", &["search", "echo", "--json"]).json();
    assert_eq!(searched["results"][0]["tool"], "echo", "{searched}");

    // A daemon killed outright leaves its socket: the direct path answers.
    kill(Pid::from_raw(daemon.pid()), Signal::SIGKILL).unwrap();
    daemon.wait();
    assert!(socket.exists(), "the killed daemon left its socket");
    let after = view(with("a"), "use", &["list", "--json"]).json();
    assert_eq!(after["servers"][0]["tools"], first["servers"][0]["tools"]);

    // A socket that greets as a gateway and then answers nonsense: the direct path again.
    let _ = std::fs::remove_file(&socket);
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    std::thread::spawn(move || {
        use std::io::{BufRead, Write};
        for stream in listener.incoming().flatten() {
            let mut write = stream.try_clone().unwrap();
            let _ = writeln!(write, r#"{{"mcp-launch": "gateway"}}"#);
            for line in std::io::BufReader::new(stream)
                .lines()
                .map_while(Result::ok)
            {
                let id = serde_json::from_str::<Value>(&line).unwrap_or_default()["id"].clone();
                let answer = json!({"id": id, "result": {"reports": [{"name": 1}], "hits": "x"}});
                let _ = writeln!(write, "{answer}");
            }
        }
    });
    let listed = view(with("a"), "use", &["list", "--json"]).json();
    assert_eq!(listed["servers"][0]["name"], "fault", "{listed}");
    let searched = view(with("a"), "use", &["search", "echo", "--json"]).json();
    assert_eq!(searched["results"][0]["tool"], "echo", "{searched}");
    let inspected = view(with("a"), "use", &["inspect", "fault", "echo", "--json"]).json();
    assert_eq!(inspected["tool"], "echo", "{inspected}");
    for line in std::fs::read_to_string(dir.join("starts")).unwrap().lines() {
        if let Ok(server) = line.trim().parse::<i32>() {
            let _ = kill(Pid::from_raw(server), Signal::SIGKILL);
        }
    }
}

#[test]
fn search_by_meaning_through_a_daemon_ranks_and_scores_as_the_direct_path() {
    let model = crate::semantic::shared_model().display().to_string();
    let cmd = project();
    let dir = cmd.dir().to_path_buf();
    let with_model = || cmd.cmd().env("MCP_LAUNCH_MODEL_DIR", &model);
    let searches: &[&[&str]] = &[
        &["search", "say something back", "--explain", "--json"],
        &[
            "search",
            "sum of two integers",
            "--method",
            "semantic",
            "--json",
        ],
        &[
            "search",
            "sum of two integers",
            "--explain",
            "--limit",
            "10",
        ],
    ];
    // The tools' vectors first (a search does not wait for them: it ranks by words meanwhile).
    view(with_model(), "off", &["search", "echo", "--wait", "--json"]);
    let direct: Vec<Output> = (searches.iter())
        .map(|args| view(with_model(), "off", args))
        .collect();
    let hybrid = direct[0].json();
    assert_eq!(hybrid["method"], "hybrid", "{hybrid}");
    assert!(
        hybrid["results"][0]["explain"]["semantic"].is_number(),
        "ranked by meaning: {hybrid}"
    );
    let daemon = start_daemon(&cmd, with_model());
    forget_the_indexes(&dir);
    for (args, direct) in searches.iter().zip(&direct) {
        let ridden = view(with_model(), "use", args);
        assert_eq!(ridden.stdout, direct.stdout, "{args:?} through the daemon");
    }
    assert_eq!(starts(&dir), 1, "the daemon answered: nothing started");
    kill(Pid::from_raw(daemon.pid()), Signal::SIGTERM).unwrap();
    daemon.wait();
}

#[test]
fn a_server_that_cannot_start_reads_the_same_through_the_daemon_which_does_not_retry_it() {
    let cmd = Cmd::new();
    let counted = cmd.path("starts").display().to_string();
    let cmd = cmd.config_json(json!({"mcpServers": {
        "fault": fault(&["--starts", &counted]),
        "missing": {"command": "mcp-launch-test-no-such-command"},
    }}));
    let list = |how: &str| {
        cmd.cmd()
            .args(["--config", "config.json", "list", "--json", "--daemon", how])
            .status(1)
            .run()
    };
    list("off");
    let direct = list("off");
    assert_eq!(
        direct.server("missing")["error"]["type"],
        "command_not_found"
    );
    let daemon = start_daemon(&cmd, cmd.cmd());
    forget_the_indexes(cmd.dir());
    let ridden = list("use");
    assert_eq!(
        ridden.stdout, direct.stdout,
        "the daemon's failed check reads as the direct one"
    );
    assert_eq!(
        starts(cmd.dir()),
        1,
        "fault answered from the index both ways"
    );
    kill(Pid::from_raw(daemon.pid()), Signal::SIGTERM).unwrap();
    daemon.wait();
}

/// `daemon metrics` prints the daemon's exposition through its socket: the call made through
/// it is there (by server, never by its arguments); with `--log-format json` every line the
/// daemon logs is one JSON object.
#[test]
fn daemon_metrics_shows_the_calls_it_served_and_logs_are_json_lines() {
    let project = project();
    let log = project.path("daemon.jsonl").display().to_string();
    let run = project
        .cmd()
        .args(["--log-format", "json", "--log-file", &log]);
    let daemon = start_daemon(&project, run);
    let secret = "sk-live-never-in-metrics-41d2";
    let arguments = json!({"message": secret}).to_string();
    project
        .cmd()
        .args([
            "--config",
            "config.json",
            "call",
            "everything",
            "echo",
            &arguments,
        ])
        .run();
    let out = project
        .cmd()
        .args(["--config", "config.json", "daemon", "metrics"])
        .run();
    let text = out.stdout.clone();
    let served = text.lines().find(|l| {
        l.starts_with("mcp_launch_upstream_request_duration_seconds_count{")
            && l.contains("everything")
            && l.contains(r#"method="tools/call""#)
            && l.contains(r#"outcome="ok""#)
    });
    assert_eq!(
        served.and_then(|l| l.rsplit(' ').next()),
        Some("1"),
        "{text}"
    );
    assert!(text.contains("mcp_launch_upstream_starts_total"), "{text}");
    assert!(!text.contains(secret), "{text}");
    let json = project
        .cmd()
        .args(["--config", "config.json", "daemon", "metrics", "--json"])
        .run()
        .json();
    assert!(
        json["metrics"].as_str().unwrap_or("").ends_with("# EOF\n"),
        "{json}"
    );
    project
        .cmd()
        .args(["--config", "config.json", "daemon", "stop"])
        .run();
    daemon.wait();
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.lines().count() > 0, "the daemon logged nothing");
    for line in logged.lines() {
        let entry: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("a log line is not JSON ({e}): {line}"));
        assert!(
            entry["level"].is_string() && entry["timestamp"].is_string(),
            "{line}"
        );
    }
}

#[test]
fn daemon_metrics_without_a_daemon_says_how_to_start_one() {
    let project = token_project();
    let out = project
        .cmd()
        .env("TOKEN", "none")
        .args(["--config", "config.json", "daemon", "metrics", "--json"])
        .status(1)
        .run();
    assert_eq!(out.error()["type"], "daemon_not_running", "{}", out.error());
}
