//! Resources, resource templates and prompts follow a client's reach as tools do (issue 27):
//! two server-everything instances behind `serve --http --auth oidc:ISSUER`, whose overrides'
//! `clients` hold each token to some of them; the official Python SDK lists, reads, gets and
//! subscribes with the real `oidc-provider`'s tokens. A client never learns of an item it may
//! not reach: hidden from the lists, and answered as unknown when named.

use serde_json::{json, Value};

use crate::serve_oidc::{gateway, Provider, TEAM};
use crate::util::*;

const READER: (&str, &str) = ("reader-app", "reader-secret");

/// An exposed static document of server-everything named `server`.
fn doc(server: &str) -> String {
    format!("{server}+demo://resource/static/document/architecture.md")
}

/// What each of `visits` (a client, its tool probes, the items it asks for) saw through one
/// gateway over `docs` and `other` (both server-everything) in `mode`, with these `clients`.
fn seen_by(mode: &str, clients: Value, visits: &[((&str, &str), Value, Value)]) -> Vec<Value> {
    let provider = Provider::start();
    let overrides = json!({"version": 1, "clients": clients}).to_string();
    let cmd = Cmd::new()
        .config_json(json!({"mcpServers": {"docs": everything(), "other": everything()}}))
        .trusted_overrides(&overrides);
    let (running, base) = gateway(&cmd, &provider, &["--mode", mode]);
    let seen = (visits.iter())
        .map(|(client, probes, items)| {
            let scope = if *client == TEAM {
                "tools:all"
            } else {
                "tools:read"
            };
            crate::serve_oidc::sdk_sees_items(
                &cmd,
                &provider,
                &base,
                (*client, scope),
                probes.clone(),
                items.clone(),
            )
        })
        .collect::<Vec<Value>>();
    // Then the team as a 2026-07-28 (stateless) client: the same rule.
    let token = provider.token(TEAM, "tools:all", &format!("{base}/mcp"));
    let headers = json!({"Authorization": format!("Bearer {token}")});
    let steps = json!([
        {"method": "resources/list", "params": {}, "headers": headers},
        {"method": "prompts/list", "params": {}, "headers": headers},
        {"method": "resources/read", "params": {"uri": doc("other")}, "headers": headers},
        {"method": "prompts/get", "params": {"name": "other__simple-prompt"}, "headers": headers},
        {"method": "resources/read", "params": {"uri": doc("docs")}, "headers": headers},
    ]);
    let url = format!("{base}/mcp");
    let answers = crate::serve::stateless(cmd.dir(), &["--url", &url], steps);
    crate::serve_oidc::stop(running);
    let mut seen = seen;
    seen.push(json!(answers));
    seen
}

fn names(seen: &Value, list: &str) -> Vec<String> {
    let items = seen["items"][list]
        .as_array()
        .unwrap_or_else(|| panic!("{seen}"));
    items
        .iter()
        .map(|i| i.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn resources_and_prompts_follow_the_servers_a_client_reaches_and_its_lists() {
    let clients = json!({
        "team-app": {"tools": ["docs__*"]},
        "reader-app": {"tools": ["docs__echo", "other__echo"],
            "prompts": ["docs__simple-prompt"], "resources": []}
    });
    let echo = |server: &str| json!([format!("{server}__echo"), {"message": "hi"}]);
    for mode in ["full", "sparse"] {
        let starts = match mode {
            "full" => json!([echo("docs"), echo("other")]),
            _ => json!([["call_tool", {"name": "docs__echo", "arguments": {"message": "hi"}}],
                ["call_tool", {"name": "other__echo", "arguments": {"message": "hi"}}]]),
        };
        let asked = json!({
            "read": [doc("docs"), doc("other"), "other+demo://resource/dynamic/text/1"],
            "get": ["docs__simple-prompt", "other__simple-prompt", "docs__args-prompt"],
            "subscribe": [doc("docs"), doc("other")],
        });
        // The reader's echo calls start both servers (nothing is started to list).
        let visits = [(READER, starts, asked.clone()), (TEAM, json!([]), asked)];
        let seen = seen_by(mode, clients.clone(), &visits);
        let (reader, team, stateless) = (&seen[0], &seen[1], &seen[2]);
        assert_eq!(reader["probes"][1]["is_error"], false, "{mode}: {reader}");

        // The team reaches docs' tools: docs' items, none of other's.
        for list in ["resources", "templates", "prompts"] {
            let listed = names(team, list);
            assert!(!listed.is_empty(), "{mode}: team's {list}: {team}");
            assert!(
                listed.iter().all(|n| n.starts_with("docs")),
                "{mode}: the team was told of other's {list}: {listed:?}"
            );
        }
        let items = &team["items"];
        assert_eq!(items["read"][0]["error"], Value::Null, "{mode}: {team}");
        for refused in [&items["read"][1], &items["read"][2], &items["subscribe"][1]] {
            let error = refused["error"]
                .as_str()
                .unwrap_or_else(|| panic!("{team}"));
            assert!(
                error.starts_with("unknown resource `other+"),
                "{mode}: {error}"
            );
        }
        assert_eq!(items["get"][0]["error"], Value::Null, "{mode}: {team}");
        let error = items["get"][1]["error"].as_str().unwrap_or_default();
        assert_eq!(
            error, "unknown prompt `other__simple-prompt`",
            "{mode}: {team}"
        );
        assert_eq!(
            items["subscribe"][0]["error"],
            Value::Null,
            "{mode}: {team}"
        );

        // The same for the team's 2026-07-28 requests.
        let told = json!([stateless[0], stateless[1]]).to_string();
        assert!(
            told.contains("docs+demo://") && told.contains("docs__simple-prompt"),
            "{told}"
        );
        assert!(
            !told.contains("other"),
            "{mode}: a 2026 client was told of other: {told}"
        );
        for refused in [&stateless[2], &stateless[3]] {
            let error = refused["error"]["message"].as_str().unwrap_or_default();
            assert!(error.starts_with("unknown "), "{mode}: {stateless}");
        }
        assert!(
            stateless[4]["result"]["contents"].is_array(),
            "{mode}: {stateless}"
        );

        // The reader reaches both servers' echo, but its lists name one prompt, no resource.
        assert_eq!(names(reader, "prompts"), ["docs__simple-prompt"], "{mode}");
        assert!(names(reader, "resources").is_empty(), "{mode}: {reader}");
        assert!(names(reader, "templates").is_empty(), "{mode}: {reader}");
        let items = &reader["items"];
        assert_eq!(items["get"][0]["error"], Value::Null, "{mode}: {reader}");
        for refused in [&items["get"][2], &items["read"][0], &items["subscribe"][0]] {
            let error = refused["error"].as_str().unwrap_or_default();
            assert!(error.starts_with("unknown "), "{mode}: {reader}");
        }
    }
}
