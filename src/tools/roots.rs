//! The roots the tools may read under, and the one way a path from a client becomes a path
//! on disk: made absolute (relative to the first root), canonicalised (`..` and every symlink
//! resolved), then kept only if it lies under a root (itself canonicalised, so a root that is
//! a symlink works). Files are then opened beneath their root by descriptor
//! ([`Roots::open_beneath`]), never by name again: a directory swapped for an outward symlink
//! between the check and the open must not lead out.

use std::fs::File;
use std::os::fd::AsFd;
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::Mode;

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

    /// Opens the canonical `path` (from [`Roots::resolve`]; `shown` as the client wrote it)
    /// read-only and non-blocking, from its root's descriptor and never out of it: with
    /// `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` where the kernel has it (Linux ≥
    /// 5.6), else component by component with `O_NOFOLLOW` (a canonical path has no symlink
    /// left, so one met on the way was swapped in meanwhile). An escape is `outside_roots`.
    pub fn open_beneath(&self, path: &Path, shown: &str) -> Result<File, ToolError> {
        let Some((root, relative)) = self
            .0
            .iter()
            .find_map(|root| Some((root, path.strip_prefix(root).ok()?)))
        else {
            return Err(self.outside(shown));
        };
        let relative = if relative.as_os_str().is_empty() {
            Path::new(".")
        } else {
            relative
        };
        let flags = OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
        let opened = nix::fcntl::open(root, OFlag::O_DIRECTORY | OFlag::O_CLOEXEC, Mode::empty())
            .and_then(|dir| match open_resolved_beneath(&dir, relative, flags) {
                Err(Errno::ENOSYS) => open_walking(dir, relative, flags),
                other => other,
            });
        match opened {
            Ok(fd) => Ok(File::from(fd)),
            // EXDEV: the resolution left the root; ELOOP: a symlink where none was.
            Err(Errno::EXDEV | Errno::ELOOP) => Err(self.outside(shown)),
            Err(Errno::ENOENT | Errno::ENOTDIR) => Err(ToolError::NotFound {
                path: shown.to_string(),
            }),
            Err(errno) => Err(ToolError::Io {
                path: shown.to_string(),
                source: errno.into(),
            }),
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

/// `openat2` confined beneath `dir` (no magic links: `/proc/self/fd/N` must not lead out).
fn open_resolved_beneath(
    dir: &impl AsFd,
    relative: &Path,
    flags: OFlag,
) -> nix::Result<std::os::fd::OwnedFd> {
    let how = OpenHow::new()
        .flags(flags)
        .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_MAGICLINKS);
    nix::fcntl::openat2(dir, relative, how)
}

/// Without `openat2`: each component opened from the previous one's descriptor, symlinks
/// refused (`ELOOP`), `..` refused outright (a canonical path has none).
fn open_walking(
    dir: std::os::fd::OwnedFd,
    relative: &Path,
    flags: OFlag,
) -> nix::Result<std::os::fd::OwnedFd> {
    let parts: Vec<_> = relative.components().collect();
    let mut current = dir;
    for (i, part) in parts.iter().enumerate() {
        let name = match part {
            Component::Normal(name) => *name,
            Component::CurDir => std::ffi::OsStr::new("."),
            _ => return Err(Errno::EXDEV),
        };
        let is_last = i + 1 == parts.len();
        let how = if is_last {
            flags
        } else {
            OFlag::O_DIRECTORY | OFlag::O_CLOEXEC
        };
        current = nix::fcntl::openat(&current, name, how | OFlag::O_NOFOLLOW, Mode::empty())?;
    }
    Ok(current)
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

    #[test]
    fn the_walk_without_openat2_refuses_symlinks_and_parents() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        std::fs::write(dir.path().join("d/f"), "x").unwrap();
        symlink(dir.path().join("d"), dir.path().join("link")).unwrap();
        let open = |relative: &str| {
            let fd = nix::fcntl::open(dir.path(), OFlag::O_DIRECTORY, Mode::empty()).unwrap();
            open_walking(fd, Path::new(relative), OFlag::O_RDONLY)
        };
        assert!(open("d/f").is_ok());
        // A symlink as a directory on the way: ENOTDIR (O_NOFOLLOW with O_DIRECTORY).
        let through_link = open("link/f").unwrap_err();
        assert!(
            matches!(through_link, Errno::ELOOP | Errno::ENOTDIR),
            "{through_link}"
        );
        assert_eq!(open("link").unwrap_err(), Errno::ELOOP);
        assert_eq!(open("d/../d/f").unwrap_err(), Errno::EXDEV);
    }
}
