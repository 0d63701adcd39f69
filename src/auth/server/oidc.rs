//! Delegated mode (`serve --http --auth oidc:ISSUER`): our endpoint stays the protected
//! resource, but the tokens come from an existing OpenID provider. We discover it
//! (`/.well-known/openid-configuration`, its `issuer` equal to ISSUER character for
//! character), fetch its keys (JWKS) and verify its JWT access tokens ourselves:
//!
//! - algorithms RS256, PS256 and ES256 only: `none` and HMAC (`HS*`, which a public key would
//!   sign as a "secret") never pass, and a key's declared `alg` must be the token's;
//! - `iss` exact, `aud` our resource (or `--oidc-audience`), `exp` and `nbf` with
//!   [`LEEWAY`] of clock skew;
//! - a token naming a key we do not hold fetches the JWKS again (key rotation), at most once
//!   per [`REFETCH_EVERY`], and the new set replaces the old (a removed key stops working);
//! - `scope` (space separated) or `scp` (a list, or a string) must grant `tools:read` or
//!   `tools:all`: the same reach as the built-in server's tokens.
//!
//! Nothing here logs or returns a token: refusals name what failed.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, JwkSet, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use reqwest::Url;
use serde::Deserialize;

use super::store::Grant;
use super::{SCOPES, SCOPE_READ};
use crate::auth::client::fetch::{http_client, Fetch};
use crate::auth::client::Step;
use crate::auth::metadata::AuthorizationServer;

/// The signature algorithms we accept: asymmetric only.
pub const ALGORITHMS: &[Algorithm] = &[Algorithm::RS256, Algorithm::PS256, Algorithm::ES256];
/// Clock skew tolerated on `exp` and `nbf`.
pub const LEEWAY: Duration = Duration::from_secs(30);
/// An unknown `kid` fetches the keys again at most this often: a flood of made-up key ids
/// must not become a flood of requests to the provider.
pub const REFETCH_EVERY: Duration = Duration::from_secs(10);
/// Keys are fetched again on the next request after this long, rotation or not.
pub const KEYS_MAX_AGE: Duration = Duration::from_secs(3600);

/// Why delegated mode cannot start. Never carries a token.
#[derive(Debug, Clone, thiserror::Error)]
pub enum OidcError {
    /// ISSUER is not a URL we may trust.
    #[error("--auth oidc:{issuer}: {reason}")]
    BadIssuer {
        /// As given.
        issuer: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Discovery or the keys failed.
    #[error("--auth oidc:{issuer}: {reason}")]
    Unusable {
        /// As given.
        issuer: String,
        /// What failed.
        reason: String,
    },
}

impl OidcError {
    /// A stable snake_case name for `--json`.
    pub fn kind(&self) -> &'static str {
        match self {
            OidcError::BadIssuer { .. } => "invalid_issuer",
            OidcError::Unusable { .. } => "issuer_unusable",
        }
    }

    /// The next step for a person.
    pub fn help(&self) -> String {
        match self {
            OidcError::BadIssuer { .. } => "give the provider's issuer URL exactly as its \
                discovery document says it (`--auth oidc:https://idp.example.com`): HTTPS, or \
                HTTP on loopback"
                .into(),
            OidcError::Unusable { issuer, .. } => format!(
                "check that {issuer}/.well-known/openid-configuration answers from this machine \
                 and names `{issuer}` as its issuer, and that its jwks_uri serves signing keys"
            ),
        }
    }
}

impl crate::error::Actionable for OidcError {
    fn kind(&self) -> &'static str {
        OidcError::kind(self)
    }
    fn help(&self) -> String {
        OidcError::help(self)
    }
}

/// The provider's keys as last fetched.
struct Keys {
    /// By `kid`: the key and the algorithm it declares, if any.
    by_id: HashMap<String, (DecodingKey, Option<Algorithm>)>,
    fetched: Instant,
}

/// The verifier of one provider's access tokens for one audience. A clone (`up`'s stacks,
/// each its own audience) shares the keys and their fetches: one rotation followed by all.
#[derive(Clone)]
pub struct Delegate {
    issuer: String,
    audience: String,
    jwks_uri: Url,
    http: reqwest::Client,
    keys: Arc<RwLock<Arc<Keys>>>,
    /// The provider's discovery document (its endpoints, for the login proxy).
    provider: Arc<AuthorizationServer>,
    /// When an unknown `kid` last fetched the keys (one fetch at a time: the lock is held
    /// across it).
    refetched: Arc<tokio::sync::Mutex<Option<Instant>>>,
}

impl std::fmt::Debug for Delegate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delegate")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .finish_non_exhaustive()
    }
}

