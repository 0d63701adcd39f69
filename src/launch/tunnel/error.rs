//! Why a tunnel did not come up, with cloudflared's last words and the next step. `kind()`
//! strings are part of the `--json` error envelope and must never be renamed.

use std::path::PathBuf;
use std::time::Duration;

use crate::process::{Exit, SpawnError, Squatted};

use super::TunnelKind;

/// Where to get cloudflared.
const INSTALL_URL: &str =
    "https://developers.cloudflare.com/cloudflare-one/connections/connect-networks/downloads/";

/// Why [`start`](super::start) failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum TunnelError {
    /// No cloudflared to run.
    #[error("{}", not_installed_text(.program))]
    NotInstalled {
        /// The path that was tried; `None` when `MCP_LAUNCH_CLOUDFLARED` is unset and
        /// `cloudflared` is not on `PATH`.
        program: Option<PathBuf>,
    },
    /// cloudflared exists but could not be started.
    #[error(transparent)]
    Spawn(SpawnError),
    /// A named tunnel was asked for without a name and without `TUNNEL_TOKEN`.
    #[error("a named tunnel needs a tunnel name or a token, and neither was given")]
    NoToken,
    /// The metrics port we meant to give cloudflared is taken. Its `/quicktunnel` answer would
    /// come from someone else, so we do not start.
    #[error("127.0.0.1:{port} (cloudflared's metrics address) is already in use")]
    MetricsPortInUse {
        /// The port.
        port: u16,
    },
    /// The metrics port answered from a process that is not cloudflared (it took the port
    /// between our check and cloudflared's bind): its URL and readiness are not ours.
    #[error("cloudflared's metrics {0}")]
    MetricsPortSquatted(Squatted),
    /// cloudflared ended before the tunnel was ready.
    #[error("cloudflared ({kind}) {exit} before the tunnel was ready{}", tail_text(.tail))]
    Exited {
        /// The tunnel that was being started.
        kind: TunnelKind,
        /// How it ended.
        exit: Exit,
        /// Its last log lines.
        tail: String,
    },
    /// A ready tunnel's cloudflared ended: the public URL no longer reaches us.
    #[error("cloudflared ({kind}) {exit}: the public URL no longer reaches this machine{}", tail_text(.tail))]
    Ended {
        /// The tunnel that ended.
        kind: TunnelKind,
        /// How it ended.
        exit: Exit,
        /// Its last log lines.
        tail: String,
    },
    /// The tunnel was not ready in time; cloudflared has been stopped.
    #[error("cloudflared ({kind}) was not ready after {}: {}{}", secs(.waited), timeout_reason(.kind, *.saw_url), tail_text(.tail))]
    Timeout {
        /// The tunnel that was being started.
        kind: TunnelKind,
        /// How long we waited.
        waited: Duration,
        /// Its last log lines.
        tail: String,
        /// Whether a quick tunnel URL had appeared (in the log or from the metrics server).
        saw_url: bool,
    },
}

impl TunnelError {
    /// A stable snake_case name for the `type` field of the JSON error envelope.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::NotInstalled { .. } => "cloudflared_not_installed",
            Self::Spawn(_) => "cloudflared_spawn_failed",
            Self::NoToken => "tunnel_token_missing",
            Self::MetricsPortInUse { .. } => "tunnel_metrics_port_in_use",
            Self::MetricsPortSquatted(_) => "port_squatted",
            Self::Exited { .. } => "tunnel_exited",
            Self::Ended { .. } => "tunnel_ended",
            Self::Timeout { .. } => "tunnel_timeout",
        }
    }

    /// What the user can do about it.
    pub fn help(&self) -> String {
        match self {
            Self::NotInstalled { .. } | Self::Spawn(_) => format!(
                "install cloudflared ({INSTALL_URL}) or point to it with \
                 MCP_LAUNCH_CLOUDFLARED=/path/to/cloudflared"
            ),
            Self::NoToken => "pass --tunnel-name NAME (a tunnel created with `cloudflared tunnel \
                 create NAME`), or set TUNNEL_TOKEN to the token of a tunnel from the Cloudflare \
                 dashboard"
                .to_string(),
            Self::MetricsPortInUse { port } => format!(
                "another process listens on 127.0.0.1:{port} (often a cloudflared left over \
                 from an earlier run): stop it, or start again to get another port"
            ),
            Self::MetricsPortSquatted(squatted) => format!(
                "another process took cloudflared's metrics port before cloudflared could bind \
                 it; its tunnel URL was not used. {}, then start again (a new port is picked)",
                squatted.next_step()
            ),
            Self::Exited { kind, .. } | Self::Timeout { kind, .. } => failure_help(kind),
            Self::Ended { kind, .. } => format!(
                "{} Start again to open a new tunnel{}",
                failure_help(kind),
                match kind {
                    TunnelKind::Quick =>
                        ": a quick tunnel gets a new URL, so hosted clients \
                         must be given it again (a named tunnel keeps its URL)",
                    TunnelKind::Named { .. } => "",
                }
            ),
        }
    }
}

