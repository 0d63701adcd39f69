//! The tool index: `list` and `inspect` answer from it without starting servers while it is
//! fresh; `--refresh`, a changed definition, the TTL and a corrupt file all lead back to a
//! live check.

use serde_json::{json, Value};

use crate::util::*;

/// A fault server that logs to `log` (the file appears only if the server was started).
fn logged_fault(cmd: &Cmd, log: &str, extra: &[&str]) -> Value {
    let path = cmd.path(log);
    let mut flags = vec!["--log", path.to_str().unwrap()];
    flags.extend_from_slice(extra);
    fault(&flags)
}

fn started(cmd: &Cmd, log: &str) -> bool {
    let path = cmd.path(log);
    let was = path.exists();
    let _ = std::fs::remove_file(path);
    was
}

#[test]
fn a_second_list_answers_from_the_index_without_starting_anything() {
    let cmd = Cmd::new();
    let config = json!({"mcpServers": {"f": logged_fault(&cmd, "f.log", &[])}});
    let first = cmd.config_json(config).args(["list", "--json"]).run();
    assert_eq!(first.server("f")["status"], "connected", "{first}");
    let probe = first.cmd();
    assert!(started(&probe, "f.log"));

    let second = first
        .cmd()
        .args(["--config", "config.json", "list", "--json"])
        .run();
    let s = second.server("f");
    assert_eq!(s["status"], "cached", "{second}");
    assert_eq!(s["tools"], first.server("f")["tools"], "{second}");
    assert_eq!(s["tokens"], first.server("f")["tokens"], "{second}");
    assert!(s["checkedAt"].as_u64().unwrap() > 1_700_000_000, "{second}");
    assert!(
        !started(&probe, "f.log"),
        "a cached answer must not start the server"
    );

    let inspect = first
        .cmd()
        .args(["--config", "config.json", "inspect", "f", "echo", "--json"])
        .run();
    assert_eq!(inspect.json()["tool"], "echo", "{inspect}");
    assert!(
        !started(&probe, "f.log"),
        "inspect answers from the index too"
    );

    let refreshed = first
        .cmd()
        .args(["--config", "config.json", "list", "--refresh", "--json"])
        .run();
    assert_eq!(refreshed.server("f")["status"], "connected", "{refreshed}");
    assert!(started(&probe, "f.log"), "--refresh checks live");
}

#[test]
fn a_partial_refresh_keeps_the_other_entries() {
    let cmd = Cmd::new();
    let config = json!({"mcpServers": {
        "a": logged_fault(&cmd, "a.log", &[]),
        "b": logged_fault(&cmd, "b.log", &[]),
    }});
    let first = cmd.config_json(config).args(["list", "--json"]).run();
    let probe = first.cmd();
    assert!(started(&probe, "a.log") && started(&probe, "b.log"));

    let only_a = first
        .cmd()
        .args([
            "--config",
            "config.json",
            "list",
            "a",
            "--refresh",
            "--json",
        ])
        .run();
    assert_eq!(only_a.json()["status"], "connected", "{only_a}");
    assert!(started(&probe, "a.log"));
    assert!(!started(&probe, "b.log"));

    let all = first
        .cmd()
        .args(["--config", "config.json", "list", "--json"])
        .run();
    assert_eq!(all.server("a")["status"], "cached", "{all}");
    assert_eq!(all.server("b")["status"], "cached", "{all}");
    assert!(!started(&probe, "a.log") && !started(&probe, "b.log"));
}

#[test]
fn a_changed_definition_or_a_zero_ttl_is_checked_live() {
    let cmd = Cmd::new();
    let first = cmd
        .config_json(json!({"mcpServers": {"f": fault(&["--tools", "2"])}}))
        .args(["list", "--json"])
        .run();
    assert_eq!(first.server("f")["tools"], 10, "{first}");

    // Same name, other arguments: another identity, so a live check — and the tool that
    // disappeared is remembered as stale.
    let changed = first
        .cmd()
        .config_json(json!({"mcpServers": {"f": fault(&["--tools", "1"])}}))
        .args(["list", "--json"])
        .run();
    let f = changed.server("f");
    assert_eq!(f["status"], "connected", "{changed}");
    assert_eq!(f["tools"], 9, "{changed}");
    assert_eq!(f["stale"], json!(["tool_0001"]), "{changed}");

    let no_cache = changed
        .cmd()
        .env("MCP_LAUNCH_INDEX_TTL", "0")
        .args(["--config", "config.json", "list", "--json"])
        .run();
    assert_eq!(no_cache.server("f")["status"], "connected", "{no_cache}");
}

