//! The one atomic writer: every file mcp-launch writes (tool index, token counts, search index,
//! overrides, trust store, state, mcpo's config, `init`'s config) goes to a temporary file
//! beside its target, is flushed to disk, then renamed into place (and the directory flushed),
//! so a reader sees the old file or the new one, never half of one, even after a crash.
//! Files several processes change (the overrides, the state, the caches of tools, token counts
//! and vectors) are changed under one exclusive lock ([`lock`], [`update_locked`]): each reads
//! the file as it is now and merges its change, so none loses another's.

use std::fs::{File, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use nix::fcntl::{Flock, FlockArg};
use serde::Serialize;

/// Our directory in the user state dir: `$XDG_STATE_HOME/mcp-launch` (else the local data
/// dir, else the temporary dir). Output handles, the usage record and background logs live
/// there.
pub fn state_dir() -> std::path::PathBuf {
    dirs::state_dir()
        .or_else(dirs::data_local_dir)
        .unwrap_or_else(std::env::temp_dir)
        .join("mcp-launch")
}

/// Writes `bytes` to `path` (parent directories created when missing), readable by all (0644).
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_with(path, bytes, 0o644, Mode::Replace)
}

/// Writes `value` as compact JSON to `path`, as [`write`] does.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> io::Result<()> {
    write(path, &serde_json::to_vec(value)?)
}

/// Like [`write`], readable and writable by the owner only (0600): for files that hold keys.
/// The temporary file is created with that mode, so the secret is never readable by others,
/// not even for a moment.
pub fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_with(path, bytes, 0o600, Mode::Replace)
}

/// Like [`write`], but fails with [`io::ErrorKind::AlreadyExists`] rather than replace a file
/// that exists (even one created meanwhile).
pub fn create_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_with(path, bytes, 0o644, Mode::CreateNew)
}

/// [`create_new`] for files that hold keys: owner-only (0600) from the start.
pub fn create_new_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_with(path, bytes, 0o600, Mode::CreateNew)
}

/// Rewrites the shared cache file `path` under an exclusive lock on `<path>.lock`: `change`
/// gets what the file holds now (`None` when it does not exist or cannot be read) and returns
/// the bytes to write, or `None` to leave the file as it is. Processes that update the same
/// file take turns, so what one merged is never overwritten by another that read it before.
/// The file is owner-only (0600): caches quote what servers sent and key it by identities.
pub fn update_locked(
    path: &Path,
    change: impl FnOnce(Option<Vec<u8>>) -> Option<Vec<u8>>,
) -> io::Result<()> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let lock_path = path.with_file_name(format!("{name}.lock"));
    if let Some(dir) = lock_path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let _held = lock(&lock_path)?;
    let current = std::fs::read(path).ok();
    match change(current) {
        Some(bytes) => write_private(path, &bytes),
        None => make_private(path),
    }
}

/// Makes the existing file `path` owner-only (one an older mcp-launch wrote readable by all
/// stays so until it is written again otherwise); a missing file is fine.
fn make_private(path: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() && meta.permissions().mode() & 0o077 != 0 => {
            std::fs::set_permissions(path, Permissions::from_mode(0o600))
        }
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Takes the exclusive lock of the lock file `path` (created when missing; its directory must
/// exist), waiting for whoever holds it; released when the returned value drops. Blocking is
/// fine: holders only read, change and write one small file.
pub fn lock(path: &Path) -> io::Result<Flock<File>> {
    Flock::lock(open_lock(path)?, FlockArg::LockExclusive)
        .map_err(|(_, errno)| io::Error::from(errno))
}

/// [`lock`] without the wait: `None` when another holder has it now. For work that another
/// process already doing it makes needless (a background embedder).
pub fn try_lock(path: &Path) -> io::Result<Option<Flock<File>>> {
    match Flock::lock(open_lock(path)?, FlockArg::LockExclusiveNonblock) {
        Ok(held) => Ok(Some(held)),
        Err((_, nix::errno::Errno::EWOULDBLOCK)) => Ok(None),
        Err((_, errno)) => Err(io::Error::from(errno)),
    }
}

/// The lock file `path`, created owner-only when missing, never truncated (a holder may keep a
/// note in it), and never opened through a symlink: one planted at its name in a checkout's
/// `.mcp-launch/` would otherwise make us create a file wherever it points.
fn open_lock(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
}

enum Mode {
    Replace,
    CreateNew,
}

fn write_with(path: &Path, bytes: &[u8], mode: u32, how: Mode) -> io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let mut file = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .permissions(Permissions::from_mode(mode))
        .tempfile_in(dir)?;
    file.write_all(bytes)?;
    file.as_file().sync_all()?;
    match how {
        Mode::Replace => file.persist(path).map_err(|e| e.error)?,
        Mode::CreateNew => file.persist_noclobber(path).map_err(|e| e.error)?,
    };
    // The rename itself reaches the disk when the directory does.
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn replaces_the_file_and_leaves_no_temporary_behind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("f.json");
        write(&path, b"one").unwrap();
        write_json(&path, &serde_json::json!({"two": 2})).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), r#"{"two":2}"#);
        assert_eq!(names(path.parent().unwrap()), ["f.json"]);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode & 0o644, 0o644, "{mode:o}");
    }

    #[test]
    fn private_files_are_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        write_private(&path, b"{}").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn create_new_never_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        create_new(&path, b"mine").unwrap();
        let err = create_new(&path, b"theirs").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "mine");
        assert_eq!(names(dir.path()), ["config.json"]);
    }

    #[test]
    fn try_lock_says_none_while_another_holds_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        let held = lock(&path).unwrap();
        assert!(try_lock(&path).unwrap().is_none(), "held elsewhere");
        drop(held);
        assert!(try_lock(&path).unwrap().is_some(), "free again");
    }

    #[test]
    fn a_lock_never_follows_a_planted_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere").join("created-by-us");
        std::fs::create_dir(target.parent().unwrap()).unwrap();
        let planted = dir.path().join("state.json.lock");
        std::os::unix::fs::symlink(&target, &planted).unwrap();
        assert!(lock(&planted).is_err());
        assert!(try_lock(&planted).is_err());
        assert!(!target.exists(), "a file was created through the symlink");
    }

    #[test]
    fn locked_updates_from_many_threads_all_land() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("counts.json");
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let path = path.clone();
                std::thread::spawn(move || {
                    update_locked(&path, |current| {
                        let mut seen: Vec<u32> = current
                            .and_then(|b| serde_json::from_slice(&b).ok())
                            .unwrap_or_default();
                        // Widen the window a lost update needs.
                        std::thread::sleep(std::time::Duration::from_millis(5));
                        seen.push(i);
                        serde_json::to_vec(&seen).ok()
                    })
                    .unwrap();
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let mut seen: Vec<u32> = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        seen.sort_unstable();
        assert_eq!(seen, (0..8).collect::<Vec<_>>());
        assert_eq!(names(dir.path()), ["counts.json", "counts.json.lock"]);
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        write(&path, b"old").unwrap();
        // A directory cannot replace a file by rename.
        let target = dir.path().join("d");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("x"), b"").unwrap();
        assert!(write(&target, b"new").is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        assert_eq!(names(dir.path()), ["d", "f"]);
    }
}
