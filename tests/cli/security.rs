//! Security properties (issue: untrusted repos, planted state, secrets that leak), one test per
//! defence, each against the real binary.

use serde_json::json;

use crate::util::{everything, fault, Cmd};

/// `up --controller <controller>` of the project's `a.json`, no tunnel, on free ports for the
/// front and mcpo — away from mcpo's default 8800, which parallel tests race for (more
/// arguments and variables may follow before `spawn`).
fn up_a(cmd: &Cmd, controller: &str) -> Cmd {
    let port = crate::util::free_ports(2);
    cmd.cmd()
        .args(["up", "--config", "a.json", "--tunnel", "none"])
        .args(["--controller", controller])
        .args(["--port", &port.to_string()])
        .args(["--mcpo-port", &(port + 1).to_string()])
        .stderr_any()
}

/// `POST /<route>` on stack `a`'s front with its key and `arguments`: status and body.
fn post_to_a(
    state: &serde_json::Value,
    route: &str,
    arguments: serde_json::Value,
) -> (u16, serde_json::Value) {
    let a = crate::launch_util::stack(state, "a");
    let url = format!("http://127.0.0.1:{}/{route}", a["port"]);
    let key = a["api_key"].as_str().unwrap();
    crate::launch_util::http("POST", &url, &[("X-API-Key", key)], Some(arguments))
}

/// A third-party server never receives our own secrets: `MCP_LAUNCH_API_KEY` and
/// `TUNNEL_TOKEN` are withheld from every child (cloudflared alone is handed the token). It
/// does receive the marker that lets `down` recognise what we started.
#[test]
fn children_do_not_inherit_our_secrets() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"everything": everything()}}))
        .env("MCP_LAUNCH_API_KEY", "front-key-that-servers-must-not-see")
        .env("TUNNEL_TOKEN", "tunnel-token-that-servers-must-not-see")
        .args(["call", "everything", "get-env", "--json"])
        .run()
        .json();
    let env = out["result"]["content"][0]["text"].as_str().unwrap();
    assert!(env.contains("\"HOME\""), "the server's environment: {env}");
    assert!(
        !env.contains("must-not-see"),
        "a secret reached the server: {env}"
    );
    assert!(env.contains("MCP_LAUNCH_PARENT"), "{env}");
}

/// A process of ours that mcp-launch did not start: leads its own group, as recorded groups do.
struct Bystander(std::process::Child);

