//! Finding programs the way a shell does: the first executable file of that name on `PATH`.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The first executable file named `name` on this process's `PATH`; `None` when `PATH` is unset
/// or holds none. A `name` with a slash is a path: it is returned when it is an executable file.
pub fn which(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        return is_executable(Path::new(name)).then(|| PathBuf::from(name));
    }
    which_in(name, &std::env::var_os("PATH")?)
}

/// The first executable file named `name` in `path`, a `PATH`-style list of directories (empty
/// entries, which a shell reads as the current directory, are skipped on purpose: a program is
/// never picked up from whatever directory we happen to run in).
pub fn which_in(name: &str, path: &OsStr) -> Option<PathBuf> {
    std::env::split_paths(path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn executable(dir: &Path, name: &str) -> PathBuf {
        let file = dir.join(name);
        std::fs::write(&file, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
        file
    }

    #[test]
    fn needs_an_executable_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tool");
        std::fs::write(&file, "#!/bin/sh\n").unwrap();
        let path = OsString::from(dir.path());
        assert_eq!(which_in("tool", &path), None, "not executable yet");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(which_in("tool", &path), Some(file));
        assert_eq!(which_in("other", &path), None);
        std::fs::create_dir(dir.path().join("adir")).unwrap();
        assert_eq!(
            which_in("adir", &path),
            None,
            "a directory is not a program"
        );
    }

    #[test]
    fn the_first_directory_wins_and_empty_entries_are_skipped() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        executable(b.path(), "tool");
        let first = executable(a.path(), "tool");
        let path =
            std::env::join_paths(["", a.path().to_str().unwrap(), b.path().to_str().unwrap()])
                .unwrap();
        assert_eq!(which_in("tool", &path), Some(first));
    }

    /// The process's own `PATH` is read (the bug: `which` returned `None` unless handed one).
    #[test]
    fn reads_the_real_path() {
        let sh = which("sh").expect("sh is on every PATH");
        assert!(sh.is_absolute() && sh.ends_with("sh"), "{}", sh.display());
        assert_eq!(which("/bin/sh"), Some(PathBuf::from("/bin/sh")));
        assert_eq!(which("/nonexistent/sh"), None);
    }
}
