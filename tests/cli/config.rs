//! Config files: syntax errors with positions, `${VAR}` interpolation, `.env` files, formats.

use serde_json::{json, Value};

use crate::util::*;

#[test]
fn malformed_json_names_file_line_and_column() {
    let out = Cmd::new()
        .file(
            "config.json",
            "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",}\n  }\n}\n",
        )
        .args(["--config", "config.json", "list", "--json"])
        .status(2)
        .run();
    let error = out.error();
    let path = out.path("config.json").display().to_string();
    assert_eq!(error["type"], "invalid_json", "{out}");
    assert_eq!(
        error["message"],
        format!("{path}:3:26: invalid JSON: trailing comma"),
        "{out}"
    );
    assert!(
        error["help"]
            .as_str()
            .unwrap()
            .starts_with(&format!("fix the JSON at {path}:3:26")),
        "{out}"
    );

    let human = out
        .cmd()
        .args(["--config", "config.json", "list"])
        .status(2)
        .stderr_has(&format!("error: {path}:3:26: invalid JSON: trailing comma"))
        .run();
    assert_eq!(human.stdout, "", "{human}");
}

#[test]
fn an_unset_variable_fails_only_its_server() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {
            "needs-token": fault(&["--protocol-version", "${MCP_LAUNCH_TEST_UNSET_TOKEN}"]),
            "fine": fault(&[]),
        }}))
        .args(["list", "--json"])
        .status(1)
        .run();
    let broken = out.server("needs-token");
    assert_eq!(broken["status"], "error", "{out}");
    let error = &broken["error"];
    assert_eq!(error["type"], "unset_variable", "{out}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.starts_with(&out.path("config.json").display().to_string()),
        "{out}"
    );
    assert!(
        message
            .ends_with("server \"needs-token\": variable MCP_LAUNCH_TEST_UNSET_TOKEN is not set"),
        "{out}"
    );
    assert!(
        error["help"].as_str().unwrap().contains("--env-file"),
        "{out}"
    );
    assert_eq!(out.server("fine")["status"], "connected", "{out}");
}

fn version_config(var: &str) -> Value {
    json!({"mcpServers": {"f": fault(&["--protocol-version", &format!("${{{var}:-2024-11-05}}")])}})
}

#[test]
fn defaults_apply_when_a_variable_is_unset() {
    let out = Cmd::new()
        .config_json(version_config("MCP_LAUNCH_TEST_PV"))
        .args(["list", "--json"])
        .run();
    assert_eq!(out.server("f")["protocolVersion"], "2024-11-05", "{out}");

    let set = out
        .cmd()
        .env("MCP_LAUNCH_TEST_PV", "2025-03-26")
        .args(["--config", "config.json", "list", "--json"])
        .run();
    assert_eq!(set.server("f")["protocolVersion"], "2025-03-26", "{set}");
}

#[test]
fn env_files_supply_variables_with_precedence() {
    let config = json!({"mcpServers": {"f": fault(&["--protocol-version", "${PV}"])}});
    let cmd = Cmd::new()
        .file(".mcp.json", &config.to_string())
        .file("vars.env", "# versions\nexport PV=2025-03-26\n")
        .file(".env", "PV=2024-11-05\n");
    // ./.env comes with the directory and its discovered config: used once it is trusted.
    let refused = cmd.args(["list", "--json"]).status(2).run();
    assert_eq!(refused.error()["type"], "untrusted_directory", "{refused}");
    refused.cmd().args(["trust", "--yes"]).run();
    let out = refused.cmd().args(["list", "--json"]).run();
    assert_eq!(out.server("f")["protocolVersion"], "2024-11-05", "{out}");
    // --env-file beats ./.env.
    let flagged = out
        .cmd()
        .args(["--env-file", "vars.env", "list", "--json"])
        .run();
    assert_eq!(
        flagged.server("f")["protocolVersion"],
        "2025-03-26",
        "{flagged}"
    );
    // The process environment beats both.
    let process = out
        .cmd()
        .env("PV", "2025-06-18")
        .args(["--env-file", "vars.env", "list", "--json"])
        .run();
    assert_eq!(
        process.server("f")["protocolVersion"],
        "2025-06-18",
        "{process}"
    );
}

/// Issue 23 item 8: `--config` names the user's own file, so a repository's `.env` (most
/// hold one, for other tools) is neither asked about nor read — not even a variable only it
/// sets. A config that discovery finds there still waits for `trust`, and brings the `.env`.
#[test]
fn a_named_config_ignores_the_working_directorys_dot_env() {
    let config = json!({"mcpServers": {"f": fault(&["--protocol-version", "${PV:-2025-03-26}"])}});
    let hostile = "PV=2024-11-05\nNODE_OPTIONS=--require ./evil.js\n";
    let cmd = Cmd::new()
        .file("my.json", &config.to_string())
        .file("repo/.env", hostile);
    let named = |args: &[&str]| {
        cmd.cmd()
            .current_dir("repo")
            .args(["--config", "../my.json"])
            .args(args)
    };
    let listed = named(&["list", "--json"]).run();
    assert_eq!(listed.server("f")["status"], "connected", "{listed}");
    assert_eq!(
        listed.server("f")["protocolVersion"],
        "2025-03-26",
        "PV comes only from ./.env, which must not be read: {listed}"
    );
    let called = named(&["call", "f", "echo", r#"{"message": "hi"}"#, "--json"]).run();
    assert_eq!(called.json()["success"], true, "{called}");
    assert_eq!(
        called.json()["result"]["content"][0]["text"],
        "hi",
        "{called}"
    );

    // Discovered in the same directory, the config and its .env wait for trust.
    std::fs::write(cmd.path("repo/.mcp.json"), config.to_string()).unwrap();
    let discovered = || cmd.cmd().current_dir("repo").args(["list", "--json"]);
    let refused = discovered().status(2).run();
    assert_eq!(refused.error()["type"], "untrusted_directory", "{refused}");
    assert!(
        refused.error()["message"]
            .as_str()
            .unwrap()
            .contains(".env"),
        "{refused}"
    );
    cmd.cmd().current_dir("repo").args(["trust", "--yes"]).run();
    let trusted = discovered().run();
    assert_eq!(
        trusted.server("f")["protocolVersion"],
        "2024-11-05",
        "trusted, the checkout's .env is read: {trusted}"
    );
    // Named again, the .env stays unread even though the directory is trusted now.
    let listed = named(&["list", "--json"]).run();
    assert_eq!(
        listed.server("f")["protocolVersion"],
        "2025-03-26",
        "{listed}"
    );
}

#[test]
fn a_missing_env_file_exits_2() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"f": fault(&[])}}))
        .args(["--env-file", "nope.env", "list", "--json"])
        .status(2)
        .run();
    let error = out.error();
    assert_eq!(error["type"], "env_file_not_found", "{out}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains(&out.path("nope.env").display().to_string()),
        "{out}"
    );
}

