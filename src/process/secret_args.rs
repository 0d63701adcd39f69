//! Literal secrets in a command line: where people put them in a server's `args`. A value
//! after a flag named like a secret (`--api-key K`, `--token=K`), an assignment
//! (`GITHUB_TOKEN=K`, as `env` and `docker run -e` take it), or a token of a well-known shape
//! (`ghp_…`, `xoxb-…`). Used to mask a child's output ([`super::SpawnSpec`]) and by
//! `clients move` to take such values out of a moved server's config.

use super::is_secret_name;

/// Prefixes of tokens that are secrets wherever they appear (GitHub, GitLab, Slack, OpenAI,
/// Anthropic, Stripe, AWS access keys); at least 16 characters must follow.
const TOKEN_PREFIXES: [&str; 12] = [
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "sk-",
    "sk_live_",
    "rk_live_",
    "AKIA",
];

/// One literal secret in an argument list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgSecret {
    /// Which argument holds it.
    pub index: usize,
    /// Where in that argument the secret starts (after `--token=` or `NAME=`; else 0). It runs
    /// to the argument's end.
    pub start: usize,
    /// The name it is known by: the flag or variable (`api-key`, `GITHUB_TOKEN`), or `token`.
    pub key: String,
}

/// The literal secrets of `args`, in order. A value already written as a reference (`${…}`)
/// is none.
pub fn secret_args(args: &[String]) -> Vec<ArgSecret> {
    let mut found = Vec::new();
    let mut after_flag: Option<&str> = None;
    for (index, arg) in args.iter().enumerate() {
        let flag = after_flag.take();
        match split_secret(arg, flag) {
            Some((start, key)) => found.push(ArgSecret { index, start, key }),
            None => after_flag = secret_flag(arg),
        }
    }
    found
}

/// The secret's start in `arg` and its name, when `arg` holds one (`flag`: the secret-named
/// flag just before it, if any).
fn split_secret(arg: &str, flag: Option<&str>) -> Option<(usize, String)> {
    if arg.is_empty() || arg.contains("${") {
        return None;
    }
    if let Some(flag) = flag.filter(|_| !arg.starts_with('-')) {
        return Some((0, flag.to_string()));
    }
    if let Some((name, value)) = arg.split_once('=') {
        let bare = name.trim_start_matches('-');
        let named = if name.starts_with('-') {
            names_secret(bare)
        } else {
            is_variable(bare) && is_secret_name(bare)
        };
        return (named && !value.is_empty()).then(|| (name.len() + 1, bare.to_string()));
    }
    TOKEN_PREFIXES
        .iter()
        .any(|p| arg.starts_with(p) && arg.len() >= p.len() + 16)
        .then(|| (0, "token".to_string()))
}

/// The flag's name when `arg` is a flag named like a secret that takes its value next.
fn secret_flag(arg: &str) -> Option<&str> {
    let name = arg.strip_prefix('-')?.trim_start_matches('-');
    (!name.contains('=') && names_secret(name)).then_some(name)
}

/// Whether a flag's name says its value is a secret (`api-key`, `token`, `password`), not
/// where one is (`key-file`, `token-env`) or something else (`tokenizer`, `keyboard`).
fn names_secret(name: &str) -> bool {
    const SECRET_WORDS: [&str; 7] = [
        "key", "token", "secret", "password", "passwd", "pat", "apikey",
    ];
    let lower = name.to_ascii_lowercase();
    let words: Vec<&str> = lower.split(['-', '_']).collect();
    let last = words.last().copied().unwrap_or_default();
    SECRET_WORDS.contains(&last)
        || (words.len() == 1 && is_secret_name(&lower) && lower.ends_with("key"))
}

fn is_variable(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// The secret values of `args` (for a masker).
pub fn secret_values(args: &[String]) -> impl Iterator<Item = &str> {
    secret_args(args)
        .into_iter()
        .map(move |s| &args[s.index][s.start..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags_assignments_and_token_shapes_hold_secrets_other_words_do_not() {
        let args = strings(&[
            "run",
            "-e",
            "GITHUB_TOKEN=ghs_abc",
            "--api-key",
            "k1",
            "--token=t2",
            "ghp_0123456789abcdefXYZ",
            "--tokenizer",
            "gpt2",
            "--key-file",
            "/k.pem",
            "--password",
            "-q",
            "lower_token=x",
            "sk-short",
            "--api-key",
            "${KEY}",
        ]);
        let values: Vec<&str> = secret_values(&args).collect();
        assert_eq!(values, ["ghs_abc", "k1", "t2", "ghp_0123456789abcdefXYZ"]);
        let keys: Vec<String> = secret_args(&args).into_iter().map(|s| s.key).collect();
        assert_eq!(keys, ["GITHUB_TOKEN", "api-key", "token", "token"]);
    }
}
