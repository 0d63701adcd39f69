//! URLs as they may be shown: a remote server's URL often carries a secret (`?api_key=…`,
//! `https://user:token@host/`), and URLs end up in logs, errors and answers to remote clients.

use crate::process::Masker;

/// Teaches `masker` a remote server's credentials: its header values (and the credential after
/// a scheme: `Bearer t0ken`) and its URL's user, password and every query value (`?api_key=…`
/// is a key whatever its name), for an upstream may echo any of them.
pub fn add_remote<'a>(
    masker: &Masker,
    url: &str,
    header_values: impl IntoIterator<Item = &'a str>,
) {
    for value in header_values {
        masker.add_credential(value);
    }
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return;
    };
    masker.add(parsed.username());
    masker.add(parsed.password().unwrap_or_default());
    for (_, value) in parsed.query_pairs() {
        masker.add(&value);
    }
}

/// `url` with its userinfo and every query value replaced by `****`; the scheme, host, port,
/// path and query keys stay, so the URL can still be recognised. Text that is not a URL is cut
/// at its first `?` and `@`-prefix instead.
pub fn url(url: &str) -> String {
    let Ok(mut parsed) = reqwest::Url::parse(url) else {
        let without_query = url.split('?').next().unwrap_or_default();
        return match without_query.rsplit_once('@') {
            Some((_, host)) => format!("****@{host}"),
            None => without_query.to_string(),
        };
    };
    if !parsed.username().is_empty() || parsed.password().is_some() {
        let _ = parsed.set_username("****");
        let _ = parsed.set_password(None);
    }
    if parsed.query().is_some() {
        let keys: Vec<String> = parsed.query_pairs().map(|(k, _)| k.into_owned()).collect();
        parsed.set_query(None);
        if !keys.is_empty() {
            let mut pairs = parsed.query_pairs_mut();
            for key in &keys {
                pairs.append_pair(key, "****");
            }
        }
    }
    parsed.to_string()
}

#[cfg(test)]
mod tests {
    /// An upstream that echoes its request gives back our header values and the URL's key:
    /// each is masked, the scheme's credential alone too.
    #[test]
    fn a_remote_servers_headers_and_url_secrets_are_masked() {
        let masker = crate::process::Masker::new();
        super::add_remote(
            &masker,
            "https://bob:pa55word@api.x.com/mcp?api_key=k3y-in-url&v=2",
            ["Token tok-123456", "x-token-value"],
        );
        let echo = "GET /mcp?api_key=k3y-in-url&v=2 user bob:pa55word x-token: x-token-value \
                    authorization: Token tok-123456 (again: tok-123456)";
        let masked = masker.mask(echo);
        for secret in ["k3y-in-url", "pa55word", "x-token-value", "tok-123456"] {
            assert!(!masked.contains(secret), "{secret} in {masked}");
        }
        assert!(masked.contains("v=2"), "{masked}");
    }

    #[test]
    fn secrets_in_urls_are_masked_and_the_rest_kept() {
        let cases = [
            (
                "https://api.x.com/mcp?api_key=s3cret&v=2",
                "https://api.x.com/mcp?api_key=****&v=****",
            ),
            (
                "https://bob:t0ken@api.x.com:8443/sse",
                "https://****@api.x.com:8443/sse",
            ),
            ("http://127.0.0.1:9000/mcp", "http://127.0.0.1:9000/mcp"),
            ("not a url?token=s3cret", "not a url"),
        ];
        for (given, shown) in cases {
            assert_eq!(super::url(given), shown, "{given}");
        }
    }
}
