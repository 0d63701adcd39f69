//! A remote server's `oauth` block: a client registered by hand at its authorization server
//! (GitHub, Google, Slack-style servers take neither Client ID Metadata Documents nor dynamic
//! registration), the authorization server's metadata document where discovery cannot
//! find it (`authServerMetadataUrl`), or the URL of our own Client ID Metadata Document
//! (`clientMetadataUrl`: the document the person hosts, which `mcp-launch auth
//! client-metadata` prints; used where the authorization server takes such documents).
//!
//! The field names are Claude Code's (`clientId`, `callbackPort`, `scopes`,
//! `authServerMetadataUrl`), so one entry of a `.mcp.json` serves both; the spellings
//! `client_id`, `client_secret`, `redirect_port`, `auth_server_metadata_url` and
//! `client_metadata_url` are taken too. The block needs `clientId`, `authServerMetadataUrl`
//! or `clientMetadataUrl`; `clientId` and `clientMetadataUrl` both name the client, so not
//! both. `clientSecret` must come from a variable (`${VAR}`): a secret written out in a
//! config file ends up shared or committed, and is refused.

use std::path::Path;

use serde_json::{Map, Value};

use super::error::ServerFault;

/// A client registered beforehand at the server's authorization server, `${…}` expanded.
#[derive(Clone, PartialEq, Eq)]
pub struct OAuthClient {
    /// `clientId`: the client at the authorization server; `None` when the block only names
    /// the metadata (the client then registers as without a block).
    pub client_id: Option<String>,
    /// `clientSecret` (confidential clients), from a variable; never stored, never shown.
    pub client_secret: Option<String>,
    /// `scopes` (space-separated): asked for instead of the discovered ones.
    pub scopes: Option<String>,
    /// `callbackPort`: the redirect URI is `http://localhost:PORT/callback` (the one registered
    /// with the app, as Claude Code registers it); else the server's own loopback port.
    pub callback_port: Option<u16>,
    /// `authServerMetadataUrl`: the authorization server's metadata document, read instead of
    /// discovering it (its `issuer` still checked, RFC 8414 §3.3).
    pub metadata_url: Option<String>,
    /// `clientMetadataUrl`: our Client ID Metadata Document's URL (checked by
    /// [`client_metadata_url_fault`]), the client id where the authorization server takes
    /// such documents.
    pub client_metadata_url: Option<String>,
}

impl std::fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClient")
            .field("client_id", &self.client_id)
            .field("has_secret", &self.client_secret.is_some())
            .field("scopes", &self.scopes)
            .field("callback_port", &self.callback_port)
            .field("metadata_url", &self.metadata_url)
            .field("client_metadata_url", &self.client_metadata_url)
            .finish()
    }
}

/// The `oauth` block as written: strings not yet expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OAuthShape<'e> {
    pub(crate) client_id: Option<&'e str>,
    pub(crate) client_secret: Option<&'e str>,
    pub(crate) scopes: Option<String>,
    pub(crate) callback_port: Option<u16>,
    pub(crate) metadata_url: Option<&'e str>,
    pub(crate) client_metadata_url: Option<&'e str>,
}

