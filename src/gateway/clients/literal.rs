//! Literal secrets in a moved server's command line and URL. `env` and `headers` values all
//! go to the `.env` file (found.rs); a command line or URL holds secrets only in places people
//! put them: a value after a flag named like one (`--api-key K`, `--token=K`), an assignment
//! (`GITHUB_TOKEN=K`, as `docker run -e` takes it), a token of a well-known shape (`ghp_…`,
//! `xoxb-…`), a URL's user and password, and a query value whose key is named like one
//! (`?api_key=K`). Each such value is moved to the `.env` file as it is written — percent
//! escapes included, so the interpolated URL is the same text — and the config refers to it by
//! `${SERVER_NAME}`. What is shown for people masks the same values.

use crate::process::{is_secret_name, secret_args, MASK};

use super::found::{secret_prefix, upper, Secret};

/// A command line or URL with its literal secrets taken out.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Scrubbed<T> {
    /// For the config: each secret replaced by `${VAR}`.
    pub(super) config: T,
    /// For people: each secret replaced by `****`.
    pub(super) shown: T,
}

/// `args` of `server` with their literal secrets ([`crate::process::secret_args`]) moved into
/// `secrets`.
pub(super) fn args(
    server: &str,
    args: &[String],
    secrets: &mut Vec<Secret>,
) -> Scrubbed<Vec<String>> {
    let mut config = args.to_vec();
    let mut shown = args.to_vec();
    for found in secret_args(args) {
        let arg = &args[found.index];
        let (kept, value) = arg.split_at(found.start);
        let var = add(server, &found.key, value, secrets);
        config[found.index] = format!("{kept}${{{var}}}");
        shown[found.index] = format!("{kept}{MASK}");
    }
    Scrubbed { config, shown }
}

/// `url` of `server` with its user, password and secret-named query values moved into
/// `secrets`.
pub(super) fn url(server: &str, url: &str, secrets: &mut Vec<Secret>) -> Scrubbed<String> {
    let mut config = String::with_capacity(url.len());
    let mut shown = String::with_capacity(url.len());
    let mut push = |kept: &str, secret: Option<(&str, &str)>| {
        config.push_str(kept);
        shown.push_str(kept);
        if let Some((key, value)) = secret {
            let var = add(server, key, value, secrets);
            config.push_str(&format!("${{{var}}}"));
            shown.push_str(MASK);
        }
    };
    let (before_fragment, fragment) = match url.split_once('#') {
        Some((b, f)) => (b, Some(f)),
        None => (url, None),
    };
    let (base, query) = match before_fragment.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (before_fragment, None),
    };
    match userinfo(base) {
        Some((scheme, user, password, rest)) => {
            push(scheme, literal(user).then_some(("url_user", user)));
            if let Some(password) = password {
                push(":", literal(password).then_some(("url_password", password)));
            }
            push(rest, None);
        }
        None => push(base, None),
    }
    if let Some(query) = query {
        push("?", None);
        for (i, pair) in query.split('&').enumerate() {
            if i > 0 {
                push("&", None);
            }
            match pair.split_once('=') {
                Some((key, value)) if literal(value) && is_secret_name(key) => {
                    push(&pair[..key.len() + 1], Some((key, value)))
                }
                _ => push(pair, None),
            }
        }
    }
    if let Some(fragment) = fragment {
        push("#", None);
        push(fragment, None);
    }
    Scrubbed { config, shown }
}

/// `scheme://`, the user, the password and the rest from `@` on, when `base` has userinfo.
fn userinfo(base: &str) -> Option<(&str, &str, Option<&str>, &str)> {
    let after_scheme = base.find("://")? + 3;
    let authority_end = base[after_scheme..]
        .find('/')
        .map_or(base.len(), |i| after_scheme + i);
    let at = base[after_scheme..authority_end].rfind('@')? + after_scheme;
    let info = &base[after_scheme..at];
    let (user, password) = match info.split_once(':') {
        Some((u, p)) => (u, Some(p)),
        None => (info, None),
    };
    Some((&base[..after_scheme], user, password, &base[at..]))
}

/// A value that is there and not already a reference.
fn literal(value: &str) -> bool {
    !value.is_empty() && !value.contains("${")
}

