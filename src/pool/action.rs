//! One upstream stopped or restarted on request (`mcp-launch top`'s `s` and `r`), the same way
//! through a gateway's control socket and through a stack front's admin route.

use serde_json::{json, Value};

use super::{Pool, PoolError, ServerState};

/// What is asked of an upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamAction {
    /// End its session now (its next request starts it again).
    Stop,
    /// End its session and start it again at once.
    Restart,
}

impl UpstreamAction {
    /// The action a word names (`stop`, `restart`).
    pub fn parse(word: &str) -> Option<UpstreamAction> {
        match word {
            "stop" => Some(UpstreamAction::Stop),
            "restart" => Some(UpstreamAction::Restart),
            _ => None,
        }
    }
}

/// What came of an action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acted {
    /// The server's name.
    pub server: String,
    /// Whether its session was ended (not for an always-on server, nor one a request holds).
    pub stopped: bool,
    /// A stop that could not be: the server is still up (always on, or busy with a request).
    pub refused: bool,
    /// For a restart, the start: `Err` says why it failed.
    pub started: Option<Result<(), String>>,
}

impl Acted {
    /// The answer as JSON: `{server, stopped}`, and `started` / `error` for a restart.
    pub fn to_json(&self) -> Value {
        let mut answer = json!({"server": self.server, "stopped": self.stopped});
        if let Some(started) = &self.started {
            answer["started"] = json!(started.is_ok());
            answer["error"] = json!(started.as_ref().err());
        }
        answer
    }
}

impl Pool {
    /// Carries `action` out on the server named `name`. A stateless-revision twin of the same
    /// name holds no session of the handshake era to stop, so the handshake one is taken first.
    pub async fn act(&self, name: &str, action: UpstreamAction) -> Result<Acted, PoolError> {
        let upstream = match (self.get(name), self.stateless(name)) {
            (Some(upstream), _) | (None, Some(upstream)) => upstream,
            (None, None) => self.upstream(name)?,
        };
        let stopped = upstream.stop_unless_used().await;
        let refused = action == UpstreamAction::Stop
            && !stopped
            && upstream.status().state == ServerState::Up;
        let started = match action {
            UpstreamAction::Restart => Some(upstream.ensure_connected().await),
            UpstreamAction::Stop => None,
        };
        Ok(Acted {
            server: name.to_string(),
            stopped,
            refused,
            started,
        })
    }
}
