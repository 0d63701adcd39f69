//! `up --tui` in a real pseudo-terminal: tmux (on a private socket) runs the binary, the test
//! types keys and reads the screen with `capture-pane`. One scenario from start to quit, with
//! real servers and a broken one; and `--tui` without a terminal.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::launch_util::{http, read_state, recorded_pids, stack};
use crate::util::{assert_pid_gone, everything, fault, free_ports, Cmd, BIN};

/// A tmux server of the test's own, with one 120×40 window running a command.
pub(crate) struct Tmux {
    socket: String,
}

impl Tmux {
    pub(crate) fn start(dir: &Path, command: &str) -> Tmux {
        let socket = dir.join("tmux.sock").display().to_string();
        let tmux = Tmux { socket };
        tmux.run(&[
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            "120",
            "-y",
            "40",
            command,
        ]);
        tmux
    }

    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-S", &self.socket])
            .args(args)
            .output()
            .expect("tmux runs (scripts/install-test-deps.sh installs it)");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Sends keys (tmux key names, or literal text with `literal`).
    pub(crate) fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "t"];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    /// One Escape on its own: two in one write read as Alt+Escape.
    fn escape(&self) {
        self.keys(&["Escape"]);
        std::thread::sleep(Duration::from_millis(200));
    }

    fn text(&self, text: &str) {
        self.run(&["send-keys", "-t", "t", "-l", text]);
    }

    /// Quits the TUI (`q`, then `y`); its exit code, as the command wrote it to `exit.txt`.
    pub(crate) fn quit(&self, dir: &Path) -> String {
        self.keys(&["q"]);
        self.wait_for(&["Quit and stop everything"]);
        self.keys(&["y"]);
        let exit = dir.join("exit.txt");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            // Written by the shell once the TUI has ended (possibly seen before its text).
            let code = std::fs::read_to_string(&exit).unwrap_or_default();
            if !code.trim().is_empty() {
                return code.trim().to_string();
            }
            assert!(
                Instant::now() < deadline,
                "the TUI did not exit:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub(crate) fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "t"])
    }

    /// Waits until the screen holds every one of `wanted`; returns it.
    pub(crate) fn wait_for(&self, wanted: &[&str]) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let screen = self.screen();
            if wanted.iter().all(|w| screen.contains(w)) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "the screen never showed {wanted:?}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-S", &self.socket, "kill-server"])
            .output();
    }
}

/// `up --tui --config a.json` (`config` written there) in a tmux window, in `cmd`'s directory;
/// when the TUI ends, its exit code goes to `exit.txt` and `AFTER-TUI` to the screen.
fn open_tui(cmd: &Cmd, config: &Value) -> Tmux {
    std::fs::write(cmd.path("a.json"), config.to_string()).unwrap();
    let dir = cmd.dir().display().to_string();
    let command = format!(
        "cd {dir} && env HOME={dir} XDG_CACHE_HOME={dir}/.cache NO_COLOR=1 \
         MCP_LAUNCH_MCPO=/nonexistent/mcpo {BIN} up --tui --config a.json; \
         echo $? > {dir}/exit.txt; echo AFTER-TUI; sleep 60"
    );
    Tmux::start(cmd.dir(), &command)
}

/// From the preflight: `L`, no tunnel (the default), a free port, Enter. The port and the spec's
/// URL.
pub(crate) fn launch_on_a_free_port(tmux: &Tmux) -> (u16, String) {
    let port = free_ports(2);
    tmux.keys(&["L"]);
    tmux.wait_for(&["mcp-launch · launch", "auto (native)"]);
    tmux.keys(&["Down", "Down", "BSpace", "BSpace", "BSpace", "BSpace"]);
    tmux.text(&port.to_string());
    tmux.keys(&["Enter"]);
    (port, format!("http://127.0.0.1:{port}/openapi.json"))
}

/// A tool with a description over the 300-character limit, for the trim.
fn long_tool() -> Value {
    let description = "Reads every record of the ledger and reports them. ".repeat(10);
    json!({"name": "ledger_report", "description": description, "inputSchema": {"type": "object"}})
}

