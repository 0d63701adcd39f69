//! The client secrets of pre-registered clients, known to this process only. They come from a
//! server's `oauth.clientSecret` (a variable) whenever its config is read, and are never
//! written to the token store: a grant made with one only says that it needs it, and a
//! refresh finds it here.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// Secrets by (MCP endpoint, client id).
static KNOWN: Mutex<Option<HashMap<(String, String), String>>> = Mutex::new(None);

/// Remembers the secret of `client_id` at the MCP endpoint `url`, for this process.
pub fn remember(url: &str, client_id: &str, secret: &str) {
    let mut known = KNOWN.lock().unwrap_or_else(PoisonError::into_inner);
    known
        .get_or_insert_with(HashMap::new)
        .insert((url.to_string(), client_id.to_string()), secret.to_string());
}

/// The secret remembered for `client_id` at `url`.
pub(crate) fn known(url: &str, client_id: &str) -> Option<String> {
    let known = KNOWN.lock().unwrap_or_else(PoisonError::into_inner);
    known
        .as_ref()?
        .get(&(url.to_string(), client_id.to_string()))
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_found_for_its_endpoint_and_client_only() {
        remember("https://a.example/mcp", "app", "s3");
        assert_eq!(known("https://a.example/mcp", "app").as_deref(), Some("s3"));
        assert_eq!(known("https://a.example/mcp", "other"), None);
        assert_eq!(known("https://b.example/mcp", "app"), None);
    }
}
