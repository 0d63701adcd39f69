//! `/mcp` on `up`'s stack fronts (issue 27): with a tunnel, the official Python SDK's OAuth
//! client logs in through the fake cloudflared's stand-in for Cloudflare's edge (discovery,
//! registration, the operator's `auth approve`, token, call, refresh); without one, the stack's
//! key as a bearer; a token issued for one stack is refused by another; with `--auth
//! oidc:ISSUER` a real OpenID provider's tokens (`serve_oidc`'s), the REST side keeping its key.

use std::process::Command;

use serde_json::{json, Value};

use crate::launch_util::{request, stack, terminate, wait_ready};
use crate::util::*;

/// The hostname the fake cloudflared gives its quick tunnel.
const HOSTNAME: &str = "shared-stack-mcp-test.trycloudflare.com";

fn fake_cloudflared() -> String {
    let script = manifest_dir().join("tests/fixtures/fake_cloudflared.py");
    script.display().to_string()
}

/// A project whose configs each hold the fault server, logging what it is sent to `<name>.log`.
fn project(names: &[&str]) -> Cmd {
    let mut cmd = Cmd::new();
    for name in names {
        let log = cmd.path(&format!("{name}.log")).display().to_string();
        let servers = json!({"mcpServers": {"fault": fault(&["--log", &log])}});
        cmd = cmd.file(&format!("{name}.json"), &servers.to_string());
    }
    cmd
}