#[test]
fn preflight_edit_launch_call_and_quit_in_a_terminal() {
    let cmd = Cmd::new();
    let tools = cmd.path("tools.json");
    std::fs::write(&tools, json!([long_tool()]).to_string()).unwrap();
    let config = json!({"mcpServers": {
        "everything": everything(),
        "ledger": fault(&["--tools-file", &tools.display().to_string()]),
        "broken": {"command": "/bin/sh", "args": ["-c", "echo 'missing API token' >&2; exit 3"]},
    }});
    let tmux = open_tui(&cmd, &config);

    // The preflight: rows fill in; the broken server shows its error.
    let screen = tmux.wait_for(&["a/everything", "a/ledger", "a/broken", "error"]);
    assert!(screen.contains("mcp-launch · preflight"), "{screen}");
    tmux.wait_for(&["ok         a/everything", "ok         a/ledger"]);

    // Deny echo on everything.
    tmux.keys(&["Enter"]);
    tmux.wait_for(&["a/everything ok"]);
    tmux.text("/echo");
    tmux.keys(&["Enter", "Space"]);
    tmux.wait_for(&["[ ] echo"]);
    tmux.escape();
    tmux.escape();
    tmux.wait_for(&["mcp-launch · preflight"]);

    // Trim ledger_report's description to 300 characters.
    tmux.keys(&["Down", "Enter"]);
    tmux.wait_for(&["a/ledger ok", "ledger_report"]);
    tmux.text("/ledger");
    tmux.keys(&["Enter", "t"]);
    tmux.wait_for(&["ledger_report *"]);
    // Written off the TUI's loop: shown first, in the file a moment later.
    let overrides = wait_for_overrides(cmd.dir(), |f| {
        f["stacks"]["a"]["ledger"]["descriptions"]["ledger_report"].is_string()
    });
    let ledger = &overrides["stacks"]["a"]["ledger"];
    let trimmed = ledger["descriptions"]["ledger_report"].as_str().unwrap();
    assert!(trimmed.chars().count() <= 300, "{trimmed}");
    assert_eq!(
        overrides["stacks"]["a"]["everything"]["deny"],
        json!(["echo"])
    );
    tmux.escape();
    tmux.escape();
    tmux.wait_for(&["mcp-launch · preflight"]);

    // Launch with no tunnel on a free port.
    let (port, url) = launch_on_a_free_port(&tmux);
    let screen = tmux.wait_for(&["mcp-launch · results", &url]);
    assert!(screen.contains("broken is left out"), "{screen}");

    // The front enforces what the TUI chose.
    let state = read_state(cmd.dir());
    let a = stack(&state, "a");
    let key = a["api_key"].as_str().unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let (status, body) = http(
        "POST",
        &format!("{base}/everything/echo"),
        &[("X-API-Key", key)],
        Some(json!({"message": "hi"})),
    );
    assert_eq!(
        (status, &body["error"]["type"]),
        (403, &json!("tool_denied")),
        "{body}"
    );
    let (status, body) = http(
        "POST",
        &format!("{base}/everything/get-sum"),
        &[("X-API-Key", key)],
        Some(json!({"a": 2, "b": 3})),
    );
    assert_eq!(status, 200, "{body}");
    let (_, spec) = http("GET", &url, &[], None);
    let described = &spec["paths"]["/ledger/ledger_report"]["post"]["description"];
    assert_eq!(
        described.as_str(),
        Some(trimmed),
        "the spec carries the trimmed text"
    );

    // Quit: asks, then stops everything and restores the terminal.
    let pids = recorded_pids(&state);
    assert_eq!(tmux.quit(cmd.dir()), "0");
    for (what, pid) in pids {
        assert_pid_gone(pid, &what);
    }
    assert!(
        !cmd.path(".mcp-launch/state.json").exists(),
        "the record is gone"
    );
}

#[test]
fn tui_without_a_terminal_says_so() {
    let cmd = Cmd::new().file(
        "a.json",
        &json!({"mcpServers": {"everything": everything()}}).to_string(),
    );
    let out = cmd
        .cmd()
        .args(["up", "--tui", "--config", "a.json", "--json"])
        .status(2)
        .run();
    let error = &out.json()["error"];
    assert_eq!(error["type"], "no_terminal");
    assert!(
        error["help"].as_str().unwrap().contains("drop --tui"),
        "{error}"
    );
}

#[test]
fn sigterm_stops_the_launched_stacks_and_restores_the_terminal() {
    let cmd = Cmd::new();
    let config = json!({"mcpServers": {"everything": everything()}});
    let tmux = open_tui(&cmd, &config);
    tmux.wait_for(&["ok         a/everything"]);
    let port = free_ports(2);
    tmux.keys(&["L"]);
    tmux.wait_for(&["mcp-launch · launch"]);
    tmux.keys(&["Down", "Down", "BSpace", "BSpace", "BSpace", "BSpace"]);
    tmux.text(&port.to_string());
    tmux.keys(&["Enter"]);
    tmux.wait_for(&[&format!("http://127.0.0.1:{port}/openapi.json")]);
    let state = read_state(cmd.dir());
    let pids = recorded_pids(&state);
    let up = stack(&state, "a")["supervisor"]["pgid"].as_i64().unwrap() as i32;

    crate::launch_util::signal(up, nix::sys::signal::Signal::SIGTERM);
    let screen = tmux.wait_for(&["AFTER-TUI"]);
    assert!(
        !screen.contains("mcp-launch · results"),
        "the terminal is back:\n{screen}"
    );
    let code = std::fs::read_to_string(cmd.path("exit.txt")).unwrap();
    assert_eq!(code.trim(), "0", "a signal is a clean stop");
    for (what, pid) in pids {
        assert_pid_gone(pid, &what);
    }
    assert!(!cmd.path(".mcp-launch/state.json").exists());
}

