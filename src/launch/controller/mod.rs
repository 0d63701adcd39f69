//! The controllers that serve a stack's tools over HTTP behind its front: mcpo (`mcpo`, a
//! Python process of its own, supervised and restarted) or the native bridge (`native`, in this
//! process, over the preflight's sessions). A running stack holds exactly one [`Controller`]:
//! its per-server documents and its stop are asked of it, whichever it is.

pub mod mcpo;
pub mod native;

use std::time::Duration;

use serde_json::Value;
use tokio::sync::Mutex;

use self::mcpo::{ControllerError, McpoLaunch};
use self::native::bridge::Bridge;
use crate::process::ProcessGuard;

/// The stack's controller: one of the two, never both or neither.
pub enum Controller {
    /// mcpo, a process of its own that the supervisor restarts.
    Mcpo {
        /// How to (re)start it.
        launch: McpoLaunch,
        /// Its process; `None` while it is being restarted and once stopped.
        process: Mutex<Option<ProcessGuard>>,
    },
    /// The native bridge, in this process.
    Native(Bridge),
}

impl Controller {
    /// mcpo, started.
    pub fn mcpo(guard: ProcessGuard, launch: McpoLaunch) -> Controller {
        Controller::Mcpo {
            launch,
            process: Mutex::new(Some(guard)),
        }
    }

    /// The native bridge, when it is the controller.
    pub fn bridge(&self) -> Option<&Bridge> {
        match self {
            Controller::Native(bridge) => Some(bridge),
            Controller::Mcpo { .. } => None,
        }
    }

    /// mcpo's process slot, when mcpo is the controller.
    pub fn process(&self) -> Option<&Mutex<Option<ProcessGuard>>> {
        match self {
            Controller::Mcpo { process, .. } => Some(process),
            Controller::Native(_) => None,
        }
    }

    /// Each server's OpenAPI document, in the order of `names`: the bridge's as they are (no
    /// request to ourselves), mcpo's fetched from `base` with `key`.
    pub async fn documents(
        &self,
        client: &reqwest::Client,
        (base, key): (&str, &str),
        names: &[String],
    ) -> Vec<Result<Value, ControllerError>> {
        let Controller::Native(bridge) = self else {
            return mcpo::fetch_documents(client, base, key, names).await;
        };
        names
            .iter()
            .map(|name| {
                bridge.document(name).ok_or_else(|| ControllerError::Fetch {
                    server: name.clone(),
                    message: "not served by the native bridge".into(),
                })
            })
            .collect()
    }

    /// Stops it: mcpo's process group (TERM, `grace`, KILL) and its config file, which holds
    /// the servers' resolved secrets; the bridge's sessions. Returns what survived.
    pub async fn stop(&self, grace: Duration) -> Option<String> {
        match self {
            Controller::Native(bridge) => {
                bridge.shutdown().await;
                None
            }
            Controller::Mcpo { launch, process } => {
                let guard = process.lock().await.take();
                let _ = std::fs::remove_file(&launch.config);
                // stop_group also ends what left the group: mcpo runs each server in a session
                // of its own. The guard, dropped afterwards, finds nothing left to kill.
                let pgid = guard.as_ref().and_then(ProcessGuard::pgid)?;
                let stopped = crate::process::stop_group(pgid, grace).await;
                (!stopped).then(|| format!("mcpo (process group {pgid})"))
            }
        }
    }
}
