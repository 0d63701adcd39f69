//! `serve --http --auth oauth`: the built-in authorization server in front of `/mcp`, its
//! state kept in the state directory (the one `mcp-launch auth clients|approve|revoke` read;
//! in Redis with `--state`),
//! its consent codes shown on this terminal.

use std::sync::Arc;

use crate::auth::server::oidc::Delegate;
use crate::auth::server::{ConsentNotice, Notify, OAuthServer};

use super::serve::{AuthMode, ServeArgs};
use super::CliError;

/// With OAuth there is no key; a key given anyway is not used, and we say so.
pub(super) fn no_key(args: &ServeArgs) -> Result<Option<String>, CliError> {
    if args.api_key.as_deref().is_some_and(|k| !k.is_empty()) {
        eprintln!(
            "mcp-launch serve: warning: --api-key (or MCP_LAUNCH_API_KEY) is not used with --auth oauth or oidc: clients log in with OAuth"
        );
    }
    Ok(None)
}

/// The authorization server of the listener clients reach at `base` (`http://ADDR`, or a
/// tunnel's public URL): its issuer and resource are built from it.
pub(super) fn server(base: &str) -> Arc<OAuthServer> {
    let store = crate::auth::server::default_store();
    eprintln!(
        "mcp-launch serve: OAuth 2.1 on; clients register at {base}/register and log in with your consent (`mcp-launch auth clients` lists them)"
    );
    Arc::new(OAuthServer::new(
        base,
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

/// With `--auth oidc:ISSUER`: the provider, discovered and its keys fetched before anything
/// starts (a wrong issuer is said at once, naming the flag). `audience` is `--oidc-audience`,
/// refused without `oidc:`. `serve --http` and `up` both ask here.
pub(super) async fn delegate(
    auth: Option<&AuthMode>,
    audience: Option<&str>,
) -> Result<Option<Delegate>, CliError> {
    let issuer = match auth {
        Some(AuthMode::Oidc(issuer)) => issuer,
        _ if audience.is_some() => {
            return Err(CliError::Usage {
                message: "--oidc-audience is used only with --auth oidc:ISSUER".into(),
                help: "add --auth oidc:ISSUER, or drop --oidc-audience".into(),
            })
        }
        _ => return Ok(None),
    };
    let delegate = Delegate::discover(issuer)
        .await
        .map_err(|e| CliError::Usage {
            help: e.help(),
            message: e.to_string(),
        })?;
    Ok(Some(delegate))
}

/// The protected resource of the listener clients reach at `base` (its `/mcp`), taking
/// `delegate`'s tokens: their audience is `audience` (`--oidc-audience`), else the URL clients
/// reach `/mcp` at (behind a tunnel, the public one). `speaker` says so on the terminal
/// (`mcp-launch serve`, a stack of `up`).
pub(super) fn delegated(
    base: &str,
    delegate: Delegate,
    audience: Option<&str>,
    speaker: &str,
) -> Arc<OAuthServer> {
    let audience = audience.map_or_else(|| format!("{base}/mcp"), str::to_string);
    eprintln!(
        "{speaker}: OAuth 2.1 delegated to {}; tokens must name `{audience}` as their audience",
        delegate.issuer()
    );
    Arc::new(OAuthServer::delegated(
        base,
        "/mcp",
        delegate.for_audience(audience),
    ))
}