/// How many times the fault server of `name` was started (its `initialize`s).
fn starts(cmd: &Cmd, name: &str) -> usize {
    let log = std::fs::read_to_string(cmd.path(&format!("{name}.log"))).unwrap_or_default();
    log.lines()
        .filter(|l| l.contains(r#""initialize""#))
        .count()
}

/// The Python SDK's OAuth client against `url`: its observations.
fn oauth_client(cmd: &Cmd, url: &str, edge: Option<&str>) -> Value {
    let mut client = Command::new(sdk_python());
    client
        .arg(manifest_dir().join("tests/fixtures/oauth_client.py"))
        .args([url, BIN, "fault__echo"]);
    if let Some(edge) = edge {
        client.env("MCP_LAUNCH_TEST_EDGE", edge);
    }
    client_json(client, cmd.dir(), "the Python SDK's OAuth client")
}

/// The SDK's client was let in (the consent form answered 303), listed and called
/// `fault__echo`, refreshed its token (a rotated refresh token) and called again.
fn assert_logged_in_called_and_refreshed(seen: &Value) {
    let listed = seen["tools"].as_array().unwrap();
    assert!(listed.iter().any(|t| t == "fault__echo"), "{seen}");
    let expected = [
        ("consent_status", json!(303)),
        ("first_call_error", json!(false)),
        ("second_call_error", json!(false)),
        ("token_sets", json!(2)),
        ("refresh_tokens", json!(2)),
    ];
    for (field, value) in expected {
        assert_eq!(seen[field], value, "{field}: {seen}");
    }
}

/// `up` on the project's configs (`--config NAME.json` each) with the native controller, /mcp
/// in full mode, on free ports; `flags` add to it.
fn up(cmd: &Cmd, configs: &[&str], flags: &[&str]) -> Running {
    up_on(cmd, configs, free_ports(configs.len() as u16), flags)
}

/// `up` as [`up`] does, its stacks' fronts on ports from `port` on.
fn up_on(cmd: &Cmd, configs: &[&str], port: u16, flags: &[&str]) -> Running {
    let mut up = cmd.cmd().args(["up"]);
    for name in configs {
        up = up.args(["--config", &format!("{name}.json")]);
    }
    up.args(["--controller", "native", "--mode", "full"])
        .args(["--port", &port.to_string()])
        .args(flags)
        .stderr_any()
        .spawn()
}

/// Waits until `count` stacks are ready and each serves `/mcp` (mounted once the gateway has
/// its catalog, a moment after the REST side: `up --json` prints after both).
fn wait_mcp(up: &Running, dir: &std::path::Path, count: usize) -> Value {
    loop {
        let state = wait_ready(up, dir, count);
        let stacks = state["stacks"].as_array().unwrap();
        if stacks.iter().all(|s| s["mcp_auth"].is_string()) {
            return state;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// The Python SDK's client calls `fault__echo` at `url` with `key` as its bearer.
fn sdk_calls_with_key(cmd: &Cmd, url: &str, key: &str) {
    let mut client = Command::new(sdk_python());
    client
        .arg(manifest_dir().join("tests/fixtures/gateway_client.py"))
        .args(["call", "--http", url, "--key", key]);
    let seen = client_json(client, cmd.dir(), "the Python SDK's client");
    assert!(seen["echo"].to_string().contains("once"), "{seen}");
}

/// `initialize` POSTed to `url` with `headers`.
fn initialize(url: &str, headers: &[(&str, &str)]) -> crate::launch_util::Reply {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}});
    let mut all = vec![("accept", "application/json, text/event-stream")];
    all.extend_from_slice(headers);
    request("POST", url, &all, Some(body.to_string().into_bytes()))
}

fn challenge(reply: &crate::launch_util::Reply) -> String {
    let header = reply.headers.get("www-authenticate");
    header
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

#[test]
fn a_tunnelled_stack_serves_mcp_to_the_python_sdk_with_oauth() {
    let cmd = project(&["a"]);
    let edge = format!("127.0.0.1:{}", free_port());
    let cmd = cmd
        .env("MCP_LAUNCH_CLOUDFLARED", &fake_cloudflared())
        .env("FAKE_CLOUDFLARED_HOSTNAME", HOSTNAME)
        .env("FAKE_CLOUDFLARED_EDGE", &edge);
    let up = up(&cmd, &["a"], &["--tunnel", "quick"]);
    let state = wait_mcp(&up, cmd.dir(), 1);
    let a = stack(&state, "a");
    let public = format!("https://{HOSTNAME}");
    assert_eq!(a["public_url"], public.as_str(), "{state}");
    assert_eq!(
        a["mcp_auth"], "oauth",
        "oauth is the default with a tunnel: {state}"
    );
    let front = format!("http://127.0.0.1:{}", a["port"]);
    // Unauthenticated: 401 naming the metadata at the PUBLIC URL, which says the same.
    let refused = initialize(&format!("{front}/mcp"), &[]);
    assert_eq!(refused.status, 401, "{}", refused.body);
    let metadata = format!("{public}/.well-known/oauth-protected-resource/mcp");
    assert!(
        challenge(&refused).contains(&format!("resource_metadata=\"{metadata}\"")),
        "{}",
        challenge(&refused)
    );
    for path in ["", "/mcp"] {
        let url = format!("{front}/.well-known/oauth-protected-resource{path}");
        let described = request("GET", &url, &[], None);
        assert_eq!(described.status, 200, "{url}: {}", described.body);
        assert_eq!(described.body["resource"], format!("{public}/mcp"));
        assert_eq!(described.body["authorization_servers"][0], public.as_str());
    }
    let seen = oauth_client(&cmd, &format!("{public}/mcp"), Some(&edge));
    assert_logged_in_called_and_refreshed(&seen);
    // /mcp called the server the stack already ran: one start, not two.
    assert_eq!(starts(&cmd, "a"), 1, "the fault server was started twice");
    // The REST side keeps its X-API-Key, and an OAuth token is not one.
    let key = a["api_key"].as_str().unwrap();
    let token = format!("Bearer {}", seen["access_token"].as_str().unwrap());
    let rest = format!("{front}/fault/echo");
    let echo = Some(br#"{"message": "rest"}"#.to_vec());
    assert_eq!(
        request("POST", &rest, &[("x-api-key", key)], echo.clone()).status,
        200
    );
    let with_token = request("POST", &rest, &[("authorization", &token)], echo);
    assert_eq!(with_token.status, 401, "{}", with_token.body);
    // `share` says what to paste into a connector, and how to consent.
    let shared = cmd.cmd().args(["share", "--json"]).run().json();
    let mcp = &stack(&shared, "a")["mcp"];
    assert_eq!(mcp["url"], format!("{public}/mcp"), "{shared}");
    assert_eq!(mcp["auth"], "oauth", "{shared}");
    let told = cmd.cmd().args(["share"]).run().stdout;
    for words in [
        "Add custom connector",
        "Authentication OAuth",
        "auth approve",
        "/mcp",
    ] {
        assert!(
            told.contains(words),
            "share does not say {words:?}:\n{told}"
        );
    }
    let out = terminate(up, &state);
    assert!(
        out.stderr.contains("stack a: client \"python sdk test\""),
        "{out}"
    );
}

#[test]
fn a_local_stack_serves_mcp_with_its_key_as_a_bearer() {
    let cmd = project(&["a"]);
    let up = up(&cmd, &["a"], &["--tunnel", "none"]);
    let state = wait_mcp(&up, cmd.dir(), 1);
    let a = stack(&state, "a");
    assert_eq!(
        a["mcp_auth"], "key",
        "the key is the default without a tunnel: {state}"
    );
    let key = a["api_key"].as_str().unwrap();
    let url = format!("http://127.0.0.1:{}/mcp", a["port"]);
    sdk_calls_with_key(&cmd, &url, key);
    let bearer = format!("Bearer {key}");
    assert_eq!(initialize(&url, &[("authorization", &bearer)]).status, 200);
    for headers in [vec![], vec![("authorization", "Bearer not-the-key")]] {
        let refused = initialize(&url, &headers);
        assert_eq!(refused.status, 401, "{headers:?}: {}", refused.body);
    }
    let metadata = url.replace("/mcp", "/.well-known/oauth-protected-resource");
    assert_ne!(
        request("GET", &metadata, &[], None).status,
        200,
        "no OAuth with a key"
    );
    terminate(up, &state);
}

#[test]
fn a_token_issued_for_one_stack_is_refused_by_another() {
    let cmd = project(&["a", "b"]);
    let up = up(&cmd, &["a", "b"], &["--tunnel", "none", "--auth", "oauth"]);
    let state = wait_mcp(&up, cmd.dir(), 2);
    let url = |name: &str| format!("http://127.0.0.1:{}/mcp", stack(&state, name)["port"]);
    let seen = oauth_client(&cmd, &url("a"), None);
    assert_eq!(seen["first_call_error"], false, "{seen}");
    let token = format!("Bearer {}", seen["access_token"].as_str().unwrap());
    assert_eq!(
        initialize(&url("a"), &[("authorization", &token)]).status,
        200,
        "the token is good where it was issued"
    );
    let refused = initialize(&url("b"), &[("authorization", &token)]);
    assert_eq!(refused.status, 401, "{}", refused.body);
    let said = challenge(&refused);
    assert!(said.contains("invalid_token"), "{said}");
    let b_metadata = url("b").replace("/mcp", "/.well-known/oauth-protected-resource/mcp");
    assert!(said.contains(&b_metadata), "{said}");
    assert!(
        refused.body.to_string().contains("another resource"),
        "{}",
        refused.body
    );
    terminate(up, &state);
}

#[test]
fn a_stacks_mcp_takes_an_openid_providers_tokens_and_rest_keeps_the_key() {
    let provider = crate::serve_oidc::Provider::start();
    let cmd = project(&["a", "b"]);
    let auth = format!("oidc:{}", provider.issuer);
    let up = up(&cmd, &["a", "b"], &["--tunnel", "none", "--auth", &auth]);
    let state = wait_mcp(&up, cmd.dir(), 2);
    let a = stack(&state, "a");
    assert_eq!(a["mcp_auth"], "oidc", "{state}");
    let base = |name: &str| format!("http://127.0.0.1:{}", stack(&state, name)["port"]);
    let metadata = request(
        "GET",
        &format!("{}/.well-known/oauth-protected-resource/mcp", base("a")),
        &[],
        None,
    );
    assert_eq!(metadata.status, 200, "{}", metadata.body);
    assert_eq!(
        metadata.body["authorization_servers"],
        json!([provider.issuer]),
        "{}",
        metadata.body
    );
    let probes = json!([["fault__echo", {"message": "delegated"}]]);
    let team = crate::serve_oidc::TEAM;
    let seen = crate::serve_oidc::sdk_sees(&cmd, &provider, &base("a"), team, "tools:all", probes);
    assert_eq!(seen["probes"][0]["is_error"], false, "{seen}");
    assert!(
        seen["probes"][0]["text"].to_string().contains("delegated"),
        "{seen}"
    );

    // A token for stack a's /mcp is refused by b's (its audience is a's URL).
    let token = provider.token(team, "tools:all", &format!("{}/mcp", base("a")));
    let bearer = format!("Bearer {token}");
    let good = initialize(&format!("{}/mcp", base("a")), &[("authorization", &bearer)]);
    assert_eq!(good.status, 200, "{}", good.body);
    let refused = initialize(&format!("{}/mcp", base("b")), &[("authorization", &bearer)]);
    assert_eq!(refused.status, 401, "{}", refused.body);
    assert!(
        challenge(&refused).contains("`aud`"),
        "{}",
        challenge(&refused)
    );

    // The REST side takes the stack's key, never the provider's token.
    let echo = format!("{}/fault/echo", base("a"));
    let body = Some(json!({"message": "rest"}).to_string().into_bytes());
    let key = a["api_key"].as_str().unwrap();
    let keyed = request("POST", &echo, &[("x-api-key", key)], body.clone());
    assert_eq!(keyed.status, 200, "{}", keyed.body);
    let tokened = request("POST", &echo, &[("authorization", &bearer)], body);
    assert_eq!(tokened.status, 401, "{}", tokened.body);
    terminate(up, &state);
}

/// `up --auth oidc:ISSUER --oidc-client-id ID`, for a provider without dynamic registration:
/// the stack's front registers the Python SDK's OAuth client and proxies its login to the
/// provider, whose client's redirect URI is the stack's own callback (the one `up` names on
/// the terminal); the client then calls and refreshes with the provider's tokens.
#[test]
fn a_stacks_front_registers_mcp_clients_and_proxies_their_login_to_the_provider() {
    const SECRET: &str = "gw-proxy-secret";
    let cmd = project(&["a"]).env("MCP_LAUNCH_OIDC_CLIENT_SECRET", SECRET);
    let port = free_ports(1);
    let base = format!("http://127.0.0.1:{port}");
    let callback = format!("{base}/oauth/callback");
    let provider = crate::serve_oidc::Provider::start_with(&[
        "--proxy-callback",
        &callback,
        "--rotate-refresh",
        "1",
    ]);
    let auth = format!("oidc:{}", provider.issuer);
    let flags = ["--tunnel", "none", "--auth", &auth];
    let up = up_on(
        &cmd,
        &["a"],
        port,
        &[&flags[..], &["--oidc-client-id", "gw-proxy"]].concat(),
    );
    let state = wait_mcp(&up, cmd.dir(), 1);
    assert_eq!(stack(&state, "a")["mcp_auth"], "oidc", "{state}");

    let mut client = Command::new(sdk_python());
    client
        .arg(manifest_dir().join("tests/fixtures/oauth_client.py"))
        .args([&format!("{base}/mcp"), BIN, "fault__echo"])
        .env("MCP_LAUNCH_TEST_PROVIDER_LOGIN", "1");
    let seen = client_json(
        client,
        cmd.dir(),
        "the Python SDK through the stack's proxy",
    );
    let hops = seen["login_hops"].as_array().unwrap();
    for hop in [format!("{}/auth", provider.issuer), callback.clone()] {
        assert!(hops.contains(&json!(hop)), "never went by {hop}: {seen}");
    }
    let expected = [
        ("first_call_error", json!(false)),
        ("second_call_error", json!(false)),
        ("token_sets", json!(2)),
        ("refresh_tokens", json!(2)),
    ];
    for (field, value) in expected {
        assert_eq!(seen[field], value, "{field}: {seen}");
    }
    assert_ne!(
        seen["client_id"], "gw-proxy",
        "the provider's client handed out: {seen}"
    );
    // `share` names the callback to register at the provider, for the proxy's client.
    let proxy = share_login_proxy(&cmd);
    assert_eq!(proxy["callback_url"], callback.as_str());
    assert_eq!(proxy["client_id"], "gw-proxy");
    assert_eq!(proxy["issuer"], provider.issuer.as_str());
    let out = terminate(up, &state);
    assert!(
        out.stderr
            .contains(&format!("redirect URI there: {callback}")),
        "{out}"
    );
    assert!(!out.stderr.contains(SECRET), "the secret was shown: {out}");
}

/// `share --json`'s login proxy of stack `a`, after checking that its text names the same
/// callback, client and provider, step by step.
fn share_login_proxy(cmd: &Cmd) -> Value {
    let shared = cmd.cmd().args(["share", "--json"]).run().json();
    let proxy = stack(&shared, "a")["mcp"]["login_proxy"].clone();
    let callback = proxy["callback_url"]
        .as_str()
        .unwrap_or_else(|| panic!("{shared}"));
    let told = cmd.cmd().args(["share"]).run().stdout;
    let register = format!("add this redirect URI (the allowed callback URL), exactly: {callback}");
    for words in [
        format!("Callback    {callback}"),
        register,
        format!("open the client `{}`", proxy["client_id"].as_str().unwrap()),
        format!("At your provider ({})", proxy["issuer"].as_str().unwrap()),
    ] {
        assert!(
            told.contains(&words),
            "share does not say {words:?}:\n{told}"
        );
    }
    proxy
}

/// Behind a tunnel, the callback `share` names for the login proxy is the public one.
#[test]
fn share_names_the_login_proxys_callback_at_the_tunnels_url() {
    let provider = crate::serve_oidc::Provider::start();
    let edge = format!("127.0.0.1:{}", free_port());
    let cmd = project(&["a"])
        .env("MCP_LAUNCH_CLOUDFLARED", &fake_cloudflared())
        .env("FAKE_CLOUDFLARED_HOSTNAME", HOSTNAME)
        .env("FAKE_CLOUDFLARED_EDGE", &edge);
    let auth = format!("oidc:{}", provider.issuer);
    let flags = [
        "--tunnel",
        "quick",
        "--auth",
        &auth,
        "--oidc-client-id",
        "gw-proxy",
    ];
    let up = up(&cmd, &["a"], &flags);
    let state = wait_mcp(&up, cmd.dir(), 1);
    let proxy = share_login_proxy(&cmd);
    let callback = format!("https://{HOSTNAME}/oauth/callback");
    assert_eq!(proxy["callback_url"], callback.as_str());
    let told = cmd.cmd().args(["share"]).run().stdout;
    assert!(told.contains("A quick tunnel's URL changes"), "{told}");
    terminate(up, &state);
}

#[test]
fn an_mcpo_stack_starts_its_mcp_copy_of_a_server_only_on_the_first_call_and_says_so() {
    let cmd = project(&["a"]).env("MCP_LAUNCH_MCPO", &crate::launch_util::mcpo_bin());
    let ports = free_ports(2);
    let up = cmd
        .cmd()
        .args([
            "up",
            "--config",
            "a.json",
            "--controller",
            "mcpo",
            "--mode",
            "full",
        ])
        .args(["--tunnel", "none", "--port", &ports.to_string()])
        .args(["--mcpo-port", &(ports + 1).to_string()])
        .stderr_any()
        .spawn();
    let state = wait_mcp(&up, cmd.dir(), 1);
    let a = stack(&state, "a");
    let ready = starts(&cmd, "a");
    let url = format!("http://127.0.0.1:{}/mcp", a["port"]);
    let key = a["api_key"].as_str().unwrap();
    let bearer = format!("Bearer {key}");
    assert_eq!(initialize(&url, &[("authorization", &bearer)]).status, 200);
    assert_eq!(
        starts(&cmd, "a"),
        ready,
        "/mcp's handshake started a server"
    );
    sdk_calls_with_key(&cmd, &url, key);
    assert_eq!(starts(&cmd, "a"), ready + 1, "/mcp's copy: one start");
    let out = terminate(up, &state);
    assert!(out.stdout.contains("second copy of a server"), "{out}");
}
