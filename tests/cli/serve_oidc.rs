//! `serve --http --auth oidc:ISSUER` against a real OpenID provider run on loopback (the
//! certified `oidc-provider` package, `tests/fixtures/oidc_provider.mjs`): the official Python
//! SDK calls a tool with a JWT access token the provider issued for our resource; the provider
//! rotates its key and the gateway follows; forged, expired and misdirected tokens are refused
//! (issue 27, delegated mode).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};

use crate::serve::eventually;
use crate::util::*;

/// The OpenID provider, killed when dropped.
pub(crate) struct Provider {
    child: Child,
    pub(crate) issuer: String,
}

impl Provider {
    pub(crate) fn start() -> Provider {
        Provider::start_with(&[])
    }

    /// The provider with the fixture's flags (`--callback-port N`).
    pub(crate) fn start_with(flags: &[&str]) -> Provider {
        Provider::start_in(flags, &[])
    }

    /// [`Provider::start_with`] with variables for its process (`NODE_EXTRA_CA_CERTS`).
    pub(crate) fn start_in(flags: &[&str], env: &[(&str, &str)]) -> Provider {
        let deps = manifest_dir().join(".deps/oidc");
        assert!(
            deps.join("node_modules/oidc-provider/package.json")
                .exists(),
            "{} is missing: run scripts/install-test-deps.sh",
            deps.display()
        );
        let node = manifest_dir().join(".deps/conformance/node_modules/.bin/node");
        let mut child = Command::new(node)
            .arg(manifest_dir().join("tests/fixtures/oidc_provider.mjs"))
            .arg("--deps")
            .arg(&deps)
            .args(flags)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the OpenID provider");
        let mut line = String::new();
        let stdout = child.stdout.take().expect("its stdout");
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the provider's first line");
        let said: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("the provider said no JSON ({e}): {line}"));
        let issuer = said["issuer"].as_str().expect("its issuer").to_string();
        Provider { child, issuer }
    }

    /// A token the provider's test hook signs: `claims` over a valid set, `alg` as named in
    /// the fixture's docstring.
    fn mint(&self, claims: Value, alg: &str) -> String {
        let body = json!({"claims": claims, "alg": alg}).to_string();
        let (_, answer) = http(&self.issuer, "POST", "/_mint", &[], &body);
        let answer: Value = serde_json::from_str(&answer).expect("a minted token");
        answer["token"].as_str().unwrap().to_string()
    }

    /// A token from the provider's token endpoint (client_credentials) for `resource`.
    pub(crate) fn token(&self, client: (&str, &str), scope: &str, resource: &str) -> String {
        let body = format!(
            "grant_type=client_credentials&client_id={}&client_secret={}&scope={}&resource={}",
            client.0,
            client.1,
            scope.replace(':', "%3A").replace(' ', "+"),
            resource.replace(':', "%3A").replace('/', "%2F")
        );
        let form = [("content-type", "application/x-www-form-urlencoded")];
        let (head, answer) = http(&self.issuer, "POST", "/token", &form, &body);
        let answer: Value = serde_json::from_str(&answer)
            .unwrap_or_else(|e| panic!("no token ({e}): {head}\n{answer}"));
        answer["access_token"].as_str().unwrap().to_string()
    }

    /// Rotates the signing key: the old one leaves the JWKS.
    fn rotate(&self) {
        http(&self.issuer, "POST", "/_rotate", &[], "{}");
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One plain HTTP/1.1 request to `base` (`http://127.0.0.1:PORT`): the head and the body.
pub(crate) fn http(
    base: &str,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (String, String) {
    let authority = base.strip_prefix("http://").expect("a loopback URL");
    let mut socket = TcpStream::connect(authority).expect("connect");
    let mut request = format!(
        "{method} {target} HTTP/1.1\r\nhost: {authority}\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    socket.write_all(request.as_bytes()).expect("send");
    let mut answer = String::new();
    socket.read_to_string(&mut answer).expect("read");
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    (head.to_string(), body.to_string())
}

/// The status line and `WWW-Authenticate` of an `initialize` sent to `/mcp` with `token`.
fn initialize_with(base: &str, token: &str) -> (String, String) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}})
    .to_string();
    let bearer = format!("Bearer {token}");
    let headers = [
        ("authorization", bearer.as_str()),
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    let (head, _) = http(base, "POST", "/mcp", &headers, &body);
    let status = head.lines().next().unwrap_or_default().to_string();
    let challenge = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(": ")?;
            name.eq_ignore_ascii_case("www-authenticate")
                .then(|| value.to_string())
        })
        .unwrap_or_default();
    (status, challenge)
}

