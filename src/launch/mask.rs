//! Masking secrets out of what we log and show (the masker itself lives in
//! [`crate::process::Masker`], so a child's output is masked before anything stores it), and
//! keys as shown to the operator.

pub use crate::process::{is_secret_name, Masker, MASK};

use crate::config::ServerSpec;

/// Teaches `masker` a server's secrets: every value of its `env` block, every header value
/// (resolved) and the URL's user, password and query values, whatever their names — a
/// connection string or a custom auth header is as secret as a variable named `*_TOKEN`.
pub fn add_server_secrets(masker: &Masker, spec: &ServerSpec) {
    match spec {
        ServerSpec::Stdio { env, .. } => masker.add_all(env.iter().map(|(_, v)| v.as_str())),
        ServerSpec::Http {
            url,
            headers,
            oauth,
        } => {
            crate::mcp::redact::add_remote(masker, url, headers.iter().map(|(_, v)| v.as_str()));
            masker.add_all(oauth.iter().filter_map(|o| o.client_secret.as_deref()));
        }
        ServerSpec::Sse { url, headers } => {
            crate::mcp::redact::add_remote(masker, url, headers.iter().map(|(_, v)| v.as_str()))
        }
    }
}

/// A key as shown to the operator: in full when `reveal`, else `abcd…` — enough to tell keys
/// apart, not enough to use one (`status`, the TUI's results).
pub fn displayed_key(key: &str, reveal: bool) -> String {
    if reveal {
        key.to_string()
    } else {
        format!("{}…", key.chars().take(4).collect::<String>())
    }
}
