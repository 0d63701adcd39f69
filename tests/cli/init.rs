//! `init`: scaffolds mcp.config.json and .mcp-launch/, never overwrites without --force.

use serde_json::{json, Value};

use crate::util::Cmd;

fn read_json(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn creates_the_config_and_the_state_dir() {
    let out = Cmd::new().args(["init", "--json"]).run();
    let json = out.json();
    assert_eq!(json["success"], json!(true), "{out}");
    assert_eq!(
        json["created"],
        json!(["mcp.config.json", ".mcp-launch/", ".mcp-launch/.gitignore"]),
        "{out}"
    );
    assert_eq!(json["skipped"], json!([]), "{out}");
    let mode = std::fs::metadata(out.path(".mcp-launch"))
        .unwrap()
        .permissions();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(mode.mode() & 0o777, 0o700, ".mcp-launch/ is owner-only");
    let config = read_json(&out.path("mcp.config.json"));
    let servers = config["mcpServers"].as_object().unwrap();
    assert_eq!(servers.len(), 4, "{config:#}");
    for name in ["everything", "filesystem", "memory"] {
        assert_eq!(servers[name]["command"], "npx");
        let args = servers[name]["args"].as_array().unwrap();
        assert_eq!(args[0], "-y");
        assert_eq!(
            args[1],
            json!(format!("@modelcontextprotocol/server-{name}@2026.8.31"))
        );
    }
    assert_eq!(servers["filesystem"]["args"][2], ".");
    assert!(servers["memory"]["env"]["MEMORY_FILE_PATH"].is_string());
    assert_eq!(
        servers["time"],
        json!({"command": "uvx", "args": ["mcp-server-time==2026.10.19"]})
    );
    // Git (the real one) ignores everything in .mcp-launch that may hold secrets — the state,
    // mcpo's resolved configs, logs — and shares only the overrides.
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(out.dir())
            .output()
            .expect("git runs")
    };
    assert!(git(&["init", "-q"]).status.success());
    for secret in [
        "state.json",
        "stacks/a/mcpo.json",
        "tui-log-1.txt",
        "up.log",
    ] {
        let path = format!(".mcp-launch/{secret}");
        assert!(
            git(&["check-ignore", "-q", &path]).status.success(),
            "{path} is not ignored"
        );
    }
    let shared = git(&["check-ignore", "-q", ".mcp-launch/overrides.json"]);
    assert!(
        !shared.status.success(),
        "the overrides are meant to be shared"
    );
    // No temporary file is left beside the config.
    let names: Vec<_> = std::fs::read_dir(out.dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.contains(".tmp")), "{names:?}");
}

#[test]
fn the_written_config_is_the_one_discovery_finds() {
    // `list` would start the servers; a config error shows up before that, so an unknown
    // server name proves the file was found and parsed without running anything.
    let out = Cmd::new().args(["init"]).run();
    assert!(out.stdout.contains("mcp-launch list"), "{out}");
    let err = out
        .cmd()
        .args(["inspect", "nosuch", "tool", "--json"])
        .status(2)
        .run()
        .error();
    assert_eq!(err["type"], "unknown_server", "{err:#}");
    assert!(
        err["help"]
            .as_str()
            .unwrap()
            .contains("everything, filesystem, memory, time"),
        "{err:#}"
    );
}

#[test]
fn refuses_to_overwrite_and_force_does() {
    let cmd = Cmd::new().file("mcp.config.json", "{\"mine\": true}\n");
    let out = cmd.args(["init", "--json"]).status(2).run();
    let err = out.error();
    assert_eq!(err["type"], "file_exists", "{err:#}");
    assert!(err["message"].as_str().unwrap().contains("mcp.config.json"));
    assert!(err["help"].as_str().unwrap().contains("--force"));
    assert_eq!(
        std::fs::read_to_string(out.path("mcp.config.json")).unwrap(),
        "{\"mine\": true}\n"
    );
    assert!(!out.path(".mcp-launch").exists(), "nothing is half-created");

    let human = out
        .cmd()
        .args(["init"])
        .status(2)
        .stderr_has("--force")
        .run();
    assert!(
        human.stderr.contains("mcp.config.json already exists"),
        "{human}"
    );

    let forced = out.cmd().args(["init", "--force", "--json"]).run();
    assert_eq!(forced.json()["success"], json!(true), "{forced}");
    let config = read_json(&forced.path("mcp.config.json"));
    assert_eq!(config["mcpServers"].as_object().unwrap().len(), 4);
}

#[test]
fn an_existing_state_dir_is_kept() {
    let cmd = Cmd::new().file(".mcp-launch/overrides.json", "{}");
    let out = cmd.args(["init", "--json"]).run();
    assert_eq!(out.json()["skipped"], json!([".mcp-launch/"]), "{out}");
    assert_eq!(
        std::fs::read_to_string(out.path(".mcp-launch/overrides.json")).unwrap(),
        "{}"
    );
    // A second init without --force refuses: the files are there now.
    out.cmd().args(["init"]).status(2).stderr_any().run();
}
