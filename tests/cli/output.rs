//! `mcp-launch output HANDLE`: reading a kept output by lines, grep and JSONPath, from the
//! store in the user state dir (`$HOME/.local/state/mcp-launch/outputs` here).

use mcp_launch::outputs::{ClientScope, Kind, Store};

use crate::util::*;

/// A handle of the local user holding `body`, in the test's state dir.
fn keep(cmd: &Cmd, kind: Kind, body: &str) -> String {
    let store = Store::open(&cmd.path(".local/state/mcp-launch/outputs")).unwrap();
    store
        .put(&ClientScope::local(), kind, body.as_bytes())
        .unwrap()
}

#[test]
fn reads_a_range_grep_and_jsonpath() {
    let cmd = Cmd::new();
    let text: String = (1..=1000).map(|i| format!("row {i}\n")).collect();
    let handle = keep(&cmd, Kind::Text, &text);
    let out = cmd
        .cmd()
        .args(["output", &handle, "--range", "3:5"])
        .stderr_any()
        .run();
    assert_eq!(out.stdout, "row 3\nrow 4\nrow 5\n");
    assert!(
        out.stderr
            .contains("[lines 3-5 of 1,000; more: --range 6:]"),
        "{out}"
    );

    let out = cmd
        .cmd()
        .args(["output", &handle, "--grep", "^row 99\\d$", "--json"])
        .run();
    let json = out.json();
    assert_eq!(json["success"], true);
    assert_eq!(json["text"].as_str().unwrap().lines().count(), 10);
    assert!(json["text"].as_str().unwrap().starts_with("990:row 990\n"));

    let doc = serde_json::json!({"items": (0..100).map(|i| serde_json::json!({"i": i})).collect::<Vec<_>>()});
    let handle = keep(&cmd, Kind::Json, &doc.to_string());
    let out = cmd
        .cmd()
        .args(["output", &handle, "--jsonpath", "$.items[98:]", "--json"])
        .run();
    assert_eq!(out.json()["text"], r#"[{"i":98},{"i":99}]"#);
}

#[test]
fn unknown_handles_and_bad_requests_are_usage_errors() {
    let cmd = Cmd::new();
    let out = cmd
        .cmd()
        .args(["output", "h_000000000000000000000000", "--json"])
        .status(2)
        .run();
    assert_eq!(out.error()["type"], "unknown_handle");
    let handle = keep(&cmd, Kind::Text, "a\n");
    let out = cmd
        .cmd()
        .args(["output", &handle, "--grep", "(", "--json"])
        .status(2)
        .run();
    assert_eq!(out.error()["type"], "invalid_read");
    let out = cmd
        .cmd()
        .args(["output", &handle, "--range", "9:1", "--json"])
        .status(2)
        .run();
    assert_eq!(out.error()["type"], "usage");
}

#[test]
fn call_cuts_a_result_over_its_budget_and_output_reads_on_and_usage_counts_it() {
    let cmd = Cmd::new().config_json(serde_json::json!({"mcpServers": {
        "fault": fault(&[]),
    }}));
    let call = |extra: &[&str]| {
        cmd.cmd()
            .args(["--config", "config.json", "call", "fault", "huge"])
            .args([r#"{"bytes": 200000}"#, "--json"])
            .args(extra)
            .run()
            .json()
    };
    let cut = call(&[]);
    let result = &cut["result"];
    let sent = result.to_string().len();
    assert!(sent < 60_000, "{sent} bytes of 200,000 sent");
    let handle = result["_meta"]["mcp-launch/outputs"]["cuts"][0]["handle"]
        .as_str()
        .expect("a handle")
        .to_string();
    let envelope = result["content"].as_array().unwrap().last().unwrap()["text"]
        .as_str()
        .unwrap();
    assert!(
        envelope.contains(&handle) && envelope.contains("200.0 KB"),
        "{envelope}"
    );
    // The rest is there: the whole line, read back with no budget.
    let whole = cmd
        .cmd()
        .args(["output", &handle, "--max-output-tokens", "0"])
        .stderr_any()
        .run();
    assert_eq!(whole.stdout.trim_end().len(), 200_000);

    let uncut = call(&["--max-output-tokens", "0"]);
    assert_eq!(
        uncut["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .len(),
        200_000
    );
    let usage = cmd.cmd().args(["usage", "--json"]).run().json();
    let text = usage.to_string();
    assert!(text.contains("huge"), "{usage}");
}

#[test]
fn a_tools_budget_in_the_overrides_binds_call_unless_the_flag_says_otherwise() {
    let cmd = Cmd::new()
        .config_json(serde_json::json!({"mcpServers": {"fault": fault(&[])}}))
        .trusted_overrides(r#"{"version": 1, "stacks": {"config": {"fault": {"max_output_tokens": {"huge": 500}}}}}"#);
    let sent = |extra: &[&str]| {
        let out = cmd
            .cmd()
            .args(["--config", "config.json", "call", "fault", "huge"])
            .args([r#"{"bytes": 20000}"#, "--json"])
            .args(extra)
            .run();
        out.json()["result"].to_string().len()
    };
    let by_project = sent(&[]);
    assert!(
        by_project < 5_000,
        "the project's 500 tokens: {by_project} bytes"
    );
    let by_flag = sent(&["--max-output-tokens", "0"]);
    assert!(by_flag > 20_000, "the flag wins: {by_flag} bytes");
}
