//! The merged spec of a native stack tells the truth: schemathesis (the OpenAPI fuzzer,
//! installed into `.deps/venv-schemathesis` by scripts/install-test-deps.sh) sends valid and
//! invalid calls to every tool of everything + time through the front, with the key and
//! without, and with methods the spec does not declare, and checks each answer against the
//! spec: status documented, body fitting its schema, invalid input refused, 405s with `Allow`.

use std::process::Command;

use serde_json::json;

use crate::launch_util::{project, stack};
use crate::native::{config, launch};
use crate::util::{everything, manifest_dir, time};

/// Bounds the run (~15 s here): every operation still gets its coverage cases (each status,
/// each missing or wrong part) plus this many generated ones.
const MAX_EXAMPLES: &str = "20";

/// The demo tools that take seconds per call by design: one sleeps for its `duration` (up to
/// minutes), the other is a task of four 1 s stages (the bridge waits for it).
const LONG_RUNNING: [&str; 2] = [
    "/everything/trigger-long-running-operation",
    "/everything/simulate-research-query",
];

/// schemathesis counts any 5xx as a server error, and none is expected. A tool that answered
/// `isError: true` to arguments its schema allows (fuzzed ones often do: `time` refuses an
/// empty timezone) is the documented 424 `tool_error`: the bridge took the request, the tool
/// said no. So the check that schema-valid requests are accepted also takes 424 (its default
/// list otherwise); the response schema check still holds every 424 to `ToolError`
/// (`error.type` is `tool_error`, `result` present), so anything else answered 424 fails.
/// For the same reason the `validation_mismatch` warning is not shown (every default one else
/// is): it counts those 424s as the API refusing data its schema allows, which is true of the
/// tools themselves (`time` takes `""` by its schema and refuses it) and not ours to change.
const CONFIG: &str = r#"
[warnings]
display = ["missing_auth", "missing_test_data", "base_url_mismatch", "missing_deserializer",
  "unused_openapi_auth", "unsupported_regex", "method_not_allowed", "constants_extraction",
  "unmatched_filter", "unresolvable_reference", "rate_limited", "dictionary_mismatch",
  "timeout_units"]

[checks.positive_data_acceptance]
expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "424", "429", "5xx"]
"#;

#[test]
fn schemathesis_finds_nothing_on_a_native_stack() {
    let st = manifest_dir().join(".deps/venv-schemathesis/bin/st");
    assert!(
        st.exists(),
        "{} is missing: run `bash scripts/install-test-deps.sh`",
        st.display()
    );
    let cmd = project(&[]).file("schemathesis.toml", CONFIG);
    config(&cmd, json!({"everything": everything(), "time": time()}));
    let front = launch(&cmd);
    let a = stack(&front.state, "a");
    let url = format!("http://127.0.0.1:{}/openapi.json", a["port"]);
    let key = format!("X-API-Key: {}", a["api_key"].as_str().unwrap());

    let out = Command::new(&st)
        .current_dir(cmd.dir())
        .args([
            "--config-file",
            "schemathesis.toml",
            "run",
            &url,
            "-H",
            &key,
        ])
        .args([
            "--max-examples",
            MAX_EXAMPLES,
            "--seed",
            "1",
            // One worker: with two, hypothesis' lambda-source reading races on Python 3.11's
            // AST ("AST constructor recursion depth mismatch", a runtime error of the fuzzer).
            "--workers",
            "1",
        ])
        .args(
            LONG_RUNNING
                .iter()
                .flat_map(|path| ["--exclude-path", path]),
        )
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "schemathesis found problems:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("No issues found"), "{stdout}");
    // Every tool but the long-running ones was tested.
    assert!(stdout.contains("Tested: 13"), "{stdout}");
    front.stop();
}
