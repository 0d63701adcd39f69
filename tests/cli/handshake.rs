//! The hardened stdio handshake through the binary, against the fault server.

use std::time::Duration;

use serde_json::{json, Value};

use crate::util::*;

#[test]
fn banners_and_noise_on_stdout_are_skipped() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"f": fault(&["--banner", "12", "--noisy"])}}))
        .args(["list", "f", "--json"])
        .run();
    let json = out.json();
    assert_eq!(json["status"], "connected", "{out}");
    assert_eq!(json["tools"].as_array().unwrap().len(), 8, "{out}");
    assert_eq!(json["warnings"], json!([]), "{out}");

    let call = out
        .cmd()
        .args(["--config", "config.json", "call", "f", "echo"])
        .args([r#"{"message": "through the noise"}"#, "--json"])
        .run();
    assert_eq!(
        call.json(),
        json!({"success": true, "result": {"content": [{"type": "text", "text": "through the noise"}]}}),
        "{call}"
    );
}

#[test]
fn one_initialize_then_notifications_initialized() {
    let cmd = Cmd::new();
    let log_path = cmd.path("server.log");
    let out = cmd
        .config_json(json!({"mcpServers": {"f": fault(&["--log", log_path.to_str().unwrap()])}}))
        .args(["list", "--json"])
        .run();
    assert_eq!(out.server("f")["protocolVersion"], "2025-06-18", "{out}");
    let log = read_log(&log_path);
    // Newline-delimited JSON only: every line the server read was one whole JSON message.
    assert!(log.iter().all(|m| m.get("_invalid").is_none()), "{log:#?}");
    assert!(log.iter().all(|m| m["jsonrpc"] == "2.0"), "{log:#?}");
    let methods: Vec<&str> = log.iter().filter_map(|m| m["method"].as_str()).collect();
    assert_eq!(
        methods,
        ["initialize", "notifications/initialized", "tools/list"],
        "{log:#?}"
    );
    let init = &log[0];
    assert_eq!(init["params"]["protocolVersion"], "2025-06-18", "{log:#?}");
    assert_eq!(
        init["params"]["clientInfo"]["name"], "mcp-launch",
        "{log:#?}"
    );
    assert!(init["id"].is_u64(), "{log:#?}");
    assert!(
        log[1].get("id").is_none(),
        "a notification has no id: {log:#?}"
    );
    assert!(logged(&log, "initialized").is_empty(), "{log:#?}");
}

#[test]
fn older_protocol_versions_are_accepted() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {
            "old": fault(&["--protocol-version", "2024-11-05"]),
            "mid": fault(&["--protocol-version", "2025-03-26"]),
        }}))
        .args(["list", "--json"])
        .run();
    for (name, version) in [("old", "2024-11-05"), ("mid", "2025-03-26")] {
        let s = out.server(name);
        assert_eq!(s["status"], "connected", "{out}");
        assert_eq!(s["protocolVersion"], version, "{out}");
        assert_eq!(s["tools"], 8, "{out}");
    }
}

#[test]
fn an_unknown_protocol_version_connects_with_a_warning() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"f": fault(&["--protocol-version", "1999-01-01"])}}))
        .args(["list", "--json"])
        .stderr_has("server chose a protocol version we do not know; continuing")
        .run();
    assert_eq!(out.server("f")["status"], "connected", "{out}");
    assert_eq!(out.server("f")["protocolVersion"], "1999-01-01", "{out}");
}

/// The only test that waits the real 6 s fast window (plus a 1 s slow window).
#[test]
fn no_answer_ends_in_init_timeout_naming_the_env_var() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"mute": fault(&["--no-answer"])}}))
        .env("MCP_INIT_TIMEOUT_SEC", "1")
        .args(["list", "--json"])
        .status(1)
        .run();
    let error = &out.server("mute")["error"];
    assert_eq!(error["type"], "init_timeout", "{out}");
    assert_eq!(
        error["message"], "no answer to initialize after 7s (fast window 6s, then slow window 1s)",
        "{out}"
    );
    assert!(
        error["help"]
            .as_str()
            .unwrap()
            .contains("MCP_INIT_TIMEOUT_SEC=60"),
        "{out}"
    );
    assert!(out.elapsed >= Duration::from_secs(7), "{out}");
    assert!(out.elapsed < Duration::from_secs(10), "{out}");
}

