//! The lean tools over real files: the token ceiling, safety, ranking, big files.

use std::os::unix::fs::symlink;
use std::path::Path;

use serde_json::{json, Value};

use super::*;

/// The whole `tools/list` must stay within this many o200k tokens (the ceiling;
/// server-filesystem's costs ~2,800 for 14 tools).
const LIST_TOKEN_CEILING: usize = 420;

fn tools_in(root: &Path, budget: usize) -> (tempfile::TempDir, Tools) {
    let state = tempfile::tempdir().unwrap();
    let store = Store::open(&state.path().join("outputs")).unwrap();
    let roots = Roots::new(&[root.to_path_buf()]).unwrap();
    (state, Tools::new(roots, true, store, Budget::new(budget)))
}

fn text(result: &Value) -> String {
    result["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_error(result: &Value) -> bool {
    result["isError"] == true
}

#[test]
fn the_whole_tool_list_costs_at_most_420_tokens() {
    let list = Tools::list();
    let cost = outputs::tokens(&list.to_string());
    assert!(cost <= LIST_TOKEN_CEILING, "tools/list costs {cost} tokens");
    eprintln!("tools/list: {cost} tokens");
    let names: Vec<&str> = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["grep", "cat", "find", "ls", "head", "tail", "read_output"]
    );
    for tool in list["tools"].as_array().unwrap() {
        assert!(!tool["description"].as_str().unwrap().contains('\n'));
    }
}

#[test]
fn paths_out_of_the_roots_and_special_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(dir.path().join("secret.txt"), "top secret\n").unwrap();
    symlink(dir.path().join("secret.txt"), root.join("leak")).unwrap();
    symlink(dir.path(), root.join("up")).unwrap();
    nix::unistd::mkfifo(&root.join("pipe"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let (_state, tools) = tools_in(&root, 6000);
    for (tool, args) in [
        ("cat", json!({"path": "../secret.txt"})),
        ("cat", json!({"path": "leak"})),
        ("head", json!({"path": "up/secret.txt"})),
        ("ls", json!({"path": "/"})),
        ("grep", json!({"pattern": "secret", "path": ".."})),
        ("find", json!({"pattern": "*", "path": "up"})),
    ] {
        let result = tools.call(tool, &args);
        assert!(is_error(&result), "{tool} {args}: {result}");
        assert!(
            text(&result).contains("outside the allowed roots"),
            "{}",
            text(&result)
        );
    }
    let result = tools.call("cat", &json!({"path": "pipe"}));
    assert!(text(&result).contains("FIFO"), "{result}");
    // Walks do not follow the links out.
    let result = tools.call("grep", &json!({"pattern": "top secret"}));
    assert!(text(&result).contains("no match"), "{result}");
    let result = tools.call("ls", &json!({}));
    assert_eq!(text(&result), "leak@\npipe (FIFO)\nup@\n");
}

/// Issue 24 (Medium 6): the path was checked, then reopened by name; a directory swapped for
/// an outward symlink in between read a file outside the root (4,886 of 63,404 tries). A
/// racing thread swaps it back and forth while `cat` and `grep` read: nothing outside is read.
#[test]
fn a_directory_swapped_for_an_outward_symlink_never_leads_out() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let (root, outside) = (dir.path().join("root"), dir.path().join("outside"));
    std::fs::create_dir_all(root.join("d")).unwrap();
    std::fs::create_dir_all(outside.join("d")).unwrap();
    std::fs::write(root.join("d/f.txt"), "inside\n").unwrap();
    std::fs::write(outside.join("d/f.txt"), "OUTSIDE\n").unwrap();
    symlink(outside.join("d"), root.join("link")).unwrap();
    let (_state, tools) = tools_in(&root, 6000);
    let stop = AtomicBool::new(false);
    let (mut read_outside, mut read_inside) = (0, 0);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            // `d` is the directory, then the outward symlink, then the directory again: each
            // swap one atomic exchange.
            use nix::fcntl::{renameat2, RenameFlags, AT_FDCWD};
            let (d, link) = (root.join("d"), root.join("link"));
            while !stop.load(Ordering::Relaxed) {
                renameat2(AT_FDCWD, &d, AT_FDCWD, &link, RenameFlags::RENAME_EXCHANGE).unwrap();
            }
        });
        for i in 0..6_000 {
            let result = if i % 2 == 0 {
                tools.call("cat", &json!({"path": "d/f.txt"}))
            } else {
                tools.call("grep", &json!({"pattern": "SIDE", "path": "d/f.txt"}))
            };
            let shown = text(&result);
            if shown.contains("OUTSIDE") {
                read_outside += 1;
            } else if shown.contains("inside") {
                read_inside += 1;
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    assert_eq!(
        read_outside, 0,
        "read a file outside the root ({read_inside} inside)"
    );
    assert!(read_inside > 0, "the race left no read inside");
}

/// Issue 24 (Low 16): `find` with a 100,000-`*` glob panicked in globset.
#[test]
fn a_glob_bomb_is_refused_with_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.rs"), "fn a() {}\n").unwrap();
    let (_state, tools) = tools_in(dir.path(), 6000);
    let bomb = "*".repeat(100_000);
    for (tool, args) in [
        ("find", json!({"pattern": bomb})),
        ("grep", json!({"pattern": "fn", "glob": bomb})),
    ] {
        let result = tools.call(tool, &args);
        assert!(is_error(&result), "{tool}: {result}");
        assert!(
            text(&result).contains("at most 1024 bytes"),
            "{}",
            text(&result)
        );
        assert!(text(&result).len() < 2000, "{tool}: a long reply");
    }
    let result = tools.call("find", &json!({"pattern": "*.rs"}));
    assert!(text(&result).contains("a.rs"), "{result}");
}