impl Bystander {
    fn start() -> Bystander {
        use std::os::unix::process::CommandExt;
        let child = std::process::Command::new("sleep")
            .arg("1000")
            .process_group(0)
            .spawn()
            .expect("sleep starts");
        let pid = child.id() as i32;
        // Wait for the exec: a fresh fork still has the test binary's start time and name.
        for _ in 0..500 {
            if std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.starts_with(b"sleep"))
            {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        Bystander(child)
    }

    /// mcp-launch itself, as the user runs it elsewhere (a long-lived `tools serve` in another
    /// directory, as a `serve --daemon` would be): our program, not this project's `up`.
    fn ours_elsewhere(dir: &std::path::Path) -> Bystander {
        use std::os::unix::process::CommandExt;
        let child = std::process::Command::new(crate::util::BIN)
            .args(["tools", "serve", "--root", "."])
            .current_dir(dir)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .spawn()
            .expect("mcp-launch starts");
        let pid = child.id() as i32;
        for _ in 0..500 {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            if cmdline.starts_with(crate::util::BIN.as_bytes()) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        Bystander(child)
    }

    fn record(&self) -> serde_json::Value {
        let pid = self.0.id() as i32;
        json!({"pgid": pid, "started": mcp_launch::process::start_time(pid)})
    }

    fn alive(&self) -> bool {
        crate::util::pid_alive(self.0.id() as i32)
    }
}

impl Drop for Bystander {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn planted_stack(
    name: &str,
    supervisor: serde_json::Value,
    groups: serde_json::Value,
) -> serde_json::Value {
    let mut stack = json!({
        "name": name, "config": "/nonexistent/c.json", "supervisor": supervisor,
        "controller": "mcpo", "controller_process": null, "controller_port": 1,
        "host": "127.0.0.1", "port": 1, "tunnel": "none", "tunnel_process": null,
        "public_url": "http://127.0.0.1:1", "api_key": "k", "admin_token": "t",
        "operations": 0, "started_at": "2026-01-01T00:00:00Z",
    });
    for (key, value) in groups.as_object().unwrap() {
        stack[key] = value.clone();
    }
    stack
}

/// A planted `state.json` cannot make `down` signal what we did not start: pid/pgid 1 with no
/// start time (which `descendants(1)` turned into every process of the user), a process of ours
/// recorded with its true start time but not running mcp-launch, and a group it did not start.
#[test]
fn a_planted_state_file_makes_down_signal_nothing_it_did_not_start() {
    let (supervisor, group) = (Bystander::start(), Bystander::start());
    let state = json!({"version": 1, "stacks": [
        planted_stack("init", json!({"pgid": 1, "started": null}),
            json!({"controller_process": {"pgid": 1, "started": null}})),
        planted_stack("mine", supervisor.record(),
            json!({"tunnel": "quick", "tunnel_process": group.record()})),
    ]});
    let cmd = Cmd::new().file(".mcp-launch/state.json", &state.to_string());
    let out = cmd.cmd().args(["down", "--json"]).run().json();
    assert!(
        supervisor.alive() && group.alive(),
        "down signalled a bystander: {out}"
    );
    let refused: Vec<String> = out["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["refused"].as_array().unwrap().iter())
        .map(|r| r.as_str().unwrap().to_string())
        .collect();
    let all = refused.join("\n");
    assert!(all.contains("pid 1 is reserved"), "{all}");
    assert!(
        all.contains("runs \"sleep\", which this stack never started"),
        "{all}"
    );
    assert!(
        all.contains("was not started by the recorded mcp-launch up"),
        "{all}"
    );
    assert!(
        !cmd.path(".mcp-launch/state.json").exists(),
        "the planted records are dropped"
    );
}

/// Issue 24, Low 9: a planted `state.json` naming the user's own mcp-launch elsewhere (their
/// `serve --daemon`) as a stack's supervisor made `down` stop it: it ran mcp-launch, which was
/// all the check asked. A supervisor must be an `up` working in this very project.
#[test]
fn a_planted_state_file_cannot_make_down_stop_our_program_running_elsewhere() {
    let elsewhere = tempfile::tempdir().unwrap();
    let daemon = Bystander::ours_elsewhere(elsewhere.path());
    let state = json!({"version": 1, "stacks": [
        planted_stack("mine", daemon.record(), json!({})),
    ]});
    let cmd = Cmd::new().file(".mcp-launch/state.json", &state.to_string());
    let out = cmd.cmd().args(["down", "--json"]).run().json();
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        daemon.alive(),
        "down stopped the user's own mcp-launch: {out}"
    );
    let refused = out["stacks"][0]["refused"].to_string();
    assert!(
        refused.contains("is not an `mcp-launch up` run in"),
        "{out}"
    );
}

/// `.mcp-launch` as a symlink out of the project is refused, never followed.
#[test]
fn a_state_dir_linked_out_of_the_project_is_refused() {
    let cmd = Cmd::new();
    let elsewhere = cmd.mkdir("elsewhere");
    let project = cmd.mkdir("project");
    std::os::unix::fs::symlink(&elsewhere, project.join(".mcp-launch")).unwrap();
    let out = cmd
        .cmd()
        .current_dir("project")
        .args(["down", "--json"])
        .status(2)
        .run();
    assert_eq!(out.error()["type"], "state_dir_escapes", "{out}");
}

/// mcpo's config holds the servers' resolved secrets: owner-only, git-ignored, gone once the
/// stack stops; a secret-bearing file that git tracks anyway is warned about.
#[test]
fn mcpo_config_lives_only_while_mcpo_does_and_tracked_secrets_are_warned_of() {
    use std::os::unix::fs::PermissionsExt;
    let cmd = crate::launch_util::project(&[("a.json", json!({"everything": everything()}))]);
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(cmd.dir())
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    let config = cmd.path(".mcp-launch/stacks/a/mcpo.json");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "{}").unwrap();
    git(&["init", "-q"]);
    git(&["add", "-f", ".mcp-launch/stacks/a/mcpo.json"]);
    let up = up_a(&cmd, "mcpo").spawn();
    let state = crate::launch_util::wait_ready(&up, cmd.dir(), 1);
    let mode = std::fs::metadata(&config).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let out = crate::launch_util::terminate(up, &state);
    assert!(!config.exists(), "mcpo's config outlived the stack");
    assert!(
        out.stderr
            .contains(".mcp-launch/stacks/a/mcpo.json is tracked by git and may hold secrets"),
        "{}",
        out.stderr
    );
}

/// `--log-file` is created owner-only and never opened through a symlink planted at its name.
#[test]
fn log_files_are_private_and_never_follow_a_symlink() {
    use std::os::unix::fs::PermissionsExt;
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"everything": everything()}}));
    let out = cmd
        .cmd()
        .args(["list", "--config", "config.json", "--log-file", "run.log"])
        .stderr_any()
        .run();
    let mode = std::fs::metadata(out.path("run.log"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let victim = cmd.path("victim.txt");
    std::fs::write(&victim, "precious\n").unwrap();
    std::os::unix::fs::symlink(&victim, cmd.path("planted.log")).unwrap();
    cmd.cmd()
        .args([
            "list",
            "--config",
            "config.json",
            "--log-file",
            "planted.log",
        ])
        .status(2)
        .stderr_has("is not a symlink")
        .run();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
}

/// A checkout's `./.mcp.json` runs nothing until the user trusts the directory; a change to
/// it (or a new `./.env`) asks again; `trust --revoke` forgets. The would-be payload writes a
/// marker file, so "nothing ran" is checked, not assumed.
#[test]
fn a_discovered_config_runs_nothing_until_the_directory_is_trusted() {
    let payload = |marker: &str| {
        json!({"mcpServers": {"helpful": {
            "command": "/bin/sh", "args": ["-c", format!("touch {marker}; exit 1")]
        }}})
        .to_string()
    };
    let cmd = Cmd::new().file(".mcp.json", &payload("ran-before-trust"));
    let refused = cmd.cmd().args(["list", "--json"]).status(2).run();
    assert_eq!(refused.error()["type"], "untrusted_directory", "{refused}");
    assert!(
        refused.error()["help"]
            .as_str()
            .unwrap()
            .contains("mcp-launch trust"),
        "{refused}"
    );
    assert!(
        !cmd.path("ran-before-trust").exists(),
        "the command ran untrusted"
    );

    cmd.cmd().args(["trust", "--yes"]).run();
    cmd.cmd().args(["list"]).status(1).stderr_any().run();
    assert!(cmd.path("ran-before-trust").exists(), "trusted, it runs");

    // Changed content, or a .env appearing, asks again.
    std::fs::write(cmd.path(".mcp.json"), payload("ran-after-change")).unwrap();
    cmd.cmd()
        .args(["list"])
        .status(2)
        .stderr_has("is not trusted yet")
        .run();
    assert!(!cmd.path("ran-after-change").exists());
    cmd.cmd().args(["trust", "--yes"]).run();
    std::fs::write(cmd.path(".env"), "NODE_OPTIONS=--require ./evil.js\n").unwrap();
    cmd.cmd()
        .args(["list"])
        .status(2)
        .stderr_has("is not trusted yet")
        .run();
    std::fs::remove_file(cmd.path(".env")).unwrap();
    cmd.cmd().args(["list"]).status(1).stderr_any().run();
    let out = cmd.cmd().args(["trust", "--revoke", "--json"]).run().json();
    assert_eq!(out["revoked"], true, "{out}");
    cmd.cmd()
        .args(["list"])
        .status(2)
        .stderr_has("is not trusted yet")
        .run();
}

/// A remote server's URL often carries its key: errors and logs show it masked.
#[test]
fn secrets_in_server_urls_never_reach_errors_or_logs() {
    let port = crate::util::free_port();
    let url = format!("http://bob:pa55word@127.0.0.1:{port}/mcp?api_key=s3cret-in-url&v=2");
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"remote": {"url": url}}}));
    let out = cmd
        .args(["list", "--json", "-vv", "--log-file", "run.log"])
        .status(1)
        .stderr_any()
        .run();
    let log = std::fs::read_to_string(out.path("run.log")).unwrap();
    for (what, text) in [
        ("stdout", &out.stdout),
        ("stderr", &out.stderr),
        ("log", &log),
    ] {
        assert!(
            !text.contains("s3cret-in-url") && !text.contains("pa55word"),
            "{what}: {text}"
        );
    }
    let message = out.server("remote")["error"]["message"].to_string();
    assert!(message.contains("api_key=****"), "{message}");
}