/// The entry's `oauth` block, checked; `None` when absent or `null`.
pub(crate) fn shape(entry: &Map<String, Value>) -> Result<Option<OAuthShape<'_>>, ServerFault> {
    let block = match entry.get("oauth") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(block)) => block,
        Some(_) => {
            return Err(ServerFault::WrongType {
                field: "oauth",
                expected: "an object: {\"clientId\": \"…\"}",
            })
        }
    };
    let client_id = text(block, "oauth.clientId", "clientId", "client_id")?;
    let metadata_url = text(
        block,
        "oauth.authServerMetadataUrl",
        "authServerMetadataUrl",
        "auth_server_metadata_url",
    )?;
    let client_metadata_url = text(
        block,
        CLIENT_METADATA_URL,
        "clientMetadataUrl",
        "client_metadata_url",
    )?;
    let client_secret = text(block, "oauth.clientSecret", "clientSecret", "client_secret")?;
    if client_id.is_some() && client_metadata_url.is_some() {
        return Err(ServerFault::WrongType {
            field: CLIENT_METADATA_URL,
            expected: "left out when \"oauth.clientId\" is given (both name the client: keep one)",
        });
    }
    let names_more = metadata_url.is_some() || client_metadata_url.is_some();
    if client_id.is_none() && (!names_more || client_secret.is_some()) {
        return Err(ServerFault::MissingField {
            transport: "http",
            field: "oauth.clientId",
        });
    }
    if client_secret.is_some_and(|secret| !secret.contains("${")) {
        return Err(ServerFault::LiteralSecret {
            field: "oauth.clientSecret",
            in_checkout: false,
        });
    }
    Ok(Some(OAuthShape {
        client_id,
        client_secret,
        scopes: scopes(block)?,
        callback_port: port(block)?,
        metadata_url,
        client_metadata_url,
    }))
}

/// The field naming our Client ID Metadata Document, as errors name it.
pub(crate) const CLIENT_METADATA_URL: &str = "oauth.clientMetadataUrl";

/// What a Client ID Metadata Document's URL must be, as errors say it.
pub use crate::client_id::FORM as CLIENT_METADATA_URL_FORM;

/// Why `url` cannot be a Client ID Metadata Document's URL (the client id, compared as a
/// string by the authorization server); `None` when it can.
pub use crate::client_id::fault as client_metadata_url_fault;

/// The value of a string field written `name` or `alias` (not both).
fn text<'e>(
    block: &'e Map<String, Value>,
    field: &'static str,
    name: &str,
    alias: &str,
) -> Result<Option<&'e str>, ServerFault> {
    match one_of(block, field, name, alias)? {
        None => Ok(None),
        Some(Value::String(text)) if !text.trim().is_empty() => Ok(Some(text)),
        Some(_) => Err(ServerFault::WrongType {
            field,
            expected: "a non-empty string",
        }),
    }
}

/// The field written `name` or `alias`; both is an error (which one would win?).
fn one_of<'e>(
    block: &'e Map<String, Value>,
    field: &'static str,
    name: &str,
    alias: &str,
) -> Result<Option<&'e Value>, ServerFault> {
    let get = |key: &str| block.get(key).filter(|v| !v.is_null());
    match (get(name), get(alias)) {
        (Some(_), Some(_)) => Err(ServerFault::WrongType {
            field,
            expected: "written once (it is given under two spellings)",
        }),
        (one, other) => Ok(one.or(other)),
    }
}

/// `scopes`: one space-separated string (Claude Code's form) or an array of strings.
fn scopes(block: &Map<String, Value>) -> Result<Option<String>, ServerFault> {
    let wrong = ServerFault::WrongType {
        field: "oauth.scopes",
        expected: "a space-separated string of scopes",
    };
    let joined = match block.get("scopes") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(text)) => text.split_whitespace().collect::<Vec<_>>().join(" "),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| item.as_str().map(str::trim).ok_or(wrong.clone()))
            .collect::<Result<Vec<_>, _>>()?
            .join(" "),
        Some(_) => return Err(wrong),
    };
    if joined.trim().is_empty() {
        return Err(wrong);
    }
    Ok(Some(joined))
}

/// `callbackPort` (or `redirect_port`): a TCP port, 1–65535.
fn port(block: &Map<String, Value>) -> Result<Option<u16>, ServerFault> {
    let Some(value) = one_of(block, "oauth.callbackPort", "callbackPort", "redirect_port")? else {
        return Ok(None);
    };
    match value.as_u64().and_then(|n| u16::try_from(n).ok()) {
        Some(port) if port > 0 => Ok(Some(port)),
        _ => Err(ServerFault::WrongType {
            field: "oauth.callbackPort",
            expected: "a port number (1-65535)",
        }),
    }
}

