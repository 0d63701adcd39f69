//! `mcp-launch up`: turn each config file into a running, authenticated, shareable stack.

use std::net::IpAddr;
use std::time::Instant;

use clap::{Args, ValueEnum};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::config;
use crate::launch::events::Events;
use crate::launch::launcher::{self, LaunchOptions};
use crate::launch::mask::Masker;
use crate::launch::plan::generate_key;
use crate::launch::stack::RunningStack;
use crate::output;

use super::{CliError, GlobalArgs, Outcome};

mod flags;
mod mcp;
mod report;

pub(super) use flags::align_public_urls;
use flags::{choose_tunnel, validate_key};
use report::{finish_printing, print_events, print_summary};

/// Launch each config as a stack: mcpo, a front proxy with an API key, one merged
/// /openapi.json and /mcp, optionally a Cloudflare tunnel; supervise until Ctrl-C.
///
/// For each --config (one stack per file; default: the discovered config) the servers are
/// preflighted in parallel, the overrides applied (./.mcp-launch/overrides.json), mcpo started on
/// 127.0.0.1 and the front proxy on --host:--port. The front enforces the key (X-API-Key or
/// Authorization: Bearer), refuses denied tools (403) and disabled servers (404), and serves the
/// merged spec at /openapi.json (open unless --protect-spec) and /healthz. MCP clients reach
/// the same tools at /mcp (the gateway of `serve`, per --mode), logging in with OAuth when a
/// tunnel is on (--auth). A crashed mcpo or
/// cloudflared is restarted with backoff. Ctrl-C or SIGTERM stops every process; so does
/// `mcp-launch down` from another terminal.
///
/// Examples:
///   mcp-launch up --config work.json --tunnel none
///   mcp-launch up --config a.json --config b.json --shared-key --tunnel quick
#[derive(Debug, Args)]
pub struct UpArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub init_timeout: super::InitTimeoutFlag,
    /// Front port of the first stack; stack i gets PORT+i. Taken ports move to the next free
    /// one unless given explicitly.
    #[arg(long, value_name = "N")]
    pub port: Option<u16>,
    /// mcpo port of the first stack (127.0.0.1 only); stack i gets N+i.
    #[arg(long, value_name = "N")]
    pub mcpo_port: Option<u16>,
    /// Address the front binds (mcpo always binds 127.0.0.1).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// API key for every stack (default: a random 40-character key per stack).
    #[arg(
        long,
        value_name = "KEY",
        env = "MCP_LAUNCH_API_KEY",
        hide_env_values = true
    )]
    pub api_key: Option<String>,
    /// One random key shared by all stacks.
    #[arg(long)]
    pub shared_key: bool,
    /// none, quick (a trycloudflare.com URL) or named (needs --public-url). Default: quick
    /// when cloudflared is installed, else none.
    #[arg(long, value_enum, value_name = "MODE")]
    pub tunnel: Option<TunnelMode>,
    /// Public URL of a stack (repeat once per --config, or give one for all).
    #[arg(long = "public-url", value_name = "URL")]
    pub public_urls: Vec<String>,
    /// Named tunnel to run (`cloudflared tunnel run NAME`); without it TUNNEL_TOKEN is used.
    #[arg(long, value_name = "NAME")]
    pub tunnel_name: Option<String>,
    /// Show the logs of mcpo and cloudflared (tagged [mcpo#stack]) without more verbosity.
    #[arg(long)]
    pub stream: bool,
    /// What serves the tools: mcpo (the Python bridge), native (built in, no Python) or auto
    /// (mcpo when installed, else native).
    #[arg(long, value_enum, default_value = "auto")]
    pub controller: ControllerChoice,
    /// Require the key for /openapi.json too.
    #[arg(long)]
    pub protect_spec: bool,
    /// Check every server live before serving. Without it the native controller serves the
    /// servers the tool index knows (fresh, same definition) at once and starts them in the
    /// background; mcpo always checks every server live.
    #[arg(long)]
    pub refresh: bool,
    /// Budget the native bridge's tool results: over N o200k tokens (or a tool's own budget
    /// in the overrides, `tool budget`), a result is cut at a clean boundary and the rest kept
    /// behind a handle that `POST /read_output` reads (documented in the spec). Off without
    /// it; 0 cuts only tools with a budget of their own. Native controller only.
    #[arg(long, value_name = "TOKENS", value_parser = super::serve::parse_budget)]
    pub max_output_tokens: Option<crate::outputs::Budget>,
    /// How /mcp offers the tools: full, sparse or auto (as `serve --mode`).
    #[arg(long, value_enum, default_value = "auto")]
    pub mode: crate::gateway::Mode,
    /// Offer these tools directly in sparse mode on /mcp (exposed names, `server__tool`).
    #[arg(long = "pin", value_name = "SERVER__TOOL", num_args = 1..)]
    pub pins: Vec<String>,
    /// How MCP clients of /mcp prove who they are. oauth: OAuth 2.1 with the built-in
    /// authorization server (claude.ai and ChatGPT connectors; you consent with a one-time
    /// code shown here or `mcp-launch auth approve`), the default with a tunnel; key: the
    /// stack's key as `Authorization: Bearer`, the default without; oidc:ISSUER: JWT access
    /// tokens of your OpenID provider (teams); none: loopback only. The REST side keeps its
    /// X-API-Key.
    #[arg(long, value_parser = super::serve::AuthMode::parse, value_name = "MODE")]
    pub auth: Option<super::serve::AuthMode>,
    /// With --auth oidc:ISSUER: the `aud` tokens must name, when the provider cannot name a
    /// stack's URL (<its URL>/mcp, the default) and puts a client id there instead. One value
    /// for every stack: a token then reaches each of them.
    #[arg(long, requires = "auth", value_name = "AUDIENCE")]
    pub oidc_audience: Option<String>,
    #[command(flatten)]
    pub oidc_client: super::serve_oauth::OidcClientArgs,
    /// Full-screen terminal UI: watch the preflight, allow/deny tools, enable/disable servers
    /// (saved to ./.mcp-launch/overrides.json), launch the stacks (their /mcp as here, --auth
    /// and --mode applying) and approve MCP clients asking for access (`a`).
    #[arg(long)]
    pub tui: bool,
}