/// The claims we read (the signature, `iss`, `aud`, `exp`, `nbf` are checked by the decoder).
#[derive(Deserialize)]
struct Claims {
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    azp: Option<String>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    scp: Option<Scopes>,
    #[serde(default)]
    exp: Option<f64>,
}

/// `scp`: a list (Azure, Okta) or a space-separated string.
#[derive(Deserialize)]
#[serde(untagged)]
enum Scopes {
    List(Vec<String>),
    Text(String),
}

impl Delegate {
    /// Discovers `issuer` and fetches its keys (the audience is set by
    /// [`Delegate::for_audience`] once the address is known).
    pub async fn discover(issuer: &str) -> Result<Delegate, OidcError> {
        let bad = |reason: String| OidcError::BadIssuer {
            issuer: issuer.to_string(),
            reason,
        };
        let base = crate::auth::client::parse_url(issuer, issuer, Step::ServerMetadata)
            .map_err(|e| bad(e.to_string()))?;
        if base.query().is_some() || base.fragment().is_some() {
            return Err(bad("an issuer has no query or fragment".into()));
        }
        let unusable = |reason: String| OidcError::Unusable {
            issuer: issuer.to_string(),
            reason,
        };
        let http = http_client();
        let fetch = Fetch {
            client: &http,
            resource: issuer,
            step: Step::ServerMetadata,
        };
        let url = format!(
            "{}/.well-known/openid-configuration",
            issuer.trim_end_matches('/')
        );
        let url = Url::parse(&url).map_err(|e| bad(e.to_string()))?;
        let answer = fetch.get(&url).await.map_err(|e| unusable(e.to_string()))?;
        let found: AuthorizationServer =
            fetch.json(&answer).map_err(|e| unusable(e.to_string()))?;
        if found.issuer != issuer {
            return Err(unusable(format!(
                "its discovery document names the issuer `{}`, not `{issuer}` (they must match \
                 exactly)",
                found.issuer
            )));
        }
        let named = found.jwks_uri.as_deref().unwrap_or_default();
        let jwks_uri = crate::auth::client::parse_url(issuer, named, Step::ServerMetadata)
            .map_err(|e| unusable(format!("jwks_uri: {e}")))?;
        let keys = fetch_keys(&http, issuer, &jwks_uri)
            .await
            .map_err(unusable)?;
        Ok(Delegate {
            issuer: issuer.to_string(),
            audience: String::new(),
            jwks_uri,
            http,
            keys: Arc::new(RwLock::new(Arc::new(keys))),
            provider: Arc::new(found),
            refetched: Arc::new(tokio::sync::Mutex::new(None)),
        })
    }

    /// This verifier, for tokens naming `audience`.
    pub fn for_audience(mut self, audience: String) -> Delegate {
        self.audience = audience;
        self
    }

    /// The issuer tokens must come from.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The audience tokens must name.
    pub fn audience(&self) -> &str {
        &self.audience
    }

    /// The provider's discovery document, as it came.
    pub fn provider(&self) -> &AuthorizationServer {
        &self.provider
    }

