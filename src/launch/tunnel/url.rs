//! Recognising a quick tunnel's public URL. cloudflared's log names `trycloudflare.com` several
//! times before the real URL (the service's own name, its API at `api.trycloudflare.com`),
//! and whatever we accept here is what we hand out as the stack's public address — so the
//! rule is strict: a whole `https://` token whose host is under `trycloudflare.com`.

/// The domain every quick tunnel lives under.
const QUICK_DOMAIN: &str = ".trycloudflare.com";

/// The API cloudflared asks for a quick tunnel; its address is in the log but serves nothing
/// of ours.
const API_LABEL: &str = "api";

/// DNS caps a label at 63 bytes.
const MAX_LABEL: usize = 63;

/// The quick tunnel URL in one line of cloudflared's log, if the line carries one:
/// `https://<labels>.trycloudflare.com`, without a trailing slash.
///
/// A candidate is a whitespace- or `|`-delimited token starting with `https://` (so the box
/// cloudflared draws around the URL does not matter). Its host must be lowercase DNS labels
/// (`[a-z0-9-]`, not starting or ending with `-`) under `trycloudflare.com`, the first label
/// must not be `api`, and nothing but one optional `/` may follow the host: no port, path,
/// query or userinfo, which is what rules out `https://evil.com/?x=.trycloudflare.com` and
/// `https://x.trycloudflare.com.evil.com`.
pub fn parse_quick_url(line: &str) -> Option<String> {
    line.split(|c: char| c.is_whitespace() || c == '|')
        .filter_map(|token| token.strip_prefix("https://"))
        .map(|rest| rest.strip_suffix('/').unwrap_or(rest))
        .find(|host| is_quick_host(host))
        .map(|host| format!("https://{host}"))
}

/// The URL for a hostname as cloudflared's `/quicktunnel` endpoint reports it, under the same
/// rule as [`parse_quick_url`]. An empty hostname (a named tunnel, or none yet) gives `None`.
pub(super) fn quick_url_from_hostname(hostname: &str) -> Option<String> {
    is_quick_host(hostname).then(|| format!("https://{hostname}"))
}

/// True for `<label>(.<label>)*.trycloudflare.com` whose first label is not `api`.
fn is_quick_host(host: &str) -> bool {
    let Some(sub) = host.strip_suffix(QUICK_DOMAIN) else {
        return false;
    };
    let mut labels = sub.split('.');
    let first_ok = labels.next().is_some_and(|l| l != API_LABEL && is_label(l));
    first_ok && labels.all(is_label)
}

fn is_label(label: &str) -> bool {
    !label.is_empty()
        && label.len() <= MAX_LABEL
        && !label.starts_with('-')
        && !label.ends_with('-')
        && label
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    const URL: &str = "https://seasonal-deck-organisms-sf.trycloudflare.com";

    #[test]
    fn the_url_is_found_in_the_lines_that_carry_it() {
        let lines = [
            "2024-05-01T10:00:03Z INF |  https://seasonal-deck-organisms-sf.trycloudflare.com                                      |",
            "2024-05-01T10:00:03Z INF |  https://seasonal-deck-organisms-sf.trycloudflare.com|",
            "https://seasonal-deck-organisms-sf.trycloudflare.com",
            "https://seasonal-deck-organisms-sf.trycloudflare.com/",
            "visit https://seasonal-deck-organisms-sf.trycloudflare.com now",
            "\thttps://seasonal-deck-organisms-sf.trycloudflare.com\r",
            "see https://api.trycloudflare.com then https://seasonal-deck-organisms-sf.trycloudflare.com",
        ];
        for line in lines {
            assert_eq!(parse_quick_url(line).as_deref(), Some(URL), "{line:?}");
        }
    }

    #[test]
    fn digits_and_several_labels_are_hosts_too() {
        assert_eq!(
            parse_quick_url("https://a1.b-2.trycloudflare.com").as_deref(),
            Some("https://a1.b-2.trycloudflare.com")
        );
        assert_eq!(
            parse_quick_url("https://x.trycloudflare.com").as_deref(),
            Some("https://x.trycloudflare.com")
        );
    }

    #[test]
    fn decoys_and_near_misses_are_ignored() {
        let long_label = format!("https://{}.trycloudflare.com", "a".repeat(64));
        let lines = [
            "2024-05-01T10:00:01Z INF Requesting new quick Tunnel on trycloudflare.com...",
            "2024-05-01T10:00:01Z INF +------------------------------------------------+",
            "2024-05-01T10:00:03Z INF |  Your quick Tunnel has been created! Visit it at (it may take some time to be reachable):  |",
            "Post \"https://api.trycloudflare.com/tunnel\": dial tcp",
            "https://api.trycloudflare.com",
            "https://api.trycloudflare.com/",
            "https://developers.cloudflare.com/cloudflare-one/connections/connect-apps",
            "http://seasonal-deck-organisms-sf.trycloudflare.com",
            "https://evil.com/?x=.trycloudflare.com",
            "https://x.trycloudflare.com.evil.com",
            "https://trycloudflare.com",
            "https://.trycloudflare.com",
            "https://a..b.trycloudflare.com",
            "https://-a.trycloudflare.com",
            "https://a-.trycloudflare.com",
            "https://Seasonal.trycloudflare.com",
            "https://a_b.trycloudflare.com",
            "https://x.trycloudflare.com:8443",
            "https://x.trycloudflare.com/path",
            "https://x.trycloudflare.com//",
            "https://x.trycloudflare.com?q=1",
            "https://user@x.trycloudflare.com",
            "https://x.trycloudflare.com\"",
            "xhttps://x.trycloudflare.com",
            "https://xtrycloudflare.com",
            long_label.as_str(),
            "",
        ];
        for line in lines {
            assert_eq!(parse_quick_url(line), None, "{line:?}");
        }
    }

    #[test]
    fn hostnames_from_the_metrics_server_follow_the_same_rule() {
        assert_eq!(
            quick_url_from_hostname("seasonal-deck-organisms-sf.trycloudflare.com").as_deref(),
            Some(URL)
        );
        for bad in [
            "",
            "api.trycloudflare.com",
            "x.trycloudflare.com/",
            "x.example.com",
        ] {
            assert_eq!(quick_url_from_hostname(bad), None, "{bad:?}");
        }
    }
}
