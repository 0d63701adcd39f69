//! `serve --http ADDR --tunnel quick|named`: the gateway's listener reached from the internet
//! through cloudflared (the tunnel code `up` runs, `launch::tunnel`), so that hosted MCP
//! clients (claude.ai, ChatGPT connectors) can connect. With a tunnel the public URL is what
//! clients know: it becomes the OAuth issuer and the protected resource, and its host is
//! accepted in `Host`. OAuth is the default; no authentication is refused (anyone who learns
//! the URL would run tools on this machine).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use crate::launch::tunnel::{self, Tunnel, TunnelError, TunnelKind, TunnelSpec};

use super::serve::{AuthMode, ServeArgs};
use super::up::TunnelMode;
use super::CliError;

/// A tunnel to open, resolved from the flags before anything starts.
#[derive(Debug, Clone)]
pub(super) struct TunnelPlan {
    kind: TunnelKind,
    program: PathBuf,
    /// `--public-url` (a named tunnel's hostname); a quick tunnel's comes from cloudflared.
    public_url: Option<String>,
}

impl TunnelPlan {
    /// The public URL when it is known before the tunnel runs (a named tunnel's).
    pub(super) fn known_url(&self) -> Option<&str> {
        self.public_url.as_deref()
    }
}

/// The tunnel `args` ask for, or none; refuses combinations that would serve the public
/// internet without authentication, or that the tunnel cannot reach.
pub(super) fn plan(args: &ServeArgs) -> Result<Option<TunnelPlan>, CliError> {
    let mode = args.tunnel.unwrap_or(TunnelMode::None);
    if mode != TunnelMode::Named && args.tunnel_name.is_some() {
        return Err(usage(
            "--tunnel-name only applies to --tunnel named",
            "add --tunnel named, or drop --tunnel-name",
        ));
    }
    if mode == TunnelMode::None {
        return match args.public_url {
            Some(_) => Err(usage(
                "--public-url names the hostname of a tunnel, and no tunnel is asked for",
                "add --tunnel named (your own tunnel routes that hostname here), or drop --public-url",
            )),
            None => Ok(None),
        };
    }
    refuse_open(args)?;
    let addr = args.http.unwrap_or_else(|| ([127, 0, 0, 1], 0).into());
    refuse_unreachable(addr)?;
    let kind = match mode {
        TunnelMode::Quick if args.public_url.is_some() => {
            return Err(usage(
                "--public-url does not apply to --tunnel quick: cloudflared makes up its URL",
                "drop --public-url (the quick tunnel's URL is printed once it is up), or use --tunnel named with your hostname",
            ))
        }
        TunnelMode::Named if args.public_url.is_none() => {
            return Err(usage(
                "--tunnel named needs --public-url (the hostname your tunnel routes to this gateway)",
                "add --public-url https://tools.example.com",
            ))
        }
        TunnelMode::Named => TunnelKind::Named {
            name: args.tunnel_name.clone(),
        },
        _ => TunnelKind::Quick,
    };
    let public_url = match &args.public_url {
        Some(url) => super::up::align_public_urls(std::slice::from_ref(url), 1)?.remove(0),
        None => None,
    };
    let program = tunnel::find_cloudflared().ok_or(TunnelError::NotInstalled { program: None })?;
    Ok(Some(TunnelPlan {
        kind,
        program,
        public_url,
    }))
}

/// The authentication a tunnel allows: never none. (`--no-auth` and `--auth none` stay
/// loopback-only; there is deliberately no opt-in to an open public endpoint.)
fn refuse_open(args: &ServeArgs) -> Result<(), CliError> {
    if args.no_auth || args.auth == Some(AuthMode::None) {
        return Err(usage(
            "--tunnel puts the gateway on the internet, and --no-auth (--auth none) would let anyone who learns the URL run its tools on this machine",
            "drop --no-auth: with a tunnel clients log in with OAuth (the default; you consent to each) or send a key (--auth key)",
        ));
    }
    Ok(())
}

/// cloudflared forwards to `127.0.0.1:PORT`: the listener must be reachable there.
fn refuse_unreachable(addr: SocketAddr) -> Result<(), CliError> {
    let ip = addr.ip();
    if (ip.is_unspecified() && ip.is_ipv4()) || ip == std::net::Ipv4Addr::LOCALHOST {
        return Ok(());
    }
    Err(usage(
        &format!("--tunnel forwards to 127.0.0.1, and --http {addr} is not reachable there"),
        "bind --http 127.0.0.1:PORT (the tunnel makes it public)",
    ))
}

fn usage(message: &str, help: &str) -> CliError {
    CliError::Usage {
        message: message.to_string(),
        help: help.to_string(),
    }
}