#[test]
fn a_crash_at_start_reports_its_stderr() {
    let out = Cmd::new()
        .config_json(
            json!({"mcpServers": {"f": fault(&["--crash-at-start", "missing API key FOO"])}}),
        )
        .args(["call", "f", "echo", r#"{"message": "x"}"#, "--json"])
        .status(1)
        .run();
    let error = out.error();
    assert_eq!(error["type"], "server_exited", "{out}");
    let message = error["message"].as_str().unwrap();
    for part in [
        "server \"f\": server exited with code 3 during initialize",
        "missing API key FOO",
        "fatal: giving up",
    ] {
        assert!(message.contains(part), "{part:?}\n{out}");
    }
    assert!(out.elapsed < Duration::from_secs(3), "{out}");
}

#[test]
fn an_exit_right_after_init_is_reported() {
    // The server exits right after its initialize answer; whichever request is pending then
    // (tools/list or the call) fails with the exit code, long before the 5 s tool would end.
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"f": fault(&["--exit-after-init", "5"])}}))
        .args(["call", "f", "slow", r#"{"ms": 5000}"#, "--json"])
        .status(1)
        .run();
    let error = out.error();
    assert_eq!(error["type"], "server_exited", "{out}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("exited with code 5"), "{out}");
    assert!(message.contains("exiting after init"), "{out}");
    assert!(out.elapsed < Duration::from_secs(3), "{out}");
}

fn tools_list_params(log: &[Value]) -> Vec<Option<Value>> {
    logged(log, "tools/list")
        .into_iter()
        .map(|m| m.get("params").cloned())
        .collect()
}

#[test]
fn first_page_shapes_are_tried_in_order() {
    let cmd = Cmd::new();
    let shapes = ["empty", "cursor-empty", "cursor-null", "absent"];
    let servers: serde_json::Map<String, Value> = shapes
        .iter()
        .map(|shape| {
            let log = cmd.path(&format!("{shape}.log"));
            let entry = fault(&["--first-page-shape", shape, "--log", log.to_str().unwrap()]);
            (shape.to_string(), entry)
        })
        .collect();
    let out = cmd
        .config_json(json!({"mcpServers": servers}))
        .args(["list", "--json"])
        .run();
    let tried = [
        Some(json!({})),
        Some(json!({"cursor": ""})),
        Some(json!({"cursor": null})),
        None,
    ];
    for (i, shape) in shapes.iter().enumerate() {
        let s = out.server(shape);
        assert_eq!(s["status"], "connected", "{shape}\n{out}");
        assert_eq!(s["tools"], 8, "{shape}\n{out}");
        assert!(s.get("warnings").is_none(), "{shape}\n{out}");
        let log = read_log(&out.path(&format!("{shape}.log")));
        assert_eq!(tools_list_params(&log), tried[..=i], "{shape}");
    }
}

#[test]
fn thousands_of_tools_over_many_pages() {
    let cmd = Cmd::new();
    let log_path = cmd.path("server.log");
    let out = cmd
        .config_json(json!({"mcpServers": {"f": fault(&[
            "--tools", "3000", "--page-size", "100", "--log", log_path.to_str().unwrap(),
        ])}}))
        .args(["list", "f", "--json"])
        .run();
    let json = out.json();
    let names: Vec<&str> = json["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 3008);
    assert_eq!(
        names[..8],
        ["echo", "fail", "add", "hang", "crash", "huge", "slow", "roots"]
    );
    for (i, name) in names[8..].iter().enumerate() {
        assert_eq!(*name, format!("tool_{i:04}"));
    }
    assert_eq!(json["warnings"], json!([]), "{}", json["warnings"]);
    let pages = tools_list_params(&read_log(&log_path));
    assert_eq!(pages.len(), 31);
    assert_eq!(pages[0], Some(json!({})));
    assert!(pages[1..]
        .iter()
        .all(|p| p.as_ref().unwrap()["cursor"].is_string()));
}

#[test]
fn a_repeated_cursor_stops_paging_with_a_warning() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"f": fault(&["--endless-cursor", "--page-size", "3"])}}))
        .args(["list", "f", "--json"])
        .run();
    let json = out.json();
    let names: Vec<&str> = json["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["echo", "fail", "add", "hang", "crash", "huge"],
        "{out}"
    );
    assert_eq!(
        json["warnings"],
        json!(["the server repeated cursor \"again\"; stopped paging after 2 pages"]),
        "{out}"
    );

    let human = out.cmd().args(["--config", "config.json", "list"]).run();
    assert!(
        human
            .stdout
            .contains("warning: f: the server repeated cursor \"again\""),
        "{human}"
    );
}

