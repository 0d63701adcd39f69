//! `mcp-launch list [SERVER]`: the parallel preflight, its JSON and table, config discovery.

use serde_json::json;

use crate::util::*;

#[test]
fn every_server_gets_a_row_and_one_failure_exits_1() {
    let cmd = Cmd::new();
    let data = cmd.mkdir("data");
    let out = cmd
        .config_json(json!({"mcpServers": {
            "everything": everything(),
            "filesystem": filesystem(&data),
            "time": time(),
            "missing": {"command": "mcp-launch-test-no-such-command"},
            "crashy": fault(&["--crash-at-start", "bad token: check FAULT_TOKEN"]),
            "off": disabled(fault(&[])),
        }}))
        .args(["list", "--json"])
        .status(1)
        .run();
    let json = out.json();
    let names: Vec<&str> = json["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "everything",
            "filesystem",
            "time",
            "missing",
            "crashy",
            "off"
        ],
        "{out}"
    );
    assert_eq!(
        json["configs"],
        json!([out.path("config.json").display().to_string()]),
        "{out}"
    );

    for name in ["everything", "filesystem", "time"] {
        let s = out.server(name);
        assert_eq!(s["status"], "connected", "{name}\n{out}");
        assert_eq!(s["transport"], "stdio", "{name}\n{out}");
        assert!(s["tools"].as_u64().unwrap() > 0, "{name}\n{out}");
        assert!(s["tokens"].as_u64().unwrap() > 0, "{name}\n{out}");
        assert!(s["init_ms"].is_u64(), "{name}\n{out}");
        assert!(s.get("error").is_none(), "{name}\n{out}");
    }

    let missing = out.server("missing");
    assert_eq!(missing["status"], "error", "{out}");
    assert_eq!(missing["transport"], "stdio", "{out}");
    assert_eq!(missing["tools"], 0, "{out}");
    assert_eq!(missing["tokens"], json!(null), "{out}");
    assert_eq!(missing["init_ms"], json!(null), "{out}");
    assert_eq!(missing["error"]["type"], "command_not_found", "{out}");
    assert_eq!(
        missing["error"]["message"], "command `mcp-launch-test-no-such-command` not found on PATH",
        "{out}"
    );
    assert!(
        missing["error"]["help"]
            .as_str()
            .unwrap()
            .contains("put it on PATH"),
        "{out}"
    );

    let crashy = out.server("crashy");
    assert_eq!(crashy["status"], "error", "{out}");
    assert_eq!(crashy["error"]["type"], "server_exited", "{out}");
    let message = crashy["error"]["message"].as_str().unwrap();
    for part in [
        "exited with code 3",
        "bad token: check FAULT_TOKEN",
        "fatal: giving up",
    ] {
        assert!(message.contains(part), "{part:?} missing\n{out}");
    }
    assert!(crashy["error"]["help"].as_str().unwrap().contains("stderr"));

    let off = out.server("off");
    assert_eq!(off["status"], "disabled", "{out}");
    assert_eq!(off["tools"], 0, "{out}");
    assert!(off.get("error").is_none(), "{out}");
}

#[test]
fn all_servers_connected_exits_0() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {
            "everything": everything(),
            "fault": fault(&[]),
            "off": disabled(fault(&["--crash-at-start", "never started"])),
        }}))
        .args(["list", "--json"])
        .run();
    assert_eq!(out.server("everything")["status"], "connected", "{out}");
    let fault = out.server("fault");
    assert_eq!(fault["status"], "connected", "{out}");
    assert_eq!(fault["tools"], 8, "{out}");
    assert_eq!(fault["protocolVersion"], "2025-06-18", "{out}");
    assert_eq!(out.server("off")["status"], "disabled", "{out}");
}

#[test]
fn human_output_is_an_aligned_table_with_errors_below() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {
            "alpha": fault(&[]),
            "broken-server": fault(&["--crash-at-start", "cannot open database"]),
            "z": disabled(fault(&[])),
        }}))
        .args(["list"])
        .status(1)
        .run();
    let lines: Vec<&str> = out.stdout.lines().collect();
    let header = lines[0];
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["SERVER", "STATUS", "TRANSPORT", "TOOLS", "TOKENS", "INIT"],
        "{out}"
    );
    let status_col = header.find("STATUS").unwrap();
    let transport_col = header.find("TRANSPORT").unwrap();
    let tools_end = header.find("TOOLS").unwrap() + "TOOLS".len();
    for (name, status, tools) in [
        ("alpha", "connected", "8"),
        ("broken-server", "error", "-"),
        ("z", "disabled", "-"),
    ] {
        let row = lines
            .iter()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no row for {name}\n{out}"));
        assert_eq!(&row[status_col..status_col + status.len()], status, "{out}");
        assert_eq!(&row[transport_col..transport_col + 5], "stdio", "{out}");
        // Numbers are right-aligned under their header.
        assert_eq!(&row[tools_end - tools.len()..tools_end], tools, "{out}");
        assert_eq!(*row, row.trim_end(), "trailing spaces\n{out}");
    }
    assert!(
        out.stdout
            .contains("broken-server: server exited with code 3 during initialize"),
        "{out}"
    );
    assert!(out.stdout.contains("cannot open database"), "{out}");
    assert!(out.stdout.contains("  help: the server crashed"), "{out}");
    let summary = lines.last().unwrap();
    assert!(
        summary.starts_with("3 servers: 1 connected, 1 error, 1 disabled · 8 tools · "),
        "{out}"
    );
    assert!(summary.ends_with(" tokens"), "{out}");
    assert!(
        !out.stdout.contains('\x1b'),
        "colour codes with NO_COLOR\n{out}"
    );
}

