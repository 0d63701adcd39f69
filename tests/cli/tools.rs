//! `mcp-launch tools serve`, the lean tools server, driven by a real client (the official
//! Python SDK, through `tests/fixtures/tools_client.py`) over stdio.

use std::path::Path;
use std::process::Command;

use mcp_launch::outputs;
use serde_json::Value;

use crate::util::*;

/// A project (`project/`, with a definition, a use and a big file) beside a file outside it.
fn layout(dir: &Path) {
    let project = dir.join("project");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(project.join("src/a.rs"), "fn helper() { needle(); }\n").unwrap();
    std::fs::write(project.join("src/b.rs"), "pub fn needle() {}\n").unwrap();
    let big: String = (1..=20_000)
        .map(|i| format!("row {i} of the big file\n"))
        .collect();
    std::fs::write(project.join("big.txt"), big).unwrap();
    std::fs::write(dir.join("outside.txt"), "not yours\n").unwrap();
}

/// Runs the client in `dir` against `tools serve` with `serve_args`.
fn drive(dir: &Path, client_args: &[&str], serve_args: &[&str]) -> Value {
    let mut command = Command::new(sdk_python());
    command
        .arg(manifest_dir().join("tests/fixtures/tools_client.py"))
        .args(client_args)
        .arg("--stdio")
        .arg(BIN)
        .args(["tools", "serve"])
        .args(serve_args);
    client_json(command, dir, "the Python client")
}

fn check_session(seen: &Value, dir: &Path) {
    let names: Vec<&str> = seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["grep", "cat", "find", "ls", "head", "tail", "read_output"]
    );
    // The list as the client received it stays under the ceiling too.
    let cost = outputs::tokens(&serde_json::json!({"tools": seen["tools"]}).to_string());
    assert!(cost <= 420, "tools/list as received: {cost} tokens");

    let grep = seen["grep"].as_str().unwrap();
    assert!(
        grep.starts_with("src/b.rs\n1:pub fn needle"),
        "the definition first: {grep}"
    );
    assert!(
        grep.contains("src/a.rs\n1:fn helper() { needle(); }"),
        "{grep}"
    );

    assert_eq!(seen["outside"]["is_error"], true);
    assert!(seen["outside"]["text"]
        .as_str()
        .unwrap()
        .contains("outside the allowed roots"));

    let big = seen["big"].as_str().unwrap();
    assert!(big.starts_with("row 1 of the big file\n"));
    assert!(
        big.contains("of 20,000 lines"),
        "{}",
        &big[big.len().saturating_sub(500)..]
    );
    assert!(outputs::tokens(big) <= outputs::DEFAULT_MAX_TOKENS);
    let more = seen["more"].as_str().unwrap();
    assert!(more.starts_with("row 19991 of the big file\n"), "{more}");
    assert!(
        more.contains("[lines 19991-20000 of 20,000; the end]"),
        "{more}"
    );
    assert_eq!(seen["stranger"]["is_error"], true);

    // The handle is on disk, private, in the user state dir.
    let handle = seen["handle"].as_str().unwrap();
    let file = dir.join(".local/state/mcp-launch/outputs").join(handle);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn a_real_client_lists_greps_cats_and_reads_on_under_root() {
    let cmd = Cmd::new();
    layout(cmd.dir());
    let seen = drive(cmd.dir(), &[], &["--root", "project"]);
    check_session(&seen, cmd.dir());
    // The handle survives the server: `mcp-launch output` reads it afterwards.
    let handle = seen["handle"].as_str().unwrap();
    let out = cmd
        .cmd()
        .args(["output", handle, "--range", "20000:"])
        .stderr_any()
        .run();
    assert_eq!(out.stdout, "row 20000 of the big file\n");

    // Each call left a line in the usage record, without its arguments.
    let usage = cmd.cmd().args(["usage", "--json"]).run().json();
    assert_eq!(usage["calls"], 5, "{usage}");
    let cat = usage["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tool"] == "cat")
        .unwrap();
    assert_eq!(cat["calls"], 2);
    assert_eq!(cat["cut"], 1);
    let record = std::fs::read_to_string(cmd.path(".local/state/mcp-launch/usage.jsonl")).unwrap();
    assert!(
        !record.contains("needle") && !record.contains("big.txt"),
        "{record}"
    );
    let table = cmd.cmd().args(["usage"]).run();
    assert!(table.stdout.contains("read_output"), "{table}");
}

#[test]
fn the_clients_roots_are_used_when_none_are_given() {
    let cmd = Cmd::new();
    layout(cmd.dir());
    // Started in the parent: without the client's roots, ../outside.txt would be refused
    // only as "not found" and big.txt would not be found at all.
    let seen = drive(cmd.dir(), &["--offer-root", "project"], &[]);
    check_session(&seen, cmd.dir());
}
