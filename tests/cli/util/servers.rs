//! The real test servers and clients the suite runs (installed under `.deps/` by
//! scripts/install-test-deps.sh), the fault server, and config entries for them.

use std::path::Path;
use std::process::Command;

use mcp_launch::mcp::Endpoint;
use mcp_launch::process::SpawnSpec;
use serde_json::{json, Value};

/// The Python SDK's interpreter (installed by scripts/install-test-deps.sh).
pub fn sdk_python() -> String {
    let path = manifest_dir().join(".deps/venv-sdk/bin/python");
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-test-deps.sh",
        path.display()
    );
    path.display().to_string()
}

/// Runs a client (`what`, for messages) in `dir` as a fresh user — `HOME` is `dir`, the
/// host's runtime and state directories are not used — and returns the JSON it prints; a
/// failure shows its status and output.
pub fn client_json(mut command: Command, dir: &Path, what: &str) -> Value {
    let output = command
        .current_dir(dir)
        .env("HOME", dir)
        .env("XDG_CACHE_HOME", dir.join(".cache"))
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("XDG_STATE_HOME")
        .output()
        .unwrap_or_else(|e| panic!("run {what}: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{what} printed no JSON ({e}): {stdout}"))
}

/// The crate root (fixtures and `.deps/` live there).
pub fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn installed(relative: &str) -> String {
    let path = manifest_dir().join(".deps").join(relative);
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-test-deps.sh",
        path.display()
    );
    path.display().to_string()
}

/// `@modelcontextprotocol/server-everything` (stdio by default).
pub fn everything_bin() -> String {
    installed("npm/node_modules/.bin/mcp-server-everything")
}

/// `@modelcontextprotocol/server-filesystem`.
pub fn filesystem_bin() -> String {
    installed("npm/node_modules/.bin/mcp-server-filesystem")
}

/// `mcp-server-time` (Python).
pub fn time_bin() -> String {
    installed("venv-time/bin/mcp-server-time")
}

/// The fault-injecting server script.
pub fn fault_script() -> String {
    let path = manifest_dir().join("tests/fixtures/fault_server.py");
    assert!(path.exists(), "{} is missing", path.display());
    path.display().to_string()
}

/// Config entry: server-everything over stdio.
pub fn everything() -> Value {
    json!({"command": everything_bin()})
}

/// Config entry: the filesystem server allowed to touch `dir` only.
pub fn filesystem(dir: &Path) -> Value {
    json!({"command": filesystem_bin(), "args": [dir.display().to_string()]})
}

/// Config entry: the time server.
pub fn time() -> Value {
    json!({"command": time_bin()})
}

/// Config entry: the fault server with these flags.
pub fn fault(flags: &[&str]) -> Value {
    let mut args = vec![fault_script()];
    args.extend(flags.iter().map(|f| f.to_string()));
    json!({"command": "python3", "args": args})
}

/// The same entry with `"disabled": true`.
pub fn disabled(mut entry: Value) -> Value {
    entry["disabled"] = json!(true);
    entry
}

/// An endpoint for the `Session` API: the fault server with these flags.
pub fn fault_endpoint(flags: &[&str]) -> Endpoint {
    let mut args = vec![fault_script()];
    args.extend(flags.iter().map(|f| f.to_string()));
    Endpoint::Stdio(SpawnSpec {
        program: "python3".into(),
        args,
        ..SpawnSpec::default()
    })
}

/// The messages a fault server logged with `--log FILE` (empty when the file is missing).
pub fn read_log(path: &Path) -> Vec<Value> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("bad log line {line:?} in {}: {e}", path.display()))
        })
        .collect()
}

/// The logged messages whose `method` is `method`.
pub fn logged<'a>(log: &'a [Value], method: &str) -> Vec<&'a Value> {
    log.iter().filter(|m| m["method"] == method).collect()
}