/// An upstream that echoes its request in an error body (issue 24, Medium 4): our header
/// values and the URL's key came back in the error, the log and what the front and the
/// gateway relay. A real socket here answers 500 with the request it got.
#[test]
fn an_upstream_echoing_our_credentials_in_its_error_is_masked() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for mut socket in listener.incoming().flatten() {
            let mut request = vec![0u8; 16384];
            let n = socket.read(&mut request).unwrap_or(0);
            let head = format!(
                "HTTP/1.1 500 Internal Server Error\r\ncontent-length: {n}\r\nconnection: close\r\n\r\n"
            );
            let _ = socket.write_all(head.as_bytes());
            let _ = socket.write_all(&request[..n]);
        }
    });
    let remote = json!({"url": format!("http://127.0.0.1:{port}/mcp?api_key=url-k3y-secret"),
        "headers": {"X-Token": "x-t0ken-secret", "Authorization": "Bearer bearer-s3cret"}});
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"remote": remote}}));
    let out = cmd
        .args(["list", "--json", "-vv", "--log-file", "run.log"])
        .status(1)
        .stderr_any()
        .run();
    let log = std::fs::read_to_string(out.path("run.log")).unwrap();
    let message = out.server("remote")["error"]["message"].to_string();
    assert!(message.contains("HTTP 500"), "{message}");
    assert!(
        message.contains("x-token"),
        "the echo is relayed: {message}"
    );
    for (what, text) in [
        ("stdout", &out.stdout),
        ("stderr", &out.stderr),
        ("log", &log),
    ] {
        for secret in ["x-t0ken-secret", "bearer-s3cret", "url-k3y-secret"] {
            assert!(!text.contains(secret), "{what} holds {secret}: {text}");
        }
    }
}

