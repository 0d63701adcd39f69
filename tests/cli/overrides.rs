//! Overrides: `server enable|disable|reset`, `tool allow|deny|reset|describe`, and how every
//! listing applies `./.mcp-launch/overrides.json` (hidden tools, `--all`, description markers,
//! disabled servers never started, stale names, errors for bad names and bad files).

use serde_json::{json, Value};

use crate::util::*;

/// A fresh directory whose config has one fault server, `fault`.
fn fault_project() -> Cmd {
    Cmd::new().config_json(json!({"mcpServers": {"fault": fault(&[])}}))
}

/// Tool names of `list SERVER --json` output, in order.
fn tool_names(out: &Output) -> Vec<String> {
    out.json()["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools array\n{out}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

/// The tool entry named `name` in `list SERVER --json` output.
fn listed(out: &Output, name: &str) -> Value {
    out.json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("{name} not listed\n{out}"))
}

/// The overrides file as text and as JSON.
fn overrides_file(out: &Output) -> (String, Value) {
    let path = out.path(".mcp-launch/overrides.json");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}\n{out}", path.display()));
    let json = serde_json::from_str(&text).expect("overrides.json is JSON");
    (text, json)
}

const BUILTINS: [&str; 8] = [
    "echo", "fail", "add", "hang", "crash", "huge", "slow", "roots",
];

#[test]
fn deny_hides_tools_everywhere_and_all_shows_them_marked() {
    let out = fault_project()
        .args(["tool", "deny", "fault", "echo", "hang"])
        .run();
    assert_eq!(
        out.stdout,
        "fault echo: denied (hidden from listings)\nfault hang: denied (hidden from listings)\n\
         saved in ./.mcp-launch/overrides.json\n",
        "{out}"
    );

    // Pretty, stable JSON keyed by stack (the config file's stem) and server.
    let (text, file) = overrides_file(&out);
    assert_eq!(
        file,
        json!({"version": 1, "stacks": {"config": {"fault": {"deny": ["echo", "hang"]}}}})
    );
    assert!(text.contains("\n  \"version\": 1,\n"), "{text}");
    assert!(text.ends_with("}\n"), "{text}");

    let list = out.again().args(["list", "fault", "--json"]).run();
    let mut expected: Vec<&str> = BUILTINS.to_vec();
    expected.retain(|t| *t != "echo" && *t != "hang");
    assert_eq!(tool_names(&list), expected, "{list}");
    assert_eq!(list.json()["hiddenTools"], 2, "{list}");
    assert!(list.json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["allowed"] == true));

    let all = out.again().args(["list", "fault", "--all", "--json"]).run();
    assert_eq!(tool_names(&all), BUILTINS, "{all}");
    assert_eq!(listed(&all, "echo")["allowed"], false, "{all}");
    assert_eq!(listed(&all, "fail")["allowed"], true, "{all}");

    let human = out.again().args(["list", "fault", "--all"]).run();
    assert!(human.stdout.contains("echo (denied)"), "{human}");
    assert!(human.stdout.contains("hang (denied)"), "{human}");
    let human = out.again().args(["list", "fault"]).run();
    assert!(!human.stdout.contains("echo"), "{human}");
    assert!(human.stdout.contains("2 hidden by overrides"), "{human}");

    // The server row counts what the project exposes.
    let rows = out.again().args(["list", "--json"]).run();
    let row = rows.server("fault");
    assert_eq!(row["tools"], 6, "{rows}");
    assert_eq!(row["hiddenTools"], 2, "{rows}");

    // Allowing again empties the entry: the file keeps no empty objects.
    let back = out
        .again()
        .args(["tool", "allow", "fault", "echo", "hang", "--json"])
        .run();
    let json = back.json();
    assert_eq!(json["success"], true, "{back}");
    assert_eq!(
        json["changed"],
        json!([{"tool": "echo", "action": "allowed"}, {"tool": "hang", "action": "allowed"}]),
        "{back}"
    );
    assert_eq!(json["overrides"], json!({}), "{back}");
    assert_eq!(overrides_file(&back).1, json!({"version": 1, "stacks": {}}));
}

