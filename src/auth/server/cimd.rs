//! Client ID Metadata Documents (MCP authorization, 2025-11-25; draft-ietf-oauth-client-id-
//! metadata-document): a client names itself by an https URL as `client_id`, and we fetch the
//! JSON document there instead of asking it to register.
//!
//! The fetch is bounded — https only, no redirects, 5 s, 16 KiB — and never reaches a private
//! network (an attacker picks the URL): the host's addresses are resolved first, every one
//! must be public, and the request is pinned to them (no second lookup to rebind, no system
//! proxy: `HTTP(S)_PROXY` and `ALL_PROXY` are not used for it). The
//! document must name the URL as its `client_id`, list its redirect URIs (matched exactly,
//! as a registered client's), and be a public client (`token_endpoint_auth_method` `none`).
//! Documents are cached for their `max-age` (one minute to one hour; five minutes without).
//!
//! `MCP_LAUNCH_DEV_CIMD_LOOPBACK=1` (tests and local development only) also takes
//! `http://127.0.0.1…` / `http://localhost…` URLs and loopback addresses; private networks stay
//! refused.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::store::Client;

/// The switch that lets tests serve documents on loopback over plain http.
pub const LOOPBACK_ENV: &str = "MCP_LAUNCH_DEV_CIMD_LOOPBACK";
/// How long one fetch may take, all of it: a client waits on the consent page meanwhile.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest document taken (they are a few hundred bytes).
const MAX_BYTES: usize = 16 * 1024;
/// Cache lifetime without `max-age`, and its bounds with one.
const DEFAULT_TTL: Duration = Duration::from_secs(300);
const MIN_TTL: Duration = Duration::from_secs(60);
const MAX_TTL: Duration = Duration::from_secs(3600);
/// Documents cached at most (the oldest leaves first).
const MAX_CACHED: usize = 256;
/// Fetches under way at most: `/authorize` is open to anyone, and each made-up URL would
/// otherwise be one more outgoing request (past it, the request is refused, not queued).
const MAX_FETCHING: usize = 8;

/// Why a `client_id` URL gave no client.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CimdError {
    /// Not an https URL with a path (or, with the switch, a loopback http one).
    #[error("client_id `{url}` cannot be a client metadata document's URL: {why}")]
    BadUrl {
        /// The URL named.
        url: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// Its host resolves to an address we do not fetch from.
    #[error("client_id `{0}` resolves to a private or local address: not fetched")]
    Private(String),
    /// The fetch failed (connection, status, size, time).
    #[error("the client metadata document at `{url}` could not be fetched: {why}")]
    Fetch {
        /// The document's URL.
        url: String,
        /// What went wrong.
        why: String,
    },
    /// The document is not one we take.
    #[error("the client metadata document at `{url}` is not valid: {why}")]
    Invalid {
        /// The document's URL.
        url: String,
        /// What it lacks.
        why: String,
    },
}

impl crate::error::Actionable for CimdError {
    fn kind(&self) -> &'static str {
        match self {
            CimdError::BadUrl { .. } => "cimd_bad_url",
            CimdError::Private(_) => "cimd_private_address",
            CimdError::Fetch { .. } => "cimd_fetch_failed",
            CimdError::Invalid { .. } => "cimd_invalid_document",
        }
    }

    fn help(&self) -> String {
        match self {
            CimdError::BadUrl { .. } | CimdError::Private(_) => {
                "serve the client's metadata document \
                at a public https URL with a path (or register the client: POST /register)"
                    .into()
            }
            CimdError::Fetch { .. } => "the document must answer 200 within 5 s, at most \
                16 KiB, without redirects: fix its server and try the login again"
                .into(),
            CimdError::Invalid { .. } => "fix the document: `client_id` its own URL, \
                `redirect_uris` listed, a public client (no secret)"
                .into(),
        }
    }
}

/// The members of a document we read (others are ignored).
#[derive(Debug, Deserialize)]
struct Document {
    client_id: String,
    #[serde(default)]
    client_name: Option<String>,
    #[serde(default)]
    redirect_uris: Vec<String>,
    #[serde(default)]
    token_endpoint_auth_method: Option<String>,
    #[serde(default)]
    client_secret: Option<String>,
}

/// Fetched documents, as clients, until they expire.
#[derive(Debug)]
pub struct Documents {
    cache: Mutex<HashMap<String, (Client, Instant)>>,
    fetching: tokio::sync::Semaphore,
}

impl Default for Documents {
    fn default() -> Self {
        Documents {
            cache: Mutex::default(),
            fetching: tokio::sync::Semaphore::new(MAX_FETCHING),
        }
    }
}