impl crate::error::Actionable for TunnelError {
    fn kind(&self) -> &'static str {
        TunnelError::kind(self)
    }
    fn help(&self) -> String {
        TunnelError::help(self)
    }
}

impl From<SpawnError> for TunnelError {
    /// A missing program is "not installed"; every other failure keeps its cause.
    fn from(e: SpawnError) -> Self {
        match e {
            SpawnError::NotFound { program } => Self::NotInstalled {
                program: Some(program.into()),
            },
            other => Self::Spawn(other),
        }
    }
}

fn failure_help(kind: &TunnelKind) -> String {
    match kind {
        TunnelKind::Quick => "read cloudflared's last lines above; a quick tunnel needs \
             outbound HTTPS to api.trycloudflare.com and outbound port 7844 to Cloudflare's \
             edge (quick tunnels are rate-limited: wait a minute and retry)"
            .to_string(),
        TunnelKind::Named { name: Some(name) } => format!(
            "read cloudflared's last lines above; check that `cloudflared tunnel info {name}` \
             knows the tunnel and that its credentials are in ~/.cloudflared, and that outbound \
             port 7844 to Cloudflare's edge is open"
        ),
        TunnelKind::Named { name: None } => "read cloudflared's last lines above; check that \
             TUNNEL_TOKEN is the current token of the tunnel (Cloudflare dashboard → Networks → \
             Tunnels) and that outbound port 7844 to Cloudflare's edge is open"
            .to_string(),
    }
}

fn not_installed_text(program: &Option<PathBuf>) -> String {
    match program {
        Some(path) => format!("cloudflared not found at {}", path.display()),
        None => "cloudflared is not installed: it is not on PATH and MCP_LAUNCH_CLOUDFLARED is \
                 not set"
            .to_string(),
    }
}

fn timeout_reason(kind: &TunnelKind, saw_url: bool) -> &'static str {
    match (kind, saw_url) {
        (TunnelKind::Quick, false) => "no trycloudflare.com URL appeared",
        (TunnelKind::Quick, true) => "it got a URL but registered no connection to Cloudflare",
        (TunnelKind::Named { .. }, _) => "it registered no connection to Cloudflare",
    }
}

/// `30s`, `1.5s`.
fn secs(d: &Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0}s")
    } else {
        format!("{}s", (s * 1000.0).round() / 1000.0)
    }
}

fn tail_text(tail: &str) -> String {
    if tail.is_empty() {
        String::new()
    } else {
        let indented: Vec<String> = tail.lines().map(|l| format!("    {l}")).collect();
        format!("; last log lines:\n{}", indented.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_tunnel_the_wait_and_the_tail() {
        let err = TunnelError::Timeout {
            kind: TunnelKind::Quick,
            waited: Duration::from_millis(1500),
            tail: "a\nb".into(),
            saw_url: false,
        };
        assert_eq!(
            err.to_string(),
            "cloudflared (quick tunnel) was not ready after 1.5s: no trycloudflare.com URL \
             appeared; last log lines:\n    a\n    b"
        );
        let err = TunnelError::Exited {
            kind: TunnelKind::Named {
                name: Some("web".into()),
            },
            exit: Exit::Code(1),
            tail: String::new(),
        };
        assert_eq!(
            err.to_string(),
            "cloudflared (named tunnel `web`) exited with code 1 before the tunnel was ready"
        );
        assert!(err.help().contains("cloudflared tunnel info web"));
    }

    #[test]
    fn a_missing_program_is_not_installed_with_install_help() {
        let err = TunnelError::from(SpawnError::NotFound {
            program: "/opt/cf".into(),
        });
        assert_eq!(err.kind(), "cloudflared_not_installed");
        assert_eq!(err.to_string(), "cloudflared not found at /opt/cf");
        assert!(err.help().contains(INSTALL_URL));
        assert!(err
            .help()
            .contains("MCP_LAUNCH_CLOUDFLARED=/path/to/cloudflared"));
    }

    #[test]
    fn no_token_names_both_ways_out() {
        let help = TunnelError::NoToken.help();
        assert!(help.contains("--tunnel-name NAME") && help.contains("TUNNEL_TOKEN"));
    }
}