#[test]
fn an_allow_list_restricts_and_allow_adds_to_it() {
    let out = fault_project()
        .args(["tool", "allow", "fault", "add", "echo", "--only", "--json"])
        .run();
    let json = out.json();
    assert_eq!(json["server"], "fault", "{out}");
    assert_eq!(json["stack"], "config", "{out}");
    assert_eq!(
        json["overrides"],
        json!({"allow": ["add", "echo"]}),
        "{out}"
    );

    let list = out.again().args(["list", "fault", "--json"]).run();
    assert_eq!(tool_names(&list), ["echo", "add"], "server order\n{list}");
    assert_eq!(list.json()["hiddenTools"], 6, "{list}");

    out.again().args(["tool", "allow", "fault", "fail"]).run();
    let list = out.again().args(["list", "fault", "--json"]).run();
    assert_eq!(tool_names(&list), ["echo", "fail", "add"], "{list}");

    // deny takes a tool off the allow list; allowing it puts it back.
    let denied = out
        .again()
        .args(["tool", "deny", "fault", "echo", "--json"])
        .run();
    assert_eq!(
        denied.json()["overrides"],
        json!({"allow": ["add", "fail"], "deny": ["echo"]}),
        "{denied}"
    );
    out.again().args(["tool", "allow", "fault", "echo"]).run();
    let (_, file) = overrides_file(&out);
    assert_eq!(
        file["stacks"]["config"]["fault"],
        json!({"allow": ["add", "echo", "fail"]})
    );

    // A repeat changes nothing and writes nothing.
    let same = out.again().args(["tool", "allow", "fault", "echo"]).run();
    assert_eq!(
        same.stdout, "fault echo: already allowed\nnothing to change\n",
        "{same}"
    );
}

#[test]
fn describe_text_trim_and_clear_round_trip_through_list_and_inspect() {
    let out = fault_project()
        .args([
            "tool",
            "describe",
            "fault",
            "add",
            "--text",
            "Sum of a and b.",
        ])
        .run();
    assert!(
        out.stdout
            .starts_with("fault add: description overridden:\n  Sum of a and b.\n"),
        "{out}"
    );

    let list = out.again().args(["list", "fault", "--json"]).run();
    let add = listed(&list, "add");
    assert_eq!(add["description"], "Sum of a and b.", "{list}");
    assert_eq!(
        add["originalDescription"], "Add two non-negative integers and return the sum as text.",
        "{list}"
    );
    assert!(
        listed(&list, "echo").get("originalDescription").is_none(),
        "{list}"
    );
    let human = out.again().args(["list", "fault"]).run();
    assert!(human.stdout.contains("add*"), "{human}");
    assert!(human.stdout.contains("Sum of a and b."), "{human}");
    assert!(
        human
            .stdout
            .contains("* description overridden in ./.mcp-launch/overrides.json"),
        "{human}"
    );

    let inspect = out
        .again()
        .args(["inspect", "fault", "add", "--json"])
        .run();
    assert_eq!(
        inspect.json()["description"],
        "Sum of a and b.",
        "{inspect}"
    );
    assert_eq!(
        inspect.json()["originalDescription"],
        add["originalDescription"],
        "{inspect}"
    );
    let inspect = out.again().args(["inspect", "fault", "add"]).run();
    assert!(inspect.stdout.contains("\nSum of a and b.\n"), "{inspect}");
    assert!(
        inspect.stdout.contains("description overridden in"),
        "{inspect}"
    );

    // --clear restores the server's text; --trim then cuts it at a word boundary.
    let cleared = out
        .again()
        .args(["tool", "describe", "fault", "add", "--clear"])
        .run();
    assert!(
        cleared.stdout.contains("description override cleared"),
        "{cleared}"
    );
    let trimmed = out
        .again()
        .args(["tool", "describe", "fault", "add", "--trim", "30", "--json"])
        .run();
    assert_eq!(
        trimmed.json()["overrides"]["descriptions"]["add"],
        "Add two non-negative integers…",
        "{trimmed}"
    );
    let list = out.again().args(["list", "fault", "--json"]).run();
    assert_eq!(
        listed(&list, "add")["description"],
        "Add two non-negative integers…"
    );

    // Trimming what already fits stores nothing.
    let fits = out
        .again()
        .args(["tool", "describe", "fault", "echo", "--trim"])
        .run();
    assert_eq!(
        fits.stdout, "fault echo: description unchanged\nnothing to change\n",
        "{fits}"
    );
    assert!(
        overrides_file(&fits).1["stacks"]["config"]["fault"]["descriptions"]
            .get("echo")
            .is_none()
    );

    // Over 300 characters: a warning about ChatGPT Actions, stored all the same.
    let long = "word ".repeat(70);
    let warned = out
        .again()
        .args([
            "tool",
            "describe",
            "fault",
            "echo",
            "--text",
            long.trim_end(),
        ])
        .stderr_has("ChatGPT Actions cut descriptions at 300")
        .run();
    assert!(warned.stdout.contains("saved in"), "{warned}");
    let (_, file) = overrides_file(&warned);
    assert_eq!(
        file["stacks"]["config"]["fault"]["descriptions"]["echo"],
        long.trim_end()
    );
    let with_json = out
        .again()
        .args([
            "tool", "describe", "fault", "echo", "--text", &long, "--json",
        ])
        .run();
    assert!(
        with_json.json()["warnings"][0]
            .as_str()
            .unwrap()
            .contains("350 characters"),
        "{with_json}"
    );
}

