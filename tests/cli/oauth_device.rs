//! Device authorization (RFC 8628, issue 26) against a real authorization server: the
//! certified `oidc-provider` with its device flow on (tests/fixtures/oidc_provider.mjs
//! `--device`), in front of our own gateway delegating to it (`serve --http --auth oidc:…`).
//! `auth login` shows a code; the test plays the person on the provider's device pages with
//! plain HTTP requests (no browser), approving or aborting; `auth login` polls until then.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;

use serde_json::{json, Value};

use crate::oauth_preregistered::watch_login;
use crate::serve_oidc::{gateway, Provider};
use crate::util::*;

/// One request of the person's browser (HTTP/1.0: a whole body, never chunked), with the
/// cookies so far, taking the ones it sets: the status, the `Location` (made absolute), the
/// body.
pub(crate) fn exchange(
    cookies: &mut BTreeMap<String, String>,
    method: &str,
    url: &str,
    form: Option<&str>,
) -> (u16, Option<String>, String) {
    let rest = url.strip_prefix("http://").expect("a loopback URL");
    let (authority, target) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let cookie: Vec<String> = cookies.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let body = form.unwrap_or_default();
    let mut request = format!(
        "{method} {target} HTTP/1.0\r\nhost: {authority}\r\ncookie: {}\r\ncontent-length: {}\r\n",
        cookie.join("; "),
        body.len()
    );
    if form.is_some() {
        request.push_str("content-type: application/x-www-form-urlencoded\r\n");
    }
    request.push_str("\r\n");
    request.push_str(body);
    let mut socket = TcpStream::connect(authority).expect("connect to the provider");
    socket.write_all(request.as_bytes()).expect("send");
    let mut bytes = Vec::new();
    socket.read_to_end(&mut bytes).expect("read");
    let answer = String::from_utf8_lossy(&bytes).to_string();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .unwrap_or("0")
        .parse()
        .unwrap();
    let mut location = None;
    for line in head.lines().skip(1) {
        let Some((name, value)) = line.split_once(": ") else {
            continue;
        };
        if name.eq_ignore_ascii_case("set-cookie") {
            if let Some((k, v)) = value.split(';').next().and_then(|c| c.split_once('=')) {
                cookies.insert(k.to_string(), v.to_string());
            }
        } else if name.eq_ignore_ascii_case("location") {
            let base = format!("http://{authority}");
            location = Some(match value.strip_prefix('/') {
                Some(path) => format!("{base}/{path}"),
                None => value.to_string(),
            });
        }
    }
    (status, location, body.to_string())
}

/// The hidden inputs of a page's form, form-encoded, with `extra` pairs after them.
fn hidden_form(page: &str, extra: &[(&str, &str)]) -> String {
    let mut pairs = Vec::new();
    for input in page.split("<input").skip(1) {
        let attr = |name: &str| {
            let start = input.find(&format!("{name}=\""))? + name.len() + 2;
            Some(input[start..].split('"').next()?.to_string())
        };
        if attr("type").as_deref() == Some("hidden") {
            pairs.push((attr("name").unwrap(), attr("value").unwrap_or_default()));
        }
    }
    pairs.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let encode = |text: &str| {
        text.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect::<String>()
    };
    let pairs: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect();
    pairs.join("&")
}