/// Whether `client_id` names a metadata document (an URL) rather than a registered client.
pub fn is_document_url(client_id: &str) -> bool {
    client_id.starts_with("https://") || client_id.starts_with("http://")
}

impl Documents {
    /// The client whose document is at `url`: cached, or fetched and checked.
    pub async fn client(&self, url: &str) -> Result<Client, CimdError> {
        if let Some(client) = self.cached(url) {
            return Ok(client);
        }
        let loopback = std::env::var(LOOPBACK_ENV).is_ok_and(|v| v == "1");
        let parsed = checked_url(url, loopback)?;
        let Ok(_turn) = self.fetching.try_acquire() else {
            return Err(CimdError::Fetch {
                url: url.to_string(),
                why: format!("{MAX_FETCHING} documents are being fetched already: try again"),
            });
        };
        let (body, ttl) = fetch(&parsed, loopback).await?;
        let client = validate(url, &body)?;
        self.keep(url, client.clone(), ttl);
        Ok(client)
    }

    fn cached(&self, url: &str) -> Option<Client> {
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        let (client, until) = cache.get(url)?;
        (*until > Instant::now()).then(|| client.clone())
    }

    fn keep(&self, url: &str, client: Client, ttl: Duration) {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        cache.retain(|_, (_, until)| *until > now);
        if cache.len() >= MAX_CACHED {
            let oldest = (cache.iter()).min_by_key(|(_, (_, until))| *until);
            if let Some(oldest) = oldest.map(|(url, _)| url.clone()) {
                cache.remove(&oldest);
            }
        }
        cache.insert(url.to_string(), (client, now + ttl));
    }
}

/// `url` as a document URL (`crate::client_id`: https, or loopback http with the switch).
fn checked_url(url: &str, loopback: bool) -> Result<reqwest::Url, CimdError> {
    crate::client_id::checked(url, loopback).map_err(|why| CimdError::BadUrl {
        url: url.to_string(),
        why,
    })
}

/// The document's bytes and how long to keep it: one GET to the resolved, checked addresses.
async fn fetch(url: &reqwest::Url, loopback: bool) -> Result<(Vec<u8>, Duration), CimdError> {
    let failed = |why: String| CimdError::Fetch {
        url: url.to_string(),
        why,
    };
    let host = url.host_str().unwrap_or_default().trim_matches(['[', ']']);
    let port = url.port_or_known_default().unwrap_or(443);
    let resolved = tokio::time::timeout(FETCH_TIMEOUT, tokio::net::lookup_host((host, port)))
        .await
        .map_err(|_| failed("its host did not resolve in time".into()))?
        .map_err(|e| failed(format!("its host does not resolve: {e}")))?;
    let addresses: Vec<SocketAddr> = resolved.collect();
    if addresses.is_empty() || !addresses.iter().all(|a| is_fetchable(a.ip(), loopback)) {
        return Err(CimdError::Private(url.to_string()));
    }
    // No system proxy (`HTTP(S)_PROXY`, `ALL_PROXY`): through one, the request would go to
    // wherever the proxy resolves the host, past the addresses just checked.
    let http = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(FETCH_TIMEOUT)
        .resolve_to_addrs(host, &addresses)
        .build()
        .map_err(|e| failed(e.to_string()))?;
    let mut response = (http.get(url.clone()))
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| failed(e.without_url().to_string()))?;
    if !response.status().is_success() {
        return Err(failed(format!("it answered {}", response.status())));
    }
    let ttl = max_age(response.headers()).unwrap_or(DEFAULT_TTL);
    let mut body = Vec::new();
    while let Some(chunk) =
        (response.chunk().await).map_err(|e| failed(e.without_url().to_string()))?
    {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_BYTES {
            return Err(failed(format!("it is larger than {MAX_BYTES} bytes")));
        }
    }
    Ok((body, ttl))
}

/// A response's `Cache-Control: max-age`, within our bounds.
fn max_age(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let value = headers.get(reqwest::header::CACHE_CONTROL)?.to_str().ok()?;
    let seconds = value
        .split(',')
        .find_map(|d| d.trim().strip_prefix("max-age=")?.parse::<u64>().ok())?;
    Some(Duration::from_secs(seconds).clamp(MIN_TTL, MAX_TTL))
}

/// Whether we fetch from `ip`: a public address (loopback too, with the switch).
fn is_fetchable(ip: IpAddr, loopback: bool) -> bool {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    if ip.is_loopback() {
        return loopback;
    }
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 198 && (b == 18 || b == 19))
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            let first = v6.segments()[0];
            !(v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || first == 0x2001 && v6.segments()[1] == 0x0db8)
        }
    }
}

