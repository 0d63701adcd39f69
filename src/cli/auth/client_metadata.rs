//! `mcp-launch auth client-metadata`: the Client ID Metadata Document to host at the URL our
//! logins name as their client id (a server's `oauth.clientMetadataUrl`, else
//! `MCP_LAUNCH_CLIENT_METADATA_URL`). Its redirect URIs are the ones `auth login` uses — each
//! remote server's own loopback port (or its `oauth.callbackPort`) — so what a login sends and
//! what the person hosts agree; the authorization server lets in no other.

use clap::Args;

use crate::auth::client::metadata_document;
use crate::config::{
    client_metadata_url_fault, ConfigError, Loaded, ServerFault, ServerSpec,
    CLIENT_METADATA_URL_FORM,
};
use crate::output;

use super::super::{load_config, CliError, GlobalArgs, Outcome};
use super::login::{
    default_document_url, fixed_redirect_uri, port_of, redirect_uri, CLIENT_METADATA_ENV,
};

/// Print the Client ID Metadata Document to host at URL.
#[derive(Debug, Args)]
pub struct ClientMetadataArgs {
    /// The https URL the document will be served at (it is the client id): by default
    /// MCP_LAUNCH_CLIENT_METADATA_URL, else the one `oauth.clientMetadataUrl` names in the
    /// config.
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// Also list http://127.0.0.1:PORT/callback (repeatable): the loopback port of a server
    /// in another config.
    #[arg(long = "redirect-port", value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..))]
    pub redirect_ports: Vec<u16>,
}

/// Runs `auth client-metadata`: the document on stdout, where to host it on stderr.
pub async fn run(args: ClientMetadataArgs, global: &GlobalArgs) -> Result<Outcome, CliError> {
    let loaded = load_config(global)?;
    let url = document_at(args.url, &loaded)?;
    let mut uris = redirect_uris(&loaded, &url)?;
    for port in args.redirect_ports {
        push_new(&mut uris, redirect_uri(port));
    }
    if uris.is_empty() {
        return Err(CliError::Usage {
            message: format!("no remote server of this config logs in by {url}"),
            help: "add a server with a \"url\" (and no `oauth.clientId`), or name its login's loopback port with --redirect-port PORT".into(),
        });
    }
    let document = metadata_document(&url, uris);
    output::print_json(&serde_json::to_value(&document).unwrap_or_default())?;
    if !global.json {
        anstream::eprintln!("Serve this at {url} (content-type application/json, no redirect), then `mcp-launch auth login SERVER`. Run this again after adding a remote server: its redirect URI must be listed.");
    }
    Ok(Outcome::Success)
}

/// The document's URL: `--url`, else the variable, else the one URL the config's servers name.
fn document_at(given: Option<String>, loaded: &Loaded) -> Result<String, CliError> {
    if let Some(url) = given {
        return match client_metadata_url_fault(&url) {
            None => Ok(url),
            Some(why) => Err(CliError::Usage {
                message: format!("--url {url:?} is refused: {why}"),
                help: format!("give {CLIENT_METADATA_URL_FORM}"),
            }),
        };
    }
    if let Some(url) = default_document_url()? {
        return Ok(url);
    }
    let mut named = Vec::new();
    for entry in loaded.servers() {
        match &entry.spec {
            Ok(ServerSpec::Http {
                oauth: Some(oauth), ..
            }) => {
                if let Some(url) = &oauth.client_metadata_url {
                    push_new(&mut named, url.clone());
                }
            }
            // A document URL the config names but cannot be one: say so, not "none named".
            Err(
                error @ ConfigError::InvalidServer {
                    fault: ServerFault::BadClientIdUrl { .. },
                    ..
                },
            ) => return Err(CliError::Config(error.clone())),
            _ => {}
        }
    }
    match named.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(CliError::Usage {
            message: "no Client ID Metadata Document URL is named".into(),
            help: format!("pass --url https://HOST/PATH/client.json (where you will host it), and set {CLIENT_METADATA_ENV} to it or `oauth.clientMetadataUrl` in a server's entry"),
        }),
        many => Err(CliError::Usage {
            message: format!("the config names several documents: {}", many.join(", ")),
            help: "pick one with --url URL".into(),
        }),
    }
}

/// The redirect URIs of the config's remote servers whose logins name `url` as their
/// client: the server's own loopback port, or its `oauth.callbackPort`.
fn redirect_uris(loaded: &Loaded, url: &str) -> Result<Vec<String>, CliError> {
    let default = default_document_url()?;
    let mut uris = Vec::new();
    for entry in loaded.servers() {
        let oauth = match &entry.spec {
            Ok(ServerSpec::Http { oauth, .. }) => oauth.as_ref(),
            Ok(ServerSpec::Sse { .. }) => None,
            _ => continue,
        };
        // A server without a document of its own logs in by the default one: the variable's,
        // or the one being made when the variable is unset.
        let by_it = match oauth.and_then(|o| o.client_metadata_url.as_deref()) {
            Some(named) => named == url,
            None => default.as_deref().is_none_or(|default| default == url),
        };
        if oauth.is_some_and(|o| o.client_id.is_some()) || !by_it {
            continue;
        }
        let uri = match oauth.and_then(|o| o.callback_port) {
            Some(port) => fixed_redirect_uri(port),
            None => redirect_uri(port_of(&entry.qualified)),
        };
        push_new(&mut uris, uri);
    }
    Ok(uris)
}

fn push_new(list: &mut Vec<String>, item: String) {
    if !list.contains(&item) {
        list.push(item);
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::ClientMetadataArgs;
    use crate::cli::auth::AuthAction;
    use crate::cli::{Cli, Command};

    fn parsed(args: &[&str]) -> Result<ClientMetadataArgs, clap::Error> {
        let argv = ["mcp-launch", "auth", "client-metadata"].iter().chain(args);
        match Cli::try_parse_from(argv.copied())?.command {
            Command::Auth(auth) => match auth.action {
                AuthAction::ClientMetadata(args) => Ok(args),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn it_takes_a_url_and_redirect_ports_from_1() {
        let url = "https://me.example/c.json";
        let args = parsed(&[
            "--url",
            url,
            "--redirect-port",
            "9000",
            "--redirect-port",
            "9001",
        ]);
        let args = args.unwrap();
        assert_eq!(args.url.as_deref(), Some(url));
        assert_eq!(args.redirect_ports, [9000, 9001]);
        assert!(parsed(&[]).unwrap().url.is_none());
        assert!(parsed(&["--redirect-port", "0"]).is_err());
        assert!(parsed(&["--redirect-port", "70000"]).is_err());
    }
}