/// `--tunnel`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TunnelMode {
    /// Local URLs only.
    None,
    /// A cloudflared quick tunnel (random trycloudflare.com URL).
    Quick,
    /// A named cloudflared tunnel (your domain, via --public-url).
    Named,
}

/// `up --tui`: the configs' servers in the TUI until the operator quits (or a signal). The
/// stacks it launches serve `/mcp` as `up`'s do (`--auth`, `--mode`…; the tunnel is chosen
/// in the TUI), their consent requests shown in the TUI.
async fn run_tui(
    args: UpArgs,
    global: &GlobalArgs,
    shutdown: CancellationToken,
) -> Result<Outcome, CliError> {
    let opts = config::LoadOptions::from_process(global.configs.clone(), global.env_files.clone())?;
    // Without --config the TUI asks for the files (config collector).
    let loaded = if opts.configs.is_empty() {
        None
    } else {
        Some(config::load(&opts)?)
    };
    let serve = mcp::for_tui(args, &opts, &shutdown).await?;
    crate::tui::runtime::run(opts, loaded, Some(serve), shutdown).await?;
    Ok(Outcome::Success)
}

/// Supervises the stacks until `shutdown` is cancelled, then stops them; returns what outlived
/// the stop (`process (pid)`), which should be nothing.
async fn serve_until(
    running: Vec<RunningStack>,
    shutdown: &CancellationToken,
    json: bool,
) -> Vec<String> {
    let supervisors: Vec<_> = running
        .iter()
        .cloned()
        .map(|s| tokio::spawn(async move { s.supervise().await }))
        .collect();
    // Serving from here on: the code that only started the stacks need not stay resident.
    tokio::task::spawn_blocking(crate::memory::page_out_own_code);
    shutdown.cancelled().await;
    if !json {
        anstream::eprintln!("stopping {} stack(s)…", running.len());
    }
    let mut survivors = Vec::new();
    for stack in &running {
        survivors.extend(stack.stop().await);
    }
    for s in supervisors {
        s.abort();
    }
    survivors
}

impl From<ControllerChoice> for launcher::ControllerChoice {
    fn from(choice: ControllerChoice) -> Self {
        match choice {
            ControllerChoice::Auto => launcher::ControllerChoice::Auto,
            ControllerChoice::Mcpo => launcher::ControllerChoice::Mcpo,
            ControllerChoice::Native => launcher::ControllerChoice::Native,
        }
    }
}

/// `--controller`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ControllerChoice {
    /// mcpo when installed, else native.
    Auto,
    /// The mcpo Python bridge.
    Mcpo,
    /// The built-in bridge.
    Native,
}

