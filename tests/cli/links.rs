//! Links a client can follow: resource links and embedded resources in tool and prompt results
//! come back in the form the gateway's `resources/read` takes (`everything+demo://…`), and a
//! raw URI that belongs to one server is read too (links kept from before). Driven by the
//! official Python SDK (`tests/fixtures/gateway_client.py links`) against server-everything.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use crate::serve::{stdio_gateway, strings};
use crate::util::*;

/// The Python client's `scenario` against a full-mode gateway over stdio in `dir`.
fn drive(dir: &Path, scenario: &str) -> Value {
    let mut command = Command::new(sdk_python());
    command
        .arg(manifest_dir().join("tests/fixtures/gateway_client.py"))
        .arg(scenario)
        .args(stdio_gateway(dir, &["--mode", "full"]));
    client_json(command, dir, "the Python client")
}

#[test]
fn links_in_tool_and_prompt_results_can_be_read_through_the_gateway() {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"everything": everything()}}));
    let dir = cmd.dir().to_path_buf();
    let seen = drive(&dir, "links");
    let uris = strings(&seen["uris"]);
    assert_eq!(
        uris.len(),
        4,
        "two links, an embedded resource, a prompt's: {seen}"
    );
    assert!(
        uris.iter().all(|u| u.starts_with("everything+demo://")),
        "every URI in the gateway's form: {seen}"
    );
    for uri in &uris {
        assert_eq!(seen["reads"][uri], json!(uri), "{uri} reads back: {seen}");
    }
    let raw = "demo://resource/dynamic/text/3";
    assert_eq!(
        seen["reads"][raw],
        json!(format!("everything+{raw}")),
        "a raw URI of one server is read on it: {seen}"
    );
}

#[test]
fn after_list_a_new_gateway_lists_every_item_at_once_and_the_tools_for_capable_clients() {
    let cmd = Cmd::new();
    let starts = cmd.path("starts").display().to_string();
    let cmd = cmd.config_json(json!({"mcpServers": {
        "everything": everything(),
        "fault": fault(&["--starts", &starts, "--sampling-tool"]),
    }}));
    let dir = cmd.dir().to_path_buf();
    cmd.cmd()
        .args(["--config", "config.json", "list"])
        .stderr_any()
        .run();
    let starts = || {
        let text = std::fs::read_to_string(dir.join("starts")).unwrap_or_default();
        text.lines().count()
    };
    assert_eq!(starts(), 1, "`list` started the fault server once");
    let seen = drive(&dir, "lists");
    for kind in ["resources", "templates", "prompts"] {
        assert!(
            seen[kind].as_u64().unwrap_or(0) > 0,
            "{kind} listed from the check, before any server runs: {seen}"
        );
    }
    assert_eq!(
        starts(),
        2,
        "listing started nothing, the call started the server: {seen}"
    );
    // `list` offers no client capabilities, so the index lacks the tool the fault server lists
    // only to clients offering sampling (as server-everything does, which also says so with a
    // list_changed; the fault server does not): re-listed once the server runs.
    let sampled = "fault__sampled".to_string();
    assert!(!strings(&seen["tools"]).contains(&sampled), "{seen}");
    assert!(
        strings(&seen["tools_after_start"]).contains(&sampled),
        "listed for the capabilities the gateway relays after the first start: {seen}"
    );
}
