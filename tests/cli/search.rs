//! `search`: ranking, methods, filters, overrides, errors, and answering from the persisted
//! index without starting servers.

use serde_json::{json, Value};

use crate::util::*;

fn project(cmd: Cmd) -> Cmd {
    let log = cmd.path("fault.log");
    let dir = cmd.mkdir("files");
    cmd.config_json(json!({"mcpServers": {
        "fault": fault(&["--log", log.to_str().unwrap()]),
        "filesystem": filesystem(&dir),
    }}))
}

fn results(out: &Output) -> Vec<(String, String, f64)> {
    out.json()["results"]
        .as_array()
        .unwrap_or_else(|| panic!("no results array\n{out}"))
        .iter()
        .map(|r| {
            (
                r["server"].as_str().unwrap().to_string(),
                r["tool"].as_str().unwrap().to_string(),
                r["score"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn ranks_tasks_and_names_and_answers_from_the_index() {
    let cmd = Cmd::new();
    let log = cmd.path("fault.log");
    let first = project(cmd)
        .args(["search", "read the contents of a file", "--json"])
        .stderr_any()
        .run();
    let json = first.json();
    assert_eq!(json["query"], "read the contents of a file", "{first}");
    assert_eq!(json["method"], "bm25", "{first}");
    let hits = results(&first);
    assert_eq!(hits.len(), 5, "default limit\n{first}");
    assert_eq!(hits[0].0, "filesystem", "{first}");
    assert!(hits[0].1.starts_with("read_"), "{first}");
    assert!(
        hits.windows(2).all(|w| w[0].2 >= w[1].2),
        "sorted by score\n{first}"
    );
    assert!(
        hits.iter().all(|h| (0.0..=1.0).contains(&h.2)),
        "normalised\n{first}"
    );
    let top = &json["results"][0];
    assert!(
        top["requiredParams"].is_array() && top["description"].is_string(),
        "{first}"
    );
    assert!(log.exists());
    std::fs::remove_file(&log).unwrap();

    // An exact tool name (also `server tool`) ranks first; the index answers, nothing starts.
    let named = first.again().args(["search", "fault echo", "--json"]).run();
    assert_eq!(
        results(&named)[0],
        ("fault".into(), "echo".into(), results(&named)[0].2),
        "{named}"
    );
    let prefix = first
        .again()
        .args(["search", "list_allowed", "--json", "--limit", "1"])
        .run();
    assert_eq!(
        results(&prefix)[0].1,
        "list_allowed_directories",
        "{prefix}"
    );
    assert!(!log.exists(), "a fresh search index must not start servers");

    let none = first
        .again()
        .args(["search", "bake sourdough bread", "--json"])
        .run();
    assert_eq!(none.json()["results"], json!([]), "{none}");
    let human = first
        .again()
        .args(["search", "bake sourdough bread"])
        .stderr_has("`mcp-launch model install` adds ranking by meaning")
        .run();
    assert!(human.stdout.starts_with("no tool matches"), "{human}");
}

#[test]
fn regex_exact_server_filter_and_schema() {
    let first = project(Cmd::new())
        .args(["search", "^(ECHO|add)$", "--method", "regex", "--json"])
        .stderr_any()
        .run();
    let names: Vec<String> = results(&first).into_iter().map(|h| h.1).collect();
    assert_eq!(names.len(), 2, "{first}");
    assert!(
        names.contains(&"echo".into()) && names.contains(&"add".into()),
        "case-insensitive\n{first}"
    );

    let exact = first
        .again()
        .args([
            "search",
            "directory",
            "--method",
            "exact",
            "--limit",
            "20",
            "--json",
        ])
        .run();
    let hits = results(&exact);
    assert!(!hits.is_empty(), "{exact}");
    let first_desc_only = hits.iter().position(|h| !h.1.contains("directory"));
    let last_name_hit = hits.iter().rposition(|h| h.1.contains("directory"));
    if let (Some(d), Some(n)) = (first_desc_only, last_name_hit) {
        assert!(n < d, "name hits rank above description hits\n{exact}");
    }

    let filtered = first
        .again()
        .args(["search", "file", "--server", "fault", "--json"])
        .run();
    assert!(
        results(&filtered).iter().all(|h| h.0 == "fault"),
        "{filtered}"
    );

    let schema = first
        .again()
        .args(["search", "add", "--schema", "--limit", "1", "--json"])
        .run();
    let top = &schema.json()["results"][0];
    assert_eq!(top["tool"], "add", "{schema}");
    assert_eq!(
        top["inputSchema"]["required"],
        json!(["a", "b"]),
        "{schema}"
    );
}

#[test]
fn denied_tools_are_not_found_and_overridden_descriptions_are() {
    let first = project(Cmd::new())
        .args(["tool", "deny", "fault", "echo"])
        .stderr_any()
        .run();
    first
        .again()
        .args([
            "tool",
            "describe",
            "fault",
            "add",
            "--text",
            "Sum two integers like a calculator.",
        ])
        .run();
    let hits = first
        .again()
        .args(["search", "echo", "--server", "fault", "--json"])
        .run();
    assert!(results(&hits).iter().all(|h| h.1 != "echo"), "{hits}");
    let calc = first
        .again()
        .args(["search", "calculator", "--json", "--limit", "1"])
        .run();
    assert_eq!(results(&calc)[0].1, "add", "{calc}");
}

#[test]
fn bad_patterns_are_usage_errors_before_anything_starts() {
    let cmd = Cmd::new();
    let log = cmd.path("fault.log");
    let long = "a".repeat(201);
    let out = project(cmd)
        .args(["search", &long, "--method", "regex", "--json"])
        .status(2)
        .run();
    let error: Value = out.error();
    assert_eq!(error["type"], "pattern_too_long", "{out}");
    assert!(error["message"].as_str().unwrap().contains("201"), "{out}");
    let invalid = out
        .again()
        .args(["search", "(", "--method", "regex", "--json"])
        .status(2)
        .run();
    assert_eq!(invalid.error()["type"], "invalid_pattern", "{invalid}");
    let unknown = out
        .again()
        .args(["search", "x", "--server", "nope", "--json"])
        .status(2)
        .run();
    assert_eq!(unknown.error()["type"], "unknown_server", "{unknown}");
    assert!(!log.exists(), "no server may start for a bad query");
}

/// Issue 25 item 24: a search says how many tools the overrides kept out of it.
#[test]
fn a_search_says_denied_tools_were_not_searched() {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"f": fault(&[])}}));
    cmd.cmd()
        .args(["--config", "config.json", "tool", "deny", "f", "add"])
        .stderr_any()
        .run();
    let search = |extra: &[&str]| {
        cmd.cmd()
            .args(["--config", "config.json", "search", "add two numbers"])
            .args(extra)
            .stderr_any()
            .run()
    };
    let json = search(&["--json"]);
    assert_eq!(json.json()["deniedSkipped"], 1, "{json}");
    let human = search(&[]);
    assert!(
        human
            .stderr
            .contains("1 tool denied by this project's overrides not searched"),
        "{human}"
    );
}
