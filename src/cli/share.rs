//! `mcp-launch share`.

use clap::Args;
use serde_json::json;

use crate::auth::server::proxy::CALLBACK_PATH;
use crate::launch::spec::API_KEY_HEADER;
use crate::launch::state::{LoginProxyState, StackState, StateFile};
use crate::output::{self, style};

use super::{CliError, GlobalArgs, Outcome};

/// Print, per running stack, what to paste into a ChatGPT Action (the /openapi.json URL, the
/// X-API-Key header) and into a claude.ai or ChatGPT connector (the /mcp URL, step by step).
///
/// Connectors log in with OAuth (`up --tunnel quick` turns it on): you consent to each client
/// with the one-time code `up` shows (or the TUI, where `a` approves), or `mcp-launch auth
/// approve`. With `up --auth oidc:ISSUER --oidc-client-id ID` it names, per stack, the
/// callback URL to register at your provider for that client.
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
                    if let Some(proxy) = &s.mcp_login_proxy {
                        stack["mcp"]["login_proxy"] = json!({
                            "issuer": proxy.issuer,
                            "client_id": proxy.client_id,
                            "callback_url": callback_url(s),
                        });
                    }
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
                if let Some(proxy) = &s.mcp_login_proxy {
                    anstream::println!(
                        "    Callback    {}  (register it at {} for client `{}`)",
                        callback_url(s),
                        proxy.issuer,
                        proxy.client_id
                    );
                }
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
        "oidc" => match &stack.mcp_login_proxy {
            Some(proxy) => login_proxy_steps(stack, proxy),
            None => vec![
                format!("Any MCP client that logs in with OAuth: URL {url}. It finds your OpenID provider in {url}'s protected-resource metadata and logs in there; the provider's access tokens must name {url} as their audience (or `up --oidc-audience`) and grant `tools:read` or `tools:all`."),
                "Providers without dynamic client registration: register a client there and start `mcp-launch up` with `--oidc-client-id ID`: the stack registers MCP clients itself and proxies their login (`share` then names the callback to register).".into(),
            ],
        },
        "key" => vec![
            format!("Clients you configure yourself (VS Code, Cursor, Claude Code): URL {url}, header `Authorization: Bearer {}`.", stack.api_key),
            "Hosted connectors (claude.ai, ChatGPT) log in with OAuth only: start `mcp-launch up --tunnel quick` (OAuth is its default) or add `--auth oauth`.".into(),
        ],
        _ => vec![format!("Clients on this machine: URL {url}, no authentication.")],
    }
}

/// Where the provider sends the login proxy's users back: the stack's callback at the URL
/// clients reach (a tunnel's when there is one).
fn callback_url(stack: &StackState) -> String {
    format!("{}{CALLBACK_PATH}", stack.public_url)
}

/// How to set up the login proxy's client at the provider, then add the stack's `/mcp`.
fn login_proxy_steps(stack: &StackState, proxy: &LoginProxyState) -> Vec<String> {
    let (url, callback) = (mcp_url(stack), callback_url(stack));
    let mut steps = vec![
        format!("At your provider ({}), open the client `{}` (the one --oidc-client-id names) and add this redirect URI (the allowed callback URL), exactly: {callback}", proxy.issuer, proxy.client_id),
        format!("Then in claude.ai, Claude Desktop or ChatGPT add a custom connector with URL {url}, authentication OAuth, the OAuth client ID and secret left empty: it registers with the stack, which sends its login to your provider as `{}`.", proxy.client_id),
        "The client's secret stays with `mcp-launch up` (MCP_LAUNCH_OIDC_CLIENT_SECRET, or the variable --oidc-client-secret-env names); connectors never see it.".into(),
    ];
    if stack.tunnel == "quick" {
        steps.push("A quick tunnel's URL changes each time `up` starts: register the new callback then, or keep one URL with `--tunnel named --public-url`.".into());
    }
    steps
}
