//! `up`, `status`, `share`, `openapi`, `down` with the real mcpo (from `.deps/venv-mcpo`) in
//! front of real servers, a fake cloudflared for tunnels, and the real openapi-spec-validator.
//!
//! Each test runs `up` in its own directory on ports it picked, waits for the state file and
//! `/healthz`, talks to the front over HTTP, and ends by checking that every process group it
//! started is gone.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::launch_util::{
    assert_valid_openapi, http, mcpo_bin, paths, project, read_state, recorded_pids, signal, stack,
    terminate, wait_ready,
};
use crate::util::{
    assert_pid_gone, everything, free_port, free_ports, manifest_dir, pid_alive, time, Cmd,
};

pub(crate) fn fake_cloudflared() -> String {
    manifest_dir()
        .join("tests/fixtures/fake_cloudflared.py")
        .display()
        .to_string()
}

fn memory() -> Value {
    json!({"command": manifest_dir().join(".deps/npm/node_modules/.bin/mcp-server-memory")})
}

/// A server that exits at once: its stack must report it, not hang.
fn broken() -> Value {
    json!({"command": "/bin/sh", "args": ["-c", "echo 'cannot start: missing API token' >&2; exit 3"]})
}

/// `up` on the project's `a.json`, without a tunnel, on a free port.
fn up_a(cmd: &Cmd) -> Cmd {
    // mcpo on a free port too: parallel tests that all plan mcpo's default 8800 race for it,
    // and the loser's mcpo is refused as squatted (`port_squatted`).
    let port = free_ports(2);
    cmd.cmd()
        .args(["up", "--config", "a.json", "--tunnel", "none"])
        .args(["--port", &port.to_string()])
        .args(["--mcpo-port", &(port + 1).to_string()])
}

#[test]
fn two_stacks_serve_enforce_share_rebuild_and_go_down_with_mcpo() {
    two_stacks_scenario("mcpo");
}

#[test]
fn two_stacks_serve_enforce_share_rebuild_and_go_down_with_native() {
    two_stacks_scenario("native");
}

