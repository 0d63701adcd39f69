//! The `WWW-Authenticate: Bearer …` challenge (RFC 6750 §3, RFC 9728 §5.1): read by our client
//! from a 401/403 answer, written by our protected endpoints.

use std::fmt;

/// A Bearer challenge's parameters. `resource_metadata` points at the protected-resource
/// metadata (RFC 9728); `scope` names what the request needs (MCP's scope selection and
/// step-up); `error` is e.g. `invalid_token` or `insufficient_scope`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BearerChallenge {
    /// The protection space.
    pub realm: Option<String>,
    /// Space-separated scopes.
    pub scope: Option<String>,
    /// The error code (`invalid_grant`, `invalid_client`, …).
    pub error: Option<String>,
    /// Human-readable detail.
    pub error_description: Option<String>,
    /// URL of the protected-resource metadata (RFC 9728).
    pub resource_metadata: Option<String>,
}

impl BearerChallenge {
    /// The Bearer challenge among the challenges of one `WWW-Authenticate` value (several
    /// schemes may share a header: `Basic realm="x", Bearer scope="a b"`); none when no
    /// challenge uses the Bearer scheme. Unknown parameters are ignored; a parameter given twice
    /// keeps its first value.
    pub fn parse(header: &str) -> Option<Self> {
        let mut found: Option<BearerChallenge> = None;
        let mut in_bearer = false;
        for item in Lexer::new(header) {
            match item {
                Item::Scheme(scheme) => {
                    if found.is_some() && in_bearer {
                        break;
                    }
                    in_bearer = scheme.eq_ignore_ascii_case("bearer");
                    if in_bearer {
                        found = Some(BearerChallenge::default());
                    }
                }
                Item::Param(name, value) => {
                    if let (true, Some(challenge)) = (in_bearer, found.as_mut()) {
                        challenge.set(&name, value);
                    }
                }
            }
        }
        found
    }

    fn set(&mut self, name: &str, value: String) {
        let slot = match name.to_ascii_lowercase().as_str() {
            "realm" => &mut self.realm,
            "scope" => &mut self.scope,
            "error" => &mut self.error,
            "error_description" => &mut self.error_description,
            "resource_metadata" => &mut self.resource_metadata,
            _ => return,
        };
        slot.get_or_insert(value);
    }

    /// The scopes `scope` names, split on spaces.
    pub fn scopes(&self) -> Vec<&str> {
        self.scope
            .as_deref()
            .map(|s| s.split_ascii_whitespace().collect())
            .unwrap_or_default()
    }
}

/// Renders the header value: `Bearer name="value", …` (values quoted and escaped).
impl fmt::Display for BearerChallenge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Bearer")?;
        let params = [
            ("realm", &self.realm),
            ("resource_metadata", &self.resource_metadata),
            ("scope", &self.scope),
            ("error", &self.error),
            ("error_description", &self.error_description),
        ];
        let mut first = true;
        for (name, value) in params {
            let Some(value) = value else { continue };
            f.write_str(if first { " " } else { ", " })?;
            first = false;
            write!(f, "{name}=\"")?;
            for c in value.chars().filter(|c| !c.is_control()) {
                if c == '"' || c == '\\' {
                    f.write_str("\\")?;
                }
                write!(f, "{c}")?;
            }
            f.write_str("\"")?;
        }
        Ok(())
    }
}

/// What the lexer yields: a challenge's scheme, or one of its `name=value` parameters.
enum Item {
    Scheme(String),
    Param(String, String),
}

/// RFC 9110 §11.6.1 challenges, leniently: tokens, quoted strings with `\` escapes, token68
/// credentials after a scheme skipped.
struct Lexer<'a> {
    rest: &'a str,
}

impl<'a> Lexer<'a> {
    fn new(header: &'a str) -> Self {
        Lexer { rest: header }
    }

    fn skip(&mut self, pred: impl Fn(char) -> bool) {
        self.rest = self.rest.trim_start_matches(pred);
    }

