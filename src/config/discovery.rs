//! Finding the config file when no `--config` is given.
//!
//! Candidates, first existing file wins: `./.mcp.json` (Claude Code's project file),
//! `./mcp.config.json`, `./.claude/mcp.json`, then `~/.claude/mcp.json`. The working and home
//! directories are parameters so tests never touch the real ones.

use std::path::{Path, PathBuf};

use super::error::ConfigError;

/// The paths discovery checks, in order; the home candidate only when `home` is known.
pub(crate) fn candidates(cwd: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let mut paths = vec![
        cwd.join(".mcp.json"),
        cwd.join("mcp.config.json"),
        cwd.join(".claude").join("mcp.json"),
    ];
    if let Some(home) = home {
        paths.push(home.join(".claude").join("mcp.json"));
    }
    paths
}

/// The first candidate that is a file, or [`ConfigError::NotFound`] listing them all.
pub(crate) fn discover(cwd: &Path, home: Option<&Path>) -> Result<PathBuf, ConfigError> {
    let searched = candidates(cwd, home);
    match searched.iter().find(|path| path.is_file()) {
        Some(found) => {
            tracing::debug!(path = %found.display(), "discovered config file");
            Ok(found.clone())
        }
        None => Err(ConfigError::NotFound { searched }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let root = tempfile::tempdir().unwrap();
        let cwd = root.path().join("project");
        let home = root.path().join("home");
        fs::create_dir_all(cwd.join(".claude")).unwrap();
        fs::create_dir_all(home.join(".claude")).unwrap();
        (root, cwd, home)
    }

    #[test]
    fn each_candidate_wins_over_the_later_ones() {
        let (_root, cwd, home) = setup();
        let all = candidates(&cwd, Some(&home));
        assert_eq!(all.len(), 4);
        for path in &all {
            fs::write(path, "{}").unwrap();
        }
        // Remove the winner one at a time: the next candidate must take over.
        for (i, expected) in all.iter().enumerate() {
            assert_eq!(&discover(&cwd, Some(&home)).unwrap(), expected, "round {i}");
            fs::remove_file(expected).unwrap();
        }
    }

    #[test]
    fn home_is_the_fallback() {
        let (_root, cwd, home) = setup();
        let in_home = home.join(".claude/mcp.json");
        fs::write(&in_home, "{}").unwrap();
        assert_eq!(discover(&cwd, Some(&home)).unwrap(), in_home);
    }

    #[test]
    fn a_directory_is_not_a_config_file() {
        let (_root, cwd, home) = setup();
        fs::create_dir(cwd.join(".mcp.json")).unwrap();
        fs::write(cwd.join("mcp.config.json"), "{}").unwrap();
        assert_eq!(
            discover(&cwd, Some(&home)).unwrap(),
            cwd.join("mcp.config.json")
        );
    }

    #[test]
    fn nothing_found_lists_every_path_looked_at() {
        let (_root, cwd, home) = setup();
        let err = discover(&cwd, Some(&home)).unwrap_err();
        assert_eq!(
            err,
            ConfigError::NotFound {
                searched: vec![
                    cwd.join(".mcp.json"),
                    cwd.join("mcp.config.json"),
                    cwd.join(".claude/mcp.json"),
                    home.join(".claude/mcp.json"),
                ]
            }
        );
        assert!(err
            .to_string()
            .contains(&home.join(".claude/mcp.json").display().to_string()));
        assert_eq!(
            err.help(),
            "run `mcp-launch init` to write a working ./mcp.config.json (the reference servers), or pass --config PATH"
        );

        let without_home = discover(&cwd, None).unwrap_err();
        assert_eq!(
            without_home,
            ConfigError::NotFound {
                searched: candidates(&cwd, None)
            }
        );
        assert_eq!(candidates(&cwd, None).len(), 3);
    }
}
