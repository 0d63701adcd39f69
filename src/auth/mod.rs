//! Who may talk to whom: one room for credentials on both sides of the wire.
//!
//! - `keys`: the static keys of our own HTTP servers (fronts, the native bridge, the gateway).
//! - `pkce`, `metadata`, `challenge`: the OAuth 2.1 pieces both sides share — PKCE S256, the
//!   metadata documents (RFC 9728 protected resources, RFC 8414 / OpenID authorization servers,
//!   RFC 7591 client registrations), and the `WWW-Authenticate: Bearer` challenge.
//!
//! - `server`: OAuth 2.1 for clients that connect to us (protected resource, built-in
//!   authorization server).
//!
//! The MCP client, the gateway and the fronts use this room; it knows nothing of them.

pub mod challenge;
pub mod client;
mod keys;
pub mod metadata;
pub mod pkce;
pub mod server;

pub use keys::*;

/// Seconds since the epoch (token expiries, registrations, last use: both sides' clock).
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
