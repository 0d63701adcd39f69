//! `POST /_mcp-launch/upstream` `{"server", "action": "stop"|"restart"}` with the admin token:
//! one of the native bridge's servers stopped (its next call starts it again) or restarted now,
//! through the bridge's pool as a gateway's control socket does it (`mcp-launch top`'s `s`
//! and `r`). An mcpo stack runs its servers itself: 409.

use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::pool::UpstreamAction;

use super::{write, Front, FrontError};

/// The admin route `mcp-launch top` calls to stop or restart one server.
pub const UPSTREAM_PATH: &str = "/_mcp-launch/upstream";

/// The largest body: a server's name and a word.
const MAX_BODY: usize = 4 * 1024;

/// The body of the route.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Asked {
    server: String,
    action: String,
}

impl Front {
    /// Lets the admin route act on the servers of `pool` (the native bridge's); until then it
    /// answers 409 (an mcpo stack).
    pub fn set_pool(&self, pool: crate::pool::Pool) {
        *write(&self.inner.pool) = Some(pool);
    }
}

/// The route: the admin token is checked before a byte of the body is read.
pub(super) async fn upstream(
    State(front): State<Front>,
    request: Request,
) -> Result<Response, FrontError> {
    if !crate::auth::has_admin_token(request.headers(), &front.inner.config.admin_token) {
        return Err(FrontError::AdminUnauthorized);
    }
    let bad = |reason: String| FrontError::BadBody { reason };
    let body = axum::body::to_bytes(request.into_body(), MAX_BODY)
        .await
        .map_err(|e| bad(format!("{e} (at most {MAX_BODY} bytes)")))?;
    let asked: Asked = serde_json::from_slice(&body).map_err(|e| bad(e.to_string()))?;
    let action = UpstreamAction::parse(&asked.action).ok_or_else(|| {
        bad(format!(
            "action {:?} is neither \"stop\" nor \"restart\"",
            asked.action
        ))
    })?;
    let pool = (front.inner.pool.read())
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
        .ok_or_else(|| FrontError::NoBridge {
            stack: front.stack().to_string(),
        })?;
    let acted = pool
        .act(&asked.server, action)
        .await
        .map_err(|_| FrontError::UnknownServer {
            stack: front.stack().to_string(),
            server: asked.server.clone(),
            enabled: pool.status().into_iter().map(|s| s.name).collect(),
        })?;
    if acted.refused {
        return Err(FrontError::UpstreamBusy {
            server: asked.server,
        });
    }
    Ok(Json(acted.to_json()).into_response())
}