/// A gateway over the fault server, delegated to `provider`, on a free loopback port: the
/// process and its base URL.
pub(crate) fn gateway(cmd: &Cmd, provider: &Provider, extra: &[&str]) -> (Running, String) {
    let addr = format!("127.0.0.1:{}", free_port());
    let auth = format!("oidc:{}", provider.issuer);
    let running = cmd
        .cmd()
        .args(["--config", "config.json", "serve"])
        .args(["--http", &addr, "--auth", &auth])
        .args(extra)
        .stderr_any()
        .spawn();
    eventually(20, "the gateway listens", || {
        TcpStream::connect(&addr).is_ok()
    });
    (running, format!("http://{addr}"))
}

/// What the Python SDK saw calling through `base` with a token of `client` for `scope`.
pub(crate) fn sdk_sees(
    cmd: &Cmd,
    provider: &Provider,
    base: &str,
    client: (&str, &str),
    scope: &str,
    probes: Value,
) -> Value {
    sdk_sees_items(cmd, provider, base, (client, scope), probes, Value::Null)
}

/// What the Python SDK saw as [`sdk_sees`], then asking the resources, templates and prompts
/// `items` names (`oidc_client.py`'s ITEMS; null: none).
pub(crate) fn sdk_sees_items(
    cmd: &Cmd,
    provider: &Provider,
    base: &str,
    (client, scope): ((&str, &str), &str),
    probes: Value,
    items: Value,
) -> Value {
    let mut sdk = Command::new(sdk_python());
    sdk.arg(manifest_dir().join("tests/fixtures/oidc_client.py"))
        .arg(format!("{base}/mcp"))
        .arg(format!("{}/token", provider.issuer))
        .args([client.0, client.1, scope, &probes.to_string()]);
    if !items.is_null() {
        sdk.arg(items.to_string());
    }
    client_json(sdk, cmd.dir(), "the Python SDK with a provider's token")
}

pub(crate) const TEAM: (&str, &str) = ("team-app", "team-secret");

pub(crate) fn stop(running: Running) -> Output {
    kill(Pid::from_raw(running.pid()), Signal::SIGTERM).expect("signal the gateway");
    running.wait()
}

#[test]
fn a_providers_token_calls_a_tool_and_a_rotated_key_is_followed() {
    let provider = Provider::start();
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"fault": fault(&[])}}));
    let (running, base) = gateway(&cmd, &provider, &["--mode", "full"]);
    let (_, metadata) = http(
        &base,
        "GET",
        "/.well-known/oauth-protected-resource/mcp",
        &[],
        "",
    );
    let metadata: Value = serde_json::from_str(&metadata).unwrap();
    assert_eq!(
        metadata["authorization_servers"],
        json!([provider.issuer]),
        "{metadata}"
    );
    assert_eq!(metadata["resource"], format!("{base}/mcp"), "{metadata}");
    let probes = json!([["fault__echo", {"message": "hi"}]]);
    let seen = sdk_sees(&cmd, &provider, &base, TEAM, "tools:all", probes.clone());
    assert!(
        seen["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "fault__echo"),
        "{seen}"
    );
    assert_eq!(seen["probes"][0]["is_error"], false, "{seen}");
    assert!(
        seen["probes"][0]["text"].as_str().unwrap().contains("hi"),
        "{seen}"
    );

    let resource = format!("{base}/mcp");
    let old = provider.token(TEAM, "tools:all", &resource);
    assert!(
        initialize_with(&base, &old).0.contains(" 200"),
        "the old key's token is refused before rotation"
    );
    provider.rotate();
    let seen = sdk_sees(&cmd, &provider, &base, TEAM, "tools:all", probes);
    assert_eq!(
        seen["probes"][0]["is_error"], false,
        "a new key's token is refused: {seen}"
    );
    let (status, challenge) = initialize_with(&base, &old);
    assert!(
        status.contains(" 401"),
        "a removed key's token passed: {status}"
    );
    assert!(challenge.contains("is not among"), "{challenge}");
    let output = stop(running);
    assert!(
        !output.stderr.contains(&old),
        "a token was logged: {output}"
    );
}

