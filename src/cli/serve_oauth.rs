//! `serve --http --auth oauth`: the built-in authorization server in front of `/mcp`, its
//! state kept in the state directory (the one `mcp-launch auth clients|approve|revoke` read;
//! in Redis with `--state`),
//! its consent codes shown on this terminal.

use std::sync::Arc;

use crate::auth::server::oidc::Delegate;
use crate::auth::server::proxy::{Login, CALLBACK_PATH};
use crate::auth::server::{ConsentEvent, Notify, OAuthServer};

use super::serve::{AuthMode, ServeArgs};
use super::CliError;

/// The login proxy's client at the provider: the same flags on `serve --http` and `up`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct OidcClientArgs {
    /// With --auth oidc:ISSUER, for a provider without dynamic registration: the client you
    /// registered there (its redirect URI: <the URL clients reach>/oauth/callback; with `up`,
    /// one per stack); MCP clients then register here and log in to the provider through us.
    /// Its secret is read from MCP_LAUNCH_OIDC_CLIENT_SECRET (or the variable
    /// --oidc-client-secret-env names).
    #[arg(long, requires = "auth", value_name = "ID")]
    pub oidc_client_id: Option<String>,
    /// With --oidc-client-id: the environment variable holding its secret (never the secret).
    #[arg(long, requires = "oidc_client_id", value_name = "VAR")]
    pub oidc_client_secret_env: Option<String>,
}

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
    Arc::new(move |event: &ConsentEvent| {
        use std::io::Write;
        let ConsentEvent::Asked(notice) = event else {
            return;
        };
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

/// The variable the secret of `--oidc-client-id` is read from when no
/// `--oidc-client-secret-env` names another.
pub(super) const SECRET_VAR: &str = "MCP_LAUNCH_OIDC_CLIENT_SECRET";

/// With `--oidc-client-id`: the provider's client the login is proxied as, its secret read
/// from the environment (never the command line: other users see it there). Refused without
/// `--auth oidc:ISSUER`, or when the named variable is unset. `speaker` (`mcp-launch serve`,
/// `mcp-launch up`) says on the terminal when there is no secret.
pub(super) fn login(
    delegate: Option<&Delegate>,
    args: &OidcClientArgs,
    speaker: &str,
) -> Result<Option<Login>, CliError> {
    let Some(client_id) = args.oidc_client_id.clone() else {
        return Ok(None);
    };
    let Some(delegate) = delegate else {
        return Err(CliError::Usage {
            message: "--oidc-client-id is used only with --auth oidc:ISSUER".into(),
            help: "add --auth oidc:ISSUER, or drop --oidc-client-id".into(),
        });
    };
    let var = args.oidc_client_secret_env.as_deref();
    let secret = std::env::var(var.unwrap_or(SECRET_VAR))
        .ok()
        .filter(|s| !s.is_empty());
    if let (Some(var), None) = (var, &secret) {
        return Err(CliError::Usage {
            message: format!("--oidc-client-secret-env {var}: the variable is not set"),
            help: format!("export {var} with the secret of client `{client_id}` at the provider"),
        });
    }
    if secret.is_none() {
        eprintln!(
            "{speaker}: no secret in {SECRET_VAR}: `{client_id}` logs in to the provider as a public client"
        );
    }
    Login::new(delegate, client_id, secret)
        .map(Some)
        .map_err(|e| CliError::Usage {
            help: e.help(),
            message: e.to_string(),
        })
}

/// The protected resource of the listener clients reach at `base` (its `/mcp`), taking
/// `delegate`'s tokens: their audience is `audience` (`--oidc-audience`), else the URL clients
/// reach `/mcp` at (behind a tunnel, the public one). With `proxied`, MCP clients register
/// with us and log in to the provider through us. `speaker` says so on the terminal
/// (`mcp-launch serve`, a stack of `up`).
pub(super) fn delegated(
    base: &str,
    delegate: Delegate,
    audience: Option<&str>,
    speaker: &str,
    proxied: Option<Login>,
) -> Arc<OAuthServer> {
    let say = |line: String| eprintln!("{line}");
    delegated_saying(base, delegate, audience, speaker, proxied, &say)
}

/// [`delegated`], its lines said by `say` (the TUI's log pane under `up --tui`, whose screen
/// stderr would write over).
pub(super) fn delegated_saying(
    base: &str,
    delegate: Delegate,
    audience: Option<&str>,
    speaker: &str,
    proxied: Option<Login>,
    say: &dyn Fn(String),
) -> Arc<OAuthServer> {
    let audience = audience.map_or_else(|| format!("{base}/mcp"), str::to_string);
    say(format!(
        "{speaker}: OAuth 2.1 delegated to {}; tokens must name `{audience}` as their audience",
        delegate.issuer()
    ));
    let server = OAuthServer::delegated(base, "/mcp", delegate.for_audience(audience));
    let Some(login) = proxied else {
        return Arc::new(server);
    };
    say(format!(
        "{speaker}: clients register at {base}/register and log in through {} as `{}` (its redirect URI there: {base}{CALLBACK_PATH})",
        server.issuer(),
        login.client_id()
    ));
    let store = crate::auth::server::default_store();
    Arc::new(server.with_login(login, store))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    /// The proxy's client flags as `command` (`serve --http …` or `up`) parses them.
    fn oidc_client(command: &[&str], flags: &[&str]) -> Result<OidcClientArgs, clap::Error> {
        let argv = ["mcp-launch"].iter().chain(command).chain(flags);
        match crate::cli::Cli::try_parse_from(argv)?.command {
            crate::cli::Command::Serve(args) => Ok(args.oidc_client),
            crate::cli::Command::Up(args) => Ok(args.oidc_client),
            _ => panic!("neither serve nor up"),
        }
    }

    /// On `serve --http` and `up` alike, the proxy's client comes with `--auth oidc:ISSUER`
    /// only, and its secret never on the command line: only the name of the variable holding
    /// it.
    #[test]
    fn the_proxys_client_needs_oidc_and_takes_its_secret_from_the_environment() {
        for command in [&["serve", "--http", "127.0.0.1:0"][..], &["up"]] {
            let parse = |flags: &[&str]| oidc_client(command, flags);
            let secret_env = ["--oidc-client-secret-env", "VAR"];
            assert!(
                parse(&secret_env).is_err(),
                "{command:?}: a secret variable alone"
            );
            assert!(
                parse(&["--oidc-client-id", "x"]).is_err(),
                "{command:?}: no --auth"
            );
            let args = parse(&["--auth", "oauth", "--oidc-client-id", "x"]).unwrap();
            let Err(CliError::Usage { message, .. }) = login(None, &args, "t") else {
                panic!("{command:?}: --oidc-client-id taken with --auth oauth");
            };
            assert!(
                message.contains("only with --auth oidc:ISSUER"),
                "{command:?}: {message}"
            );
            let secret = ["--auth", "oauth", "--oidc-client-secret", "s"];
            assert!(parse(&secret).is_err(), "{command:?}: a secret flag exists");
            let named = [
                "--auth",
                "oidc:https://idp.example.com",
                "--oidc-client-id",
                "x",
            ];
            let with_var = [&named[..], &secret_env].concat();
            assert_eq!(
                parse(&with_var).unwrap().oidc_client_secret_env.as_deref(),
                Some("VAR")
            );
        }
    }
}
