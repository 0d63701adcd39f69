//! Consent in the TUI (issue 27): a stack launched from `up --tui --auth oauth` serves `/mcp`,
//! and when the official Python SDK's OAuth client asks it for access, the request shows in
//! the TUI (the client's name, where it redirects, the scope, the one-time code); the
//! operator approves it with `a`, and the client — its user pressing Allow without a code —
//! is let in and calls a tool.

use std::process::Command;

use serde_json::json;

use crate::launch_util::{read_state, recorded_pids};
use crate::tui::{launch_on_a_free_port, Tmux};
use crate::util::{assert_pid_gone, client_json, fault, manifest_dir, sdk_python, Cmd, BIN};

#[test]
fn a_client_asking_a_stack_launched_from_the_tui_is_approved_there() {
    let cmd = Cmd::new();
    let config = json!({"mcpServers": {"fault": fault(&[])}});
    std::fs::write(cmd.path("a.json"), config.to_string()).unwrap();
    let dir = cmd.dir().display().to_string();
    let command = format!(
        "cd {dir} && env HOME={dir} XDG_CACHE_HOME={dir}/.cache XDG_STATE_HOME={dir}/.state NO_COLOR=1 \
         MCP_LAUNCH_MCPO=/nonexistent/mcpo {BIN} up --tui --config a.json --auth oauth \
         --mode full; echo $? > {dir}/exit.txt; sleep 60"
    );
    let tmux = Tmux::start(cmd.dir(), &command);
    tmux.wait_for(&["ok         a/fault"]);
    let (port, _) = launch_on_a_free_port(&tmux);
    let mcp = format!("http://127.0.0.1:{port}/mcp");
    tmux.wait_for(&["mcp-launch · results", &mcp, "OAuth"]);

    let approved = cmd.path("approved");
    let mut client = Command::new(sdk_python());
    client
        .arg(manifest_dir().join("tests/fixtures/oauth_client.py"))
        .args([&mcp, BIN, "fault__echo"])
        .env("MCP_LAUNCH_TEST_APPROVED_FILE", &approved);
    let client_dir = cmd.dir().to_path_buf();
    let logging_in =
        std::thread::spawn(move || client_json(client, &client_dir, "the Python SDK's client"));

    let screen = tmux.wait_for(&[
        "A client asks for access",
        "\"python sdk test\"",
        "127.0.0.1:9",
        "tools:all",
        "Code",
    ]);
    assert!(
        screen.contains("Expires in 5:00") || screen.contains("Expires in 4:5"),
        "{screen}"
    );
    tmux.keys(&["a"]);
    tmux.wait_for(&["approved python sdk test on a"]);
    std::fs::write(&approved, "").unwrap();
    let seen = logging_in.join().expect("the client's thread");
    assert_eq!(seen["consent_status"], 303, "let in without a code: {seen}");
    assert_eq!(seen["first_call_error"], false, "{seen}");
    assert_eq!(seen["second_call_error"], false, "{seen}");
    let screen = tmux.screen();
    assert!(!screen.contains("asks for access"), "{screen}");

    let pids = recorded_pids(&read_state(cmd.dir()));
    assert_eq!(tmux.quit(cmd.dir()), "0");
    for (what, pid) in pids {
        assert_pid_gone(pid, &what);
    }
}