#[test]
fn binary_files_are_summarised() {
    let dir = tempfile::tempdir().unwrap();
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    png.resize(5000, 0);
    std::fs::write(dir.path().join("a.png"), &png).unwrap();
    let (_state, tools) = tools_in(dir.path(), 6000);
    let result = tools.call("cat", &json!({"path": "a.png"}));
    assert_eq!(
        text(&result),
        "a.png: binary file (PNG image, 5.0 KB); not shown\n"
    );
}

#[test]
fn cat_head_and_tail_read_lines_without_loading_huge_files() {
    let dir = tempfile::tempdir().unwrap();
    let lines: String = (1..=1000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(dir.path().join("f.txt"), &lines).unwrap();
    // A 40 MB minified file: one line.
    std::fs::write(dir.path().join("min.js"), "var a=1;".repeat(5_000_000)).unwrap();
    let (_state, tools) = tools_in(dir.path(), 6000);
    assert_eq!(
        text(&tools.call("cat", &json!({"path": "f.txt", "offset": 10, "limit": 2}))),
        "line 11\nline 12\n"
    );
    assert_eq!(
        text(&tools.call("head", &json!({"path": "f.txt", "n": 2}))),
        "line 1\nline 2\n"
    );
    assert_eq!(
        text(&tools.call("tail", &json!({"path": "f.txt", "n": 2}))),
        "line 999\nline 1000\n"
    );
    let result = tools.call("cat", &json!({"path": "min.js"}));
    let shown = text(&result);
    assert!(shown.starts_with("var a=1;var a=1;"));
    assert!(outputs::tokens(&shown) <= 6000);
    assert!(
        shown.contains("mcp-launch: this result was over its budget"),
        "{}",
        &shown[shown.len() - 400..]
    );
    let tail = tools.call("tail", &json!({"path": "min.js", "n": 1}));
    assert!(outputs::tokens(&text(&tail)) <= 6000);

    // A match deep in a minified line is shown with its surroundings, not the line's start;
    // and so is a grep of the handle that keeps such a line.
    let mut minified = "var a=1;".repeat(20_000);
    minified.insert_str(100_000, "function NEEDLE(){}");
    std::fs::write(dir.path().join("app.min.js"), &minified).unwrap();
    let found = text(&tools.call("grep", &json!({"pattern": "NEEDLE"})));
    assert!(found.contains("\n1:…"), "{found}");
    assert!(found.contains("# 1 match in 1 file\n"), "{found}");
    assert!(found.contains("function NEEDLE(){}var a=1;"), "{found}");
    assert!(found.len() < 1000, "{found}");
    let cut = tools.call("cat", &json!({"path": "app.min.js"}));
    let handle = cut["_meta"][outputs::META_KEY]["cuts"][0]["handle"]
        .as_str()
        .unwrap()
        .to_string();
    let read = text(&tools.call("read_output", &json!({"handle": handle, "grep": "NEEDLE"})));
    assert!(
        read.starts_with("1:…") && read.contains("function NEEDLE(){}"),
        "{read}"
    );
}

#[test]
fn grep_ranks_definitions_first_and_leaves_breadcrumbs() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src/rag")).unwrap();
    std::fs::create_dir_all(root.join("docs")).unwrap();
    // Many uses, in a big directory, and one definition in a small file.
    for i in 0..40 {
        let uses: String = (0..50)
            .map(|j| format!("    let x{j} = budget_result(a, b);\n"))
            .collect();
        std::fs::write(root.join(format!("src/rag/use{i}.rs")), uses).unwrap();
    }
    std::fs::write(
        root.join("docs/notes.md"),
        "budget_result is described here\n".repeat(30),
    )
    .unwrap();
    std::fs::write(
        root.join("src/lib.rs"),
        "// intro\npub fn budget_result(result: Value) -> Budgeted {\n    todo!()\n}\n",
    )
    .unwrap();
    let (_state, tools) = tools_in(root, 1500);
    let result = tools.call("grep", &json!({"pattern": "budget_result"}));
    let shown = text(&result);
    assert!(
        shown.starts_with("src/lib.rs\n2:pub fn budget_result"),
        "{shown}"
    );
    let last = shown.lines().last().unwrap();
    assert!(
        last.starts_with("# ") && last.contains(" more in src/rag/"),
        "{last}"
    );
    assert!(last.contains("2,031 matches in 42 files"), "{last}");
    assert!(last.contains("read_output"), "{last}");
    assert!(
        outputs::tokens(&shown) <= 1500 - outputs::ENVELOPE_TOKENS,
        "fits without a cut"
    );
    assert!(
        !shown.contains("mcp-launch: this result"),
        "the budget did not cut it"
    );
    // The handle holds every match.
    let handle = last.split('"').nth(3).unwrap();
    let read = tools.call(
        "read_output",
        &json!({"handle": handle, "grep": "^(src|docs)/", "limit": 100}),
    );
    assert!(
        text(&read).contains("[matches 1-42 of 42]"),
        "{}",
        text(&read)
    );

    // Context lines on request, a glob, and no match.
    let result = tools.call(
        "grep",
        &json!({"pattern": "fn budget", "context": 1, "glob": "*.rs"}),
    );
    assert!(
        text(&result).contains("1-// intro\n2:pub fn budget_result"),
        "{}",
        text(&result)
    );
    let none = tools.call("grep", &json!({"pattern": "nowhere_to_be_found"}));
    assert!(text(&none).contains("# no match"));
    let bad = tools.call("grep", &json!({"pattern": "("}));
    assert!(
        is_error(&bad) && text(&bad).contains("parameters: pattern"),
        "{bad}"
    );
}

