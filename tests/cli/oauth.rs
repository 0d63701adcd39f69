//! OAuth to a remote server (issue 26): the Python SDK's own OAuth-protected MCP server with
//! its authorization server (tests/fixtures/oauth_server.py). The test plays the browser.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::oauth_preregistered::watch_login;
use crate::util::*;

/// The fixture on a free port, in its own process group; killed on drop.
pub(crate) struct OAuthServer {
    child: Child,
    pub(crate) port: u16,
}

impl OAuthServer {
    fn start() -> Self {
        Self::start_with(&[])
    }

    /// The fixture with its flags (`--step-up SCOPE`).
    pub(crate) fn start_with(flags: &[&str]) -> Self {
        let port = free_port();
        let script = manifest_dir().join("tests/fixtures/oauth_server.py");
        let child = Command::new(sdk_python())
            .arg(script)
            .arg(port.to_string())
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("start oauth_server.py");
        let server = OAuthServer { child, port };
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "oauth_server.py never listened");
            std::thread::sleep(Duration::from_millis(100));
        }
        server
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    pub(crate) fn stats(&self) -> Value {
        let (_, body) = http(self.port, "GET", "/test/stats");
        serde_json::from_str(&body).expect("stats JSON")
    }
}

impl Drop for OAuthServer {
    fn drop(&mut self) {
        let pgid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

/// One plain HTTP/1.1 request to 127.0.0.1:`port`: the head and the body of the answer.
pub(crate) fn http(port: u16, method: &str, target: &str) -> (String, String) {
    let mut socket = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let request = format!(
        "{method} {target} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
    );
    socket.write_all(request.as_bytes()).expect("send");
    let mut answer = String::new();
    socket.read_to_string(&mut answer).expect("read");
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    (head.to_string(), body.to_string())
}

/// The browser's part: GET the authorization URL and return where it redirects.
fn authorize(url: &str) -> String {
    let rest = url
        .strip_prefix("http://127.0.0.1:")
        .expect("a loopback URL");
    let (port, target) = rest.split_at(rest.find('/').expect("a path"));
    let (head, _) = http(port.parse().unwrap(), "GET", target);
    head.lines()
        .find_map(|l| {
            l.strip_prefix("location: ")
                .or_else(|| l.strip_prefix("Location: "))
        })
        .unwrap_or_else(|| panic!("no redirect: {head}"))
        .to_string()
}

/// `auth login SERVER --no-browser` in `dir`: read the URL it prints, play the browser,
/// paste the redirect back.
pub(crate) fn login(dir: &std::path::Path, server: &str) -> Value {
    login_with(dir, server, &[]).0
}

/// [`login`] with more arguments (`--scope S`): what it printed on stdout, the authorization
/// URL and its stderr up to that URL.
fn login_with(dir: &std::path::Path, server: &str, more: &[&str]) -> (Value, String, String) {
    login_in(dir, server, more, &[])
}

/// [`login_with`] with variables for the process (`watch_login` keeps the caller's D-Bus
/// session and token store choice from it: tokens go to the file unless `env` says
/// otherwise).
pub(crate) fn login_in(
    dir: &std::path::Path,
    server: &str,
    more: &[&str],
    env: &[(&str, &str)],
) -> (Value, String, String) {
    let flags: Vec<&str> = ["--no-browser"].iter().chain(more).copied().collect();
    let mut shown = None;
    let (ok, stdout, said) = watch_login(dir, server, &flags, env, |line, said, child| {
        if shown.is_none() && line.starts_with("http") {
            let redirect = authorize(line.trim());
            writeln!(child.stdin.take().unwrap(), "{redirect}").unwrap();
            shown = Some((line.trim().to_string(), said.to_string()));
        }
    });
    let (url, before) = shown.unwrap_or_else(|| panic!("login printed no URL: {said}"));
    assert!(ok, "login failed: {stdout}\n{said}");
    assert!(url.contains("code_challenge_method=S256"), "{url}");
    assert!(url.contains("resource="), "no resource indicator: {url}");
    let printed = serde_json::from_str(&stdout).expect("login JSON");
    (printed, url, before)
}

/// `call prot TOOL {"message":"hi"} --json` with the test's config.
pub(crate) fn call_prot(setup: &Cmd, tool: &str) -> Cmd {
    setup.cmd().args([
        "--config",
        "config.json",
        "call",
        "prot",
        tool,
        r#"{"message":"hi"}"#,
        "--json",
    ])
}

fn stored_tokens(dir: &std::path::Path) -> Vec<String> {
    let path = dir.join(".local/state/mcp-launch/oauth/tokens.json");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let grants: Value = serde_json::from_str(&text).unwrap_or(json!({}));
    let mut tokens = Vec::new();
    for grant in grants.as_object().into_iter().flat_map(|m| m.values()) {
        for key in ["access_token", "refresh_token"] {
            if let Some(t) = grant[key].as_str() {
                tokens.push(t.to_string());
            }
        }
    }
    tokens
}

fn assert_no_token(out: &Output, tokens: &[String]) {
    for token in tokens {
        assert!(
            !out.stdout.contains(token.as_str()) && !out.stderr.contains(token.as_str()),
            "a token was shown\n{out}"
        );
    }
}

#[test]
fn login_call_expiry_refresh_revocation_and_logout_against_the_python_sdk() {
    let server = OAuthServer::start();
    let config = json!({"mcpServers": {"prot": {"type": "http", "url": server.url()}}});
    let setup = Cmd::new().config_json(config);
    let dir = setup.dir().to_path_buf();

    // Before login: a state of its own with the command to run, not an HTTP failure.
    let before = call_prot(&setup, "echo").status(1).run();
    assert_eq!(before.error()["type"], "needs_login", "{before}");
    assert!(
        before.error()["help"]
            .as_str()
            .unwrap()
            .contains("mcp-launch auth login"),
        "{before}"
    );

    let logged = login(&dir, "prot");
    assert_eq!(logged["scopes"], "mcp", "{logged}");
    let mode = std::fs::metadata(dir.join(".local/state/mcp-launch/oauth/tokens.json")).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
        0o600
    );
    assert_eq!(server.stats()["token_requests"], 1);

    // A call with a valid token: no token request, the tool answers.
    let call = || call_prot(&setup, "echo");
    let ok = call().run();
    assert_eq!(ok.json()["result"]["content"][0]["text"], "hi", "{ok}");
    assert_eq!(
        server.stats()["token_requests"],
        1,
        "a valid token cost a token request"
    );
    assert_no_token(&ok, &stored_tokens(&dir));

    // The server expires the access token; two processes call at once: each gets a 401, one
    // refresh (one token request) under the store's lock, the rotated token, the retried call.
    let before_refresh = stored_tokens(&dir);
    http(server.port, "POST", "/test/expire");
    let (first, second) = (call().spawn(), call().spawn());
    for refreshed in [first.wait(), second.wait()] {
        assert_eq!(
            refreshed.json()["result"]["content"][0]["text"],
            "hi",
            "{refreshed}"
        );
    }
    let token_requests = server.stats()["token_requests"].clone();
    assert_eq!(
        token_requests, 2,
        "two processes made more than one refresh"
    );
    let after_refresh = stored_tokens(&dir);
    assert!(
        before_refresh.iter().all(|t| !after_refresh.contains(t)),
        "the tokens were not rotated"
    );

    // auth status shows who and what, never a token.
    let status = setup.cmd().args(["auth", "status", "--json"]).run();
    let entry = &status.json()["servers"][0];
    assert_eq!(
        (&entry["server"], &entry["state"]),
        (&json!("prot"), &json!("valid")),
        "{status}"
    );
    assert_no_token(&status, &after_refresh);

    // Revoked at the server: needs login again, in list and call.
    http(server.port, "POST", "/test/revoke");
    let revoked = call().status(1).run();
    assert_eq!(revoked.error()["type"], "needs_login", "{revoked}");
    let listed = setup
        .cmd()
        .args(["--config", "config.json", "list", "--json"])
        .run();
    assert_eq!(listed.server("prot")["status"], "needs_login", "{listed}");
    assert_eq!(
        listed.server("prot")["error"]["type"],
        "needs_login",
        "{listed}"
    );

    // Logout forgets the grant.
    setup.cmd().args(["auth", "logout", "prot", "--json"]).run();
    let empty = setup.cmd().args(["auth", "status", "--json"]).run();
    assert_eq!(empty.json()["servers"], json!([]), "{empty}");
}

/// `list --json` of a stack holding an OAuth server: before login a state of its own with the
/// command to run (not a failure: the other server is fine, exit 0); once its tools were
/// listed, a server that needs login again still shows them, from the tool index.
#[test]
fn list_shows_needs_login_with_the_command_and_the_tools_from_the_index() {
    let server = OAuthServer::start();
    let config =
        json!({"mcpServers": {"prot": {"type": "http", "url": server.url()}, "time": time()}});
    let setup = Cmd::new().config_json(config);
    let dir = setup.dir().to_path_buf();
    let list = || {
        setup
            .cmd()
            .args(["--config", "config.json", "list", "--json", "--refresh"])
    };

    let before = list().run();
    let prot = before.server("prot");
    assert_eq!(prot["status"], "needs_login", "{before}");
    assert_eq!(
        prot["help"], "mcp-launch auth login prot --config config.json",
        "{before}"
    );
    assert_eq!(prot["error"]["type"], "needs_login", "{before}");
    assert_eq!(before.server("time")["status"], "connected", "{before}");

    login(&dir, "prot");
    let live = list().run();
    assert_eq!(live.server("prot")["status"], "connected", "{live}");
    let tools = live.server("prot")["tools"].clone();
    assert!(tools.as_u64().unwrap() > 0, "{live}");

    http(server.port, "POST", "/test/revoke");
    let after = list().run();
    let prot = after.server("prot");
    assert_eq!(prot["status"], "needs_login", "{after}");
    assert_eq!(
        prot["tools"], tools,
        "the known tools were not kept: {after}"
    );
    assert_eq!(
        prot["help"], "mcp-launch auth login prot --config config.json",
        "{after}"
    );
}

/// Step-up (SEP-2350): a tool that needs a scope the token lacks gets 403 insufficient_scope.
/// Without a person (`--json`), `call` answers `needs_login` naming the scopes — the ones held
/// and the challenge's — and the exact command, with no token request (no loop); a login
/// with them lets the call through and keeps what the other tools need.
#[test]
fn a_call_needing_more_scopes_names_them_and_a_login_with_them_lets_it_through() {
    let server = OAuthServer::start_with(&["--step-up", "admin"]);
    let config = json!({"mcpServers": {"prot": {"type": "http", "url": server.url()}}});
    let setup = Cmd::new().config_json(config);
    let dir = setup.dir().to_path_buf();
    let call = |tool: &str| call_prot(&setup, tool);
    assert_eq!(login(&dir, "prot")["scopes"], "mcp");
    assert_eq!(
        call("echo").run().json()["result"]["content"][0]["text"],
        "hi"
    );

    let refused = call("admin_echo").status(1).run();
    assert_eq!(refused.error()["type"], "needs_login", "{refused}");
    assert!(
        refused.error()["message"]
            .as_str()
            .unwrap()
            .contains("admin"),
        "{refused}"
    );
    assert_eq!(
        refused.error()["help"],
        "a person must log in: mcp-launch auth login prot --scope 'mcp admin' --config config.json",
        "{refused}"
    );
    assert_eq!(
        server.stats()["token_requests"],
        1,
        "a step-up without a person logged in"
    );

    let (logged, url, _) = login_with(&dir, "prot", &["--scope", "mcp admin"]);
    assert!(url.contains("scope=mcp+admin"), "{url}");
    assert_eq!(logged["scopes"], "mcp admin", "{logged}");
    for tool in ["admin_echo", "echo"] {
        let ok = call(tool).run();
        assert_eq!(ok.json()["result"]["content"][0]["text"], "hi", "{ok}");
    }
}

/// Authorization-server change (SEP-2352): the server's metadata names another authorization
/// server and refuses the old tokens. `call` answers `needs_login` saying so, without a
/// refresh at the old server and without a request to the new one; `auth login` discovers the
/// new one, registers there and says so — the old client id never reaches it.
#[test]
fn a_server_that_moves_to_another_authorization_server_is_logged_in_to_anew() {
    let (old, new) = (OAuthServer::start(), OAuthServer::start());
    let config = json!({"mcpServers": {"prot": {"type": "http", "url": old.url()}}});
    let setup = Cmd::new().config_json(config);
    let dir = setup.dir().to_path_buf();
    login(&dir, "prot");
    let old_client = old.stats()["registered"][0].clone();
    let new_issuer = format!("http://127.0.0.1:{}", new.port);
    http(old.port, "POST", &format!("/test/move?to={new_issuer}"));

    let moved = call_prot(&setup, "echo").status(1).run();
    assert_eq!(moved.error()["type"], "needs_login", "{moved}");
    let message = moved.error()["message"].as_str().unwrap().to_string();
    assert!(
        message.contains("authorization server changed") && message.contains(&new_issuer),
        "{moved}"
    );
    assert_eq!(
        old.stats()["token_requests"],
        1,
        "the old server was asked for a refresh"
    );
    assert_eq!(
        new.stats()["registered"],
        json!([]),
        "the new server was reached before a login"
    );

    let (logged, url, said) = login_with(&dir, "prot", &[]);
    assert!(url.starts_with(&new_issuer), "{url}");
    assert!(said.contains("changed from"), "{said}");
    assert_eq!(
        logged["issuer"].as_str().unwrap().trim_end_matches('/'),
        new_issuer
    );
    let stats = new.stats();
    assert_eq!(stats["registered"].as_array().unwrap().len(), 1, "{stats}");
    assert_ne!(stats["registered"][0], old_client, "{stats}");
    assert!(
        !stats["token_clients"]
            .as_array()
            .unwrap()
            .contains(&old_client),
        "{stats}"
    );
}

/// `up` with a remote server that needs a login: the rest of the stack starts and serves, and
/// the event names the exact command (the stack's config given, so it finds the same server).
#[test]
fn up_starts_the_rest_of_the_stack_and_names_the_login_command() {
    let server = OAuthServer::start();
    let config =
        json!({"mcpServers": {"prot": {"type": "http", "url": server.url()}, "time": time()}});
    let setup = Cmd::new().config_json(config);
    let (up, front, key) = crate::oauth_gateway::native_stack(&setup);
    let (status, body) = crate::launch_util::http(
        "POST",
        &format!("{front}/time/get_current_time"),
        &[("X-API-Key", &key)],
        Some(json!({"timezone": "UTC"})),
    );
    assert_eq!(status, 200, "{body}");
    setup.cmd().args(["down", "--json"]).run();
    let out = up.wait();
    assert!(
        out.stderr.contains("prot") && out.stderr.contains("needs login"),
        "{out}"
    );
    assert!(
        out.stderr.contains("mcp-launch auth login prot --config ")
            && out.stderr.contains("config.json`"),
        "{out}"
    );
}

/// Step-up with a person there: `call` on a terminal (a pty from `script`) meets the 403,
/// logs in once with the union of scopes (the browser's part played here: the authorization
/// URL it prints, then the redirect to its loopback listener) and retries the call once.
#[test]
fn call_on_a_terminal_logs_in_with_more_scopes_and_retries_once() {
    let server = OAuthServer::start_with(&["--step-up", "admin"]);
    let config = json!({"mcpServers": {"prot": {"type": "http", "url": server.url()}}});
    let setup = Cmd::new().config_json(config);
    let dir = setup.dir().to_path_buf();
    login(&dir, "prot");
    let command =
        format!("{BIN} --config config.json call prot admin_echo '{{\"message\":\"stepped up\"}}'");
    let mut child = Command::new("script")
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .current_dir(&dir)
        .env("HOME", &dir)
        .env_remove("XDG_STATE_HOME")
        .env("XDG_CACHE_HOME", dir.join(".cache"))
        .env("PATH", "/usr/bin:/bin") // no browser opener: the URL is read from the terminal
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("start script");
    let mut terminal = BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    let url = loop {
        let mut line = String::new();
        assert!(
            terminal.read_line(&mut line).unwrap() > 0,
            "no authorization URL: {seen}"
        );
        seen.push_str(&line);
        if line.trim_start().starts_with("http") {
            break line.trim().to_string();
        }
    };
    assert!(url.contains("scope=mcp+admin"), "{url}");
    let callback = authorize(&url);
    let rest = callback
        .strip_prefix("http://127.0.0.1:")
        .expect("loopback");
    let (port, target) = rest.split_at(rest.find('/').unwrap());
    http(port.parse().unwrap(), "GET", target);
    let mut rest_of_it = String::new();
    terminal.read_to_string(&mut rest_of_it).unwrap();
    let status = child.wait().unwrap();
    seen.push_str(&rest_of_it);
    assert!(status.success(), "{seen}");
    assert!(seen.contains("stepped up"), "{seen}");
    assert!(seen.contains("needs a login with more scopes"), "{seen}");
    assert_eq!(server.stats()["token_requests"], 2, "{seen}");
}

/// `oauth.authServerMetadataUrl` (Claude Code's name) for a server with no protected-resource
/// metadata, which discovery cannot log in to: that document is read instead of discovering,
/// the login and a call go through, and a document whose `issuer` is not the one its URL
/// names (RFC 8414 §3.3) is refused.
#[test]
fn a_metadata_url_in_the_config_replaces_discovery_and_its_issuer_is_checked() {
    let server = OAuthServer::start_with(&["--no-resource-metadata"]);
    let entry = |oauth: Value| json!({"mcpServers": {"prot": {"type": "http", "url": server.url(), "oauth": oauth}}});
    let login_fails = |setup: &Cmd| {
        setup
            .cmd()
            .args(["--config", "config.json", "auth", "login", "prot"])
            .args(["--no-browser", "--json"])
            .status(1)
            .run()
    };

    let bare = Cmd::new()
        .config_json(json!({"mcpServers": {"prot": {"type": "http", "url": server.url()}}}));
    let undiscovered = login_fails(&bare);
    assert_eq!(
        undiscovered.error()["type"],
        "auth_failed",
        "{undiscovered}"
    );
    assert!(
        undiscovered.stdout.contains("protected-resource metadata"),
        "{undiscovered}"
    );

    let at = |host: &str| {
        format!(
            "http://{host}:{}/.well-known/oauth-authorization-server",
            server.port
        )
    };
    let pinned = Cmd::new().config_json(entry(json!({"authServerMetadataUrl": at("127.0.0.1")})));
    let logged = login(pinned.dir(), "prot");
    assert_eq!(logged["scopes"], "mcp", "{logged}");
    let out = call_prot(&pinned, "echo").run();
    assert_eq!(out.json()["success"], true, "{out}");

    let snake = entry(json!({"auth_server_metadata_url": at("localhost")}));
    let elsewhere = login_fails(&Cmd::new().config_json(snake));
    assert_eq!(elsewhere.error()["type"], "auth_refused", "{elsewhere}");
    let message = elsewhere.error()["message"].as_str().unwrap().to_string();
    assert!(
        message.contains("authorization-server metadata") && message.contains("issuer"),
        "{message}"
    );
    assert!(message.contains(&server.url()), "{message}");
}
