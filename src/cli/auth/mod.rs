//! `mcp-launch auth`: both sides of OAuth. `login|status|logout` — our tokens for remote
//! servers that ask for OAuth (src/auth/client); `approve|clients|revoke` — the operator's side
//! of the built-in authorization server of `serve --http --auth oauth` (src/auth/server).

mod client_metadata;
mod login;
mod operator;

pub(super) use login::{log_in, How};
mod remote;

use clap::{Args, Subcommand};

use super::{CliError, GlobalArgs, Outcome};
use operator::Operator;

/// OAuth: log in to remote servers that ask for it; manage the clients that log in to
/// `serve --http --auth oauth`.
///
/// Tokens for remote servers are kept owner-only under the state dir
/// ($XDG_STATE_HOME/mcp-launch/oauth) and refreshed without you; they are never printed, logged
/// or handed to a child process.
///
/// Example: mcp-launch auth login github
#[derive(Debug, Args)]
pub struct AuthArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: AuthAction,
    /// With approve, clients and revoke: the authorization server's state replicas of
    /// `serve --http --auth oauth --state URL` share in Redis (the same URL), instead of this
    /// machine's file.
    #[arg(long, global = true, env = crate::state::ENV, value_name = "URL", hide_env_values = true)]
    pub state: Option<String>,
}

/// The `auth` actions.
#[derive(Debug, Subcommand)]
pub enum AuthAction {
    /// Log in to SERVER: a browser on a loopback redirect, or `--no-browser` to paste it.
    Login(login::LoginArgs),
    /// Every server logged in to: issuer, client, scopes, expiry.
    Status,
    /// Print the Client ID Metadata Document to host at your URL (`oauth.clientMetadataUrl`
    /// or MCP_LAUNCH_CLIENT_METADATA_URL): logins then name it as their client instead of
    /// registering, where the authorization server takes such documents.
    ///
    /// Example: mcp-launch auth client-metadata --url https://me.example/mcp-launch.json > client.json
    ClientMetadata(client_metadata::ClientMetadataArgs),
    /// Forget SERVER's tokens (revoking them where its authorization server offers it).
    Logout {
        /// The server's name in the config (or its URL).
        server: String,
    },
    /// Allow a client waiting on its consent page of `serve --http --auth oauth` (the request
    /// id is shown by `serve` and by `auth clients`); the page then continues without the
    /// one-time code.
    Approve {
        /// The pending request's id.
        request: String,
    },
    /// List who holds access to `serve --http --auth oauth` (client, name, redirect, scopes,
    /// last use) and who waits for it.
    Clients,
    /// End a client's access at once: its registration and every token it holds.
    Revoke {
        /// The client's id (see `auth clients`).
        client: String,
    },
}

/// Runs `auth`.
pub async fn run(args: AuthArgs, global: &GlobalArgs) -> Result<Outcome, CliError> {
    match args.action {
        AuthAction::Login(login) => login::run(login, global).await,
        AuthAction::Status => remote::status(global).await,
        AuthAction::ClientMetadata(args) => client_metadata::run(args, global).await,
        AuthAction::Logout { server } => remote::logout(&server, global).await,
        AuthAction::Approve { request } => {
            operator::run(Operator::Approve { request }, global, args.state).await
        }
        AuthAction::Clients => operator::run(Operator::Clients, global, args.state).await,
        AuthAction::Revoke { client } => {
            operator::run(Operator::Revoke { client }, global, args.state).await
        }
    }
}
