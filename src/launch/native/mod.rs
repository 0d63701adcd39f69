//! The native controller: the HTTP surface mcpo serves (`POST /<server>/<tool>`, per-server
//! `openapi.json` and `docs`), served from our own MCP sessions inside the `up` process, so a
//! stack needs no Python.
//!
//! - [`bridge`]: the HTTP service over long-lived, shared, self-restarting upstream sessions.

pub mod bridge;