/// Whether `file` lies in a git work tree (a `.git` in it or a directory above): a secret
/// written there may be committed already.
pub(crate) fn in_checkout(file: &Path) -> bool {
    file.ancestors()
        .skip(1)
        .any(|dir| dir.join(".git").exists())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn of(value: Value) -> Result<Option<OAuthShape<'static>>, ServerFault> {
        let leaked: &'static Value = Box::leak(Box::new(value));
        shape(leaked.as_object().unwrap())
    }

    #[test]
    fn claude_codes_spelling_and_the_snake_case_one_are_read() {
        let metadata = "https://as.example/.well-known/openid-configuration";
        let expected = Some(OAuthShape {
            client_id: Some("app"),
            client_secret: Some("${S}"),
            scopes: Some("repo read:org".into()),
            callback_port: Some(8080),
            metadata_url: Some(metadata),
            client_metadata_url: None,
        });
        let camel = of(json!({"oauth": {"clientId": "app", "clientSecret": "${S}",
            "scopes": "repo  read:org", "callbackPort": 8080,
            "authServerMetadataUrl": metadata}}));
        assert_eq!(camel.unwrap(), expected);
        let snake = of(
            json!({"oauth": {"client_id": "app", "client_secret": "${S}",
            "scopes": ["repo", "read:org"], "redirect_port": 8080,
            "auth_server_metadata_url": metadata}}),
        );
        assert_eq!(snake.unwrap(), expected);
        assert_eq!(of(json!({"url": "u"})).unwrap(), None);
        let only_metadata = of(json!({"oauth": {"authServerMetadataUrl": metadata}}));
        assert_eq!(only_metadata.unwrap().unwrap().client_id, None);
        let document = "https://me.example/mcp-launch.json";
        for spelling in ["clientMetadataUrl", "client_metadata_url"] {
            let ours = of(json!({"oauth": {spelling: document, "callbackPort": 8080}}));
            let ours = ours.unwrap().unwrap();
            assert_eq!(ours.client_metadata_url, Some(document), "{spelling}");
            assert_eq!(ours.client_id, None);
        }
    }

    #[test]
    fn each_fault_names_its_field() {
        let fault = |value: Value| of(value).unwrap_err().to_string();
        assert!(fault(json!({"oauth": "app"})).contains("\"oauth\""));
        assert!(fault(json!({"oauth": {}})).contains("oauth.clientId"));
        let secret_alone =
            json!({"oauth": {"authServerMetadataUrl": "https://a/", "clientSecret": "${S}"}});
        assert!(fault(secret_alone).contains("oauth.clientId"));
        assert!(fault(json!({"oauth": {"authServerMetadataUrl": 3}}))
            .contains("oauth.authServerMetadataUrl"));
        assert!(fault(json!({"oauth": {"clientId": 7}})).contains("oauth.clientId"));
        assert!(fault(json!({"oauth": {"clientId": "a", "client_id": "b"}})).contains("once"));
        assert!(
            fault(json!({"oauth": {"clientId": "a", "callbackPort": 70000}}))
                .contains("oauth.callbackPort")
        );
        assert!(fault(json!({"oauth": {"clientId": "a", "scopes": 3}})).contains("oauth.scopes"));
        let both = json!({"oauth": {"clientId": "a", "clientMetadataUrl": "https://m/c.json"}});
        assert!(fault(both).contains("oauth.clientMetadataUrl"));
        let twice = json!({"oauth": {"clientMetadataUrl": "https://m/c.json",
            "client_metadata_url": "https://m/c.json"}});
        assert!(fault(twice).contains("once"));
        let literal = fault(json!({"oauth": {"clientId": "a", "clientSecret": "hunter2"}}));
        assert!(literal.contains("oauth.clientSecret"), "{literal}");
        assert!(!literal.contains("hunter2"), "{literal}");
    }
}
