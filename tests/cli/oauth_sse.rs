//! OAuth on the legacy HTTP+SSE transport (issue 26): the Python SDK's own `sse_app`,
//! protected by its authorization server (tests/fixtures/oauth_server.py `--sse`): the same
//! flow as Streamable HTTP — needs login, login, a call carrying the token on the stream and
//! the POSTs, an expired token refreshed once.

use serde_json::json;

use crate::oauth::{http, login, OAuthServer};
use crate::util::*;

#[test]
fn a_legacy_sse_server_gets_the_same_oauth_flow() {
    let server = OAuthServer::start_with(&["--sse"]);
    let url = format!("http://127.0.0.1:{}/sse", server.port);
    let setup =
        Cmd::new().config_json(json!({"mcpServers": {"prot": {"type": "sse", "url": url}}}));
    let dir = setup.dir().to_path_buf();
    let call = || {
        setup
            .cmd()
            .args(["--config", "config.json", "call", "prot", "echo"])
            .args([r#"{"message":"hi"}"#, "--json"])
    };

    let before = call().status(1).run();
    assert_eq!(before.error()["type"], "needs_login", "{before}");
    assert!(
        before.error()["help"]
            .as_str()
            .unwrap()
            .contains("mcp-launch auth login prot"),
        "{before}"
    );

    login(&dir, "prot");
    let ok = call().run();
    assert_eq!(ok.json()["result"]["content"][0]["text"], "hi", "{ok}");
    assert_eq!(
        server.stats()["token_requests"],
        1,
        "a valid token cost a token request"
    );

    http(server.port, "POST", "/test/expire");
    let refreshed = call().run();
    assert_eq!(
        refreshed.json()["result"]["content"][0]["text"],
        "hi",
        "{refreshed}"
    );
    assert_eq!(server.stats()["token_requests"], 2, "not one refresh");
}
