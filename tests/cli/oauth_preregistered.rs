//! A client registered by hand (issue 26): the server's `oauth` block in the config, against a
//! real OpenID provider that offers neither dynamic registration nor Client ID Metadata
//! Documents (`oidc-provider`, tests/fixtures/oidc_provider.mjs), in front of our own gateway
//! delegating to it (`serve --http --auth oidc:ISSUER`). The test plays the browser.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

use crate::oauth_device::exchange;
use crate::serve_oidc::{gateway, Provider};
use crate::util::*;

/// The browser: follows the redirects from `url` with the cookies they set, until one goes to
/// `until` (the loopback redirect URI), which is returned; the last answer when none does.
fn browse(url: &str, until: &str) -> Result<String, String> {
    let mut cookies = BTreeMap::new();
    let mut url = url.to_string();
    for _ in 0..10 {
        let (status, location, body) = exchange(&mut cookies, "GET", &url, None);
        let Some(location) = location else {
            return Err(format!("HTTP {status}: {body}"));
        };
        if location.starts_with(until) {
            return Ok(location);
        }
        url = location;
    }
    Err(format!("more than 10 redirects from {url}"))
}

/// `auth login SERVER --no-browser --json` in `cmd`'s directory with `env`: what it printed
/// (stdout, stderr) and whether it succeeded; the browser is played when it prints a URL.
fn login(cmd: &Cmd, server: &str, env: &[(&str, &str)], until: &str) -> (bool, String, String) {
    let flags = ["--no-browser"];
    watch_login(cmd.dir(), server, &flags, env, |line, said, child| {
        if line.starts_with("http") {
            let redirect = browse(line.trim(), until)
                .unwrap_or_else(|page| panic!("{page}\nlogin said: {said}"));
            writeln!(child.stdin.take().unwrap(), "{redirect}").unwrap();
        }
    })
}