#[test]
fn one_server_lists_its_tools() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"everything": everything()}}))
        .args(["list", "everything", "--json"])
        .run();
    let json = out.json();
    assert_eq!(json["server"], "everything", "{out}");
    assert_eq!(json["status"], "connected", "{out}");
    let tools = json["tools"].as_array().unwrap();
    assert!(tools.len() >= 10, "{out}");
    let mut total = 0;
    for tool in tools {
        assert!(
            tool["name"].as_str().is_some_and(|n| !n.is_empty()),
            "{out}"
        );
        assert!(tool["description"].is_string(), "{tool}\n{out}");
        assert!(tool["requiredParams"].is_array(), "{tool}\n{out}");
        let tokens = tool["tokens"].as_u64().unwrap();
        assert!(tokens > 0, "{tool}\n{out}");
        total += tokens;
    }
    assert_eq!(json["tokens"], total, "{out}");
    let echo = tools.iter().find(|t| t["name"] == "echo").expect("echo");
    assert_eq!(echo["requiredParams"], json!(["message"]), "{out}");
    assert_eq!(echo["description"], "Echoes back the input string", "{out}");
}

#[test]
fn one_server_as_a_human_table() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"f": fault(&[])}}))
        .args(["list", "f"])
        .run();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["TOOL", "REQUIRED", "TOKENS", "DESCRIPTION"],
        "{out}"
    );
    let add = lines
        .iter()
        .find(|l| l.starts_with("add "))
        .expect("add row");
    assert!(add.contains(" a, b "), "{out}");
    assert!(add.contains("Add two non-negative integers"), "{out}");
    assert!(lines.last().unwrap().starts_with("f: 8 tools · "), "{out}");
}

#[test]
fn unknown_server_exits_2_and_names_the_available_ones() {
    let cmd = Cmd::new();
    let log = cmd.path("alpha.log");
    let out = cmd
        .config_json(json!({"mcpServers": {
            "alpha": fault(&["--log", log.to_str().unwrap()]),
            "beta": fault(&[]),
        }}))
        .args(["list", "nosuch", "--json"])
        .status(2)
        .run();
    let error = out.error();
    assert_eq!(error["type"], "unknown_server", "{out}");
    assert_eq!(
        error["message"],
        format!(
            "no server named \"nosuch\" in {}",
            out.path("config.json").display()
        ),
        "{out}"
    );
    assert_eq!(error["help"], "available servers: alpha, beta", "{out}");
    assert!(!log.exists(), "a server was started\n{out}");

    let human = out
        .cmd()
        .args(["--config", "config.json", "list", "nosuch"]);
    let human = human
        .status(2)
        .stderr_has("error: no server named \"nosuch\"")
        .stderr_has("help: available servers: alpha, beta")
        .run();
    assert_eq!(human.stdout, "", "{human}");
}

#[test]
fn refresh_is_accepted() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"f": fault(&[])}}))
        .args(["list", "--refresh", "--json"])
        .run();
    assert_eq!(out.server("f")["status"], "connected", "{out}");
}

#[test]
fn global_flags_work_after_the_command() {
    let out = Cmd::new()
        .file(
            "c.json",
            &json!({"mcpServers": {"f": fault(&[])}}).to_string(),
        )
        .args(["list", "f", "--config", "c.json", "--json"])
        .run();
    assert_eq!(out.json()["tools"].as_array().unwrap().len(), 8, "{out}");
}

