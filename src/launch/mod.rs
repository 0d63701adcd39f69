//! Stacks: one config file becomes a running, authenticated, shareable HTTP stack.
//!
//! - [`exposure`]: what a stack's front lets through (enabled servers, allowed tools,
//!   description overrides) — the gate and the published spec read the same value.
//! - [`openapi`]: merges the controller's per-server OpenAPI documents into one.
//! - [`front`]: the front proxy (key enforcement, deny/disable enforcement, `/healthz`,
//!   `/openapi.json`, streaming reverse proxy to the controller).
//! - [`tunnel`]: cloudflared quick and named tunnels.

pub mod exposure;
pub mod front;
pub mod openapi;
pub mod tunnel;

pub use exposure::{Exposure, ServerExposure, ToolRule, Verdict};