#[test]
fn a_disabled_server_shows_as_disabled_and_is_never_started() {
    let cmd = Cmd::new();
    let log = cmd.path("fault.log");
    let log_arg = log.display().to_string();
    let out = cmd
        .config_json(json!({"mcpServers": {
            "fault": fault(&["--log", &log_arg]),
            "off": disabled(fault(&[])),
        }}))
        .args(["server", "disable", "fault"])
        .run();
    assert_eq!(
        out.stdout,
        "fault: disabled (not started by list or launch)\nsaved in ./.mcp-launch/overrides.json\n",
        "{out}"
    );
    let list = out.again().args(["list", "--json"]).run();
    let row = list.server("fault");
    assert_eq!(row["status"], "disabled", "{list}");
    assert_eq!(row["disabledBy"], "overrides", "{list}");
    assert!(list.server("off").get("disabledBy").is_none(), "{list}");
    let human = out.again().args(["list"]).run();
    assert!(human.stdout.contains("2 disabled"), "{human}");
    assert!(!log.exists(), "the disabled server was started\n{list}");

    // Enabling wins over the config either way.
    let enabled = out
        .again()
        .args(["server", "enable", "off", "--json"])
        .run();
    assert_eq!(
        enabled.json()["changed"],
        json!([{"action": "enabled"}]),
        "{enabled}"
    );
    out.again().args(["server", "enable", "fault"]).run();
    let list = out.again().args(["list", "--json"]).run();
    assert_eq!(list.server("fault")["status"], "connected", "{list}");
    assert_eq!(list.server("off")["status"], "connected", "{list}");
    assert!(log.exists(), "an enabled server is started\n{list}");
    assert_eq!(
        overrides_file(&list).1["stacks"]["config"],
        json!({"fault": {"disabled": false}, "off": {"disabled": false}})
    );

    // reset forgets it all: the config's "disabled" applies again.
    let reset = out.again().args(["server", "reset", "off"]).run();
    assert_eq!(
        reset.stdout, "off: every override forgotten\nsaved in ./.mcp-launch/overrides.json\n",
        "{reset}"
    );
    let list = out.again().args(["list", "--json"]).run();
    assert_eq!(list.server("off")["status"], "disabled", "{list}");
}