/// Runs `up` until `shutdown` is cancelled (SIGINT/SIGTERM) or every stack is gone.
pub async fn run(
    args: UpArgs,
    global: &GlobalArgs,
    shutdown: CancellationToken,
) -> Result<Outcome, CliError> {
    if args.tui {
        return run_tui(args, global, shutdown).await;
    }
    let began = Instant::now();
    // Flags first: a usage error must come before anything is announced, stopped or started.
    let shared_key = match (&args.api_key, args.shared_key) {
        (Some(key), _) => Some(validate_key(key)?),
        (None, true) => Some(generate_key()),
        (None, false) => None,
    };
    let opts = config::LoadOptions::from_process(global.configs.clone(), global.env_files.clone())?;
    let (loaded, failed) = config::load_each(&opts)?;
    let stack_count = loaded.stacks.len() + failed.len();
    let public_urls = align_public_urls(&args.public_urls, stack_count)?;
    let tunnel = choose_tunnel(&args, &public_urls)?;
    let auth = mcp::choose_auth(&args, tunnel.is_some())?;
    // The provider is asked before anything starts: a wrong issuer stops `up` at once.
    let delegate =
        super::serve_oauth::delegate(args.auth.as_ref(), args.oidc_audience.as_deref()).await?;
    let proxied = super::serve_oauth::login(delegate.as_ref(), &args.oidc_client, "mcp-launch up")?;
    let mut errors: Vec<(String, Value)> = failed
        .iter()
        .map(|f| (f.name.clone(), output::error_object(&f.error)))
        .collect();
    let options = LaunchOptions {
        project_dir: opts.cwd.clone(),
        configs: opts.configs.clone(),
        env_files: loaded.env_files.clone(),
        port: args.port,
        mcpo_port: args.mcpo_port,
        host: args.host,
        shared_key,
        tunnel,
        public_urls,
        controller: args.controller.into(),
        protect_spec: args.protect_spec,
        refresh: args.refresh,
        max_output: args.max_output_tokens,
        failed_just_now: Vec::new(),
    };

    let (events_tx, events_rx) = tokio::sync::mpsc::unbounded_channel();
    let events = Events::to(events_tx);
    let printer = tokio::spawn(print_events(events_rx, global.json));
    let masker = Masker::new();
    let launched = launcher::launch(&loaded, &options, &masker, &events, &shutdown).await;
    let Some(launched) = launched.inspect_err(|_| printer.abort())? else {
        finish_printing(events, printer).await;
        return Ok(Outcome::Failed);
    };
    let failed = launched.errors.iter();
    errors.extend(failed.map(|(stack, e)| (stack.clone(), output::error_object(e))));
    let running = launched.running;
    let auth = mcp::McpAuth {
        mode: auth,
        delegate,
        proxied,
        consent: mcp::consent_on_terminal(),
        say: mcp::say_on_terminal(),
    };
    let gateways = match mcp::serve_mcp(
        &running,
        &args,
        &auth,
        &opts.cwd,
        &loaded.env_files,
        &shutdown,
    )
    .await
    {
        Ok(gateways) => gateways,
        Err(e) => {
            output::warn(&format!("/mcp is not served: {e}"))?;
            Vec::new()
        }
    };
    print_summary(&running, &errors, began.elapsed(), global)?;
    super::embedding::in_background(&loaded, launched.checked_live);
    if running.is_empty() {
        finish_printing(events, printer).await;
        return Ok(Outcome::Failed);
    }

    let _top_record = super::top::announce_up(&opts.cwd);
    let survivors = serve_until(running, &shutdown, global.json).await;
    for gateway in gateways {
        gateway.shutdown().await;
    }
    finish_printing(events, printer).await;
    if survivors.is_empty() {
        if !global.json {
            anstream::eprintln!("stopped every process we started");
        }
        Ok(if errors.is_empty() {
            Outcome::Success
        } else {
            Outcome::Failed
        })
    } else {
        output::warn(&format!(
            "still running after stop: {}",
            survivors.join(", ")
        ))?;
        Ok(Outcome::Failed)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Cli, Command};
    use crate::outputs::Budget;
    use clap::Parser;

    fn max_output(args: &[&str]) -> Result<Option<Budget>, clap::Error> {
        let cli = Cli::try_parse_from(["mcp-launch", "up"].iter().chain(args))?;
        match cli.command {
            Command::Up(up) => Ok(up.max_output_tokens),
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn the_bridge_budgets_results_only_when_asked() {
        assert_eq!(max_output(&[]).unwrap(), None, "off by default");
        let asked = max_output(&["--max-output-tokens", "2k"]).unwrap();
        assert_eq!(asked, Some(Budget::new(2000)));
        let only_own = max_output(&["--max-output-tokens", "0"]).unwrap();
        assert_eq!(only_own, Some(Budget::new(0)));
        assert!(max_output(&["--max-output-tokens", "lots"]).is_err());
    }
}
