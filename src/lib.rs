//! mcp-launch: inspect, trim, launch and serve stacks of MCP servers.
//!
//! Layout (arrows point down only):
//! - [`cli`]: clap definitions, one file per command; commands orchestrate, they hold no logic.
//! - [`catalog`]: what we know of each server: status, tools, token cost (the preflight).
//! - [`config`]: discovery, `mcpServers` / `servers` formats, `.env` loading, `${VAR}`
//!   interpolation, validation with file:line:column.
//! - [`mcp`]: the MCP client: JSON-RPC messages, the hardened stdio transport, Streamable HTTP
//!   and legacy SSE transports, the session (handshake, paging, multiplexing).
//! - [`doctor`]: checks that the external programs (python3, node/npx, uv, cloudflared, mcpo)
//!   are installed and actually run, each bounded by a timeout.
//! - [`backoff`]: the one backoff (exponential delays between attempts).
//! - [`duration`]: the one checked reader of durations from flags and environment variables.
//! - [`files`]: the one atomic writer (temporary file, fsync, rename).
//! - [`listen`]: the one hardened HTTP accept loop (TCP_NODELAY, header timeout, connection
//!   cap, graceful shutdown) of every TCP listener we serve.
//! - [`memory`]: freed heap pages given back to the system (long-lived processes).
//! - [`serving`]: what our MCP servers (gateway, lean tools) share of rmcp.
//! - [`gateway`]: `mcp-launch serve`, one MCP server in front of every configured server.
//! - [`launch`]: stacks — controllers, the front proxy, the merged OpenAPI, tunnels, state and
//!   supervision.
//! - [`project`]: the project's `.mcp-launch/` directory (created with a `.gitignore` that keeps
//!   secrets out of git) and the secret files git tracks anyway.
//! - [`process`]: the one way we spawn and end child processes (own process group, stderr ring
//!   buffer, kill-the-group on drop).
//! - [`search`]: BM25, regex and exact search over tool definitions, with a persisted index.
//! - [`tools`]: the lean tools server (grep, cat, find, ls, head, tail, read_output).
//! - [`tui`]: the ratatui application of `up --tui` (pure state and update, screens, runtime).
//! - [`outputs`]: budgeted results: cut at clean boundaries, the envelope, persisted handles.
//! - [`observe`]: the metrics registry (Prometheus `/metrics`), `/healthz` and `/readyz`; rooms
//!   record events, observe decides how they are exported.
//! - [`output`]: human tables, `--json` rendering and the one error envelope.
//! - `fuzzing` (hidden): the bodies of the `cargo fuzz` targets, replayed on their corpora by
//!   `cargo test`.
//! - [`observe`]: how the house is seen from outside: traces over OTLP (`observe::trace`).
//! - [`pins`]: the releases of external programs we know to work (mcpo's), for `doctor` and
//!   `launch` alike.
//! - [`state`]: what replicas share (handles, usage, OAuth clients and tokens, sessions) in
//!   Redis with `serve --http --state`; local files otherwise.
#![warn(missing_docs)]

pub mod auth;
pub mod backoff;
pub mod catalog;
pub mod cli;
pub mod client_id;
pub mod config;
pub mod doctor;
pub mod duration;
pub mod error;
pub mod files;
#[doc(hidden)]
pub mod fuzzing;
pub mod gateway;
pub mod launch;
pub mod listen;
pub mod mcp;
pub mod memory;
pub mod model;
pub mod observe;
pub mod output;
pub mod outputs;
pub mod pins;
pub mod pool;
pub mod process;
pub mod project;
pub mod search;
pub mod serving;
pub mod state;
pub mod tools;
pub mod tui;

#[cfg(test)]
mod architecture;