/// The whole life of a launch, with either controller: the behaviour the front gives clients
/// must not depend on which controller serves the tools.
fn two_stacks_scenario(controller: &str) {
    // Stacks a, b and c take the ports after each base: one free range for both.
    let port = free_ports(6);
    let mcpo_port = port + 3;
    let cmd = project(&[
        (
            "a.json",
            json!({"everything": everything(), "time": time()}),
        ),
        ("b.json", json!({"memory": memory(), "broken": broken()})),
        ("c.json", json!({"broken": broken()})),
    ]);
    let cmd = cmd.file("d.json", "{ \"mcpServers\": { oops ");
    // A denied tool, chosen through the CLI like a user would.
    cmd.cmd()
        .args([
            "tool",
            "deny",
            "everything",
            "get-env",
            "--config",
            "a.json",
        ])
        .stderr_any()
        .run();
    let up = cmd
        .cmd()
        .args([
            "up", "--config", "a.json", "--config", "b.json", "--config", "c.json", "--config",
            "d.json", "--tunnel", "none",
        ])
        .args(["--log-file", "up.log", "-v", "--controller", controller])
        .args([
            "--port",
            &port.to_string(),
            "--mcpo-port",
            &mcpo_port.to_string(),
        ])
        .status(1) // stack c cannot start: the run as a whole reports a failure
        .stderr_any()
        .spawn();
    let state = wait_ready(&up, cmd.dir(), 2);
    let a = stack(&state, "a");
    let b = stack(&state, "b");
    assert_eq!(a["host"], "127.0.0.1");
    let key = a["api_key"].as_str().unwrap().to_string();
    assert_eq!(key.len(), 40);
    assert_ne!(
        key,
        b["api_key"].as_str().unwrap(),
        "each stack gets its own key"
    );
    let front = format!("http://127.0.0.1:{}", a["port"]);
    let front_b = format!("http://127.0.0.1:{}", b["port"]);
    assert_eq!(a["port"].as_u64(), Some(port as u64));

    // A call with the key works, in either header; without it 401; a denied tool 403.
    let echo = json!({"message": "hello from the front"});
    let (status, body) = http(
        "POST",
        &format!("{front}/everything/echo"),
        &[("X-API-Key", &key)],
        Some(echo.clone()),
    );
    assert_eq!(
        (
            status,
            body.as_str()
                .unwrap_or_default()
                .contains("hello from the front")
        ),
        (200, true),
        "{body}"
    );
    let bearer = format!("Bearer {key}");
    let (status, _) = http(
        "POST",
        &format!("{front}/time/get_current_time"),
        &[("Authorization", &bearer)],
        Some(json!({"timezone": "UTC"})),
    );
    assert_eq!(status, 200);
    let (status, body) = http(
        "POST",
        &format!("{front}/everything/echo"),
        &[],
        Some(echo.clone()),
    );
    assert_eq!(
        (status, body["error"]["type"].as_str()),
        (401, Some("unauthorized")),
        "{body}"
    );
    let b_key = b["api_key"].as_str().unwrap();
    let (status, _) = http(
        "POST",
        &format!("{front}/everything/echo"),
        &[("X-API-Key", b_key)],
        Some(echo.clone()),
    );
    assert_eq!(status, 401, "stack b's key must not open stack a");
    let (status, body) = http(
        "POST",
        &format!("{front}/everything/get-env"),
        &[("X-API-Key", &key)],
        Some(json!({})),
    );
    assert_eq!(
        (status, body["error"]["type"].as_str()),
        (403, Some("tool_denied")),
        "{body}"
    );
    let (status, body) = http(
        "POST",
        &format!("{front_b}/broken/anything"),
        &[("X-API-Key", b_key)],
        Some(json!({})),
    );
    assert_eq!(status, 404, "{body}");

    // The merged spec: valid OpenAPI, exactly the allowed tools, the key scheme, the local URL.
    let (status, spec) = http("GET", &format!("{front}/openapi.json"), &[], None);
    assert_eq!(status, 200);
    assert_valid_openapi(&cmd, &spec);
    let listed = cmd
        .cmd()
        .args(["list", "everything", "--json", "--config", "a.json"])
        .run()
        .json();
    let mut expected: BTreeSet<String> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| format!("/everything/{}", t["name"].as_str().unwrap()))
        .collect();
    expected.extend([
        "/time/get_current_time".to_string(),
        "/time/convert_time".to_string(),
    ]);
    assert!(
        !expected.contains("/everything/get-env"),
        "list hides the denied tool too"
    );
    assert_eq!(paths(&spec), expected);
    assert_eq!(spec["servers"][0]["url"], front.as_str());
    assert_eq!(
        spec["components"]["securitySchemes"]["apiKey"]["name"],
        "X-API-Key"
    );

    // status: both running, keys masked unless asked.
    let status_out = cmd.cmd().args(["status", "--json"]).run().json();
    let a_status = stack(&status_out, "a");
    assert_eq!(a_status["status"], "running");
    assert_eq!(a_status["checks"]["healthz"], "ok");
    assert_ne!(a_status["api_key"], key.as_str());
    let shown = cmd
        .cmd()
        .args(["status", "--json", "--show-keys"])
        .run()
        .json();
    assert_eq!(stack(&shown, "a")["api_key"], key.as_str());

    // share: URL and key ready to paste.
    let share = cmd.cmd().args(["share", "--json"]).run().json();
    let a_share = stack(&share, "a");
    assert_eq!(a_share["openapi_url"], format!("{front}/openapi.json"));
    assert_eq!(a_share["api_key"], key.as_str());
    assert_eq!(a_share["header"], "X-API-Key");

    // openapi: allow the tool again and rebuild; the running front serves it at once.
    cmd.cmd()
        .args([
            "tool",
            "allow",
            "everything",
            "get-env",
            "--config",
            "a.json",
        ])
        .stderr_any()
        .run();
    let rebuilt = cmd
        .cmd()
        .args([
            "openapi",
            "--json",
            "--public-url",
            "https://tools.example.com",
        ])
        .run()
        .json();
    assert_eq!(rebuilt["success"], true, "{rebuilt}");
    let (_, spec) = http("GET", &format!("{front}/openapi.json"), &[], None);
    assert!(paths(&spec).contains("/everything/get-env"));
    assert_eq!(spec["servers"][0]["url"], "https://tools.example.com");
    let (status, _) = http(
        "POST",
        &format!("{front}/everything/get-env"),
        &[("X-API-Key", &key)],
        Some(json!({})),
    );
    assert_eq!(status, 200);

    // down: every recorded process goes, the state file is tidied, up exits.
    let pids = recorded_pids(&read_state(cmd.dir()));
    // mcpo: a process group per stack plus the supervisor's record per stack; native: the
    // bridge lives inside the supervisor, and each of its three servers has a group.
    assert_eq!(
        pids.len(),
        if controller == "mcpo" { 4 } else { 2 + 3 },
        "{pids:?}"
    );
    let down = cmd.cmd().args(["down", "--json"]).run().json();
    assert_eq!(down["success"], true, "{down}");
    for (what, pid) in pids {
        assert_pid_gone(pid, &what);
    }
    assert!(!cmd.path(".mcp-launch/state.json").exists());
    let out = up.wait();
    assert!(
        out.stdout.contains("c  failed") || out.stdout.contains("c"),
        "{}",
        out.stdout
    );
    assert!(out.stderr.contains("broken is left out"), "{}", out.stderr);
    // The malformed config fails alone, named with its line and column.
    assert!(
        out.stdout.contains("d  failed") && out.stdout.contains("d.json:1"),
        "{}",
        out.stdout
    );
    // The log has mcpo's lines, tagged, and never a key: not ours, not the one mcpo gets.
    let log = std::fs::read_to_string(cmd.path("up.log")).unwrap_or_else(|e| {
        panic!(
            "{e}: {:?}",
            std::fs::read_dir(cmd.dir())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect::<Vec<_>>()
        )
    });
    assert!(!log.contains(&key), "the API key leaked into the log");
    assert!(!out.stderr.contains(&key), "the API key leaked into stderr");
    if controller == "mcpo" {
        assert!(log.contains("[mcpo#a]"), "{log}");
        // mcpo's config (resolved secrets) lived only while mcpo did.
        assert!(!cmd.path(".mcp-launch/stacks/a/mcpo.json").exists());
    }
    assert!(
        !log.contains("--api-key ") || log.contains("--api-key ****"),
        "mcpo's key leaked"
    );
}

