//! `serve --http --auth oidc:ISSUER --oidc-client-id ID` against a real OpenID provider that
//! offers no dynamic registration (`oidc-provider`, tests/fixtures/oidc_provider.mjs, with one
//! client registered by hand for the gateway): MCP clients register with us, and we proxy
//! their login to the provider (issue 27, agentgateway's pattern). The official Python SDK's
//! OAuth client logs in, calls and refreshes; the refusals are driven with plain HTTP, the
//! test playing the browser on the provider's pages.

use std::collections::BTreeMap;
use std::process::Command;

use base64::Engine;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};

use crate::oauth_device::exchange;
use crate::serve::eventually;
use crate::serve_oidc::{http, Provider};
use crate::util::*;

const SECRET: &str = "gw-proxy-secret";
const REDIRECT: &str = "http://127.0.0.1:9/callback";
/// A PKCE verifier and its S256 challenge.
const VERIFIER: &str = "dBjftJeZ4CVP-mJ0mwd2ZUoJIRBiwEqQpnR3B8pTTTM";
const CHALLENGE: &str = "IGhphATrFKcFKTPhu8JzpChVWFFrGeAB33lJrh5TJpM";

/// The provider (its client `gw-proxy` for our callback, refresh tokens rotated) and the
/// gateway proxying its login: the gateway's process and base URL.
fn proxied(cmd: &Cmd) -> (Provider, Running, String) {
    let addr = format!("127.0.0.1:{}", free_port());
    let base = format!("http://{addr}");
    let callback = format!("{base}/oauth/callback");
    let provider = Provider::start_with(&["--proxy-callback", &callback, "--rotate-refresh", "1"]);
    let auth = format!("oidc:{}", provider.issuer);
    let running = cmd
        .cmd()
        .env("MCP_LAUNCH_OIDC_CLIENT_SECRET", SECRET)
        .args(["--config", "config.json", "serve", "--mode", "full"])
        .args([
            "--http",
            &addr,
            "--auth",
            &auth,
            "--oidc-client-id",
            "gw-proxy",
        ])
        .stderr_any()
        .spawn();
    eventually(20, "the gateway listens", || {
        std::net::TcpStream::connect(&addr).is_ok()
    });
    (provider, running, base)
}

fn get_json(base: &str, path: &str) -> Value {
    let (head, body) = http(base, "GET", path, &[], "");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}\n{head}\n{body}"))
}

/// The claims of a JWT, unverified (the gateway verified it).
fn claims(jwt: &str) -> Value {
    let payload = jwt.split('.').nth(1).expect("a JWT");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

#[test]
fn the_python_sdk_registers_here_logs_in_at_the_provider_calls_and_refreshes() {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"fault": fault(&[])}}));
    let (provider, running, base) = proxied(&cmd);
    let resource = get_json(&base, "/.well-known/oauth-protected-resource/mcp");
    assert_eq!(
        resource["authorization_servers"],
        json!([base]),
        "{resource}"
    );
    let server = get_json(&base, "/.well-known/oauth-authorization-server");
    assert_eq!(server["issuer"], base, "{server}");
    assert_eq!(
        server["registration_endpoint"],
        format!("{base}/register"),
        "{server}"
    );
    assert_eq!(server["code_challenge_methods_supported"], json!(["S256"]));

    let mut client = Command::new(sdk_python());
    client
        .arg(manifest_dir().join("tests/fixtures/oauth_client.py"))
        .arg(format!("{base}/mcp"))
        .args([BIN, "fault__echo"])
        .env("MCP_LAUNCH_TEST_PROVIDER_LOGIN", "1");
    let seen = client_json(client, cmd.dir(), "the Python SDK through the login proxy");
    let hops = seen["login_hops"].as_array().unwrap();
    assert!(
        hops.iter()
            .any(|h| h == &json!(format!("{}/auth", provider.issuer))),
        "the login never reached the provider: {seen}"
    );
    assert!(
        hops.iter()
            .any(|h| h == &json!(format!("{base}/oauth/callback"))),
        "{seen}"
    );
    assert_eq!(seen["first_call_error"], false, "{seen}");
    assert_eq!(seen["second_call_error"], false, "{seen}");
    assert_eq!(seen["token_sets"], 2, "no refresh happened: {seen}");
    assert_eq!(seen["refresh_tokens"], 2, "not rotated: {seen}");
    // The token the client holds is the provider's, for our endpoint.
    let held = claims(seen["access_token"].as_str().unwrap());
    assert_eq!(held["iss"], provider.issuer, "{held}");
    assert_eq!(held["aud"], format!("{base}/mcp"), "{held}");
    assert!(
        seen["client_id"].as_str().unwrap() != "gw-proxy",
        "the provider's client was handed out: {seen}"
    );
    kill(Pid::from_raw(running.pid()), Signal::SIGTERM).expect("signal the gateway");
    let output = running.wait();
    assert!(
        !output.stderr.contains(SECRET),
        "the secret was shown: {output}"
    );
}