/// On a shared host `auto` picks the native controller: mcpo's key would sit on its command
/// line for the other users to read. (Detection itself is tested in `process::users`; here the
/// override stands in for a neighbour, which would sway every other test's `auto` meanwhile.)
#[test]
fn auto_prefers_the_native_controller_on_a_shared_host() {
    let cmd = crate::launch_util::project(&[("a.json", json!({"everything": everything()}))]);
    let up = up_a(&cmd, "auto")
        .env("MCP_LAUNCH_SHARED_HOST", "yes")
        .stderr_has("other users run processes here")
        .spawn();
    let state = crate::launch_util::wait_ready(&up, cmd.dir(), 1);
    assert_eq!(
        crate::launch_util::stack(&state, "a")["controller"],
        "native"
    );
    crate::launch_util::terminate(up, &state);
}

/// Whatever a config hands a server (its `env` values, whatever their names) and whatever a
/// client sends a tool never reaches a log, a warning or an error: a server that prints its
/// connection string, one that fails quoting it, and mcpo logging each call's arguments at
/// INFO are all masked before the stderr rings store their lines.
#[test]
fn server_secrets_and_call_arguments_stay_out_of_logs_and_warnings() {
    let mut good = fault(&["--print-env", "CONN_STRING"]);
    good["env"] = json!({"CONN_STRING": "conn-s3cret-value"});
    let bad = json!({
        "command": "sh", "args": ["-c", "echo \"cannot reach $DB_URL\" >&2; exit 1"],
        "env": {"DB_URL": "postgres://u:pw-s3cret@h/db"},
    });
    let cmd = crate::launch_util::project(&[("a.json", json!({"good": good, "bad": bad}))]);
    let up = up_a(&cmd, "mcpo")
        .args(["--log-file", "up.log", "-v"])
        .spawn();
    let state = crate::launch_util::wait_ready(&up, cmd.dir(), 1);
    let (status, body) = post_to_a(&state, "good/echo", json!({"message": "argument-s3cret"}));
    assert_eq!(status, 200, "{body}");
    let log_path = cmd.path("up.log");
    // mcpo's log line travels through a pipe and our reader: poll for it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !std::fs::read_to_string(&log_path).is_ok_and(|l| l.contains("with args: ****")) {
        assert!(
            std::time::Instant::now() < deadline,
            "mcpo's call line never reached the log"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = crate::launch_util::terminate(up, &state);
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(log.contains("CONN_STRING=****"), "{log}");
    assert!(out.stderr.contains("cannot reach ****"), "{}", out.stderr);
    for (what, text) in [
        ("stdout", &out.stdout),
        ("stderr", &out.stderr),
        ("log", &log),
    ] {
        assert!(!text.contains("s3cret"), "{what}: {text}");
    }
}

/// At trace level (`-vvv`) the log shows neither a call's arguments nor a server's raw stderr.
#[test]
fn trace_logs_hold_no_arguments_and_no_unmasked_stderr() {
    let mut good = fault(&["--print-env", "CONN_STRING"]);
    good["env"] = json!({"CONN_STRING": "conn-s3cret-value"});
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"good": good}}));
    let out = cmd
        .args(["call", "good", "echo", r#"{"message": "argument-s3cret"}"#])
        .args(["-vvv", "--log-file", "call.log"])
        .stderr_any()
        .run();
    let log = std::fs::read_to_string(out.path("call.log")).unwrap();
    assert!(log.contains("CONN_STRING=****"), "{log}");
    assert!(!log.contains("s3cret"), "{log}");
    assert!(
        out.stdout.contains("argument-s3cret"),
        "the result itself is the user's"
    );
}

/// A tool that never returns behind mcpo costs the caller `MCP_LAUNCH_FORWARD_TIMEOUT`, then a
/// clear 504 that names neither mcpo's address nor anything it logged.
#[test]
fn a_call_stuck_in_mcpo_ends_in_a_clear_504() {
    let cmd = crate::launch_util::project(&[("a.json", json!({"f": fault(&[])}))]);
    let up = up_a(&cmd, "mcpo")
        .env("MCP_LAUNCH_FORWARD_TIMEOUT", "2s")
        .spawn();
    let state = crate::launch_util::wait_ready(&up, cmd.dir(), 1);
    let started = std::time::Instant::now();
    let (status, body) = post_to_a(&state, "f/hang", json!({}));
    assert_eq!(status, 504, "{body}");
    assert_eq!(body["error"]["type"], "upstream_timeout", "{body}");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    let a = crate::launch_util::stack(&state, "a");
    let mcpo = format!(":{}", a["controller_port"]);
    let text = body.to_string();
    assert!(
        !text.contains(&mcpo) && !text.contains("Traceback"),
        "{text}"
    );
    crate::launch_util::terminate(up, &state);
}

/// The caps on what servers send are the user's to move: a server that pages forever is cut
/// at `MCP_LAUNCH_MAX_TOOL_PAGES` with a warning naming it, a result over
/// `MCP_LAUNCH_MAX_MESSAGE_BYTES` is never taken (its call fails at once as
/// `message_too_large`), and a bad value of any cap is refused before
/// anything starts (exit 2, `invalid_limit`, naming the variable and the range).
#[test]
fn caps_on_what_servers_send_can_be_moved_within_bounds() {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"f": fault(&["--infinite-pages"])}}));
    let out = cmd
        .cmd()
        .env("MCP_LAUNCH_MAX_TOOL_PAGES", "3")
        .args(["--config", "config.json", "list", "f", "--json"])
        .run()
        .json();
    let warnings = out["warnings"].to_string();
    assert!(
        warnings.contains("stopped paging after 3 pages; the server keeps sending cursors"),
        "{out}"
    );
    assert!(
        warnings.contains("MCP_LAUNCH_MAX_TOOL_PAGES raises the cap"),
        "{out}"
    );
    assert_eq!(out["tools"].as_array().unwrap().len(), 3, "{out}");

    let huge = |cap: &str| {
        cmd.cmd()
            .env("MCP_LAUNCH_MAX_MESSAGE_BYTES", cap)
            .args(["--config", "config.json", "call", "f", "huge"])
            .args([r#"{"bytes": 2000000}"#, "--json"])
    };
    huge("4MiB").run();
    // The over-long answer fails its call at once, not at the default 30 s timeout.
    let out = huge("1MiB")
        .status(1)
        .stderr_has("MCP_LAUNCH_MAX_MESSAGE_BYTES")
        .run();
    assert_eq!(out.error()["type"], "message_too_large", "{out}");
    assert!(
        out.error()["help"]
            .as_str()
            .unwrap()
            .contains("MCP_LAUNCH_MAX_MESSAGE_BYTES"),
        "{out}"
    );
    assert!(out.elapsed < std::time::Duration::from_secs(20), "{out}");

    for (name, value) in [
        ("MCP_LAUNCH_MAX_MESSAGE_BYTES", "0"),
        ("MCP_LAUNCH_MAX_MESSAGE_BYTES", "lots"),
        ("MCP_LAUNCH_MAX_QUEUED_MESSAGES", "1e9"),
        ("MCP_LAUNCH_MAX_TOOL_PAGES", "0"),
        ("MCP_LAUNCH_MAX_IN_FLIGHT", "100000"),
    ] {
        let out = cmd
            .cmd()
            .env(name, value)
            .args(["--config", "config.json", "list", "--json"])
            .status(2)
            .run();
        let error = out.error();
        assert_eq!(error["type"], "invalid_limit", "{out}");
        let message = error["message"].as_str().unwrap();
        assert!(
            message.starts_with(&format!("{name} {value:?} is ")),
            "{out}"
        );
        assert!(error["help"].as_str().unwrap().contains(name), "{out}");
    }
}

/// A process that takes mcpo's port between our check and mcpo's bind answers the readiness
/// probe, but never gets the key: `up` sees the listener is not in mcpo's process group, stops
/// with `port_squatted` naming the squatter's pid, and sends it nothing else. (The stand-in
/// "mcpo" starts the squatter in a session of its own and never binds.)
#[test]
fn a_squatter_on_mcpos_port_is_named_and_never_sent_the_key() {
    let cmd = crate::launch_util::project(&[("a.json", json!({"f": fault(&[])}))]);
    let squatter = crate::util::manifest_dir().join("tests/fixtures/port_squatter.py");
    let (log, pidfile) = (cmd.path("squatter.log"), cmd.path("squatter.pid"));
    let out = up_a(&cmd, "mcpo")
        .env("MCP_LAUNCH_MCPO", &squatter.display().to_string())
        .env("SQUATTER_LOG", &log.display().to_string())
        .env("SQUATTER_PID", &pidfile.display().to_string())
        .args(["--json"])
        .status(1)
        .run();
    let pid: i32 = std::fs::read_to_string(&pidfile).unwrap().parse().unwrap();
    crate::launch_util::signal(pid, nix::sys::signal::Signal::SIGKILL);
    let error = &out.json()["errors"][0]["error"];
    assert_eq!(error["type"], "port_squatted", "{out}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains(&format!("process {pid}")),
        "{out}"
    );
    let seen = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        !seen.contains("Bearer"),
        "the squatter was sent the key: {seen}"
    );
}