#[test]
fn a_crashed_mcpo_is_restarted_and_sigterm_to_up_stops_everything() {
    let cmd = project(&[("a.json", json!({"everything": everything()}))]);
    let up = up_a(&cmd).stderr_any().spawn();
    let state = wait_ready(&up, cmd.dir(), 1);
    let a = stack(&state, "a");
    let key = a["api_key"].as_str().unwrap().to_string();
    let echo_url = format!("http://127.0.0.1:{}/everything/echo", a["port"]);
    let first = a["controller_process"]["pgid"].as_i64().unwrap() as i32;
    nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(first),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let state = loop {
        let state = read_state(cmd.dir());
        let a = stack(&state, "a");
        let pgid = a["controller_process"]["pgid"].as_i64().unwrap_or_default() as i32;
        if pgid != first
            && a["restarts"].as_u64() >= Some(1)
            && http(
                "GET",
                &format!("http://127.0.0.1:{}/healthz", a["port"]),
                &[],
                None,
            )
            .0 == 200
        {
            break state;
        }
        assert!(Instant::now() < deadline, "mcpo was not restarted: {state}");
        std::thread::sleep(Duration::from_millis(200));
    };
    let (status, body) = http(
        "POST",
        &echo_url,
        &[("X-API-Key", &key)],
        Some(json!({"message": "back"})),
    );
    assert_eq!(status, 200, "{body}");
    // mcpo starts each server in a session of its own: they must go too.
    let mcpo_now = stack(&state, "a")["controller_process"]["pgid"]
        .as_i64()
        .unwrap() as i32;
    let servers = mcp_launch::process::descendants(mcpo_now);
    assert!(!servers.is_empty(), "mcpo runs its server as a child");
    let out = terminate(up, &state);
    assert!(out.stderr.contains("mcpo restarted"), "{}", out.stderr);
    for pid in servers {
        assert_pid_gone(pid, "a server mcpo started");
    }
    assert!(
        out.stderr.contains("stopped every process we started"),
        "{}",
        out.stderr
    );
    assert!(!cmd.path(".mcp-launch/state.json").exists());
}