#[test]
fn find_and_ls() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src/a")).unwrap();
    std::fs::write(root.join("src/a/mod.rs"), "").unwrap();
    std::fs::write(root.join("src/lib.rs"), "x").unwrap();
    std::fs::write(root.join("Cargo.toml"), "").unwrap();
    let (_state, tools) = tools_in(root, 6000);
    assert_eq!(
        text(&tools.call("find", &json!({"pattern": "*.rs"}))),
        "src/a/mod.rs\nsrc/lib.rs\n# 2 matches\n"
    );
    assert_eq!(
        text(&tools.call("find", &json!({"pattern": "src/*/mod.rs"}))),
        "src/a/mod.rs\n# 1 match\n"
    );
    assert_eq!(
        text(&tools.call("ls", &json!({"path": "src"}))),
        "a/\nlib.rs 1 B\n"
    );
    let unknown = tools.call("nope", &json!({}));
    assert!(is_error(&unknown));
}

#[test]
fn walks_stop_at_their_bounds_and_say_so() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..50 {
        std::fs::write(dir.path().join(format!("f{i}.txt")), "x\n").unwrap();
    }
    let (_state, tools) = tools_in(dir.path(), 6000);
    let tools = tools.with_limits(Limits {
        deadline: std::time::Duration::from_secs(20),
        max_entries: 10,
    });
    let found = text(&tools.call("find", &json!({"pattern": "*.txt"})));
    assert!(found.contains("stopped early (after 10 files)"), "{found}");
    let grep = text(&tools.call("grep", &json!({"pattern": "x"})));
    assert!(grep.contains("# stopped early (after 10 files)"), "{grep}");
}
