//! Client ID Metadata Documents on the built-in authorization server (MCP authorization
//! 2025-11-25, issue 27): the official Python SDK names itself by its document's URL
//! (`client_metadata_url`) instead of registering, and logs in, calls and refreshes; documents
//! that lie, overflow, or point into the machine are refused on `/authorize`.
//!
//! The documents are served on loopback over http, which the gateway takes only with
//! `MCP_LAUNCH_DEV_CIMD_LOOPBACK=1` (a test and development switch): without it the same URL is
//! refused, as any private address is.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::process::Command;

use serde_json::{json, Value};

use crate::serve::eventually;
use crate::serve_oidc::{http, stop};
use crate::util::*;

/// A gateway with `--auth oauth` on a free loopback port, the dev switch as given.
fn gateway(cmd: &Cmd, loopback_documents: bool) -> (Running, String) {
    gateway_with(cmd, loopback_documents, &[])
}

/// [`gateway`] with `env` set besides.
pub(crate) fn gateway_with(
    cmd: &Cmd,
    loopback_documents: bool,
    env: &[(&str, &str)],
) -> (Running, String) {
    let addr = format!("127.0.0.1:{}", free_port());
    let switch = if loopback_documents { "1" } else { "0" };
    let mut command = (cmd.cmd())
        .args(["--config", "config.json", "serve", "--mode", "full"])
        .args(["--http", &addr, "--auth", "oauth"])
        .env("MCP_LAUNCH_DEV_CIMD_LOOPBACK", switch);
    for (name, value) in env {
        command = command.env(name, value);
    }
    let running = command.stderr_any().spawn();
    eventually(20, "the gateway listens", || {
        std::net::TcpStream::connect(&addr).is_ok()
    });
    (running, format!("http://{addr}"))
}

#[test]
fn the_python_sdk_logs_in_by_its_metadata_document_and_refreshes() {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"fault": fault(&[])}}));
    let (running, base) = gateway(&cmd, true);
    let (_, metadata) = http(
        &base,
        "GET",
        "/.well-known/oauth-authorization-server",
        &[],
        "",
    );
    let metadata: Value = serde_json::from_str(&metadata).unwrap();
    assert_eq!(metadata["client_id_metadata_document_supported"], true);
    let mut client = Command::new(sdk_python());
    client
        .arg(manifest_dir().join("tests/fixtures/oauth_client.py"))
        .args([&format!("{base}/mcp"), BIN, "fault__echo"])
        .env("MCP_LAUNCH_TEST_CIMD", "1");
    let seen = client_json(client, cmd.dir(), "the Python SDK's OAuth client (CIMD)");
    let url = seen["document_url"]
        .as_str()
        .expect("a document URL")
        .to_string();
    assert_eq!(
        seen["client_id"],
        url.as_str(),
        "it registered instead: {seen}"
    );
    assert!(seen["document_fetches"].as_u64() >= Some(1), "{seen}");
    assert_eq!(seen["consent_status"], 303, "{seen}");
    assert_eq!(seen["first_call_error"], false, "{seen}");
    assert_eq!(seen["second_call_error"], false, "{seen}");
    assert_eq!(seen["refresh_tokens"], 2, "no rotated refresh: {seen}");
    let listed = cmd.cmd().args(["auth", "clients", "--json"]).run().json();
    let clients = listed["clients"].as_array().unwrap();
    assert_eq!(clients.len(), 1, "{listed}");
    assert_eq!(clients[0]["client_id"], url.as_str(), "{listed}");
    assert_eq!(clients[0]["name"], "python sdk cimd", "{listed}");
    stop(running);
}

/// Serves each `(path, body)` that `answers` makes of its base URL, on a loopback port
/// (HTTP/1.1, one request per connection, 404 for other paths) until the test ends; that
/// base URL.
fn documents(answers: impl FnOnce(&str) -> Vec<(&'static str, String)>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let answers = answers(&base);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream);
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            let path = line.split(' ').nth(1).unwrap_or_default();
            let found = answers.iter().find(|(p, _)| *p == path);
            let (status, body) = found.map_or((404, ""), |(_, body)| (200, body.as_str()));
            let answer = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = reader.get_mut().write_all(answer.as_bytes());
        }
    });
    base
}

