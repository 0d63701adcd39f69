//! The arrows of the house map (docs/ARCHITECTURE.md), checked: a room may use only rooms on a
//! lower floor, so a change that makes a lower room reach up fails here rather than in review.
//! The check reads the source: every `crate::room` path, grouped imports included.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Each room and its floor. A room may use rooms on lower floors only (its own files freely).
const FLOORS: &[(&str, u8)] = &[
    ("error", 0),
    ("client_id", 0),
    ("auth", 1),
    ("duration", 0),
    ("files", 0),
    ("backoff", 0),
    ("memory", 0),
    ("listen", 0),
    ("pins", 0),
    ("output", 1),
    ("process", 1),
    ("config", 1),
    ("project", 1),
    ("observe", 1),
    ("mcp", 2),
    ("search", 2),
    ("model", 2),
    ("doctor", 2),
    ("catalog", 3),
    ("pool", 4),
    ("serving", 4),
    ("outputs", 4),
    ("launch", 5),
    ("gateway", 5),
    ("tools", 5),
    ("tui", 6),
    ("cli", 7),
    ("fuzzing", 8),
    ("state", 0),
];

/// Crates a room must not use, whatever its floor: `catalog` knows nothing of HTTP.
const FORBIDDEN_CRATES: &[(&str, &[&str])] = &[
    ("catalog", &["reqwest", "axum", "hyper"]),
    ("search", &["reqwest", "axum", "hyper", "tokio"]),
    ("process", &["reqwest", "axum", "hyper"]),
    ("pool", &["reqwest", "axum", "hyper"]),
];

fn floor(room: &str) -> Option<u8> {
    FLOORS.iter().find(|(r, _)| *r == room).map(|(_, f)| *f)
}

/// The room of a source file: `src/<room>/…` or `src/<room>.rs`.
fn room_of(src: &Path, file: &Path) -> Option<String> {
    let first = file.strip_prefix(src).ok()?.components().next()?;
    let name = first.as_os_str().to_str()?;
    Some(name.trim_end_matches(".rs").to_string())
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src").flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The rooms a file's code names through `crate::` (`crate::x::…` and `crate::{x, y::…}`).
fn rooms_used(text: &str) -> BTreeSet<String> {
    let mut used = BTreeSet::new();
    for (at, _) in text.match_indices("crate::") {
        let rest = &text[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let inner = &group[..group.find('}').unwrap_or(group.len())];
            for item in inner.split(',') {
                let head = item.trim().split("::").next().unwrap_or("");
                used.insert(identifier(head));
            }
        } else {
            used.insert(identifier(rest));
        }
    }
    used.retain(|r| !r.is_empty());
    used
}

fn identifier(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

#[test]
fn rooms_use_only_rooms_below_them() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut wrong = Vec::new();
    for file in &files {
        let Some(room) = room_of(&src, file) else {
            continue;
        };
        let Some(own) = floor(&room) else {
            assert!(
                ["lib", "main", "architecture"].contains(&room.as_str()),
                "{room} (in {}) has no floor: add it to FLOORS and docs/ARCHITECTURE.md",
                file.display()
            );
            continue;
        };
        let text = std::fs::read_to_string(file).expect("read a source file");
        for used in rooms_used(&text) {
            match floor(&used) {
                Some(f) if used != room && f >= own => {
                    wrong.push(format!("{} ({room}) uses {used}", file.display()));
                }
                _ => {}
            }
        }
        for (r, crates) in FORBIDDEN_CRATES {
            for krate in crates.iter().filter(|_| *r == room) {
                if text.contains(&format!("{krate}::")) {
                    wrong.push(format!("{} ({room}) uses {krate}", file.display()));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "arrows pointing up:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn grouped_and_nested_imports_are_seen() {
    let used = rooms_used("use crate::{catalog::x, mcp};\nfn f() { crate::launch::go(); }");
    let expected: BTreeSet<String> = ["catalog", "mcp", "launch"].map(String::from).into();
    assert_eq!(used, expected);
}

#[test]
fn one_module_style_mod_rs_never_a_file_beside_its_directory() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let both: Vec<String> = files
        .iter()
        .filter(|f| f.with_extension("").is_dir())
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        both.is_empty(),
        "move each into its directory as mod.rs: {both:?}"
    );
}

#[test]
fn rmcp_is_named_only_behind_the_gateway_wire() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let wire = src.join("gateway").join("wire");
    // The lean tools server's MCP side, and what both servers share of rmcp.
    let tools_wire = src.join("tools").join("wire.rs");
    let serving = src.join("serving");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let outside: Vec<String> = files
        .iter()
        .filter(|f| !f.starts_with(&wire) && **f != tools_wire && !f.starts_with(&serving))
        .filter(|f| {
            let text = std::fs::read_to_string(f).expect("read a source file");
            // Spelled in two parts, so this file does not find itself.
            let (path, import) = (concat!("rmcp", "::"), concat!("use ", "rmcp"));
            text.contains(path) || text.contains(import)
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        outside.is_empty(),
        "rmcp outside gateway/wire, tools/wire.rs and serving.rs: {outside:?}"
    );
}

#[test]
fn every_http_listener_is_served_by_the_one_hardened_loop() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let listen = src.join("listen.rs");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let is_test =
        |f: &Path| f.components().any(|c| c.as_os_str() == "tests") || f.ends_with("tests.rs");
    let outside: Vec<String> = files
        .iter()
        .filter(|f| **f != listen && !is_test(f))
        .filter(|f| {
            let text = std::fs::read_to_string(f).expect("read a source file");
            // Spelled in two parts, so this file does not find itself.
            text.contains(concat!("axum", "::serve("))
                || text.contains(concat!("serve_", "connection"))
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        outside.is_empty(),
        "HTTP served outside crate::listen (no TCP_NODELAY, header timeout or cap): {outside:?}"
    );
}
