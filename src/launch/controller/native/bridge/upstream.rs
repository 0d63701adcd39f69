//! One server behind the bridge: its session in the pool (lazy start, shared session, restart
//! with backoff: see `crate::pool`) and the tools the bridge serves for it.
//!
//! A server that dies while idle is noticed by the next call (its request fails at once with
//! the exit status): that call gets the 502 and the restart follows the pool's schedule.

use std::sync::{Arc, PoisonError, RwLock};

use crate::pool::Upstream;

use super::tools::ToolSet;

/// A server's pool entry and its tools.
pub(super) struct Served {
    pub(super) upstream: Arc<Upstream>,
    /// Its tools; replaced whole when the server turns out to offer others.
    tools: RwLock<Arc<ToolSet>>,
}

impl Served {
    pub(super) fn new(upstream: Arc<Upstream>, tools: ToolSet) -> Served {
        Served {
            upstream,
            tools: RwLock::new(Arc::new(tools)),
        }
    }

    /// The server's route name.
    pub(super) fn name(&self) -> &str {
        self.upstream.name()
    }

    /// The server's current tools.
    pub(super) fn tools(&self) -> Arc<ToolSet> {
        Arc::clone(&self.tools.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Serves `tools` from now on; calls already validated finish with the old set.
    pub(super) fn replace_tools(&self, tools: ToolSet) {
        *self.tools.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(tools);
    }
}