#[test]
fn unknown_servers_and_tools_exit_2_with_suggestions() {
    let out = fault_project()
        .args(["tool", "deny", "fault", "echo", "ech0", "--json"])
        .status(2)
        .run();
    let error = out.error();
    assert_eq!(error["type"], "unknown_tool", "{out}");
    assert!(error["help"].as_str().unwrap().contains("echo"), "{out}");
    assert!(
        !out.path(".mcp-launch").exists(),
        "nothing written on error"
    );

    let out = out
        .again()
        .args(["server", "disable", "faul", "--json"])
        .status(2)
        .run();
    assert_eq!(out.error()["type"], "unknown_server", "{out}");
    assert!(
        out.error()["help"].as_str().unwrap().contains("fault"),
        "{out}"
    );

    let human = out
        .again()
        .args(["tool", "describe", "faul", "echo", "--clear"])
        .status(2)
        .stderr_has("no server named \"faul\"")
        .stderr_has("available servers: fault")
        .run();
    assert!(human.stdout.is_empty(), "{human}");
    out.again()
        .args(["tool", "reset", "fault", "never_existed"])
        .status(2)
        .stderr_has("has no tool named \"never_existed\"")
        .run();
    out.again()
        .args(["tool", "describe", "fault", "echo"])
        .status(2)
        .stderr_any()
        .run();
}

#[test]
fn choices_about_vanished_tools_are_stale_and_reset_accepts_them() {
    let out = fault_project()
        .trusted_overrides(
            r#"{"version": 1, "stacks": {"config": {"fault": {
                "deny": ["echo", "gone_tool"], "descriptions": {"old_one": "x"}}}}}"#,
        )
        .args(["list", "fault", "--json"])
        .run();
    assert_eq!(
        out.json()["stale"],
        json!(["gone_tool", "old_one"]),
        "{out}"
    );
    let human = out.again().args(["list", "fault"]).run();
    assert!(
        human
            .stdout
            .contains("stale (no longer offered; choices kept): gone_tool, old_one"),
        "{human}"
    );

    // Other commands keep stale choices untouched.
    out.again().args(["tool", "deny", "fault", "add"]).run();
    let (_, file) = overrides_file(&out);
    assert_eq!(
        file["stacks"]["config"]["fault"],
        json!({"deny": ["add", "echo", "gone_tool"], "descriptions": {"old_one": "x"}})
    );

    let reset = out
        .again()
        .args(["tool", "reset", "fault", "gone_tool", "old_one", "echo"])
        .run();
    assert!(
        reset.stdout.contains("fault gone_tool: choices reset"),
        "{reset}"
    );
    let (_, file) = overrides_file(&out);
    assert_eq!(file["stacks"]["config"]["fault"], json!({"deny": ["add"]}));
}

