//! Keys of our HTTP servers (a stack's front, the native bridge, the gateway): generated from
//! the OS's random source, and checked. Every comparison is constant-time in the key's content (only its length can
//! leak), and an empty configured secret never matches, so a misconfigured front fails closed.

use axum::http::header::AUTHORIZATION;
use axum::http::HeaderMap;
use subtle::{Choice, ConstantTimeEq};

/// Characters of generated keys: letters and digits only, so keys survive copy-paste, URLs
/// and shell quoting.
const KEY_ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
/// Length of generated keys: 40 characters of 62 symbols ≈ 238 bits.
pub const KEY_LEN: usize = 40;
/// The shortest key a listener reachable from other machines takes (`serve --http
/// --api-key`): 16 random letters and digits are ~95 bits; `a` was accepted.
pub const MIN_KEY_LEN: usize = 16;

/// A fresh random key of [`KEY_LEN`] letters and digits from the OS's random source.
pub fn generate_key() -> String {
    random_string(KEY_LEN)
}

/// `len` random letters and digits from the OS's random source (keys, PKCE verifiers, OAuth
/// `state` and codes: all are unreserved URI characters).
pub fn random_string(len: usize) -> String {
    let mut out = String::with_capacity(len);
    let mut buf = [0u8; 64];
    while out.len() < len {
        // getrandom fails only on a broken OS; a panic with the reason beats a weak key.
        getrandom::fill(&mut buf).expect("the operating system's random source failed");
        // Rejection sampling: 62 * 4 = 248, so bytes ≥ 248 are dropped to stay unbiased.
        for b in buf.iter().filter(|&&b| b < 248) {
            if out.len() == len {
                break;
            }
            out.push(KEY_ALPHABET[(*b % 62) as usize] as char);
        }
    }
    out
}

/// The header carrying the public API key (the alternative to `Authorization: Bearer`).
pub const API_KEY_HEADER: &str = "x-api-key";
/// The header carrying the admin token of `POST /_mcp-launch/reload`.
pub const ADMIN_HEADER: &str = "x-mcp-launch-admin";

/// Whether the request presents `key` as `X-API-Key: <key>` or `Authorization: Bearer <key>`.
pub fn has_api_key(headers: &HeaderMap, key: &str) -> bool {
    let from_x_api_key = single(headers, API_KEY_HEADER);
    matches_any(
        from_x_api_key.into_iter().chain(bearer_tokens(headers)),
        key,
    )
}

/// Whether the request presents `key` as `Authorization: Bearer <key>` (how the front hands
/// its internal key to a controller, and how gateway clients send theirs).
pub fn has_bearer(headers: &HeaderMap, key: &str) -> bool {
    matches_any(bearer_tokens(headers), key)
}

/// Whether the request presents the admin token in `X-MCP-Launch-Admin`.
pub fn has_admin_token(headers: &HeaderMap, token: &str) -> bool {
    matches_any(single(headers, ADMIN_HEADER).into_iter(), token)
}

/// The value of header `name` when the request sends it once; none when it sends it several
/// times (one request must not try many keys).
fn single(headers: &HeaderMap, name: impl axum::http::header::AsHeaderName) -> Option<&[u8]> {
    let mut all = headers.get_all(name).into_iter();
    let first = all.next()?;
    all.next().is_none().then(|| first.as_bytes())
}

/// The token of the one `Authorization: Bearer <token>` header, when it is text.
pub fn bearer_token_in(headers: &HeaderMap) -> Option<&str> {
    bearer_tokens(headers)
        .next()
        .and_then(|t| std::str::from_utf8(t).ok())
}

/// The token of the one `Authorization: Bearer <token>` header.
fn bearer_tokens(headers: &HeaderMap) -> impl Iterator<Item = &[u8]> {
    single(headers, AUTHORIZATION)
        .and_then(bearer_token)
        .into_iter()
}

/// The token of a `Bearer <token>` credential (scheme case-insensitive).
fn bearer_token(value: &[u8]) -> Option<&[u8]> {
    let (scheme, token) = value.split_at_checked(6)?;
    if !scheme.eq_ignore_ascii_case(b"bearer") || !token.first()?.is_ascii_whitespace() {
        return None;
    }
    Some(token.trim_ascii())
}

/// Constant-time: every candidate is compared in full, without stopping at a match.
fn matches_any<'a>(candidates: impl Iterator<Item = &'a [u8]>, secret: &str) -> bool {
    if secret.is_empty() {
        return false;
    }
    let secret = secret.as_bytes();
    let matched = candidates.fold(Choice::from(0), |acc, c| acc | c.ct_eq(secret));
    matched.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn accepts_the_key_in_either_header() {
        assert!(has_api_key(&headers(&[("x-api-key", "k1")]), "k1"));
        assert!(has_api_key(
            &headers(&[("authorization", "Bearer k1")]),
            "k1"
        ));
        assert!(has_api_key(
            &headers(&[("authorization", "bEaReR  k1 ")]),
            "k1"
        ));
        assert!(has_api_key(
            &headers(&[("x-api-key", "nope"), ("authorization", "Bearer k1")]),
            "k1"
        ));
    }

    /// Low 14 of issue 24: every `Authorization` header was compared, so one request could
    /// try ~100 keys. A header sent more than once now counts as none.
    #[test]
    fn a_request_with_several_key_headers_is_refused() {
        for several in [["Bearer k2", "Bearer k1"], ["Bearer k1", "Bearer k2"]] {
            let several = headers(&[("authorization", several[0]), ("authorization", several[1])]);
            assert!(!has_bearer(&several, "k1"));
            assert!(!has_api_key(&several, "k1"));
        }
        let keys = headers(&[("x-api-key", "k2"), ("x-api-key", "k1")]);
        assert!(!has_api_key(&keys, "k1"));
        let admin = headers(&[("x-mcp-launch-admin", "t2"), ("x-mcp-launch-admin", "t")]);
        assert!(!has_admin_token(&admin, "t"));
    }

    #[test]
    fn refuses_wrong_missing_or_misplaced_keys() {
        assert!(!has_api_key(&headers(&[]), "k1"));
        assert!(!has_api_key(&headers(&[("x-api-key", "k2")]), "k1"));
        assert!(!has_api_key(&headers(&[("x-api-key", "k1x")]), "k1"));
        assert!(!has_api_key(&headers(&[("authorization", "k1")]), "k1"));
        assert!(!has_api_key(
            &headers(&[("authorization", "Basic k1")]),
            "k1"
        ));
        assert!(!has_api_key(
            &headers(&[("authorization", "Bearerk1")]),
            "k1"
        ));
        assert!(!has_api_key(
            &headers(&[("x-mcp-launch-admin", "k1")]),
            "k1"
        ));
        assert!(!has_api_key(&headers(&[("x-api-key", "")]), ""));
    }

    #[test]
    fn admin_token_only_in_its_header() {
        assert!(has_admin_token(
            &headers(&[("x-mcp-launch-admin", "t")]),
            "t"
        ));
        assert!(!has_admin_token(&headers(&[("x-api-key", "t")]), "t"));
        assert!(!has_admin_token(
            &headers(&[("authorization", "Bearer t")]),
            "t"
        ));
        assert!(!has_admin_token(
            &headers(&[("x-mcp-launch-admin", "")]),
            ""
        ));
    }
}