/// A registered public client of the proxy: its id.
fn register(base: &str) -> String {
    let body = json!({"client_name": "t", "redirect_uris": [REDIRECT],
        "token_endpoint_auth_method": "none"})
    .to_string();
    let (head, answer) = http(
        base,
        "POST",
        "/register",
        &[("content-type", "application/json")],
        &body,
    );
    let answer: Value = serde_json::from_str(&answer).unwrap_or_else(|_| panic!("{head}"));
    assert!(answer.get("client_secret").is_none(), "{answer}");
    answer["client_id"].as_str().unwrap().to_string()
}

/// Our `/authorize` URL for `client` with `changes` over a valid request (a null drops one).
fn authorize_url(base: &str, client: &str, changes: Value) -> String {
    let mut params = json!({"response_type": "code", "client_id": client,
        "redirect_uri": REDIRECT, "code_challenge": CHALLENGE,
        "code_challenge_method": "S256", "state": "client-state", "scope": "tools:all"});
    for (name, value) in changes.as_object().unwrap() {
        params[name] = value.clone();
    }
    let mut url = reqwest::Url::parse(&format!("{base}/authorize")).unwrap();
    for (name, value) in params.as_object().unwrap() {
        if let Some(value) = value.as_str() {
            url.query_pairs_mut().append_pair(name, value);
        }
    }
    url.to_string()
}

/// The browser: follows redirects from `url` (cookies kept) until one goes to the client's
/// redirect URI; each place visited, and the query of that last one. `at_provider` may
/// change a place before it is visited (to refuse on the provider's page).
fn browse(
    url: &str,
    at_provider: impl Fn(&str) -> String,
) -> (Vec<String>, BTreeMap<String, String>) {
    let mut cookies = BTreeMap::new();
    let (mut url, mut visited) = (url.to_string(), Vec::new());
    for _ in 0..15 {
        url = at_provider(&url);
        visited.push(url.clone());
        let (status, location, body) = exchange(&mut cookies, "GET", &url, None);
        let location = location.unwrap_or_else(|| panic!("HTTP {status} at {url}: {body}"));
        if let Some(query) = location.strip_prefix(&format!("{REDIRECT}?")) {
            let query = reqwest::Url::parse(&format!("http://x/?{query}")).unwrap();
            return (visited, query.query_pairs().into_owned().collect());
        }
        url = location;
    }
    panic!("no way back to the client from {url}")
}

/// `POST /token` with `form`: the status line and the JSON answer.
fn token(base: &str, form: &[(&str, &str)]) -> (String, Value) {
    let mut body = reqwest::Url::parse("http://x/").unwrap();
    body.query_pairs_mut().extend_pairs(form);
    let form_type = [("content-type", "application/x-www-form-urlencoded")];
    let (head, answer) = http(base, "POST", "/token", &form_type, body.query().unwrap());
    let status = head.lines().next().unwrap_or_default().to_string();
    (status, serde_json::from_str(&answer).unwrap_or_default())
}

fn redeem(base: &str, client: &str, code: &str, verifier: &str) -> (String, Value) {
    let form = [
        ("grant_type", "authorization_code"),
        ("client_id", client),
        ("code", code),
        ("redirect_uri", REDIRECT),
        ("code_verifier", verifier),
    ];
    token(base, &form)
}

fn renew(base: &str, client: &str, refresh: &str) -> (String, Value) {
    let form = [
        ("grant_type", "refresh_token"),
        ("client_id", client),
        ("refresh_token", refresh),
    ];
    token(base, &form)
}

/// The head of `GET url` (no redirect followed).
fn head_of(url: &str) -> String {
    let mut cookies = BTreeMap::new();
    let (status, location, _) = exchange(&mut cookies, "GET", url, None);
    format!("{status} {}", location.unwrap_or_default())
}

