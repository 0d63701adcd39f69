//! `up`'s flags resolved: public URLs aligned with the configs, the tunnel (and its default),
//! the API key.

use std::path::PathBuf;

use crate::launch::tunnel::{self, TunnelKind};

use super::{TunnelMode, UpArgs};
use crate::cli::CliError;

/// `--public-url`: none, one for all stacks, or one per config.
pub(in crate::cli) fn align_public_urls(
    urls: &[String],
    stacks: usize,
) -> Result<Vec<Option<String>>, CliError> {
    for url in urls {
        let parsed = reqwest::Url::parse(url).map_err(|e| CliError::Usage {
            message: format!("--public-url {url:?} is not a URL: {e}"),
            help: "give the full base URL, like https://tools.example.com".into(),
        })?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
            return Err(CliError::Usage {
                message: format!("--public-url {url:?} must be an http(s) URL with a host"),
                help: "give the full base URL, like https://tools.example.com".into(),
            });
        }
    }
    let clean = |u: &String| Some(u.trim_end_matches('/').to_string());
    match urls.len() {
        0 => Ok(vec![None; stacks]),
        1 => Ok(vec![clean(&urls[0]); stacks]),
        n if n == stacks => Ok(urls.iter().map(clean).collect()),
        n => Err(CliError::Usage {
            message: format!("{n} --public-url values for {stacks} config files"),
            help: "give one --public-url per --config (in the same order), or one for all".into(),
        }),
    }
}

/// Resolves `--tunnel` (and its default) to the kind and the cloudflared program, or none.
pub(super) fn choose_tunnel(
    args: &UpArgs,
    public_urls: &[Option<String>],
) -> Result<Option<(TunnelKind, PathBuf)>, CliError> {
    let cloudflared = tunnel::find_cloudflared();
    let mode = match args.tunnel {
        Some(mode) => mode,
        None if cloudflared.is_some() => {
            anstream::eprintln!("tunnel: quick (cloudflared found; --tunnel none keeps it local)");
            TunnelMode::Quick
        }
        None => {
            if args.tunnel_name.is_some() {
                TunnelMode::Named
            } else {
                anstream::eprintln!(
                    "tunnel: none (cloudflared is not installed; serving local URLs)"
                );
                TunnelMode::None
            }
        }
    };
    if args.tunnel_name.is_some() && mode != TunnelMode::Named {
        return Err(CliError::Usage {
            message: "--tunnel-name only applies to --tunnel named".into(),
            help: "add --tunnel named, or drop --tunnel-name".into(),
        });
    }
    let kind = match mode {
        TunnelMode::None => return Ok(None),
        TunnelMode::Quick => TunnelKind::Quick,
        TunnelMode::Named => {
            if public_urls.iter().any(Option::is_none) {
                return Err(CliError::Usage {
                    message: "--tunnel named needs --public-url (the hostname your tunnel routes to the front)".into(),
                    help: "add --public-url https://tools.example.com (one per --config, or one for all)".into(),
                });
            }
            TunnelKind::Named {
                name: args.tunnel_name.clone(),
            }
        }
    };
    match cloudflared {
        Some(program) => Ok(Some((kind, program))),
        None => Err(CliError::Usage {
            message: format!("--tunnel {} needs cloudflared, which is not installed", if matches!(kind, TunnelKind::Quick) { "quick" } else { "named" }),
            help: format!("install it (https://developers.cloudflare.com/cloudflare-one/connections/connect-networks/downloads/) or set {}=/path/to/cloudflared; or use --tunnel none", tunnel::CLOUDFLARED_ENV),
        }),
    }
}

pub(super) fn validate_key(key: &str) -> Result<String, CliError> {
    let key = key.trim();
    if key.len() < 16 || !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(CliError::Usage {
            message: "--api-key must be at least 16 visible ASCII characters (no spaces)".into(),
            help: "leave it out for a random 40-character key, or use --shared-key for one random key for all stacks".into(),
        });
    }
    Ok(key.to_string())
}
