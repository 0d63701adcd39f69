//! Our own Client ID Metadata Document (issue 26): `auth client-metadata` prints the document,
//! the test hosts it over https on loopback (a certificate made by `openssl`, trusted by the
//! gateway alone through `SSL_CERT_FILE`), and `auth login` against our own built-in
//! authorization server (`serve --http --auth oauth`, which takes such documents and fetches
//! them; loopback documents only with `MCP_LAUNCH_DEV_CIMD_LOOPBACK=1`) names the document's
//! URL as its client instead of registering — from the server's `oauth.clientMetadataUrl` or
//! from `MCP_LAUNCH_CLIENT_METADATA_URL` — and registers dynamically when neither is set.
//! The test plays the person on the consent page (`auth approve`, then Allow).

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

use crate::oauth_device::{device_login, exchange};
use crate::oauth_preregistered::watch_login;
use crate::serve::eventually;
use crate::serve_oauth_cimd::gateway_with;
use crate::serve_oauth_ts::loopback_certificate;
use crate::serve_oidc::{stop, Provider};
use crate::util::*;

/// The server's name in the clients' configs: its loopback port (derived from the name) is
/// the one the document lists, and no other test logs in to a server of this name.
const SERVER: &str = "cimd-gateway";

/// Serves a directory over https on loopback (Python's `http.server` wrapped in TLS).
const HTTPS_FILES: &str = r#"
import functools, http.server, ssl, sys
port, cert, key, root = sys.argv[1:5]
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=root)
handler.log_message = lambda *args: None
server = http.server.HTTPServer(("127.0.0.1", int(port)), handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)
server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
"#;

/// The https file server, in its own process group; killed on drop.
struct Documents {
    child: Child,
    port: u16,
}