#[test]
fn a_killed_up_is_reported_stale_and_down_cleans_up_after_it() {
    let cmd = project(&[("a.json", json!({"everything": everything()}))]);
    let up = up_a(&cmd)
        .status(137) // SIGKILL
        .stderr_any()
        .spawn();
    let state = wait_ready(&up, cmd.dir(), 1);
    let mcpo = stack(&state, "a")["controller_process"]["pgid"]
        .as_i64()
        .unwrap() as i32;
    signal(up.pid(), nix::sys::signal::Signal::SIGKILL);
    let _ = up.wait();
    assert!(pid_alive(mcpo), "mcpo lives on in its own group until down");
    let status = cmd.cmd().args(["status", "--json"]).status(1).run().json();
    assert_eq!(stack(&status, "a")["status"], "stale");
    let down = cmd.cmd().args(["down"]).run();
    assert!(
        down.stdout.contains("stopped") && down.stdout.contains("mcpo"),
        "{}",
        down.stdout
    );
    assert_pid_gone(mcpo, "mcpo");
    assert!(!cmd.path(".mcp-launch/state.json").exists());
}

#[test]
fn up_again_after_a_killed_up_stops_the_leftovers_first() {
    let cmd = project(&[("a.json", json!({"time": time()}))]);
    let launch = || up_a(&cmd).stderr_any();
    let first = launch().status(137).spawn();
    let state = wait_ready(&first, cmd.dir(), 1);
    let old_mcpo = stack(&state, "a")["controller_process"]["pgid"]
        .as_i64()
        .unwrap() as i32;
    signal(first.pid(), nix::sys::signal::Signal::SIGKILL);
    let _ = first.wait();
    let second = launch().spawn();
    let state = wait_ready(&second, cmd.dir(), 1);
    assert_pid_gone(old_mcpo, "the killed run's mcpo");
    assert_eq!(
        stack(&state, "a")["supervisor"]["pgid"].as_i64(),
        Some(second.pid() as i64)
    );
    let out = terminate(second, &state);
    assert!(
        out.stderr.contains("earlier, killed `up`"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_quick_tunnel_publishes_its_url_and_is_restarted_when_it_crashes() {
    let cmd = project(&[("a.json", json!({"time": time()}))]);
    let log = cmd.path("cloudflared.log");
    let up = cmd
        .cmd()
        .env("MCP_LAUNCH_CLOUDFLARED", &fake_cloudflared())
        .env("FAKE_CLOUDFLARED_LOG", &log.display().to_string())
        .env("FAKE_CLOUDFLARED_MODE", "crash-after")
        .env("FAKE_CLOUDFLARED_CRASH_AFTER", "4")
        .args([
            "up",
            "--config",
            "a.json",
            "--port",
            &free_port().to_string(),
        ])
        .stderr_any()
        .spawn();
    let state = wait_ready(&up, cmd.dir(), 1);
    let a = stack(&state, "a");
    assert_eq!(a["tunnel"], "quick");
    let url = a["public_url"].as_str().unwrap().to_string();
    assert!(
        url.starts_with("https://") && url.ends_with(".trycloudflare.com"),
        "{url}"
    );
    assert!(!url.contains("api.trycloudflare.com"));
    let front = format!("http://127.0.0.1:{}", a["port"]);
    let (_, spec) = http("GET", &format!("{front}/openapi.json"), &[], None);
    assert_eq!(spec["servers"][0]["url"], url.as_str());
    // The fake crashes after 4 s; the supervisor starts a new one with a new URL.
    let deadline = Instant::now() + Duration::from_secs(30);
    let new_url = loop {
        let state = read_state(cmd.dir());
        let current = stack(&state, "a")["public_url"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if current != url && state["stacks"][0]["restarts"].as_u64() >= Some(1) {
            break current;
        }
        assert!(
            Instant::now() < deadline,
            "cloudflared was not restarted: {state}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let (_, spec) = http("GET", &format!("{front}/openapi.json"), &[], None);
    assert_eq!(
        spec["servers"][0]["url"],
        new_url.as_str(),
        "the spec follows the new URL"
    );
    // /mcp's OAuth issuer and audience follow the new URL too.
    let metadata = format!("{front}/.well-known/oauth-protected-resource/mcp");
    let (_, described) = http("GET", &metadata, &[], None);
    assert_eq!(
        described["resource"],
        format!("{new_url}/mcp"),
        "{described}"
    );
    assert_eq!(described["authorization_servers"][0], new_url.as_str());
    let starts = std::fs::read_to_string(&log).unwrap().lines().count();
    assert!(starts >= 2, "{starts} cloudflared starts");
    let out = terminate(up, &read_state(cmd.dir()));
    assert!(
        out.stderr.contains("cloudflared"),
        "restart was reported: {}",
        out.stderr
    );
}

#[test]
fn bad_launch_input_gets_clear_errors() {
    let cmd = project(&[("a.json", json!({"everything": everything()}))]);
    // mcpo missing: each stack fails with the install help, exit 1.
    let out = cmd
        .cmd()
        .env("MCP_LAUNCH_MCPO", "/nonexistent/mcpo")
        .args([
            "up",
            "--config",
            "a.json",
            "--tunnel",
            "none",
            "--json",
            "--controller",
            "mcpo",
        ])
        .status(1)
        .stderr_any()
        .run()
        .json();
    assert_eq!(out["errors"][0]["error"]["type"], "mcpo_missing", "{out}");
    assert!(out["errors"][0]["error"]["help"]
        .as_str()
        .unwrap()
        .contains("mcpo-constraints"));
    // --tunnel quick without cloudflared: usage error naming the fix.
    let out = cmd
        .cmd()
        .env("PATH", "/usr/bin:/bin")
        .args(["up", "--config", "a.json", "--tunnel", "quick", "--json"])
        .status(2)
        .run()
        .json();
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("cloudflared"),
        "{out}"
    );
    assert!(out["error"]["help"]
        .as_str()
        .unwrap()
        .contains("MCP_LAUNCH_CLOUDFLARED"));
    // --tunnel named without --public-url.
    let out = cmd
        .cmd()
        .args(["up", "--config", "a.json", "--tunnel", "named", "--json"])
        .status(2)
        .run()
        .json();
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--public-url"),
        "{out}"
    );
    // --public-url count not matching the configs.
    let out = cmd
        .cmd()
        .args([
            "up",
            "--config",
            "a.json",
            "--tunnel",
            "none",
            "--public-url",
            "https://a.example",
            "--public-url",
            "https://b.example",
            "--json",
        ])
        .status(2)
        .run()
        .json();
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("2 --public-url"),
        "{out}"
    );
    // An explicit port that is taken is an error naming it.
    let blocker = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = blocker.local_addr().unwrap().port();
    let out = cmd
        .cmd()
        .args([
            "up",
            "--config",
            "a.json",
            "--tunnel",
            "none",
            "--port",
            &taken.to_string(),
            "--json",
        ])
        .status(1)
        .stderr_any()
        .run()
        .json();
    assert_eq!(out["errors"][0]["error"]["type"], "port_taken", "{out}");
    assert!(out["errors"][0]["error"]["message"]
        .as_str()
        .unwrap()
        .contains(&taken.to_string()));
    // Nothing running: status says so, share and openapi fail clearly.
    let out = cmd.cmd().args(["status"]).run();
    assert!(out.stdout.contains("no stacks running"), "{}", out.stdout);
    let out = cmd.cmd().args(["openapi", "--json"]).status(2).run().json();
    assert_eq!(out["error"]["type"], "usage");
}

#[test]
fn auto_serves_with_the_native_bridge_when_mcpo_is_missing() {
    let cmd = project(&[("a.json", json!({"everything": everything()}))]);
    let up = up_a(&cmd)
        .env("MCP_LAUNCH_MCPO", "/nonexistent/mcpo")
        .stderr_has("controller: native")
        .spawn();
    let state = wait_ready(&up, cmd.dir(), 1);
    let a = stack(&state, "a");
    assert_eq!(a["controller"], "native");
    assert!(
        a["controller_process"].is_null(),
        "the bridge runs inside up"
    );
    let key = a["api_key"].as_str().unwrap();
    let url = format!("http://127.0.0.1:{}/everything/get-sum", a["port"]);
    let (status, body) = http(
        "POST",
        &url,
        &[("X-API-Key", key)],
        Some(json!({"a": 2, "b": 40})),
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.as_str().unwrap_or_default().contains("42"), "{body}");
    let (status, body) = http(
        "POST",
        &url,
        &[("X-API-Key", key)],
        Some(json!({"a": "two"})),
    );
    assert_eq!(
        (status, body["error"]["type"].as_str()),
        (422, Some("invalid_arguments")),
        "{body}"
    );
    let out = terminate(up, &state);
    assert!(
        out.stderr.contains("stopped every process we started"),
        "{}",
        out.stderr
    );
    assert!(!cmd.path(".mcp-launch/state.json").exists());
}

/// `PATH` with mcpo's directory in front, the way most people install it (`pipx`, a venv's
/// `bin/` on `PATH`); `MCP_LAUNCH_MCPO` stays unset (the util scrubs it).
fn path_with_mcpo() -> String {
    let mcpo = std::path::PathBuf::from(mcpo_bin());
    let bin = mcpo.parent().unwrap().to_path_buf();
    let rest = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::iter::once(bin).chain(std::env::split_paths(&rest));
    std::env::join_paths(dirs).unwrap().into_string().unwrap()
}

/// mcpo found only through `PATH` serves the stack, with `--controller mcpo` and with `auto`
/// (which picks mcpo when it is installed). Before the fix `which` never read `PATH`: `mcpo`
/// failed with "not found" and `auto` fell back to the native bridge.
#[test]
fn mcpo_found_only_on_path_serves_with_mcpo_and_auto() {
    let cmd = Cmd::new().file(
        "a.json",
        &json!({"mcpServers": {"everything": everything()}}).to_string(),
    );
    for controller in ["mcpo", "auto"] {
        // A port of its own each time (`up_a`): the first mcpo may still be leaving its port.
        let up = up_a(&cmd)
            .args(["--controller", controller])
            .env("PATH", &path_with_mcpo())
            .stderr_any()
            .spawn();
        let state = wait_ready(&up, cmd.dir(), 1);
        let a = stack(&state, "a");
        assert_eq!(a["controller"], "mcpo", "--controller {controller}: {a}");
        let url = format!("http://127.0.0.1:{}/everything/get-sum", a["port"]);
        let key = a["api_key"].as_str().unwrap();
        let (status, body) = http(
            "POST",
            &url,
            &[("X-API-Key", key)],
            Some(json!({"a": 2, "b": 40})),
        );
        if status != 200 {
            let out = terminate(up, &state);
            panic!("--controller {controller}: {status} {body}\n{}", out.stderr);
        }
        let out = terminate(up, &state);
        assert!(
            !out.stderr.contains("mcpo is not installed"),
            "--controller {controller}: {}",
            out.stderr
        );
    }
}
