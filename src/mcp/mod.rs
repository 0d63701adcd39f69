//! The MCP client: JSON-RPC messages, the hardened stdio transport, Streamable HTTP and legacy
//! SSE transports, and the [`Session`] (handshake, paging, request multiplexing, server→client
//! requests).
//!
//! Knows nothing of configs, catalogs or terminals. Invariants: one reader task per
//! connection; responses matched by exact id; a closed connection fails every pending request
//! at once; non-JSON output never reaches the session.

pub mod cap;
mod error;
pub mod framing;
pub mod headers;
mod http;
pub mod limits;
pub mod message;
pub(crate) mod peer;
pub mod redact;
mod session;
pub(crate) mod sse;
mod stdio;

pub use error::McpError;
pub use limits::{Limits, MAX_TOOL_PAGES};
pub use message::RpcError;
pub use peer::{Notice, ServerRequestHandler};
pub use session::{
    declares_all, own_meta, relayed_capabilities, requires_task, supports_task, ConnectOptions,
    Endpoint, ServerInfo, Session, ToolList, DISCOVER_WINDOW, INIT_FAST_WINDOW, INIT_SLOW_WINDOW,
    INIT_TIMEOUT, INIT_TIMEOUT_ENV,
};
