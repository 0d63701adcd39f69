//! Stacks: one config file becomes a running, authenticated, shareable HTTP stack.
//!
//! - [`control`]: acting on recorded stacks from another process (status, openapi, down).
//! - [`exposure`]: what a stack's front lets through (enabled servers, allowed tools,
//!   description overrides) — the gate and the published spec read the same value.
//! - [`mask`]: secrets out of every log line.
//! - [`controller`]: one `Controller`: mcpo (its config, start-up, per-server documents) or
//!   native, mcp-launch's own MCP→OpenAPI bridge (no Python).
//! - [`spec`]: the published spec: merges the controller's per-server OpenAPI documents into one
//!   (refs, shared responses, warnings) and assembles what a stack publishes.
//! - [`front`]: the front proxy (key enforcement, deny/disable enforcement, `/healthz`,
//!   `/openapi.json`, streaming reverse proxy to the controller).
//! - [`plan`]: keys and ports, before anything starts.
//! - [`stack`]: one running stack — start, supervise (restart with backoff), stop.
//! - [`events`]: what a launch reports while it runs (the CLI prints, the TUI draws).
//! - [`state`]: the state file (`.mcp-launch/state.json`, 0600, locked, atomic).
//! - [`tunnel`]: cloudflared quick and named tunnels.

pub mod control;
pub mod controller;
pub mod events;
pub mod exposure;
pub mod front;
pub mod launcher;
pub mod mask;
pub mod plan;
pub mod spec;
pub mod stack;
pub mod state;
pub mod tunnel;

pub use exposure::{Exposure, ServerExposure, ToolRule, Verdict};