    /// The grant `token` carries, or why it is refused (never the token itself).
    pub async fn verify(&self, token: &str) -> Result<Grant, String> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| format!("not a signed JWT we accept ({e})"))?;
        if !ALGORITHMS.contains(&header.alg) {
            return Err(format!(
                "signed with {:?}; only RS256, PS256 and ES256 are accepted",
                header.alg
            ));
        }
        let kid = header
            .kid
            .as_deref()
            .ok_or("the token names no key (`kid`)")?;
        let (key, declared) = self.key(kid).await?;
        if declared.is_some_and(|alg| alg != header.alg) {
            return Err(format!(
                "key `{kid}` is for {:?}, the token says {:?}",
                declared.unwrap_or(header.alg),
                header.alg
            ));
        }
        let claims = jsonwebtoken::decode::<Claims>(token, &key, &self.validation(header.alg))
            .map_err(|e| self.explain(&e))?
            .claims;
        grant_of(claims, &self.audience)
    }

    fn validation(&self, alg: Algorithm) -> Validation {
        let mut validation = Validation::new(alg);
        validation.leeway = LEEWAY.as_secs();
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation
    }

    /// What a decoder error means, in words naming the issuer or audience expected.
    fn explain(&self, error: &jsonwebtoken::errors::Error) -> String {
        use jsonwebtoken::errors::ErrorKind;
        match error.kind() {
            ErrorKind::InvalidIssuer => format!("its `iss` is not `{}`", self.issuer),
            ErrorKind::InvalidAudience => {
                format!("its `aud` does not name this server (`{}`)", self.audience)
            }
            ErrorKind::ExpiredSignature => "it has expired".into(),
            ErrorKind::ImmatureSignature => "it is not valid yet (`nbf`)".into(),
            ErrorKind::InvalidSignature => "its signature does not verify".into(),
            ErrorKind::MissingRequiredClaim(claim) => format!("it has no `{claim}`"),
            other => format!("it does not verify ({other:?})"),
        }
    }

    /// The key `kid`: from the keys held, else from the keys fetched again (when they are
    /// old, or at most once per [`REFETCH_EVERY`] for an unknown `kid`).
    async fn key(&self, kid: &str) -> Result<(DecodingKey, Option<Algorithm>), String> {
        let held = self.held();
        if held.fetched.elapsed() < KEYS_MAX_AGE {
            if let Some(found) = held.by_id.get(kid) {
                return Ok(found.clone());
            }
        }
        let mut last = self.refetched.lock().await;
        // Another request may have fetched while this one waited for the lock.
        let held = self.held();
        let is_fresh = held.fetched.elapsed() < KEYS_MAX_AGE;
        if let Some(found) = held.by_id.get(kid).filter(|_| is_fresh) {
            return Ok(found.clone());
        }
        let may_fetch = !is_fresh || last.is_none_or(|at| at.elapsed() >= REFETCH_EVERY);
        if may_fetch {
            *last = Some(Instant::now());
            match fetch_keys(&self.http, &self.issuer, &self.jwks_uri).await {
                Ok(keys) => {
                    let keys = Arc::new(keys);
                    *self.keys.write().unwrap_or_else(|e| e.into_inner()) = Arc::clone(&keys);
                    if let Some(found) = keys.by_id.get(kid) {
                        return Ok(found.clone());
                    }
                }
                Err(reason) => {
                    tracing::warn!(issuer = %self.issuer, %reason, "cannot fetch the provider's keys again")
                }
            }
        }
        Err(format!(
            "its key `{kid}` is not among {}'s keys",
            self.issuer
        ))
    }

    fn held(&self) -> Arc<Keys> {
        Arc::clone(&self.keys.read().unwrap_or_else(|e| e.into_inner()))
    }
}

/// The provider's signing keys: RSA and EC keys with a `kid` (encryption and symmetric keys
/// left out).
async fn fetch_keys(http: &reqwest::Client, issuer: &str, uri: &Url) -> Result<Keys, String> {
    let fetch = Fetch {
        client: http,
        resource: issuer,
        step: Step::ServerMetadata,
    };
    let answer = fetch.get(uri).await.map_err(|e| e.to_string())?;
    let set: JwkSet = fetch
        .json(&answer)
        .map_err(|e| format!("its JWKS at {uri}: {e}"))?;
    let mut by_id = HashMap::new();
    for jwk in &set.keys {
        let signs = !matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption));
        let asymmetric = matches!(
            jwk.algorithm,
            AlgorithmParameters::RSA(_) | AlgorithmParameters::EllipticCurve(_)
        );
        let (Some(kid), true, true) = (&jwk.common.key_id, signs, asymmetric) else {
            continue;
        };
        let declared = jwk
            .common
            .key_algorithm
            .and_then(|a| Algorithm::try_from(a).ok());
        if let Ok(key) = DecodingKey::from_jwk(jwk) {
            by_id.insert(kid.clone(), (key, declared));
        }
    }
    if by_id.is_empty() {
        return Err(format!(
            "its JWKS at {uri} holds no RSA or EC signing key with a `kid`"
        ));
    }
    Ok(Keys {
        by_id,
        fetched: Instant::now(),
    })
}

/// The grant of verified `claims`: its client (`client_id`, else `azp`, else `sub`), its
/// subject and its scope, which must name one of ours.
fn grant_of(claims: Claims, audience: &str) -> Result<Grant, String> {
    let scope = match (claims.scope, claims.scp) {
        (Some(scope), _) => scope,
        (None, Some(Scopes::List(list))) => list.join(" "),
        (None, Some(Scopes::Text(text))) => text,
        (None, None) => String::new(),
    };
    if !scope.split_whitespace().any(|s| SCOPES.contains(&s)) {
        return Err(format!(
            "its scope grants neither `{SCOPE_READ}` nor `{}`",
            super::SCOPE_ALL
        ));
    }
    let client_id = claims
        .client_id
        .or(claims.azp)
        .or_else(|| claims.sub.clone())
        .unwrap_or_default();
    Ok(Grant {
        client_id,
        subject: claims.sub,
        scope,
        resource: audience.to_string(),
        expires_at: claims.exp.map_or(0, |exp| exp.max(0.0) as u64),
        family: String::new(),
    })
}
