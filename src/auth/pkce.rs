//! PKCE with S256 only (RFC 7636; OAuth 2.1 and the MCP authorization spec forbid `plain`).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The only challenge method we send or accept.
pub const METHOD: &str = "S256";
/// Verifier length: RFC 7636 allows 43..=128 characters; 64 letters and digits are ~381 bits.
const VERIFIER_LEN: usize = 64;

/// A verifier kept by the client and the challenge sent with the authorization request.
#[derive(Clone)]
pub struct Pkce {
    /// Sent with the token request only.
    pub verifier: String,
    /// `BASE64URL(SHA256(verifier))`, sent with the authorization request.
    pub challenge: String,
}

impl std::fmt::Debug for Pkce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pkce")
            .field("challenge", &self.challenge)
            .finish_non_exhaustive()
    }
}

impl Pkce {
    /// A fresh verifier from the OS's random source and its S256 challenge.
    pub fn new() -> Self {
        let verifier = super::random_string(VERIFIER_LEN);
        let challenge = challenge_of(&verifier);
        Pkce {
            verifier,
            challenge,
        }
    }
}

impl Default for Pkce {
    fn default() -> Self {
        Self::new()
    }
}

/// The S256 challenge of `verifier`.
pub fn challenge_of(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// Whether `verifier` is well formed (RFC 7636 §4.1: 43..=128 unreserved characters) and its S256
/// challenge is `challenge` (compared in constant time).
pub fn verifies(verifier: &str, challenge: &str) -> bool {
    let well_formed = (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
    well_formed
        && bool::from(
            challenge_of(verifier)
                .as_bytes()
                .ct_eq(challenge.as_bytes()),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7636 Appendix B's example.
    #[test]
    fn matches_the_rfc_example() {
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert_eq!(challenge_of(verifier), challenge);
        assert!(verifies(verifier, challenge));
        assert!(!verifies(
            verifier,
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cN"
        ));
    }

    #[test]
    fn fresh_pairs_verify_and_differ() {
        let (a, b) = (Pkce::new(), Pkce::new());
        assert_eq!(a.verifier.len(), VERIFIER_LEN);
        assert!(verifies(&a.verifier, &a.challenge));
        assert_ne!(a.verifier, b.verifier);
        assert!(!verifies(&a.verifier, &b.challenge));
        assert!(
            !format!("{a:?}").contains(&a.verifier),
            "the verifier leaked into Debug"
        );
    }

    #[test]
    fn malformed_verifiers_never_verify() {
        let short = "a".repeat(42);
        assert!(!verifies(&short, &challenge_of(&short)));
        let long = "a".repeat(129);
        assert!(!verifies(&long, &challenge_of(&long)));
        let odd = format!("{}/", "a".repeat(50));
        assert!(!verifies(&odd, &challenge_of(&odd)));
    }
}
