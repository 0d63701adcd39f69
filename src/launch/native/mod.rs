//! The native controller: mcp-launch's own MCP→OpenAPI bridge, serving the HTTP surface mcpo
//! serves (`POST /<server>/<tool>`, `/<server>/openapi.json`) from our own upstream sessions,
//! so a stack needs no Python.
//!
//! - [`openapi`]: each server's OpenAPI document, generated from its tools' definitions in
//!   mcpo's outer shape, so [`crate::launch::openapi::merge`] takes it unchanged.

pub mod openapi;
