//! Files and paths a user, a checkout or a caller hands us: config files with their `.env`
//! and `${VAR}` interpolation, and the front's request paths.

use std::collections::BTreeMap;
use std::path::Path;

use axum::http::Method;

use super::{rendered, split_first};
use crate::config::dotenv;
use crate::config::file;
use crate::config::interpolate::interpolate;
use crate::config::variables::Variables;
use crate::launch::front::path::RequestPath;
use crate::launch::{Exposure, ServerExposure, ToolRule};

/// A config file and its `.env`: the bytes before the first NUL are the `.env`, the rest the
/// JSON config (both formats); the first byte says whether remote URLs are guarded. Every
/// error must render with its help, every line found must be in the file.
pub fn config(data: &[u8]) {
    let (knobs, rest) = split_first(data);
    let text = String::from_utf8_lossy(rest);
    let (env_text, json) = text.split_once('\0').unwrap_or(("", &text));
    let dotenv: BTreeMap<String, String> = match dotenv::parse(env_text) {
        Ok(pairs) => pairs.into_iter().collect(),
        Err(bad) => {
            assert!(bad.line >= 1 && bad.line <= env_text.lines().count().max(1));
            BTreeMap::new()
        }
    };
    let process = BTreeMap::from([
        ("HOME".to_string(), "/home/fuzz".to_string()),
        ("TOKEN".to_string(), "secret".to_string()),
    ]);
    let mut vars = Variables::from_layers(&process, dotenv);
    if knobs & 1 == 1 {
        vars = vars.guarding_remote_urls();
    }
    let lookup = |name: &str| vars.get(name);
    if let Ok(expanded) = interpolate(json, lookup) {
        if !json.contains('$') {
            assert_eq!(expanded, json);
        }
    }
    let path = Path::new("/fuzz/project/.mcp.json");
    match file::parse(path, json, "fuzz", &vars) {
        Ok(entries) => {
            let lines = json.lines().count().max(1);
            for entry in entries {
                assert!(entry.line.is_none_or(|line| line >= 1 && line <= lines));
                if let Err(error) = entry.spec {
                    rendered(&error);
                }
            }
        }
        Err(error) => rendered(&error),
    }
}

/// A request path through the front: decoded once, re-encoded canonically, judged. What was
/// judged must be what is sent: the canonical path decodes to the same segments and gets the
/// same verdict.
pub fn front_path(data: &[u8]) {
    let (knobs, rest) = split_first(data);
    let Ok(raw) = std::str::from_utf8(rest) else {
        return;
    };
    let method =
        [Method::GET, Method::POST, Method::HEAD, Method::DELETE][usize::from(knobs % 4)].clone();
    let exposure = exposure();
    let Ok(path) = RequestPath::parse(raw) else {
        return;
    };
    let canonical = path.canonical();
    let again = RequestPath::parse(&canonical).expect("a canonical path is refused");
    assert_eq!(again, path, "{raw} → {canonical}");
    assert_eq!(again.canonical(), canonical);
    let verdict = path.gate("fuzz", Some(&exposure), &method);
    let verdict_again = again.gate("fuzz", Some(&exposure), &method);
    assert_eq!(verdict.is_ok(), verdict_again.is_ok(), "{raw}");
    let denied = ["/everything/get-env", "/time/get_current_time"];
    assert!(
        !(denied.contains(&canonical.as_str()) && verdict.is_ok()),
        "{raw} reached a denied tool"
    );
    if let Err(error) = verdict {
        rendered(&error);
    }
}

/// A stack with an allowed and a denied tool, and a disabled server.
fn exposure() -> Exposure {
    let tools = ToolRule::from_pairs;
    let mut exposure = Exposure::new();
    exposure.set_reads_outputs(true);
    exposure.insert(
        "everything",
        ServerExposure {
            enabled: true,
            started: true,
            tools: tools(&[("echo", true), ("get-env", false)]),
        },
    );
    exposure.insert(
        "time",
        ServerExposure {
            enabled: false,
            started: true,
            tools: tools(&[("get_current_time", true)]),
        },
    );
    exposure
}
