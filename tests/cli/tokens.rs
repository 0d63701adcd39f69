//! `tokens`: the stack's schema cost before and after overrides, and our counts checked
//! against the Python reference tokenizer.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use mcp_launch::catalog::TokenCounter;

use crate::util::*;

#[test]
fn tokens_before_and_after_overrides() {
    let first = Cmd::new()
        .config_json(json!({"mcpServers": {"f": fault(&[])}}))
        .args(["list", "f", "--json"])
        .run();
    let listed = first.json();
    let cost = |name: &str| -> u64 {
        listed["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()["tokens"]
            .as_u64()
            .unwrap()
    };
    let before: u64 = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["tokens"].as_u64().unwrap())
        .sum();
    let again = || first.again();
    again().args(["tool", "deny", "f", "huge"]).run();
    again()
        .args(["tool", "describe", "f", "echo", "--text", "Echo."])
        .run();

    let report = again().args(["tokens", "--json"]).run();
    let json = report.json();
    assert_eq!(json["tokenizer"], "o200k_base", "{report}");
    assert_eq!(
        json["total"]["tools"],
        json!({"before": 8, "after": 7}),
        "{report}"
    );
    assert_eq!(json["total"]["tokens"]["before"], before, "{report}");
    let after = json["total"]["tokens"]["after"].as_u64().unwrap();
    // Denying `huge` removes its whole cost; the shorter description of `echo` saves more.
    assert!(after < before - cost("huge"), "{report}");
    assert_eq!(json["total"]["tokens"]["saved"], before - after, "{report}");
    assert_eq!(json["stacks"][0]["servers"][0]["name"], "f", "{report}");
    // `list` shows the same exposed cost: 7 tools, the overridden description recounted.
    let listed_after = again().args(["list", "--json"]).run();
    assert_eq!(listed_after.server("f")["tools"], 7, "{listed_after}");
    assert_eq!(listed_after.server("f")["tokens"], after, "{listed_after}");
    // …and so does `list SERVER`, tool by tool.
    let one = again().args(["list", "f", "--json"]).run();
    assert_eq!(one.json()["tokens"], after, "{one}");
    let shown: u64 = one.json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(shown, after, "{one}");

    let by_tool = again().args(["tokens", "--by", "tool", "--json"]).run();
    let costs = by_tool.json()["stacks"][0]["servers"][0]["toolCosts"].clone();
    let row = |name: &str| {
        costs
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(row("huge")["allowed"], false, "{by_tool}");
    assert_eq!(row("huge")["tokens"]["after"], Value::Null, "{by_tool}");
    assert_eq!(row("echo")["overridden"], true, "{by_tool}");
    assert!(
        row("echo")["tokens"]["after"].as_u64().unwrap() < cost("echo"),
        "{by_tool}"
    );
    assert_eq!(
        row("add")["tokens"],
        json!({"before": cost("add"), "after": cost("add")}),
        "{by_tool}"
    );

    let human = again().args(["tokens"]).run();
    assert!(
        human.stdout.contains("tokens in 8 tools offered →"),
        "{human}"
    );
    assert!(human.stdout.contains("in 7 tools exposed"), "{human}");
}

/// Our o200k_base counts equal Python tiktoken's on tool definitions and awkward text.
#[test]
fn counts_match_python_tiktoken() {
    let python = manifest_dir().join(".deps/venv-tiktoken/bin/python");
    let cache = manifest_dir().join(".deps/tiktoken-cache");
    assert!(
        python.exists(),
        "run scripts/install-test-deps.sh (tiktoken reference missing)"
    );
    let out = Cmd::new()
        .config_json(json!({"mcpServers": {"f": fault(&[])}}))
        .args(["inspect", "f", "echo", "--json"])
        .run();
    let inspected = out.json();
    let mut texts: Vec<String> = vec![
        inspected["definition"].to_string(),
        "hello world".into(),
        "get_file_contents(path='/tmp/x.txt') → 42 bytes".into(),
        "日本語のテキストと emoji 🚀🎉 and ZWJ 👩‍💻".into(),
        "   leading spaces\n\n\ttabs and\r\nCRLF   ".into(),
        "12345678901234567890 3.14159 -0.5e10".into(),
        r#"{"type":"object","properties":{"a":{"type":"integer","minimum":0}},"required":["a"]}"#
            .into(),
    ];
    texts.push("word ".repeat(500));
    let counter = TokenCounter::load().expect("embedded vocabulary");
    let ours: Vec<usize> = texts.iter().map(|t| counter.count(t)).collect();
    assert_eq!(
        inspected["tokens"].as_u64().unwrap() as usize,
        ours[0],
        "inspect reports the count of the definition's compact JSON\n{out}"
    );

    let mut child = Command::new(python)
        .args([
            "-c",
            "import json,sys,tiktoken\nenc=tiktoken.get_encoding('o200k_base')\nprint(json.dumps([len(enc.encode_ordinary(t)) for t in json.load(sys.stdin)]))",
        ])
        .env("TIKTOKEN_CACHE_DIR", cache)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(serde_json::to_string(&texts).unwrap().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "python tiktoken failed");
    let reference: Vec<usize> = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(ours, reference);
}