#[test]
fn failing_servers_are_never_cached() {
    let cmd = Cmd::new();
    let config = json!({"mcpServers": {"bad": fault(&["--crash-at-start", "nope"])}});
    let first = cmd
        .config_json(config)
        .args(["list", "--json"])
        .status(1)
        .run();
    assert_eq!(first.server("bad")["status"], "error", "{first}");
    let second = first
        .cmd()
        .args(["--config", "config.json", "list", "--json"])
        .status(1)
        .run();
    assert_eq!(second.server("bad")["status"], "error", "{second}");
}

#[test]
fn a_corrupt_index_is_rebuilt_with_a_warning() {
    let cmd = Cmd::new();
    let index = cmd.path(".cache/mcp-launch/tool-index.json");
    std::fs::create_dir_all(index.parent().unwrap()).unwrap();
    std::fs::write(&index, b"{\"version\": 1, \"servers\": {oops").unwrap();
    let out = cmd
        .config_json(json!({"mcpServers": {"f": fault(&[])}}))
        .args(["list", "--json"])
        .stderr_has("tool index is corrupt")
        .run();
    assert_eq!(out.server("f")["status"], "connected", "{out}");
    let rebuilt: Value = serde_json::from_slice(&std::fs::read(&index).unwrap()).unwrap();
    assert!(
        rebuilt["servers"]["config/f"]["tools"].is_array(),
        "{rebuilt:#}"
    );
}

/// The names of the tools in `list SERVER --json`'s answer.
fn tool_names(listed: &Output) -> Vec<String> {
    let tools = listed.json()["tools"].clone();
    let names = tools.as_array().cloned().unwrap_or_default();
    names
        .iter()
        .map(|t| t["name"].as_str().unwrap_or("").to_string())
        .collect()
}

/// Issue 25 item 2: the daemon's client offers roots, sampling and elicitation, so
/// server-everything lists it more tools than a plain client gets; the daemon's listing in
/// the shared index must not change what the direct paths list, call or choose.
#[test]
fn a_daemons_richer_listing_leaves_each_direct_path_what_it_can_call() {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"everything": everything()}}));
    let index = cmd.path(".cache/mcp-launch/tool-index.json");
    let daemon = crate::daemon::start_daemon(&cmd, cmd.cmd());
    // Nothing known yet: the daemon checks the server with the capabilities it relays.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !std::fs::read_to_string(&index).is_ok_and(|t| t.contains("everything")) {
        assert!(std::time::Instant::now() < deadline, "the daemon's check");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon.pid()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    daemon.wait();
    let direct = |args: &[&str]| {
        cmd.cmd()
            .args(["--config", "config.json"])
            .args(args)
            .args(["--daemon", "off"])
    };
    let sampling = "trigger-sampling-request".to_string();

    let first = direct(&["list", "everything", "--json"]).stderr_any().run();
    let plain = tool_names(&first);
    assert!(!plain.contains(&sampling), "{first}");
    assert!(plain.contains(&"echo".to_string()), "{first}");
    // The same again from the index, with nothing stale (the daemon's extra tools are not
    // tools that vanished).
    let again = direct(&["list", "everything", "--json"]).stderr_any().run();
    assert_eq!(again.json()["status"], "cached", "{again}");
    assert_eq!(tool_names(&again), plain, "{again}");
    assert_eq!(again.json()["stale"], json!([]), "{again}");

    // A tool only richer clients are listed: said so, not "no tool named".
    let refused = direct(&["call", "everything", &sampling, "{}", "--json"])
        .status(2)
        .stderr_any()
        .run();
    let error = refused.error();
    assert_eq!(error["type"], "needs_capability", "{refused}");
    assert!(
        error["message"].as_str().unwrap_or("").contains("sampling"),
        "{refused}"
    );
    let echoed = direct(&[
        "call",
        "everything",
        "echo",
        r#"{"message": "hi"}"#,
        "--json",
    ])
    .stderr_any()
    .run();
    assert_eq!(echoed.json()["success"], true, "{echoed}");

    // `serve --mode auto` counts what every client can call: the plain list's tools.
    let served = cmd
        .cmd()
        .args(["--config", "config.json", "serve"])
        .stdin("")
        // No client: it stops at once (exit 1), after choosing.
        .status(1)
        .stderr_any()
        .run();
    let counted = format!("full mode ({} tools and ", plain.len());
    assert!(served.stderr.contains(&counted), "{counted}\n{served}");
}
