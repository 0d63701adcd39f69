//! The token endpoint: the code exchange at login and the refresh later, both with the
//! resource indicator (RFC 8707), and the checks on what comes back.

use reqwest::Client;

use super::discover::parse_url;
use super::error::{AuthError, Step};
use super::fetch::{Answer, Fetch};
use super::Grant;
use crate::auth::metadata::TokenResponse;

/// The token endpoint auth method that sends the client secret as HTTP Basic credentials.
pub(crate) const BASIC: &str = "client_secret_basic";

/// Who asks the token endpoint, and for which resource.
pub(crate) struct TokenClient<'a> {
    pub(crate) client: &'a Client,
    /// The MCP endpoint (named in errors).
    pub(crate) url: &'a str,
    pub(crate) token_endpoint: &'a str,
    pub(crate) client_id: &'a str,
    pub(crate) client_secret: Option<String>,
    /// `client_secret_basic` sends the secret as HTTP Basic, anything else in the body.
    pub(crate) auth_method: Option<&'a str>,
    /// The resource indicator.
    pub(crate) resource: &'a str,
}

impl TokenClient<'_> {
    /// Sends `grant` (the grant-specific pairs) with the client's credentials and the resource.
    pub(crate) async fn request(
        &self,
        step: Step,
        grant: &[(&str, &str)],
    ) -> Result<TokenResponse, AuthError> {
        let fetch = self.fetch(step);
        let answer = self.post(&fetch, self.token_endpoint, grant).await?;
        self.accept(&fetch, &answer)
    }

    /// The exchange of `step` with this client's server.
    pub(crate) fn fetch(&self, step: Step) -> Fetch<'_> {
        Fetch {
            client: self.client,
            resource: self.url,
            step,
        }
    }

    /// POSTs `pairs` to `endpoint` (the token endpoint, or the device authorization endpoint,
    /// which takes the same client authentication: RFC 8628 §3.1) with the client's
    /// credentials and the resource indicator; the answer as it came.
    pub(crate) async fn post(
        &self,
        fetch: &Fetch<'_>,
        endpoint: &str,
        grant: &[(&str, &str)],
    ) -> Result<Answer, AuthError> {
        let endpoint = parse_url(self.url, endpoint, fetch.step)?;
        let mut pairs = grant.to_vec();
        pairs.push(("resource", self.resource));
        match (self.client_secret.as_deref(), self.auth_method) {
            (Some(secret), Some(BASIC)) => {
                let credentials = (self.client_id, secret);
                fetch.post_form_basic(&endpoint, &pairs, credentials).await
            }
            (secret, _) => {
                pairs.push(("client_id", self.client_id));
                pairs.extend(secret.map(|s| ("client_secret", s)));
                fetch.post_form(&endpoint, &pairs).await
            }
        }
    }

    /// The token of a token endpoint's answer, checked; else the OAuth error it carries.
    pub(crate) fn accept(
        &self,
        fetch: &Fetch<'_>,
        answer: &Answer,
    ) -> Result<TokenResponse, AuthError> {
        let token: TokenResponse = fetch.json(answer)?;
        self.check(fetch, &token)?;
        Ok(token)
    }

    /// Refuses a token that is not a bearer token or says it is for another resource.
    fn check(&self, fetch: &Fetch<'_>, token: &TokenResponse) -> Result<(), AuthError> {
        if !token.token_type.eq_ignore_ascii_case("bearer") {
            return Err(fetch.refused(format!(
                "the token type is {:?}, not Bearer",
                token.token_type
            )));
        }
        if token.access_token.is_empty() {
            return Err(fetch.refused("the access token is empty".into()));
        }
        let named = token.extra.get("resource").and_then(|v| v.as_str());
        if let Some(named) =
            named.filter(|r| r.trim_end_matches('/') != self.resource.trim_end_matches('/'))
        {
            return Err(fetch.refused(format!("the token is for {named}, not this server")));
        }
        Ok(())
    }
}

impl Grant {
    /// The token client of this grant.
    pub(crate) fn token_client<'a>(&'a self, client: &'a Client) -> TokenClient<'a> {
        TokenClient {
            client,
            url: &self.url,
            token_endpoint: &self.token_endpoint,
            client_id: &self.client_id,
            client_secret: self.secret(),
            auth_method: self.token_endpoint_auth_method.as_deref(),
            resource: &self.resource,
        }
    }

    /// Takes a token answer in: a new access token, the rotated refresh token (the old one is
    /// kept when none comes back), the new expiry and scope.
    pub(crate) fn take(&mut self, token: TokenResponse) {
        self.access_token = token.access_token;
        if token.refresh_token.is_some() {
            self.refresh_token = token.refresh_token;
        }
        self.expires_at = token.expires_in.map(|s| super::now() + s);
        if token.scope.is_some() {
            self.scope = token.scope;
        }
    }
}

/// Revokes `grant`'s refresh token (else its access token) at its authorization server
/// (RFC 7009), best effort and bounded; whether the server answered 200.
pub async fn revoke(client: &Client, grant: &Grant) -> bool {
    let Some(endpoint) = &grant.revocation_endpoint else {
        return false;
    };
    let Ok(endpoint) = parse_url(&grant.url, endpoint, Step::Store) else {
        return false;
    };
    let fetch = Fetch {
        client,
        resource: &grant.url,
        step: Step::Store,
    };
    let (token, hint) = match &grant.refresh_token {
        Some(refresh) => (refresh.as_str(), "refresh_token"),
        None => (grant.access_token.as_str(), "access_token"),
    };
    let mut pairs = vec![
        ("token", token),
        ("token_type_hint", hint),
        ("client_id", grant.client_id.as_str()),
    ];
    let secret = grant.secret();
    if let Some(secret) = &secret {
        pairs.push(("client_secret", secret));
    }
    matches!(fetch.post_form(&endpoint, &pairs).await, Ok(answer) if answer.status == 200)
}