/// The person: opens the URI that carries the code, confirms it, then approves (logs in and
/// consents through the fixture's interaction hook) or aborts. The last page.
pub(crate) fn person(complete_uri: &str, approve: bool) -> String {
    let mut cookies = BTreeMap::new();
    let (status, _, page) = exchange(&mut cookies, "GET", complete_uri, None);
    assert_eq!(status, 200, "the code's page: {page}");
    let action = complete_uri.split('?').next().unwrap().to_string();
    let form = hidden_form(&page, &[]);
    let (status, _, confirm) = exchange(&mut cookies, "POST", &action, Some(&form));
    assert_eq!(status, 200, "the confirmation page: {confirm}");
    // The form carries `confirm=yes`; the abort button's `abort=yes` replaces it.
    let form = match approve {
        true => hidden_form(&confirm, &[]),
        false => hidden_form(&confirm, &[("abort", "yes")]).replace("&confirm=yes", ""),
    };
    let (mut status, mut next, mut page) = exchange(&mut cookies, "POST", &action, Some(&form));
    for _ in 0..10 {
        let Some(url) = next.filter(|_| (300..400).contains(&status)) else {
            break;
        };
        (status, next, page) = exchange(&mut cookies, "GET", &url, None);
    }
    assert_eq!(status, 200, "the last page: {page}");
    page
}

/// `auth login gw` with `flags`, with no display (a headless machine): the person is played
/// on the URI it shows (approving or not); whether it succeeded, its stdout and stderr.
fn login(cmd: &Cmd, flags: &[&str], approve: bool) -> (bool, String, String) {
    device_login(cmd, "gw", flags, &[], approve)
}

/// `auth login SERVER` with `flags` and `env` in `cmd`, with no display: the person is
/// played on the device URI it shows (approving or not); whether it succeeded, its stdout and
/// its stderr.
pub(crate) fn device_login(
    cmd: &Cmd,
    server: &str,
    flags: &[&str],
    env: &[(&str, &str)],
    approve: bool,
) -> (bool, String, String) {
    watch_login(cmd.dir(), server, flags, env, |line, _, _| {
        if let Some(rest) = line.trim().strip_prefix("(or open ") {
            let uri = rest
                .split_whitespace()
                .next()
                .unwrap()
                .trim_end_matches(',');
            person(uri, approve);
        }
    })
}

/// A client config naming the gateway with the provider's device client.
fn client_of(base: &str) -> Cmd {
    Cmd::new().config_json(json!({"mcpServers": {"gw": {"url": format!("{base}/mcp"),
        "oauth": {"clientId": "cli-device", "scopes": "tools:all"}}}}))
}

/// `auth login --device` shows the code and where to enter it; the person approves on the
/// provider's pages; the polls then get a token for our resource and a tool is called with it.
/// On a machine with no display, `auth login` alone takes the device flow (the provider
/// offers it). A person who aborts ends the login with `access_denied`, named.
#[test]
fn a_device_login_shows_a_code_polls_until_approved_and_calls() {
    let provider = Provider::start_with(&["--device", "1"]);
    let served = Cmd::new().config_json(json!({"mcpServers": {"fault": fault(&[])}}));
    let (_gateway, base) = gateway(&served, &provider, &["--mode", "full"]);

    let client = client_of(&base);
    let (ok, stdout, said) = login(&client, &["--device"], true);
    assert!(ok, "login failed: {stdout}\n{said}");
    assert!(said.contains("enter the code"), "{said}");
    let logged: Value = serde_json::from_str(&stdout).expect("login's JSON");
    assert_eq!(logged["issuer"], provider.issuer.as_str(), "{logged}");
    let out = client
        .cmd()
        .args(["--config", "config.json", "call", "gw", "fault__echo"])
        .args([r#"{"message":"hi"}"#, "--json"])
        .run();
    assert_eq!(out.json()["success"], true, "{out}");

    // Headless and offered: the device flow without asking for it.
    let headless = client_of(&base);
    let (ok, stdout, said) = login(&headless, &[], true);
    assert!(ok, "login failed: {stdout}\n{said}");
    assert!(said.contains("enter the code"), "{said}");

    let denied = client_of(&base);
    let (ok, stdout, said) = login(&denied, &["--device"], false);
    assert!(!ok, "{stdout}\n{said}");
    let error: Value = serde_json::from_str(&stdout).expect("the error as JSON");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("access_denied") && message.contains("token request"),
        "{message}"
    );
    assert!(message.contains(&format!("{base}/mcp")), "{message}");
}