#[test]
fn endless_pages_stop_at_the_page_cap() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"f": fault(&["--infinite-pages"])}}))
        .args(["list", "f", "--json"])
        .run();
    let json = out.json();
    assert_eq!(json["tools"].as_array().unwrap().len(), 1000, "{out}");
    assert_eq!(
        json["warnings"],
        json!([
            "stopped paging after 1000 pages; the server keeps sending cursors \
                (MCP_LAUNCH_MAX_TOOL_PAGES raises the cap)"
        ]),
        "{out}"
    );
    eprintln!("1000 pages took {:?}", out.elapsed);
    assert!(out.elapsed < Duration::from_secs(10), "{out}");
}

#[test]
fn a_stderr_flood_does_not_block_the_handshake() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"f": fault(&["--stderr-flood", "8"])}}))
        .args([
            "call",
            "f",
            "echo",
            r#"{"message": "after the flood"}"#,
            "--json",
        ])
        .run();
    assert_eq!(
        out.json()["result"]["content"][0]["text"],
        "after the flood",
        "{out}"
    );
    assert!(out.elapsed < Duration::from_secs(5), "{out}");
}

#[test]
fn server_requests_during_the_handshake_are_answered() {
    let cmd = Cmd::new();
    let log_path = cmd.path("server.log");
    let out = cmd
        .config_json(json!({"mcpServers": {"f": fault(&["--server-requests", "--log", log_path.to_str().unwrap()])}}))
        .args(["list", "--json"])
        .run();
    assert_eq!(out.server("f")["status"], "connected", "{out}");
    let log = read_log(&log_path);
    let answer = |id: &str| {
        log.iter()
            .find(|m| m["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no answer to {id}: {log:#?}"))
    };
    assert_eq!(answer("srv-1")["result"], json!({}), "ping");
    assert!(answer("srv-2")["result"]["roots"].is_array(), "roots/list");
    assert_eq!(answer("srv-3")["error"]["code"], -32601, "sampling");
    assert!(answer("srv-3").get("result").is_none());

    // A server request in the middle of a call is answered too.
    let call = out
        .cmd()
        .args(["--config", "config.json", "call", "f", "roots", "--json"])
        .run();
    let text = call.json()["result"]["content"][0]["text"].clone();
    let roots: Value = serde_json::from_str(text.as_str().unwrap()).unwrap();
    assert!(roots["roots"].is_array(), "{call}");
}

#[test]
fn grandchildren_are_gone_after_list() {
    let cmd = Cmd::new();
    let pidfile = cmd.path("pids");
    let _out = cmd
        .config_json(
            json!({"mcpServers": {"f": fault(&["--grandchild", pidfile.to_str().unwrap()])}}),
        )
        .args(["list", "--json"])
        .run();
    let (grandchild, server) = read_pidfile(&pidfile);
    assert_pid_gone(server, "the server");
    assert_pid_gone(grandchild, "the grandchild");
}

#[test]
fn grandchildren_are_gone_after_a_crash_or_a_timeout() {
    let cmd = Cmd::new();
    let crash_pids = cmd.path("crash.pids");
    let hang_pids = cmd.path("hang.pids");
    let out = cmd
        .config_json(json!({"mcpServers": {
            "crash": fault(&["--grandchild", crash_pids.to_str().unwrap()]),
            "hang": fault(&["--grandchild", hang_pids.to_str().unwrap()]),
        }}))
        .args(["call", "crash", "crash", "--json"])
        .status(1)
        .run();
    assert_eq!(out.error()["type"], "server_exited", "{out}");
    let (grandchild, _) = read_pidfile(&crash_pids);
    assert_pid_gone(grandchild, "the grandchild of a crashed server");

    let out = out
        .cmd()
        .args(["--config", "config.json", "call", "hang", "hang"])
        .args(["--timeout", "0.5", "--json"])
        .status(1)
        .run();
    assert_eq!(out.error()["type"], "timeout", "{out}");
    let (grandchild, server) = read_pidfile(&hang_pids);
    assert_pid_gone(server, "the hung server");
    assert_pid_gone(grandchild, "the grandchild of a hung server");
}