/// The status line and body of `/authorize` for `client_id` redirecting to `redirect`.
fn authorize(base: &str, client_id: &str, redirect: &str) -> (String, String) {
    let query = format!(
        "response_type=code&client_id={}&redirect_uri={}&code_challenge=abc&code_challenge_method=S256&state=s",
        encode(client_id),
        encode(redirect)
    );
    let (head, body) = http(base, "GET", &format!("/authorize?{query}"), &[], "");
    (head.lines().next().unwrap_or_default().to_string(), body)
}

fn encode(text: &str) -> String {
    text.replace('%', "%25")
        .replace(':', "%3A")
        .replace('/', "%2F")
        .replace('?', "%3F")
        .replace('&', "%26")
}

const REDIRECT: &str = "http://127.0.0.1:9/callback";

#[test]
fn documents_that_lie_overflow_or_point_inside_are_refused() {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"fault": fault(&[])}}));
    let base = documents(|base| {
        let own = |path: &str| {
            json!({"client_id": format!("{base}{path}"),
            "client_name": "loopback app", "redirect_uris": [REDIRECT]})
        };
        let mut secret = own("/secret.json");
        secret["token_endpoint_auth_method"] = json!("client_secret_basic");
        vec![
            ("/good.json", own("/good.json").to_string()),
            ("/liar.json", own("/elsewhere.json").to_string()),
            (
                "/huge.json",
                format!("{{\"x\": \"{}\"}}", "a".repeat(40_000)),
            ),
            ("/secret.json", secret.to_string()),
        ]
    });
    let url = |path: &str| format!("{base}{path}");
    let refused = |gateway: &str, path: &str, redirect: &str, why: &str| {
        let (status, body) = authorize(gateway, &url(path), redirect);
        assert!(status.contains("400"), "{path}: {status} {body}");
        assert!(body.contains(why), "{path}: {body}");
        assert!(!body.contains("code="), "{path}: {body}");
    };

    let (running, gateway_base) = gateway(&cmd, true);
    let (status, body) = authorize(&gateway_base, &url("/good.json"), REDIRECT);
    assert!(status.contains("200"), "{status} {body}");
    assert!(
        body.contains("loopback app") || body.contains(&url("/good.json")),
        "{body}"
    );
    refused(
        &gateway_base,
        "/good.json",
        "http://127.0.0.1:9/other",
        "redirect_uri",
    );
    refused(&gateway_base, "/liar.json", REDIRECT, "not its own URL");
    refused(&gateway_base, "/huge.json", REDIRECT, "larger than");
    refused(
        &gateway_base,
        "/secret.json",
        REDIRECT,
        "is public: token_endpoint_auth_method none",
    );
    refused(&gateway_base, "/missing.json", REDIRECT, "404");
    stop(running);

    // Without the development switch, a loopback document is not fetched at all.
    let (running, gateway_base) = gateway(&cmd, false);
    refused(&gateway_base, "/good.json", REDIRECT, "it is not https");
    stop(running);
}

/// Review finding (issue 27): the document fetch pins the addresses it checked, but a system
/// proxy (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`) would have taken the request elsewhere —
/// to an address never checked. The proxy here counts the connections it is offered: none.
#[test]
fn a_document_is_fetched_at_its_checked_address_never_through_a_proxy() {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"fault": fault(&[])}}));
    let base = documents(|base| {
        let own = json!({"client_id": format!("{base}/good.json"),
            "client_name": "loopback app", "redirect_uris": [REDIRECT]});
        vec![("/good.json", own.to_string())]
    });
    let proxy = TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy_url = format!("http://{}", proxy.local_addr().unwrap());
    let offered = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = std::sync::Arc::clone(&offered);
    std::thread::spawn(move || {
        for stream in proxy.incoming().flatten() {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            drop(stream);
        }
    });
    let mut env = vec![("NO_PROXY", ""), ("no_proxy", "")];
    for name in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        env.push((name, proxy_url.as_str()));
    }
    let (running, gateway_base) = gateway_with(&cmd, true, &env);
    let (status, body) = authorize(&gateway_base, &format!("{base}/good.json"), REDIRECT);
    let offered = offered.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(
        offered, 0,
        "the document was asked of the proxy: {status} {body}"
    );
    assert!(status.contains("200"), "{status} {body}");
    stop(running);
}