#[test]
fn a_malformed_overrides_file_is_a_usage_error_and_left_alone() {
    let bad = "{\n  \"version\": 1,\n  \"stacks\": {\"config\" {}}\n}\n";
    let out = fault_project()
        .file(".mcp-launch/overrides.json", bad)
        .args(["list", "--json"])
        .status(2)
        .run();
    let error = out.error();
    assert_eq!(error["type"], "invalid_overrides", "{out}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains(".mcp-launch/overrides.json:3:"), "{out}");
    assert!(error["help"].as_str().unwrap().contains("by hand"), "{out}");

    out.again()
        .args(["tool", "deny", "fault", "echo"])
        .status(2)
        .stderr_has("overrides.json:3:")
        .run();
    out.again()
        .args(["list", "fault"])
        .status(2)
        .stderr_has("invalid overrides file")
        .run();
    assert_eq!(overrides_file_text(&out), bad, "never overwritten");

    std::fs::write(out.path(".mcp-launch/overrides.json"), r#"{"version": 7}"#).unwrap();
    let newer = out
        .again()
        .args(["server", "disable", "fault", "--json"])
        .status(2)
        .run();
    assert_eq!(
        newer.error()["type"],
        "unsupported_overrides_version",
        "{newer}"
    );
}

fn overrides_file_text(out: &Output) -> String {
    std::fs::read_to_string(out.path(".mcp-launch/overrides.json")).unwrap()
}

#[test]
fn overrides_are_kept_per_stack() {
    let entry = serde_json::to_string(&json!({"mcpServers": {"fault": fault(&[])}})).unwrap();
    let out = Cmd::new()
        .file("a.json", &entry)
        .file("b.json", &entry)
        .args(["--config", "a.json", "--config", "b.json"])
        .args(["tool", "deny", "a/fault", "echo", "--json"])
        .run();
    assert_eq!(out.json()["server"], "a/fault", "{out}");
    assert_eq!(
        overrides_file(&out).1["stacks"],
        json!({"a": {"fault": {"deny": ["echo"]}}})
    );
    let both = |name: &str| {
        out.cmd()
            .args([
                "--config", "a.json", "--config", "b.json", "list", name, "--json",
            ])
            .run()
    };
    assert!(!tool_names(&both("a/fault")).contains(&"echo".to_string()));
    assert!(tool_names(&both("b/fault")).contains(&"echo".to_string()));
}

#[test]
fn call_refuses_denied_tools_and_disabled_servers_before_starting_anything() {
    let cmd = Cmd::new();
    let log = cmd.path("server.log");
    let first = cmd
        .config_json(json!({"mcpServers": {"fault": fault(&["--log", log.to_str().unwrap()])}}))
        .args(["tool", "deny", "fault", "echo", "--json"])
        .run();
    std::fs::remove_file(&log).unwrap(); // the deny checked the tool name live

    let denied = first
        .again()
        .args(["call", "fault", "echo", r#"{"message": "hi"}"#, "--json"])
        .status(2)
        .run();
    let error = denied.error();
    assert_eq!(error["type"], "tool_denied", "{denied}");
    assert_eq!(
        error["message"], "tool fault/echo is denied by this project's overrides",
        "{denied}"
    );
    assert!(
        error["help"]
            .as_str()
            .unwrap()
            .contains("mcp-launch tool allow fault echo"),
        "{denied}"
    );
    assert!(!log.exists(), "a refused call must not start the server");

    // Other tools of the server still work.
    let add = first
        .again()
        .args(["call", "fault", "add", r#"{"a": 2, "b": 3}"#, "--json"])
        .run();
    assert_eq!(add.json()["result"]["content"][0]["text"], "5", "{add}");
    std::fs::remove_file(&log).unwrap();

    first.again().args(["server", "disable", "fault"]).run();
    let disabled = first
        .again()
        .args(["call", "fault", "add", r#"{"a": 2, "b": 3}"#, "--json"])
        .status(2)
        .run();
    assert_eq!(disabled.error()["type"], "server_disabled", "{disabled}");
    assert!(
        disabled.error()["help"]
            .as_str()
            .unwrap()
            .contains("mcp-launch server enable fault"),
        "{disabled}"
    );
    assert!(!log.exists(), "a disabled server must not be started");
}

/// Issue 11: a writer saved the copy it had loaded at its start, so a choice another process
/// saved in between was lost. `tool deny` loads the file, then checks the server (here slow to
/// start); `server disable` from another terminal lands meanwhile: both choices must stay.
#[test]
fn a_write_from_another_terminal_during_a_slow_check_is_kept() {
    let project = Cmd::new();
    let log = project.path("slow.log");
    let slow = fault(&["--init-delay", "4", "--log", &log.display().to_string()]);
    let project = project.config_json(json!({"mcpServers": {"slow": slow, "other": fault(&[])}}));
    let config = ["--config", "config.json"];
    let deny = project
        .cmd()
        .args(config)
        .args(["tool", "deny", "slow", "echo"])
        .spawn();
    // The deny has read the file and is waiting for the server's answer.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !std::fs::read_to_string(&log).is_ok_and(|l| l.contains("initialize")) {
        assert!(std::time::Instant::now() < deadline, "slow never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    project
        .cmd()
        .args(config)
        .args(["server", "disable", "other"])
        .run();
    let out = deny.wait();

    let (_, file) = overrides_file(&out);
    assert_eq!(
        file["stacks"]["config"]["slow"]["deny"],
        json!(["echo"]),
        "{file}"
    );
    assert_eq!(
        file["stacks"]["config"]["other"]["disabled"],
        json!(true),
        "{file}"
    );
}

#[test]
fn budget_sets_and_clears_output_budgets_that_list_inspect_and_call_apply() {
    let out = fault_project()
        .args(["tool", "budget", "fault", "huge", "500"])
        .run();
    assert_eq!(
        out.stdout,
        "fault huge: output budget set:\n  500 tokens\nsaved in ./.mcp-launch/overrides.json\n",
        "{out}"
    );
    let star = out
        .again()
        .args(["tool", "budget", "fault", "*", "2k", "--json"])
        .run();
    assert_eq!(
        star.json()["changed"],
        json!([{"tool": "*", "action": "budgeted"}]),
        "{star}"
    );
    let (_, file) = overrides_file(&out);
    assert_eq!(
        file["stacks"]["config"]["fault"],
        json!({"max_output_tokens": {"*": 2000, "huge": 500}})
    );

    // Where the overrides show: list (own budget, else the server's `*`) and inspect.
    let list = out.again().args(["list", "fault", "--json"]).run();
    assert_eq!(listed(&list, "huge")["maxOutputTokens"], 500, "{list}");
    assert_eq!(listed(&list, "echo")["maxOutputTokens"], 2000, "{list}");
    let human = out.again().args(["list", "fault"]).run();
    assert!(
        human.stdout.contains(
            "output budgets in ./.mcp-launch/overrides.json: * 2,000 tokens, huge 500 tokens"
        ),
        "{human}"
    );
    let inspect = out.again().args(["inspect", "fault", "huge"]).run();
    assert!(
        inspect.stdout.contains("(output budget 500 tokens, set in"),
        "{inspect}"
    );

    // `call` applies it: the 20 kB result arrives cut to the tool's 500 tokens.
    let call = out
        .again()
        .args(["call", "fault", "huge", r#"{"bytes": 20000}"#, "--json"])
        .run();
    let sent = call.json()["result"].to_string().len();
    assert!(sent < 5_000, "cut to 500 tokens: {sent} bytes\n{call}");

    // Unchanged, cleared, cleared again.
    let same = out
        .again()
        .args(["tool", "budget", "fault", "huge", "500"])
        .run();
    assert!(same.stdout.ends_with("nothing to change\n"), "{same}");
    let cleared = out
        .again()
        .args(["tool", "budget", "fault", "huge", "--clear"])
        .run();
    assert!(
        cleared
            .stdout
            .contains("fault huge: output budget cleared (the run's budget applies)"),
        "{cleared}"
    );
    out.again()
        .args(["tool", "budget", "fault", "*", "--clear"])
        .run();
    let again = out
        .again()
        .args(["tool", "budget", "fault", "*", "--clear"])
        .run();
    assert!(
        again.stdout.contains("fault *: no output budget to clear"),
        "{again}"
    );
    assert_eq!(overrides_file(&out).1["stacks"], json!({}));
}

#[test]
fn budget_refuses_unknown_servers_tools_and_counts_with_help() {
    let out = fault_project()
        .args(["tool", "budget", "fault", "hug", "500", "--json"])
        .status(2)
        .run();
    assert_eq!(out.error()["type"], "unknown_tool", "{out}");
    assert!(
        out.error()["help"].as_str().unwrap().contains("huge"),
        "{out}"
    );
    out.again()
        .args(["tool", "budget", "faul", "huge", "500"])
        .status(2)
        .stderr_has("available servers: fault")
        .run();
    out.again()
        .args(["tool", "budget", "fault", "huge", "lots"])
        .status(2)
        .stderr_has("\"lots\" is not a token count: give one like 6000 or 6k (0: off)")
        .run();
    out.again()
        .args(["tool", "budget", "fault", "huge"])
        .status(2)
        .stderr_any()
        .run();
    assert!(
        !out.path(".mcp-launch/overrides.json").exists(),
        "nothing written on error"
    );

    // A stale name can be cleared (not set).
    let stale = out
        .again()
        .trusted_overrides(r#"{"version": 1, "stacks": {"config": {"fault": {"max_output_tokens": {"gone": 9}}}}}"#)
        .args(["list", "fault", "--json"])
        .run();
    assert_eq!(stale.json()["stale"], json!(["gone"]), "{stale}");
    out.again()
        .args(["tool", "budget", "fault", "gone", "9"])
        .status(2)
        .stderr_has("has no tool named \"gone\"")
        .run();
    out.again()
        .args(["tool", "budget", "fault", "gone", "--clear"])
        .run();
    assert_eq!(overrides_file(&out).1["stacks"], json!({}));
}