#[test]
fn the_login_proxy_refuses_what_the_built_in_server_refuses() {
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"fault": fault(&[])}}));
    let (_provider, running, base) = proxied(&cmd);
    let client = register(&base);
    let url = |changes: Value| authorize_url(&base, &client, changes);

    // Who is asking, and where the answer goes, are checked before anything is redirected.
    let unknown = authorize_url(&base, "nobody", json!({}));
    assert_eq!(
        head_of(&unknown),
        "400 ",
        "an unknown client was redirected"
    );
    let elsewhere = url(json!({"redirect_uri": "http://127.0.0.1:9/other"}));
    assert_eq!(head_of(&elsewhere), "400 ", "an unregistered redirect");
    for pkce in [
        json!({"code_challenge": null}),
        json!({"code_challenge_method": "plain"}),
    ] {
        let said = head_of(&url(pkce.clone()));
        assert!(
            said.starts_with(&format!(
                "303 {REDIRECT}?error=invalid_request&state=client-state"
            )),
            "{pkce}: {said}"
        );
    }
    let (status, _, page) = exchange(
        &mut BTreeMap::new(),
        "GET",
        &format!("{base}/oauth/callback?code=x&state=made-up"),
        None,
    );
    assert_eq!(status, 400, "a state we never sent: {page}");

    // A login through the provider: our code, once, with the right verifier only.
    let (visited, answer) = browse(&url(json!({})), str::to_string);
    assert_eq!(answer["state"], "client-state", "{answer:?}");
    assert_eq!(answer["iss"], base, "{answer:?}");
    let code = &answer["code"];
    let (status, tokens) = redeem(&base, &client, code, VERIFIER);
    assert!(status.contains(" 200"), "{status} {tokens}");
    let (status, replayed) = redeem(&base, &client, code, VERIFIER);
    assert!(
        status.contains(" 400"),
        "a replayed code: {status} {replayed}"
    );
    assert_eq!(replayed["error"], "invalid_grant");
    let callback = visited
        .iter()
        .find(|v| v.contains("/oauth/callback"))
        .unwrap();
    assert!(
        head_of(callback).starts_with("400"),
        "the provider's answer was taken twice"
    );
    let (_, answer) = browse(&url(json!({})), str::to_string);
    let wrong = "A".repeat(43);
    let (status, refused) = redeem(&base, &client, &answer["code"], &wrong);
    assert!(status.contains(" 400"), "a wrong verifier: {refused}");
    assert!(refused["error_description"]
        .as_str()
        .unwrap()
        .contains("PKCE"));

    // Refresh: for its client only; rotated; the old one again ends the login.
    let first = tokens["refresh_token"].as_str().unwrap();
    let other = register(&base);
    let (status, refused) = renew(&base, &other, first);
    assert!(
        status.contains(" 400"),
        "another client's refresh: {refused}"
    );
    let (status, renewed) = renew(&base, &client, first);
    assert!(status.contains(" 200"), "{status} {renewed}");
    let second = renewed["refresh_token"].as_str().unwrap();
    assert_ne!(first, second, "not rotated");
    let (status, refused) = renew(&base, &client, first);
    assert!(status.contains(" 400"), "a used refresh token: {refused}");
    // Refused here, before the provider is asked (which would refuse it too).
    let said = refused["error_description"].as_str().unwrap_or_default();
    assert!(said.contains("already used"), "{refused}");
    let (_, refused) = renew(&base, &client, second);
    assert_eq!(
        refused["error"], "invalid_grant",
        "its login lives on: {refused}"
    );

    // The person refuses at the provider: the client hears it at its redirect, with its state.
    let refuse = |place: &str| match place.split_once("/interaction/") {
        Some((_, uid)) if !uid.contains('/') => format!("{place}/abort"),
        _ => place.to_string(),
    };
    let (_, answer) = browse(&url(json!({})), refuse);
    assert_eq!(answer["error"], "access_denied", "{answer:?}");
    assert_eq!(
        answer["error_description"], "the person said no",
        "{answer:?}"
    );
    assert_eq!(answer["state"], "client-state", "{answer:?}");
    assert_eq!(answer["iss"], base, "{answer:?}");
    assert!(!answer.contains_key("code"), "{answer:?}");

    kill(Pid::from_raw(running.pid()), Signal::SIGTERM).expect("signal the gateway");
    let output = running.wait();
    assert!(!output.stderr.contains(SECRET), "{output}");
}