    fn token(&mut self) -> &'a str {
        let end = self
            .rest
            .find(|c: char| c.is_whitespace() || matches!(c, ',' | '=' | '"'))
            .unwrap_or(self.rest.len());
        let (token, rest) = self.rest.split_at(end);
        self.rest = rest;
        token
    }

    fn quoted(&mut self) -> String {
        let mut out = String::new();
        let mut chars = self.rest[1..].char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.rest = &self.rest[1 + i + 1..];
                    return out;
                }
                '\\' => {
                    if let Some((_, escaped)) = chars.next() {
                        out.push(escaped);
                    }
                }
                c => out.push(c),
            }
        }
        self.rest = "";
        out
    }
}

impl Iterator for Lexer<'_> {
    type Item = Item;

    fn next(&mut self) -> Option<Item> {
        loop {
            self.skip(|c| c.is_whitespace() || c == ',');
            if self.rest.is_empty() {
                return None;
            }
            if self.rest.starts_with(['"', '=']) {
                // Stray punctuation (a token68's padding, a broken header): skip one character.
                let skip = if self.rest.starts_with('"') {
                    self.quoted();
                    0
                } else {
                    1
                };
                self.rest = &self.rest[skip..];
                continue;
            }
            let name = self.token();
            let after = self.rest.trim_start();
            if let Some(value) = after.strip_prefix('=') {
                let value = value.trim_start();
                if value.is_empty() || value.starts_with([',', '=']) {
                    // `token68=` or `x==`: a credential, not a parameter.
                    self.rest = value.trim_start_matches('=');
                    continue;
                }
                self.rest = value;
                let value = if self.rest.starts_with('"') {
                    self.quoted()
                } else {
                    self.token().to_owned()
                };
                return Some(Item::Param(name.to_owned(), value));
            }
            return Some(Item::Scheme(name.to_owned()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_bearer_challenge_among_others() {
        let header = r#"Basic realm="x", Bearer resource_metadata="https://h.example/.well-known/oauth-protected-resource/mcp", scope="files:read files:write", error="insufficient_scope""#;
        let c = BearerChallenge::parse(header).unwrap();
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://h.example/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(c.scopes(), ["files:read", "files:write"]);
        assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(
            c.realm, None,
            "the Basic challenge's realm is not the Bearer's"
        );
    }

    #[test]
    fn tolerates_tokens_escapes_and_token68() {
        let c = BearerChallenge::parse(
            r#"Negotiate abc==, bearer error=invalid_token, error_description="say \"hi\"""#,
        )
        .unwrap();
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        assert_eq!(c.error_description.as_deref(), Some(r#"say "hi""#));
        assert_eq!(BearerChallenge::parse("Basic realm=x"), None);
        assert_eq!(BearerChallenge::parse(""), None);
        assert_eq!(
            BearerChallenge::parse("Bearer"),
            Some(BearerChallenge::default())
        );
        for broken in [
            r#"Bearer scope="unterminated"#,
            "Bearer ===, =\"",
            "\"",
            ",,,=",
        ] {
            let _ = BearerChallenge::parse(broken);
        }
    }

    #[test]
    fn renders_what_it_reads() {
        let c = BearerChallenge {
            resource_metadata: Some(
                "https://h.example/.well-known/oauth-protected-resource".into(),
            ),
            scope: Some("tools:read".into()),
            error: Some("invalid_token".into()),
            error_description: Some("a \"quoted\" \\ word\nnext".into()),
            ..Default::default()
        };
        let rendered = c.to_string();
        assert!(!rendered.contains('\n'), "{rendered}");
        let back = BearerChallenge::parse(&rendered).unwrap();
        assert_eq!(
            back.error_description.as_deref(),
            Some("a \"quoted\" \\ wordnext")
        );
        assert_eq!(back.resource_metadata, c.resource_metadata);
        assert_eq!(back.scope, c.scope);
    }
}