fn server_env(out: &Output) -> Value {
    let text = out.json()["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text\n{out}"))
        .to_string();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("get-env text is not JSON: {e}\n{out}"))
}

#[test]
fn server_env_and_dotenv_variables_reach_the_process() {
    let mut entry = everything();
    entry["env"] = json!({
        "MCP_LAUNCH_TEST_FROM_CONFIG": "configured ${MCP_LAUNCH_TEST_FROM_DOTENV}",
    });
    let cmd = Cmd::new()
        .config_json(json!({"mcpServers": {"everything": entry}}))
        .file(
            "vars.env",
            "MCP_LAUNCH_TEST_FROM_DOTENV=dotenv-value\nMCP_LAUNCH_TEST_UNNAMED=x\nNODE_OPTIONS=--max-old-space-size=77\n",
        );
    let out = cmd
        .env("MCP_LAUNCH_TEST_FROM_PROCESS", "inherited")
        .args([
            "--env-file",
            "vars.env",
            "call",
            "everything",
            "get-env",
            "--json",
        ])
        .run();
    let env = server_env(&out);
    assert_eq!(
        env["MCP_LAUNCH_TEST_FROM_CONFIG"], "configured dotenv-value",
        "{out}"
    );
    // Variables only a .env file sets are passed on when the entry names them (never a loader
    // variable such as NODE_OPTIONS); the process environment is inherited.
    assert_eq!(env["MCP_LAUNCH_TEST_FROM_DOTENV"], "dotenv-value", "{out}");
    assert!(env.get("MCP_LAUNCH_TEST_UNNAMED").is_none(), "{out}");
    assert!(env.get("NODE_OPTIONS").is_none(), "{out}");
    assert_eq!(env["MCP_LAUNCH_TEST_FROM_PROCESS"], "inherited", "{out}");
}

#[test]
fn server_args_reach_the_process() {
    let cmd = Cmd::new();
    let data = cmd.mkdir("data");
    let out = cmd
        .file("data/hello.txt", "hello from the allowed dir")
        .config_json(json!({"mcpServers": {"fs": filesystem(&data)}}))
        .args(["call", "fs", "read_text_file", "--json"])
        .args([json!({"path": data.join("hello.txt")}).to_string()])
        .run();
    assert_eq!(
        out.json()["result"]["content"][0]["text"],
        "hello from the allowed dir",
        "{out}"
    );
}

#[test]
fn a_relative_cwd_resolves_against_the_config_file() {
    let mut entry = fault(&[]);
    entry["args"][0] = json!("fault_server.py");
    entry["cwd"] = json!("fixtures");
    let cmd = Cmd::new().file(
        "conf/fixtures/fault_server.py",
        &std::fs::read_to_string(fault_script()).unwrap(),
    );
    let out = cmd
        .file(
            "conf/c.json",
            &json!({"mcpServers": {"f": entry}}).to_string(),
        )
        .args(["--config", "conf/c.json", "list", "--json"])
        .run();
    assert_eq!(out.server("f")["status"], "connected", "{out}");
}

#[test]
fn vs_code_servers_format_and_bad_entries() {
    let out = Cmd::new()
        .config_json(json!({
            "inputs": [],
            "servers": {
                "vscode": {"type": "stdio", "command": "python3", "args": [fault_script()]},
                "no-transport": {"args": ["x"]},
                "bad-args": {"command": "python3", "args": "not a list"},
            }
        }))
        .args(["list", "--json"])
        .status(1)
        .run();
    assert_eq!(out.server("vscode")["status"], "connected", "{out}");
    let no_transport = out.server("no-transport");
    assert_eq!(no_transport["error"]["type"], "invalid_server", "{out}");
    assert!(
        no_transport["error"]["message"]
            .as_str()
            .unwrap()
            .ends_with("server \"no-transport\": it has neither \"command\" nor \"url\""),
        "{out}"
    );
    let bad_args = out.server("bad-args");
    assert_eq!(bad_args["error"]["type"], "invalid_server", "{out}");
    assert_eq!(
        bad_args["error"]["help"], "make \"args\" an array of strings",
        "{out}"
    );
}

#[test]
fn a_config_error_for_call_exits_2() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"f": {"command": "${MCP_LAUNCH_TEST_UNSET_CMD}"}}}))
        .args(["call", "f", "echo", "--json"])
        .status(2)
        .run();
    assert_eq!(out.error()["type"], "unset_variable", "{out}");
}
