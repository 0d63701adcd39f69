//! `mcp-launch inspect SERVER TOOL [--example]`.

use serde_json::json;

use crate::util::*;

#[test]
fn json_shows_the_definition_tokens_and_an_example() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"everything": everything()}}))
        .args(["inspect", "everything", "echo", "--json"])
        .run();
    let json = out.json();
    assert_eq!(json["server"], "everything", "{out}");
    assert_eq!(json["tool"], "echo", "{out}");
    assert_eq!(json["description"], "Echoes back the input string", "{out}");
    assert_eq!(json["inputSchema"]["type"], "object", "{out}");
    assert_eq!(
        json["inputSchema"]["properties"]["message"]["type"], "string",
        "{out}"
    );
    assert_eq!(json["inputSchema"]["required"], json!(["message"]), "{out}");
    let tokens = json["tokens"].as_u64().unwrap();
    assert!(tokens > 0, "{out}");
    let example = json["exampleCall"].as_str().unwrap();
    assert!(example.starts_with("mcp-launch "), "{out}");
    assert!(example.contains("call everything echo"), "{out}");
    assert_eq!(
        example,
        r#"mcp-launch --config config.json call everything echo '{"message":"<message>"}'"#,
        "{out}"
    );

    // One catalog: `list SERVER` counts the same tokens for the tool.
    let list = out
        .cmd()
        .args(["--config", "config.json", "list", "everything", "--json"])
        .run();
    let listed = list.json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "echo")
        .cloned()
        .unwrap();
    assert_eq!(listed["tokens"], tokens, "{list}");
}

#[test]
fn the_example_is_one_line_that_runs() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"everything": everything()}}))
        .args(["inspect", "everything", "echo", "--example"])
        .run();
    assert_eq!(out.stdout.lines().count(), 1, "{out}");
    assert!(out.stdout.ends_with('\n'), "{out}");
    let words = shell_words(out.stdout.trim_end());
    assert_eq!(words[0], "mcp-launch", "{out}");
    let called = out.cmd().args(&words[1..]).args(["--json"]).run();
    assert_eq!(
        called.json(),
        json!({"success": true, "result": {"content": [{"type": "text", "text": "Echo: <message>"}]}}),
        "{called}"
    );
}

#[test]
fn examples_of_tools_with_integers_and_enums_run() {
    let out = Cmd::new().config_json(json!({"mcpServers": {
        "everything": everything(),
        "f": fault(&[]),
    }}));
    let out = out.args(["list", "--json"]).run();
    for (server, tool) in [
        ("f", "add"),
        ("f", "slow"),
        ("everything", "get-structured-content"),
    ] {
        let example = out
            .cmd()
            .args([
                "--config",
                "config.json",
                "inspect",
                server,
                tool,
                "--example",
            ])
            .run();
        let words = shell_words(example.stdout.trim_end());
        assert_eq!(words[0], "mcp-launch", "{example}");
        let called = out.cmd().args(&words[1..]).args(["--json"]).run();
        assert_eq!(called.json()["success"], true, "{called}");
    }
}

#[test]
fn human_output_shows_parameters_schema_and_example() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"f": fault(&[])}}))
        .args(["inspect", "f", "add"])
        .run();
    let first = out.stdout.lines().next().unwrap();
    assert!(first.starts_with("f / add  "), "{out}");
    assert!(first.ends_with(" tokens"), "{out}");
    for part in [
        "Add two non-negative integers and return the sum as text.",
        "Parameters\n  a: integer (required) — First addend\n  b: integer (required) — Second addend\n",
        "Input schema\n{",
        "Example\n  mcp-launch --config config.json call f add '{\"a\":0,\"b\":0}'\n",
    ] {
        assert!(out.stdout.contains(part), "{part:?}\n{out}");
    }
}

#[test]
fn an_unknown_tool_suggests_similar_names() {
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"f": fault(&[])}}))
        .args(["inspect", "f", "ecko", "--json"])
        .status(2)
        .run();
    let error = out.error();
    assert_eq!(error["type"], "unknown_tool", "{out}");
    assert_eq!(
        error["message"], "server \"f\" has no tool named \"ecko\"",
        "{out}"
    );
    assert_eq!(
        error["help"], "did you mean: echo (requires message)",
        "{out}"
    );

    let none = out
        .cmd()
        .args(["--config", "config.json", "inspect", "f", "zzzzzz"])
        .status(2)
        .stderr_has("help: run `mcp-launch list f` to see its 8 tools")
        .run();
    assert_eq!(none.stdout, "", "{none}");
}

/// Issue 25 item 24: the example of a denied tool says that it will be refused and how to
/// allow it (on stderr with `--example`, so the line itself still pastes).
#[test]
fn the_example_of_a_denied_tool_says_it_will_be_refused() {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"f": fault(&[])}}));
    cmd.cmd()
        .args(["--config", "config.json", "tool", "deny", "f", "add"])
        .stderr_any()
        .run();
    let inspect = |extra: &str| {
        cmd.cmd()
            .args(["--config", "config.json", "inspect", "f", "add", extra])
            .stderr_any()
            .run()
    };
    let example = inspect("--example");
    assert!(example.stdout.starts_with("mcp-launch "), "{example}");
    assert!(
        example.stderr.contains("will be refused") && example.stderr.contains("tool allow f add"),
        "{example}"
    );
    let json = inspect("--json").json();
    assert!(
        json["exampleRefused"]
            .as_str()
            .unwrap_or("")
            .contains("tool allow f add"),
        "{json}"
    );
}
