//! The project's own directory, `./.mcp-launch/`: the state file (keys), overrides, mcpo's
//! per-stack configs (resolved secrets), saved logs.
//!
//! Whoever creates it goes through [`ensure`], which also writes a `.gitignore` that keeps
//! everything but the overrides out of git: the state and mcpo's configs hold keys and the
//! resolved values of `${VAR}`s. [`tracked_secrets`] finds such files that git tracks anyway
//! (committed before the ignore file existed), so that `up` can warn.

use std::io;
use std::path::{Path, PathBuf};

/// The directory's name inside the project.
pub const DIR_NAME: &str = ".mcp-launch";

/// What `.mcp-launch/.gitignore` holds: ignore all, share only the overrides.
pub const GITIGNORE: &str = "\
# Written by mcp-launch. Everything here is per machine and may hold secrets (keys, resolved
# server configs, logs); only the overrides are meant to be shared.
*
!.gitignore
!overrides.json
";

/// Files of the directory that may be shared (and so may be tracked by git).
const SHAREABLE: [&str; 2] = [".gitignore", "overrides.json"];

/// `.mcp-launch` of the project in `project_dir`.
pub fn dir(project_dir: &Path) -> PathBuf {
    project_dir.join(DIR_NAME)
}

/// Creates `.mcp-launch` (owner-only) with its `.gitignore` when missing; returns its path. An
/// existing `.gitignore` is the user's and is left as it is.
pub fn ensure(project_dir: &Path) -> io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = dir(project_dir);
    if !dir.is_dir() {
        match std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
        {
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
            _ => {}
        }
    }
    let ignore = dir.join(".gitignore");
    if !ignore.exists() {
        use std::io::Write;
        // create_new: a file someone else wrote meanwhile wins.
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&ignore)
        {
            Ok(mut file) => file.write_all(GITIGNORE.as_bytes())?,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Ok(dir)
}

/// `.mcp-launch/<parts…>` of the project (each part one name), created owner-only when missing.
/// `Err(Ok(dir))` names a directory below `.mcp-launch` that is a symlink: refused, never
/// followed (a checkout could plant `.mcp-launch/stacks` pointing anywhere, and mcpo's config,
/// which holds resolved secrets, would be written there). `.mcp-launch` itself is the state
/// file's to check (a link inside the project is allowed there). `Err(Err(e))`: any other
/// failure.
pub fn private_subdir(
    project_dir: &Path,
    parts: &[&str],
) -> Result<PathBuf, Result<PathBuf, io::Error>> {
    use std::os::unix::fs::DirBuilderExt;
    let mut dir = ensure(project_dir).map_err(Err)?;
    let is_link = |dir: &Path| std::fs::symlink_metadata(dir).map(|m| m.file_type().is_symlink());
    for part in parts {
        dir.push(part);
        match is_link(&dir) {
            Ok(true) => return Err(Ok(dir)),
            Ok(false) => continue,
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(Err(e)),
            Err(_) => {}
        }
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(Err(e)),
            // Made meanwhile: checked again.
            Err(_) if is_link(&dir).unwrap_or(true) => return Err(Ok(dir)),
            _ => {}
        }
    }
    Ok(dir)
}

/// Files under `.mcp-launch/` that git tracks although they may hold secrets, as paths
/// relative to the repository. Read from `.git/index` itself: running `git` in a checkout we
/// do not trust could run its configured hooks and monitors.
pub fn tracked_secrets(project_dir: &Path) -> Vec<String> {
    let Some((root, index)) = git_index(project_dir) else {
        return Vec::new();
    };
    let Ok(relative) = project_dir.strip_prefix(&root) else {
        return Vec::new();
    };
    let prefix = relative.join(DIR_NAME);
    let prefix = format!("{}/", prefix.to_string_lossy().trim_start_matches("./"));
    let prefix = prefix.trim_start_matches('/');
    index_paths(&index)
        .into_iter()
        .filter(|path| {
            path.strip_prefix(prefix)
                .is_some_and(|rest| !SHAREABLE.contains(&rest))
        })
        .collect()
}

/// The repository root above `start` and its index file's bytes.
fn git_index(start: &Path) -> Option<(PathBuf, Vec<u8>)> {
    let start = start.canonicalize().ok()?;
    let root = start.ancestors().find(|d| d.join(".git").is_dir())?;
    let index = std::fs::read(root.join(".git").join("index")).ok()?;
    Some((root.to_path_buf(), index))
}

/// The paths of a git index (versions 2 and 3; a version-4 index, whose paths are
/// prefix-compressed, gives none). Format: "DIRC", version, count, then per entry 62 bytes of
/// metadata, flags, an extended flags word in v3 when flagged, the NUL-terminated path, padded
/// to a multiple of 8.
fn index_paths(index: &[u8]) -> Vec<String> {
    let word = |at: usize| -> Option<u32> {
        Some(u32::from_be_bytes(index.get(at..at + 4)?.try_into().ok()?))
    };
    if index.get(..4) != Some(b"DIRC".as_slice()) {
        return Vec::new();
    }
    let (Some(version @ 2..=3), Some(count)) = (word(4), word(8)) else {
        return Vec::new();
    };
    let mut paths = Vec::new();
    let mut at = 12;
    for _ in 0..count {
        let Some(flags) = index.get(at + 60..at + 62) else {
            break;
        };
        let extended = version == 3 && flags[0] & 0x40 != 0;
        let start = at + 62 + if extended { 2 } else { 0 };
        let Some(len) = index
            .get(start..)
            .and_then(|rest| rest.iter().position(|b| *b == 0))
        else {
            break;
        };
        paths.push(String::from_utf8_lossy(&index[start..start + len]).into_owned());
        let entry = start + len - at;
        at += (entry + 8) & !7;
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ensure_creates_an_owner_only_dir_that_git_ignores_but_for_the_overrides() {
        use std::os::unix::fs::PermissionsExt;
        let project = tempfile::tempdir().unwrap();
        let dir = ensure(project.path()).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        assert_eq!(
            std::fs::read_to_string(dir.join(".gitignore")).unwrap(),
            GITIGNORE
        );
        std::fs::write(dir.join(".gitignore"), "mine\n").unwrap();
        ensure(project.path()).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join(".gitignore")).unwrap(),
            "mine\n",
            "the user's own file is kept"
        );
    }

    /// A real repository (the `git` of this machine builds the index) with state committed.
    #[test]
    fn tracked_secret_files_are_found_in_the_git_index() {
        let repo = tempfile::tempdir().unwrap();
        let project = repo.path().join("sub");
        let dir = project.join(DIR_NAME);
        std::fs::create_dir_all(dir.join("stacks/a")).unwrap();
        for file in [
            "state.json",
            "overrides.json",
            "stacks/a/mcpo.json",
            ".gitignore",
        ] {
            std::fs::write(dir.join(file), "{}").unwrap();
        }
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .args(args)
                .current_dir(repo.path())
                .output()
                .expect("git runs");
            assert!(out.status.success(), "git {args:?}: {out:?}");
        };
        assert!(tracked_secrets(&project).is_empty(), "no repository yet");
        git(&["init", "-q"]);
        git(&["add", "-f", "."]);
        let mut found = tracked_secrets(&project);
        found.sort();
        assert_eq!(
            found,
            [
                "sub/.mcp-launch/stacks/a/mcpo.json",
                "sub/.mcp-launch/state.json"
            ]
        );
    }
}
