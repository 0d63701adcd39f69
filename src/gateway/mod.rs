//! The gateway: `mcp-launch serve`, one MCP server in front of every configured server.

pub mod clients;
