//! End-to-end tests of the mcp-launch binary.