/// `auth login SERVER --json` with `flags` in `dir` (its own home, the config `config.json`)
/// with `env`, and no display, D-Bus session or token store choice of the caller's (tokens go
/// to the file unless `env` gives it a keyring): each line it writes on stderr goes to `on_line`
/// with what it said before and the child (to answer on its stdin). Whether it succeeded,
/// its stdout and its stderr.
pub(crate) fn watch_login(
    dir: &Path,
    server: &str,
    flags: &[&str],
    env: &[(&str, &str)],
    mut on_line: impl FnMut(&str, &str, &mut Child),
) -> (bool, String, String) {
    let mut child = Command::new(BIN)
        .args(["--config", "config.json", "auth", "login", server, "--json"])
        .args(flags)
        .current_dir(dir)
        .env("HOME", dir)
        .env_remove("XDG_STATE_HOME")
        .env("XDG_CACHE_HOME", dir.join(".cache"))
        .env_remove("DBUS_SESSION_BUS_ADDRESS")
        .env_remove("MCP_LAUNCH_TOKEN_STORE")
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env_remove("MCP_LAUNCH_CLIENT_METADATA_URL")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start auth login");
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    let mut line = String::new();
    while stderr.read_line(&mut line).unwrap_or(0) > 0 {
        on_line(&line, &said, &mut child);
        said.push_str(&line);
        line.clear();
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    (out.status.success(), stdout, said)
}

fn tokens_file(cmd: &Cmd) -> String {
    std::fs::read_to_string(cmd.path(".local/state/mcp-launch/oauth/tokens.json"))
        .unwrap_or_default()
}

/// A confidential client registered by hand logs in with no registration request (the
/// provider offers none), proves its secret as HTTP Basic, asks for the configured scopes,
/// calls a tool through the gateway; its secret is never stored, and the refresh after expiry
/// proves it again from the config.
#[test]
fn a_client_registered_by_hand_logs_in_calls_and_refreshes_without_storing_its_secret() {
    let callback = free_port();
    let provider = Provider::start_with(&["--callback-port", &callback.to_string()]);
    let served = Cmd::new().config_json(json!({"mcpServers": {"fault": fault(&[])}}));
    let (_gateway, base) = gateway(&served, &provider, &["--mode", "full"]);
    let entry = |client_id: &str| {
        json!({"mcpServers": {"gw": {"url": format!("{base}/mcp"), "oauth": {
            "clientId": client_id, "clientSecret": "${GW_SECRET}",
            "scopes": "tools:all", "callbackPort": callback}}}})
    };
    let client = Cmd::new().config_json(entry("cli-app"));
    let secret = [("GW_SECRET", "cli-secret")];
    let redirect = format!("http://localhost:{callback}/callback");

    let (ok, stdout, said) = login(&client, "gw", &secret, &redirect);
    assert!(ok, "login failed: {stdout}\n{said}");
    assert!(said.contains("scope=tools%3Aall"), "{said}");
    assert!(said.contains("client_id=cli-app"), "{said}");
    let grant: Value = serde_json::from_str(&tokens_file(&client)).unwrap();
    let grant = &grant[format!("{base}/mcp")];
    assert_eq!(grant["secret_from_config"], true, "{grant}");
    assert!(
        !tokens_file(&client).contains("cli-secret"),
        "the secret was stored"
    );

    let call = || {
        client
            .cmd()
            .env("GW_SECRET", "cli-secret")
            .args(["--config", "config.json", "call", "gw", "fault__echo"])
            .args([r#"{"message":"hi"}"#, "--json"])
    };
    let out = call().run();
    assert_eq!(out.json()["success"], true, "{out}");

    // Expired: the refresh proves the secret read from the config again.
    let path = client.path(".local/state/mcp-launch/oauth/tokens.json");
    let mut stored: Value = serde_json::from_str(&tokens_file(&client)).unwrap();
    let before = stored[format!("{base}/mcp")]["access_token"].clone();
    stored[format!("{base}/mcp")]["expires_at"] = json!(1);
    std::fs::write(&path, stored.to_string()).unwrap();
    let out = call().run();
    assert_eq!(out.json()["success"], true, "{out}");
    let after: Value = serde_json::from_str(&tokens_file(&client)).unwrap();
    assert_ne!(after[format!("{base}/mcp")]["access_token"], before);
    assert!(!tokens_file(&client).contains("cli-secret"));
    assert!(!out.stdout.contains("cli-secret") && !out.stderr.contains("cli-secret"));

    // A client id the provider does not know: said before any browser, naming the config.
    let unknown = Cmd::new().config_json(entry("nobody"));
    let (ok, stdout, said) = login(&unknown, "gw", &secret, &redirect);
    assert!(!ok, "{stdout}");
    let error: Value = serde_json::from_str(&stdout).expect("the error as JSON");
    assert_eq!(error["error"]["type"], "auth_client_rejected", "{error}");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("\"nobody\"") && message.contains("invalid_client"),
        "{message}"
    );
    let help = error["error"]["help"].as_str().unwrap();
    let file = unknown.path("config.json").display().to_string();
    assert!(
        help.contains(&file) && help.contains("\"gw\"") && help.contains(&redirect),
        "{help}"
    );
    assert!(
        !said.contains("Open this URL"),
        "a browser was sent: {said}"
    );
}

/// The `oauth` block's mistakes name the file, the server and the field; a secret written out
/// in a git checkout is refused and said to be out.
#[test]
fn a_bad_oauth_block_names_the_file_the_server_and_the_field() {
    let entry = |oauth: Value| json!({"mcpServers": {"gw": {"url": "http://127.0.0.1:9/mcp", "oauth": oauth}}});
    let literal = Cmd::new()
        .config_json(entry(json!({"clientId": "app", "clientSecret": "hunter2"})))
        .file(".git/HEAD", "ref: refs/heads/main\n");
    let out = literal
        .cmd()
        .args(["--config", "config.json", "auth", "login", "gw", "--json"])
        .status(2)
        .run();
    let error = out.error();
    assert_eq!(error["type"], "invalid_server", "{out}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("config.json") && message.contains("\"gw\""),
        "{message}"
    );
    assert!(
        message.contains("oauth.clientSecret") && message.contains("git checkout"),
        "{message}"
    );
    assert!(!out.stdout.contains("hunter2"), "{out}");
    assert!(error["help"].as_str().unwrap().contains("${VAR}"), "{out}");

    let port = Cmd::new().config_json(entry(json!({"clientId": "app", "callbackPort": "80"})));
    let out = port
        .cmd()
        .args(["--config", "config.json", "auth", "login", "gw", "--json"])
        .status(2)
        .run();
    assert_eq!(out.error()["type"], "invalid_server", "{out}");
    assert!(out.stdout.contains("oauth.callbackPort"), "{out}");
}
