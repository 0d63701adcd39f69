//! The native controller: mcp-launch's own MCP→OpenAPI bridge, serving the HTTP surface mcpo
//! serves (`POST /<server>/<tool>`, per-server `openapi.json` and `docs`) from our own MCP
//! sessions inside the `up` process, so a stack needs no Python.
//!
//! - [`openapi`]: each server's OpenAPI document, generated from its tools' definitions in
//!   mcpo's outer shape, so [`crate::launch::spec::merge`] takes it unchanged.
//! - [`bridge`]: the HTTP service over long-lived, shared, self-restarting upstream sessions.

pub mod bridge;
pub mod openapi;