#[test]
fn forged_expired_and_misdirected_tokens_are_refused() {
    let provider = Provider::start();
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"fault": fault(&[])}}));
    let (running, base) = gateway(&cmd, &provider, &["--mode", "full"]);
    let aud = format!("{base}/mcp");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let cases = [
        (
            "wrong aud",
            provider.token(TEAM, "tools:all", "http://127.0.0.1:9/mcp"),
            "`aud`",
        ),
        (
            "wrong iss",
            provider.mint(json!({"aud": aud, "iss": "http://127.0.0.1:9"}), "RS256"),
            "`iss`",
        ),
        (
            "expired",
            provider.mint(json!({"aud": aud, "exp": now - 600}), "RS256"),
            "expired",
        ),
        (
            "alg none",
            provider.mint(json!({"aud": aud}), "none"),
            "not a signed JWT",
        ),
        (
            "HS256 with the public key",
            provider.mint(json!({"aud": aud}), "HS256-public"),
            "HS256",
        ),
        (
            "unknown kid",
            provider.mint(json!({"aud": aud}), "RS256-stray"),
            "is not among",
        ),
        (
            "no scope of ours",
            provider.mint(json!({"aud": aud, "scope": "openid"}), "RS256"),
            "scope",
        ),
    ];
    for (what, token, reason) in &cases {
        let (status, challenge) = initialize_with(&base, token);
        assert!(status.contains(" 401"), "{what}: {status}");
        assert!(challenge.contains("invalid_token"), "{what}: {challenge}");
        assert!(challenge.contains(reason), "{what}: {challenge}");
    }
    let valid = provider.mint(json!({"aud": aud}), "RS256");
    assert!(
        initialize_with(&base, &valid).0.contains(" 200"),
        "the control token is refused"
    );
    stop(running);
}

#[test]
fn an_issuer_that_does_not_match_its_discovery_is_refused_at_start() {
    let provider = Provider::start();
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"fault": fault(&[])}}));
    let auth = format!("oidc:{}/", provider.issuer);
    let addr = format!("127.0.0.1:{}", free_port());
    let output = cmd
        .cmd()
        .args([
            "--config",
            "config.json",
            "serve",
            "--http",
            &addr,
            "--auth",
            &auth,
        ])
        .status(2)
        .stderr_any()
        .run();
    assert!(output.stderr.contains("--auth oidc:"), "{output}");
    assert!(output.stderr.contains("must match exactly"), "{output}");
}

/// What the Python SDK saw through a gateway in `mode` over the scoped tools (`lookup`, read
/// only; `erase`) whose overrides hold `clients`, with a token of `client`.
fn seen_with_clients(mode: &str, clients: Value, client: (&str, &str), probes: Value) -> Value {
    let mut seen = seen_by(&["fault"], mode, clients, vec![(client, probes)]);
    seen.remove(0)
}

/// What the Python SDK saw, once per `(client, probes)` of `visits`, through one gateway in
/// `mode` over `servers` (each the scoped tools) whose overrides hold `clients`.
fn seen_by(
    servers: &[&str],
    mode: &str,
    clients: Value,
    visits: Vec<((&str, &str), Value)>,
) -> Vec<Value> {
    let provider = Provider::start();
    let cmd = Cmd::new();
    let entry = crate::serve_oauth::scoped_tools(&cmd);
    let servers: serde_json::Map<String, Value> = (servers.iter())
        .map(|name| (name.to_string(), entry.clone()))
        .collect();
    let overrides = json!({"version": 1, "clients": clients}).to_string();
    let cmd = cmd
        .config_json(json!({"mcpServers": servers}))
        .trusted_overrides(&overrides);
    let (running, base) = gateway(&cmd, &provider, &["--mode", mode]);
    let seen = (visits.into_iter())
        .map(|(client, probes)| {
            let scope = match client {
                TEAM => "tools:all",
                _ => "tools:read",
            };
            sdk_sees(&cmd, &provider, &base, client, scope, probes)
        })
        .collect();
    stop(running);
    seen
}

fn listed(seen: &Value, name: &str) -> bool {
    seen["tools"].as_array().unwrap().iter().any(|t| t == name)
}

const READER: (&str, &str) = ("reader-app", "reader-secret");

#[test]
fn a_clients_allow_list_narrows_its_list_and_calls() {
    let clients = json!({"team-app": {"tools": ["fault__lookup"]}});
    let probes = json!([["fault__lookup", {}], ["fault__erase", {}]]);
    let seen = seen_with_clients("full", clients, TEAM, probes);
    assert!(listed(&seen, "fault__lookup"), "{seen}");
    assert!(
        !listed(&seen, "fault__erase"),
        "the list told of erase: {seen}"
    );
    assert_eq!(seen["probes"][0]["is_error"], false, "{seen}");
    let refused = seen["probes"][1]["rpc_error"].as_str().unwrap_or_default();
    assert!(refused.contains("unknown tool `fault__erase`"), "{seen}");
    assert!(
        !refused.contains("scope"),
        "the refusal told of erase: {seen}"
    );
}

