//! The roots the tools may read under, and the one way a path from a client becomes a path
//! on disk: made absolute (relative to the first root), canonicalised (`..` and every symlink
//! resolved), then kept only if it lies under a root (itself canonicalised, so a root that is
//! a symlink works).

use std::path::{Path, PathBuf};

use super::ToolError;

/// Canonical directories the tools may read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roots(Vec<PathBuf>);

impl Roots {
    /// The roots, canonicalised; a root that is missing or not a directory is an error.
    pub fn new(dirs: &[PathBuf]) -> Result<Roots, ToolError> {
        let mut roots = Vec::new();
        for dir in dirs {
            let shown = dir.display().to_string();
            let canonical = std::fs::canonicalize(dir).map_err(|_| ToolError::NotFound {
                path: shown.clone(),
            })?;
            if !canonical.is_dir() {
                return Err(ToolError::WrongType {
                    path: shown,
                    found: "file",
                    instead: "a directory as --root",
                });
            }
            if !roots.contains(&canonical) {
                roots.push(canonical);
            }
        }
        if roots.is_empty() {
            return Err(ToolError::invalid("no roots", "--root DIR (repeatable)"));
        }
        Ok(Roots(roots))
    }

    /// The canonical roots.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.0
    }

    /// The canonical path `path` names, if it exists and lies under a root.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, ToolError> {
        let given = Path::new(if path.is_empty() { "." } else { path });
        let absolute = if given.is_absolute() {
            given.to_path_buf()
        } else {
            self.0[0].join(given)
        };
        let canonical = match std::fs::canonicalize(&absolute) {
            Ok(canonical) => canonical,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // Say "outside" rather than "not found" for what would be outside anyway.
                return Err(if self.is_lexically_outside(&absolute) {
                    self.outside(path)
                } else {
                    ToolError::NotFound {
                        path: path.to_string(),
                    }
                });
            }
            Err(source) => {
                return Err(ToolError::Io {
                    path: path.to_string(),
                    source,
                })
            }
        };
        if self.0.iter().any(|root| canonical.starts_with(root)) {
            Ok(canonical)
        } else {
            Err(self.outside(path))
        }
    }

    fn outside(&self, path: &str) -> ToolError {
        ToolError::OutsideRoots {
            path: path.to_string(),
            roots: self.0.clone(),
        }
    }

    fn is_lexically_outside(&self, absolute: &Path) -> bool {
        let mut normal = PathBuf::new();
        for part in absolute.components() {
            match part {
                std::path::Component::ParentDir => {
                    normal.pop();
                }
                std::path::Component::CurDir => {}
                other => normal.push(other),
            }
        }
        !self.0.iter().any(|root| normal.starts_with(root))
    }

    /// `path` as the client should see it: relative to its root when under one.
    pub fn display(&self, path: &Path) -> String {
        for root in &self.0 {
            if let Ok(relative) = path.strip_prefix(root) {
                let shown = relative.display().to_string();
                return if self.0.len() > 1 {
                    root.join(relative).display().to_string()
                } else if shown.is_empty() {
                    ".".into()
                } else {
                    shown
                };
            }
        }
        path.display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn escapes_are_refused_and_symlinked_roots_work() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/a.txt"), "a").unwrap();
        std::fs::write(dir.path().join("secret"), "s").unwrap();
        symlink(dir.path().join("secret"), root.join("leak")).unwrap();
        symlink(root.join("sub/a.txt"), root.join("inner")).unwrap();
        let roots = Roots::new(std::slice::from_ref(&root)).unwrap();
        assert!(roots.resolve("sub/a.txt").is_ok());
        assert!(
            roots.resolve("inner").is_ok(),
            "a symlink staying inside is fine"
        );
        for escape in [
            "../secret",
            "leak",
            "sub/../../secret",
            "/etc/passwd",
            "../nothing-here",
        ] {
            let err = roots.resolve(escape).unwrap_err();
            assert!(
                matches!(err, ToolError::OutsideRoots { .. }),
                "{escape}: {err}"
            );
        }
        assert!(matches!(
            roots.resolve("nothing"),
            Err(ToolError::NotFound { .. })
        ));
        let absolute = root.join("sub/a.txt").display().to_string();
        assert!(roots.resolve(&absolute).is_ok());

        // A root given through a symlink.
        let link = dir.path().join("link");
        symlink(&root, &link).unwrap();
        let roots = Roots::new(std::slice::from_ref(&link)).unwrap();
        assert!(roots.resolve("sub/a.txt").is_ok());
        assert!(roots
            .resolve(&link.join("sub/a.txt").display().to_string())
            .is_ok());
        assert!(matches!(
            roots.resolve("leak"),
            Err(ToolError::OutsideRoots { .. })
        ));
        assert_eq!(roots.display(&root.join("sub/a.txt")), "sub/a.txt");
    }
}
