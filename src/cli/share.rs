//! `mcp-launch share`.

use clap::Args;
use serde_json::json;

use crate::launch::spec::API_KEY_HEADER;
use crate::launch::state::{StackState, StateFile};
use crate::output::{self, style};

use super::{CliError, GlobalArgs, Outcome};

/// Print, per running stack, what to paste into a ChatGPT Action (the /openapi.json URL, the
/// X-API-Key header) and into a claude.ai or ChatGPT connector (the /mcp URL, step by step).
///
/// Connectors log in with OAuth (`up --tunnel quick` turns it on): you consent to each client
/// with the one-time code `up` shows, or `mcp-launch auth approve`.
/// Stale stacks (their `mcp-launch up` is gone) are skipped with a warning.
///
/// Example: mcp-launch share --json | jq -r '.stacks[0].openapi_url'
#[derive(Debug, Args)]
pub struct ShareArgs {}

/// Runs `share`.
pub async fn run(_args: ShareArgs, global: &GlobalArgs) -> Result<Outcome, CliError> {
    let cwd = std::env::current_dir().map_err(CliError::Output)?;
    let state = StateFile::in_project(&cwd).read()?;
    let (live, stale): (Vec<_>, Vec<_>) = state
        .stacks
        .iter()
        .partition(|s| s.supervisor.process_alive());
    if global.json {
        let stacks: Vec<_> = live
            .iter()
            .map(|s| {
                let mut stack = json!({
                    "stack": s.name,
                    "openapi_url": format!("{}/openapi.json", s.public_url),
                    "header": API_KEY_HEADER,
                    "api_key": s.api_key,
                    "operations": s.operations,
                });
                if let Some(auth) = &s.mcp_auth {
                    stack["mcp"] = json!({
                        "url": mcp_url(s),
                        "auth": auth,
                        "steps": connector_steps(s, auth),
                    });
                }
                stack
            })
            .collect();
        output::print_answer(!live.is_empty(), json!({ "stacks": stacks }))?;
    } else {
        let head = style::HEAD;
        for s in &live {
            anstream::println!("{head}{}{head:#}", s.name);
            anstream::println!("  ChatGPT Action");
            anstream::println!("    Schema URL  {}/openapi.json", s.public_url);
            anstream::println!("    Auth        API Key, custom header \"{API_KEY_HEADER}\"");
            anstream::println!("    Key         {}", s.api_key);
            if let Some(auth) = &s.mcp_auth {
                anstream::println!("  MCP connector (claude.ai, ChatGPT, VS Code, Cursor)");
                anstream::println!("    URL         {}", mcp_url(s));
                for (n, step) in connector_steps(s, auth).iter().enumerate() {
                    anstream::println!("    {}. {step}", n + 1);
                }
            }
        }
        if live.is_empty() {
            anstream::println!("no stacks running here (start one with `mcp-launch up`)");
        }
    }
    for s in &stale {
        output::warn(&format!(
            "{}: not running (its `mcp-launch up` is gone); `mcp-launch down` tidies it",
            s.name
        ))?;
    }
    Ok(if live.is_empty() {
        Outcome::Failed
    } else {
        Outcome::Success
    })
}

fn mcp_url(stack: &StackState) -> String {
    format!("{}/mcp", stack.public_url)
}

/// How to add the stack's `/mcp` to a hosted client, by how its clients log in (`auth`).
fn connector_steps(stack: &StackState, auth: &str) -> Vec<String> {
    let url = mcp_url(stack);
    match auth {
        "oauth" => vec![
            format!("claude.ai or Claude Desktop: Settings > Connectors > Add custom connector; name it, paste {url} (leave the OAuth client ID and secret empty: it registers itself), Add, then Connect."),
            format!("ChatGPT: Settings > Apps & Connectors > Advanced settings > Developer mode on; then Create, MCP server URL {url}, Authentication OAuth, Create."),
            "The client opens a consent page asking for a one-time code: the terminal running `mcp-launch up` shows it with the client's name (or approve there with `mcp-launch auth approve REQUEST`, the request id shown beside the code).".into(),
            "`mcp-launch auth clients` lists who holds access; `mcp-launch auth revoke CLIENT` ends it at once.".into(),
        ],
        "oidc" => vec![
            format!("Any MCP client that logs in with OAuth: URL {url}. It finds your OpenID provider in {url}'s protected-resource metadata and logs in there; the provider's access tokens must name {url} as their audience (or `up --oidc-audience`) and grant `tools:read` or `tools:all`."),
            "Providers without dynamic client registration: register the client at the provider by hand and give it that client id.".into(),
        ],
        "key" => vec![
            format!("Clients you configure yourself (VS Code, Cursor, Claude Code): URL {url}, header `Authorization: Bearer {}`.", stack.api_key),
            "Hosted connectors (claude.ai, ChatGPT) log in with OAuth only: start `mcp-launch up --tunnel quick` (OAuth is its default) or add `--auth oauth`.".into(),
        ],
        _ => vec![format!("Clients on this machine: URL {url}, no authentication.")],
    }
}
