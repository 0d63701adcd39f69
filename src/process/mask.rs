//! Masking secrets out of every line a child writes and every line we log: the keys we
//! generate, the tokens we pass on, the values a server's config gives it (`env`, headers),
//! anything after `Bearer `, and the arguments of a call as mcpo logs them. mcpo logs every
//! call's arguments and its own command line; none of that may reach a log, a ring buffer or
//! an error unmasked.

use std::sync::{Arc, OnceLock, RwLock};

/// What a secret is replaced with.
pub const MASK: &str = "****";

/// Secrets shorter than this are not masked by value: masking `1` or `ab` everywhere would
/// shred every log line, and such values protect nothing anyway.
const MIN_SECRET_LEN: usize = 6;

/// What mcpo writes before a call's arguments (`Calling endpoint: echo, with args: {...}`):
/// the rest of such a line is withheld, whatever the arguments hold.
const CALL_ARGUMENTS_MARKER: &str = "with args: ";

/// Known secret values plus the patterns that give secrets away. Cheap to clone and share:
/// clones mask the same values, and a value added through one is masked by all.
#[derive(Clone, Default)]
pub struct Masker {
    secrets: Arc<RwLock<Vec<String>>>,
}

impl std::fmt::Debug for Masker {
    /// The count of secrets, never the secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = self.secrets.read().map_or(0, |s| s.len());
        f.debug_struct("Masker").field("secrets", &count).finish()
    }
}

impl Masker {
    /// A masker that knows no secret values yet (patterns still apply).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a secret value to mask wherever it appears.
    pub fn add(&self, secret: &str) {
        let secret = secret.trim();
        if secret.chars().count() < MIN_SECRET_LEN {
            return;
        }
        if let Ok(mut secrets) = self.secrets.write() {
            if !secrets.iter().any(|s| s == secret) {
                secrets.push(secret.to_string());
                // Longest first, so a secret containing another is masked whole.
                secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
            }
        }
    }

    /// Adds every value of `values` (a server's `env` and header values: whatever a config hands
    /// a server may be a credential, whatever its name).
    pub fn add_all<'a>(&self, values: impl IntoIterator<Item = &'a str>) {
        for value in values {
            self.add(value);
        }
    }

    /// Adds a header value and, for a `Scheme credential` value (`Bearer t0ken`), the
    /// credential alone: an upstream may echo either.
    pub fn add_credential(&self, value: &str) {
        self.add(value);
        if let Some((_, credential)) = value.trim().rsplit_once(char::is_whitespace) {
            self.add(credential);
        }
    }

    /// Adds every secret `other` knows.
    pub fn add_known(&self, other: &Masker) {
        let known = other.secrets.read().map(|s| s.clone()).unwrap_or_default();
        self.add_all(known.iter().map(String::as_str));
    }

    /// Adds the values of the variables whose names look secret (`*TOKEN*`, `*KEY*`,
    /// `*SECRET*`, `*PASSWORD*`, case-insensitive).
    pub fn add_env<'a>(&self, vars: impl IntoIterator<Item = (&'a str, &'a str)>) {
        for (name, value) in vars {
            if is_secret_name(name) {
                self.add(value);
            }
        }
    }

    /// `line` with every known secret, every bearer token and a call's logged arguments
    /// replaced by [`MASK`].
    pub fn mask(&self, line: &str) -> String {
        let mut out = withhold_call_arguments(line);
        if let Ok(secrets) = self.secrets.read() {
            for secret in secrets.iter() {
                if out.contains(secret.as_str()) {
                    out = out.replace(secret.as_str(), MASK);
                }
            }
        }
        mask_after_markers(&out)
    }
}

/// This process's own secrets: the values of [`super::WITHHELD_ENV`] in our environment
/// (`TUNNEL_TOKEN`, `MCP_LAUNCH_API_KEY`) and the keys of the stacks we launch (added by the
/// launcher before any preflight). Every child's output is masked with them, whoever spawned
/// it: a preflight runs before its stack's own masker exists.
pub fn own_secrets() -> &'static Masker {
    static OWN: OnceLock<Masker> = OnceLock::new();
    OWN.get_or_init(|| {
        let masker = Masker::new();
        for name in super::WITHHELD_ENV {
            if let Ok(value) = std::env::var(name) {
                masker.add(&value);
            }
        }
        masker
    })
}

