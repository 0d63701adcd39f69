//! `${VAR}` / `${VAR:-default}` interpolation of config strings.
//!
//! Rules (shell- and docker-compose-like, but deliberately small):
//! - `${NAME}` is replaced by the variable's value; unset is an error ([`Fault::Unset`]).
//! - `${NAME:-default}` uses `default` when the variable is unset *or empty* (as in sh). The
//!   default may be empty and may contain anything but `}`; it is not interpolated again.
//! - `$$` is an escape for one literal `$` (so `$${X}` yields the text `${X}`); a `$` followed by
//!   anything else but `{` (or ending the string) is kept as is.
//! - A `${` without a closing `}` is an error, as is a name that is not letters, digits and `_`
//!   (not starting with a digit). This also rejects VS Code's `${input:…}` forms loudly.
//!
//! The module knows nothing of servers or files: callers add that context to the error.

/// Why a string could not be interpolated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fault {
    /// `${NAME}` names a variable that is not set and has no default.
    Unset {
        /// The variable's name.
        var: String,
    },
    /// A `${` is never closed.
    Unterminated,
    /// The text between `${` and `}` (or `:-`) is not a variable name.
    InvalidName {
        /// The text found.
        name: String,
    },
}

impl Fault {
    /// A short reason for syntax faults, used in `ConfigError::InvalidInterpolation`.
    pub(crate) fn reason(&self) -> String {
        match self {
            Fault::Unset { var } => format!("variable {var} is not set"),
            Fault::Unterminated => "unterminated `${`".to_string(),
            Fault::InvalidName { name } => format!("invalid variable name `{name}`"),
        }
    }
}

/// Replaces every `${…}` in `text` using `lookup`; see the module docs for the rules.
pub(crate) fn interpolate<'v>(
    text: &str,
    lookup: impl Fn(&str) -> Option<&'v str>,
) -> Result<String, Fault> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(dollar) = rest.find('$') {
        out.push_str(&rest[..dollar]);
        let after = &rest[dollar + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(body_and_tail) = after.strip_prefix('{') {
            let close = body_and_tail.find('}').ok_or(Fault::Unterminated)?;
            out.push_str(&expand(&body_and_tail[..close], &lookup)?);
            rest = &body_and_tail[close + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// Expands the inside of one `${…}`.
fn expand<'v>(body: &str, lookup: &impl Fn(&str) -> Option<&'v str>) -> Result<String, Fault> {
    let (name, default) = match body.split_once(":-") {
        Some((name, default)) => (name, Some(default)),
        None => (body, None),
    };
    if !is_variable_name(name) {
        return Err(Fault::InvalidName {
            name: name.to_string(),
        });
    }
    match (lookup(name), default) {
        (Some(""), Some(default)) => Ok(default.to_string()),
        (Some(value), _) => Ok(value.to_string()),
        (None, Some(default)) => Ok(default.to_string()),
        (None, None) => Err(Fault::Unset {
            var: name.to_string(),
        }),
    }
}

/// Whether `name` is a portable environment variable name: `[A-Za-z_][A-Za-z0-9_]*`.
pub(crate) fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn run(text: &str) -> Result<String, Fault> {
        let vars: BTreeMap<&str, &str> = [("HOME", "/home/u"), ("TOKEN", "s3cr3t"), ("EMPTY", "")]
            .into_iter()
            .collect();
        interpolate(text, |name| vars.get(name).copied())
    }

    #[test]
    fn replaces_set_variables_anywhere_in_the_text() {
        assert_eq!(run("${HOME}/bin").unwrap(), "/home/u/bin");
        assert_eq!(run("Bearer ${TOKEN}!").unwrap(), "Bearer s3cr3t!");
        assert_eq!(run("${HOME}${TOKEN}").unwrap(), "/home/us3cr3t");
        assert_eq!(run("no vars").unwrap(), "no vars");
    }

    #[test]
    fn a_set_but_empty_variable_is_empty_not_an_error() {
        assert_eq!(run("a${EMPTY}b").unwrap(), "ab");
    }

    #[test]
    fn default_used_only_when_unset_or_empty() {
        assert_eq!(run("${MISSING:-fallback}").unwrap(), "fallback");
        assert_eq!(run("${EMPTY:-fallback}").unwrap(), "fallback");
        assert_eq!(run("${TOKEN:-fallback}").unwrap(), "s3cr3t");
    }

    #[test]
    fn default_may_be_empty_or_hold_anything_but_a_brace() {
        assert_eq!(run("[${MISSING:-}]").unwrap(), "[]");
        assert_eq!(
            run("${MISSING:-http://h:8080/a?b=$c}").unwrap(),
            "http://h:8080/a?b=$c"
        );
        assert_eq!(run("${MISSING:-a:-b}").unwrap(), "a:-b");
    }

    #[test]
    fn lone_dollars_are_literal_and_double_dollar_escapes() {
        assert_eq!(run("cost $5").unwrap(), "cost $5");
        assert_eq!(run("end$").unwrap(), "end$");
        assert_eq!(run("$HOME").unwrap(), "$HOME");
        assert_eq!(run("a$$b").unwrap(), "a$b");
        assert_eq!(run("$${HOME}").unwrap(), "${HOME}");
        assert_eq!(run("$$$${HOME}").unwrap(), "$${HOME}");
        assert_eq!(run("$$${HOME}").unwrap(), "$/home/u");
    }

    #[test]
    fn unset_without_default_names_the_variable() {
        assert_eq!(run("x ${NOPE} y"), Err(Fault::Unset { var: "NOPE".into() }));
    }

    #[test]
    fn unterminated_is_an_error() {
        assert_eq!(run("${HOME"), Err(Fault::Unterminated));
        assert_eq!(run("ok ${HOME} then ${"), Err(Fault::Unterminated));
        assert_eq!(Fault::Unterminated.reason(), "unterminated `${`");
    }

    #[test]
    fn bad_names_are_errors() {
        assert_eq!(
            run("${}"),
            Err(Fault::InvalidName {
                name: String::new()
            })
        );
        assert_eq!(
            run("${input:token}"),
            Err(Fault::InvalidName {
                name: "input:token".into()
            })
        );
        assert_eq!(run("${1X}"), Err(Fault::InvalidName { name: "1X".into() }));
        assert!(is_variable_name("_A1"));
    }
}