impl Documents {
    fn serve(root: &std::path::Path, cert: &str, key: &str) -> Self {
        let port = free_port();
        let child = Command::new(sdk_python())
            .args(["-c", HTTPS_FILES, &port.to_string(), cert, key])
            .arg(root)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("start the https file server");
        eventually(20, "the document server listens", || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        Documents { child, port }
    }
}

impl Drop for Documents {
    fn drop(&mut self) {
        let pgid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

/// The person on our consent page at `authorize_url`: the operator allows the request
/// (`auth approve` in the gateway's home), then Allow; where the browser is sent back.
fn consent(gateway: &Cmd, authorize_url: &str) -> String {
    let mut cookies = BTreeMap::new();
    let (status, _, page) = exchange(&mut cookies, "GET", authorize_url, None);
    assert_eq!(status, 200, "the consent page: {page}");
    let field = |name: &str| {
        let at = page.find(&format!("name=\"{name}\" value=\"")).expect(name);
        page[at + name.len() + 15..]
            .split('"')
            .next()
            .unwrap()
            .to_string()
    };
    let (request, csrf) = (field("request"), field("csrf"));
    gateway.cmd().args(["auth", "approve", &request]).run();
    let action = authorize_url.split('?').next().unwrap();
    let form = format!("request={request}&csrf={csrf}&code=&action=allow");
    let (status, location, body) = exchange(&mut cookies, "POST", action, Some(&form));
    assert_eq!(status, 303, "consent: {body}");
    location.expect("a redirect back")
}

/// `auth login SERVER --no-browser` in `client` with `env`, the person played: its JSON.
fn login(gateway: &Cmd, client: &Cmd, env: &[(&str, &str)]) -> Value {
    let (ok, stdout, said) = watch_login(
        client.dir(),
        SERVER,
        &["--no-browser"],
        env,
        |line, _, child| {
            if line.starts_with("http") {
                let redirect = consent(gateway, line.trim());
                writeln!(child.stdin.take().unwrap(), "{redirect}").unwrap();
            }
        },
    );
    assert!(ok, "login failed: {stdout}\n{said}");
    serde_json::from_str(&stdout).expect("login's JSON")
}

/// Hosts the document `auth client-metadata` prints for `client` as `root`/mcp-launch.json:
/// the document.
fn host_document(client: &Cmd, root: &std::path::Path) -> Value {
    let printed = (client.cmd())
        .args([
            "--config",
            "config.json",
            "auth",
            "client-metadata",
            "--json",
        ])
        .run();
    std::fs::write(root.join("mcp-launch.json"), &printed.stdout).unwrap();
    printed.json()
}

/// A client project naming the gateway with `oauth` (none when null).
fn client(base: &str, oauth: Value) -> Cmd {
    let mut entry = json!({"url": format!("{base}/mcp")});
    if !oauth.is_null() {
        entry["oauth"] = oauth;
    }
    Cmd::new().config_json(json!({"mcpServers": {SERVER: entry}}))
}

/// A tool called through the login of `client`.
fn echo(client: &Cmd) {
    let called = (client.cmd())
        .args(["--config", "config.json", "call", SERVER, "fault__echo"])
        .args([r#"{"message":"hi"}"#, "--json"])
        .run();
    assert_eq!(called.json()["success"], true, "{called}");
}

/// Marks the login of `client` expired in its token store (the 0600 file): the grant before.
fn expire(client: &Cmd) -> Value {
    let path = client.path(".local/state/mcp-launch/oauth/tokens.json");
    let mut grants: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let grant = grants.as_object_mut().unwrap().values_mut().next().unwrap();
    let before = grant.clone();
    grant["expires_at"] = json!(1);
    std::fs::write(&path, grants.to_string()).unwrap();
    before
}

/// The client id `auth status` shows for the login of `client`.
fn client_id(client: &Cmd) -> String {
    let status = client.cmd().args(["auth", "status", "--json"]).run().json();
    status["servers"][0]["clientId"]
        .as_str()
        .unwrap_or_else(|| panic!("no login: {status}"))
        .to_string()
}

#[test]
fn a_login_names_our_hosted_document_where_the_server_takes_them_else_registers() {
    let gateway = Cmd::new().config_json(json!({"mcpServers": {"fault": fault(&[])}}));
    let (cert, key) = loopback_certificate(gateway.dir());
    let root = gateway.path("hosted");
    std::fs::create_dir_all(&root).unwrap();
    let documents = Documents::serve(&root, &cert, &key);
    let url = format!("https://127.0.0.1:{}/mcp-launch.json", documents.port);
    let (running, base) = gateway_with(&gateway, true, &[("SSL_CERT_FILE", &cert)]);

    // The server's own key: the document printed is the one hosted.
    let by_key = client(&base, json!({"clientMetadataUrl": url}));
    let document = host_document(&by_key, &root);
    assert_eq!(document["client_id"], url.as_str(), "{document}");
    let trusted = [("SSL_CERT_FILE", cert.as_str())];
    login(&gateway, &by_key, &trusted);
    assert_eq!(client_id(&by_key), url, "it registered instead");
    echo(&by_key);
    // Expired: the refresh goes as the document's client, and its tokens are rotated.
    let held = expire(&by_key);
    echo(&by_key);
    let grant = expire(&by_key);
    assert_eq!(grant["client_id"], url.as_str(), "{grant}");
    assert_ne!(
        grant["refresh_token"], held["refresh_token"],
        "no refresh: {grant}"
    );

    // The default for every server: the variable.
    let by_default = client(&base, Value::Null);
    login(
        &gateway,
        &by_default,
        &[("MCP_LAUNCH_CLIENT_METADATA_URL", &url), trusted[0]],
    );
    assert_eq!(client_id(&by_default), url, "it registered instead");

    // Neither: a dynamic registration, as before.
    let registered = client(&base, Value::Null);
    login(&gateway, &registered, &trusted);
    let id = client_id(&registered);
    assert!(!id.starts_with("https://"), "{id}");

    // A server added since the document was printed: said before the browser opens.
    let unlisted = "cimd-unlisted";
    let added = Cmd::new().config_json(json!({"mcpServers": {unlisted: {
        "url": format!("{base}/mcp"), "oauth": {"clientMetadataUrl": url}}}}));
    let flags = ["--no-browser"];
    let (ok, stdout, said) =
        watch_login(added.dir(), unlisted, &flags, &trusted, |line, _, child| {
            if let (true, Some(mut stdin)) = (line.starts_with("http"), child.stdin.take()) {
                let _ = writeln!(stdin, "the browser was sent: the document went unchecked");
            }
        });
    assert!(!ok, "{stdout}\n{said}");
    let error: Value = serde_json::from_str(&stdout).expect("the error as JSON");
    assert_eq!(error["error"]["type"], "auth_client_rejected", "{error}");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("does not list the redirect URI"),
        "{message}"
    );
    let help = error["error"]["help"].as_str().unwrap();
    assert!(
        help.contains("mcp-launch auth client-metadata --url"),
        "{help}"
    );

    let listed = gateway
        .cmd()
        .args(["auth", "clients", "--json"])
        .run()
        .json();
    let ids: Vec<&str> = listed["clients"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["client_id"].as_str())
        .collect();
    assert!(
        ids.contains(&url.as_str()) && ids.contains(&id.as_str()),
        "{listed}"
    );
    stop(running);
}

/// The document lists the redirect URI of each remote server that logs in by it (its own
/// port, or its `callbackPort`), and the ports named; not a server registered by hand, nor
/// one naming another document. A URL that cannot be a client id is refused naming where it
/// came from: the server, the file and the key, or the variable.
#[test]
fn the_document_lists_the_logins_redirects_and_bad_urls_are_named() {
    let url = "https://me.example/mcp-launch.json";
    let cmd = Cmd::new().config_json(json!({"mcpServers": {
        "plain": {"url": "https://a.example/mcp"},
        "legacy": {"type": "sse", "url": "https://b.example/sse"},
        "fixed": {"url": "https://c.example/mcp",
            "oauth": {"clientMetadataUrl": url, "callbackPort": 8080}},
        "by-hand": {"url": "https://d.example/mcp", "oauth": {"clientId": "app"}},
        "other": {"url": "https://e.example/mcp",
            "oauth": {"clientMetadataUrl": "https://me.example/other.json"}},
        "local": {"command": "echo"},
    }}));
    let printed = (cmd.cmd())
        .args(["--config", "config.json", "auth", "client-metadata"])
        .args(["--url", url, "--redirect-port", "9000", "--json"])
        .run()
        .json();
    let uris: Vec<&str> = printed["redirect_uris"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(uris.len(), 4, "{printed}");
    assert!(uris[..2].iter().all(|u| u.starts_with("http://127.0.0.1:")));
    assert_eq!(
        uris[2..],
        [
            "http://localhost:8080/callback",
            "http://127.0.0.1:9000/callback"
        ]
    );
    assert_eq!(printed["token_endpoint_auth_method"], "none", "{printed}");

    let bad = json!({"mcpServers": {"remote": {"url": "https://a.example/mcp",
        "oauth": {"clientMetadataUrl": "http://me.example/c.json"}}}});
    for command in [&["login", "remote"][..], &["client-metadata"]] {
        let message = refused(Cmd::new().config_json(bad.clone()), command, &[]);
        for named in [
            "config.json",
            "\"remote\"",
            "oauth.clientMetadataUrl",
            "https",
        ] {
            assert!(message.contains(named), "{command:?}, {named}: {message}");
        }
    }
    let plain =
        Cmd::new().config_json(json!({"mcpServers": {"remote": {"url": "https://a.example/mcp"}}}));
    let message = refused(
        plain,
        &["login", "remote"],
        &[("MCP_LAUNCH_CLIENT_METADATA_URL", "https://me.example/")],
    );
    assert!(
        message.contains("MCP_LAUNCH_CLIENT_METADATA_URL") && message.contains("path"),
        "{message}"
    );
}

/// The message of `auth COMMAND…` in `cmd` with `env`, refused as a usage error.
fn refused(cmd: Cmd, command: &[&str], env: &[(&str, &str)]) -> String {
    let mut run = (cmd.cmd())
        .args(["--config", "config.json", "auth"])
        .args(command)
        .args(["--json"])
        .status(2);
    for (name, value) in env {
        run = run.env(name, value);
    }
    let out = run.run();
    out.json()["error"]["message"].as_str().unwrap().to_string()
}

/// Device authorization by our document: the certified OpenID provider, taking both Client ID
/// Metadata Documents (its `clientIdMetadataDocument` feature) and device logins, in front of
/// a gateway delegating to it. `auth login --device` names the hosted document as its client
/// (no registration: the provider offers none), the provider fetches it, the person approves
/// on the provider's pages, and a tool is called with the token.
#[test]
fn a_device_login_names_our_hosted_document_as_its_client() {
    let host = Cmd::new();
    let (cert, key) = loopback_certificate(host.dir());
    let root = host.path("hosted");
    std::fs::create_dir_all(&root).unwrap();
    let documents = Documents::serve(&root, &cert, &key);
    let url = format!("https://127.0.0.1:{}/mcp-launch.json", documents.port);
    let trusted = [("NODE_EXTRA_CA_CERTS", cert.as_str())];
    let provider = Provider::start_in(&["--device", "1", "--cimd", "1"], &trusted);
    let served = Cmd::new().config_json(json!({"mcpServers": {"fault": fault(&[])}}));
    let (_gateway, base) = crate::serve_oidc::gateway(&served, &provider, &["--mode", "full"]);

    let by_document = client(
        &base,
        json!({"clientMetadataUrl": url, "scopes": "tools:all"}),
    );
    host_document(&by_document, &root);
    let env = [("SSL_CERT_FILE", cert.as_str())];
    let (ok, stdout, said) = device_login(&by_document, SERVER, &["--device"], &env, true);
    assert!(ok, "login failed: {stdout}\n{said}");
    assert!(said.contains("enter the code"), "{said}");
    assert_eq!(
        client_id(&by_document),
        url,
        "it did not log in as the document"
    );
    echo(&by_document);
}
