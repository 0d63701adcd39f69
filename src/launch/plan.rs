//! Planning a launch before anything starts: keys and ports.
//!
//! Ports: stack `i` gets `base + i` for its front and its controller. A port that is taken
//! moves to the next free one — unless the user gave the base explicitly, in which case a taken
//! port is an error (they asked for that port; silently moving would break their client).

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr, TcpListener};

pub use crate::auth::{generate_key, KEY_LEN};

/// How many ports past a taken one we try before giving up.
const PORT_SEARCH: u16 = 100;

/// Why a port could not be planned.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum PortError {
    /// The user asked for this port and it is in use.
    #[error("port {port} on {host} is already in use ({what})")]
    Taken {
        /// The port.
        port: u16,
        /// The address.
        host: IpAddr,
        /// Which port it was meant to be (`front port of stack X`).
        what: String,
    },
    /// No free port in the searched range.
    #[error("no free port in {from}..{to} on {host} ({what})")]
    Exhausted {
        /// First port tried.
        from: u16,
        /// Last port tried.
        to: u16,
        /// The address.
        host: IpAddr,
        /// Which port it was meant to be.
        what: String,
    },
}

impl PortError {
    /// What to do about it.
    pub fn help(&self) -> String {
        match self {
            PortError::Taken { port, .. } => format!(
                "stop what listens there (`ss -ltnp 'sport = :{port}'` shows it; `mcp-launch down` \
                 stops earlier stacks), or pick another base port; without --port/--mcpo-port a \
                 taken port moves to the next free one"
            ),
            PortError::Exhausted { .. } => {
                "free some ports or choose another base with --port / --mcpo-port".into()
            }
        }
    }
}

/// Hands out ports for the stacks of one launch, never the same port twice.
#[derive(Debug)]
pub struct PortPlanner {
    host: IpAddr,
    given: BTreeSet<u16>,
}

/// A planned port.
#[derive(Debug)]
pub struct PlannedPort {
    /// The port.
    pub port: u16,
    /// The port first asked for, when it was taken and we moved on.
    pub moved_from: Option<u16>,
    /// The bound listener, when the caller asked to keep it (the front serves on it, so no
    /// other process can take the port in between).
    pub listener: Option<TcpListener>,
}

impl PortPlanner {
    /// A planner for ports on `host`.
    pub fn new(host: IpAddr) -> Self {
        Self {
            host,
            given: BTreeSet::new(),
        }
    }

    /// The first free port from `wanted` on (only `wanted` itself when `explicit`). With
    /// `keep`, the bound listener is returned; otherwise it is closed again for another
    /// process (the controller) to bind.
    pub fn take(
        &mut self,
        wanted: u16,
        explicit: bool,
        keep: bool,
        what: &str,
    ) -> Result<PlannedPort, PortError> {
        let last = wanted.saturating_add(PORT_SEARCH);
        for port in wanted..=last {
            if self.given.contains(&port) {
                if explicit {
                    break;
                }
                continue;
            }
            match TcpListener::bind(SocketAddr::new(self.host, port)) {
                Ok(listener) => {
                    self.given.insert(port);
                    return Ok(PlannedPort {
                        port,
                        moved_from: (port != wanted).then_some(wanted),
                        listener: keep.then_some(listener),
                    });
                }
                Err(_) if explicit => break,
                Err(_) => continue,
            }
        }
        if explicit {
            Err(PortError::Taken {
                port: wanted,
                host: self.host,
                what: what.into(),
            })
        } else {
            Err(PortError::Exhausted {
                from: wanted,
                to: last,
                host: self.host,
                what: what.into(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;

    #[test]
    fn keys_are_long_random_and_alphanumeric() {
        let a = generate_key();
        let b = generate_key();
        assert_eq!(a.len(), KEY_LEN);
        assert!(a.bytes().all(|c| c.is_ascii_alphanumeric()), "{a}");
        assert_ne!(a, b);
    }

    #[test]
    fn taken_ports_move_unless_explicit() {
        let host = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let blocker = TcpListener::bind((host, 0)).unwrap();
        let busy = blocker.local_addr().unwrap().port();
        let mut planner = PortPlanner::new(host);
        let moved = planner.take(busy, false, false, "front").unwrap();
        assert!(moved.port > busy);
        assert_eq!(moved.moved_from, Some(busy));
        let err = planner
            .take(busy, true, false, "front port of stack a")
            .unwrap_err();
        assert!(
            matches!(err, PortError::Taken { port, .. } if port == busy),
            "{err:?}"
        );
        assert!(err.to_string().contains("front port of stack a"));
        // A port handed out once is not handed out again, even though it is free now.
        let again = planner.take(moved.port, false, true, "x").unwrap();
        assert_ne!(again.port, moved.port);
        assert!(again.listener.is_some());
    }
}