/// The overrides file as JSON (waits until `done` holds, since the TUI writes off its loop).
fn wait_for_overrides(dir: &Path, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(dir.join(".mcp-launch/overrides.json"));
        let file = text.ok().and_then(|t| serde_json::from_str(&t).ok());
        match file {
            Some(file) if done(&file) => return file,
            file => assert!(
                Instant::now() < deadline,
                "overrides never settled: {file:?}"
            ),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Issue 11: a `tool deny` from another terminal while the TUI was open was lost at the TUI's
/// next save. Now the TUI shows it, keeps it when it saves its own choice, and the CLI keeps
/// the TUI's choices in turn.
#[test]
fn choices_from_another_terminal_show_in_the_tui_and_survive_its_saves() {
    let cmd = Cmd::new();
    let config = json!({"mcpServers": {"everything": everything()}});
    let tmux = open_tui(&cmd, &config);
    tmux.wait_for(&["ok         a/everything"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for(&["a/everything ok", "[x] echo"]);

    // Another terminal denies echo: the open TUI shows it.
    let cli = |args: &[&str]| {
        cmd.cmd()
            .args(["--config", "a.json"])
            .args(args.iter().copied())
            .run()
    };
    cli(&["tool", "deny", "everything", "echo"]);
    tmux.wait_for(&["[ ] echo"]);

    // The TUI denies get-sum: the file keeps both.
    tmux.text("/get-sum");
    tmux.keys(&["Enter", "Space"]);
    tmux.wait_for(&["[ ] get-sum"]);
    let denied = |f: &Value| f["stacks"]["a"]["everything"]["deny"].clone();
    let file = wait_for_overrides(cmd.dir(), |f| denied(f) == json!(["echo", "get-sum"]));
    assert_eq!(denied(&file), json!(["echo", "get-sum"]));

    // The CLI writes after the TUI: the TUI's choice stays, and the TUI shows the new one.
    cli(&[
        "tool",
        "describe",
        "everything",
        "echo",
        "--text",
        "Says it back.",
    ]);
    let file = wait_for_overrides(cmd.dir(), |f| {
        f["stacks"]["a"]["everything"]["descriptions"]["echo"] == "Says it back."
    });
    assert_eq!(denied(&file), json!(["echo", "get-sum"]));
    tmux.escape();
    tmux.text("/");
    tmux.keys(&["Enter"]);
    tmux.wait_for(&["[ ] echo *", "[ ] get-sum"]);

    assert_eq!(tmux.quit(cmd.dir()), "0");
    // Quitting wrote nothing over the outside choices.
    let file = wait_for_overrides(cmd.dir(), |_| true);
    assert_eq!(denied(&file), json!(["echo", "get-sum"]));
}

/// Issue 25, item 6: Launch reuses the preflight's results: a server the preflight found
/// failing (here: hanging through both init windows) is neither started nor waited for again.
#[test]
fn launch_does_not_check_again_a_server_the_preflight_found_failing() {
    let cmd = Cmd::new();
    let starts = cmd.path("starts");
    let config = json!({"mcpServers": {
        "quick": fault(&[]),
        "hang": fault(&["--no-answer", "--starts", &starts.display().to_string()]),
    }});
    std::fs::write(cmd.path("a.json"), config.to_string()).unwrap();
    let dir = cmd.dir().display().to_string();
    let command = format!(
        "cd {dir} && env HOME={dir} XDG_CACHE_HOME={dir}/.cache NO_COLOR=1 \
         MCP_INIT_TIMEOUT_SEC=1 MCP_LAUNCH_MCPO=/nonexistent/mcpo {BIN} up --tui --config a.json; \
         echo $? > {dir}/exit.txt; sleep 60"
    );
    let tmux = Tmux::start(cmd.dir(), &command);
    tmux.wait_for(&["ok         a/quick", "error      a/hang"]);
    let (_, url) = launch_on_a_free_port(&tmux);
    tmux.wait_for(&["mcp-launch · results", &url]);
    let started = std::fs::read_to_string(&starts).unwrap_or_default();
    assert_eq!(
        started.lines().count(),
        1,
        "the hanging server was started by the preflight only:\n{}",
        tmux.screen()
    );
    let pids = recorded_pids(&read_state(cmd.dir()));
    assert_eq!(tmux.quit(cmd.dir()), "0");
    for (what, pid) in pids {
        assert_pid_gone(pid, &what);
    }
}
