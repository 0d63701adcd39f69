//! `serve --http --auth oauth`: the built-in authorization server in front of `/mcp`, its
//! state kept in the state directory (the one `mcp-launch auth clients|approve|revoke` read),
//! its consent codes shown on this terminal.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::auth::server::{ConsentNotice, FileStore, Notify, OAuthServer};

use super::serve::ServeArgs;
use super::CliError;

/// With OAuth there is no key; a key given anyway is not used, and we say so.
pub(super) fn no_key(args: &ServeArgs) -> Result<Option<String>, CliError> {
    if args.api_key.as_deref().is_some_and(|k| !k.is_empty()) {
        eprintln!(
            "mcp-launch serve: warning: --api-key (or MCP_LAUNCH_API_KEY) is not used with --auth oauth: clients log in with OAuth"
        );
    }
    Ok(None)
}

/// The authorization server of the listener bound at `bound`: its issuer and resource are the
/// URLs clients reach it at.
pub(super) fn server(bound: SocketAddr) -> Arc<OAuthServer> {
    let store = Arc::new(FileStore::new(FileStore::default_path()));
    let base = format!("http://{bound}");
    eprintln!(
        "mcp-launch serve: OAuth 2.1 on; clients register at {base}/register and log in with your consent (`mcp-launch auth clients` lists them)"
    );
    Arc::new(OAuthServer::new(
        &base,
        "/mcp",
        store,
        show_consent("mcp-launch serve".into()),
    ))
}

/// Shows each consent request on the terminal (stderr), with its one-time code, said by
/// `speaker` (`mcp-launch serve`, a stack of `up`). Never logged.
pub(super) fn show_consent(speaker: String) -> Notify {
    Arc::new(move |notice: &ConsentNotice| {
        use std::io::Write;
        // The name is the client's own words (registration is open): written through the
        // terminal-safe writer, so it cannot move the cursor or fake a line of ours.
        let name = notice.client_name.as_deref().unwrap_or("(no name)");
        let _ = writeln!(
            crate::output::stderr(),
            "{speaker}: client \"{name}\" ({}) asks for {}.\n  To allow it, enter this one-time code on its page: {}\n  (or run `mcp-launch auth approve {}`; the code works once, for 5 minutes)",
            notice.client_id, notice.scope, notice.code, notice.request_id
        );
    })
}
