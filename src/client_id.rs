//! What a Client ID Metadata Document's URL must be (draft-ietf-oauth-client-id-metadata-
//! document §3): one rule for both sides of a login. Our logins check the URL they will name
//! as their client id (`config`'s `oauth.clientMetadataUrl`, the variable, `--url`); our
//! authorization server checks the URL a client names before it fetches anything
//! (`auth::server::cimd`). The authorization server compares the client id as a string, so
//! the URL must also be written exactly as it is sent.

use reqwest::Url;

/// What the URL must be, as errors say it.
pub const FORM: &str = "an https URL with a path (https://host/path/client.json): no fragment, no user or password, no . or .. segments, written as it is sent (lower-case host)";

/// `url` parsed, when it can be a client id; else why not. `loopback_http` also lets in
/// plain http on a loopback host (our authorization server's switch for local tests).
pub fn checked(url: &str, loopback_http: bool) -> Result<Url, &'static str> {
    let parsed = Url::parse(url).map_err(|_| "it is not a URL")?;
    let on_loopback = matches!(parsed.host_str(), Some("127.0.0.1" | "localhost" | "[::1]"));
    let dotted = url
        .split(['?', '#'])
        .next()
        .unwrap_or_default()
        .split('/')
        .any(|segment| segment == "." || segment == "..");
    let fault = if parsed.scheme() != "https"
        && !(loopback_http && parsed.scheme() == "http" && on_loopback)
    {
        Some("it is not https")
    } else if matches!(parsed.path(), "" | "/") {
        Some("it has no path")
    } else if parsed.fragment().is_some() {
        Some("it has a fragment")
    } else if !parsed.username().is_empty() || parsed.password().is_some() {
        Some("it carries a user or password")
    } else if dotted {
        Some("it has a . or .. segment")
    } else if parsed.as_str() != url {
        Some("it is not written as it is sent (the authorization server compares it as a string)")
    } else {
        None
    };
    match fault {
        Some(why) => Err(why),
        None => Ok(parsed),
    }
}

/// Why `url` cannot be a client id (https only); `None` when it can.
pub fn fault(url: &str) -> Option<&'static str> {
    checked(url, false).err()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_id_is_an_https_url_with_a_path_written_as_sent() {
        assert_eq!(fault("https://me.example/mcp/client.json"), None);
        for (bad, why) in [
            ("http://me.example/client.json", "https"),
            ("https://me.example", "path"),
            ("https://me.example/", "path"),
            ("https://me.example/c.json#x", "fragment"),
            ("https://u:p@me.example/c.json", "user"),
            ("https://me.example/a/../c.json", ". or .."),
            ("https://ME.example/c.json", "as it is sent"),
            ("me.example/c.json", "not a URL"),
            ("http://127.0.0.1:9/c.json", "https"),
        ] {
            let fault = fault(bad);
            assert!(fault.is_some_and(|f| f.contains(why)), "{bad}: {fault:?}");
        }
    }

    #[test]
    fn plain_http_is_let_in_on_loopback_only_with_the_switch() {
        assert!(checked("http://127.0.0.1:9/c.json", true).is_ok());
        assert!(checked("http://localhost:9/c.json", true).is_ok());
        assert!(checked("http://10.0.0.1/c.json", true).is_err());
        assert!(checked("http://127.0.0.1:9/", true).is_err());
        assert!(checked("http://127.0.0.1:9/c.json", false).is_err());
    }
}