#[test]
fn names_shared_by_two_stacks_are_qualified() {
    let cmd = Cmd::new();
    let log_a = cmd.path("a.log");
    let log_b = cmd.path("b.log");
    let out = cmd
        .file(
            "a.json",
            &json!({"mcpServers": {
                "shared": fault(&["--log", log_a.to_str().unwrap()]),
                "only_a": fault(&[]),
            }})
            .to_string(),
        )
        .file(
            "b.json",
            &json!({"mcpServers": {
                "shared": fault(&["--log", log_b.to_str().unwrap(), "--protocol-version", "2024-11-05"]),
            }})
            .to_string(),
        )
        .args(["--config", "a.json", "--config", "b.json", "list", "--json"])
        .run();
    let json = out.json();
    let rows: Vec<(String, String)> = json["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["stack"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected = [("a/shared", "a"), ("only_a", "a"), ("b/shared", "b")];
    assert_eq!(
        rows,
        expected.map(|(n, s)| (n.to_string(), s.to_string())),
        "{out}"
    );
    assert_eq!(out.server("b/shared")["protocolVersion"], "2024-11-05");

    // The qualified name picks one; the bare shared name is ambiguous.
    let one = out
        .cmd()
        .args(["--config", "a.json", "--config", "b.json"])
        .args(["list", "b/shared", "--json"])
        .run();
    assert_eq!(one.json()["server"], "b/shared", "{one}");
    let ambiguous = out
        .cmd()
        .args(["--config", "a.json", "--config", "b.json"])
        .args(["list", "shared", "--json"])
        .status(2)
        .run();
    let error = ambiguous.error();
    assert_eq!(error["type"], "unknown_server", "{ambiguous}");
    assert_eq!(
        error["help"],
        "did you mean `b/shared`, `a/shared`? available servers: a/shared, only_a, b/shared",
        "{ambiguous}"
    );

    // The human table shows the stack column.
    let human = out
        .cmd()
        .args(["--config", "a.json", "--config", "b.json", "list"])
        .run();
    let header: Vec<&str> = human
        .stdout
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        [
            "SERVER",
            "STACK",
            "STATUS",
            "TRANSPORT",
            "TOOLS",
            "TOKENS",
            "INIT"
        ],
        "{human}"
    );
    assert!(
        human.stdout.lines().any(|l| l.starts_with("b/shared  b ")),
        "{human}"
    );
}

#[test]
fn config_files_of_the_same_name_get_numbered_stacks() {
    let entry = json!({"mcpServers": {"shared": fault(&[])}}).to_string();
    let out = Cmd::new()
        .file("x/mcp.json", &entry)
        .file("y/mcp.json", &entry)
        .args([
            "--config",
            "x/mcp.json",
            "--config",
            "y/mcp.json",
            "list",
            "--json",
        ])
        .run();
    assert_eq!(out.server("mcp/shared")["stack"], "mcp", "{out}");
    assert_eq!(out.server("mcp-2/shared")["stack"], "mcp-2", "{out}");
}

#[test]
fn discovery_uses_dot_mcp_json_and_says_so() {
    let config = json!({"mcpServers": {"found": fault(&[])}}).to_string();
    let other = json!({"mcpServers": {"other": fault(&[])}}).to_string();
    let cmd = Cmd::new()
        .file(".mcp.json", &config)
        .file("mcp.config.json", &other);
    let expected = cmd.path(".mcp.json");
    // Found in the working directory, it runs nothing until the directory is trusted.
    let refused = cmd.cmd().args(["list", "--json"]).status(2).run();
    assert_eq!(refused.error()["type"], "untrusted_directory", "{refused}");
    assert!(!refused.stdout.contains("\"found\""), "{refused}");
    let trusted = cmd.cmd().args(["trust", "--yes"]).run();
    assert!(
        trusted.stdout.contains("found") && trusted.stdout.contains("runs      python3"),
        "what it runs: {trusted}"
    );
    let out = cmd
        .args(["list"])
        .stderr_has(&format!(
            "using {} (found by discovery; --config PATH picks another)",
            expected.display()
        ))
        .run();
    assert!(out.stdout.lines().any(|l| l.starts_with("found ")), "{out}");
    assert!(!out.stdout.contains("other"), "{out}");

    // With --json, stderr stays quiet and the file is named in the JSON.
    let json = out.cmd().args(["list", "--json"]).run();
    assert_eq!(
        json.json()["configs"],
        json!([expected.display().to_string()]),
        "{json}"
    );
}

#[test]
fn discovery_falls_back_to_the_home_config() {
    let cmd = Cmd::new();
    let home_config = cmd.path(".claude/mcp.json");
    let out = cmd
        .file(
            ".claude/mcp.json",
            &json!({"mcpServers": {"from-home": fault(&[])}}).to_string(),
        )
        .current_dir("project")
        .args(["list", "--json"])
        .run();
    assert_eq!(
        out.json()["configs"],
        json!([home_config.display().to_string()]),
        "{out}"
    );
    assert_eq!(out.server("from-home")["status"], "connected", "{out}");
}

#[test]
fn no_config_anywhere_exits_2() {
    let out = Cmd::new().args(["list", "--json"]).status(2).run();
    let error = out.error();
    assert_eq!(error["type"], "config_not_found", "{out}");
    let message = error["message"].as_str().unwrap();
    for path in [".mcp.json", "mcp.config.json", ".claude/mcp.json"] {
        assert!(
            message.contains(&out.path(path).display().to_string()),
            "{path}\n{out}"
        );
    }
    assert!(error["help"].as_str().unwrap().contains("--config PATH"));

    let missing = out
        .cmd()
        .args(["--config", "nope.json", "list", "--json"])
        .status(2)
        .run();
    let error = missing.error();
    assert_eq!(error["type"], "config_not_found", "{missing}");
    assert_eq!(
        error["message"],
        format!(
            "config file {} does not exist",
            missing.path("nope.json").display()
        ),
        "{missing}"
    );
}
