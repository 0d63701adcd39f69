//! `serve --http --auth oauth` with clients nobody here wrote: the official TypeScript SDK's
//! auth (an OAuthClientProvider: discovery, registration, consent given by the test through
//! `auth approve`, token, call, refresh) and the MCP Inspector's CLI, on loopback and through
//! `--tunnel quick`. The fake cloudflared plays Cloudflare's edge there: requests to the public
//! `https://…trycloudflare.com` reach the gateway with that `Host`, and the clients only ever
//! know the public URL — which must then be the issuer, the resource and the tokens' audience
//! (issue 27).

use std::path::Path;
use std::process::Command;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};

use crate::serve::eventually;
use crate::util::*;

/// The quick tunnel's hostname the fake cloudflared is told to make up.
const HOST: &str = "quiet-orbit-amber-lagoon.trycloudflare.com";

/// A running `serve --http --auth oauth` over the fault server, with or without a tunnel.
struct Served {
    running: Running,
    /// What clients are given: `http://127.0.0.1:PORT/mcp`, or the tunnel's public URL.
    url: String,
    /// The fake edge's port, with a tunnel.
    edge: Option<u16>,
}

impl Served {
    fn stop(self) -> Output {
        kill(Pid::from_raw(self.running.pid()), Signal::SIGTERM).expect("signal the gateway");
        self.running.wait()
    }
}

fn project() -> Cmd {
    Cmd::new().config_json(json!({"mcpServers": {"fault": fault(&[])}}))
}

/// `serve --http` on a free loopback port: `--tunnel quick` (OAuth by default) or
/// `--auth oauth`.
fn serve(cmd: &Cmd, tunnel: bool) -> Served {
    serve_with(cmd, tunnel, |serve| serve)
}

/// As [`serve`], the command changed by `change` first (environment, expected status).
fn serve_with(cmd: &Cmd, tunnel: bool, change: impl FnOnce(Cmd) -> Cmd) -> Served {
    let addr = format!("127.0.0.1:{}", free_port());
    let edge = free_port();
    let mut serve = cmd
        .cmd()
        .args(["--config", "config.json", "serve", "--mode", "full"])
        .args(["--http", &addr])
        .env("MCP_LAUNCH_CLOUDFLARED", &crate::launch::fake_cloudflared())
        .env("FAKE_CLOUDFLARED_HOSTNAME", HOST)
        .env("FAKE_CLOUDFLARED_EDGE_PORT", &edge.to_string())
        .stderr_any();
    serve = match tunnel {
        true => serve.args(["--tunnel", "quick"]),
        false => serve.args(["--auth", "oauth"]),
    };
    let running = change(serve).spawn();
    let (url, edge, reached) = match tunnel {
        true => (
            format!("https://{HOST}/mcp"),
            Some(edge),
            format!("127.0.0.1:{edge}"),
        ),
        false => (format!("http://{addr}/mcp"), None, addr.clone()),
    };
    eventually(30, "the gateway answers", || {
        std::net::TcpStream::connect(&reached).is_ok()
    });
    Served { running, url, edge }
}

/// The TypeScript SDK's OAuth client against `served`, with `extra` flags; what it saw.
fn ts_client(dir: &Path, served: &Served, extra: &[&str]) -> Value {
    let mut command = Command::new(crate::strict_clients::node22());
    command
        .arg(manifest_dir().join("tests/fixtures/ts_oauth_client.mjs"))
        .args([
            "--sdk",
            &manifest_dir().join(".deps/sdk-ts").display().to_string(),
        ])
        .args(["--url", &served.url, "--bin", BIN])
        .args(extra);
    if let Some(edge) = served.edge {
        command.args(["--edge", &edge.to_string()]);
    }
    let seen = client_json(command, dir, "the TypeScript SDK's OAuth client");
    assert!(seen.get("error").is_none(), "the client failed: {seen}");
    seen
}