/// True for variable names that hold secrets by convention.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"]
        .iter()
        .any(|marker| upper.contains(marker))
}

/// `line` cut after [`CALL_ARGUMENTS_MARKER`], with [`MASK`] in place of the arguments.
fn withhold_call_arguments(line: &str) -> String {
    match line.find(CALL_ARGUMENTS_MARKER) {
        Some(i) => format!("{}{MASK}", &line[..i + CALL_ARGUMENTS_MARKER.len()]),
        None => line.to_string(),
    }
}

/// Masks the word after `Bearer ` and after `--api-key`/`--token` flags, whatever its value.
fn mask_after_markers(line: &str) -> String {
    const MARKERS: [&str; 4] = ["bearer ", "--api-key ", "--api-key=", "--token "];
    let lower = line.to_ascii_lowercase();
    let mut out = String::with_capacity(line.len());
    let mut pos = 0;
    while let Some((start, marker)) = MARKERS
        .iter()
        .filter_map(|m| lower[pos..].find(m).map(|i| (pos + i, *m)))
        .min_by_key(|(i, _)| *i)
    {
        let value_start = start + marker.len();
        let value_end = line[value_start..]
            .find(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == ',')
            .map_or(line.len(), |i| value_start + i);
        out.push_str(&line[pos..value_start]);
        if value_end > value_start && &line[value_start..value_end] != MASK {
            out.push_str(MASK);
        } else {
            out.push_str(&line[value_start..value_end]);
        }
        pos = value_end;
    }
    out.push_str(&line[pos..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_and_markers_are_masked() {
        let masker = Masker::new();
        masker.add("s3cr3t-key-value");
        masker.add("abc"); // too short to mask by value
        masker.add_env([
            ("GITHUB_TOKEN", "ghp_1234567890"),
            ("HOME", "/home/someone"),
        ]);
        let line =
            "call {'token': 'ghp_1234567890', 'k': 's3cr3t-key-value'} home=/home/someone abc";
        assert_eq!(
            masker.mask(line),
            "call {'token': '****', 'k': '****'} home=/home/someone abc"
        );
        assert_eq!(
            masker.mask("Authorization: Bearer xyz.123 next"),
            "Authorization: Bearer **** next"
        );
        assert_eq!(
            masker.mask("mcpo --host 127.0.0.1 --api-key zzzzzzz --port 1"),
            "mcpo --host 127.0.0.1 --api-key **** --port 1"
        );
        assert_eq!(masker.mask("--api-key=abc"), "--api-key=****");
        assert_eq!(masker.mask("no secrets here"), "no secrets here");
    }

    #[test]
    fn mcpo_call_arguments_are_withheld() {
        let masker = Masker::new();
        assert_eq!(
            masker.mask("2026-11-25 - INFO - Calling endpoint: echo, with args: {'message': 'x'}"),
            "2026-11-25 - INFO - Calling endpoint: echo, with args: ****"
        );
        masker.add_all(["postgres://db-secret", "short"]);
        assert_eq!(masker.mask("at postgres://db-secret/x"), "at ****/x");
        assert_eq!(format!("{masker:?}"), "Masker { secrets: 1 }");
    }

    #[test]
    fn longer_secrets_win_over_their_prefixes() {
        let masker = Masker::new();
        masker.add("prefix");
        masker.add("prefix-and-more");
        assert_eq!(masker.mask("x prefix-and-more y"), "x **** y");
    }

    #[test]
    fn secret_names() {
        for name in [
            "GITHUB_TOKEN",
            "api_key",
            "AWS_SECRET_ACCESS_KEY",
            "DB_PASSWORD",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in ["HOME", "PATH", "NODE_ENV"] {
            assert!(!is_secret_name(name), "{name}");
        }
    }
}
