//! The front's MCP side: `/mcp` (and, with OAuth, the authorization server's routes and the
//! protected-resource metadata) served beside the REST routes on the stack's one port.
//!
//! `launch` knows no gateway (both sit on the same floor): whoever composes the stack (`up`)
//! hands the front an [`McpMount`], which builds the routes for a public base URL. The front
//! builds them again when that URL changes (a restarted quick tunnel comes back under a new
//! one: an OAuth issuer and its tokens' audience are that URL). The side checks its own
//! credentials (a bearer key or an OAuth token); the stack's `X-API-Key` stays the REST side's.

use std::sync::{Arc, PoisonError, RwLock};

use axum::extract::Request;
use axum::response::Response;
use axum::Router;
use tower::ServiceExt;

/// The routes of the MCP side and the paths they answer (exactly; every other path stays
/// the REST side's).
#[derive(Clone)]
pub struct McpSide {
    /// The routes: `/mcp`, and what its authorization needs.
    pub routes: Router,
    /// The paths the routes answer, e.g. `/mcp`, `/.well-known/oauth-protected-resource/mcp`.
    pub paths: Vec<String>,
}

/// Builds the MCP side for the stack's public base URL (no trailing slash).
pub type McpMount = Arc<dyn Fn(&str) -> McpSide + Send + Sync>;

/// The mount and the side it built last, for which base URL.
#[derive(Default)]
pub(super) struct Mounted {
    state: RwLock<Option<(McpMount, String, McpSide)>>,
}

impl Mounted {
    /// Mounts `mount` at `base`.
    pub(super) fn mount(&self, mount: McpMount, base: &str) {
        let side = mount(base);
        *write(&self.state) = Some((mount, base.to_string(), side));
    }

    /// Builds the side again when the public base URL is no longer `base`.
    pub(super) fn follow(&self, base: &str) {
        let mut state = write(&self.state);
        if let Some((mount, current, side)) = state.as_mut() {
            if current != base {
                *side = mount(base);
                *current = base.to_string();
            }
        }
    }

    /// The side's routes when it answers `path`.
    pub(super) fn routes_for(&self, path: &str) -> Option<Router> {
        let state = self.state.read().unwrap_or_else(PoisonError::into_inner);
        let (_, _, side) = state.as_ref()?;
        side.paths
            .iter()
            .any(|p| p == path)
            .then(|| side.routes.clone())
    }
}

/// Answers `request` with the side's `routes`.
pub(super) async fn answer(routes: Router, request: Request) -> Response {
    match routes.oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}