/// Records `value` as a secret of `server` named after `key` (`_2`, `_3`… when the name is
/// taken by another value) and returns its variable.
fn add(server: &str, key: &str, value: &str, secrets: &mut Vec<Secret>) -> String {
    let base = format!("{}{}", secret_prefix(server), upper(key));
    let mut var = base.clone();
    let mut n = 1;
    loop {
        match secrets.iter().find(|s| s.var == var) {
            Some(same) if same.value == value => return var,
            Some(_) => {
                n += 1;
                var = format!("{base}_{n}");
            }
            None => break,
        }
    }
    secrets.push(Secret {
        var: var.clone(),
        value: value.to_string(),
    });
    var
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn secrets_after_flags_in_assignments_and_of_known_shapes_move_out() {
        // Each argument and what the config gets in its place.
        let table = [
            ("run", "run"),
            ("-e", "-e"),
            ("GITHUB_TOKEN=ghs_abc", "GITHUB_TOKEN=${GH_GITHUB_TOKEN}"),
            ("--api-key", "--api-key"),
            ("k1", "${GH_API_KEY}"),
            ("--token=t2", "--token=${GH_TOKEN}"),
            ("ghp_0123456789abcdefXYZ", "${GH_TOKEN_2}"),
            ("--tokenizer", "--tokenizer"),
            ("gpt2", "gpt2"),
            ("--key-file", "--key-file"),
            ("/k.pem", "/k.pem"),
            ("--password", "--password"),
            ("-q", "-q"),
        ];
        let mut secrets = Vec::new();
        let given: Vec<&str> = table.iter().map(|(arg, _)| *arg).collect();
        let got = args("gh", &words(&given), &mut secrets);
        let wanted: Vec<&str> = table.iter().map(|(_, config)| *config).collect();
        assert_eq!(got.config, words(&wanted));
        assert_eq!(got.shown[2], "GITHUB_TOKEN=****");
        assert_eq!(got.shown[4], "****");
        let values: Vec<(&str, &str)> = secrets
            .iter()
            .map(|s| (s.var.as_str(), s.value.as_str()))
            .collect();
        assert_eq!(
            values,
            [
                ("GH_GITHUB_TOKEN", "ghs_abc"),
                ("GH_API_KEY", "k1"),
                ("GH_TOKEN", "t2"),
                ("GH_TOKEN_2", "ghp_0123456789abcdefXYZ"),
            ]
        );
    }

    #[test]
    fn references_and_plain_arguments_stay() {
        let mut secrets = Vec::new();
        let list = words(&[
            "--api-key",
            "${KEY}",
            "GITHUB_TOKEN=${T}",
            "lower_token=x",
            "sk-short",
        ]);
        let got = args("s", &list, &mut secrets);
        assert_eq!(got.config, list);
        assert!(secrets.is_empty(), "{secrets:?}");
    }

    #[test]
    fn a_urls_user_password_and_secret_query_values_move_out_as_written() {
        let mut secrets = Vec::new();
        let got = url(
            "api",
            "https://me:p%40ss@h.example:8443/mcp?api_key=a%2Bb&transport=sse&token=${T}#top",
            &mut secrets,
        );
        assert_eq!(
            got.config,
            "https://${API_URL_USER}:${API_URL_PASSWORD}@h.example:8443/mcp?api_key=${API_API_KEY}&transport=sse&token=${T}#top"
        );
        assert_eq!(
            got.shown,
            "https://****:****@h.example:8443/mcp?api_key=****&transport=sse&token=${T}#top"
        );
        let values: Vec<&str> = secrets.iter().map(|s| s.value.as_str()).collect();
        assert_eq!(values, ["me", "p%40ss", "a%2Bb"]);
    }

    #[test]
    fn a_url_without_secrets_is_unchanged() {
        let mut secrets = Vec::new();
        for plain in [
            "http://127.0.0.1:3000/mcp",
            "https://h/mcp?transport=sse",
            "https://h/p@q",
            "not a url",
        ] {
            let got = url("s", plain, &mut secrets);
            assert_eq!((got.config.as_str(), got.shown.as_str()), (plain, plain));
        }
        assert!(secrets.is_empty());
    }
}