#[test]
fn a_client_no_entry_names_reaches_nothing_without_a_star_entry() {
    let clients = json!({"team-app": {"tools": ["*"]}});
    let probes = json!([["fault__lookup", {}]]);
    let seen = seen_with_clients("full", clients, READER, probes);
    assert!(!listed(&seen, "fault__lookup"), "{seen}");
    let refused = seen["probes"][0]["rpc_error"].as_str().unwrap_or_default();
    assert!(refused.contains("unknown tool"), "{seen}");
}

#[test]
fn sparse_search_describe_and_calls_follow_the_allow_list() {
    let clients = json!({"team-app": {"tools": ["fault__lookup"]}});
    let probes = json!([
        ["search_tools", {"query": "erase every record"}],
        ["call_tool", {"name": "fault__erase", "arguments": {}}],
        ["describe_tool", {"name": "fault__erase"}],
        ["search_tools", {"query": "look a record up"}],
        ["call_tool", {"name": "fault__lookup", "arguments": {}}],
    ]);
    let seen = seen_with_clients("sparse", clients, TEAM, probes);
    let probes = seen["probes"].as_array().unwrap();
    let text = |i: usize| probes[i]["text"].as_str().unwrap_or_default().to_string();
    assert!(
        !text(0).contains("fault__erase"),
        "search told of erase: {seen}"
    );
    assert_eq!(probes[1]["is_error"], true, "{seen}");
    assert!(
        text(1).contains("no tool is named `fault__erase`"),
        "{seen}"
    );
    assert!(
        !text(2).contains("Erases"),
        "describe told of erase: {seen}"
    );
    assert!(
        text(3).contains("fault__lookup"),
        "search misses lookup: {seen}"
    );
    assert_eq!(probes[4]["is_error"], false, "{seen}");
}

/// Probes a client makes with names one letter short of `hidden`'s: an answer that suggests
/// `hidden` or lists its tools tells of it.
fn near_misses(hidden: &str) -> Value {
    let near = &hidden[..hidden.len() - 1];
    json!([
        ["search_tools", {"query": "look a record up", "limit": 25}],
        ["search_tools", {"query": "records", "server": near}],
        ["call_tool", {"name": format!("{near}__lookup"), "arguments": {}}],
        ["describe_tool", {"name": format!("{near}__lookup")}],
        ["discover", {"jsonpath": "$..name"}],
        [format!("{near}__lookup"), {}],
    ])
}

#[test]
fn each_client_is_told_only_of_the_servers_its_allow_list_reaches() {
    let clients = json!({"team-app": {"tools": ["ledger__*"]},
        "reader-app": {"tools": ["vault__*"]}});
    for mode in ["sparse", "full"] {
        let visits = vec![
            (TEAM, near_misses("vault")),
            (READER, near_misses("ledger")),
        ];
        let seen = seen_by(&["ledger", "vault"], mode, clients.clone(), visits);
        // The team's token reaches both ledger tools; the reader's (tools:read) vault's lookup.
        for (seen, own, hidden, count) in [
            (&seen[0], "ledger", "vault", 2),
            (&seen[1], "vault", "ledger", 1),
        ] {
            let told = json!([seen["initialize"], seen["listed"], seen["probes"]]).to_string();
            assert!(
                !told.contains(hidden),
                "{mode}: {own}'s client was told of {hidden}: {told}"
            );
            assert!(
                told.contains(own),
                "{mode}: {own}'s client was not told of {own}: {told}"
            );
            let instructions = seen["initialize"]["instructions"]
                .as_str()
                .unwrap_or_default();
            assert!(
                instructions.contains(&format!("fronts {count} tools on 1 servers")),
                "{mode}: {instructions}"
            );
            if mode == "sparse" {
                let search = &seen["listed"]["tools"][0]["description"];
                let said = format!("Search {count} tools by what you want done; then call_tool. Servers: {own} ({count}).");
                assert_eq!(search, &json!(said), "{seen}");
                let lookup = format!("{own}__lookup");
                assert!(
                    seen["probes"][0]["text"]
                        .as_str()
                        .unwrap()
                        .contains(&lookup),
                    "{seen}"
                );
            }
        }
    }
}