/// A config that came with the directory cannot put a variable of the user's environment into
/// a remote server's URL unless the entry declares it (even once the directory is trusted);
/// the same file named with `--config` is the user's own choice.
#[test]
fn a_discovered_remote_url_reads_no_undeclared_environment_variable() {
    let port = crate::util::free_port();
    let url = format!("http://127.0.0.1:{port}/mcp?k=${{MCP_TEST_CLOUD_SECRET}}");
    let cmd = Cmd::new()
        .file(
            ".mcp.json",
            &json!({"mcpServers": {"remote": {"url": url}}}).to_string(),
        )
        .env("MCP_TEST_CLOUD_SECRET", "s3cret-from-env");
    cmd.cmd().args(["trust", "--yes"]).run();
    let out = cmd
        .cmd()
        .args(["list", "--json"])
        .status(1)
        .stderr_any()
        .run();
    let error = &out.server("remote")["error"];
    assert_eq!(error["type"], "undeclared_variable", "{out}");
    for needle in ["remote", "MCP_TEST_CLOUD_SECRET", ".mcp.json"] {
        assert!(error["message"].as_str().unwrap().contains(needle), "{out}");
    }
    assert!(error["help"].as_str().unwrap().contains("\"env\""), "{out}");
    assert!(
        !out.stdout.contains("s3cret") && !out.stderr.contains("s3cret"),
        "{out}"
    );

    let own = cmd
        .cmd()
        .args(["--config", ".mcp.json", "list", "--json"])
        .status(1)
        .stderr_any()
        .run();
    assert_ne!(
        own.server("remote")["error"]["type"],
        "undeclared_variable",
        "{own}"
    );
}
