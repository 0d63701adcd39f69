//! What a server's challenge to a token we sent means, before anything else is sent:
//! - a 403 `insufficient_scope` (step-up, SEP-2350): a new login must ask for the scopes asked
//!   for before together with the challenge's; never a loop of logins — the caller that can
//!   ask a person logs in once and retries once.
//! - a 401 from a server whose protected-resource metadata now names another authorization
//!   server (SEP-2352): the stored tokens and client registration belong to the old one and
//!   are never sent to the new one (no refresh either); a new login discovers, registers there
//!   and says so.

use super::discover::{authorization_server, same_server, scopes_supported};
use super::{scope, store, AuthError};
use crate::auth::challenge::BearerChallenge;

/// The `error` of a Bearer challenge asking for more scopes (RFC 6750 §3.1).
const INSUFFICIENT_SCOPE: &str = "insufficient_scope";

/// The error for a 403 that asks for more scopes than the token of `url` holds; `None` for a
/// 403 of another kind. The scopes asked for: those asked for before with the challenge's,
/// else with the resource's `scopes_supported` (the spec's order). `shown` is the URL as
/// errors may show it.
pub async fn insufficient_scope(
    url: &str,
    shown: &str,
    challenge: &BearerChallenge,
) -> Option<AuthError> {
    if challenge.error.as_deref() != Some(INSUFFICIENT_SCOPE) {
        return None;
    }
    let needed = match &challenge.scope {
        Some(scope) => Some(scope.clone()),
        None => scopes_supported(&super::http_client(), url, Some(challenge)).await,
    };
    let held = store::load(url).await.and_then(|grant| grant.held_scope());
    let wanted = scope::union([held.as_deref(), needed.as_deref()]);
    Some(AuthError::NeedsScope {
        resource: shown.to_string(),
        scope: wanted.unwrap_or_default(),
        challenged: needed.unwrap_or_else(|| "a scope it did not name".into()),
    })
}

/// The error for a 401 from a server whose metadata names another authorization server than
/// the one the stored grant of `url` came from; `None` when it is the same one, when nothing
/// is stored, when the config pins the authorization server (`authServerMetadataUrl`), or when
/// the metadata cannot be read now (the grant's own authorization server
/// is then asked for a refresh, as before: the tokens go nowhere new).
pub async fn moved(url: &str, shown: &str, challenge: &BearerChallenge) -> Option<AuthError> {
    // A config that names the authorization server's metadata pins the server: the
    // resource's metadata may name another one and it is no move.
    let grant = store::load(url)
        .await
        .filter(|grant| grant.metadata_url.is_none())?;
    let named = authorization_server(&super::http_client(), url, Some(challenge))
        .await
        .ok()?;
    if same_server(&named, &grant.issuer) {
        return None;
    }
    Some(AuthError::NeedsLogin {
        resource: shown.to_string(),
        reason: format!(
            "its authorization server changed from {} to {named}; the tokens and client registration from the old one are not sent to the new one: log in again to register there",
            grant.issuer
        ),
    })
}