/// An open tunnel and the public base URL it serves (no trailing slash).
pub(super) struct Opened {
    /// The running cloudflared: `shutdown()` on the way out; dropping it kills it.
    pub(super) tunnel: Tunnel,
    /// The tunnel's kind, for messages.
    pub(super) kind: TunnelKind,
    /// `https://…`: what hosted clients are given.
    pub(super) base: String,
}

/// Opens the planned tunnel to the loopback `port` and waits until it carries traffic.
pub(super) async fn open(plan: &TunnelPlan, port: u16) -> Result<Opened, CliError> {
    eprintln!("mcp-launch serve: opening a {} to port {port}…", plan.kind);
    let spec = TunnelSpec::to_local_port(plan.kind.clone(), plan.program.clone(), port);
    let sink: crate::process::LineSink =
        Arc::new(|line: &str| tracing::debug!(line, "cloudflared"));
    let tunnel = tunnel::start(&spec, sink).await?;
    // A quick tunnel's URL comes from cloudflared; a named one's is --public-url (required).
    let base = tunnel.url.clone().or_else(|| plan.public_url.clone());
    let Some(base) = base else {
        tunnel.guard.shutdown().await;
        return Err(usage(
            "the tunnel is up but named no public URL",
            "pass --tunnel named with --public-url https://your.host",
        ));
    };
    Ok(Opened {
        tunnel,
        kind: plan.kind.clone(),
        base,
    })
}

/// Tells the operator the public URL and what to paste into a hosted client.
pub(super) fn announce(opened: &Opened, auth: &AuthMode) {
    let url = format!("{}/mcp", opened.base);
    eprintln!("mcp-launch serve: public at {url} ({})", opened.kind);
    match auth {
        AuthMode::Oauth => eprintln!(
            "  Connect a hosted client with this URL and OAuth (no client id or secret needed; it registers itself):\n  \
             claude.ai: Settings → Connectors → Add custom connector → Remote MCP server URL: {url}\n  \
             ChatGPT: Settings → Apps & Connectors → Advanced settings → Developer mode on, then Create → MCP Server URL: {url}, Authentication: OAuth\n  \
             Each client then asks for your consent here (a one-time code); `mcp-launch auth clients` lists who holds access."
        ),
        AuthMode::Oidc(issuer) => eprintln!(
            "  Clients log in at your OpenID provider ({issuer}); its access tokens must name {url} as their audience (or --oidc-audience)."
        ),
        _ => eprintln!(
            "  Clients send the key as `Authorization: Bearer <key>` (scripts, Claude Code); hosted clients (claude.ai, ChatGPT) cannot: use --auth oauth for them."
        ),
    }
    if opened.kind == TunnelKind::Quick {
        eprintln!(
            "  A quick tunnel's URL changes at every start: clients must be given the new one (a named tunnel keeps it)."
        );
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn serve_args(flags: &[&str]) -> ServeArgs {
        let argv = [&["mcp-launch", "serve"], flags].concat();
        match Cli::try_parse_from(argv).expect("flags parse").command {
            Command::Serve(args) => *args,
            other => panic!("not serve: {other:?}"),
        }
    }

    fn refused(flags: &[&str]) -> String {
        match plan(&serve_args(flags)) {
            Err(CliError::Usage { message, .. }) => message,
            other => panic!("{flags:?} was not refused: {other:?}"),
        }
    }

    #[test]
    fn no_authentication_is_refused_with_a_tunnel() {
        let http = ["--http", "127.0.0.1:8000", "--tunnel", "quick"];
        let message = refused(&[&http[..], &["--no-auth"]].concat());
        assert!(message.contains("anyone who learns the URL"), "{message}");
        let message = refused(&[&http[..], &["--auth", "none"]].concat());
        assert!(message.contains("--no-auth (--auth none)"), "{message}");
    }

    #[test]
    fn the_tunnel_must_reach_the_listener_and_know_its_url() {
        let message = refused(&["--http", "[::1]:8000", "--tunnel", "quick"]);
        assert!(message.contains("not reachable"), "{message}");
        let message = refused(&["--http", "127.0.0.1:8000", "--tunnel", "named"]);
        assert!(message.contains("needs --public-url"), "{message}");
        let quick = ["--http", "127.0.0.1:8000", "--tunnel", "quick"];
        let message = refused(&[&quick[..], &["--public-url", "https://a.example"]].concat());
        assert!(message.contains("does not apply"), "{message}");
        let message = refused(&[
            "--http",
            "127.0.0.1:8000",
            "--public-url",
            "https://a.example",
        ]);
        assert!(message.contains("no tunnel"), "{message}");
        let message = refused(&["--http", "127.0.0.1:8000", "--tunnel-name", "web"]);
        assert!(message.contains("--tunnel named"), "{message}");
    }

    #[test]
    fn a_tunnel_needs_http() {
        let parsed = Cli::try_parse_from(["mcp-launch", "serve", "--tunnel", "quick"]);
        assert!(parsed.is_err(), "--tunnel without --http parsed");
    }
}
