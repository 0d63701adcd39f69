//! Paths as operators type them into the config collector: `~` and `$VAR` / `${VAR}`
//! expanded, relative paths taken from the working directory, and Tab completion over the
//! directory being typed in. File system and environment access live here, in the runtime's
//! reach, so the app's update functions stay pure.

use std::path::{Path, PathBuf};

/// `input` with a leading `~` (or `~/`) replaced by `home` and every `$VAR` / `${VAR}` by its
/// value from `var` (unknown variables are left as written, so the error names them).
pub fn expand(input: &str, home: Option<&Path>, var: impl Fn(&str) -> Option<String>) -> String {
    let mut text = input.to_string();
    if let Some(home) = home {
        if text == "~" {
            text = home.display().to_string();
        } else if let Some(rest) = text.strip_prefix("~/") {
            text = format!("{}/{rest}", home.display());
        }
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != '$' {
            out.push(c);
            continue;
        }
        let braced = chars.peek().is_some_and(|(_, n)| *n == '{');
        let start = if braced {
            chars.next();
            i + 2
        } else {
            i + 1
        };
        let mut end = start;
        while let Some((j, n)) = chars.peek().copied() {
            if n.is_ascii_alphanumeric() || n == '_' {
                end = j + n.len_utf8();
                chars.next();
            } else {
                break;
            }
        }
        let name = &text[start..end];
        let closed = braced && chars.peek().is_some_and(|(_, n)| *n == '}');
        if closed {
            chars.next();
        }
        match var(name).filter(|_| !name.is_empty() && (closed || !braced)) {
            Some(value) => out.push_str(&value),
            None => {
                // Left as written.
                let written_end = if closed { end + 1 } else { end };
                out.push_str(&text[i..written_end]);
            }
        }
    }
    out
}

/// The absolute path `input` names from `cwd`.
pub fn resolve(input: &str, cwd: &Path, home: Option<&Path>) -> PathBuf {
    let expanded = expand(input, home, |name| std::env::var(name).ok());
    cwd.join(expanded)
}

/// What `input` could continue to: entries of the directory it is typed in whose names start
/// with what follows the last `/`, written the way the input was (directories end with `/`;
/// hidden entries only when asked for with a leading `.`), sorted.
pub fn complete(input: &str, cwd: &Path, home: Option<&Path>) -> Vec<String> {
    let (typed_dir, prefix) = match input.rfind('/') {
        Some(at) => (&input[..=at], &input[at + 1..]),
        None => ("", input),
    };
    let dir = if typed_dir.is_empty() {
        cwd.to_path_buf()
    } else {
        resolve(typed_dir, cwd, home)
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut found: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().to_str()?.to_string();
            if !name.starts_with(prefix) || (name.starts_with('.') && !prefix.starts_with('.')) {
                return None;
            }
            let is_dir = entry.path().is_dir();
            Some(format!(
                "{typed_dir}{name}{}",
                if is_dir { "/" } else { "" }
            ))
        })
        .collect();
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(name: &str) -> Option<String> {
        match name {
            "PROJ" => Some("/srv/proj".into()),
            "N" => Some("7".into()),
            _ => None,
        }
    }

    #[test]
    fn tilde_and_variables_expand() {
        let home = Path::new("/home/ann");
        assert_eq!(expand("~/mcp.json", Some(home), vars), "/home/ann/mcp.json");
        assert_eq!(expand("~", Some(home), vars), "/home/ann");
        assert_eq!(expand("$PROJ/a.json", Some(home), vars), "/srv/proj/a.json");
        assert_eq!(
            expand("${PROJ}/b${N}.json", Some(home), vars),
            "/srv/proj/b7.json"
        );
        assert_eq!(expand("$NOPE/a.json", Some(home), vars), "$NOPE/a.json");
        assert_eq!(expand("${NOPE}/a", None, vars), "${NOPE}/a");
        assert_eq!(expand("a~b/$", None, vars), "a~b/$");
    }

    #[test]
    fn completion_lists_the_directory_typed_in() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("configs")).unwrap();
        for name in [
            "configs/work.json",
            "configs/home.json",
            "configs/.hidden.json",
            "cfg.txt",
        ] {
            std::fs::write(dir.path().join(name), "{}").unwrap();
        }
        assert_eq!(complete("con", dir.path(), None), ["configs/"]);
        assert_eq!(complete("c", dir.path(), None), ["cfg.txt", "configs/"]);
        assert_eq!(
            complete("configs/", dir.path(), None),
            ["configs/home.json", "configs/work.json"]
        );
        assert_eq!(
            complete("configs/.h", dir.path(), None),
            ["configs/.hidden.json"]
        );
        assert!(complete("nowhere/x", dir.path(), None).is_empty());
        let home = dir.path().join("configs");
        assert_eq!(
            complete("~/w", Path::new("/"), Some(&home)),
            ["~/work.json"]
        );
    }
}