/// The client a document describes, if it is one we take.
fn validate(url: &str, body: &[u8]) -> Result<Client, CimdError> {
    let invalid = |why: &str| CimdError::Invalid {
        url: url.to_string(),
        why: why.to_string(),
    };
    let document: Document = serde_json::from_slice(body)
        .map_err(|e| invalid(&format!("not a JSON object with a client_id ({e})")))?;
    if document.client_id != url {
        return Err(invalid("its client_id is not its own URL"));
    }
    if document.redirect_uris.is_empty()
        || !(document.redirect_uris.iter()).all(|u| super::endpoints::acceptable_redirect(u))
    {
        return Err(invalid(
            "redirect_uris must be https URLs, or http on 127.0.0.1/localhost, without fragments",
        ));
    }
    if document.client_secret.is_some()
        || document
            .token_endpoint_auth_method
            .as_deref()
            .is_some_and(|m| m != "none")
    {
        return Err(invalid(
            "a metadata document client is public: token_endpoint_auth_method none, no secret",
        ));
    }
    Ok(Client {
        name: document.client_name,
        redirect_uris: document.redirect_uris,
        secret_hash: None,
        registered_at: super::now(),
        granted_scope: None,
        last_used: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const URL: &str = "https://app.example.com/oauth/client.json";

    fn document(value: serde_json::Value) -> Vec<u8> {
        value.to_string().into_bytes()
    }

    /// The rule is `client_id`'s (tested there); a refusal says which part of it failed.
    #[test]
    fn a_url_that_cannot_be_a_client_id_is_refused_saying_why() {
        assert!(checked_url(URL, false).is_ok());
        let refused = checked_url("https://app.example.com/c.json#x", false).unwrap_err();
        assert!(refused.to_string().contains("fragment"), "{refused}");
        assert!(checked_url("http://127.0.0.1:9/c.json", true).is_ok());
        assert!(checked_url("http://127.0.0.1:9/c.json", false).is_err());
    }

    #[test]
    fn private_and_local_addresses_are_not_fetched() {
        for private in [
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::",
            "fd00::1",
            "fe80::1",
            "::ffff:10.0.0.1",
        ] {
            let ip: IpAddr = private.parse().unwrap();
            assert!(!is_fetchable(ip, true), "{private}");
        }
        let loopback: IpAddr = "127.0.0.1".parse().unwrap();
        assert!(!is_fetchable(loopback, false));
        assert!(is_fetchable(loopback, true));
        assert!(is_fetchable("93.184.215.14".parse().unwrap(), false));
        assert!(is_fetchable("2606:4700::1".parse().unwrap(), false));
    }

    #[test]
    fn a_document_must_name_its_url_and_be_a_public_client() {
        let good = serde_json::json!({"client_id": URL, "client_name": "App",
            "redirect_uris": ["https://app.example.com/cb"]});
        let client = validate(URL, &document(good.clone())).unwrap();
        assert_eq!(client.redirect_uris, ["https://app.example.com/cb"]);
        let mut other = good.clone();
        other["client_id"] = "https://evil.example.com/c.json".into();
        let refused = validate(URL, &document(other)).unwrap_err();
        assert!(refused.to_string().contains("not its own URL"), "{refused}");
        let mut secret = good.clone();
        secret["token_endpoint_auth_method"] = "client_secret_basic".into();
        assert!(validate(URL, &document(secret)).is_err());
        let mut script = good;
        script["redirect_uris"] = serde_json::json!(["javascript:alert(1)"]);
        assert!(validate(URL, &document(script)).is_err());
        assert!(validate(URL, b"[1]").is_err());
    }

    #[tokio::test]
    async fn fetches_past_the_bound_are_refused_not_queued() {
        let documents = Documents::default();
        let _all = documents
            .fetching
            .try_acquire_many(MAX_FETCHING as u32)
            .unwrap();
        let refused = documents.client(URL).await.unwrap_err();
        assert!(
            refused.to_string().contains("being fetched already"),
            "{refused}"
        );
    }

    #[test]
    fn max_age_is_kept_within_bounds() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert("cache-control", "public, max-age=5".parse().unwrap());
        assert_eq!(max_age(&headers), Some(MIN_TTL));
        headers.insert("cache-control", "max-age=600".parse().unwrap());
        assert_eq!(max_age(&headers), Some(Duration::from_secs(600)));
        headers.insert("cache-control", "max-age=999999".parse().unwrap());
        assert_eq!(max_age(&headers), Some(MAX_TTL));
    }
}