/// The whole flow, and its checks shared by loopback and tunnel: `base` is what the client was
/// given (the issuer it must find).
fn logs_in_calls_and_refreshes(dir: &Path, served: &Served, base: &str) -> Value {
    let seen = ts_client(dir, served, &["--tool", "fault__echo"]);
    assert_eq!(seen["issuer"], base, "{seen}");
    assert_eq!(seen["authorization_server"], base, "{seen}");
    assert_eq!(seen["resource"], served.url, "{seen}");
    assert_eq!(seen["iss_param"], base, "RFC 9207: {seen}");
    assert_eq!(seen["state_echoed"], true, "{seen}");
    assert_eq!(seen["consent_status"], 303, "{seen}");
    assert!(listed(&seen, "fault__echo"), "{seen}");
    assert_eq!(seen["first_call"], "hi", "{seen}");
    assert_eq!(
        seen["second_call"], "hi",
        "no call after the refresh: {seen}"
    );
    assert_eq!(seen["token_sets"], 2, "no refresh happened: {seen}");
    assert_eq!(seen["refresh_tokens"], 2, "not rotated: {seen}");
    seen
}

fn listed(seen: &Value, name: &str) -> bool {
    seen["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t == name))
}

#[test]
fn the_typescript_sdk_logs_in_calls_and_refreshes_on_loopback() {
    let cmd = project();
    let served = serve(&cmd, false);
    let base = served.url.trim_end_matches("/mcp").to_string();
    logs_in_calls_and_refreshes(cmd.dir(), &served, &base);
    let clients = cmd.cmd().args(["auth", "clients", "--json"]).run().json();
    assert_eq!(
        clients["clients"][0]["name"], "typescript sdk test",
        "{clients}"
    );
    served.stop();
}

/// A certificate for `127.0.0.1` made here (`openssl`), trusted by the gateway alone through
/// `SSL_CERT_FILE`: the certificate's and the key's paths.
pub(crate) fn loopback_certificate(dir: &Path) -> (String, String) {
    let (cert, key) = (dir.join("cimd-cert.pem"), dir.join("cimd-key.pem"));
    let made = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
        ])
        .args(["-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1"])
        // Not a CA: a CA certificate is refused as a server's own (webpki).
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .args(["-addext", "extendedKeyUsage=serverAuth", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl makes the document server's certificate");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    (cert.display().to_string(), key.display().to_string())
}

/// The TypeScript SDK names itself by its Client ID Metadata Document (`clientMetadataUrl`,
/// served over https on loopback: the SDK takes https URLs only) instead of registering, is
/// let in by the operator, calls and refreshes; `auth clients` lists it under its URL.
#[test]
fn the_typescript_sdk_logs_in_by_its_metadata_document_and_refreshes() {
    let cmd = project();
    let (cert, key) = loopback_certificate(cmd.dir());
    let served = serve_with(&cmd, false, |serve| {
        serve
            .env("SSL_CERT_FILE", &cert)
            .env("MCP_LAUNCH_DEV_CIMD_LOOPBACK", "1")
    });
    let flags = [
        "--tool",
        "fault__echo",
        "--cimd-cert",
        &cert,
        "--cimd-key",
        &key,
    ];
    let seen = ts_client(cmd.dir(), &served, &flags);
    let url = seen["document_url"].as_str().expect("a document URL");
    assert_eq!(seen["client_id"], url, "it registered instead: {seen}");
    assert!(
        seen["document_fetches"].as_u64() >= Some(1),
        "never fetched: {seen}"
    );
    assert_eq!(seen["consent_status"], 303, "{seen}");
    assert_eq!(seen["first_call"], "hi", "{seen}");
    assert_eq!(
        seen["second_call"], "hi",
        "no call after the refresh: {seen}"
    );
    assert_eq!(seen["refresh_tokens"], 2, "not rotated: {seen}");
    let clients = cmd.cmd().args(["auth", "clients", "--json"]).run().json();
    assert_eq!(clients["clients"][0]["client_id"], url, "{clients}");
    assert_eq!(
        clients["clients"][0]["name"], "typescript sdk cimd",
        "{clients}"
    );
    served.stop();
}

/// Through the tunnel the SDK is given only the public URL; it checks that the metadata's
/// `resource` is that URL (RFC 9728 §3.3) and finds the issuer there, so a gateway that still
/// named its loopback address fails here.
#[test]
fn the_typescript_sdk_logs_in_through_a_quick_tunnel_at_the_public_url() {
    let cmd = project();
    let served = serve(&cmd, true);
    let base = format!("https://{HOST}");
    let seen = logs_in_calls_and_refreshes(cmd.dir(), &served, &base);
    assert_eq!(
        seen["origins"],
        json!([base]),
        "a loopback URL leaked: {seen}"
    );
    let output = served.stop();
    assert!(
        output.stderr.contains(&format!("public at {base}/mcp")),
        "{output}"
    );
    assert!(output.stderr.contains("claude.ai: Settings"), "{output}");
    assert!(output.stderr.contains("ChatGPT: Settings"), "{output}");
}

/// A login made on loopback holds tokens for `http://127.0.0.1:PORT/mcp`: once the same state
/// serves the public URL, the access token is refused there (RFC 8707 audience) and its
/// refresh token mints nothing for it.
#[test]
fn a_loopback_login_is_refused_once_the_public_url_is_the_resource() {
    let cmd = project();
    let local = serve(&cmd, false);
    let seen = ts_client(cmd.dir(), &local, &["--tool", "fault__echo"]);
    local.stop();
    let public = serve(&cmd, true);
    let access = seen["access_token"].as_str().unwrap();
    let presented = ts_client(cmd.dir(), &public, &["--present", access]);
    assert_eq!(presented["status"], 401, "{presented}");
    let challenge = presented["www_authenticate"].as_str().unwrap_or_default();
    assert!(challenge.contains("invalid_token"), "{presented}");
    let metadata = format!("https://{HOST}/.well-known/oauth-protected-resource/mcp");
    assert!(challenge.contains(&metadata), "{presented}");
    let refresh = seen["refresh_token"].as_str().unwrap();
    let client = seen["client_id"].as_str().unwrap();
    let refreshed = ts_client(
        cmd.dir(),
        &public,
        &["--refresh", refresh, "--client", client],
    );
    assert_eq!(refreshed["authorization_server"], format!("https://{HOST}"));
    assert!(refreshed.get("refreshed").is_none(), "{refreshed}");
    let error = refreshed["refresh_error"].as_str().unwrap_or_default();
    assert!(error.starts_with("invalid_grant"), "{refreshed}");
    public.stop();
}

/// The MCP Inspector's CLI (Node 22, installed beside the conformance suite), its output as
/// JSON, and whether it succeeded.
fn inspector(args: &[&str], dir: &Path) -> (bool, String, String) {
    let bin = manifest_dir().join(".deps/conformance/node_modules/.bin");
    assert!(
        bin.join("mcp-inspector").exists(),
        "run scripts/install-test-deps.sh"
    );
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new(bin.join("mcp-inspector"))
        .arg("--cli")
        .args(args)
        .args(["--format", "json"])
        .env("PATH", path)
        .env("HOME", dir)
        .current_dir(dir)
        .output()
        .expect("run the Inspector CLI");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (
        output.status.success(),
        text(&output.stdout),
        text(&output.stderr),
    )
}

/// The Inspector's CLI is refused without a token (and never starts a login of its own:
/// `--stored-auth-only`), and lists and calls with the token the TypeScript SDK obtained.
#[test]
fn the_inspector_cli_is_refused_without_a_token_and_calls_with_one() {
    let cmd = project();
    let served = serve(&cmd, true);
    let url = served.url.clone();
    let edge = served.edge.unwrap();
    // The Inspector has no routing of ours: it reaches the edge, and the edge sends the public
    // Host on, as Cloudflare does.
    let at_edge = format!("http://127.0.0.1:{edge}/mcp");
    let seen = ts_client(cmd.dir(), &served, &["--tool", "fault__echo"]);
    let bearer = format!(
        "Authorization: Bearer {}",
        seen["access_token"].as_str().unwrap()
    );
    let base = ["--transport", "http", "--server-url", &at_edge];
    let (ok, stdout, stderr) = inspector(
        &[&base[..], &["--method", "tools/list", "--stored-auth-only"]].concat(),
        cmd.dir(),
    );
    assert!(!ok, "listed without a token: {stdout}");
    let said = format!("{stdout}{stderr}");
    assert!(said.contains("auth_required"), "{said}");
    let call = [
        "--method",
        "tools/call",
        "--tool-name",
        "fault__echo",
        "--tool-arg",
        "message=hello",
    ];
    let (ok, stdout, stderr) = inspector(
        &[&base[..], &call[..], &["--header", &bearer]].concat(),
        cmd.dir(),
    );
    assert!(ok, "{stdout}\n{stderr}");
    let called: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(called["result"]["content"][0]["text"], "hello", "{called}");
    assert!(url.starts_with("https://"));
    served.stop();
}

/// cloudflared runs under `serve` in a process group of its own: stopped when `serve` stops,
/// and when it ends on its own `serve` ends too (exit 1, `tunnel_ended`: a new quick tunnel
/// would have a URL no client knows).
#[test]
fn the_tunnel_ends_with_serve_and_serve_with_the_tunnel() {
    let cmd = project();
    let log = cmd.path("cloudflared.log");
    let logged_to = log.display().to_string();
    let served = serve_with(&cmd, true, |c| c.env("FAKE_CLOUDFLARED_LOG", &logged_to));
    let started = read_log(&log);
    let pid = started[0]["pid"].as_i64().expect("the fake's pid") as i32;
    served.stop();
    assert_pid_gone(pid, "cloudflared after serve stopped");
    let crashing = serve_with(&cmd, true, |c| {
        c.env("FAKE_CLOUDFLARED_MODE", "crash-after")
            .env("FAKE_CLOUDFLARED_CRASH_AFTER", "2")
            .status(1)
    });
    let output = crashing.running.wait();
    assert!(
        output
            .stderr
            .contains("the public URL no longer reaches this machine"),
        "{output}"
    );
}

/// A tunnel that never comes up fails the start with cloudflared's last words, and leaves
/// neither cloudflared nor the listener behind.
#[test]
fn a_tunnel_that_fails_to_start_fails_serve_and_leaves_nothing() {
    let cmd = project();
    let addr = format!("127.0.0.1:{}", free_port());
    let output = cmd
        .cmd()
        .args(["--config", "config.json", "serve", "--http", &addr])
        .args(["--tunnel", "quick"])
        .env("MCP_LAUNCH_CLOUDFLARED", &crate::launch::fake_cloudflared())
        .env("FAKE_CLOUDFLARED_MODE", "exit")
        .status(1)
        .stderr_any()
        .run();
    assert!(
        output.stderr.contains("before the tunnel was ready"),
        "{output}"
    );
    assert!(output.stderr.contains("api.trycloudflare.com"), "{output}");
    assert!(
        std::net::TcpStream::connect(&addr).is_err(),
        "still listening"
    );
}

/// `--print-config` with a named tunnel writes its public URL (known beforehand) into the
/// client's entry; a quick tunnel's is made up at start, which the refusal says.
#[test]
fn print_config_gives_a_named_tunnels_public_url() {
    let cmd = project();
    let addr = format!("127.0.0.1:{}", free_port());
    let serve = ["--config", "config.json", "serve", "--http", &addr];
    let printed = cmd
        .cmd()
        .args(serve)
        .args([
            "--tunnel",
            "named",
            "--public-url",
            "https://tools.example.com/",
        ])
        .args(["--print-config", "cursor"])
        .env("MCP_LAUNCH_CLOUDFLARED", &crate::launch::fake_cloudflared())
        .stderr_any()
        .run();
    assert!(
        printed.stdout.contains("https://tools.example.com/mcp"),
        "{printed}"
    );
    assert!(!printed.stdout.contains("127.0.0.1"), "{printed}");
    let quick = cmd
        .cmd()
        .args(serve)
        .args(["--tunnel", "quick", "--print-config", "cursor"])
        .env("MCP_LAUNCH_CLOUDFLARED", &crate::launch::fake_cloudflared())
        .status(2)
        .stderr_any()
        .run();
    assert!(quick.stderr.contains("made up by cloudflared"), "{quick}");
}