#[test]
fn verbose_output_shows_the_handshake_and_skipped_lines() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"f": fault(&["--banner", "6"])}}))
        .args(["call", "f", "echo", r#"{"message": "x"}"#, "-v"])
        .stderr_has("INFO server{name=f}: spawning server command=python3")
        .stderr_has("server{name=f}: initialize answered version=\"2025-06-18\"")
        .stderr_has("server{name=f}: tools listed tools=8 pages=1")
        .run();
    assert_eq!(out.stdout, "x\n", "{out}");
    assert!(!out.stderr.contains("skipped non-JSON line"), "{out}");

    // -vv also shows the noise that was skipped.
    let debug = out
        .cmd()
        .args([
            "--config",
            "config.json",
            "call",
            "f",
            "echo",
            r#"{"message": "x"}"#,
            "-vv",
        ])
        .stderr_has("skipped non-JSON line on stdout")
        .stderr_has("Server listening on http://localhost:1234")
        .run();
    assert_eq!(debug.stdout, "x\n", "{debug}");
}

#[test]
fn the_log_file_records_the_traffic() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"f": fault(&[])}}))
        .args([
            "call",
            "f",
            "echo",
            r#"{"message": "x"}"#,
            "--log-file",
            "run.log",
        ])
        .run();
    let log = std::fs::read_to_string(out.path("run.log")).expect("the log file");
    let expected = [
        "→ request id=1 method=\"initialize\"",
        "← response id=1 method=initialize ok=true",
        "→ notification method=\"notifications/initialized\"",
        "→ request id=2 method=\"tools/list\"",
        "→ request id=3 method=\"tools/call\"",
        "← response id=3 method=tools/call ok=true",
    ];
    let mut rest = log.as_str();
    for line in expected {
        let at = rest
            .find(line)
            .unwrap_or_else(|| panic!("{line:?} missing or out of order in:\n{log}"));
        rest = &rest[at + line.len()..];
    }
    assert!(
        !log.contains('\x1b'),
        "colour codes in the log file:\n{log}"
    );
}

#[test]
fn malformed_tools_are_skipped_one_by_one_with_warnings() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"f": fault(&["--malformed-tools"])}}))
        .args(["list", "f", "--json"])
        .run();
    let json = out.json();
    let names: Vec<&str> = json["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    // Every good tool of the page survives; only the three bad entries go.
    assert_eq!(
        names,
        ["echo", "fail", "add", "hang", "crash", "huge", "slow", "roots"],
        "{out}"
    );
    let warnings = json["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 3, "{out}");
    assert!(
        warnings.iter().all(|w| w
            .as_str()
            .unwrap()
            .starts_with("skipped a tool without a name")),
        "{out}"
    );
}

#[test]
fn a_string_id_with_our_digits_is_not_our_answer() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"f": fault(&["--decoy-ids"])}}))
        .args(["call", "f", "echo", r#"{"message": "real"}"#, "--json"])
        .run();
    // The decoys ({"decoy": true} under id "N") arrive first for every request, the handshake
    // included; taking one would break initialize, tools/list or this result.
    assert_eq!(
        out.json(),
        json!({"success": true, "result": {"content": [{"type": "text", "text": "real"}]}}),
        "{out}"
    );
}

/// With several servers checked at once, `-vv` must tell them apart: every line about a
/// session — the reader's and writer's included — names its server, on stderr and in
/// `--log-file` alike. (The reader's lines carried no name: a handshake could not be followed.)
#[test]
fn every_session_line_at_vv_names_its_server() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {
            "alpha": fault(&["--banner", "2"]),
            "beta": fault(&["--noisy"]),
        }}))
        .args(["list", "-vv", "--log-file", "vv.log"])
        .stderr_any()
        .run();
    let log = std::fs::read_to_string(out.path("vv.log")).unwrap();
    for (origin, text) in [
        ("stderr", out.stderr.as_str()),
        ("--log-file", log.as_str()),
    ] {
        let about_sessions: Vec<&str> = text
            .lines()
            .filter(|l| {
                [
                    "→ request",
                    "← response",
                    "→ notification",
                    "connection closed",
                    "skipped non-JSON",
                ]
                .iter()
                .any(|m| l.contains(m))
            })
            .collect();
        for name in ["alpha", "beta"] {
            let named = format!("server{{name={name}}}");
            let lines = about_sessions.iter().filter(|l| l.contains(&named)).count();
            assert!(lines >= 5, "{origin}: {lines} lines name {name}:\n{text}");
        }
        let unnamed: Vec<_> = about_sessions
            .iter()
            .filter(|l| !l.contains("server{name="))
            .collect();
        assert!(
            unnamed.is_empty(),
            "{origin}: lines without a server: {unnamed:#?}"
        );
    }
}
